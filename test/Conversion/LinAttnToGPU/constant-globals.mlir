// RUN: linattn-opt %s --convert-linattn-to-gpu | FileCheck %s

// A constant table (a bufferized constant tensor) lives in a host global,
// whose address means nothing on the device: the kernel reads a device
// copy, filled from the global before the launch and freed after it.

// CHECK-LABEL: func.func @table
// CHECK:         %[[HOST:.*]] = memref.get_global @gammas : memref<2xf32>
// CHECK:         %[[DEV:.*]], %{{.*}} = gpu.alloc async [%{{.*}}] () : memref<2xf32>
// CHECK:         gpu.memcpy async [%{{.*}}] %[[DEV]], %[[HOST]] : memref<2xf32>, memref<2xf32>
// CHECK:         gpu.launch
// CHECK:           memref.load %[[DEV]][%{{.*}}] : memref<2xf32>
// CHECK:         gpu.dealloc async [%{{.*}}] %[[DEV]] : memref<2xf32>
memref.global "private" constant @gammas : memref<2xf32> = dense<[0.5, 0.25]>
func.func @table(%out: memref<2xf32>) {
  %table = memref.get_global @gammas : memref<2xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  scf.parallel (%i) = (%c0) to (%c2) step (%c1) {
    %g = memref.load %table[%i] : memref<2xf32>
    memref.store %g, %out[%i] : memref<2xf32>
    scf.reduce
  } {mapping = [#gpu.loop_dim_map<processor = thread_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}
  return
}
