// RUN: linattn-opt %s --linattn-recurrence-to-chunked --linattn-lower-rank1-to-wy --convert-linattn-chunked-to-gpu | FileCheck %s
// RUN: linattn-opt %s --linattn-recurrence-to-chunked --linattn-lower-rank1-to-wy --convert-linattn-chunked-to-gpu | FileCheck %s --check-prefix=GONE

// convert-linattn-chunked-to-gpu: every chunked-state op becomes one
// gpu.launch on memrefs (bufferization.to_buffer of its operands, a fresh
// memref.alloc per result, handed on as bufferization.to_tensor), in program
// order. The tensor-core kernels run 128 threads (4 warps) with dynamic
// shared memory and nvvm.mma.sync m16n8k16; the cumsum kernel runs a warp
// per (chunk, head) for scalar gates, a thread per key for per-key gates,
// and no shared memory. A UT kernel that is the first reader of a scalar
// cumsum sums the gates itself and writes them for the others: no cumsum
// kernel then.

// Nothing of the chunked ops is left, nor the generator of a constant
// decay (it is inlined into the cumsum kernel).
// GONE-NOT: linattn.
// GONE-NOT: tensor.generate

// Dynamic shared memory sizes, from the layouts in ChunkedOpsToGPU.cpp
// (chunk C = 64, 16-bit tiles padded by 8 elements per row, 32 state columns
// and 64 output columns per block), for K = V = 128:
//   ut_transform:     Y = C (max(K, V) + 8) 2 = 17408, then T (fp32 C x
//                     (C + 4), 17408), then R = max(C (C + 4) 4, 2 C (C +
//                     8) 2) = 18432, then 64 gates and 64 betas (f32),
//                     then the inverse's scratch M (fp32 16 x 48, 3072):
//                     17408 + 17408 + 18432 + 256 + 256 + 3072 = 56832.
//   chunk_state_pass: three input stages of W (bf16 for the delta rule:
//                     C (K + 8) 2 = 17408), K (C (K + 8) 2 = 17408), U
//                     columns (C (32 + 4) 4 = 9216), gates (256):
//                     3 * 44288 = 132864, then the exchange of 4 warps x
//                     8 row tiles x 32 lanes x 16 bytes = 16384: 149248.
//   chunk_output:     Q and K 2 C (K + 8) 2 = 34816, S (bf16 chunk states,
//                     no split) K (64 + 8) 2 = 18432, D (bf16 new values,
//                     no split) C (64 + 8) 2 = 9216, 64 gates: 62720.

// CHECK-LABEL: func.func @gated_delta(
// CHECK-SAME:      %[[Q:[^:]+]]: tensor<?x?x2x128xbf16>, %[[K:[^:]+]]: tensor<?x?x2x128xbf16>, %[[V:[^:]+]]: tensor<?x?x2x128xbf16>, %[[G:[^:]+]]: tensor<?x?x2xf32>, %[[BETA:[^:]+]]: tensor<?x?x2xf32>, %[[S0:[^:]+]]: tensor<?x2x128x128xf32>)

