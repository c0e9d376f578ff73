// RUN: linattn-opt %s --convert-linattn-chunked-to-gpu -split-input-file | FileCheck %s
// RUN: linattn-opt %s --convert-linattn-chunked-to-gpu -split-input-file | FileCheck %s --check-prefix=COUNT
// RUN: linattn-opt %s --convert-linattn-chunked-to-gpu -split-input-file | FileCheck %s --check-prefix=LDM

// linattn.chunk_state_pass: one gpu.launch per op, its shared memory a
// ring of input stages filled by cp.async, the state in the warps'
// accumulator registers across a sequential loop over the chunks.
//
// The WY form (gated delta, bf16 W, K = V = 128): four input stages of W
// (C (K + 8) 2 = 17408), K (C (K + 8) 2 = 17408), U columns (C (32 + 4) 4 =
// 9216), gates (256): 4 * 44288 = 177152, then the exchange of 4 warps x 8
// row tiles x 32 lanes x 16 bytes = 16384: 193536, then the output buffers.

// Blocks (V / 32, HV, B), 128 compute threads and 64 producer threads:
//    two column groups of 16 value columns, each split over two warps by
//    keys. A sequential loop over the chunks carries the warp's S^T (16
//    columns x 64 keys: 8 accumulator tiles, 32 f32 per thread). Per
//    chunk: a wait on the stage's "full" mbarrier and a barrier of the
//    compute threads (named barrier 1), D^T = U^T - S^T W^T over the
//    warp's keys (4 k-steps x 8 row tiles: S^T rounded from the registers,
//    the bf16 W exact through ldmatrix) summed over the two warps through
//    shared memory (a second barrier; each warp reads its partner's eight
//    partial tiles back and adds them to its own), then the rows' decays
//    (each lane two rows' exp, the other 14 of its rows' by shuffles),
//    then S^T += D'^T K (4 k-steps x 8 key tiles, D' rounded once: the
//    decay damps its rounding; K exact through ldmatrix .trans): 32 + 32 =
//    64 products, and an arrival on
//    the stage's "empty" mbarrier. The bf16
//    chunk state S_n and new values D_n go into a shared output buffer by
//    stmatrix .trans (four 8x8 tiles each). The two producer warps copy
//    every stage in (cp.async, their arrival on the full mbarrier as the
//    copies land) and every staged output out: the compute warps issue
//    no copies.
// CHECK-LABEL: func.func @wy_form(
// CHECK-SAME:      %[[K:[^:]+]]: tensor<?x?x2x128xbf16>, %[[UT:[^:]+]]: tensor<?x?x2x128xf32>, %[[WT:[^:]+]]: tensor<?x?x2x128xbf16>, %[[GT:[^:]+]]: tensor<?x?x2xf32>, %[[S0:[^:]+]]: tensor<?x2x128x128xf32>)
// CHECK:         bufferization.to_buffer %[[K]] read_only
// CHECK:         bufferization.to_buffer %[[UT]] read_only
// CHECK:         bufferization.to_buffer %[[WT]] read_only
// CHECK:         bufferization.to_buffer %[[GT]] read_only
// CHECK:         bufferization.to_buffer %[[S0]] read_only
// CHECK:         %[[D:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?x2x128xbf16>
// CHECK:         %[[STATES:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?x2x128x128xbf16>
// CHECK:         %[[FINAL:.*]] = memref.alloc(%{{.*}}) : memref<?x2x128x128xf32>
// Four stages of 44288 bytes (W and K padded like every ldmatrix tile, the
// block's 32 U columns padded by 16 bytes, row gates), the 16 KiB
// exchange of the partial products, two output buffers of 15360 bytes
// (S_n [128][32 + 8] and D_n [64][32 + 8] in bf16), then ten mbarriers
// (each stage's full and empty, each output buffer's): 224336.
// CHECK:         %[[SPSMEM:.*]] = arith.constant 224336 : i32
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %c4{{[_0-9]*}}, %{{.*}} = %c2{{[_0-9]*}}, %{{.*}} = %{{.*}}) threads(%{{.*}}) in (%{{.*}} = %c192{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}) dynamic_shared_memory_size %[[SPSMEM]] {
// CHECK-NEXT:      %[[SM2:.*]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// Thread 0 sets the barriers up: full (64 producer arrivals) and empty (128
// compute arrivals) per stage, then each output buffer's (64).
// CHECK:           scf.if %{{.*}} {
// CHECK-COUNT-4:     nvvm.mbarrier.init %{{.*}}, %c64_i32{{.*}}: !llvm.ptr<3>, i32
// CHECK-COUNT-2:     nvvm.mbarrier.init %{{.*}}, %c64_i32{{.*}}: !llvm.ptr<3>, i32
// CHECK:           gpu.barrier
// The compute warps (tid < 128):
// CHECK:           scf.if %{{.*}} {
// CHECK:             %{{.*}}:32 = scf.for {{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
// CHECK:               nvvm.mbarrier.try_wait.parity
// CHECK:               nvvm.barrier id = %{{.*}} number_of_threads = %c128_i32
// CHECK-NOT:           nvgpu.device_async_copy
// From step 2 on, step j - 2's outputs have left its output buffer.
// CHECK:               scf.if
// CHECK:                 arith.divui
// CHECK:                 nvvm.mbarrier.try_wait.parity
// CHECK-NOT:           memref.store %{{.*}}, %[[STATES]]
// CHECK-COUNT-4:       nvvm.stmatrix %{{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<col>, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>} : !llvm.ptr<3>, i32, i32, i32, i32
// Key part 0 starts D from U, key part 1 from zero (a warp-uniform branch).
// CHECK:               scf.if %{{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32) {
// CHECK-COUNT-32:        memref.load
// CHECK:                 scf.yield
// CHECK:               } else {
// CHECK-NEXT:            %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:            scf.yield %[[ZERO]], %[[ZERO]],
// CHECK:               nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = false} : memref<64x136xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
// CHECK-COUNT-32:      nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>}
// CHECK-COUNT-8:       vector.store %{{.*}}, %[[XCHG:.*]][%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<1024x4xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK:               nvvm.barrier id = %{{.*}} number_of_threads = %c128_i32
// CHECK:               arith.xori
// CHECK-COUNT-8:       vector.load %[[XCHG]]
// CHECK-NOT:           vector.load %[[XCHG]]
// CHECK-NOT:           arith.select
// Each key part stages half of D's row tiles.
// CHECK:               scf.if
// CHECK-COUNT-2:         nvvm.stmatrix
// CHECK:               scf.if
// CHECK-COUNT-2:         nvvm.stmatrix
// CHECK-NOT:           memref.store %{{.*}}, %[[D]]
// CHECK-COUNT-2:       llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK-COUNT-16:      gpu.shuffle idx
// CHECK-NOT:           gpu.shuffle
// CHECK:               llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK-NOT:           llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK:               nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = true} : memref<64x136xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
// CHECK-COUNT-32:      nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>}
// CHECK-NOT:           nvvm.mma.sync
// CHECK-NOT:           nvgpu.device_async_copy
// CHECK:               nvvm.mbarrier.arrive %{{.*}} : !llvm.ptr<3> -> i64
// CHECK-NEXT:          scf.yield
// CHECK-COUNT-32:    memref.store %{{.*}}, %[[FINAL]]
// The producer warps: step j's copies into slot j mod 4 once the compute
// warps have read its previous round (j >= 4), 16 + 16 + 8 + 1 copies a
// thread, then their arrival on its full mbarrier as they land; then step
// j - 4's outputs out (4 x 8 state rows' pieces and D's valid rows) and an
// arrival on its output buffer's mbarrier.
// CHECK:           } else {
// CHECK:             scf.for
// CHECK:               scf.if
// CHECK:                 nvvm.mbarrier.try_wait.parity
// CHECK:               scf.for {{.*}} to %c16
// CHECK:                 nvgpu.device_async_copy {{.*}} : memref<?x?x2x128xbf16> to memref<64x136xbf16, #gpu.address_space<workgroup>>
// CHECK:               scf.for {{.*}} to %c16
// CHECK:                 nvgpu.device_async_copy {{.*}} : memref<?x?x2x128xbf16> to memref<64x136xbf16, #gpu.address_space<workgroup>>
// CHECK:               scf.for {{.*}} to %c8
// CHECK:                 nvgpu.device_async_copy {{.*}} : memref<?x?x2x128xf32> to memref<64x36xf32, #gpu.address_space<workgroup>>
// CHECK:               nvgpu.device_async_copy {{.*}} : memref<?x?x2xf32> to memref<64x1xf32, #gpu.address_space<workgroup>>
// CHECK:               nvgpu.device_async_create_group
// CHECK:               nvvm.cp.async.mbarrier.arrive %{{.*}} {noinc = true} : !llvm.ptr<3>
// CHECK:               scf.if
// CHECK:                 vector.load %{{.*}} : memref<128x40xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// CHECK:                 vector.store %{{.*}}, %[[STATES]][{{.*}}] {alignment = 16 : i64} : memref<?x?x2x128x128xbf16>, vector<8xbf16>
// CHECK:                 vector.load %{{.*}} : memref<64x40xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// CHECK:                 vector.store %{{.*}}, %[[D]][{{.*}}] {alignment = 16 : i64} : memref<?x?x2x128xbf16>, vector<8xbf16>
// CHECK:                 nvvm.mbarrier.arrive
// The last four steps' outputs, each once its step is read.
// CHECK:             scf.for
// CHECK:               nvvm.mbarrier.try_wait.parity
// CHECK:               vector.store %{{.*}}, %[[STATES]]
// CHECK:               vector.store %{{.*}}, %[[D]]
// CHECK:             nvvm.cp.async.wait.group 0
// CHECK:           gpu.terminator
// CHECK:         %[[DT:.*]] = bufferization.to_tensor %[[D]] restrict writable
// CHECK:         %[[STATEST:.*]] = bufferization.to_tensor %[[STATES]] restrict writable
// CHECK:         %[[FINALT:.*]] = bufferization.to_tensor %[[FINAL]] restrict writable : memref<?x2x128x128xf32> to tensor<?x2x128x128xf32>
// CHECK:         return
func.func @wy_form(%k: tensor<?x?x2x128xbf16>, %u: tensor<?x?x2x128xf32>, %w: tensor<?x?x2x128xbf16>, %G: tensor<?x?x2xf32>, %s0: tensor<?x2x128x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128x128xbf16>, tensor<?x2x128x128xf32>) {
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) w(%w) gates(%G) state(%s0) {chunk_size = 64 : i64}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xf32>, tensor<?x?x2x128xbf16>, tensor<?x?x2xf32>, tensor<?x2x128x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128x128xbf16>, tensor<?x2x128x128xf32>)
  return %d, %states, %final : tensor<?x?x2x128xbf16>, tensor<?x?x2x128x128xbf16>, tensor<?x2x128x128xf32>
}

