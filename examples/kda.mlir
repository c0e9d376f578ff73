// Kimi Delta Attention, KDA (Kimi Linear, Moonshot AI, 2025): the delta
// rule applied to a state decayed per key channel, g_t in R^K in log space.
//
// Per batch b and head h (state S: K x V = 128 x 128, t = 0..T-1):
//
//   S_t = (I - beta_t k_t k_t^T) diag(exp(g_t)) S_{t-1} + beta_t k_t v_t^T
//   o_t = K^-1/2 S_t^T q_t
//
// (the state decays first, then the delta rule meets the decayed state, as
// in flash-linear-attention's chunk_kda).
//
// Shapes, B and T dynamic, H = HV = 8, K = V = 128:
//   q, k: [B, T, 8, 128] bf16 (L2-normalised by the caller), v: [B, T, 8, 128] bf16
//   g: [B, T, 8, 128] f32 (log-space gate, per key)
//   beta: [B, T, 8] f32
//   s0 (initial state) and s (final state): [B, 8, 128, 128] f32; o: [B, T, 8, 128] bf16
//
// Run (inputs in argument order; .npy float32/float16/float64, outputs float32):
//   linattn-run examples/kda.mlir \
//     --input q.npy --input k.npy --input v.npy \
//     --input g.npy --input beta.npy --input s0.npy \
//     --output o.npy --output s.npy [--time]
// Check against the float64 oracle: python3 scripts/run_examples.py

module {
  func.func @kda(%q: tensor<?x?x8x128xbf16>, %k: tensor<?x?x8x128xbf16>,
                 %v: tensor<?x?x8x128xbf16>, %g: tensor<?x?x8x128xf32>,
                 %beta: tensor<?x?x8xf32>, %s0: tensor<?x8x128x128xf32>)
      -> (tensor<?x?x8x128xbf16>, tensor<?x8x128x128xf32>) {
    %o, %s = linattn.recurrence kda
        q(%q) k(%k) v(%v) gate(%g) beta(%beta) state(%s0)
        : (tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>,
           tensor<?x?x8x128xf32>, tensor<?x?x8xf32>, tensor<?x8x128x128xf32>)
       -> (tensor<?x?x8x128xbf16>, tensor<?x8x128x128xf32>)
    return %o, %s : tensor<?x?x8x128xbf16>, tensor<?x8x128x128xf32>
  }
}
