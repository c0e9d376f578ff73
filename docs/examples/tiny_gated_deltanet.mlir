// A tiny Gated DeltaNet for docs/algorithms.md: one sequence, one head,
// T = 8 tokens, K = V = 4, f32, static shapes so that every stage's IR
// stays readable.
//
//   S_t = exp(g_t) (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T
//   o_t = 0.5 S_t^T q_t                     (scale = K^-1/2 = 0.5)
func.func @tiny_gated_deltanet(%q: tensor<1x8x1x4xf32>, %k: tensor<1x8x1x4xf32>,
    %v: tensor<1x8x1x4xf32>, %g: tensor<1x8x1xf32>, %beta: tensor<1x8x1xf32>,
    %s0: tensor<1x1x4x4xf32>) -> (tensor<1x8x1x4xf32>, tensor<1x1x4x4xf32>) {
  %o, %s = linattn.recurrence gated_delta q(%q) k(%k) v(%v) gate(%g) beta(%beta) state(%s0)
      : (tensor<1x8x1x4xf32>, tensor<1x8x1x4xf32>, tensor<1x8x1x4xf32>,
         tensor<1x8x1xf32>, tensor<1x8x1xf32>, tensor<1x1x4x4xf32>)
      -> (tensor<1x8x1x4xf32>, tensor<1x1x4x4xf32>)
  return %o, %s : tensor<1x8x1x4xf32>, tensor<1x1x4x4xf32>
}
