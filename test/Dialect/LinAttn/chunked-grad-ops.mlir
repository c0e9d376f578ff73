// RUN: linattn-opt %s | linattn-opt | FileCheck %s
//
// The chunked backward's ops parse, verify and print back: every optional
// operand and result, dynamic and static sizes, per-row and per-key gates.

// CHECK-LABEL: func.func @state_pass_grad_wy
// CHECK: linattn.chunk_state_pass_grad q(%{{.*}}) k(%{{.*}}) w(%{{.*}}) gates(%{{.*}}) grad_output(%{{.*}}) grad_final_state(%{{.*}}) {chunk_size = 64 : i64, scale = 1.250000e-01 : f32}
func.func @state_pass_grad_wy(%q: tensor<?x?x2x64xbf16>, %k: tensor<?x?x2x64xbf16>, %w: tensor<?x?x4x64xf32>,
    %g: tensor<?x?x4xf32>, %do: tensor<?x?x4x32xbf16>, %ds: tensor<?x4x64x32xf32>) {
  %dd, %hs, %ds0 = linattn.chunk_state_pass_grad q(%q) k(%k) w(%w) gates(%g) grad_output(%do) grad_final_state(%ds)
      {chunk_size = 64 : i64, scale = 0.125 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x4x64xf32>, tensor<?x?x4xf32>, tensor<?x?x4x32xbf16>, tensor<?x4x64x32xf32>)
      -> (tensor<?x?x4x32xf32>, tensor<?x?x4x64x32xf32>, tensor<?x4x64x32xf32>)
  return
}

// CHECK-LABEL: func.func @state_pass_grad_plain
// CHECK: linattn.chunk_state_pass_grad q(%{{.*}}) k(%{{.*}}) grad_output(%{{.*}}) grad_final_state(%{{.*}})
func.func @state_pass_grad_plain(%q: tensor<1x100x1x16xf32>, %k: tensor<1x100x1x16xf32>,
    %do: tensor<1x100x1x8xf32>, %ds: tensor<1x1x16x8xf32>) {
  %dd, %hs, %ds0 = linattn.chunk_state_pass_grad q(%q) k(%k) grad_output(%do) grad_final_state(%ds)
      {chunk_size = 32 : i64, scale = 1.0 : f32}
      : (tensor<1x100x1x16xf32>, tensor<1x100x1x16xf32>, tensor<1x100x1x8xf32>, tensor<1x1x16x8xf32>)
      -> (tensor<1x100x1x8xf32>, tensor<1x4x1x16x8xf32>, tensor<1x1x16x8xf32>)
  return
}

// CHECK-LABEL: func.func @chunk_grad_kda
// CHECK: %grad_q, %grad_k, %grad_v, %grad_gates, %grad_beta = linattn.chunk_grad q(%{{.*}}) k(%{{.*}}) v(%{{.*}}) beta(%{{.*}}) gates(%{{.*}}) w(%{{.*}}) u(%{{.*}}) new_values(%{{.*}}) states(%{{.*}}) grad_output(%{{.*}}) grad_new_values(%{{.*}}) grad_states(%{{.*}}) {chunk_size = 64 : i64, rank1_scale = 1.000000e+00 : f32, scale = 2.500000e-01 : f32}
// CHECK-SAME: -> (tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x8xbf16>) grad_gates tensor<?x?x2x16xf32> grad_beta tensor<?x?x2xf32>
func.func @chunk_grad_kda(%q: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>, %v: tensor<?x?x2x8xbf16>,
    %beta: tensor<?x?x2xf32>, %g: tensor<?x?x2x16xf32>, %w: tensor<?x?x2x16xf32>, %u: tensor<?x?x2x8xf32>,
    %d: tensor<?x?x2x8xf32>, %s: tensor<?x?x2x16x8xf32>, %do: tensor<?x?x2x8xbf16>,
    %dd: tensor<?x?x2x8xf32>, %hs: tensor<?x?x2x16x8xf32>) {
  %dq, %dk, %dv, %dg, %db = linattn.chunk_grad q(%q) k(%k) v(%v) beta(%beta) gates(%g) w(%w) u(%u)
      new_values(%d) states(%s) grad_output(%do) grad_new_values(%dd) grad_states(%hs)
      {chunk_size = 64 : i64, scale = 0.25 : f32, rank1_scale = 1.0 : f32}
      : (tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x8xbf16>, tensor<?x?x2xf32>, tensor<?x?x2x16xf32>,
         tensor<?x?x2x16xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2x16x8xf32>, tensor<?x?x2x8xbf16>,
         tensor<?x?x2x8xf32>, tensor<?x?x2x16x8xf32>)
      -> (tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x8xbf16>) grad_gates tensor<?x?x2x16xf32> grad_beta tensor<?x?x2xf32>
  return
}

