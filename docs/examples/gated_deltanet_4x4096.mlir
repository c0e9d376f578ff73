// Gated DeltaNet at the cost model's static worked example in
// docs/algorithms.md, the shape flash-linear-attention was measured at:
// B = 4, T = 4096, H = HV = 8, K = V = 128, bf16 (32 sequence-heads).
func.func @gated_deltanet_4x4096(%q: tensor<4x4096x8x128xbf16>, %k: tensor<4x4096x8x128xbf16>,
    %v: tensor<4x4096x8x128xbf16>, %g: tensor<4x4096x8xf32>, %beta: tensor<4x4096x8xf32>,
    %s0: tensor<4x8x128x128xf32>) -> (tensor<4x4096x8x128xbf16>, tensor<4x8x128x128xf32>) {
  %o, %s = linattn.recurrence gated_delta q(%q) k(%k) v(%v) gate(%g) beta(%beta) state(%s0)
      : (tensor<4x4096x8x128xbf16>, tensor<4x4096x8x128xbf16>, tensor<4x4096x8x128xbf16>,
         tensor<4x4096x8xf32>, tensor<4x4096x8xf32>, tensor<4x8x128x128xf32>)
      -> (tensor<4x4096x8x128xbf16>, tensor<4x8x128x128xf32>)
  return %o, %s : tensor<4x4096x8x128xbf16>, tensor<4x8x128x128xf32>
}
