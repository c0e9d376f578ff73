// Issue 28, item 7: dynamic head dimensions in the result type.
func.func @f(%q: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>, %v: tensor<?x?x2x16xf32>, %s0: tensor<?x2x16x16xf32>) -> (tensor<?x?x?x?xf32>, tensor<?x2x16x16xf32>) {
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%s0)
      : (tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x2x16x16xf32>) -> (tensor<?x?x?x?xf32>, tensor<?x2x16x16xf32>)
  return %o, %s : tensor<?x?x?x?xf32>, tensor<?x2x16x16xf32>
}
