// RUN: linattn-opt %s --convert-linattn-chunked-to-gpu -split-input-file | FileCheck %s

// linattn.ut_transform: one gpu.launch on memrefs (bufferization.to_buffer
// of its operands, a fresh memref.alloc per result, handed on as
// bufferization.to_tensor).
//
// Dynamic shared memory for K = V = 128 (chunk C = 64, 16-bit tiles padded
// by 8 elements per row): Y = C (max(K, V) + 8) 2 = 17408, then T (fp32 C x
// (C + 4), 17408), then R = max(C (C + 4) 4, 2 C (C + 8) 2) = 18432, then
// 64 gates and 64 betas (f32), then the inverse's scratch M (fp32 16 x 48,
// 3072): 17408 + 17408 + 18432 + 256 + 256 + 3072 = 56832.

// With raw_gates (linattn-fuse-chunk-cumsum folded the cumsum in), warp 0
// sums the chunk's raw gates g (two per lane, a shuffle scan) into G, for
// its own row gates and for the later kernels, and G is the third result.

// CHECK-LABEL: func.func @raw_gates(
// CHECK-SAME:      %[[K:[^:]+]]: tensor<?x?x2x128xbf16>, %[[V:[^:]+]]: tensor<?x?x2x128xbf16>, %[[BETA:[^:]+]]: tensor<?x?x2xf32>, %[[G:[^:]+]]: tensor<?x?x2xf32>)
// Blocks (NC, HV, B), 128 threads. Warp 0 sums the chunk's
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
// Every read of the chunk is issued before any is waited on: the keys by
// cp.async, then each row's beta and (every warp) two raw gates a lane;
// warp 0 sums the gates, threads below 64 store the betas, and the copies
// are waited for before the barrier.
// CHECK:           nvgpu.device_async_copy %[[KB]]
// CHECK:           memref.load %[[BB]]
// CHECK-COUNT-2:   memref.load %[[GB]]
// CHECK:           scf.if
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
// CHECK:           scf.if
// CHECK-NEXT:        memref.store %{{.*}} : memref<64xf32, #gpu.address_space<workgroup>>
// CHECK:           nvgpu.device_async_wait %{{.*}} {numGroups = 0 : i32}
// CHECK-NEXT:      gpu.barrier
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
// CHECK:         %[[WT:.*]] = bufferization.to_tensor %[[W]] restrict writable : memref<?x?x2x128xbf16> to tensor<?x?x2x128xbf16>
// CHECK:         %[[UT:.*]] = bufferization.to_tensor %[[U]] restrict writable : memref<?x?x2x128xf32> to tensor<?x?x2x128xf32>
// CHECK:         %[[GT:.*]] = bufferization.to_tensor %[[GCUM]] restrict writable : memref<?x?x2xf32> to tensor<?x?x2xf32>
// CHECK:         return %[[WT]], %[[UT]], %[[GT]]
func.func @raw_gates(%k: tensor<?x?x2x128xbf16>, %v: tensor<?x?x2x128xbf16>, %beta: tensor<?x?x2xf32>, %g: tensor<?x?x2xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xf32>, tensor<?x?x2xf32>) {
  %w, %u, %G = linattn.ut_transform k(%k) v(%v) beta(%beta) raw_gates(%g) {chunk_size = 64 : i64, rank1_scale = 1.000000e+00 : f32}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2xf32>, tensor<?x?x2xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xf32>, tensor<?x?x2xf32>)
  return %w, %u, %G : tensor<?x?x2x128xbf16>, tensor<?x?x2x128xf32>, tensor<?x?x2xf32>
}

// -----

// With cumulative gates, the kernel reads them as row gates (a thread per
// row, the read issued beside the betas', stored with them); no shuffles.

