// A tiny GLA (per-key gate) for docs/algorithms.md: one sequence, one head,
// T = 8 tokens, K = V = 4, f32, static shapes.
//
//   S_t = diag(exp(g_t)) S_{t-1} + k_t v_t^T
//   o_t = 0.5 S_t^T q_t                     (scale = K^-1/2 = 0.5)
func.func @tiny_gla(%q: tensor<1x8x1x4xf32>, %k: tensor<1x8x1x4xf32>,
    %v: tensor<1x8x1x4xf32>, %g: tensor<1x8x1x4xf32>, %s0: tensor<1x1x4x4xf32>)
    -> (tensor<1x8x1x4xf32>, tensor<1x1x4x4xf32>) {
  %o, %s = linattn.recurrence key_gate q(%q) k(%k) v(%v) gate(%g) state(%s0)
      : (tensor<1x8x1x4xf32>, tensor<1x8x1x4xf32>, tensor<1x8x1x4xf32>,
         tensor<1x8x1x4xf32>, tensor<1x1x4x4xf32>)
      -> (tensor<1x8x1x4xf32>, tensor<1x1x4x4xf32>)
  return %o, %s : tensor<1x8x1x4xf32>, tensor<1x1x4x4xf32>
}
