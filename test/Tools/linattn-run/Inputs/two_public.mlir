// Two public functions (and a private one): linattn-run needs --entry.
func.func @first(%q: tensor<?x?x1x4xf32>, %k: tensor<?x?x1x4xf32>, %v: tensor<?x?x1x4xf32>,
                 %s0: tensor<?x1x4x4xf32>) -> (tensor<?x?x1x4xf32>, tensor<?x1x4x4xf32>) {
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%s0) {scale = 1.0 : f32}
      : (tensor<?x?x1x4xf32>, tensor<?x?x1x4xf32>, tensor<?x?x1x4xf32>, tensor<?x1x4x4xf32>)
     -> (tensor<?x?x1x4xf32>, tensor<?x1x4x4xf32>)
  return %o, %s : tensor<?x?x1x4xf32>, tensor<?x1x4x4xf32>
}

func.func @second(%q: tensor<?x?x1x4xf32>, %k: tensor<?x?x1x4xf32>, %v: tensor<?x?x1x4xf32>,
                  %s0: tensor<?x1x4x4xf32>) -> (tensor<?x?x1x4xf32>, tensor<?x1x4x4xf32>) {
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%s0) {scale = 0.5 : f32}
      : (tensor<?x?x1x4xf32>, tensor<?x?x1x4xf32>, tensor<?x?x1x4xf32>, tensor<?x1x4x4xf32>)
     -> (tensor<?x?x1x4xf32>, tensor<?x1x4x4xf32>)
  return %o, %s : tensor<?x?x1x4xf32>, tensor<?x1x4x4xf32>
}

func.func private @helper(%q: tensor<?x?x1x4xf32>) -> tensor<?x?x1x4xf32> {
  return %q : tensor<?x?x1x4xf32>
}