// CHECK-LABEL: func.func @cumulative_gates(
// CHECK-SAME:      %[[CG:[^:]+]]: tensor<?x?x2xf32>)
// CHECK:         %[[CGB:.*]] = bufferization.to_buffer %[[CG]] read_only
// CHECK-NOT:     memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?x2xf32>
// CHECK:         gpu.launch
// CHECK:           %[[GR:.*]] = memref.load %[[CGB]]
// CHECK:           %[[GS:.*]] = arith.select %{{.*}}, %[[GR]], %{{.*}} : f32
// CHECK:           scf.if
// CHECK-NEXT:        memref.store
// CHECK-NEXT:        memref.store %[[GS]]
// CHECK-NOT:       gpu.shuffle
// CHECK:           gpu.terminator
// CHECK:         return
func.func @cumulative_gates(%k: tensor<?x?x2x64xbf16>, %v: tensor<?x?x2x64xbf16>, %beta: tensor<?x?x2xf32>, %G: tensor<?x?x2xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>) {
  %w, %u = linattn.ut_transform k(%k) v(%v) beta(%beta) gates(%G) {chunk_size = 64 : i64, rank1_scale = 1.000000e+00 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2xf32>, tensor<?x?x2xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>)
  return %w, %u : tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>
}

// -----

// A split W [B, T, HV, 2, K] (the negative-eigenvalue rule): the product
// leaves twice through the staging tile, part 0 the rounded W, part 1 the
// rounding of what it leaves (W - hi, rounded again).

// CHECK-LABEL: func.func @split_w(
// CHECK:         %[[SW:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?x2x2x128xbf16>
// CHECK:         memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?x2x128xf32>
// CHECK:         gpu.launch {{.*}} dynamic_shared_memory_size %c56832_i32
// CHECK:           vector.store %{{.*}}, %[[SW]][%{{.*}}, %{{.*}}, %{{.*}}, %c0{{[_0-9]*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x?x2x2x128xbf16>, vector<8xbf16>
// CHECK:           arith.truncf %{{.*}} : f32 to bf16
// CHECK:           arith.extf %{{.*}} : bf16 to f32
// CHECK:           arith.subf
// CHECK:           vector.store %{{.*}}, %[[SW]][%{{.*}}, %{{.*}}, %{{.*}}, %c1{{[_0-9]*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x?x2x2x128xbf16>, vector<8xbf16>
// CHECK:           gpu.terminator
func.func @split_w(%k: tensor<?x?x2x128xbf16>, %v: tensor<?x?x2x128xbf16>, %beta: tensor<?x?x2xf32>) -> (tensor<?x?x2x2x128xbf16>, tensor<?x?x2x128xf32>) {
  %w, %u = linattn.ut_transform k(%k) v(%v) beta(%beta) {chunk_size = 64 : i64, rank1_scale = 2.000000e+00 : f32}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2xf32>) -> (tensor<?x?x2x2x128xbf16>, tensor<?x?x2x128xf32>)
  return %w, %u : tensor<?x?x2x2x128xbf16>, tensor<?x?x2x128xf32>
}

// -----

// Per-key gates G [B, T, HV, K] (KDA): the chunk's [64][K] gates come in
// by cp.async to a [64][K + 4] f32 tile after the inverse's scratch (56832,
// 64 x 132 x 4 = 33792 bytes), and a 16-bit [64][K + 8] tile follows
// (90624): the keys decayed to their 16-row block's end for the scores,
// later K * exp(G) for W. 56832 + 33792 + 17408 = 108032 bytes. The scores
// L = StrictLower(diag(c) P), P_ij = sum_d k_id k_jd exp(G_id - G_jd),
// are the per-key scores of PerKeyScores.h with the keys as queries: a
// warp vote on the diagonal block's spread, its elementwise fp32 form
// where the gates are strong, then a loop over the column blocks at or
// before the warp's own.

