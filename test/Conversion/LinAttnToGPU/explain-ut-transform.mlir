// RUN: linattn-opt %s --convert-linattn-chunked-to-gpu=explain=true -split-input-file -verify-diagnostics -o /dev/null

// convert-linattn-chunked-to-gpu{explain}: the UT transform's kernel as
// planned: its blocks and warps, whether it sums the chunk's gates itself,
// the per-key scores, the products' pieces, which f32 inputs it splits,
// how it stores W, and its shared memory.

// Raw scalar gates (linattn-fuse-chunk-cumsum): the kernel forms the gate
// sums; W and U in one piece each at K = V = 128.
func.func @raw_gates(%k: tensor<?x?x2x128xbf16>, %v: tensor<?x?x2x128xbf16>, %beta: tensor<?x?x2xf32>, %g: tensor<?x?x2xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xf32>, tensor<?x?x2xf32>) {
  // expected-remark @+1 {{linattn GPU kernel for linattn.ut_transform: a block per (chunk, value head, sequence), 4 warps (128 threads); the chunk's gate sums formed in the kernel (no cumsum kernel); T = (I + L)^-1 by 16-row blocks in fp32; W in 1 piece, U in 1 piece; W stored as bf16; 56832 bytes of shared memory}}
  %w, %u, %G = linattn.ut_transform k(%k) v(%v) beta(%beta) raw_gates(%g) {chunk_size = 64 : i64, rank1_scale = 1.000000e+00 : f32}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2xf32>, tensor<?x?x2xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xf32>, tensor<?x?x2xf32>)
  return %w, %u, %G : tensor<?x?x2x128xbf16>, tensor<?x?x2x128xf32>, tensor<?x?x2xf32>
}

// -----

// The negative-eigenvalue rule's W (rank1_scale 2) is stored split.
func.func @split_w(%k: tensor<?x?x2x128xbf16>, %v: tensor<?x?x2x128xbf16>, %beta: tensor<?x?x2xf32>) -> (tensor<?x?x2x2x128xbf16>, tensor<?x?x2x128xf32>) {
  // expected-remark @+1 {{linattn GPU kernel for linattn.ut_transform: a block per (chunk, value head, sequence), 4 warps (128 threads); T = (I + L)^-1 by 16-row blocks in fp32; W in 1 piece, U in 1 piece; W stored as bf16 hi + lo; 56832 bytes of shared memory}}
  %w, %u = linattn.ut_transform k(%k) v(%v) beta(%beta) {chunk_size = 64 : i64, rank1_scale = 2.000000e+00 : f32}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2xf32>) -> (tensor<?x?x2x2x128xbf16>, tensor<?x?x2x128xf32>)
  return %w, %u : tensor<?x?x2x2x128xbf16>, tensor<?x?x2x128xf32>
}

// -----

// Per-key gates: the scores from keys decayed by 16-row blocks, and the
// shared memory for the chunk's gates and decayed keys.
func.func @per_key_gates(%k: tensor<?x?x2x128xbf16>, %v: tensor<?x?x2x128xbf16>, %beta: tensor<?x?x2xf32>, %G: tensor<?x?x2x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xf32>) {
  // expected-remark @+1 {{linattn GPU kernel for linattn.ut_transform: a block per (chunk, value head, sequence), 4 warps (128 threads); per-key scores from keys decayed by 16-row blocks; T = (I + L)^-1 by 16-row blocks in fp32; W in 1 piece, U in 1 piece; W stored as bf16; 108032 bytes of shared memory}}
  %w, %u = linattn.ut_transform k(%k) v(%v) beta(%beta) gates(%G) {chunk_size = 64 : i64, rank1_scale = 1.000000e+00 : f32}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2xf32>, tensor<?x?x2x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xf32>)
  return %w, %u : tensor<?x?x2x128xbf16>, tensor<?x?x2x128xf32>
}

// -----

// An f32 spec's keys and values are held split.
func.func @f32_inputs(%k: tensor<?x?x2x64xf32>, %v: tensor<?x?x2x64xf32>, %beta: tensor<?x?x2xf32>) -> (tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>) {
  // expected-remark @+1 {{linattn GPU kernel for linattn.ut_transform: a block per (chunk, value head, sequence), 4 warps (128 threads); T = (I + L)^-1 by 16-row blocks in fp32; W in 1 piece, U in 1 piece; f32 keys and values split (hi + lo); W stored as f32; 57856 bytes of shared memory}}
  %w, %u = linattn.ut_transform k(%k) v(%v) beta(%beta) {chunk_size = 64 : i64, rank1_scale = 1.000000e+00 : f32}
      : (tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2xf32>) -> (tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>)
  return %w, %u : tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>
}

// -----

// k_l2norm (linattn-fuse-row-norms): the kernel forms k's row norms from
// the staged keys, here f32 keys held split (their norms from hi + lo).
func.func @formed_l2norm_f32(%k: tensor<?x?x2x64xf32>, %v: tensor<?x?x2x64xf32>, %beta: tensor<?x?x2xf32>, %G: tensor<?x?x2xf32>) -> (tensor<?x?x2x2x64xbf16>, tensor<?x?x2x64xf32>) {
  // expected-remark @+1 {{linattn GPU kernel for linattn.ut_transform: a block per (chunk, value head, sequence), 4 warps (128 threads); k's row norms formed from the staged keys (k_l2norm); T = (I + L)^-1 by 16-row blocks in fp32; W in 1 piece, U in 1 piece; f32 keys and values split (hi + lo); W stored as bf16 hi + lo; 58112 bytes of shared memory}}
  %w, %u = linattn.ut_transform k(%k) v(%v) beta(%beta) gates(%G) {chunk_size = 64 : i64, k_l2norm, rank1_scale = 1.000000e+00 : f32}
      : (tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2xf32>, tensor<?x?x2xf32>) -> (tensor<?x?x2x2x64xbf16>, tensor<?x?x2x64xf32>)
  return %w, %u : tensor<?x?x2x2x64xbf16>, tensor<?x?x2x64xf32>
}
