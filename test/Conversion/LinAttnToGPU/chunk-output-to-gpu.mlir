// RUN: linattn-opt %s --convert-linattn-chunked-to-gpu -split-input-file | FileCheck %s

// linattn.chunk_output: one gpu.launch per op, a block per (chunk x 64
// value columns, value head, sequence).
//
// Row gates (gated delta's), K = V = 128, bf16 chunk states and new values:
// one block a chunk, two units of 4 warps (64 value columns each) sharing
// the chunk's Q and K. Q and K 2 C (K + 8) 2 = 34816, each unit's S (no
// split) K (64 + 8) 2 = 18432 and D (no split) C (64 + 8) 2 = 9216, 64
// gates, then each unit's output tile C (64 + 8) 2: 108800 bytes.

// Blocks (NC, HV, B), 256 threads. Per warp Q K^T (8 x 8), Q S (8 k-steps
//    x 8 n-tiles, the bf16 chunk states as they are) and P D (4 x 8 x 2: P
//    split, the bf16 new values as they are): 64 + 64 + 64 = 192 products;
//    o is stored in bf16.
// CHECK-LABEL: func.func @row_gates(
// CHECK-SAME:      %[[Q:[^:]+]]: tensor<?x?x2x128xbf16>, %[[K:[^:]+]]: tensor<?x?x2x128xbf16>, %[[DT:[^:]+]]: tensor<?x?x2x128xbf16>, %[[STATEST:[^:]+]]: tensor<?x?x2x128x128xbf16>, %[[GT:[^:]+]]: tensor<?x?x2xf32>)
// CHECK:         bufferization.to_buffer %[[Q]] read_only
// CHECK:         bufferization.to_buffer %[[K]] read_only
// CHECK:         bufferization.to_buffer %[[DT]] read_only
// CHECK:         bufferization.to_buffer %[[STATEST]] read_only
// CHECK:         bufferization.to_buffer %[[GT]] read_only
// CHECK:         %[[O:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?x2x128xbf16>
// CHECK:         %[[NC3:.*]] = arith.ceildivui %{{.*}}, %c64{{[_0-9]*}} : index
// CHECK:         %[[BLOCKS:.*]] = arith.muli %[[NC3]], %c1{{[_0-9]*}} : index
// CHECK:         %[[OUTSMEM:.*]] = arith.constant 108800 : i32
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %[[BLOCKS]], %{{.*}} = %c2{{[_0-9]*}}, %{{.*}} = %{{.*}}) threads(%{{.*}}) in (%{{.*}} = %c256{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}) dynamic_shared_memory_size %[[OUTSMEM]] {
// CHECK-NEXT:      %[[SM3:.*]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// Q, K, then each unit's S and D by cp.async (16 bytes each, spread over
// the 256 threads), row gates, all waited for before the one barrier; P =
// Q K^T stays in registers and is the A operand of P D.
// CHECK:           memref.view %[[SM3]][%c0{{[_0-9]*}}][] : {{.*}} to memref<64x136xbf16, #gpu.address_space<workgroup>>
// CHECK:           memref.view %[[SM3]][%c17408{{[_0-9]*}}][] : {{.*}} to memref<64x136xbf16, #gpu.address_space<workgroup>>
// CHECK:           memref.view %[[SM3]][%{{.*}}][] : {{.*}} to memref<128x72xbf16, #gpu.address_space<workgroup>>
// CHECK:           memref.view %[[SM3]][%{{.*}}][] : {{.*}} to memref<64x72xbf16, #gpu.address_space<workgroup>>
// CHECK:           memref.view %[[SM3]][%c90112{{[_0-9]*}}][] : {{.*}} to memref<64xf32, #gpu.address_space<workgroup>>
// CHECK:           arith.muli %{{.*}}, %c256{{[_0-9]*}} : index
// CHECK-COUNT-2:   nvgpu.device_async_copy %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}], 8, %{{.*}} {bypassL1} : memref<?x?x2x128xbf16> to memref<64x136xbf16, #gpu.address_space<workgroup>>
// CHECK:           nvgpu.device_async_copy %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}], 8, %{{.*}} {bypassL1} : memref<?x?x2x128x128xbf16> to memref<128x72xbf16, #gpu.address_space<workgroup>>
// CHECK:           nvgpu.device_async_copy %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}], 8, %{{.*}} {bypassL1} : memref<?x?x2x128xbf16> to memref<64x72xbf16, #gpu.address_space<workgroup>>
// CHECK:           nvgpu.device_async_copy %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}], 8, %{{.*}} {bypassL1} : memref<?x?x2x128x128xbf16> to memref<128x72xbf16, #gpu.address_space<workgroup>>
// CHECK:           nvgpu.device_async_copy %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}], 8, %{{.*}} {bypassL1} : memref<?x?x2x128xbf16> to memref<64x72xbf16, #gpu.address_space<workgroup>>
// CHECK:           nvgpu.device_async_wait %{{.*}} {numGroups = 0 : i32}
// CHECK-NEXT:      gpu.barrier
// CHECK-NOT:       gpu.barrier
// CHECK-COUNT-192: nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>}
// CHECK-NOT:       nvvm.mma.sync
// O goes through the unit's own output tile (the other unit still reads
// Q): stmatrix (4 per warp) into the warp's rows, then 16-byte pieces of
// the rows below T.
// CHECK:           %[[OUTTILE:.*]] = memref.view %[[SM3]][%{{.*}}][] : {{.*}} to memref<64x72xbf16, #gpu.address_space<workgroup>>
// CHECK:           nvvm.bar.warp.sync
// CHECK-COUNT-4:   nvvm.stmatrix %{{.*}} {eltType = #nvvm.ld_st_matrix_elt_type<b16>, layout = #nvvm.mma_layout<row>, shape = #nvvm.ld_st_matrix_shape<m = 8, n = 8>}
// CHECK-NEXT:      nvvm.bar.warp.sync
// CHECK:           scf.if
// CHECK-NEXT:        vector.load %[[OUTTILE]]
// CHECK-NEXT:        arith.addi
// CHECK-NEXT:        arith.addi
// CHECK-NEXT:        vector.store %{{.*}}, %[[O]][{{.*}}] {alignment = 16 : i64} : memref<?x?x2x128xbf16>, vector<8xbf16>
// CHECK:           gpu.terminator
// CHECK:         %[[OT:.*]] = bufferization.to_tensor %[[O]] restrict writable : memref<?x?x2x128xbf16> to tensor<?x?x2x128xbf16>
// CHECK-NOT:     gpu.launch
// CHECK:         return %[[OT]]
func.func @row_gates(%q: tensor<?x?x2x128xbf16>, %k: tensor<?x?x2x128xbf16>, %d: tensor<?x?x2x128xbf16>, %states: tensor<?x?x2x128x128xbf16>, %G: tensor<?x?x2xf32>) -> tensor<?x?x2x128xbf16> {
  %o = linattn.chunk_output q(%q) k(%k) new_values(%d) states(%states) gates(%G) {chunk_size = 64 : i64, scale = 0.0883883461 : f32}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128x128xbf16>, tensor<?x?x2xf32>) -> tensor<?x?x2x128xbf16>
  return %o : tensor<?x?x2x128xbf16>
}