// 1. No cumsum kernel: the UT kernel (the first reader of G) writes G.
// CHECK-NOT:     gpu.launch
// 2. ut_transform: blocks (NC, HV, B), 128 threads. Warp 0 sums the chunk's
//    raw gates g (two per lane, a shuffle scan) into G, for its own row
//    gates and for the later kernels. K K^T (8 k-steps x 8 n-tiles), then
//    W and U as (T hi + T lo) times exact K or V (2 x 4 k-steps x 16
//    n-tiles x 2): 64 + 256 = 320 products.
// CHECK:         %[[KB:.*]] = bufferization.to_buffer %[[K]] read_only
// CHECK:         %[[VB:.*]] = bufferization.to_buffer %[[V]] read_only
// CHECK:         %[[BB:.*]] = bufferization.to_buffer %[[BETA]] read_only
// CHECK:         %[[GB:.*]] = bufferization.to_buffer %[[G]] read_only : tensor<?x?x2xf32> to memref<?x?x2xf32>
// CHECK:         %[[GCUM:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?x2xf32>
// CHECK:         %[[W:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?x2x128xbf16>
// CHECK:         %[[U:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?x2x128xf32>
// CHECK:         %[[NC1:.*]] = arith.ceildivui %{{.*}}, %c64{{[_0-9]*}} : index
// CHECK:         %[[UTSMEM:.*]] = arith.constant 56832 : i32
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %[[NC1]], %{{.*}} = %c2{{[_0-9]*}}, %{{.*}} = %{{.*}}) threads(%{{.*}}) in (%{{.*}} = %c128{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}) dynamic_shared_memory_size %[[UTSMEM]] {
// CHECK-NEXT:      %[[SM1:.*]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// Row gates, betas, key/value tile, T (fp32), L (fp32), T hi, T lo, M.
// CHECK:           memref.view %[[SM1]][%c53248{{[_0-9]*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64xf32, #gpu.address_space<workgroup>>
// CHECK:           memref.view %[[SM1]][%c53504{{[_0-9]*}}][] : {{.*}} to memref<64xf32, #gpu.address_space<workgroup>>
// CHECK:           memref.view %[[SM1]][%c0{{[_0-9]*}}][] : {{.*}} to memref<64x136xbf16, #gpu.address_space<workgroup>>
// CHECK:           %[[TF32:.*]] = memref.view %[[SM1]][%c17408{{[_0-9]*}}][] : {{.*}} to memref<64x68xf32, #gpu.address_space<workgroup>>
// CHECK:           %[[LTILE:.*]] = memref.view %[[SM1]][%c34816{{[_0-9]*}}][] : {{.*}} to memref<64x68xf32, #gpu.address_space<workgroup>>
// CHECK:           memref.view %[[SM1]][%c34816{{[_0-9]*}}][] : {{.*}} to memref<64x72xbf16, #gpu.address_space<workgroup>>
// CHECK:           memref.view %[[SM1]][%c44032{{[_0-9]*}}][] : {{.*}} to memref<64x72xbf16, #gpu.address_space<workgroup>>
// CHECK:           %[[MTILE:.*]] = memref.view %[[SM1]][%c53760{{[_0-9]*}}][] : {{.*}} to memref<16x48xf32, #gpu.address_space<workgroup>>
// CHECK:           vector.load %[[KB]]
// CHECK:           scf.if
// CHECK-COUNT-2:     memref.load %[[GB]]
// CHECK:             gpu.shuffle up %{{.*}}, %c1_i32{{[_0-9]*}}, %c32_i32
// CHECK:             gpu.shuffle up %{{.*}}, %c2_i32{{[_0-9]*}}, %c32_i32
// CHECK:             gpu.shuffle up %{{.*}}, %c4_i32{{[_0-9]*}}, %c32_i32
// CHECK:             gpu.shuffle up %{{.*}}, %c8_i32{{[_0-9]*}}, %c32_i32
// CHECK:             gpu.shuffle up %{{.*}}, %c16_i32{{[_0-9]*}}, %c32_i32
// CHECK:             gpu.shuffle up %{{.*}}, %c1_i32{{[_0-9]*}}, %c32_i32
// CHECK:             memref.store %{{.*}} : memref<64xf32, #gpu.address_space<workgroup>>
// CHECK:             scf.if
// CHECK:               memref.store %{{.*}}, %[[GCUM]]
// CHECK:             memref.store %{{.*}} : memref<64xf32, #gpu.address_space<workgroup>>
// CHECK:             scf.if
// CHECK:               memref.store %{{.*}}, %[[GCUM]]
// CHECK:           gpu.barrier
// Fragments by ldmatrix: four 8x8 tiles (an A fragment, or the B fragments
// of two n-tiles) per instruction.
// CHECK:           nvgpu.ldmatrix %[[KTILE:.*]][%{{.*}}, %{{.*}}] {numTiles = 4 : i32, transpose = false} : memref<64x136xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
// CHECK:           nvvm.mma.sync A[%{{.*}}] B[%{{.*}}] C[%{{.*}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK-COUNT-63:  nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>}
// T = (I + L)^-1 by 16-row blocks. T is zeroed first (its blocks above
// the diagonal stay so). Each warp inverts its diagonal block by forward
// substitution, one column per lane: 0 + 1 + ... + 15 = 120 fused
// multiply-adds on L rows read as 4-vectors, 16 stores. Then block rows
// I = 1, 2, 3 in turn, each behind a barrier: a half-warp's lanes take the
// rows of one column pair per column block J < I, M's pair first (two
// columns times 16 (I - J) L elements: 32 (I - J) multiply-adds), into
// the scratch M; a warp barrier; then T's pair, -T_II M (32 per pair).
// CHECK:           scf.for
// CHECK:             vector.store %{{.*}}, %[[TF32]]{{.*}} : memref<64x68xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK:           gpu.barrier
// CHECK-NOT:       gpu.barrier
// CHECK:           vector.load %[[LTILE]]
// CHECK-COUNT-120: math.fma
// CHECK-NOT:       math.fma
// CHECK-COUNT-16:  memref.store %{{.*}}, %[[TF32]]
// CHECK:           gpu.barrier
// CHECK-COUNT-32:  math.fma
// CHECK-NOT:       math.fma
// CHECK:           vector.store %{{.*}}, %[[MTILE]]
// CHECK-NEXT:      nvvm.bar.warp.sync
// CHECK-COUNT-32:  math.fma
// CHECK-NOT:       math.fma
// CHECK:           arith.negf
// CHECK-NEXT:      vector.store %{{.*}}, %[[TF32]]
// CHECK:           gpu.barrier
// CHECK-COUNT-64:  math.fma
// CHECK-NOT:       math.fma
// CHECK:           vector.store %{{.*}}, %[[MTILE]]
// CHECK-COUNT-32:  math.fma
// CHECK-NOT:       math.fma
// CHECK:           vector.store %{{.*}}, %[[MTILE]]
// CHECK-NEXT:      nvvm.bar.warp.sync
// CHECK-COUNT-32:  math.fma
// CHECK-NOT:       math.fma
// CHECK:           vector.store %{{.*}}, %[[TF32]]
// CHECK-COUNT-32:  math.fma
// CHECK-NOT:       math.fma
// CHECK:           vector.store %{{.*}}, %[[TF32]]
// CHECK:           gpu.barrier
// CHECK-COUNT-96:  math.fma
// CHECK-NOT:       math.fma
// CHECK:           vector.store %{{.*}}, %[[MTILE]]
// CHECK-COUNT-64:  math.fma
// CHECK-NOT:       math.fma
// CHECK:           vector.store %{{.*}}, %[[MTILE]]
// CHECK-COUNT-32:  math.fma
// CHECK-NOT:       math.fma
// CHECK:           vector.store %{{.*}}, %[[MTILE]]
// CHECK-NEXT:      nvvm.bar.warp.sync
// CHECK-COUNT-3:   vector.store %{{.*}}, %[[TF32]]
// CHECK:           gpu.barrier
// W = T' K reads K (stored [t][k]) as B by the transposing ldmatrix.
// CHECK:           nvgpu.ldmatrix %[[KTILE]][%{{.*}}, %{{.*}}] {numTiles = 4 : i32, transpose = true} : memref<64x136xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
// CHECK-COUNT-128: nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>}
// W leaves through shared memory: the warps' bf16 pairs into a staging
// tile over the T hi/lo tiles (behind a barrier: every warp is done with
// them), then whole rows to global memory in 16-byte pieces.
// CHECK-NOT:       nvvm.mma.sync
// CHECK:           %[[WSTAGE:.*]] = memref.view %[[SM1]][%c34816{{[_0-9]*}}][] : {{.*}} to memref<64x136xbf16, #gpu.address_space<workgroup>>
// CHECK-NEXT:      gpu.barrier
// CHECK-COUNT-32:  vector.store %{{.*}}, %[[WSTAGE]][%{{.*}}, %{{.*}}] {alignment = 4 : i64} : memref<64x136xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
// CHECK-NEXT:      gpu.barrier
// CHECK:           scf.for
// CHECK:             scf.if
// CHECK-NEXT:          vector.load %[[WSTAGE]][%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<64x136xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// CHECK-NEXT:          arith.addi
// CHECK-NEXT:          vector.store %{{.*}}, %[[W]][{{.*}}] {alignment = 16 : i64} : memref<?x?x2x128xbf16>, vector<8xbf16>
// U likewise, in fp32 over T's fp32 copy and the T hi/lo tiles.
// CHECK-COUNT-128: nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>}
// CHECK-NOT:       nvvm.mma.sync
// CHECK:           %[[USTAGE:.*]] = memref.view %[[SM1]][%c17408{{[_0-9]*}}][] : {{.*}} to memref<64x136xf32, #gpu.address_space<workgroup>>
// CHECK-COUNT-32:  vector.store %{{.*}}, %[[USTAGE]][%{{.*}}, %{{.*}}] {alignment = 8 : i64} : memref<64x136xf32, #gpu.address_space<workgroup>>, vector<2xf32>
// CHECK:           scf.if
// CHECK-NEXT:        vector.load %[[USTAGE]]{{.*}} vector<4xf32>
// CHECK-NEXT:        arith.addi
// CHECK-NEXT:        vector.store %{{.*}}, %[[U]][{{.*}}] {alignment = 16 : i64} : memref<?x?x2x128xf32>, vector<4xf32>
// CHECK:           gpu.terminator
// CHECK:         %[[GT:.*]] = bufferization.to_tensor %[[GCUM]] restrict writable : memref<?x?x2xf32> to tensor<?x?x2xf32>
// CHECK-NEXT:    %[[WT:.*]] = bufferization.to_tensor %[[W]] restrict writable : memref<?x?x2x128xbf16> to tensor<?x?x2x128xbf16>
// CHECK:         %[[UT:.*]] = bufferization.to_tensor %[[U]] restrict writable : memref<?x?x2x128xf32> to tensor<?x?x2x128xf32>

// 3. chunk_state_pass: blocks (V / 32, HV, B), 128 threads: two column
//    groups of 16 value columns, each split over two warps by keys. A
//    sequential loop over the chunks carries the warp's S^T (16 columns x
//    64 keys: 8 accumulator tiles, 32 f32 per thread). Per chunk: one
//    barrier for the staged inputs, D^T = U^T - S^T W^T over the warp's
//    keys (4 k-steps x 8 row tiles: S^T rounded from the registers, the
//    bf16 W exact through ldmatrix) summed over the two warps through
//    shared memory (a second barrier), then S^T += D'^T K (4 k-steps x 8
//    key tiles x 2, D' split, K exact through ldmatrix .trans): 32 + 64 =
//    96 products. The bf16 chunk state S_n and new values D_n go into
//    a shared output buffer by stmatrix .trans (four 8x8 tiles each) and
//    leave in 16-byte rows in the next iteration, after its barrier.
// CHECK:         bufferization.to_buffer %[[K]] read_only
// CHECK:         bufferization.to_buffer %[[UT]] read_only
// CHECK:         bufferization.to_buffer %[[WT]] read_only
// CHECK:         bufferization.to_buffer %[[GT]] read_only
// CHECK:         bufferization.to_buffer %[[S0]] read_only
// CHECK:         %[[D:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?x2x128xbf16>
// CHECK:         %[[STATES:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?x2x128x128xbf16>
// CHECK:         %[[FINAL:.*]] = memref.alloc(%{{.*}}) : memref<?x2x128x128xf32>
// CHECK:         %[[SPSMEM:.*]] = arith.constant 179968 : i32
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %c4{{[_0-9]*}}, %{{.*}} = %c2{{[_0-9]*}}, %{{.*}} = %{{.*}}) threads(%{{.*}}) in (%{{.*}} = %c128{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}) dynamic_shared_memory_size %[[SPSMEM]] {
// CHECK-NEXT:      %[[SM2:.*]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// Three stages of 44288 bytes (W and K padded like every ldmatrix tile, the
// block's 32 U columns padded by 16 bytes, row gates), the 16 KiB
// exchange of the partial products, then two output buffers of 15360
// bytes (S_n [128][32 + 8] and D_n [64][32 + 8] in bf16). The
// prologue starts chunks 0 and 1 (16-byte cp.async, rows past T
// zero-filled: source size 0).
// CHECK:           memref.view %[[SM2]][%{{.*}}][] : {{.*}} to memref<64x136xbf16, #gpu.address_space<workgroup>>
// CHECK:           memref.view %[[SM2]][%{{.*}}][] : {{.*}} to memref<64x136xbf16, #gpu.address_space<workgroup>>
// CHECK:           memref.view %[[SM2]][%{{.*}}][] : {{.*}} to memref<64x36xf32, #gpu.address_space<workgroup>>
// CHECK:           memref.view %[[SM2]][%{{.*}}][] : {{.*}} to memref<64x1xf32, #gpu.address_space<workgroup>>
// With W, a copy's source row min(t0 + r, T - 1) and its size (r < valid)
// are computed in i32 (NOTES c32).
// CHECK:           %[[ROW:.*]] = arith.minui %{{.*}}, %{{.*}} : i32
// CHECK-NEXT:      %[[ROWI:.*]] = arith.index_castui %[[ROW]] : i32 to index
// CHECK:           %[[INROWS:.*]] = arith.cmpi ult, %{{.*}}, %{{.*}} : i32
// CHECK:           %[[SIZE:.*]] = arith.select %[[INROWS]], %{{.*}}, %{{.*}} : index
// CHECK:           nvgpu.device_async_copy %{{.*}}[%{{.*}}, %[[ROWI]], %{{.*}}, %{{.*}}], %{{.*}}[%{{.*}}, %{{.*}}], 8, %[[SIZE]] {bypassL1} : memref<?x?x2x128xbf16> to memref<64x136xbf16, #gpu.address_space<workgroup>>
// CHECK:           nvgpu.device_async_copy %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}], 8, %{{.*}} {bypassL1} : memref<?x?x2x128xbf16> to memref<64x136xbf16, #gpu.address_space<workgroup>>
// CHECK:           nvgpu.device_async_copy %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}], 4, %{{.*}} {bypassL1} : memref<?x?x2x128xf32> to memref<64x36xf32, #gpu.address_space<workgroup>>
// CHECK:           nvgpu.device_async_copy %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}], 1, %{{.*}} : memref<?x?x2xf32> to memref<64x1xf32, #gpu.address_space<workgroup>>
// CHECK:           %[[FIRST:.*]] = nvgpu.device_async_create_group
// CHECK:           nvgpu.device_async_create_group
// Each iteration waits for chunk n (one newer group may be in flight),
// then starts chunk n + 2's copies.
// CHECK:           %{{.*}}:32 = scf.for {{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
// CHECK:             nvgpu.device_async_wait %[[FIRST]] {numGroups = 1 : i32}
// CHECK-NEXT:        gpu.barrier
// CHECK-COUNT-4:     nvgpu.device_async_copy
// CHECK:             nvgpu.device_async_create_group
// Chunk n - 1's outputs leave (from n = 1 on): 4 x 8 state elements per
// thread, and D's rows below the chunk's valid ones.
// CHECK:             scf.if
// CHECK:               vector.load %{{.*}} : memref<128x40xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// CHECK-NEXT:          arith.addi
// CHECK-NEXT:          vector.store %{{.*}}, %[[STATES]][{{.*}}] {alignment = 16 : i64} : memref<?x?x2x128x128xbf16>, vector<8xbf16>
// CHECK:               scf.if
// CHECK-NEXT:            vector.load %{{.*}} : memref<64x40xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// CHECK:                 vector.store %{{.*}}, %[[D]][{{.*}}] {alignment = 16 : i64} : memref<?x?x2x128xbf16>, vector<8xbf16>
// CHECK-NOT:         memref.store %{{.*}}, %[[STATES]]
// CHECK-COUNT-4:     nvvm.stmatrix %{{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<col>, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>} : !llvm.ptr<3>, i32, i32, i32, i32
// Key part 0 starts D from U, key part 1 from zero (a warp-uniform branch).
// CHECK:             scf.if %{{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
// CHECK-COUNT-32:      memref.load
// CHECK:               scf.yield
// CHECK:             } else {
// CHECK-NEXT:          %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:          scf.yield %[[ZERO]], %[[ZERO]],
// CHECK:             nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = false} : memref<64x136xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
// CHECK-COUNT-32:    nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>}
// CHECK-COUNT-8:     vector.store %{{.*}}, %[[XCHG:.*]][%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<1024x4xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK-NEXT:        gpu.barrier
// CHECK-COUNT-16:    vector.load %[[XCHG]]
// CHECK-NOT:         arith.select
// Each key part stages half of D's row tiles.
// CHECK:             scf.if
// CHECK-COUNT-2:       nvvm.stmatrix
// CHECK:             scf.if
// CHECK-COUNT-2:       nvvm.stmatrix
// CHECK-NOT:         memref.store %{{.*}}, %[[D]]
// CHECK:             llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK:             nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = true} : memref<64x136xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
// CHECK-COUNT-64:    nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>}
// CHECK-NOT:         nvvm.mma.sync
// CHECK-NOT:         gpu.barrier
// CHECK:             scf.yield
// CHECK:           nvgpu.device_async_wait %[[FIRST]] {numGroups = 0 : i32}
// CHECK-NEXT:      gpu.barrier
// CHECK:           scf.if
// CHECK:             vector.store %{{.*}}, %[[STATES]]
// CHECK:             vector.store %{{.*}}, %[[D]]
// CHECK:           }
// CHECK-COUNT-32:  memref.store %{{.*}}, %[[FINAL]]
// CHECK:           gpu.terminator
// CHECK:         %[[DT:.*]] = bufferization.to_tensor %[[D]] restrict writable
// CHECK:         %[[STATEST:.*]] = bufferization.to_tensor %[[STATES]] restrict writable
// CHECK:         %[[FINALT:.*]] = bufferization.to_tensor %[[FINAL]] restrict writable : memref<?x2x128x128xf32> to tensor<?x2x128x128xf32>

// 4. chunk_output: blocks (NC * V / 64, HV, B), 128 threads. Q K^T (8 x 8),
//    Q S (8 k-steps x 8 n-tiles, the bf16 chunk states as they are) and
//    P D (4 x 8 x 2: P split, the bf16 new values as they are): 64 + 64 +
//    64 = 192 products; o is stored in bf16.
// CHECK:         bufferization.to_buffer %[[Q]] read_only
// CHECK:         bufferization.to_buffer %[[K]] read_only
// CHECK:         bufferization.to_buffer %[[DT]] read_only
// CHECK:         bufferization.to_buffer %[[STATEST]] read_only
// CHECK:         bufferization.to_buffer %[[GT]] read_only
// CHECK:         %[[O:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?x2x128xbf16>
// CHECK:         %[[NC3:.*]] = arith.ceildivui %{{.*}}, %c64{{[_0-9]*}} : index
// CHECK:         %[[BLOCKS:.*]] = arith.muli %[[NC3]], %c2{{[_0-9]*}} : index
// CHECK:         %[[OUTSMEM:.*]] = arith.constant 62720 : i32
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %[[BLOCKS]], %{{.*}} = %c2{{[_0-9]*}}, %{{.*}} = %{{.*}}) threads(%{{.*}}) in (%{{.*}} = %c128{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}) dynamic_shared_memory_size %[[OUTSMEM]] {
// CHECK-NEXT:      %[[SM3:.*]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// Q, K, S, D by cp.async (16 bytes each), row gates, all waited for
// before the one barrier; P = Q K^T stays in registers and is the A
// operand of P D.
// CHECK:           %[[QTILE:.*]] = memref.view %[[SM3]][%c0{{[_0-9]*}}][] : {{.*}} to memref<64x136xbf16, #gpu.address_space<workgroup>>
// CHECK:           memref.view %[[SM3]][%c17408{{[_0-9]*}}][] : {{.*}} to memref<64x136xbf16, #gpu.address_space<workgroup>>
// CHECK:           memref.view %[[SM3]][%c34816{{[_0-9]*}}][] : {{.*}} to memref<128x72xbf16, #gpu.address_space<workgroup>>
// CHECK:           memref.view %[[SM3]][%c53248{{[_0-9]*}}][] : {{.*}} to memref<64x72xbf16, #gpu.address_space<workgroup>>
// CHECK:           memref.view %[[SM3]][%c62464{{[_0-9]*}}][] : {{.*}} to memref<64xf32, #gpu.address_space<workgroup>>
// CHECK-COUNT-2:   nvgpu.device_async_copy %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}], 8, %{{.*}} {bypassL1} : memref<?x?x2x128xbf16> to memref<64x136xbf16, #gpu.address_space<workgroup>>
// CHECK:           nvgpu.device_async_copy %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}], 8, %{{.*}} {bypassL1} : memref<?x?x2x128x128xbf16> to memref<128x72xbf16, #gpu.address_space<workgroup>>
// CHECK:           nvgpu.device_async_copy %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}], 8, %{{.*}} {bypassL1} : memref<?x?x2x128xbf16> to memref<64x72xbf16, #gpu.address_space<workgroup>>
// CHECK:           nvgpu.device_async_wait %{{.*}} {numGroups = 0 : i32}
// CHECK-NEXT:      gpu.barrier
// CHECK-NOT:       gpu.barrier
// CHECK-COUNT-192: nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>}
// CHECK-NOT:       nvvm.mma.sync
// O goes through the warp's own Q rows: stmatrix (4 per warp), then 16-byte
// pieces of the rows below T.
// CHECK:           nvvm.bar.warp.sync
// CHECK-COUNT-4:   nvvm.stmatrix %{{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>}
// CHECK-NEXT:      nvvm.bar.warp.sync
// CHECK:           scf.if
// CHECK-NEXT:        vector.load %[[QTILE]]
// CHECK-NEXT:        arith.addi
// CHECK-NEXT:        arith.addi
// CHECK-NEXT:        vector.store %{{.*}}, %[[O]][{{.*}}] {alignment = 16 : i64} : memref<?x?x2x128xbf16>, vector<8xbf16>
// CHECK:           gpu.terminator
// CHECK:         %[[OT:.*]] = bufferization.to_tensor %[[O]] restrict writable : memref<?x?x2x128xbf16> to tensor<?x?x2x128xbf16>
// CHECK-NOT:     gpu.launch
// CHECK:         return %[[OT]], %[[FINALT]] : tensor<?x?x2x128xbf16>, tensor<?x2x128x128xf32>
func.func @gated_delta(%q: tensor<?x?x2x128xbf16>, %k: tensor<?x?x2x128xbf16>, %v: tensor<?x?x2x128xbf16>, %g: tensor<?x?x2xf32>, %beta: tensor<?x?x2xf32>, %s0: tensor<?x2x128x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x2x128x128xf32>) {
  %o, %s = linattn.recurrence gated_delta q(%q) k(%k) v(%v) gate(%g) beta(%beta) state(%s0)
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2xf32>, tensor<?x?x2xf32>, tensor<?x2x128x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x2x128x128xf32>)
  return %o, %s : tensor<?x?x2x128xbf16>, tensor<?x2x128x128xf32>
}

