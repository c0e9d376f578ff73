// DeltaNet (Schlag et al., 2021; Yang et al., 2024): the delta rule with
// write strength beta_t in (0, 1).
//
// Per batch b and head h (state S: K x V = 128 x 128, t = 0..T-1):
//
//   S_t = (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T
//   o_t = K^-1/2 S_t^T q_t
//
// Shapes, B and T dynamic, H = HV = 8, K = V = 128:
//   q, k: [B, T, 8, 128] bf16 (L2-normalised by the caller), v: [B, T, 8, 128] bf16
//   beta: [B, T, 8] f32
//   s0 (initial state) and s (final state): [B, 8, 128, 128] f32; o: [B, T, 8, 128] bf16
//
// Run (inputs in argument order; .npy float32/float16/float64, outputs float32):
//   linattn-run examples/deltanet.mlir \
//     --input q.npy --input k.npy --input v.npy \
//     --input beta.npy --input s0.npy \
//     --output o.npy --output s.npy [--time]
// Check against the float64 oracle: python3 scripts/run_examples.py

module {
  func.func @deltanet(%q: tensor<?x?x8x128xbf16>, %k: tensor<?x?x8x128xbf16>,
                      %v: tensor<?x?x8x128xbf16>, %beta: tensor<?x?x8xf32>,
                      %s0: tensor<?x8x128x128xf32>)
      -> (tensor<?x?x8x128xbf16>, tensor<?x8x128x128xf32>) {
    %o, %s = linattn.recurrence delta
        q(%q) k(%k) v(%v) beta(%beta) state(%s0)
        : (tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>,
           tensor<?x?x8xf32>, tensor<?x8x128x128xf32>)
       -> (tensor<?x?x8x128xbf16>, tensor<?x8x128x128xf32>)
    return %o, %s : tensor<?x?x8x128xbf16>, tensor<?x8x128x128xf32>
  }
}