// -----

// No rank-1 term, row gates (RetNet's, given), K = V = 64: four input stages
// (without W, three chunks' copies in flight) of K (64 (64 + 8) 2 = 9216),
// the block's 32 V columns (bf16, padded by 16 bytes: 64 (32 + 8) 2 = 5120)
// and gates (256) = 58368, no exchange (no W S product: every warp starts
// from its own U^T), two output buffers of chunk states (64 (32 + 8) 2 =
// 5120 each) = 68608, and
// ten mbarriers (80 bytes): 68688. Without W the new values are u itself: no D buffer.
// The update S^T += D'^T K takes D' = decayed v rounded once, not split (4
// k-steps x 4 key tiles = 16 products per warp); D'^T's fragments come from
// the staged v by ldmatrix .trans, one per k-step, each register's two rows
// widened, decayed by two ex2 (once per row pair) and rounded back: no
// element-wise loads of the stage. Without W the thread takes its rows'
// exps itself (no shuffles: shared, they cost this short step up to 7%,
// bench/NOTES.md s3).

// CHECK-LABEL: func.func @row_gates(
// CHECK-NOT:     memref.alloc({{.*}}) : memref<?x?x2x64xbf16>
// CHECK:         %[[RSP:.*]] = arith.constant 68688 : i32
// CHECK:         gpu.launch {{.*}} threads(%{{.*}}) in (%{{.*}} = %c192{{[_0-9]*}}, {{.*}}) dynamic_shared_memory_size %[[RSP]] {
// CHECK-NEXT:      gpu.dynamic_shared_memory
// CHECK:           scf.for
// CHECK:             nvvm.mbarrier.try_wait.parity
// CHECK:             nvvm.barrier id = %{{.*}} number_of_threads = %c128_i32
// CHECK-NOT:       memref.load %{{.*}} : memref<64x40xbf16, #gpu.address_space<workgroup>>
// CHECK-NOT:       gpu.shuffle
// CHECK:           nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = true} : memref<64x40xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
// CHECK-COUNT-2:   llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK:           arith.extf %{{.*}} : vector<2xbf16> to vector<2xf32>
// CHECK-NEXT:      arith.mulf
// CHECK-NEXT:      arith.truncf %{{.*}} : vector<2xf32> to vector<2xbf16>
// CHECK-COUNT-16:  nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>}
// CHECK-NOT:       nvvm.mma.sync
// CHECK-NOT:       gpu.shuffle
// CHECK-NOT:       memref.load %{{.*}} : memref<64x40xbf16, #gpu.address_space<workgroup>>
// The producer's copies: without W their rows stay in index arithmetic
// (NOTES c32).
// CHECK:           } else {
// CHECK-NOT:         arith.minui %{{.*}}, %{{.*}} : i32
// CHECK:             nvgpu.device_async_copy
// CHECK-NOT:         arith.minui %{{.*}}, %{{.*}} : i32
// CHECK:           gpu.terminator
// CHECK:         return
func.func @row_gates(%k: tensor<?x?x2x64xbf16>, %v: tensor<?x?x2x64xbf16>, %G: tensor<?x?x2xf32>, %s0: tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x?x2x64x64xbf16>, tensor<?x2x64x64xf32>) {
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%v) gates(%G) state(%s0) {chunk_size = 64 : i64}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2xf32>, tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x?x2x64x64xbf16>, tensor<?x2x64x64xf32>)
  return %d, %states, %final : tensor<?x?x2x64xbf16>, tensor<?x?x2x64x64xbf16>, tensor<?x2x64x64xf32>
}

