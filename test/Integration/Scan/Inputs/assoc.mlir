// (a . b) . c and a . (b . c) for the affine-map combiner that
// linattn-recurrence-to-scan emits (scalar gate per head, log space):
//   (g1, B1) . (g2, B2) = (g1 + g2, exp(g2) B1 + B2).
// Results: left B, right B, left g, right g.
#gate = affine_map<(h, i, j) -> (h)>
#id = affine_map<(h, i, j) -> (h, i, j)>
func.func @assoc(%g: tensor<1x3x4xf32>, %kv: tensor<1x3x4x8x8xf32>)
    -> (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4xf32>, tensor<1x4xf32>) {
  %left:4 = linattn.scan dimension(1) ins(%g, %kv : tensor<1x3x4xf32>, tensor<1x3x4x8x8xf32>) {
  ^bb0(%g1: tensor<4xf32>, %b1: tensor<4x8x8xf32>, %g2: tensor<4xf32>, %b2: tensor<4x8x8xf32>):
    %gs = arith.addf %g1, %g2 : tensor<4xf32>
    %e = tensor.empty() : tensor<4x8x8xf32>
    %bs = linalg.generic {indexing_maps = [#gate, #id, #id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
        ins(%g2, %b1, %b2 : tensor<4xf32>, tensor<4x8x8xf32>, tensor<4x8x8xf32>) outs(%e : tensor<4x8x8xf32>) {
    ^bb0(%x: f32, %y: f32, %z: f32, %o: f32):
      %d = math.exp %x : f32
      %p = arith.mulf %d, %y : f32
      %r = arith.addf %p, %z : f32
      linalg.yield %r : f32
    } -> tensor<4x8x8xf32>
    linattn.yield %gs, %bs : tensor<4xf32>, tensor<4x8x8xf32>
  } -> tensor<1x3x4xf32>, tensor<1x3x4x8x8xf32>, tensor<1x4xf32>, tensor<1x4x8x8xf32>

  // b . c
  %gbc = tensor.extract_slice %g[0, 1, 0] [1, 2, 4] [1, 1, 1] : tensor<1x3x4xf32> to tensor<1x2x4xf32>
  %kvbc = tensor.extract_slice %kv[0, 1, 0, 0, 0] [1, 2, 4, 8, 8] [1, 1, 1, 1, 1] : tensor<1x3x4x8x8xf32> to tensor<1x2x4x8x8xf32>
  %bc:4 = linattn.scan dimension(1) ins(%gbc, %kvbc : tensor<1x2x4xf32>, tensor<1x2x4x8x8xf32>) {
  ^bb0(%g1: tensor<4xf32>, %b1: tensor<4x8x8xf32>, %g2: tensor<4xf32>, %b2: tensor<4x8x8xf32>):
    %gs = arith.addf %g1, %g2 : tensor<4xf32>
    %e = tensor.empty() : tensor<4x8x8xf32>
    %bs = linalg.generic {indexing_maps = [#gate, #id, #id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
        ins(%g2, %b1, %b2 : tensor<4xf32>, tensor<4x8x8xf32>, tensor<4x8x8xf32>) outs(%e : tensor<4x8x8xf32>) {
    ^bb0(%x: f32, %y: f32, %z: f32, %o: f32):
      %d = math.exp %x : f32
      %p = arith.mulf %d, %y : f32
      %r = arith.addf %p, %z : f32
      linalg.yield %r : f32
    } -> tensor<4x8x8xf32>
    linattn.yield %gs, %bs : tensor<4xf32>, tensor<4x8x8xf32>
  } -> tensor<1x2x4xf32>, tensor<1x2x4x8x8xf32>, tensor<1x4xf32>, tensor<1x4x8x8xf32>

  // a . (b . c): the single element (b . c) folded into the carry-in a.
  %ga = tensor.extract_slice %g[0, 0, 0] [1, 1, 4] [1, 1, 1] : tensor<1x3x4xf32> to tensor<1x4xf32>
  %kva = tensor.extract_slice %kv[0, 0, 0, 0, 0] [1, 1, 4, 8, 8] [1, 1, 1, 1, 1] : tensor<1x3x4x8x8xf32> to tensor<1x4x8x8xf32>
  %gbc1 = tensor.expand_shape %bc#2 [[0, 1], [2]] output_shape [1, 1, 4] : tensor<1x4xf32> into tensor<1x1x4xf32>
  %kvbc1 = tensor.expand_shape %bc#3 [[0, 1], [2], [3], [4]] output_shape [1, 1, 4, 8, 8] : tensor<1x4x8x8xf32> into tensor<1x1x4x8x8xf32>
  %right:4 = linattn.scan dimension(1) ins(%gbc1, %kvbc1 : tensor<1x1x4xf32>, tensor<1x1x4x8x8xf32>)
      init(%ga, %kva : tensor<1x4xf32>, tensor<1x4x8x8xf32>) {
  ^bb0(%g1: tensor<4xf32>, %b1: tensor<4x8x8xf32>, %g2: tensor<4xf32>, %b2: tensor<4x8x8xf32>):
    %gs = arith.addf %g1, %g2 : tensor<4xf32>
    %e = tensor.empty() : tensor<4x8x8xf32>
    %bs = linalg.generic {indexing_maps = [#gate, #id, #id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
        ins(%g2, %b1, %b2 : tensor<4xf32>, tensor<4x8x8xf32>, tensor<4x8x8xf32>) outs(%e : tensor<4x8x8xf32>) {
    ^bb0(%x: f32, %y: f32, %z: f32, %o: f32):
      %d = math.exp %x : f32
      %p = arith.mulf %d, %y : f32
      %r = arith.addf %p, %z : f32
      linalg.yield %r : f32
    } -> tensor<4x8x8xf32>
    linattn.yield %gs, %bs : tensor<4xf32>, tensor<4x8x8xf32>
  } -> tensor<1x1x4xf32>, tensor<1x1x4x8x8xf32>, tensor<1x4xf32>, tensor<1x4x8x8xf32>
  return %left#3, %right#3, %left#2, %right#2 : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4xf32>, tensor<1x4xf32>
}