// RetNet (constant_decay), K = V = 64: the log decays are a tensor.generate
// selecting log gamma by value head; the cumsum kernel inlines it, so that
// no host-side gate tensor is materialised or read. No rank-1 term: no UT
// kernel, and the state pass has no W S product (2 + 1 launches); its
// update S^T += D'^T K takes D' = decayed v rounded once, not split (4
// k-steps x 4 key tiles = 16 products per warp). D'^T's fragments come from
// the staged v by ldmatrix .trans, one per k-step, each register's two
// rows widened, decayed by two ex2 (once per row pair) and rounded back:
// no element-wise loads of the stage.
// Shared memory for K = V = 64: state pass four input stages (without W,
// three chunks' copies in flight) of K (64 (64 + 8) 2 = 9216), the
// block's 32 V columns (bf16, padded by 16 bytes: 64 (32 + 8) 2 = 5120)
// and gates (256) = 58368, no exchange (no W S product: every warp starts
// from its own U^T), two output buffers of chunk states (64 (32 + 8) 2 =
// 5120 each) = 68608. Without W the
// new values are U = v itself: no D buffer is written, and the output
// kernel reads v. Output (one block of
// 64 columns per chunk) 2 * 9216 + 64 (64 + 8) 2 + 64 (64 + 8) 2 + 256 =
// 37120 (bf16 chunk states and new values, no split).

