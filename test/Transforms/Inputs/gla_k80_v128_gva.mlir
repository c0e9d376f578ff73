// GLA at a padded key size (80 -> 96) with grouped value heads (H = 4,
// HV = 8) and static B = 2, T = 8192: the padding copies move q, k, the
// per-key gates and the states (gpu-cost-model-fit.test).
func.func @gla(%q: tensor<2x8192x4x80xbf16>, %k: tensor<2x8192x4x80xbf16>,
               %v: tensor<2x8192x8x128xbf16>, %g: tensor<2x8192x8x80xf32>,
               %s0: tensor<2x8x80x128xf32>)
    -> (tensor<2x8192x8x128xbf16>, tensor<2x8x80x128xf32>) {
  %o, %s = linattn.recurrence key_gate q(%q) k(%k) v(%v) gate(%g) state(%s0)
      : (tensor<2x8192x4x80xbf16>, tensor<2x8192x4x80xbf16>, tensor<2x8192x8x128xbf16>,
         tensor<2x8192x8x80xf32>, tensor<2x8x80x128xf32>)
     -> (tensor<2x8192x8x128xbf16>, tensor<2x8x80x128xf32>)
  return %o, %s : tensor<2x8192x8x128xbf16>, tensor<2x8x80x128xf32>
}
