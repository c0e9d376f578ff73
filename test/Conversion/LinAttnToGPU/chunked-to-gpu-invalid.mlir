// RUN: linattn-opt %s --convert-linattn-chunked-to-gpu -split-input-file -verify-diagnostics

// Every limit of convert-linattn-chunked-to-gpu is an error on the op that
// exceeds it (one case per message the pass emits); the pass stops at the
// first such op.

// l2norm kernels normalise [B, T, H, K] operands only.
func.func @l2norm_rank2(%x: tensor<4x64xbf16>) -> tensor<4x64xf32> {
  // expected-error @below {{'linattn.l2norm' op GPU kernel normalises [B, T, H, K] operands}}
  %y = linattn.l2norm %x : tensor<4x64xbf16> -> tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}

// -----

// A warp per row: K at most 1024 (32 keys per lane).
func.func @l2norm_too_many_keys(%x: tensor<?x?x2x2048xbf16>) -> tensor<?x?x2x2048xf32> {
  // expected-error @below {{'linattn.l2norm' op GPU l2norm kernel takes K of at most 1024 (a warp per row), got 2048}}
  %y = linattn.l2norm %x : tensor<?x?x2x2048xbf16> -> tensor<?x?x2x2048xf32>
  return %y : tensor<?x?x2x2048xf32>
}

// -----

// The cumsum kernel takes 64- or 128-token chunks, like the state pass and
// output kernels.
func.func @cumsum_chunk_32(%g: tensor<?x?x2xf32>) -> tensor<?x?x2xf32> {
  // expected-error @below {{'linattn.chunk_cumsum' op GPU chunked kernels take chunk_size = 64 or 128, got 32}}
  %G = linattn.chunk_cumsum %g {chunk_size = 32 : i64} : tensor<?x?x2xf32> -> tensor<?x?x2xf32>
  return %G : tensor<?x?x2xf32>
}

// -----

// Per-key cumsum runs four threads per key: at most 256 keys (1024
// threads a block).
func.func @cumsum_too_many_keys(%g: tensor<?x?x1x512xf32>) -> tensor<?x?x1x512xf32> {
  // expected-error @below {{'linattn.chunk_cumsum' op GPU cumsum runs four threads per key; at most 256 keys}}
  %G = linattn.chunk_cumsum %g {chunk_size = 64 : i64} : tensor<?x?x1x512xf32> -> tensor<?x?x1x512xf32>
  return %G : tensor<?x?x1x512xf32>
}

// -----

// f32 inputs take the kernels split into bf16 hi + lo, beside per-key
// gates only up to K = 128 (their split Q, K and K' tiles).
func.func @ut_f32_per_key_gates_k160(%k: tensor<?x?x2x160xf32>, %v: tensor<?x?x2x64xf32>, %beta: tensor<?x?x2xf32>, %g: tensor<?x?x2x160xf32>) -> (tensor<?x?x2x160xf32>, tensor<?x?x2x64xf32>) {
  // expected-error @below {{'linattn.ut_transform' op GPU chunked kernels take f32 inputs with per-key gates up to K = 128 (their split tiles' shared memory), got K = 160 (use strategy=recurrent)}}
  %w, %u = linattn.ut_transform k(%k) v(%v) beta(%beta) gates(%g) {chunk_size = 64 : i64, rank1_scale = 1.0 : f32}
      : (tensor<?x?x2x160xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2xf32>, tensor<?x?x2x160xf32>) -> (tensor<?x?x2x160xf32>, tensor<?x?x2x64xf32>)
  return %w, %u : tensor<?x?x2x160xf32>, tensor<?x?x2x64xf32>
}

// -----