// CHECK-LABEL: func.func @retnet(
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
// CHECK:         %[[RGT:.*]] = bufferization.to_tensor %[[RG]] restrict writable
// CHECK:         bufferization.to_buffer %[[RGT]] read_only
// CHECK-NOT:     memref.alloc({{.*}}) : memref<?x?x2x64xbf16>
// CHECK:         %[[RSP:.*]] = arith.constant 68608 : i32
// CHECK:         gpu.launch {{.*}} threads(%{{.*}}) in (%{{.*}} = %c128{{[_0-9]*}}, {{.*}}) dynamic_shared_memory_size %[[RSP]] {
// CHECK-NEXT:      gpu.dynamic_shared_memory
// Without W the copies' rows stay in index arithmetic (NOTES c32).
// CHECK-NOT:       arith.minui %{{.*}}, %{{.*}} : i32
// CHECK-COUNT-3:   nvgpu.device_async_create_group
// CHECK:           nvgpu.device_async_wait %{{.*}} {numGroups = 2 : i32}
// CHECK-NEXT:      gpu.barrier
// CHECK-NOT:       memref.load %{{.*}} : memref<64x40xbf16, #gpu.address_space<workgroup>>
// CHECK:           nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = true} : memref<64x40xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
// CHECK-COUNT-2:   llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK:           arith.extf %{{.*}} : vector<2xbf16> to vector<2xf32>
// CHECK-NEXT:      arith.mulf
// CHECK-NEXT:      arith.truncf %{{.*}} : vector<2xf32> to vector<2xbf16>
// CHECK-COUNT-16:  nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>}
// CHECK-NOT:       nvvm.mma.sync
// CHECK-NOT:       memref.load %{{.*}} : memref<64x40xbf16, #gpu.address_space<workgroup>>
// CHECK:           gpu.terminator
// CHECK:         bufferization.to_buffer %arg0 read_only
// CHECK-NEXT:    bufferization.to_buffer %arg1 read_only
// CHECK-NEXT:    bufferization.to_buffer %arg2 read_only
// CHECK:         %[[ROUT:.*]] = arith.constant 37120 : i32
// CHECK:         gpu.launch {{.*}} threads(%{{.*}}) in (%{{.*}} = %c128{{[_0-9]*}}, {{.*}}) dynamic_shared_memory_size %[[ROUT]] {
// CHECK-NEXT:      gpu.dynamic_shared_memory
// CHECK:           gpu.barrier
// CHECK-COUNT-128: nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>}
// CHECK-NOT:       nvvm.mma.sync
// CHECK:           gpu.terminator
// CHECK-NOT:     gpu.launch
// CHECK:         return
func.func @retnet(%q: tensor<?x?x2x64xbf16>, %k: tensor<?x?x2x64xbf16>, %v: tensor<?x?x2x64xbf16>, %s0: tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x2x64x64xf32>) {
  %o, %s = linattn.recurrence constant_decay q(%q) k(%k) v(%v) state(%s0) {decay = array<f32: 0.5, 0.25>}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x2x64x64xf32>)
  return %o, %s : tensor<?x?x2x64xbf16>, tensor<?x2x64x64xf32>
}

