// RUN: linattn-opt %s | linattn-opt | FileCheck %s
//
// linattn.recurrence_grad round-trips: results named after the operands (dgate
// only with a gate, dbeta only with beta), attributes kept.

// CHECK-LABEL: func.func @gated_delta_grad
// CHECK: %dq, %dk, %dv, %dgate, %dbeta, %dinitial_state = linattn.recurrence_grad gated_delta q(%{{.*}}) k(%{{.*}}) v(%{{.*}}) gate(%{{.*}}) beta(%{{.*}}) state(%{{.*}}) grad_output(%{{.*}}) grad_final_state(%{{.*}}) {qk_l2norm, scale = 5.000000e-01 : f32}
// CHECK-SAME: -> (tensor<?x?x2x16xbf16>, tensor<?x?x2x16xbf16>, tensor<?x?x4x32xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x4x16x32xf32>)
func.func @gated_delta_grad(%q: tensor<?x?x2x16xbf16>, %k: tensor<?x?x2x16xbf16>, %v: tensor<?x?x4x32xbf16>,
    %g: tensor<?x?x4xf32>, %beta: tensor<?x?x4xf32>, %s0: tensor<?x4x16x32xf32>,
    %do: tensor<?x?x4x32xbf16>, %ds: tensor<?x4x16x32xf32>) {
  %dq, %dk, %dv, %dg, %db, %ds0 = linattn.recurrence_grad gated_delta q(%q) k(%k) v(%v) gate(%g) beta(%beta) state(%s0)
      grad_output(%do) grad_final_state(%ds) {scale = 0.5 : f32, qk_l2norm}
      : (tensor<?x?x2x16xbf16>, tensor<?x?x2x16xbf16>, tensor<?x?x4x32xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>,
         tensor<?x4x16x32xf32>, tensor<?x?x4x32xbf16>, tensor<?x4x16x32xf32>)
      -> (tensor<?x?x2x16xbf16>, tensor<?x?x2x16xbf16>, tensor<?x?x4x32xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x4x16x32xf32>)
  return
}

// CHECK-LABEL: func.func @constant_decay_grad
// CHECK: %dq, %dk, %dv, %dinitial_state = linattn.recurrence_grad constant_decay {{.*}} {decay = array<f32: 5.000000e-01, 7.500000e-01>}
// CHECK-SAME: -> (tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x2x8x8xf32>)
func.func @constant_decay_grad(%q: tensor<1x4x2x8xf32>, %k: tensor<1x4x2x8xf32>, %v: tensor<1x4x2x8xf32>,
    %s0: tensor<1x2x8x8xf32>, %do: tensor<1x4x2x8xf32>, %ds: tensor<1x2x8x8xf32>) {
  %dq, %dk, %dv, %ds0 = linattn.recurrence_grad constant_decay q(%q) k(%k) v(%v) state(%s0)
      grad_output(%do) grad_final_state(%ds) {decay = array<f32: 5.000000e-01, 7.500000e-01>}
      : (tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x2x8x8xf32>, tensor<1x4x2x8xf32>, tensor<1x2x8x8xf32>)
      -> (tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x2x8x8xf32>)
  return
}