func.func @state_pass_f32_per_key_gates_k160(%k: tensor<?x?x2x160xf32>, %u: tensor<?x?x2x64xf32>, %g: tensor<?x?x2x160xf32>, %s0: tensor<?x2x160x64xf32>) -> tensor<?x2x160x64xf32> {
  // expected-error @below {{'linattn.chunk_state_pass' op GPU chunked kernels take f32 inputs with per-key gates up to K = 128 (their split tiles' shared memory), got K = 160 (use strategy=recurrent)}}
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) gates(%g) state(%s0) {chunk_size = 64 : i64}
      : (tensor<?x?x2x160xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x160xf32>, tensor<?x2x160x64xf32>) -> (tensor<?x?x2x64xf32>, tensor<?x?x2x160x64xf32>, tensor<?x2x160x64xf32>)
  return %final : tensor<?x2x160x64xf32>
}

// -----

// The operands of one product share one 16-bit type.
func.func @ut_mixed_types(%k: tensor<?x?x2x64xf16>, %v: tensor<?x?x2x64xbf16>, %beta: tensor<?x?x2xf32>) -> (tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>) {
  // expected-error @below {{'linattn.ut_transform' op GPU chunked kernels need q, k and v of one element type, got 'bf16' and 'f16'}}
  %w, %u = linattn.ut_transform k(%k) v(%v) beta(%beta) {chunk_size = 64 : i64, rank1_scale = 1.0 : f32}
      : (tensor<?x?x2x64xf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2xf32>) -> (tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>)
  return %w, %u : tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>
}

// -----

func.func @output_mixed_qk(%q: tensor<?x?x2x64xbf16>, %k: tensor<?x?x2x64xf16>, %d: tensor<?x?x2x64xf32>, %states: tensor<?x?x2x64x64xf32>) -> tensor<?x?x2x64xbf16> {
  // expected-error @below {{'linattn.chunk_output' op GPU chunked kernels need q, k and v of one element type, got 'f16' and 'bf16'}}
  %o = linattn.chunk_output q(%q) k(%k) new_values(%d) states(%states) {chunk_size = 64 : i64, scale = 0.125 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf16>, tensor<?x?x2x64xf32>, tensor<?x?x2x64x64xf32>) -> tensor<?x?x2x64xbf16>
  return %o : tensor<?x?x2x64xbf16>
}

// -----

// Chunks are 64 tokens (four warps of 16 rows) or 128 (eight).
func.func @output_chunk_32(%q: tensor<?x?x2x64xbf16>, %d: tensor<?x?x2x64xf32>, %states: tensor<?x?x2x64x64xf32>) -> tensor<?x?x2x64xbf16> {
  // expected-error @below {{'linattn.chunk_output' op GPU chunked kernels take chunk_size = 64 or 128, got 32}}
  %o = linattn.chunk_output q(%q) k(%q) new_values(%d) states(%states) {chunk_size = 32 : i64, scale = 0.125 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>, tensor<?x?x2x64x64xf32>) -> tensor<?x?x2x64xbf16>
  return %o : tensor<?x?x2x64xbf16>
}

// -----

// The long chunk is for the kinds without a rank-1 term and with row
// gates: not the UT transform's,
func.func @ut_chunk_128(%k: tensor<?x?x2x64xbf16>, %v: tensor<?x?x2x64xbf16>, %beta: tensor<?x?x2xf32>) -> (tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>) {
  // expected-error @below {{'linattn.ut_transform' op GPU chunked kernels take chunk_size = 64 (the UT transform), got 128}}
  %w, %u = linattn.ut_transform k(%k) v(%v) beta(%beta) {chunk_size = 128 : i64, rank1_scale = 1.0 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2xf32>) -> (tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>)
  return %w, %u : tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>
}

// -----

// nor a state pass with W,
func.func @state_pass_wy_chunk_128(%k: tensor<?x?x2x64xbf16>, %u: tensor<?x?x2x64xf32>, %w: tensor<?x?x2x64xbf16>, %s0: tensor<?x2x64x64xf32>) -> tensor<?x2x64x64xf32> {
  // expected-error @below {{'linattn.chunk_state_pass' op GPU chunked kernels take chunk_size = 64 (the WY form), got 128}}
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) w(%w) state(%s0) {chunk_size = 128 : i64}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xbf16>, tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xf32>, tensor<?x?x2x64x64xf32>, tensor<?x2x64x64xf32>)
  return %final : tensor<?x2x64x64xf32>
}

