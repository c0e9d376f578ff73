// RUN: linattn-opt %s --pass-pipeline='builtin.module(func.func(linattn-state-pass-to-scan))' -verify-diagnostics

// A split W (hi + lo, from linattn-lower-rank1-to-wy{split-w=true}) cannot
// become a segment scan: chunk_transitions and chunk_new_values take W
// whole. The pass names the op instead of building ops that fail to verify.
func.func @split_w(%k: tensor<?x?x2x16xbf16>, %u: tensor<?x?x2x8xf32>, %w: tensor<?x?x2x2x16xbf16>, %s0: tensor<?x2x16x8xf32>) -> (tensor<?x?x2x8xf32>, tensor<?x?x2x16x8xf32>, tensor<?x2x16x8xf32>) {
  // expected-error @+1 {{a split 'w' (hi + lo parts) cannot become a segment scan: its transitions and new values take W [B, T, HV, K] whole}}
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) w(%w) state(%s0) {chunk_size = 16 : i64}
      : (tensor<?x?x2x16xbf16>, tensor<?x?x2x8xf32>, tensor<?x?x2x2x16xbf16>, tensor<?x2x16x8xf32>) -> (tensor<?x?x2x8xf32>, tensor<?x?x2x16x8xf32>, tensor<?x2x16x8xf32>)
  return %d, %states, %final : tensor<?x?x2x8xf32>, tensor<?x?x2x16x8xf32>, tensor<?x2x16x8xf32>
}