// -----

// Decayed keys (GLA after linattn-fuse-chunk-cumsum), K = V = 64: k is K' =
// k exp(G_C - G) per value head and the gates the chunks' totals G_C. The
// state pass stages K', U and G_C's row (four stages of 9216 + 5120 + 256 =
// 14592 bytes, two 5120-byte chunk-state buffers, mbarriers: 68688), waits once per
// chunk (no decay pass, no second barrier) and runs the update's 16
// products with D = v straight from the stage; the state decays per key.

// CHECK-LABEL: func.func @decayed_keys(
// CHECK-SAME:      %[[KDT:[^:]+]]: tensor<?x?x2x64xbf16>, %{{[^:]+}}: tensor<?x?x2x64xbf16>, %[[GCT:[^:]+]]: tensor<?x?x2x64xf32>
// CHECK:         %[[KD:.*]] = bufferization.to_buffer %[[KDT]] read_only
// CHECK:         %[[GC:.*]] = bufferization.to_buffer %[[GCT]] read_only
// CHECK:         %[[GSP:.*]] = arith.constant 68688 : i32
// CHECK:         gpu.launch {{.*}} dynamic_shared_memory_size %[[GSP]] {
// CHECK:           scf.for
// CHECK:             nvvm.mbarrier.try_wait.parity
// CHECK:             nvvm.barrier id
// CHECK-NOT:         nvvm.barrier
// CHECK-COUNT-16:    nvvm.mma.sync
// CHECK-NOT:         nvvm.mma.sync
// CHECK:           } else {
// CHECK:             nvgpu.device_async_copy %[[KD]]
// CHECK:             nvgpu.device_async_copy %[[GC]]{{.*}} to memref<1x64xf32, #gpu.address_space<workgroup>>
// CHECK:           gpu.terminator
// CHECK-NOT:     gpu.launch
// CHECK:         return
func.func @decayed_keys(%kd: tensor<?x?x2x64xbf16>, %v: tensor<?x?x2x64xbf16>, %gc: tensor<?x?x2x64xf32>, %s0: tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64x64xbf16>, tensor<?x2x64x64xf32>) {
  %d, %states, %final = linattn.chunk_state_pass k(%kd) u(%v) gates(%gc) state(%s0) {chunk_size = 64 : i64, decayed_keys}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>, tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x?x2x64x64xbf16>, tensor<?x2x64x64xf32>)
  return %states, %final : tensor<?x?x2x64x64xbf16>, tensor<?x2x64x64xf32>
}

