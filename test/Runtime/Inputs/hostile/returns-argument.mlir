// Issue 28, item 5: a spec that hands its caller an input buffer.
func.func @f(%q: tensor<?x?x2x16xbf16>, %k: tensor<?x?x2x16xbf16>, %v: tensor<?x?x2x16xbf16>, %s0: tensor<?x2x16x16xf32>) -> (tensor<?x?x2x16xbf16>, tensor<?x2x16x16xf32>) {
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%s0)
      : (tensor<?x?x2x16xbf16>, tensor<?x?x2x16xbf16>, tensor<?x?x2x16xbf16>, tensor<?x2x16x16xf32>) -> (tensor<?x?x2x16xbf16>, tensor<?x2x16x16xf32>)
  return %o, %s0 : tensor<?x?x2x16xbf16>, tensor<?x2x16x16xf32>
}