// CHECK-LABEL: func.func @per_key_gates(
// CHECK:         %[[GB:.*]] = bufferization.to_buffer %{{.*}} read_only : tensor<?x?x2x128xf32> to memref<?x?x2x128xf32>
// CHECK:         %[[SMEM:.*]] = arith.constant 108032 : i32
// CHECK:         gpu.launch {{.*}} dynamic_shared_memory_size %[[SMEM]] {
// CHECK:           %[[GKEYS:.*]] = memref.view %{{.*}}[%c56832{{[_0-9]*}}][] : {{.*}} to memref<64x132xf32, #gpu.address_space<workgroup>>
// CHECK:           %[[KD:.*]] = memref.view %{{.*}}[%c90624{{[_0-9]*}}][] : {{.*}} to memref<64x136xbf16, #gpu.address_space<workgroup>>
// CHECK:           nvgpu.device_async_copy %[[GB]]{{.*}}, %[[GKEYS]]
// CHECK:           nvgpu.device_async_wait
// CHECK:           vector.store {{.*}}, %[[KD]]
// CHECK:           nvvm.vote.sync all
// CHECK:           scf.for
// CHECK:             nvgpu.ldmatrix %[[KD]]
// CHECK:             nvvm.mma.sync
// K * exp(G) into the same tile, then W = (T hi + T lo) (K * exp(G)).
// CHECK:           vector.store {{.*}}, %[[KD]]
// CHECK:           nvgpu.ldmatrix %[[KD]]{{.*}}{numTiles = 4 : i32, transpose = true}
// CHECK:         return
func.func @per_key_gates(%k: tensor<?x?x2x128xbf16>, %v: tensor<?x?x2x128xbf16>, %beta: tensor<?x?x2xf32>, %G: tensor<?x?x2x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xf32>) {
  %w, %u = linattn.ut_transform k(%k) v(%v) beta(%beta) gates(%G) {chunk_size = 64 : i64, rank1_scale = 1.000000e+00 : f32}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2xf32>, tensor<?x?x2x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xf32>)
  return %w, %u : tensor<?x?x2x128xbf16>, tensor<?x?x2x128xf32>
}

// -----

// f32 keys (normalised from bf16 inputs, as the backward recomputes the
// forward with them): the keys are staged split, their lo part in a tile
// after the rest (48640 + 64 x 72 x 2 = 57856 bytes at K = V = 64), and
// both products with the keys take it: 256 products a warp against 160
// for bf16 keys (K K^T 3 x 32, W = T' K 3 x 32, U = T' V 64), so that W is
// the one of the keys the state pass and the gradients take.
// CHECK-LABEL: func.func @f32_keys(
// CHECK:         gpu.launch
// CHECK:         gpu.launch {{.*}} dynamic_shared_memory_size %c57856_i32
// CHECK-COUNT-256: nvvm.mma.sync
// CHECK-NOT:     nvvm.mma.sync
// CHECK:         return
func.func @f32_keys(%kin: tensor<?x?x2x64xbf16>, %v: tensor<?x?x2x64xbf16>, %beta: tensor<?x?x2xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>) {
  %k = linattn.l2norm %kin : tensor<?x?x2x64xbf16> -> tensor<?x?x2x64xf32>
  %w, %u = linattn.ut_transform k(%k) v(%v) beta(%beta) {chunk_size = 64 : i64, rank1_scale = 1.000000e+00 : f32}
      : (tensor<?x?x2x64xf32>, tensor<?x?x2x64xbf16>, tensor<?x?x2xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>)
  return %w, %u : tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>
}

// -----

// An f32 spec (K = V = 64): keys and values both f32, each staged split;
// the values' lo part takes the keys' lo tile once W is out (57856 bytes,
// as for f32 keys alone). Every product takes three MMAs: K K^T, W = T' K
// and U = T' V 3 x 32 each, 288 a warp. W is f32 (the state pass splits
// it as it loads it).
// CHECK-LABEL: func.func @f32_inputs(
// CHECK:         gpu.launch {{.*}} dynamic_shared_memory_size %c57856_i32
// CHECK-COUNT-288: nvvm.mma.sync
// CHECK-NOT:     nvvm.mma.sync
// CHECK:         return
func.func @f32_inputs(%k: tensor<?x?x2x64xf32>, %v: tensor<?x?x2x64xf32>, %beta: tensor<?x?x2xf32>) -> (tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>) {
  %w, %u = linattn.ut_transform k(%k) v(%v) beta(%beta) {chunk_size = 64 : i64, rank1_scale = 1.000000e+00 : f32}
      : (tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2xf32>) -> (tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>)
  return %w, %u : tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>
}

// -----

