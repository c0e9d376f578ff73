// Linear attention (Katharopoulos et al., 2020), without feature map or
// normaliser: the state is a plain running sum of outer products.
//
// Per batch b and head h (state S: K x V = 128 x 128, t = 0..T-1):
//
//   S_t = S_{t-1} + k_t v_t^T
//   o_t = K^-1/2 S_t^T q_t
//
// Shapes, B and T dynamic, H = HV = 8, K = V = 128:
//   q, k: [B, T, 8, 128] bf16 (L2-normalised by the caller), v: [B, T, 8, 128] bf16
//   s0 (initial state) and s (final state): [B, 8, 128, 128] f32; o: [B, T, 8, 128] bf16
//
// Run (inputs in argument order; .npy float32/float16/float64, outputs float32):
//   linattn-run examples/linear_attention.mlir \
//     --input q.npy --input k.npy --input v.npy \
//     --input s0.npy \
//     --output o.npy --output s.npy [--time]
// Check against the float64 oracle: python3 scripts/run_examples.py

module {
  func.func @linear_attention(%q: tensor<?x?x8x128xbf16>, %k: tensor<?x?x8x128xbf16>,
                              %v: tensor<?x?x8x128xbf16>, %s0: tensor<?x8x128x128xf32>)
      -> (tensor<?x?x8x128xbf16>, tensor<?x8x128x128xf32>) {
    %o, %s = linattn.recurrence identity
        q(%q) k(%k) v(%v) state(%s0)
        : (tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>,
           tensor<?x8x128x128xf32>)
       -> (tensor<?x?x8x128xbf16>, tensor<?x8x128x128xf32>)
    return %o, %s : tensor<?x?x8x128xbf16>, tensor<?x8x128x128xf32>
  }
}
