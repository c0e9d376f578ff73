// RUN: linattn-opt %s --linattn-gpu-occupancy-hints | FileCheck %s
// RUN: linattn-opt %s --linattn-gpu-occupancy-hints=min-registers-per-thread=168 | FileCheck %s --check-prefix=FLOOR
// RUN: not linattn-opt %s --linattn-gpu-occupancy-hints=min-registers-per-thread=0 2>&1 | FileCheck %s --check-prefix=BAD

// 128 threads: 52736 bytes of shared memory allow 4 blocks per SM (233472 /
// (52736 + 1024)), 180736 bytes one (no hint: registers cannot lower it),
// and a kernel without dynamic shared memory gets none either. A kernel
// launched with two sizes takes the smaller count (66816 bytes: 3).

// Small shared memory asks for many blocks, and few registers each: the
// hint never goes below min-registers-per-thread (default 80: 6 blocks of
// 128 threads; with 168, 3).
// CHECK-LABEL: gpu.func @ut
// CHECK-SAME:    nvvm.minctasm = 4 : i32
// CHECK-LABEL: gpu.func @small
// CHECK-SAME:    nvvm.minctasm = 6 : i32
// FLOOR-LABEL: gpu.func @ut
// FLOOR-SAME:    nvvm.minctasm = 3 : i32
// FLOOR-LABEL: gpu.func @small
// FLOOR-SAME:    nvvm.minctasm = 3 : i32
// BAD: error: linattn-gpu-occupancy-hints: shared-memory-per-sm, max-threads-per-sm and min-registers-per-thread must be positive and reserved-shared-memory-per-block not negative, got 233472, 2048, 0 and 1024
// CHECK-LABEL: gpu.func @state
// CHECK-NOT:     nvvm.minctasm
// CHECK-LABEL: gpu.func @plain
// CHECK-NOT:     nvvm.minctasm
// CHECK-LABEL: gpu.func @twice
// CHECK-SAME:    nvvm.minctasm = 3 : i32

// A kernel that asks for 96 registers a thread (the recurrent kernel, on
// its dynamic shared memory): 5 blocks of 128 threads where the pass's 80
// would make 6; one asking for fewer than the pass's floor keeps 6; with
// the floor at 168 the pass's floor wins (3).
// CHECK-LABEL: gpu.func @recurrent
// CHECK-SAME:    nvvm.minctasm = 5 : i32
// CHECK-LABEL: gpu.func @modest
// CHECK-SAME:    nvvm.minctasm = 6 : i32
// FLOOR-LABEL: gpu.func @recurrent
// FLOOR-SAME:    nvvm.minctasm = 3 : i32
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @ut() kernel { gpu.return }
    gpu.func @small() kernel { gpu.return }
    gpu.func @state() kernel { gpu.return }
    gpu.func @plain() kernel { gpu.return }
    gpu.func @twice() kernel { gpu.return }
    gpu.func @recurrent() kernel {
      %smem = gpu.dynamic_shared_memory {linattn.min_registers_per_thread = 96 : i64} : memref<?xi8, #gpu.address_space<workgroup>>
      gpu.return
    }
    gpu.func @modest() kernel {
      %smem = gpu.dynamic_shared_memory {linattn.min_registers_per_thread = 64 : i64} : memref<?xi8, #gpu.address_space<workgroup>>
      gpu.return
    }
  }
  func.func @host(%n: index) {
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    %ut = arith.constant 52736 : i32
    %state = arith.constant 180736 : i32
    %out = arith.constant 66816 : i32
    %small = arith.constant 1024 : i32
    gpu.launch_func @kernels::@ut blocks in (%n, %c1, %c1) threads in (%c128, %c1, %c1) dynamic_shared_memory_size %ut
    gpu.launch_func @kernels::@small blocks in (%n, %c1, %c1) threads in (%c128, %c1, %c1) dynamic_shared_memory_size %small
    gpu.launch_func @kernels::@state blocks in (%n, %c1, %c1) threads in (%c128, %c1, %c1) dynamic_shared_memory_size %state
    gpu.launch_func @kernels::@plain blocks in (%n, %c1, %c1) threads in (%c128, %c1, %c1)
    gpu.launch_func @kernels::@twice blocks in (%n, %c1, %c1) threads in (%c128, %c1, %c1) dynamic_shared_memory_size %small
    gpu.launch_func @kernels::@twice blocks in (%n, %c1, %c1) threads in (%c128, %c1, %c1) dynamic_shared_memory_size %out
    gpu.launch_func @kernels::@recurrent blocks in (%n, %c1, %c1) threads in (%c128, %c1, %c1) dynamic_shared_memory_size %small
    gpu.launch_func @kernels::@modest blocks in (%n, %c1, %c1) threads in (%c128, %c1, %c1) dynamic_shared_memory_size %small
    return
  }
}