// -----

// Per-key gates G [B, T, HV, K] given as they are (no decayed keys): the
// state pass decays its staged keys itself: three stages of
// 9216 + 5120 + 16384 = 30720 bytes (the chunk's [64][64] gates with its
// keys), two 5120-byte chunk-state buffers, eight mbarriers: 102464; once a chunk lands,
// K' = K exp(G_C - G) in place (eight ex2 per thread and step, one 16-byte
// store), and a second barrier publishes K' before the update's 16
// products.

// CHECK-LABEL: func.func @gla_state_pass_given_gates(
// CHECK:         %[[FSP:.*]] = arith.constant 102464 : i32
// CHECK:         gpu.launch {{.*}} dynamic_shared_memory_size %[[FSP]] {
// CHECK:           scf.for
// CHECK:             nvvm.mbarrier.try_wait.parity
// CHECK:             nvvm.barrier id
// CHECK:             scf.for
// CHECK-COUNT-8:       llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK:               vector.store %{{.*}}, %{{.*}} : memref<64x72xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// CHECK:             nvvm.barrier id
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

// -----

// The long chunk (128 tokens; no rank-1 term, row gates): the state pass
// walks ceil(T / 64) steps, carrying the first step's last gate after the
// state (33 values), and stores ceil(T / 128) states.

// CHECK-LABEL: func.func @long_chunk(
// CHECK:         %[[LSN:.*]] = arith.ceildivui %{{.*}}, %c128{{[_0-9]*}} : index
// CHECK:         %[[LSTEPS:.*]] = arith.ceildivui %{{.*}}, %c64{{[_0-9]*}} : index
// CHECK:         memref.alloc(%{{.*}}, %[[LSN]]) : memref<?x?x2x128x128xbf16>
// CHECK:         gpu.launch {{.*}} threads(%{{.*}}) in (%{{.*}} = %c192{{[_0-9]*}}, {{.*}} dynamic_shared_memory_size %c111696_i32
// CHECK:           scf.for %{{.*}} = %{{.*}} to %[[LSTEPS]] step %{{.*}} iter_args({{.*}}) -> ({{(f32, ){32}f32}})
// CHECK:           gpu.terminator
func.func @long_chunk(%k: tensor<?x?x2x128xbf16>, %v: tensor<?x?x2x128xbf16>, %G: tensor<?x?x2xf32>, %s0: tensor<?x2x128x128xf32>) -> (tensor<?x?x2x128x128xbf16>, tensor<?x2x128x128xf32>) {
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%v) gates(%G) state(%s0) {chunk_size = 128 : i64}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2xf32>, tensor<?x2x128x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128x128xbf16>, tensor<?x2x128x128xf32>)
  return %states, %final : tensor<?x?x2x128x128xbf16>, tensor<?x2x128x128xf32>
}

// -----

// In segments (linattn-segment-chunk-states, 4 chunks each): NS = max(1,
// ceil(NC / 4)) segments, a block per (column block, head, segment x
// sequence) that starts from the initial state only in segment 0 and
// stores its last state at [b, segment, hv].