// GLA (key_gate), K = V = 64: per-key gates [B, T, HV, K]. The cumsum runs
// a thread per key, just before the state pass, and besides G writes what
// the state pass reads: the chunks' total gates G_C [B, NC, HV, K] and the
// keys decayed to their chunk's last row, K' = k exp(G_C - G) (bf16, one
// per value head). The state pass stages K', U and G_C's row (four stages
// of 9216 + 5120 + 256 = 14592 bytes, two 5120-byte chunk-state buffers:
// 68608), waits once per chunk (no decay pass, no second barrier) and runs
// the update's 16 products with D = v straight from the stage; the state
// decays per key. The output kernel (Q, K, K' 3 x 9216, S 9216, v
// 9216, gates 64 (64 + 4) 4 = 17408: 63488 bytes) votes per warp whether its diagonal
// block factors, and runs 32 products for (Q exp(G)) S, then a loop over
// the column blocks up to the warp's, each iteration one block's scores
// (4 k-steps x 2 n-tiles, where it factors) and its P v (8 n-tiles x 2, P
// split): for the last warp 32 + 4 x (8 + 16) = 128, RetNet's count.

// CHECK-LABEL: func.func @gla(
// CHECK:         %[[GCUM:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?x2x64xf32>
// CHECK:         %[[KD:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?x2x64xbf16>
// CHECK:         %[[GC:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?x2x64xf32>
// CHECK:         gpu.launch blocks({{.*}}) threads({{.*}}) in (%{{.*}} = %c64{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}) {{[{]$}}
// CHECK-COUNT-64:  memref.store %{{.*}}, %[[GCUM]]
// CHECK-NOT:       memref.store %{{.*}}, %[[GCUM]]
// CHECK:           memref.store %{{.*}}, %[[GC]]
// CHECK-COUNT-64:    memref.store %{{.*}}, %[[KD]]
// CHECK:           gpu.terminator
// CHECK:         %[[GSP:.*]] = arith.constant 68608 : i32
// CHECK:         gpu.launch {{.*}} dynamic_shared_memory_size %[[GSP]] {
// CHECK:             nvgpu.device_async_copy %[[KD]]
// CHECK:             nvgpu.device_async_copy %[[GC]]{{.*}} to memref<1x64xf32, #gpu.address_space<workgroup>>
// CHECK:           scf.for
// CHECK:             nvgpu.device_async_wait %{{.*}} {numGroups = 2 : i32}
// CHECK-NEXT:        gpu.barrier
// CHECK-NOT:         gpu.barrier
// CHECK-COUNT-16:    nvvm.mma.sync
// CHECK-NOT:         nvvm.mma.sync
// CHECK:           gpu.terminator
// CHECK:         %[[GOUT:.*]] = arith.constant 63488 : i32
// CHECK:         gpu.launch {{.*}} dynamic_shared_memory_size %[[GOUT]] {
// CHECK-COUNT-32:    nvvm.mma.sync
// CHECK:             nvvm.vote.sync all
// CHECK-NOT:         nvvm.mma.sync
// CHECK:             %[[GBLOCKS:.*]] = arith.select %{{.*}}, %{{.*}}, %c0{{[_0-9]*}} : index
// CHECK:             scf.for %{{.*}} = %c0{{[_0-9]*}} to %[[GBLOCKS]] step %c1{{[_0-9]*}} iter_args({{.*}}) -> ({{(f32, ){31}f32}}) {
// CHECK:               scf.if %{{.*}} -> ({{(f32, ){7}f32}}) {
// CHECK-COUNT-8:         nvvm.mma.sync
// CHECK:               } else {
// CHECK-NOT:             nvvm.mma.sync
// CHECK:               }
// CHECK-COUNT-16:      nvvm.mma.sync
// CHECK-NOT:         nvvm.mma.sync
// CHECK:           gpu.terminator
// CHECK-NOT:     gpu.launch
// CHECK:         return
func.func @gla(%q: tensor<?x?x2x64xbf16>, %k: tensor<?x?x2x64xbf16>, %v: tensor<?x?x2x64xbf16>, %g: tensor<?x?x2x64xf32>, %s0: tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x2x64x64xf32>) {
  %o, %s = linattn.recurrence key_gate q(%q) k(%k) v(%v) gate(%g) state(%s0)
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>, tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x2x64x64xf32>)
  return %o, %s : tensor<?x?x2x64xbf16>, tensor<?x2x64x64xf32>
}

