// Issue 28, item 6: an element count that overflows int64.
func.func @f(%q: tensor<?x?x4611686018427387904x2xf32>, %k: tensor<?x?x4611686018427387904x2xf32>, %v: tensor<?x?x4611686018427387904x2xf32>, %s0: tensor<?x4611686018427387904x2x2xf32>) -> (tensor<?x?x4611686018427387904x2xf32>, tensor<?x4611686018427387904x2x2xf32>) {
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%s0)
      : (tensor<?x?x4611686018427387904x2xf32>, tensor<?x?x4611686018427387904x2xf32>, tensor<?x?x4611686018427387904x2xf32>, tensor<?x4611686018427387904x2x2xf32>) -> (tensor<?x?x4611686018427387904x2xf32>, tensor<?x4611686018427387904x2x2xf32>)
  return %o, %s : tensor<?x?x4611686018427387904x2xf32>, tensor<?x4611686018427387904x2x2xf32>
}
