// RUN: not linattn-opt %s --pass-pipeline='builtin.module(func.func(linattn-recurrence-to-chunked{chunk-size=0}))' 2>&1 | FileCheck %s

// CHECK: error: linattn-recurrence-to-chunked: chunk-size must be positive, got 0
func.func @f(%q: tensor<1x4x1x4xf32>, %v: tensor<1x4x1x4xf32>, %s0: tensor<1x1x4x4xf32>) -> (tensor<1x4x1x4xf32>, tensor<1x1x4x4xf32>) {
  %o, %s = linattn.recurrence identity q(%q) k(%q) v(%v) state(%s0)
      : (tensor<1x4x1x4xf32>, tensor<1x4x1x4xf32>, tensor<1x4x1x4xf32>, tensor<1x1x4x4xf32>) -> (tensor<1x4x1x4xf32>, tensor<1x1x4x4xf32>)
  return %o, %s : tensor<1x4x1x4xf32>, tensor<1x1x4x4xf32>
}
