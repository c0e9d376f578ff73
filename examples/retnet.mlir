// RetNet retention (Sun et al., 2023): a fixed decay gamma_h per head,
// gamma_h = 1 - 2^(-5-h) for h = 0..7 (the `decay` attribute).
//
// Per batch b and head h (state S: K x V = 128 x 128, t = 0..T-1):
//
//   S_t = gamma_h S_{t-1} + k_t v_t^T
//   o_t = K^-1/2 S_t^T q_t
//
// Shapes, B and T dynamic, H = HV = 8, K = V = 128:
//   q, k: [B, T, 8, 128] bf16 (L2-normalised by the caller), v: [B, T, 8, 128] bf16
//   s0 (initial state) and s (final state): [B, 8, 128, 128] f32; o: [B, T, 8, 128] bf16
//
// Run (inputs in argument order; .npy float32/float16/float64, outputs float32):
//   linattn-run examples/retnet.mlir \
//     --input q.npy --input k.npy --input v.npy \
//     --input s0.npy \
//     --output o.npy --output s.npy [--time]
// Check against the float64 oracle: python3 scripts/run_examples.py

module {
  func.func @retnet(%q: tensor<?x?x8x128xbf16>, %k: tensor<?x?x8x128xbf16>,
                    %v: tensor<?x?x8x128xbf16>, %s0: tensor<?x8x128x128xf32>)
      -> (tensor<?x?x8x128xbf16>, tensor<?x8x128x128xf32>) {
    %o, %s = linattn.recurrence constant_decay
        q(%q) k(%k) v(%v) state(%s0) {
          decay = array<f32: 0.96875, 0.984375, 0.9921875, 0.99609375,
                             0.998046875, 0.9990234375, 0.99951171875, 0.999755859375>}
        : (tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>,
           tensor<?x8x128x128xf32>)
       -> (tensor<?x?x8x128xbf16>, tensor<?x8x128x128xf32>)
    return %o, %s : tensor<?x?x8x128xbf16>, tensor<?x8x128x128xf32>
  }
}
