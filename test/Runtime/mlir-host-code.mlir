// Host code as MLIR 22 generates it (gpu-to-llvm, LLVM IR, an object file),
// linked against liblinattn_cuda_runtime.so and run against the fake driver:
// the mgpu* symbols have the signatures MLIR emits, module loading from the
// global constructor works, and kernel parameters reach the launch (the fake
// fill kernel writes value + i). The "cubin" is the fake driver's module
// text. Without a driver the global constructor's mgpuModuleLoad reports
// one line and the program carries on: every later step fails quietly (the
// kernel's lookup names the module that did not load), main's check fails
// (exit 1), and the destructor's unload of the missing module does nothing.

// RUN: rm -rf %t && mkdir -p %t
// RUN: %mlir_opt %s --pass-pipeline='builtin.module(gpu-to-llvm{use-bare-pointers-for-kernels=1},convert-arith-to-llvm,finalize-memref-to-llvm,convert-func-to-llvm,reconcile-unrealized-casts)' \
// RUN:   | %mlir_translate --mlir-to-llvmir -o %t/host.ll
// RUN: %llc -filetype=obj -relocation-model=pic %t/host.ll -o %t/host.o
// RUN: %cxx %t/host.o -L%linattn_lib -llinattn_cuda_runtime -Wl,-rpath,%linattn_lib -o %t/host
// RUN: env LINATTN_CUDA_DRIVER=%fake_cuda LINATTN_FAKE_CUDA_TRACE=1 %t/host 2>&1 | FileCheck %s

// CHECK:      fake-cuda: cuModuleLoadData
// CHECK:      fake-cuda: cuStreamCreate(flags 1)
// CHECK-NEXT: fake-cuda: cuMemPoolSetAttribute(release threshold 18446744073709551615)
// CHECK-NEXT: fake-cuda: cuMemAllocAsync(32 bytes)
// CHECK-NEXT: fake-cuda: cuMemsetD32Async(0x00000007 x 8)
// CHECK-NEXT: fake-cuda: cuFuncSetAttribute('fake_fill_i32', 8, 65536)
// CHECK-NEXT: fake-cuda: cuLaunchKernel 'fake_fill_i32' grid [2, 1, 1] block [64, 1, 1] smem 65536 stream user
// CHECK-NEXT: fake-cuda: cuMemcpyAsync(32 bytes, device to host)
// CHECK-NEXT: fake-cuda: cuMemFreeAsync(32 bytes)
// CHECK-NEXT: fake-cuda: cuStreamSynchronize
// CHECK-NEXT: fake-cuda: cuStreamDestroy_v2

// RUN: not env LINATTN_CUDA_DRIVER=%t/none.so %t/host > %t/out 2> %t/err
// RUN: count 0 < %t/out
// RUN: count 1 < %t/err
// RUN: FileCheck %s --check-prefix=NODRIVER < %t/err
// NODRIVER: linattn-cuda-runtime: error: mgpuModuleLoad: no CUDA driver: {{.*}}none.so (LINATTN_CUDA_DRIVER) could not be loaded

module attributes {gpu.container_module} {
  gpu.binary @kernels [#gpu.object<#nvvm.target, bin = "FAKE-CUBIN fake_fill_i32\00">]

  // Fills d with 7, then d[i] = 40 + i for i < 4 on the "GPU"; returns 0 if
  // the host copy reads 40 41 42 43 7 7 7 7.
  func.func @main() -> i32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c7 = arith.constant 7 : index
    %c64 = arith.constant 64 : index
    %seven = arith.constant 7 : i32
    %forty = arith.constant 40 : i32
    %count = arith.constant 4 : i64
    %smem = arith.constant 65536 : i32
    %h = memref.alloc() : memref<8xi32>
    %t0 = gpu.wait async
    %d, %t1 = gpu.alloc async [%t0] () : memref<8xi32>
    %t2 = gpu.memset async [%t1] %d, %seven : memref<8xi32>, i32
    %t3 = gpu.launch_func async [%t2] @kernels::@fake_fill_i32
        blocks in (%c2, %c1, %c1) threads in (%c64, %c1, %c1)
        dynamic_shared_memory_size %smem
        args(%d : memref<8xi32>, %forty : i32, %count : i64)
    %t4 = gpu.memcpy async [%t3] %h, %d : memref<8xi32>, memref<8xi32>
    %t5 = gpu.dealloc async [%t4] %d : memref<8xi32>
    gpu.wait [%t5]
    %first = memref.load %h[%c0] : memref<8xi32>
    %fourth = memref.load %h[%c3] : memref<8xi32>
    %fifth = memref.load %h[%c4] : memref<8xi32>
    %last = memref.load %h[%c7] : memref<8xi32>
    %sum = arith.addi %first, %fourth : i32
    %sum2 = arith.addi %sum, %fifth : i32
    %sum3 = arith.addi %sum2, %last : i32
    // 40 + 43 + 7 + 7
    %expected = arith.constant 97 : i32
    %ok = arith.cmpi eq, %sum3, %expected : i32
    %zero = arith.constant 0 : i32
    %one = arith.constant 1 : i32
    %status = arith.select %ok, %zero, %one : i32
    memref.dealloc %h : memref<8xi32>
    return %status : i32
  }
}
