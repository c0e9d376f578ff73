// RUN: linattn-opt %s --convert-linattn-chunked-to-gpu=explain=true -split-input-file -verify-diagnostics -o /dev/null

// convert-linattn-chunked-to-gpu{explain}: the output kernel's blocks as
// planned: how many a chunk and of how many value columns (and why the
// wider tile is taken or not), their units and warps, the Q K^T each block
// recomputes, which tiles are split, its shared memory and the blocks an
// SM that allows.

// K = V = 128, row gates: one block a chunk, its two 64-column units
// sharing Q and K (two such blocks an SM, as many as the registers allow
// single ones).
func.func @row_gates(%q: tensor<?x?x2x128xbf16>, %k: tensor<?x?x2x128xbf16>, %d: tensor<?x?x2x128xbf16>, %states: tensor<?x?x2x128x128xbf16>, %G: tensor<?x?x2xf32>) -> tensor<?x?x2x128xbf16> {
  // expected-remark @+1 {{linattn GPU kernel for linattn.chunk_output: 1 block a chunk of 128 value columns, 2 units of 4 warps (256 threads) sharing the chunk's Q and K tiles; each block recomputes Q K^T; 108800 bytes of shared memory (2 blocks an SM by it)}}
  %o = linattn.chunk_output q(%q) k(%k) new_values(%d) states(%states) gates(%G) {chunk_size = 64 : i64, scale = 0.0883883461 : f32}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128x128xbf16>, tensor<?x?x2xf32>) -> tensor<?x?x2x128xbf16>
  return %o : tensor<?x?x2x128xbf16>
}

// -----

// The same with f32 new values (split, the delta rule's): paired units
// would hold one block an SM where single ones hold two, so two 64-column
// blocks a chunk.
func.func @row_gates_split_values(%q: tensor<?x?x2x128xbf16>, %k: tensor<?x?x2x128xbf16>, %d: tensor<?x?x2x128xf32>, %states: tensor<?x?x2x128x128xbf16>, %G: tensor<?x?x2xf32>) -> tensor<?x?x2x128xbf16> {
  // expected-remark @+1 {{linattn GPU kernel for linattn.chunk_output: 2 blocks a chunk of 64 value columns, 1 unit of 4 warps (128 threads); each block recomputes Q K^T; D split (hi + lo); 71936 bytes of shared memory (3 blocks an SM by it)}}
  %o = linattn.chunk_output q(%q) k(%k) new_values(%d) states(%states) gates(%G) {chunk_size = 64 : i64, scale = 0.0883883461 : f32}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xf32>, tensor<?x?x2x128x128xbf16>, tensor<?x?x2xf32>) -> tensor<?x?x2x128xbf16>
  return %o : tensor<?x?x2x128xbf16>
}

// -----

// V = 96: one block of 96 columns rather than three of 32.
func.func @head_dim_96(%q: tensor<?x?x2x96xbf16>, %k: tensor<?x?x2x96xbf16>, %d: tensor<?x?x2x96xbf16>, %states: tensor<?x?x2x96x96xbf16>, %G: tensor<?x?x2xf32>) -> tensor<?x?x2x96xbf16> {
  // expected-remark @+1 {{linattn GPU kernel for linattn.chunk_output: 1 block a chunk of 96 value columns (the wider tile: fewer blocks recomputing Q K^T), 1 unit of 4 warps (128 threads); each block recomputes Q K^T; 60160 bytes of shared memory (3 blocks an SM by it)}}
  %o = linattn.chunk_output q(%q) k(%k) new_values(%d) states(%states) gates(%G) {chunk_size = 64 : i64, scale = 1.250000e-01 : f32}
      : (tensor<?x?x2x96xbf16>, tensor<?x?x2x96xbf16>, tensor<?x?x2x96xbf16>, tensor<?x?x2x96x96xbf16>, tensor<?x?x2xf32>) -> tensor<?x?x2x96xbf16>
  return %o : tensor<?x?x2x96xbf16>
}

// -----

// V = 224: the wider 112-column tiles (one block an SM), then both as one
// block's units: still one an SM, half the blocks.
func.func @head_dim_224(%q: tensor<?x?x2x224xbf16>, %k: tensor<?x?x2x224xbf16>, %d: tensor<?x?x2x224xbf16>, %states: tensor<?x?x2x224x224xbf16>, %G: tensor<?x?x2xf32>) -> tensor<?x?x2x224xbf16> {
  // expected-remark @+1 {{linattn GPU kernel for linattn.chunk_output: 1 block a chunk of 224 value columns (the wider tile: fewer blocks recomputing Q K^T), 2 units of 4 warps (256 threads) sharing the chunk's Q and K tiles; each block recomputes Q K^T; 228608 bytes of shared memory (1 block an SM by it)}}
  %o = linattn.chunk_output q(%q) k(%k) new_values(%d) states(%states) gates(%G) {chunk_size = 64 : i64, scale = 1.250000e-01 : f32}
      : (tensor<?x?x2x224xbf16>, tensor<?x?x2x224xbf16>, tensor<?x?x2x224xbf16>, tensor<?x?x2x224x224xbf16>, tensor<?x?x2xf32>) -> tensor<?x?x2x224xbf16>
  return %o : tensor<?x?x2x224xbf16>
}