// -----

// nor per-key gates (GLA): not their cumsum,
func.func @key_cumsum_chunk_128(%g: tensor<?x?x2x64xf32>) -> tensor<?x?x2x64xf32> {
  // expected-error @below {{'linattn.chunk_cumsum' op GPU chunked kernels take chunk_size = 64 (per-key gates), got 128}}
  %G = linattn.chunk_cumsum %g {chunk_size = 128 : i64} : tensor<?x?x2x64xf32> -> tensor<?x?x2x64xf32>
  return %G : tensor<?x?x2x64xf32>
}

// -----

// their state pass,
func.func @key_state_pass_chunk_128(%k: tensor<?x?x2x64xbf16>, %u: tensor<?x?x2x64xbf16>, %g: tensor<?x?x2x64xf32>, %s0: tensor<?x2x64x64xf32>) -> tensor<?x2x64x64xf32> {
  // expected-error @below {{'linattn.chunk_state_pass' op GPU chunked kernels take chunk_size = 64 (per-key gates), got 128}}
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) gates(%g) state(%s0) {chunk_size = 128 : i64}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>, tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x?x2x64x64xbf16>, tensor<?x2x64x64xf32>)
  return %final : tensor<?x2x64x64xf32>
}

// -----

// or their output.
func.func @key_output_chunk_128(%q: tensor<?x?x2x64xbf16>, %d: tensor<?x?x2x64xbf16>, %states: tensor<?x?x2x64x64xbf16>, %g: tensor<?x?x2x64xf32>) -> tensor<?x?x2x64xbf16> {
  // expected-error @below {{'linattn.chunk_output' op GPU chunked kernels take chunk_size = 64 (per-key gates), got 128}}
  %o = linattn.chunk_output q(%q) k(%q) new_values(%d) states(%states) gates(%g) {chunk_size = 128 : i64, scale = 0.125 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64x64xbf16>, tensor<?x?x2x64xf32>) -> tensor<?x?x2x64xbf16>
  return %o : tensor<?x?x2x64xbf16>
}

// -----

// K and V are multiples of 32 up to 256: not below 32,
func.func @ut_k16(%k: tensor<?x?x2x16xbf16>, %v: tensor<?x?x2x64xbf16>, %beta: tensor<?x?x2xf32>) -> (tensor<?x?x2x16xf32>, tensor<?x?x2x64xf32>) {
  // expected-error @below {{'linattn.ut_transform' op GPU chunked kernels need K = a multiple of 32 up to 256, got 16}}
  %w, %u = linattn.ut_transform k(%k) v(%v) beta(%beta) {chunk_size = 64 : i64, rank1_scale = 1.0 : f32}
      : (tensor<?x?x2x16xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2xf32>) -> (tensor<?x?x2x16xf32>, tensor<?x?x2x64xf32>)
  return %w, %u : tensor<?x?x2x16xf32>, tensor<?x?x2x64xf32>
}

// -----

// not other multiples of 16,
func.func @state_pass_v80(%k: tensor<?x?x2x64xbf16>, %u: tensor<?x?x2x80xf32>, %w: tensor<?x?x2x64xf32>, %s0: tensor<?x2x64x80xf32>) -> tensor<?x2x64x80xf32> {
  // expected-error @below {{'linattn.chunk_state_pass' op GPU chunked kernels need V = a multiple of 32 up to 256, got 80}}
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) w(%w) state(%s0) {chunk_size = 64 : i64}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x80xf32>, tensor<?x?x2x64xf32>, tensor<?x2x64x80xf32>) -> (tensor<?x?x2x80xf32>, tensor<?x?x2x64x80xf32>, tensor<?x2x64x80xf32>)
  return %final : tensor<?x2x64x80xf32>
}

// -----

