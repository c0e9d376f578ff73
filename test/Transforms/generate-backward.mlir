// RUN: linattn-opt %s -split-input-file --linattn-generate-backward -verify-diagnostics | FileCheck %s
//
// linattn-generate-backward adds @NAME_backward next to each public spec
// function: the spec's arguments, then do and ds; one gradient per
// argument, in argument order, in the argument's shape (f32 for gate, beta
// and the state); the adjoint op keeps the kind and the attributes.

// CHECK-LABEL: func.func @gdn(
// CHECK:       func.func @gdn_backward(%[[Q:.*]]: tensor<?x?x2x16xbf16>, %[[K:.*]]: tensor<?x?x2x16xbf16>, %[[V:.*]]: tensor<?x?x4x32xbf16>, %[[G:.*]]: tensor<?x?x4xbf16>, %[[B:.*]]: tensor<?x?x4xf32>, %[[S0:.*]]: tensor<?x4x16x32xf32>, %[[DO:.*]]: tensor<?x?x4x32xbf16>, %[[DS:.*]]: tensor<?x4x16x32xf32>)
// CHECK-SAME:    -> (tensor<?x?x2x16xbf16>, tensor<?x?x2x16xbf16>, tensor<?x?x4x32xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x4x16x32xf32>)
// CHECK:         %[[DQ:.*]], %[[DK:.*]], %[[DV:.*]], %[[DG:.*]], %[[DB:.*]], %[[DS0:.*]] = linattn.recurrence_grad gated_delta q(%[[Q]]) k(%[[K]]) v(%[[V]]) gate(%[[G]]) beta(%[[B]]) state(%[[S0]]) grad_output(%[[DO]]) grad_final_state(%[[DS]]) {qk_l2norm, scale = 2.500000e-01 : f32}
// CHECK:         return %[[DQ]], %[[DK]], %[[DV]], %[[DG]], %[[DB]], %[[DS0]]
func.func @gdn(%q: tensor<?x?x2x16xbf16>, %k: tensor<?x?x2x16xbf16>, %v: tensor<?x?x4x32xbf16>,
    %g: tensor<?x?x4xbf16>, %beta: tensor<?x?x4xf32>, %s0: tensor<?x4x16x32xf32>)
    -> (tensor<?x?x4x32xbf16>, tensor<?x4x16x32xf32>) {
  %o, %s = linattn.recurrence gated_delta q(%q) k(%k) v(%v) gate(%g) beta(%beta) state(%s0) {scale = 0.25 : f32, qk_l2norm}
      : (tensor<?x?x2x16xbf16>, tensor<?x?x2x16xbf16>, tensor<?x?x4x32xbf16>, tensor<?x?x4xbf16>, tensor<?x?x4xf32>, tensor<?x4x16x32xf32>)
      -> (tensor<?x?x4x32xbf16>, tensor<?x4x16x32xf32>)
  return %o, %s : tensor<?x?x4x32xbf16>, tensor<?x4x16x32xf32>
}

// Functions without a recurrence are left alone.
// CHECK-NOT: func.func @helper_backward
func.func @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// Arguments in another order than the operands: the gradients follow the
// arguments.
// CHECK-LABEL: func.func @reordered(
// CHECK:       func.func @reordered_backward(%arg0: tensor<1x2x8x8xf32>, %arg1: tensor<1x4x2x8xf32>, %arg2: tensor<1x4x2x8xf32>, %arg3: tensor<1x4x2x8xf32>, %arg4: tensor<1x4x2x8xf32>, %arg5: tensor<1x2x8x8xf32>)
// CHECK:         %dq, %dk, %dv, %dinitial_state = linattn.recurrence_grad identity q(%arg3) k(%arg2) v(%arg1) state(%arg0) grad_output(%arg4) grad_final_state(%arg5)
// CHECK:         return %dinitial_state, %dv, %dk, %dq
func.func @reordered(%s0: tensor<1x2x8x8xf32>, %v: tensor<1x4x2x8xf32>, %k: tensor<1x4x2x8xf32>, %q: tensor<1x4x2x8xf32>)
    -> (tensor<1x4x2x8xf32>, tensor<1x2x8x8xf32>) {
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%s0)
      : (tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x2x8x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x8x8xf32>)
  return %o, %s : tensor<1x4x2x8xf32>, tensor<1x2x8x8xf32>
}

// -----

// expected-error @+1 {{cannot derive the backward of @two_ops: its body must be one linattn.recurrence returning (o, final state)}}
func.func @two_ops(%q: tensor<1x4x2x8xf32>, %k: tensor<1x4x2x8xf32>, %v: tensor<1x4x2x8xf32>, %s0: tensor<1x2x8x8xf32>)
    -> (tensor<1x4x2x8xf32>, tensor<1x2x8x8xf32>) {
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%s0)
      : (tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x2x8x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x8x8xf32>)
  %o2, %s2 = linattn.recurrence identity q(%q) k(%k) v(%v) state(%s)
      : (tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x2x8x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x8x8xf32>)
  return %o2, %s2 : tensor<1x4x2x8xf32>, tensor<1x2x8x8xf32>
}

// -----

// expected-error @+1 {{cannot derive the backward of @q_is_k: argument #0 is both 'q' and 'k': each argument must be one operand}}
func.func @q_is_k(%x: tensor<1x4x2x8xf32>, %v: tensor<1x4x2x8xf32>, %s0: tensor<1x2x8x8xf32>)
    -> (tensor<1x4x2x8xf32>, tensor<1x2x8x8xf32>) {
  %o, %s = linattn.recurrence identity q(%x) k(%x) v(%v) state(%s0)
      : (tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x2x8x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x8x8xf32>)
  return %o, %s : tensor<1x4x2x8xf32>, tensor<1x2x8x8xf32>
}

// -----

// expected-error @+1 {{cannot derive the backward of @state_only: it must return the recurrence's (o, final state), in that order}}
func.func @state_only(%q: tensor<1x4x2x8xf32>, %k: tensor<1x4x2x8xf32>, %v: tensor<1x4x2x8xf32>, %s0: tensor<1x2x8x8xf32>)
    -> tensor<1x2x8x8xf32> {
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%s0)
      : (tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x2x8x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x8x8xf32>)
  return %s : tensor<1x2x8x8xf32>
}

// -----

// expected-error @+1 {{cannot derive the backward of @unused: argument #4 is not an operand of its recurrence}}
func.func @unused(%q: tensor<1x4x2x8xf32>, %k: tensor<1x4x2x8xf32>, %v: tensor<1x4x2x8xf32>, %s0: tensor<1x2x8x8xf32>, %extra: tensor<4xf32>)
    -> (tensor<1x4x2x8xf32>, tensor<1x2x8x8xf32>) {
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%s0)
      : (tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x2x8x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x8x8xf32>)
  return %o, %s : tensor<1x4x2x8xf32>, tensor<1x2x8x8xf32>
}

// -----

// expected-error @+1 {{cannot derive the backward of @taken: @taken_backward exists already}}
func.func @taken(%q: tensor<1x4x2x8xf32>, %k: tensor<1x4x2x8xf32>, %v: tensor<1x4x2x8xf32>, %s0: tensor<1x2x8x8xf32>)
    -> (tensor<1x4x2x8xf32>, tensor<1x2x8x8xf32>) {
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%s0)
      : (tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x2x8x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x8x8xf32>)
  return %o, %s : tensor<1x4x2x8xf32>, tensor<1x2x8x8xf32>
}
func.func private @taken_backward()
