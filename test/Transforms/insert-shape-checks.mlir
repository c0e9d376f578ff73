// RUN: linattn-opt %s -split-input-file --linattn-insert-shape-checks | FileCheck %s

// Every dimension pair the semantics needs equal and the types leave dynamic
// gets a cf.assert naming both operands; static pairs were proved by the
// verifier and get none.

// CHECK-LABEL: func.func @gated_deltanet
// CHECK:       %[[QB:.*]] = tensor.dim %arg0, %c0
// CHECK:       %[[KB:.*]] = tensor.dim %arg1, %c0
// CHECK:       %[[EQ:.*]] = arith.cmpi eq, %[[QB]], %[[KB]] : index
// CHECK:       cf.assert %[[EQ]], "linattn.recurrence: dimension B of 'k' does not match 'q'"
// CHECK:       cf.assert %{{.*}}, "linattn.recurrence: dimension B of 'v' does not match 'q'"
// CHECK:       cf.assert %{{.*}}, "linattn.recurrence: dimension B of 'initial_state' does not match 'q'"
// CHECK:       cf.assert %{{.*}}, "linattn.recurrence: dimension T of 'k' does not match 'q'"
// CHECK:       cf.assert %{{.*}}, "linattn.recurrence: dimension T of 'v' does not match 'q'"
// CHECK:       cf.assert %{{.*}}, "linattn.recurrence: dimension B of 'gate' does not match 'q'"
// CHECK:       cf.assert %{{.*}}, "linattn.recurrence: dimension T of 'gate' does not match 'q'"
// CHECK:       cf.assert %{{.*}}, "linattn.recurrence: dimension B of 'beta' does not match 'q'"
// CHECK:       cf.assert %{{.*}}, "linattn.recurrence: dimension T of 'beta' does not match 'q'"
// CHECK-NOT:   cf.assert
// CHECK:       linattn.recurrence gated_delta
func.func @gated_deltanet(%q: tensor<?x?x2x16xbf16>, %k: tensor<?x?x2x16xbf16>, %v: tensor<?x?x4x32xbf16>, %g: tensor<?x?x4xf32>, %beta: tensor<?x?x4xf32>, %s0: tensor<?x4x16x32xf32>) -> (tensor<?x?x4x32xbf16>, tensor<?x4x16x32xf32>) {
  %o, %s = linattn.recurrence gated_delta q(%q) k(%k) v(%v) gate(%g) beta(%beta) state(%s0)
      : (tensor<?x?x2x16xbf16>, tensor<?x?x2x16xbf16>, tensor<?x?x4x32xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x4x16x32xf32>) -> (tensor<?x?x4x32xbf16>, tensor<?x4x16x32xf32>)
  return %o, %s : tensor<?x?x4x32xbf16>, tensor<?x4x16x32xf32>
}

// -----

// CHECK-LABEL: func.func @static_shapes
// CHECK-NOT:   cf.assert
func.func @static_shapes(%q: tensor<1x4x1x4xf32>, %v: tensor<1x4x1x4xf32>, %s0: tensor<1x1x4x4xf32>) -> (tensor<1x4x1x4xf32>, tensor<1x1x4x4xf32>) {
  %o, %s = linattn.recurrence identity q(%q) k(%q) v(%v) state(%s0)
      : (tensor<1x4x1x4xf32>, tensor<1x4x1x4xf32>, tensor<1x4x1x4xf32>, tensor<1x1x4x4xf32>) -> (tensor<1x4x1x4xf32>, tensor<1x1x4x4xf32>)
  return %o, %s : tensor<1x4x1x4xf32>, tensor<1x1x4x4xf32>
}

// -----

// The adjoint's dynamic dimensions too, the cotangents' included.
// CHECK-LABEL: func.func @grad
// CHECK:       cf.assert %{{.*}}, "linattn.recurrence_grad: dimension B of 'k' does not match 'q'"
// CHECK:       cf.assert %{{.*}}, "linattn.recurrence_grad: dimension B of 'grad_output' does not match 'v'"
// CHECK:       cf.assert %{{.*}}, "linattn.recurrence_grad: dimension B of 'grad_final_state' does not match 'initial_state'"
// CHECK:       cf.assert %{{.*}}, "linattn.recurrence_grad: dimension T of 'grad_output' does not match 'v'"
// CHECK:       linattn.recurrence_grad
func.func @grad(%q: tensor<?x?x2x8xf32>, %k: tensor<?x?x2x8xf32>, %v: tensor<?x?x2x8xf32>,
    %s0: tensor<?x2x8x8xf32>, %do: tensor<?x?x2x8xf32>, %ds: tensor<?x2x8x8xf32>) {
  %dq, %dk, %dv, %ds0 = linattn.recurrence_grad identity q(%q) k(%k) v(%v) state(%s0) grad_output(%do) grad_final_state(%ds)
      : (tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x2x8x8xf32>, tensor<?x?x2x8xf32>, tensor<?x2x8x8xf32>)
      -> (tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x2x8x8xf32>)
  return
}
