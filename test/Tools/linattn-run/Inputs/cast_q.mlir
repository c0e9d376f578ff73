// q reaches the op through a tensor.cast, so linattn-run cannot check its
// dims against k and v before the call; the lowering's cf.assert does.
func.func @f(%q: tensor<?x?x?x?xf32>, %k: tensor<?x?x8x16xf32>, %v: tensor<?x?x8x16xf32>, %s0: tensor<?x8x16x16xf32>) -> (tensor<?x?x8x16xf32>, tensor<?x8x16x16xf32>) {
  %qc = tensor.cast %q : tensor<?x?x?x?xf32> to tensor<?x?x8x16xf32>
  %o, %s = linattn.recurrence identity q(%qc) k(%k) v(%v) state(%s0) : (tensor<?x?x8x16xf32>, tensor<?x?x8x16xf32>, tensor<?x?x8x16xf32>, tensor<?x8x16x16xf32>) -> (tensor<?x?x8x16xf32>, tensor<?x8x16x16xf32>)
  return %o, %s : tensor<?x?x8x16xf32>, tensor<?x8x16x16xf32>
}