// K = V = 192: W and U each in two pieces of 96 columns (a warp holds 48
// accumulators, not 96: the kernel spilled; NOTES u1), stored straight from
// the accumulators as pairs (the staging tiles overlay the T tiles the
// second piece reads): 12 tiles x 2 pairs x 2 pieces = 48 stores each,
// each piece's after its own products, the second's columns offset by
// 96. Y = 64 (192 + 8) 2 = 25600,
// then T, R, gates, betas and M as at 128: 65024 bytes.
// CHECK-LABEL: func.func @head_dim_192_pieces(
// CHECK:         %[[PSMEM:.*]] = arith.constant 65024 : i32
// CHECK:         gpu.launch {{.*}} dynamic_shared_memory_size %[[PSMEM]] {
// CHECK-COUNT-24:  vector.store %{{.*}} : memref<?x?x2x192xbf16>, vector<2xbf16>
// CHECK:           nvvm.mma.sync
// CHECK:           arith.constant 96 : index
// CHECK-COUNT-24:  vector.store %{{.*}} : memref<?x?x2x192xbf16>, vector<2xbf16>
// CHECK:           nvvm.mma.sync
// CHECK-COUNT-24:  vector.store %{{.*}} : memref<?x?x2x192xf32>, vector<2xf32>
// CHECK:           nvvm.mma.sync
// CHECK-COUNT-24:  vector.store %{{.*}} : memref<?x?x2x192xf32>, vector<2xf32>
// CHECK-NOT:       vector.store %{{.*}} : memref<?x?x2x192x
// CHECK:           gpu.terminator
func.func @head_dim_192_pieces(%k: tensor<?x?x2x192xbf16>, %v: tensor<?x?x2x192xbf16>, %beta: tensor<?x?x2xf32>, %g: tensor<?x?x2xf32>) -> (tensor<?x?x2x192xbf16>, tensor<?x?x2x192xf32>, tensor<?x?x2xf32>) {
  %w, %u, %G = linattn.ut_transform k(%k) v(%v) beta(%beta) raw_gates(%g) {chunk_size = 64 : i64, rank1_scale = 1.000000e+00 : f32}
      : (tensor<?x?x2x192xbf16>, tensor<?x?x2x192xbf16>, tensor<?x?x2xf32>, tensor<?x?x2xf32>) -> (tensor<?x?x2x192xbf16>, tensor<?x?x2x192xf32>, tensor<?x?x2xf32>)
  return %w, %u, %G : tensor<?x?x2x192xbf16>, tensor<?x?x2x192xf32>, tensor<?x?x2xf32>
}

// -----

// qk_l2norm factored (k_rnorm r): r staged after the inverse's scratch
// (56832 + 256 bytes), the betas' vector holds the write coefficients b =
// beta r, and the rank-1 coefficient c = rank1_scale b r is formed from
// both where L and W's column scale take it; the keys stay bf16.
// CHECK-LABEL: func.func @factored_l2norm(
// CHECK-SAME:      %[[K:[^:]+]]: tensor<?x?x2x128xbf16>, %[[RK:[^:]+]]: tensor<?x?x2xf32>, %[[V:[^:]+]]: tensor<?x?x2x128xbf16>, %[[BETA:[^:]+]]: tensor<?x?x2xf32>
// CHECK:         %[[BB:.*]] = bufferization.to_buffer %[[BETA]]
// CHECK:         %[[RB:.*]] = bufferization.to_buffer %[[RK]]
// CHECK:         %[[SMEM:.*]] = arith.constant 57088 : i32
// CHECK:         gpu.launch {{.*}} dynamic_shared_memory_size %[[SMEM]] {
// CHECK:           %[[BETAS:.*]] = memref.view %{{.*}}[%c53504{{[_0-9]*}}][] {{.*}} to memref<64xf32, #gpu.address_space<workgroup>>
// CHECK:           %[[RS:.*]] = memref.view %{{.*}}[%c56832{{[_0-9]*}}][] {{.*}} to memref<64xf32, #gpu.address_space<workgroup>>
// CHECK:           %[[R:.*]] = memref.load %[[RB]][
// CHECK:           %[[RR:.*]] = arith.select %{{.*}}, %[[R]], %{{.*}} : f32
// CHECK:           %[[B:.*]] = memref.load %[[BB]][
// CHECK:           %[[BR:.*]] = arith.select %{{.*}}, %[[B]], %{{.*}} : f32
// CHECK-NEXT:      %[[WB:.*]] = arith.mulf %[[BR]], %[[RR]] : f32
// CHECK:           scf.if
// CHECK-NEXT:        memref.store %[[WB]], %[[BETAS]][
// CHECK-NEXT:        memref.store
// CHECK-NEXT:        memref.store %[[RR]], %[[RS]][
// CHECK:           gpu.barrier
// CHECK:           memref.load %[[BETAS]][
// CHECK:           memref.load %[[RS]][
func.func @factored_l2norm(%k: tensor<?x?x2x128xbf16>, %rk: tensor<?x?x2xf32>, %v: tensor<?x?x2x128xbf16>, %beta: tensor<?x?x2xf32>, %G: tensor<?x?x2xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xf32>) {
  %w, %u = linattn.ut_transform k(%k) k_rnorm(%rk) v(%v) beta(%beta) gates(%G) {chunk_size = 64 : i64, rank1_scale = 1.0 : f32}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2xf32>, tensor<?x?x2x128xbf16>, tensor<?x?x2xf32>, tensor<?x?x2xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xf32>)
  return %w, %u : tensor<?x?x2x128xbf16>, tensor<?x?x2x128xf32>
}