// GLA with V = 128 (K = 64): the output kernel's block takes both of the
// chunk's 64-column tiles, two units of four warps (256 threads) that share
// Q, K, K' and the gates (3 x 9216 + 17408 bytes) and each have their own
// S (9216), v (9216) and output tile (9216): 100352 bytes. Unit u = warp /
// 4 takes columns 64 u; its warp w = warp % 4 owns row block w in unit 0
// and 3 - w in unit 1, so that warps w and w + 4 together score five
// column blocks. Each warp runs the 64-column kernel's products.

// CHECK-LABEL: func.func @gla_paired(
// CHECK:         %[[PSMEM:.*]] = arith.constant 100352 : i32
// CHECK:         gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c256{{[_0-9]*}}, {{.*}}) dynamic_shared_memory_size %[[PSMEM]] {
// CHECK:           %[[WARP:.*]] = arith.divui %{{.*}}, %c32{{[_0-9]*}} : index
// CHECK:           %[[UNIT:.*]] = arith.divui %[[WARP]], %c4{{[_0-9]*}} : index
// CHECK:           %[[W:.*]] = arith.remui %[[WARP]], %c4{{[_0-9]*}} : index
// CHECK:           %[[MIRROR:.*]] = arith.subi %c3{{[_0-9]*}}, %[[W]] : index
// CHECK:           %[[FIRST:.*]] = arith.cmpi ult, %[[UNIT]], %c1{{[_0-9]*}} : index
// CHECK:           %[[ROWBLOCK:.*]] = arith.select %[[FIRST]], %[[W]], %[[MIRROR]] : index
// CHECK-COUNT-32:    nvvm.mma.sync
// CHECK:             nvvm.vote.sync all
// CHECK-NOT:         nvvm.mma.sync
// CHECK:             %[[PBLOCKS:.*]] = arith.select %{{.*}}, %{{.*}}, %c0{{[_0-9]*}} : index
// CHECK:             scf.for %{{.*}} = %c0{{[_0-9]*}} to %[[PBLOCKS]] step %c1{{[_0-9]*}} iter_args({{.*}}) -> ({{(f32, ){31}f32}}) {
// CHECK-COUNT-8:         nvvm.mma.sync
// CHECK-COUNT-16:      nvvm.mma.sync
// CHECK-NOT:         nvvm.mma.sync
// CHECK:             nvvm.stmatrix
// CHECK:           gpu.terminator
// CHECK-NOT:     gpu.launch
// CHECK:         return
func.func @gla_paired(%q: tensor<?x?x2x64xbf16>, %k: tensor<?x?x2x64xbf16>, %v: tensor<?x?x2x128xbf16>, %g: tensor<?x?x2x64xf32>, %s0: tensor<?x2x64x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x2x64x128xf32>) {
  %o, %s = linattn.recurrence key_gate q(%q) k(%k) v(%v) gate(%g) state(%s0)
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x64xf32>, tensor<?x2x64x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x2x64x128xf32>)
  return %o, %s : tensor<?x?x2x128xbf16>, tensor<?x2x64x128xf32>
}

// A per-key state pass whose gates no cumsum kernel of this pass makes
// (here the caller's G) decays its staged keys itself: three stages of
// 9216 + 5120 + 16384 = 30720 bytes (the chunk's [64][64] gates with its
// keys), two 5120-byte chunk-state buffers: 102400; once a chunk lands,
// K' = K exp(G_C - G) in place (eight ex2 per thread and step, one 16-byte
// store), and a second barrier publishes K' before the update's 16
// products.