func.func @output_k48(%q: tensor<?x?x2x48xbf16>, %d: tensor<?x?x2x64xf32>, %states: tensor<?x?x2x48x64xf32>) -> tensor<?x?x2x64xbf16> {
  // expected-error @below {{'linattn.chunk_output' op GPU chunked kernels need K = a multiple of 32 up to 256, got 48}}
  %o = linattn.chunk_output q(%q) k(%q) new_values(%d) states(%states) {chunk_size = 64 : i64, scale = 0.125 : f32}
      : (tensor<?x?x2x48xbf16>, tensor<?x?x2x48xbf16>, tensor<?x?x2x64xf32>, tensor<?x?x2x48x64xf32>) -> tensor<?x?x2x64xbf16>
  return %o : tensor<?x?x2x64xbf16>
}

// -----

// or above 256.
func.func @output_v288(%q: tensor<?x?x2x64xbf16>, %d: tensor<?x?x2x288xf32>, %states: tensor<?x?x2x64x288xf32>) -> tensor<?x?x2x288xbf16> {
  // expected-error @below {{'linattn.chunk_output' op GPU chunked kernels need V = a multiple of 32 up to 256, got 288}}
  %o = linattn.chunk_output q(%q) k(%q) new_values(%d) states(%states) {chunk_size = 64 : i64, scale = 0.125 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x288xf32>, tensor<?x?x2x64x288xf32>) -> tensor<?x?x2x288xbf16>
  return %o : tensor<?x?x2x288xbf16>
}

// -----

// The rank-1 product form of the state pass is lowered to the WY form
// (linattn-lower-rank1-to-wy) before this pass.
func.func @state_pass_rank1(%k: tensor<?x?x2x64xbf16>, %v: tensor<?x?x2x64xbf16>, %beta: tensor<?x?x2xf32>, %s0: tensor<?x2x64x64xf32>) -> tensor<?x2x64x64xf32> {
  // expected-error @below {{'linattn.chunk_state_pass' op the rank-1 product form has no GPU kernel: run linattn-lower-rank1-to-wy first}}
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%v) beta(%beta) state(%s0) {chunk_size = 64 : i64, rank1_scale = 1.0 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2xf32>, tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xf32>, tensor<?x?x2x64x64xf32>, tensor<?x2x64x64xf32>)
  return %final : tensor<?x2x64x64xf32>
}

// -----

// The output kernel stages a segment's carry in the chunk states' tile, so
// the two must share an element type.
func.func @carries_type(%q: tensor<?x?x2x128xbf16>, %d: tensor<?x?x2x128xbf16>, %states: tensor<?x?x2x128x128xbf16>, %c: tensor<?x?x2x128x128xf32>) -> tensor<?x?x2x128xbf16> {
  // expected-error @below {{'linattn.chunk_output' op GPU output kernel stages carries in the chunk states' tile: their element types must agree, got 'f32' and 'bf16'}}
  %o = linattn.chunk_output q(%q) k(%q) new_values(%d) states(%states) carries(%c) {chunk_size = 64 : i64, scale = 0.125 : f32, segment_chunks = 4 : i64}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128x128xbf16>, tensor<?x?x2x128x128xf32>) -> tensor<?x?x2x128xbf16>
  return %o : tensor<?x?x2x128xbf16>
}

// -----

// A state pass's block width is 32 or 16 columns (linattn.state_columns).
func.func @state_columns_24(%k: tensor<?x?x2x96xbf16>, %u: tensor<?x?x2x96xf32>, %w: tensor<?x?x2x96xbf16>, %G: tensor<?x?x2xf32>, %s0: tensor<?x2x96x96xf32>) -> tensor<?x2x96x96xf32> {
  // expected-error @below {{'linattn.chunk_state_pass' op GPU state pass: linattn.state_columns must be 16, 32 or 64, got 24}}
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) w(%w) gates(%G) state(%s0) {chunk_size = 64 : i64, linattn.state_columns = 24 : i64}
      : (tensor<?x?x2x96xbf16>, tensor<?x?x2x96xf32>, tensor<?x?x2x96xbf16>, tensor<?x?x2xf32>, tensor<?x2x96x96xf32>) -> (tensor<?x?x2x96xbf16>, tensor<?x?x2x96x96xbf16>, tensor<?x2x96x96xf32>)
  return %final : tensor<?x2x96x96xf32>
}