// -----

// k_l2norm (linattn-fuse-row-norms): no r operand; after the keys' barrier
// each warp forms r of its own 16 rows from the staged key tile (16-byte
// vectors, a quad of lanes a row, two xor shuffles), and a quad's first
// lane stores r and b = beta r over beta; a warp barrier, since the
// scores after it read only the warp's own rows' coefficients.
// CHECK-LABEL: func.func @formed_l2norm(
// CHECK:         %[[SMEM:.*]] = arith.constant 57088 : i32
// CHECK:         gpu.launch {{.*}} dynamic_shared_memory_size %[[SMEM]] {
// CHECK:           %[[BETAS:.*]] = memref.view %{{.*}}[%c53504{{[_0-9]*}}][] {{.*}} to memref<64xf32, #gpu.address_space<workgroup>>
// CHECK:           %[[RS:.*]] = memref.view %{{.*}}[%c56832{{[_0-9]*}}][] {{.*}} to memref<64xf32, #gpu.address_space<workgroup>>
// CHECK:           %[[KEYS:.*]] = memref.view %{{.*}} to memref<64x136xbf16, #gpu.address_space<workgroup>>
// CHECK:           gpu.barrier
// CHECK-NEXT:      arith.constant 16 : index
// CHECK:           vector.load %[[KEYS]][{{.*}}] {alignment = 16 : i64} : memref<64x136xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// CHECK:           gpu.shuffle  xor %{{.*}}, %c1_i32
// CHECK:           gpu.shuffle  xor %{{.*}}, %c2_i32
// CHECK:           %[[R0:.*]] = arith.divf
// CHECK:           %[[R1:.*]] = arith.divf
// CHECK:           scf.if
// CHECK:             memref.store %[[R0]], %[[RS]][
// CHECK-NEXT:        %[[B0:.*]] = memref.load %[[BETAS]][
// CHECK-NEXT:        %[[BR0:.*]] = arith.mulf %[[B0]], %[[R0]] : f32
// CHECK-NEXT:        memref.store %[[BR0]], %[[BETAS]][
// CHECK:             memref.store %[[R1]], %[[RS]][
// CHECK:           nvvm.bar.warp.sync
// CHECK-NOT:       gpu.barrier
// CHECK:           nvgpu.ldmatrix %[[KEYS]]
func.func @formed_l2norm(%k: tensor<?x?x2x128xbf16>, %v: tensor<?x?x2x128xbf16>, %beta: tensor<?x?x2xf32>, %G: tensor<?x?x2xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xf32>) {
  %w, %u = linattn.ut_transform k(%k) v(%v) beta(%beta) gates(%G) {chunk_size = 64 : i64, k_l2norm, rank1_scale = 1.0 : f32}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2xf32>, tensor<?x?x2xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xf32>)
  return %w, %u : tensor<?x?x2x128xbf16>, tensor<?x?x2x128xf32>
}