// -----

// K = V = 64 (RetNet's shapes): 2 * 9216 + 64 (64 + 8) 2 + 64 (64 + 8) 2 +
// 256 = 37120 bytes, one block of 64 columns per chunk: 128 products.

// CHECK-LABEL: func.func @head_dim_64(
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
func.func @head_dim_64(%q: tensor<?x?x2x64xbf16>, %k: tensor<?x?x2x64xbf16>, %d: tensor<?x?x2x64xbf16>, %states: tensor<?x?x2x64x64xbf16>, %G: tensor<?x?x2xf32>) -> tensor<?x?x2x64xbf16> {
  %o = linattn.chunk_output q(%q) k(%k) new_values(%d) states(%states) gates(%G) {chunk_size = 64 : i64, scale = 1.250000e-01 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64x64xbf16>, tensor<?x?x2xf32>) -> tensor<?x?x2x64xbf16>
  return %o : tensor<?x?x2x64xbf16>
}

// -----

// V = 192: 64 columns would take three blocks a chunk, each recomputing Q
// K^T; 96 columns take two. Q and K 2 x 64 (192 + 8) 2 = 51200, S 192 (96
// + 8) 2 = 39936, D 64 (96 + 8) 2 = 13312, 64 gates: 104704 bytes; blocks
// (NC * 2, HV, B).
// CHECK-LABEL: func.func @head_dim_192(
// CHECK:         %[[NC192:.*]] = arith.ceildivui %{{.*}}, %c64{{[_0-9]*}} : index
// CHECK:         %[[B192:.*]] = arith.muli %[[NC192]], %c2{{[_0-9]*}} : index
// CHECK:         %[[S192:.*]] = arith.constant 104704 : i32
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %[[B192]], {{.*}} threads(%{{.*}}) in (%{{.*}} = %c128{{[_0-9]*}}, {{.*}}) dynamic_shared_memory_size %[[S192]] {
func.func @head_dim_192(%q: tensor<?x?x2x192xbf16>, %k: tensor<?x?x2x192xbf16>, %d: tensor<?x?x2x192xbf16>, %states: tensor<?x?x2x192x192xbf16>, %G: tensor<?x?x2xf32>) -> tensor<?x?x2x192xbf16> {
  %o = linattn.chunk_output q(%q) k(%k) new_values(%d) states(%states) gates(%G) {chunk_size = 64 : i64, scale = 1.250000e-01 : f32}
      : (tensor<?x?x2x192xbf16>, tensor<?x?x2x192xbf16>, tensor<?x?x2x192xbf16>, tensor<?x?x2x192x192xbf16>, tensor<?x?x2xf32>) -> tensor<?x?x2x192xbf16>
  return %o : tensor<?x?x2x192xbf16>
}

// -----

// V = 192 with f32 new values (split, as negeig's): 96 columns would take
// 51200 + 39936 + 2 x 13312 + 256 = 118016 bytes, one block an SM, two a
// chunk (2 per resident block), against 64 columns' 97536, two an SM,
// three a chunk (1.5): 64 columns, blocks (NC * 3, HV, B).
// CHECK-LABEL: func.func @head_dim_192_split_values(
// CHECK:         %[[NC3S:.*]] = arith.ceildivui %{{.*}}, %c64{{[_0-9]*}} : index
// CHECK:         %[[B3S:.*]] = arith.muli %[[NC3S]], %c3{{[_0-9]*}} : index
// CHECK:         %[[S3S:.*]] = arith.constant 97536 : i32
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %[[B3S]], {{.*}} dynamic_shared_memory_size %[[S3S]] {
func.func @head_dim_192_split_values(%q: tensor<?x?x2x192xbf16>, %k: tensor<?x?x2x192xbf16>, %d: tensor<?x?x2x192xf32>, %states: tensor<?x?x2x192x192xbf16>, %G: tensor<?x?x2xf32>) -> tensor<?x?x2x192xbf16> {
  %o = linattn.chunk_output q(%q) k(%k) new_values(%d) states(%states) gates(%G) {chunk_size = 64 : i64, scale = 1.250000e-01 : f32}
      : (tensor<?x?x2x192xbf16>, tensor<?x?x2x192xbf16>, tensor<?x?x2x192xf32>, tensor<?x?x2x192x192xbf16>, tensor<?x?x2xf32>) -> tensor<?x?x2x192xbf16>
  return %o : tensor<?x?x2x192xbf16>
}

// -----

// V = 224: 112 columns (two tiles a chunk, 128768 bytes: one block an SM)
// against 32 (seven, 82688: two an SM; 3.5 per resident block); its two
// tiles then as one block's units (228608 bytes: still one an SM, half the
// blocks).
// CHECK-LABEL: func.func @head_dim_224(
// CHECK:         %[[NC224:.*]] = arith.ceildivui %{{.*}}, %c64{{[_0-9]*}} : index
// CHECK:         %[[B224:.*]] = arith.muli %[[NC224]], %c1{{[_0-9]*}} : index
// CHECK:         %[[S224:.*]] = arith.constant 228608 : i32
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %[[B224]], {{.*}} dynamic_shared_memory_size %[[S224]] {
func.func @head_dim_224(%q: tensor<?x?x2x224xbf16>, %k: tensor<?x?x2x224xbf16>, %d: tensor<?x?x2x224xbf16>, %states: tensor<?x?x2x224x224xbf16>, %G: tensor<?x?x2xf32>) -> tensor<?x?x2x224xbf16> {
  %o = linattn.chunk_output q(%q) k(%k) new_values(%d) states(%states) gates(%G) {chunk_size = 64 : i64, scale = 1.250000e-01 : f32}
      : (tensor<?x?x2x224xbf16>, tensor<?x?x2x224xbf16>, tensor<?x?x2x224xbf16>, tensor<?x?x2x224x224xbf16>, tensor<?x?x2xf32>) -> tensor<?x?x2x224xbf16>
  return %o : tensor<?x?x2x224xbf16>
}

// -----

// V = 96: one block of 96 columns a chunk (it took three of 32). Q and K
// 2 x 64 (96 + 8) 2 = 26624, S 96 (96 + 8) 2 = 19968, D 64 (96 + 8) 2 =
// 13312, 64 gates: 60160 bytes; Q K^T 8 x 6, Q S 6 x 12, P D 4 x 12 x 2:
// 48 + 72 + 96 = 216 products.
// CHECK-LABEL: func.func @head_dim_96(
// CHECK:         %[[S96:.*]] = arith.constant 60160 : i32
// CHECK:         gpu.launch {{.*}} threads(%{{.*}}) in (%{{.*}} = %c128{{[_0-9]*}}, {{.*}}) dynamic_shared_memory_size %[[S96]] {
// CHECK-COUNT-216: nvvm.mma.sync
// CHECK-NOT:       nvvm.mma.sync
// CHECK:           gpu.terminator
func.func @head_dim_96(%q: tensor<?x?x2x96xbf16>, %k: tensor<?x?x2x96xbf16>, %d: tensor<?x?x2x96xbf16>, %states: tensor<?x?x2x96x96xbf16>, %G: tensor<?x?x2xf32>) -> tensor<?x?x2x96xbf16> {
  %o = linattn.chunk_output q(%q) k(%k) new_values(%d) states(%states) gates(%G) {chunk_size = 64 : i64, scale = 1.250000e-01 : f32}
      : (tensor<?x?x2x96xbf16>, tensor<?x?x2x96xbf16>, tensor<?x?x2x96xbf16>, tensor<?x?x2x96x96xbf16>, tensor<?x?x2xf32>) -> tensor<?x?x2x96xbf16>
  return %o : tensor<?x?x2x96xbf16>
}

// -----

// An f32 spec (K = V = 64): q, k, the states and the new values are all
// held split, hi + lo bf16 tiles: Q, K and their lo parts 4 x 9216, S 2 x
// 9216, D 2 x 9216, 256 bytes of gates = 73984 bytes; every product takes
// three MMAs (Q K^T, Q S and P D each 3 x 32 a warp: 288 against the bf16
// kernel's 128), and o leaves by direct f32 stores.

// CHECK-LABEL: func.func @f32_inputs(
// CHECK:         gpu.launch {{.*}} dynamic_shared_memory_size %c73984_i32
// CHECK-NOT:       nvgpu.device_async_copy
// CHECK-COUNT-288: nvvm.mma.sync {{.*}}multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>}
// CHECK-NOT:       nvvm.mma.sync
// CHECK-NOT:       nvvm.stmatrix
// CHECK:           gpu.terminator
// CHECK:         return
func.func @f32_inputs(%q: tensor<?x?x2x64xf32>, %k: tensor<?x?x2x64xf32>, %d: tensor<?x?x2x64xf32>, %states: tensor<?x?x2x64x64xf32>, %G: tensor<?x?x2xf32>) -> tensor<?x?x2x64xf32> {
  %o = linattn.chunk_output q(%q) k(%k) new_values(%d) states(%states) gates(%G) {chunk_size = 64 : i64, scale = 1.250000e-01 : f32}
      : (tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64x64xf32>, tensor<?x?x2xf32>) -> tensor<?x?x2x64xf32>
  return %o : tensor<?x?x2x64xf32>
}

// -----

// Per-key gates (GLA), K = V = 64: Q, K, K' 3 x 9216, S 9216, v 9216,
// gates 64 (64 + 4) 4 = 17408: 63488 bytes. A warp votes whether its
// diagonal block factors, runs 32 products for (Q exp(G)) S, then a loop
// over the column blocks up to its own, each iteration one block's scores
// (4 k-steps x 2 n-tiles, where it factors) and its P v (8 n-tiles x 2, P
// split): for the last warp 32 + 4 x (8 + 16) = 128.

// CHECK-LABEL: func.func @per_key_gates(
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
func.func @per_key_gates(%q: tensor<?x?x2x64xbf16>, %k: tensor<?x?x2x64xbf16>, %d: tensor<?x?x2x64xbf16>, %states: tensor<?x?x2x64x64xbf16>, %G: tensor<?x?x2x64xf32>) -> tensor<?x?x2x64xbf16> {
  %o = linattn.chunk_output q(%q) k(%k) new_values(%d) states(%states) gates(%G) {chunk_size = 64 : i64, scale = 1.250000e-01 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64x64xbf16>, tensor<?x?x2x64xf32>) -> tensor<?x?x2x64xbf16>
  return %o : tensor<?x?x2x64xbf16>
}

// -----

// Per-key gates with f32 inputs (GLA's f32 spec), K = V = 64: Q, K and K'
// are held split like S and D, their lo tiles after the three hi ones
// (6 x 9216), S 2 x 9216, D 2 x 9216, gates 17408: 109568 bytes. Every
// product takes three MMAs: (Q exp(G)) S 3 x 32 = 96 (its A operand split
// in registers), a column block's scores 3 x 8, its P D 3 x 8.

// CHECK-LABEL: func.func @per_key_gates_f32(
// CHECK:         %[[FSMEM:.*]] = arith.constant 109568 : i32
// CHECK:         gpu.launch {{.*}} dynamic_shared_memory_size %[[FSMEM]] {
// CHECK-COUNT-96:    nvvm.mma.sync
// CHECK:             nvvm.vote.sync all
// CHECK-NOT:         nvvm.mma.sync
// CHECK:             scf.for %{{.*}} = %c0{{[_0-9]*}} to %{{.*}} step %c1{{[_0-9]*}} iter_args({{.*}}) -> ({{(f32, ){31}f32}}) {
// CHECK:               scf.if %{{.*}} -> ({{(f32, ){7}f32}}) {
// CHECK-COUNT-24:        nvvm.mma.sync
// CHECK:               } else {
// CHECK-NOT:             nvvm.mma.sync
// CHECK:               }
// CHECK-COUNT-24:      nvvm.mma.sync
// CHECK-NOT:         nvvm.mma.sync
// CHECK-NOT:         nvvm.stmatrix
// CHECK:           gpu.terminator
// CHECK:         return
func.func @per_key_gates_f32(%q: tensor<?x?x2x64xf32>, %k: tensor<?x?x2x64xf32>, %d: tensor<?x?x2x64xf32>, %states: tensor<?x?x2x64x64xf32>, %G: tensor<?x?x2x64xf32>) -> tensor<?x?x2x64xf32> {
  %o = linattn.chunk_output q(%q) k(%k) new_values(%d) states(%states) gates(%G) {chunk_size = 64 : i64, scale = 1.250000e-01 : f32}
      : (tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64x64xf32>, tensor<?x?x2x64xf32>) -> tensor<?x?x2x64xf32>
  return %o : tensor<?x?x2x64xf32>
}

// -----

// GLA with V = 128 (K = 64): the output kernel's block takes both of the
// chunk's 64-column tiles, two units of four warps (256 threads) that share
// Q, K, K' and the gates (3 x 9216 + 17408 bytes) and each have their own
// S (9216), v (9216) and output tile (9216): 100352 bytes. Unit u = warp /
// 4 takes columns 64 u; its warp w = warp % 4 owns row block w in unit 0
// and 3 - w in unit 1, so that warps w and w + 4 together score five
// column blocks. Each warp runs the 64-column kernel's products.

// CHECK-LABEL: func.func @per_key_gates_paired(
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
func.func @per_key_gates_paired(%q: tensor<?x?x2x64xbf16>, %k: tensor<?x?x2x64xbf16>, %d: tensor<?x?x2x128xbf16>, %states: tensor<?x?x2x64x128xbf16>, %G: tensor<?x?x2x64xf32>) -> tensor<?x?x2x128xbf16> {
  %o = linattn.chunk_output q(%q) k(%k) new_values(%d) states(%states) gates(%G) {chunk_size = 64 : i64, scale = 1.250000e-01 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x64x128xbf16>, tensor<?x?x2x64xf32>) -> tensor<?x?x2x128xbf16>
  return %o : tensor<?x?x2x128xbf16>
}

// -----

// The long chunk (128 tokens; row gates): 8 warps over a chunk,
//   Q, K [128][128 + 8] bf16 (2 x 34816), S [128][64 + 8] (18432),
//   D [128][64 + 8] (18432), 128 row gates (512): 107008 B,
// and the warps of rows 64.. add the first segment's columns under a
// branch that carries o's 32 accumulators.

// CHECK-LABEL: func.func @long_chunk(
// CHECK:         gpu.launch {{.*}} threads(%{{.*}}) in (%{{.*}} = %c256{{[_0-9]*}}, {{.*}} dynamic_shared_memory_size %c107008_i32
// CHECK:           scf.if %{{.*}} -> ({{(f32, ){31}f32}})
// CHECK:           gpu.terminator
func.func @long_chunk(%q: tensor<?x?x2x128xbf16>, %k: tensor<?x?x2x128xbf16>, %d: tensor<?x?x2x128xbf16>, %states: tensor<?x?x2x128x128xbf16>, %G: tensor<?x?x2xf32>) -> tensor<?x?x2x128xbf16> {
  %o = linattn.chunk_output q(%q) k(%k) new_values(%d) states(%states) gates(%G) {chunk_size = 128 : i64, scale = 0.125 : f32}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128x128xbf16>, tensor<?x?x2xf32>) -> tensor<?x?x2x128xbf16>
  return %o : tensor<?x?x2x128xbf16>
}

// -----

// Segment-local states with carries: the output adds Q C_s where the
// chunk's segment is past the first, C_s staged in S's tile after a
// barrier, its decay summed by the lanes and a butterfly of shuffles.

// CHECK-LABEL: func.func @carries(
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
func.func @carries(%q: tensor<?x?x2x128xbf16>, %k: tensor<?x?x2x128xbf16>, %d: tensor<?x?x2x128xbf16>, %states: tensor<?x?x2x128x128xbf16>, %G: tensor<?x?x2xf32>, %c: tensor<?x?x2x128x128xbf16>) -> tensor<?x?x2x128xbf16> {
  %o = linattn.chunk_output q(%q) k(%k) new_values(%d) states(%states) gates(%G) carries(%c) {chunk_size = 64 : i64, scale = 0.125 : f32, segment_chunks = 4 : i64}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128x128xbf16>, tensor<?x?x2xf32>, tensor<?x?x2x128x128xbf16>) -> tensor<?x?x2x128xbf16>
  return %o : tensor<?x?x2x128xbf16>
}

// -----

// qk_l2norm factored (q_rnorm s): the rows' s staged after the units'
// output tiles (108800 + 256 bytes) from the q/k head's [B, T, H] f32,
// and each output row scaled by scale s_i (rows group and group + 8 of the
// warp: one product each) before it leaves; q and k are the bf16 inputs
// as they come.
// CHECK-LABEL: func.func @factored_l2norm(
// CHECK-SAME:      %[[Q:[^:]+]]: tensor<?x?x2x128xbf16>, %[[RQ:[^:]+]]: tensor<?x?x2xf32>
// CHECK:         %[[RB:.*]] = bufferization.to_buffer %[[RQ]]
// CHECK:         %[[SMEM:.*]] = arith.constant 109056 : i32
// CHECK:         gpu.launch {{.*}} dynamic_shared_memory_size %[[SMEM]] {
// CHECK:           %[[SS:.*]] = memref.view %{{.*}}[%c108800{{[_0-9]*}}][] {{.*}} to memref<64xf32, #gpu.address_space<workgroup>>
// CHECK:           memref.load %[[RB]][
// CHECK:           memref.store %{{.*}}, %[[SS]][
// CHECK:           %[[S0:.*]] = memref.load %[[SS]][
// CHECK-NEXT:      %[[SC0:.*]] = arith.constant 8.838800e-02 : f32
// CHECK-NEXT:      %[[F0:.*]] = arith.mulf %[[SC0]], %[[S0]] : f32
// CHECK-COUNT-16:  arith.mulf %{{.*}}, %[[F0]] : f32
// CHECK:           %[[S1:.*]] = memref.load %[[SS]][
// CHECK-NEXT:      %[[SC1:.*]] = arith.constant 8.838800e-02 : f32
// CHECK-NEXT:      %[[F1:.*]] = arith.mulf %[[SC1]], %[[S1]] : f32
// CHECK-COUNT-16:  arith.mulf %{{.*}}, %[[F1]] : f32
// CHECK:           nvvm.stmatrix
func.func @factored_l2norm(%q: tensor<?x?x2x128xbf16>, %rq: tensor<?x?x2xf32>, %k: tensor<?x?x2x128xbf16>, %d: tensor<?x?x2x128xbf16>, %states: tensor<?x?x2x128x128xbf16>, %G: tensor<?x?x2xf32>) -> tensor<?x?x2x128xbf16> {
  %o = linattn.chunk_output q(%q) q_rnorm(%rq) k(%k) new_values(%d) states(%states) gates(%G) {chunk_size = 64 : i64, scale = 0.088388 : f32}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2xf32>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128x128xbf16>, tensor<?x?x2xf32>) -> tensor<?x?x2x128xbf16>
  return %o : tensor<?x?x2x128xbf16>
}

