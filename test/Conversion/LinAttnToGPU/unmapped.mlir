// convert-linattn-to-gpu refuses host code that touches a buffer's contents
// outside a kernel (a load, a store, a linalg op on buffers), naming the op:
// the part of the algorithm that produced it has no GPU mapping.
// RUN: split-file %s %t
// RUN: not linattn-opt %t/load.mlir --convert-linattn-to-gpu 2>&1 | FileCheck %s --check-prefix=LOAD
// RUN: not linattn-opt %t/linalg.mlir --convert-linattn-to-gpu 2>&1 | FileCheck %s --check-prefix=LINALG
// (convert-linattn-linalg-to-gpu, which the pipeline runs first, maps the
// linalg op: then nothing is left on the host.)
// RUN: linattn-opt %t/linalg.mlir --convert-linattn-linalg-to-gpu --convert-linattn-to-gpu | FileCheck %s --check-prefix=MAPPED

//--- load.mlir
// LOAD: error: 'memref.load' op runs on the host but reads or writes device memory: this part of the algorithm has no GPU mapping yet (on the GPU, use strategy=recurrent)
func.func @sum(%x: memref<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%c0] : memref<4xf32>
  return %v : f32
}

//--- linalg.mlir
// LINALG: error: 'linalg.fill' op runs on the host but reads or writes device memory
// MAPPED-LABEL: func.func @zero
// MAPPED: gpu.launch
// MAPPED-NOT: linalg.fill
func.func @zero(%x: memref<?x8xf32>) {
  %z = arith.constant 0.0 : f32
  linalg.fill ins(%z : f32) outs(%x : memref<?x8xf32>)
  return
}