// CHECK-LABEL: func.func @segments(
// CHECK:         %[[SNC:.*]] = arith.ceildivui %{{.*}}, %c64{{[_0-9]*}} : index
// CHECK:         %[[SCEIL:.*]] = arith.ceildivui %[[SNC]], %c4{{[_0-9]*}} : index
// CHECK:         %[[NS:.*]] = arith.maxui %c1{{[_0-9]*}}, %[[SCEIL]] : index
// CHECK:         memref.alloc(%{{.*}}, %[[NS]]) : memref<?x?x2x128x128xf32>
// CHECK:         %[[Z:.*]] = arith.muli %{{.*}}, %[[NS]] : index
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %c4{{[_0-9]*}}, %{{.*}} = %c2{{[_0-9]*}}, %{{.*}} = %[[Z]]) {{.*}} dynamic_shared_memory_size %c111696_i32
// CHECK:           arith.remui %{{.*}}, %[[NS]] : index
// CHECK:           arith.divui %{{.*}}, %[[NS]] : index
// CHECK:           gpu.terminator
func.func @segments(%k: tensor<?x?x2x128xbf16>, %v: tensor<?x?x2x128xbf16>, %G: tensor<?x?x2xf32>, %s0: tensor<?x2x128x128xf32>) -> (tensor<?x?x2x128x128xbf16>, tensor<?x?x2x128x128xf32>) {
  %d, %states, %ends = linattn.chunk_state_pass k(%k) u(%v) gates(%G) state(%s0) {chunk_size = 64 : i64, segment_chunks = 4 : i64}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2xf32>, tensor<?x2x128x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128x128xbf16>, tensor<?x?x2x128x128xf32>)
  return %states, %ends : tensor<?x?x2x128x128xbf16>, tensor<?x?x2x128x128xf32>
}

// -----

// A split W [B, T, HV, 2, K] (DeltaNet with negative eigenvalues,
// linattn-lower-rank1-to-wy{split-w=true}): the state pass stages W's rows
// as 2K bf16 (hi, then lo) and reads both by ldmatrix, where an f32 W was
// loaded element pair by element pair and split on the sequential path.
// State pass shared memory, K = V = 128, chunk C = 64: three stages of W
// (C (2K + 8) 2 = 33792), K (C (K + 8) 2 = 17408) and U columns (C (32 + 4)
// 4 = 9216): 3 * 60416 = 181248; the exchange 16384; the staged chunk
// states and new values, two buffers of K (32 + 8) 2 + C (32 + 8) 2: 30720.
// In all 228416 with eight mbarriers (of the 232432 a block may have: 232448 less the
// kernels' 16 static bytes).

// CHECK-LABEL: func.func @split_w(
// W's staged rows are 2K bf16 wide, by cp.async from both
//    parts; per warp and chunk, 32 ldmatrix of W (16 hi, 16 lo) and 64
//    products for D = U - W S (S^T rounded once, against W's hi and lo),
//    then 64 for the update (D split against exact K): 128.
// CHECK:         gpu.launch {{.*}} dynamic_shared_memory_size %c228416_i32
// CHECK:           scf.for
// CHECK-COUNT-2:     nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = false} : memref<64x264xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
// CHECK-COUNT-4:     nvvm.mma.sync
// CHECK-NOT:         memref.load {{.*}} memref<64x264xbf16
// CHECK:           } else {
// CHECK:             nvgpu.device_async_copy %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}], %{{.*}}[%{{.*}}, %{{.*}}], 8, %{{.*}} {bypassL1} : memref<?x?x2x2x128xbf16> to memref<64x264xbf16, #gpu.address_space<workgroup>>
// CHECK:           gpu.terminator

// LDM:           gpu.launch {{.*}} dynamic_shared_memory_size %c228416_i32
// LDM-COUNT-32:    nvgpu.ldmatrix %{{.*}} : memref<64x264xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
// LDM-NOT:         nvgpu.ldmatrix %{{.*}} : memref<64x264xbf16
// LDM:             gpu.terminator
// COUNT:         gpu.launch {{.*}} dynamic_shared_memory_size %c228416_i32
// COUNT-COUNT-128: nvvm.mma.sync
// COUNT-NOT:       nvvm.mma.sync
// COUNT:           gpu.terminator
func.func @split_w(%k: tensor<?x?x2x128xbf16>, %u: tensor<?x?x2x128xf32>, %w: tensor<?x?x2x2x128xbf16>, %s0: tensor<?x2x128x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128x128xbf16>, tensor<?x2x128x128xf32>) {
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) w(%w) state(%s0) {chunk_size = 64 : i64}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xf32>, tensor<?x?x2x2x128xbf16>, tensor<?x2x128x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128x128xbf16>, tensor<?x2x128x128xf32>)
  return %d, %states, %final : tensor<?x?x2x128xbf16>, tensor<?x?x2x128x128xbf16>, tensor<?x2x128x128xf32>
}

// -----