// CHECK-LABEL: func.func @gla_state_pass_given_gates(
// CHECK:         %[[FSP:.*]] = arith.constant 102400 : i32
// CHECK:         gpu.launch {{.*}} dynamic_shared_memory_size %[[FSP]] {
// CHECK:           scf.for
// CHECK:             nvgpu.device_async_wait
// CHECK-NEXT:        gpu.barrier
// CHECK:             scf.for
// CHECK-COUNT-8:       llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK:               vector.store %{{.*}}, %{{.*}} : memref<64x72xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// CHECK:             gpu.barrier
// CHECK-COUNT-16:    nvvm.mma.sync
// CHECK-NOT:         nvvm.mma.sync
// CHECK:           gpu.terminator
// CHECK-NOT:     gpu.launch
// CHECK:         return
func.func @gla_state_pass_given_gates(%k: tensor<?x?x2x64xbf16>, %v: tensor<?x?x2x64xbf16>, %g: tensor<?x?x2x64xf32>, %s0: tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64x64xbf16>, tensor<?x2x64x64xf32>) {
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%v) gates(%g) state(%s0) {chunk_size = 64 : i64}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>, tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x?x2x64x64xbf16>, tensor<?x2x64x64xf32>)
  return %states, %final : tensor<?x?x2x64x64xbf16>, tensor<?x2x64x64xf32>
}

// A scalar cumsum that no UT kernel reads (here the caller does) keeps its
// kernel: blocks (NC, HV / 8, B) of 8 warps, one per head; lane l loads
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

// A UT kernel writes the cumsum for every later reader, the caller
// included: no cumsum kernel, and the function returns the UT kernel's G.

// CHECK-LABEL: func.func @ut_writes_cumsum(
// CHECK:         %[[UG:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?x2xf32>
// CHECK:         gpu.launch
// CHECK:           memref.store %{{.*}}, %[[UG]]
// CHECK:           gpu.terminator
// CHECK-NOT:     gpu.launch
// CHECK:         %[[UGT:.*]] = bufferization.to_tensor %[[UG]] restrict writable
// CHECK-NOT:     gpu.launch
// CHECK:         return %{{.*}}, %{{.*}}, %[[UGT]]
func.func @ut_writes_cumsum(%k: tensor<?x?x2x64xbf16>, %v: tensor<?x?x2x64xbf16>, %beta: tensor<?x?x2xf32>, %g: tensor<?x?x2xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>, tensor<?x?x2xf32>) {
  %G = linattn.chunk_cumsum %g {chunk_size = 64 : i64} : tensor<?x?x2xf32> -> tensor<?x?x2xf32>
  %w, %u = linattn.ut_transform k(%k) v(%v) beta(%beta) gates(%G) {chunk_size = 64 : i64, rank1_scale = 1.000000e+00 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2xf32>, tensor<?x?x2xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>)
  return %w, %u, %G : tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>, tensor<?x?x2xf32>
}

// A cumsum read before the UT transform (here by a state pass) keeps its
// kernel, and the UT kernel reads G like the others.

// CHECK-LABEL: func.func @cumsum_read_before_ut(
// CHECK:         %[[EG:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?x2xf32>
// CHECK:         gpu.launch {{.*}} threads(%{{.*}}) in (%{{.*}} = %c64{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}) {{[{]$}}
// CHECK:           gpu.shuffle up
// CHECK:         %[[EGT:.*]] = bufferization.to_tensor %[[EG]]
// CHECK:         bufferization.to_buffer %[[EGT]] read_only
// CHECK:         gpu.launch {{.*}} dynamic_shared_memory_size
// CHECK:         bufferization.to_buffer %[[EGT]] read_only
// CHECK:         gpu.launch {{.*}} dynamic_shared_memory_size
// CHECK-NOT:       gpu.shuffle
// CHECK:           gpu.terminator
func.func @cumsum_read_before_ut(%k: tensor<?x?x2x64xbf16>, %v: tensor<?x?x2x64xbf16>, %beta: tensor<?x?x2xf32>, %g: tensor<?x?x2xf32>, %s0: tensor<?x2x64x64xf32>) -> (tensor<?x2x64x64xf32>, tensor<?x?x2x64xbf16>) {
  %G = linattn.chunk_cumsum %g {chunk_size = 64 : i64} : tensor<?x?x2xf32> -> tensor<?x?x2xf32>
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%v) gates(%G) state(%s0) {chunk_size = 64 : i64}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2xf32>, tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x?x2x64x64xbf16>, tensor<?x2x64x64xf32>)
  %w, %u = linattn.ut_transform k(%k) v(%v) beta(%beta) gates(%G) {chunk_size = 64 : i64, rank1_scale = 1.000000e+00 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2xf32>, tensor<?x?x2xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>)
  return %final, %w : tensor<?x2x64x64xf32>, tensor<?x?x2x64xbf16>
}

// A per-key cumsum (key_gate gates, [B, T, HV, K]) runs one thread per key:
// threads = K = 128, and the key is the thread index.

// CHECK-LABEL: func.func @key_cumsum(
// CHECK-SAME:      %[[KG:[^:]+]]: tensor<?x?x2x128xf32>)
// CHECK:         %[[KGB:.*]] = bufferization.to_buffer %[[KG]] read_only
// CHECK:         %[[KGC:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?x2x128xf32>
// CHECK:         gpu.launch blocks(%{{[^,]*}}, %[[KHV:[^,]*]], %[[KB:[^)]*]]) in ({{.*}}) threads(%[[KEY:[^,]*]], %{{[^)]*}}) in (%{{.*}} = %c128{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}) {{[{]$}}
// CHECK:           memref.load %[[KGB]][%[[KB]], %{{.*}}, %[[KHV]], %[[KEY]]] : memref<?x?x2x128xf32>
// CHECK:           memref.store %{{.*}}, %[[KGC]][%[[KB]], %{{.*}}, %[[KHV]], %[[KEY]]] : memref<?x?x2x128xf32>
// CHECK:           gpu.terminator
// CHECK:         %[[KGT:.*]] = bufferization.to_tensor %[[KGC]] restrict writable
// CHECK:         return %[[KGT]]
func.func @key_cumsum(%g: tensor<?x?x2x128xf32>) -> tensor<?x?x2x128xf32> {
  %G = linattn.chunk_cumsum %g {chunk_size = 64 : i64} : tensor<?x?x2x128xf32> -> tensor<?x?x2x128xf32>
  return %G : tensor<?x?x2x128xf32>
}

