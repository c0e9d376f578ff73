// RUN: linattn-opt %s --convert-linattn-chunked-to-gpu -split-input-file | FileCheck %s
// RUN: linattn-opt %s --convert-linattn-chunked-to-gpu -split-input-file | FileCheck %s --check-prefix=GONE

// linattn.chunk_cumsum: a kernel; a warp per (chunk, head) for scalar
// gates (no shared memory), four threads per (chunk, head, key) for per-key
// gates (their parts' totals in shared memory).
// Nothing of the cumsum is left, nor the generator of constant gates (it is
// inlined into the kernel).
// GONE-NOT: linattn.
// GONE-NOT: tensor.generate

// Scalar gates [B, T, HV]: blocks (NC, HV / 8, B) of 8 warps, one per head; lane l loads
// rows 2l and 2l + 1 (rows past T as 0, read from the last valid row) and
// the warp scans the 32 pair sums.

// CHECK-LABEL: func.func @scalar_cumsum(
// CHECK-SAME:      %[[SG:[^:]+]]: tensor<?x?x16xf32>)
// CHECK:         %[[SGB:.*]] = bufferization.to_buffer %[[SG]] read_only
// CHECK:         %[[SGC:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?x16xf32>
// CHECK:         %[[HBLOCKS:.*]] = arith.ceildivui %c16{{[_0-9]*}}, %c8{{[_0-9]*}} : index
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %{{.*}}, %{{.*}} = %[[HBLOCKS]], %{{.*}} = %{{.*}}) threads(%{{.*}}) in (%{{.*}} = %c256{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}) {{[{]$}}
// CHECK-COUNT-2:     memref.load %[[SGB]]
// CHECK-NOT:         memref.load
// CHECK-COUNT-6:     gpu.shuffle up
// CHECK-COUNT-2:     memref.store %{{.*}}, %[[SGC]]
// CHECK:           gpu.terminator
// CHECK:         return
func.func @scalar_cumsum(%g: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
  %G = linattn.chunk_cumsum %g {chunk_size = 64 : i64} : tensor<?x?x16xf32> -> tensor<?x?x16xf32>
  return %G : tensor<?x?x16xf32>
}

// -----

// Constant gates (RetNet's log decays): a tensor.generate selecting log
// gamma by value head, inlined into the kernel, so that no host-side gate
// tensor is materialised or read. Both heads in one block of 64 threads;
// warp w takes head 2 by + w.

// CHECK-LABEL: func.func @generated_gates(
// CHECK-NOT:     bufferization.to_buffer %{{.*}} : tensor<?x?x2xf32>
// CHECK:         %[[RG:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?x2xf32>
// The cumsum: a warp per (chunk, head), both heads in one block of 64
// threads; warp w takes head 2 by + w.
// CHECK:         gpu.launch blocks(%{{[^,]*}}, %[[HB:[^,]*]], %{{[^)]*}}) in ({{.*}}) threads(%[[TID:[^,]*]], %{{[^)]*}}) in (%{{.*}} = %c64{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}) {{[{]$}}
// CHECK-NOT:       memref.load
// CHECK:           %[[WARP:.*]] = arith.divui %[[TID]], %c32{{[_0-9]*}} : index
// CHECK:           %[[HB2:.*]] = arith.muli %[[HB]], %c2{{[_0-9]*}} : index
// CHECK-NEXT:      %[[HV:.*]] = arith.addi %[[HB2]], %[[WARP]] : index
// CHECK-NEXT:      %[[INHEADS:.*]] = arith.cmpi ult, %[[HV]], %c2{{[_0-9]*}} : index
// CHECK-NEXT:      scf.if %[[INHEADS]] {
// CHECK-NOT:         memref.load
// CHECK:             %[[HEAD0:.*]] = arith.cmpi eq, %[[HV]], %c0{{[_0-9]*}} : index
// CHECK-NEXT:        %[[LOGG:.*]] = arith.select %[[HEAD0]], %cst, %cst_0 : f32
// CHECK-NOT:         memref.load
// CHECK-COUNT-6:     gpu.shuffle up
// CHECK-NOT:         gpu.shuffle
// CHECK:             scf.if
// CHECK:               memref.store %{{.*}}, %[[RG]]
// CHECK:             scf.if
// CHECK:               memref.store %{{.*}}, %[[RG]]
// CHECK:           gpu.terminator
// CHECK:         bufferization.to_tensor %[[RG]] restrict writable
// CHECK:         return
func.func @generated_gates(%q: tensor<?x?x2x64xbf16>) -> tensor<?x?x2xf32> {
  %cst = arith.constant -0.693147182 : f32
  %cst_0 = arith.constant -1.38629436 : f32
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  %dim = tensor.dim %q, %c0 : tensor<?x?x2x64xbf16>
  %dim_1 = tensor.dim %q, %c1 : tensor<?x?x2x64xbf16>
  %g = tensor.generate %dim, %dim_1 {
  ^bb0(%b: index, %t: index, %hv: index):
    %first = arith.cmpi eq, %hv, %c0 : index
    %log = arith.select %first, %cst, %cst_0 : f32
    tensor.yield %log : f32
  } : tensor<?x?x2xf32>
  %G = linattn.chunk_cumsum %g {chunk_size = 64 : i64} : tensor<?x?x2xf32> -> tensor<?x?x2xf32>
  return %G : tensor<?x?x2xf32>
}

// -----

// A per-key cumsum (key_gate gates, [B, T, HV, K]) runs four threads per
// key, 16 of the chunk's rows each: threads = 4 K = 512, thread t on key
// t % K; the parts' totals ([4][K] floats) meet in shared memory, after
// one barrier.

// CHECK-LABEL: func.func @key_cumsum(
// CHECK-SAME:      %[[KG:[^:]+]]: tensor<?x?x2x128xf32>)
// CHECK:         %[[KGB:.*]] = bufferization.to_buffer %[[KG]] read_only
// CHECK:         %[[KGC:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?x2x128xf32>
// CHECK:         gpu.launch blocks(%{{[^,]*}}, %[[KHV:[^,]*]], %[[KB:[^)]*]]) in ({{.*}}) threads(%[[TID:[^,]*]], %{{[^)]*}}) in (%{{.*}} = %c512{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}) dynamic_shared_memory_size
// CHECK:           %[[KEY:.*]] = arith.remui %[[TID]], %c128{{[_0-9]*}} : index
// CHECK-COUNT-16:  memref.load %[[KGB]][%[[KB]], %{{.*}}, %[[KHV]], %[[KEY]]] : memref<?x?x2x128xf32>
// CHECK-NOT:       memref.load %[[KGB]]
// CHECK:           gpu.barrier
// CHECK-COUNT-16:  memref.store %{{.*}}, %[[KGC]][%[[KB]], %{{.*}}, %[[KHV]], %[[KEY]]] : memref<?x?x2x128xf32>
// CHECK-NOT:       memref.store %{{.*}}, %[[KGC]]
// CHECK:           gpu.terminator
// CHECK:         %[[KGT:.*]] = bufferization.to_tensor %[[KGC]] restrict writable
// CHECK:         return %[[KGT]]
func.func @key_cumsum(%g: tensor<?x?x2x128xf32>) -> tensor<?x?x2x128xf32> {
  %G = linattn.chunk_cumsum %g {chunk_size = 64 : i64} : tensor<?x?x2x128xf32> -> tensor<?x?x2x128xf32>
  return %G : tensor<?x?x2x128xf32>
}

// -----

// With keys (linattn-fuse-chunk-cumsum): the threads also write the
// chunk's total gate G_C [B, NC, HV, K] (the sum of the parts' totals,
// stored by the first part's threads) and the keys decayed to their
// chunk's last row, K' = k exp(G_C - G) (bf16, one per value head), after
// loading all 16 of their gates and keys.

// CHECK-LABEL: func.func @decaying_keys(
// CHECK:         %[[GCUM:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?x2x64xf32>
// CHECK:         %[[KD:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?x2x64xbf16>
// CHECK:         %[[GC:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?x2x64xf32>
// CHECK:         gpu.launch blocks({{.*}}) threads({{.*}}) in (%{{.*}} = %c256{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}) dynamic_shared_memory_size
// CHECK:           gpu.barrier
// CHECK-NOT:       gpu.barrier
// CHECK-COUNT-16:  memref.store %{{.*}}, %[[GCUM]]
// CHECK-NOT:       memref.store %{{.*}}, %[[GCUM]]
// CHECK:           memref.store %{{.*}}, %[[GC]]
// CHECK-NOT:       gpu.barrier
// CHECK-COUNT-16:    memref.store %{{.*}}, %[[KD]]
// CHECK-NOT:       memref.store %{{.*}}, %[[KD]]
// CHECK:           gpu.terminator
// CHECK:         %[[GT:.*]] = bufferization.to_tensor %[[GCUM]]
// CHECK:         %[[KDT:.*]] = bufferization.to_tensor %[[KD]]
// CHECK:         %[[GCT:.*]] = bufferization.to_tensor %[[GC]]
// CHECK:         return %[[GT]], %[[KDT]], %[[GCT]]
func.func @decaying_keys(%g: tensor<?x?x2x64xf32>, %k: tensor<?x?x2x64xbf16>) -> (tensor<?x?x2x64xf32>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>) {
  %G, %kd, %gc = linattn.chunk_cumsum %g keys(%k : tensor<?x?x2x64xbf16>) {chunk_size = 64 : i64}
      : tensor<?x?x2x64xf32> -> tensor<?x?x2x64xf32>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>
  return %G, %kd, %gc : tensor<?x?x2x64xf32>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>
}

// -----

// The long chunk (128 tokens, scalar gates): each lane holds four gates.

// CHECK-LABEL: func.func @long_chunk(
// CHECK:         %[[LCN:.*]] = arith.ceildivui %{{.*}}, %c128{{[_0-9]*}} : index
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %[[LCN]], {{.*}} threads(%{{.*}}) in (%{{.*}} = %c64{{[_0-9]*}},
// CHECK-COUNT-6:     gpu.shuffle up
// CHECK-COUNT-4:     memref.store
// CHECK:           gpu.terminator
func.func @long_chunk(%g: tensor<?x?x2xf32>) -> tensor<?x?x2xf32> {
  %G = linattn.chunk_cumsum %g {chunk_size = 128 : i64} : tensor<?x?x2xf32> -> tensor<?x?x2xf32>
  return %G : tensor<?x?x2xf32>
}
