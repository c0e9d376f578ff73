// RUN: linattn-opt %s -split-input-file | FileCheck %s
// RUN: linattn-opt %s -split-input-file -mlir-print-op-generic | linattn-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @prefix_sum_exclusive_reverse
// CHECK: linattn.scan dimension(0) exclusive reverse ins(%arg0 : tensor<7x3xf32>) init(%arg1 : tensor<3xf32>) {
// CHECK: ^bb0(%[[A:.*]]: tensor<3xf32>, %[[B:.*]]: tensor<3xf32>):
// CHECK:   linattn.yield %{{.*}} : tensor<3xf32>
// CHECK: } -> tensor<7x3xf32>, tensor<3xf32>
func.func @prefix_sum_exclusive_reverse(%x: tensor<7x3xf32>, %init: tensor<3xf32>) -> (tensor<7x3xf32>, tensor<3xf32>) {
  %r:2 = linattn.scan dimension(0) exclusive reverse ins(%x : tensor<7x3xf32>) init(%init : tensor<3xf32>) {
  ^bb0(%a: tensor<3xf32>, %b: tensor<3xf32>):
    %s = arith.addf %a, %b : tensor<3xf32>
    linattn.yield %s : tensor<3xf32>
  } -> tensor<7x3xf32>, tensor<3xf32>
  return %r#0, %r#1 : tensor<7x3xf32>, tensor<3xf32>
}

// -----

// Scalar elements are 0-d tensors; batch dimensions precede the scan one.

// CHECK-LABEL: func.func @scalar_elements
// CHECK: linattn.scan dimension(1) ins(%arg0 : tensor<?x?xf32>) {
// CHECK: ^bb0(%{{.*}}: tensor<f32>, %{{.*}}: tensor<f32>):
func.func @scalar_elements(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %r:2 = linattn.scan dimension(1) ins(%x : tensor<?x?xf32>) {
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %m = arith.maximumf %a, %b : tensor<f32>
    linattn.yield %m : tensor<f32>
  } -> tensor<?x?xf32>, tensor<?xf32>
  return %r#0 : tensor<?x?xf32>
}