// f32 keys (normalised from bf16 inputs: the backward's recomputed forward)
// are staged f32 (64 x (64 + 8) x 4 bytes a stage, 27648 more than bf16
// keys over three stages: 127808 with mbarriers) and split as their fragments load, so
// that the recomputed states are those of the keys the gradients take: 64
// products a warp and chunk against 48 with bf16 keys, the update's
// products with the keys' lo part added.
// CHECK-LABEL: func.func @f32_keys(
// CHECK:         gpu.launch
// CHECK:         gpu.launch {{.*}} dynamic_shared_memory_size %c127808_i32
// CHECK-COUNT-64: nvvm.mma.sync
// CHECK-NOT:     nvvm.mma.sync
// CHECK:         return
func.func @f32_keys(%kin: tensor<?x?x2x64xbf16>, %u: tensor<?x?x2x64xf32>, %w: tensor<?x?x2x64xbf16>, %g: tensor<?x?x2xf32>, %s0: tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xf32>, tensor<?x?x2x64x64xf32>, tensor<?x2x64x64xf32>) {
  %k = linattn.l2norm %kin : tensor<?x?x2x64xbf16> -> tensor<?x?x2x64xf32>
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) w(%w) gates(%g) state(%s0) {chunk_size = 64 : i64}
      : (tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xbf16>, tensor<?x?x2xf32>, tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xf32>, tensor<?x?x2x64x64xf32>, tensor<?x2x64x64xf32>)
  return %d, %states, %final : tensor<?x?x2x64xf32>, tensor<?x?x2x64x64xf32>, tensor<?x2x64x64xf32>
}

// -----

// An f32 spec without W (simple GLA, K = V = 64): keys and values staged
// f32 (four stages of 64 x 72 x 4 + 64 x 36 x 4 + 256 = 27904 bytes), the
// states and new values stored directly. The update S^T += D'^T K takes D'
// split (rounded, v would cost the spec its 1e-4) and the keys split as
// their fragments load: 3 x 16 = 48 products a warp and chunk.
// CHECK-LABEL: func.func @f32_row_gates(
// CHECK:         gpu.launch {{.*}} dynamic_shared_memory_size %c111696_i32
// CHECK-NOT:       nvvm.stmatrix
// CHECK-COUNT-48:  nvvm.mma.sync
// CHECK-NOT:       nvvm.mma.sync
// CHECK:         return
func.func @f32_row_gates(%k: tensor<?x?x2x64xf32>, %v: tensor<?x?x2x64xf32>, %G: tensor<?x?x2xf32>, %s0: tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xf32>, tensor<?x?x2x64x64xf32>, tensor<?x2x64x64xf32>) {
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%v) gates(%G) state(%s0) {chunk_size = 64 : i64}
      : (tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2xf32>, tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xf32>, tensor<?x?x2x64x64xf32>, tensor<?x2x64x64xf32>)
  return %d, %states, %final : tensor<?x?x2x64xf32>, tensor<?x?x2x64x64xf32>, tensor<?x2x64x64xf32>
}

// -----

// Narrow blocks (linattn.state_columns = 16, from
// linattn-narrow-state-blocks where few chains would leave SMs idle): one
// column group of 16 value columns, its keys over two warps (64 threads, and 64 producer threads),
// V / 16 = 8 blocks a head. Each warp's work per chunk is the wide block's
// (64 products); the stages hold the block's 16 U columns (C (16 + 4) 4 =
// 5120): 4 x (17408 + 17408 + 5120 + 256) = 160768 (four stages: the
// copies issued after the update), the exchange of 2 warps 8192, the
// output buffers 2 x (128 + 64) (16 + 8) 2 = 18432, mbarriers 80: 187472.
// CHECK-LABEL: func.func @wy_form_narrow(
// CHECK:         %[[NSMEM:.*]] = arith.constant 187472 : i32
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %c8{{[_0-9]*}}, %{{.*}} = %c2{{[_0-9]*}}, %{{.*}} = %{{.*}}) threads(%{{.*}}) in (%{{.*}} = %c128{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}) dynamic_shared_memory_size %[[NSMEM]] {
// COUNT-LABEL: func.func @wy_form_narrow(
// COUNT-COUNT-64: nvvm.mma.sync
// COUNT-NOT:      nvvm.mma.sync
func.func @wy_form_narrow(%k: tensor<?x?x2x128xbf16>, %u: tensor<?x?x2x128xf32>, %w: tensor<?x?x2x128xbf16>, %G: tensor<?x?x2xf32>, %s0: tensor<?x2x128x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128x128xbf16>, tensor<?x2x128x128xf32>) {
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) w(%w) gates(%G) state(%s0) {chunk_size = 64 : i64, linattn.state_columns = 16 : i64}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xf32>, tensor<?x?x2x128xbf16>, tensor<?x?x2xf32>, tensor<?x2x128x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128x128xbf16>, tensor<?x2x128x128xf32>)
  return %d, %states, %final : tensor<?x?x2x128xbf16>, tensor<?x?x2x128x128xbf16>, tensor<?x2x128x128xf32>
}

// -----