// The long chunk (128 tokens; no rank-1 term, row gates): the cumsum's lane
// holds four gates; the state pass walks ceil(T / 64) steps, carrying the
// first step's last gate after the state (33 values), and stores
// ceil(T / 128) states; the output kernel runs 8 warps over a chunk,
//   Q, K [128][128 + 8] bf16 (2 x 34816), S [128][64 + 8] (18432),
//   D [128][64 + 8] (18432), 128 row gates (512): 107008 B,
// and the warps of rows 64.. add the first segment's columns under a
// branch that carries o's 32 accumulators.

// CHECK-LABEL: func.func @long_chunk(
// CHECK:         %[[LCN:.*]] = arith.ceildivui %{{.*}}, %c128{{[_0-9]*}} : index
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %[[LCN]], {{.*}} threads(%{{.*}}) in (%{{.*}} = %c64{{[_0-9]*}},
// CHECK-COUNT-6:     gpu.shuffle up
// CHECK-COUNT-4:     memref.store
// CHECK:           gpu.terminator
// CHECK:         %[[LSN:.*]] = arith.ceildivui %{{.*}}, %c128{{[_0-9]*}} : index
// CHECK:         %[[LSTEPS:.*]] = arith.ceildivui %{{.*}}, %c64{{[_0-9]*}} : index
// CHECK:         memref.alloc(%{{.*}}, %[[LSN]]) : memref<?x?x2x128x128xbf16>
// CHECK:         gpu.launch {{.*}} threads(%{{.*}}) in (%{{.*}} = %c128{{[_0-9]*}}, {{.*}} dynamic_shared_memory_size %c111616_i32
// CHECK:           scf.for %{{.*}} = %{{.*}} to %[[LSTEPS]] step %{{.*}} iter_args({{.*}}) -> ({{(f32, ){32}f32}})
// CHECK:           gpu.terminator
// CHECK:         gpu.launch {{.*}} threads(%{{.*}}) in (%{{.*}} = %c256{{[_0-9]*}}, {{.*}} dynamic_shared_memory_size %c107008_i32
// CHECK:           scf.if %{{.*}} -> ({{(f32, ){31}f32}})
// CHECK:           gpu.terminator
func.func @long_chunk(%q: tensor<?x?x2x128xbf16>, %k: tensor<?x?x2x128xbf16>, %v: tensor<?x?x2x128xbf16>, %g: tensor<?x?x2xf32>, %s0: tensor<?x2x128x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x2x128x128xf32>) {
  %G = linattn.chunk_cumsum %g {chunk_size = 128 : i64} : tensor<?x?x2xf32> -> tensor<?x?x2xf32>
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%v) gates(%G) state(%s0) {chunk_size = 128 : i64}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2xf32>, tensor<?x2x128x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128x128xbf16>, tensor<?x2x128x128xf32>)
  %o = linattn.chunk_output q(%q) k(%k) new_values(%d) states(%states) gates(%G) {chunk_size = 128 : i64, scale = 0.125 : f32}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128x128xbf16>, tensor<?x?x2xf32>) -> tensor<?x?x2x128xbf16>
  return %o, %final : tensor<?x?x2x128xbf16>, tensor<?x2x128x128xf32>
}

// The state pass in segments (linattn-segment-chunk-states, 4 chunks
// each): NS = max(1, ceil(NC / 4)) segments, a block per (column block,
// head, segment x sequence) that starts from the initial state only in
// segment 0 and stores its last state at [b, segment, hv]; the carries, a
// thread per state element sequential over the segments, each segment's
// decay summed by the lanes and a butterfly of shuffles; the output adds
// Q C_s where the chunk's segment is past the first, C_s staged in S's
// tile after a barrier.

// CHECK-LABEL: func.func @segments(
// CHECK:         %[[SNC:.*]] = arith.ceildivui %{{.*}}, %c64{{[_0-9]*}} : index
// CHECK:         %[[SCEIL:.*]] = arith.ceildivui %[[SNC]], %c4{{[_0-9]*}} : index
// CHECK:         %[[NS:.*]] = arith.maxui %c1{{[_0-9]*}}, %[[SCEIL]] : index
// CHECK:         memref.alloc(%{{.*}}, %[[NS]]) : memref<?x?x2x128x128xf32>
// CHECK:         %[[Z:.*]] = arith.muli %{{.*}}, %[[NS]] : index
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %c4{{[_0-9]*}}, %{{.*}} = %c2{{[_0-9]*}}, %{{.*}} = %[[Z]]) {{.*}} dynamic_shared_memory_size %c111616_i32
// CHECK:           arith.remui %{{.*}}, %[[NS]] : index
// CHECK:           arith.divui %{{.*}}, %[[NS]] : index
// CHECK:           gpu.terminator
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %c128{{[_0-9]*}}, %{{.*}} = %c2{{[_0-9]*}},
// CHECK:           scf.for
// CHECK-COUNT-5:     gpu.shuffle xor
// CHECK:           gpu.terminator
// CHECK:         gpu.launch {{.*}} dynamic_shared_memory_size %c62720_i32
// CHECK:           scf.if %{{.*}} -> (f32)
// CHECK:             gpu.barrier
// CHECK:             nvgpu.device_async_copy
// CHECK-COUNT-5:     gpu.shuffle xor
// CHECK:           scf.if %{{.*}} -> ({{(f32, ){31}f32}})
// CHECK:             nvgpu.device_async_wait
// CHECK:             gpu.barrier
// CHECK:             nvvm.mma.sync
// CHECK:           gpu.terminator
func.func @segments(%q: tensor<?x?x2x128xbf16>, %k: tensor<?x?x2x128xbf16>, %v: tensor<?x?x2x128xbf16>, %G: tensor<?x?x2xf32>, %s0: tensor<?x2x128x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x2x128x128xf32>) {
  %d, %states, %ends = linattn.chunk_state_pass k(%k) u(%v) gates(%G) state(%s0) {chunk_size = 64 : i64, segment_chunks = 4 : i64}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2xf32>, tensor<?x2x128x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128x128xbf16>, tensor<?x?x2x128x128xf32>)
  %c, %final = linattn.segment_carries ends(%ends) gates(%G) {chunk_size = 64 : i64, segment_chunks = 4 : i64}
      : (tensor<?x?x2x128x128xf32>, tensor<?x?x2xf32>) -> (tensor<?x?x2x128x128xbf16>, tensor<?x2x128x128xf32>)
  %o = linattn.chunk_output q(%q) k(%k) new_values(%d) states(%states) gates(%G) carries(%c) {chunk_size = 64 : i64, scale = 0.125 : f32, segment_chunks = 4 : i64}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128x128xbf16>, tensor<?x?x2xf32>, tensor<?x?x2x128x128xbf16>) -> tensor<?x?x2x128xbf16>
  return %o, %final : tensor<?x?x2x128xbf16>, tensor<?x2x128x128xf32>
}