// -----

// V = 192 with f32 new values (split): the wider 96-column tiles would
// hold one block an SM; three of 64 at two an SM win.
func.func @head_dim_192_split_values(%q: tensor<?x?x2x192xbf16>, %k: tensor<?x?x2x192xbf16>, %d: tensor<?x?x2x192xf32>, %states: tensor<?x?x2x192x192xbf16>, %G: tensor<?x?x2xf32>) -> tensor<?x?x2x192xbf16> {
  // expected-remark @+1 {{linattn GPU kernel for linattn.chunk_output: 3 blocks a chunk of 64 value columns (not the wider 96-column tile: fewer blocks an SM would hold it than it saves), 1 unit of 4 warps (128 threads); each block recomputes Q K^T; D split (hi + lo); 97536 bytes of shared memory (2 blocks an SM by it)}}
  %o = linattn.chunk_output q(%q) k(%k) new_values(%d) states(%states) gates(%G) {chunk_size = 64 : i64, scale = 1.250000e-01 : f32}
      : (tensor<?x?x2x192xbf16>, tensor<?x?x2x192xbf16>, tensor<?x?x2x192xf32>, tensor<?x?x2x192x192xbf16>, tensor<?x?x2xf32>) -> tensor<?x?x2x192xbf16>
  return %o : tensor<?x?x2x192xbf16>
}

// -----

// Per-key gates at V = 128: one block of two 64-column units sharing the
// chunk's scores.
func.func @per_key_gates_paired(%q: tensor<?x?x2x64xbf16>, %k: tensor<?x?x2x64xbf16>, %d: tensor<?x?x2x128xbf16>, %states: tensor<?x?x2x64x128xbf16>, %G: tensor<?x?x2x64xf32>) -> tensor<?x?x2x128xbf16> {
  // expected-remark @+1 {{linattn GPU kernel for linattn.chunk_output: 1 block a chunk of 128 value columns, 2 units of 4 warps (256 threads) sharing the chunk's per-key scores; each block recomputes Q K^T by per-key score blocks; 100352 bytes of shared memory (2 blocks an SM by it)}}
  %o = linattn.chunk_output q(%q) k(%k) new_values(%d) states(%states) gates(%G) {chunk_size = 64 : i64, scale = 1.250000e-01 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x64x128xbf16>, tensor<?x?x2x64xf32>) -> tensor<?x?x2x128xbf16>
  return %o : tensor<?x?x2x128xbf16>
}

// -----

// An f32 spec: q, k, S and D split.
func.func @f32_inputs(%q: tensor<?x?x2x64xf32>, %k: tensor<?x?x2x64xf32>, %d: tensor<?x?x2x64xf32>, %states: tensor<?x?x2x64x64xf32>, %G: tensor<?x?x2xf32>) -> tensor<?x?x2x64xf32> {
  // expected-remark @+1 {{linattn GPU kernel for linattn.chunk_output: 1 block a chunk of 64 value columns, 1 unit of 4 warps (128 threads); each block recomputes Q K^T; q and k, S, D split (hi + lo); 73984 bytes of shared memory (3 blocks an SM by it)}}
  %o = linattn.chunk_output q(%q) k(%k) new_values(%d) states(%states) gates(%G) {chunk_size = 64 : i64, scale = 1.250000e-01 : f32}
      : (tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64x64xf32>, tensor<?x?x2xf32>) -> tensor<?x?x2x64xf32>
  return %o : tensor<?x?x2x64xf32>
}

// -----

// q_l2norm (linattn-fuse-row-norms): each row's scale formed from the Q
// tile (no s vector in shared memory), here from f32 queries' hi + lo.
func.func @formed_l2norm_f32(%q: tensor<?x?x2x64xf32>, %k: tensor<?x?x2x64xf32>, %d: tensor<?x?x2x64xf32>, %states: tensor<?x?x2x64x64xf32>, %G: tensor<?x?x2xf32>) -> tensor<?x?x2x64xf32> {
  // expected-remark @+1 {{linattn GPU kernel for linattn.chunk_output: 1 block a chunk of 64 value columns, 1 unit of 4 warps (128 threads); each block recomputes Q K^T; q and k, S, D split (hi + lo); each row times q's reciprocal norm, formed from the Q tile (q_l2norm); 73984 bytes of shared memory (3 blocks an SM by it)}}
  %o = linattn.chunk_output q(%q) k(%k) new_values(%d) states(%states) gates(%G) {chunk_size = 64 : i64, q_l2norm, scale = 1.250000e-01 : f32}
      : (tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64x64xf32>, tensor<?x?x2xf32>) -> tensor<?x?x2x64xf32>
  return %o : tensor<?x?x2x64xf32>
}