// Wide blocks (linattn.state_columns = 64, from linattn-widen-state-blocks
// where the 32-column blocks would take more than one wave): four column
// groups of 16 value columns, each over two warps (256 compute threads),
// and, W being rounded once with row gates, two producer warps (320
// threads), V / 64 = 2 blocks a head. The stages hold 64 U columns (64 (64
// + 4) 4 = 17408): neither four nor three would fit, two do: 2 x (17408 +
// 17408 + 17408 + 256) = 104960, the exchange of 8 warps 32768, the output
// buffers 2 x (128 + 64) (64 + 8) 2 = 55296, six mbarriers 48: 193072.
// CHECK-LABEL: func.func @wy_form_wide(
// CHECK:         %[[WSMEM:.*]] = arith.constant 193072 : i32
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %c2{{[_0-9]*}}, %{{.*}} = %c2{{[_0-9]*}}, %{{.*}} = %{{.*}}) threads(%{{.*}}) in (%{{.*}} = %c320{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}) dynamic_shared_memory_size %[[WSMEM]] {
// Per stage full (64 producer arrivals) and empty (256 compute arrivals),
// then the two output buffers' (64):
// CHECK:             nvvm.mbarrier.init %{{.*}}, %c64_i32{{.*}}: !llvm.ptr<3>, i32
// CHECK:             nvvm.mbarrier.init %{{.*}}, %c256_i32{{.*}}: !llvm.ptr<3>, i32
// CHECK:             nvvm.mbarrier.init %{{.*}}, %c64_i32{{.*}}: !llvm.ptr<3>, i32
// CHECK:             nvvm.mbarrier.init %{{.*}}, %c256_i32{{.*}}: !llvm.ptr<3>, i32
// CHECK-COUNT-2:     nvvm.mbarrier.init %{{.*}}, %c64_i32{{.*}}: !llvm.ptr<3>, i32
// CHECK:             nvvm.cp.async.mbarrier.arrive %{{.*}} {noinc = true} : !llvm.ptr<3>
// COUNT-LABEL: func.func @wy_form_wide(
// COUNT-COUNT-64: nvvm.mma.sync
// COUNT-NOT:      nvvm.mma.sync
func.func @wy_form_wide(%k: tensor<?x?x2x128xbf16>, %u: tensor<?x?x2x128xf32>, %w: tensor<?x?x2x128xbf16>, %G: tensor<?x?x2xf32>, %s0: tensor<?x2x128x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128x128xbf16>, tensor<?x2x128x128xf32>) {
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) w(%w) gates(%G) state(%s0) {chunk_size = 64 : i64, linattn.state_columns = 64 : i64}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xf32>, tensor<?x?x2x128xbf16>, tensor<?x?x2xf32>, tensor<?x2x128x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128x128xbf16>, tensor<?x2x128x128xf32>)
  return %d, %states, %final : tensor<?x?x2x128xbf16>, tensor<?x?x2x128x128xbf16>, tensor<?x2x128x128xf32>
}

// -----

// V = 224, not a multiple of 64: the wide request still takes 64 columns,
// ceil(224 / 64) = 4 blocks (the last one's second half past V), with the
// same shared memory and threads as at V = 128. The block's columns in V,
// min(64, 224 - v0), bound U's copies and the staged outputs' copies out;
// whether a warp's 16 columns are in V (v < 224) guards its direct stores;
// the initial state's column is clamped to 223 (read, never stored).
// CHECK-LABEL: func.func @wy_form_wide_ragged(
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %c4{{[_0-9]*}}, %{{.*}} = %c2{{[_0-9]*}}, %{{.*}} = %{{.*}}) threads(%{{.*}}) in (%{{.*}} = %c320{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}) dynamic_shared_memory_size %c193072_i32 {
// CHECK:           %[[V:.*]] = arith.constant 224 : index
// CHECK:           %[[LEFT:.*]] = arith.subi %[[V]], %{{.*}} : index
// CHECK:           arith.minui %c64{{[_0-9]*}}, %[[LEFT]] : index
// CHECK:           arith.cmpi ult, %{{.*}}, %c224{{[_0-9]*}} : index
// CHECK:           arith.minui %{{.*}}, %c223{{[_0-9]*}} : index
// COUNT-LABEL: func.func @wy_form_wide_ragged(
// COUNT-COUNT-64: nvvm.mma.sync
// COUNT-NOT:      nvvm.mma.sync
func.func @wy_form_wide_ragged(%k: tensor<?x?x2x128xbf16>, %u: tensor<?x?x2x224xf32>, %w: tensor<?x?x2x128xbf16>, %G: tensor<?x?x2xf32>, %s0: tensor<?x2x128x224xf32>) -> (tensor<?x?x2x224xbf16>, tensor<?x?x2x128x224xbf16>, tensor<?x2x128x224xf32>) {
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) w(%w) gates(%G) state(%s0) {chunk_size = 64 : i64, linattn.state_columns = 64 : i64}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x224xf32>, tensor<?x?x2x128xbf16>, tensor<?x?x2xf32>, tensor<?x2x128x224xf32>) -> (tensor<?x?x2x224xbf16>, tensor<?x?x2x128x224xbf16>, tensor<?x2x128x224xf32>)
  return %d, %states, %final : tensor<?x?x2x224xbf16>, tensor<?x?x2x128x224xbf16>, tensor<?x2x128x224xf32>
}

