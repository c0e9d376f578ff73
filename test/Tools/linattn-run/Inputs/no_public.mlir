// Only a private function: linattn-run has no default entry.
func.func private @helper(%q: tensor<?x?x1x4xf32>) -> tensor<?x?x1x4xf32> {
  return %q : tensor<?x?x1x4xf32>
}