// CHECK-LABEL: func.func @chunk_grad_no_gates
// CHECK: %grad_q, %grad_k, %grad_v = linattn.chunk_grad
// CHECK-SAME: -> (tensor<1x8x2x8xf32>, tensor<1x8x2x8xf32>, tensor<1x8x2x4xf32>)
func.func @chunk_grad_no_gates(%q: tensor<1x8x1x8xf32>, %k: tensor<1x8x1x8xf32>, %v: tensor<1x8x2x4xf32>,
    %d: tensor<1x8x2x4xf32>, %s: tensor<1x1x2x8x4xf32>, %do: tensor<1x8x2x4xf32>,
    %dd: tensor<1x8x2x4xf32>, %hs: tensor<1x1x2x8x4xf32>) {
  %dq, %dk, %dv = linattn.chunk_grad q(%q) k(%k) v(%v) new_values(%d) states(%s) grad_output(%do)
      grad_new_values(%dd) grad_states(%hs) {chunk_size = 8 : i64, scale = 1.0 : f32}
      : (tensor<1x8x1x8xf32>, tensor<1x8x1x8xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x1x2x8x4xf32>,
         tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x1x2x8x4xf32>)
      -> (tensor<1x8x2x8xf32>, tensor<1x8x2x8xf32>, tensor<1x8x2x4xf32>)
  return
}

// CHECK-LABEL: func.func @qk_grad
// CHECK: linattn.qk_grad %{{.*}} grad(%{{.*}}) {qk_l2norm} : (tensor<?x?x2x64xbf16>, tensor<?x?x8x64xf32>) -> tensor<?x?x2x64xbf16>
func.func @qk_grad(%q: tensor<?x?x2x64xbf16>, %g: tensor<?x?x8x64xf32>) -> tensor<?x?x2x64xbf16> {
  %dq = linattn.qk_grad %q grad(%g) {qk_l2norm} : (tensor<?x?x2x64xbf16>, tensor<?x?x8x64xf32>) -> tensor<?x?x2x64xbf16>
  return %dq : tensor<?x?x2x64xbf16>
}

// qk_l2norm factored: the reverse pass and chunk_grad take q's and k's
// reciprocal row norms beside them; qk_grad {factored} adds the norms'
// share.
// CHECK-LABEL: func.func @factored_l2norm
// CHECK: linattn.chunk_state_pass_grad q(%{{.*}}) q_rnorm(%{{.*}}) k(%{{.*}}) w(%{{.*}}) gates(%{{.*}}) grad_output(%{{.*}}) grad_final_state(%{{.*}})
// CHECK: linattn.chunk_grad q(%{{.*}}) q_rnorm(%{{.*}}) k(%{{.*}}) k_rnorm(%{{.*}}) v(%{{.*}}) beta(%{{.*}}) gates(%{{.*}}) w(%{{.*}}) u(%{{.*}})
// CHECK: linattn.qk_grad %{{.*}} grad(%{{.*}}) {factored, qk_l2norm}
func.func @factored_l2norm(%q: tensor<?x?x2x64xbf16>, %rq: tensor<?x?x2xf32>, %k: tensor<?x?x2x64xbf16>,
    %rk: tensor<?x?x2xf32>, %v: tensor<?x?x4x32xbf16>, %beta: tensor<?x?x4xf32>, %g: tensor<?x?x4xf32>,
    %w: tensor<?x?x4x64xbf16>, %u: tensor<?x?x4x32xf32>, %d: tensor<?x?x4x32xf32>, %s: tensor<?x?x4x64x32xf32>,
    %do: tensor<?x?x4x32xbf16>, %ds: tensor<?x4x64x32xf32>) -> tensor<?x?x2x64xbf16> {
  %dd, %hs, %ds0 = linattn.chunk_state_pass_grad q(%q) q_rnorm(%rq) k(%k) w(%w) gates(%g) grad_output(%do) grad_final_state(%ds)
      {chunk_size = 64 : i64, scale = 0.125 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2xf32>, tensor<?x?x2x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4xf32>, tensor<?x?x4x32xbf16>, tensor<?x4x64x32xf32>)
      -> (tensor<?x?x4x32xf32>, tensor<?x?x4x64x32xf32>, tensor<?x4x64x32xf32>)
  %dq, %dk, %dv, %dg, %db = linattn.chunk_grad q(%q) q_rnorm(%rq) k(%k) k_rnorm(%rk) v(%v) beta(%beta) gates(%g) w(%w) u(%u)
      new_values(%d) states(%s) grad_output(%do) grad_new_values(%dd) grad_states(%hs)
      {chunk_size = 64 : i64, scale = 0.125 : f32, rank1_scale = 1.0 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2xf32>, tensor<?x?x2x64xbf16>, tensor<?x?x2xf32>, tensor<?x?x4x32xbf16>,
         tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4x64xbf16>, tensor<?x?x4x32xf32>, tensor<?x?x4x32xf32>,
         tensor<?x?x4x64x32xf32>, tensor<?x?x4x32xbf16>, tensor<?x?x4x32xf32>, tensor<?x?x4x64x32xf32>)
      -> (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x32xbf16>) grad_gates tensor<?x?x4xf32> grad_beta tensor<?x?x4xf32>
  %dqx = linattn.qk_grad %q grad(%dq) {qk_l2norm, factored} : (tensor<?x?x2x64xbf16>, tensor<?x?x4x64xf32>) -> tensor<?x?x2x64xbf16>
  return %dqx : tensor<?x?x2x64xbf16>
}