// -----

// A wide block without W (simple GLA's state pass: U is v, D is v) keeps its
// eight warps' own copies (256 threads, no mbarrier): its steps are short,
// and two producer warps issuing the copies of eight lost 8-16%
// (bench/NOTES.md pw2).
// CHECK-LABEL: func.func @without_w_wide(
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %c2{{[_0-9]*}}, %{{.*}} = %c2{{[_0-9]*}}, %{{.*}} = %{{.*}}) threads(%{{.*}}) in (%{{.*}} = %c256{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}})
// CHECK-NOT:         nvvm.mbarrier.init
// CHECK:         return
// COUNT-LABEL: func.func @without_w_wide(
func.func @without_w_wide(%k: tensor<?x?x2x128xbf16>, %v: tensor<?x?x2x128xbf16>, %G: tensor<?x?x2xf32>, %s0: tensor<?x2x128x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128x128xbf16>, tensor<?x2x128x128xf32>) {
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%v) gates(%G) state(%s0) {chunk_size = 64 : i64, linattn.state_columns = 64 : i64}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2xf32>, tensor<?x2x128x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128x128xbf16>, tensor<?x2x128x128xf32>)
  return %d, %states, %final : tensor<?x?x2x128xbf16>, tensor<?x?x2x128x128xbf16>, tensor<?x2x128x128xf32>
}

// -----

// A wide request whose staged outputs do not fit (K = 256: two stages and
// the exchange take 2 x (33792 + 33792 + 17408 + 256) + 32768 = 203264
// bytes, the staged states and values 2 x (256 + 64) (64 + 8) 2 = 92160
// more) stores them from registers: 64 columns, V / 64 = 2 blocks of 256
// threads, 203264 bytes of shared memory, and no stmatrix.
// CHECK-LABEL: func.func @wide_request_unstaged(
// CHECK:         %[[USMEM:.*]] = arith.constant 203264 : i32
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %c2{{[_0-9]*}}, %{{.*}} = %c2{{[_0-9]*}}, %{{.*}} = %{{.*}}) threads(%{{.*}}) in (%{{.*}} = %c256{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}) dynamic_shared_memory_size %[[USMEM]] {
// CHECK-NOT:     nvvm.stmatrix
// CHECK:         return
// COUNT-LABEL: func.func @wide_request_unstaged(
func.func @wide_request_unstaged(%k: tensor<?x?x2x256xbf16>, %u: tensor<?x?x2x128xf32>, %w: tensor<?x?x2x256xbf16>, %G: tensor<?x?x2xf32>, %s0: tensor<?x2x256x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x256x128xbf16>, tensor<?x2x256x128xf32>) {
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) w(%w) gates(%G) state(%s0) {chunk_size = 64 : i64, linattn.state_columns = 64 : i64}
      : (tensor<?x?x2x256xbf16>, tensor<?x?x2x128xf32>, tensor<?x?x2x256xbf16>, tensor<?x?x2xf32>, tensor<?x2x256x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x256x128xbf16>, tensor<?x2x256x128xf32>)
  return %d, %states, %final : tensor<?x?x2x128xbf16>, tensor<?x?x2x256x128xbf16>, tensor<?x2x256x128xf32>
}

// -----

// A wide request that does not fit even with its outputs from registers
// (K = 160, per-key gates staged [64][160] in f32: two stages of 21504 +
// 21504 + 17408 + 40960 and the exchange, 235520 bytes) keeps 32 columns,
// which fit with staged outputs: V / 32 = 4 blocks of 128 compute and 64
// producer threads.
// CHECK-LABEL: func.func @wide_request_too_large(
// COUNT-LABEL: func.func @wide_request_too_large(
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %c4{{[_0-9]*}}, %{{.*}} = %c2{{[_0-9]*}}, %{{.*}} = %{{.*}}) threads(%{{.*}}) in (%{{.*}} = %c192{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}})
func.func @wide_request_too_large(%k: tensor<?x?x2x160xbf16>, %u: tensor<?x?x2x128xf32>, %w: tensor<?x?x2x160xbf16>, %G: tensor<?x?x2x160xf32>, %s0: tensor<?x2x160x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x160x128xf32>, tensor<?x2x160x128xf32>) {
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) w(%w) gates(%G) state(%s0) {chunk_size = 64 : i64, linattn.state_columns = 64 : i64}
      : (tensor<?x?x2x160xbf16>, tensor<?x?x2x128xf32>, tensor<?x?x2x160xbf16>, tensor<?x?x2x160xf32>, tensor<?x2x160x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x160x128xf32>, tensor<?x2x160x128xf32>)
  return %d, %states, %final : tensor<?x?x2x128xbf16>, tensor<?x?x2x160x128xf32>, tensor<?x2x160x128xf32>
}