// -----

// q_l2norm (linattn-fuse-row-norms): no s operand and no s vector (the
// shared memory of the plain kernel, 108800 bytes); each warp forms s of
// its rows group and group + 8 from its own rows of the Q tile (16-byte
// vectors, a quad of lanes a row, two xor shuffles) once its products are
// done, and scales each row by scale s_i before it leaves.
// CHECK-LABEL: func.func @formed_l2norm(
// CHECK:         %[[SMEM:.*]] = arith.constant 108800 : i32
// CHECK:         gpu.launch {{.*}} dynamic_shared_memory_size %[[SMEM]] {
// CHECK:           %[[QT:.*]] = memref.view %{{.*}}[%c0{{[_0-9]*}}][] {{.*}} to memref<64x136xbf16, #gpu.address_space<workgroup>>
// CHECK:           nvvm.mma.sync
// CHECK:           vector.load %[[QT]][{{.*}}] {alignment = 16 : i64} : memref<64x136xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// CHECK:           gpu.shuffle  xor %{{.*}}, %c1_i32
// CHECK:           gpu.shuffle  xor %{{.*}}, %c2_i32
// CHECK:           %[[S0:.*]] = arith.divf
// CHECK:           %[[S1:.*]] = arith.divf
// CHECK-NEXT:      %[[SC0:.*]] = arith.constant 8.838800e-02 : f32
// CHECK-NEXT:      %[[F0:.*]] = arith.mulf %[[SC0]], %[[S0]] : f32
// CHECK-COUNT-16:  arith.mulf %{{.*}}, %[[F0]] : f32
// CHECK-NEXT:      %[[SC1:.*]] = arith.constant 8.838800e-02 : f32
// CHECK-NEXT:      %[[F1:.*]] = arith.mulf %[[SC1]], %[[S1]] : f32
// CHECK-COUNT-16:  arith.mulf %{{.*}}, %[[F1]] : f32
// CHECK:           nvvm.stmatrix
func.func @formed_l2norm(%q: tensor<?x?x2x128xbf16>, %k: tensor<?x?x2x128xbf16>, %d: tensor<?x?x2x128xbf16>, %states: tensor<?x?x2x128x128xbf16>, %G: tensor<?x?x2xf32>) -> tensor<?x?x2x128xbf16> {
  %o = linattn.chunk_output q(%q) k(%k) new_values(%d) states(%states) gates(%G) {chunk_size = 64 : i64, q_l2norm, scale = 0.088388 : f32}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128x128xbf16>, tensor<?x?x2xf32>) -> tensor<?x?x2x128xbf16>
  return %o : tensor<?x?x2x128xbf16>
}
