// RUN: not linattn-opt %s --linattn-gpu-occupancy-hints 2>&1 | FileCheck %s

// A request that is not a positive integer is an error naming it.
// CHECK: error: linattn.min_registers_per_thread must be a positive integer, got 0 : i64
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @bad() kernel {
      %smem = gpu.dynamic_shared_memory {linattn.min_registers_per_thread = 0 : i64} : memref<?xi8, #gpu.address_space<workgroup>>
      gpu.return
    }
  }
  func.func @host(%n: index) {
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    %small = arith.constant 1024 : i32
    gpu.launch_func @kernels::@bad blocks in (%n, %c1, %c1) threads in (%c128, %c1, %c1) dynamic_shared_memory_size %small
    return
  }
}
