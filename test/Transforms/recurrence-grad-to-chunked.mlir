// RUN: linattn-opt %s -split-input-file --linattn-recurrence-grad-to-chunked=chunk-size=32 | FileCheck %s
// RUN: not linattn-opt %s --linattn-recurrence-grad-to-chunked=chunk-size=0 2>&1 | FileCheck %s --check-prefix=SIZE
// RUN: linattn-opt %s -split-input-file --linattn-recurrence-grad-to-chunked="chunk-size=32 narrow-states=false" | FileCheck %s --check-prefix=WIDE
//
// linattn-recurrence-grad-to-chunked rewrites the adjoint into the chunked
// backward: the forward's chunk ops recompute W, U, D in f32 and the chunk
// states S_n (bf16 where the keys are bf16, under narrow-states, the
// default; f32 otherwise), the reverse chunk pass gives dD, the state
// gradients H_n (f32) and
// d initial_state, linattn.chunk_grad the rest, linattn.qk_grad sums dq
// and dk over value heads (through qk_l2norm). With one value head a q/k
// head and no qk_l2norm, chunk_grad returns dq and dk in q's and k's type
// and there is no qk_grad. A delta kind's qk_l2norm is factored: q and k
// stay exact, their reciprocal norms go to the ops that read them, and
// qk_grad {factored} adds the norms' share.

// SIZE: linattn-recurrence-grad-to-chunked: chunk-size must be positive, got 0

// Gated DeltaNet with qk_l2norm (factored), grouped value heads, a bf16
// gate.
// CHECK-LABEL: func.func @gdn_backward(
// CHECK-SAME:    %[[Q:[^:]*]]: tensor<?x?x2x16xbf16>, %[[K:[^:]*]]: tensor<?x?x2x16xbf16>, %[[V:[^:]*]]: tensor<?x?x4x32xbf16>, %[[G:[^:]*]]: tensor<?x?x4xbf16>, %[[B:[^:]*]]: tensor<?x?x4xf32>, %[[S0:[^:]*]]: tensor<?x4x16x32xf32>, %[[DO:[^:]*]]: tensor<?x?x4x32xbf16>, %[[DS:[^:]*]]: tensor<?x4x16x32xf32>)
// CHECK-NOT:     linattn.l2norm
// CHECK:         %[[RQ:.*]] = linattn.rnorm %[[Q]] : tensor<?x?x2x16xbf16> -> tensor<?x?x2xf32>
// CHECK:         %[[RK:.*]] = linattn.rnorm %[[K]] : tensor<?x?x2x16xbf16> -> tensor<?x?x2xf32>
// CHECK:         %[[GF:.*]] = arith.extf %[[G]] : tensor<?x?x4xbf16> to tensor<?x?x4xf32>
// CHECK:         %[[GC:.*]] = linattn.chunk_cumsum %[[GF]] {chunk_size = 32 : i64}
// CHECK:         %[[W:.*]], %[[U:.*]] = linattn.ut_transform k(%[[K]]) k_rnorm(%[[RK]]) v(%[[V]]) beta(%[[B]]) gates(%[[GC]]) {chunk_size = 32 : i64, rank1_scale = 1.000000e+00 : f32}
// CHECK-SAME:      -> (tensor<?x?x4x16xf32>, tensor<?x?x4x32xf32>)
// CHECK:         %[[D:.*]], %[[SN:.*]], %{{.*}} = linattn.chunk_state_pass k(%[[K]]) u(%[[U]]) w(%[[W]]) gates(%[[GC]]) state(%[[S0]]) {chunk_size = 32 : i64}
// CHECK-SAME:      -> (tensor<?x?x4x32xf32>, tensor<?x?x4x16x32xbf16>, tensor<?x4x16x32xf32>)
// CHECK:         %[[DD:.*]], %[[HN:.*]], %[[DS0:.*]] = linattn.chunk_state_pass_grad q(%[[Q]]) q_rnorm(%[[RQ]]) k(%[[K]]) w(%[[W]]) gates(%[[GC]]) grad_output(%[[DO]]) grad_final_state(%[[DS]]) {chunk_size = 32 : i64, scale = 2.500000e-01 : f32}
// CHECK-SAME:      -> (tensor<?x?x4x32xf32>, tensor<?x?x4x16x32xf32>, tensor<?x4x16x32xf32>)
// CHECK:         %[[DQH:.*]], %[[DKH:.*]], %[[DV:.*]], %[[DG:.*]], %[[DB:.*]] = linattn.chunk_grad q(%[[Q]]) q_rnorm(%[[RQ]]) k(%[[K]])
// CHECK-SAME:      k_rnorm(%[[RK]]) v(%[[V]]) beta(%[[B]]) gates(%[[GC]]) w(%[[W]]) u(%[[U]]) new_values(%[[D]]) states(%[[SN]]) grad_output(%[[DO]]) grad_new_values(%[[DD]]) grad_states(%[[HN]])
// CHECK-SAME:      rank1_scale = 1.000000e+00 : f32
// CHECK-SAME:      -> (tensor<?x?x4x16xf32>, tensor<?x?x4x16xf32>, tensor<?x?x4x32xbf16>) grad_gates tensor<?x?x4xf32> grad_beta tensor<?x?x4xf32>
// CHECK:         %[[DQ:.*]] = linattn.qk_grad %[[Q]] grad(%[[DQH]]) {factored, qk_l2norm} : (tensor<?x?x2x16xbf16>, tensor<?x?x4x16xf32>) -> tensor<?x?x2x16xbf16>
// CHECK:         %[[DK:.*]] = linattn.qk_grad %[[K]] grad(%[[DKH]]) {factored, qk_l2norm}
// CHECK:         return %[[DQ]], %[[DK]], %[[DV]], %[[DG]], %[[DB]], %[[DS0]]
// Without narrow-states S_n stays f32 too.
// WIDE-LABEL:    func.func @gdn_backward(
// WIDE:          linattn.chunk_state_pass
// WIDE-SAME:       -> (tensor<?x?x4x32xf32>, tensor<?x?x4x16x32xf32>, tensor<?x4x16x32xf32>)
// WIDE:          linattn.chunk_state_pass_grad
// WIDE-SAME:       -> (tensor<?x?x4x32xf32>, tensor<?x?x4x16x32xf32>, tensor<?x4x16x32xf32>)
func.func @gdn_backward(%q: tensor<?x?x2x16xbf16>, %k: tensor<?x?x2x16xbf16>, %v: tensor<?x?x4x32xbf16>,
    %g: tensor<?x?x4xbf16>, %beta: tensor<?x?x4xf32>, %s0: tensor<?x4x16x32xf32>,
    %do: tensor<?x?x4x32xbf16>, %ds: tensor<?x4x16x32xf32>)
    -> (tensor<?x?x2x16xbf16>, tensor<?x?x2x16xbf16>, tensor<?x?x4x32xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x4x16x32xf32>) {
  %dq, %dk, %dv, %dg, %db, %ds0 = linattn.recurrence_grad gated_delta q(%q) k(%k) v(%v) gate(%g) beta(%beta) state(%s0)
      grad_output(%do) grad_final_state(%ds) {scale = 0.25 : f32, qk_l2norm}
      : (tensor<?x?x2x16xbf16>, tensor<?x?x2x16xbf16>, tensor<?x?x4x32xbf16>, tensor<?x?x4xbf16>, tensor<?x?x4xf32>, tensor<?x4x16x32xf32>, tensor<?x?x4x32xbf16>, tensor<?x4x16x32xf32>)
      -> (tensor<?x?x2x16xbf16>, tensor<?x?x2x16xbf16>, tensor<?x?x4x32xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x4x16x32xf32>)
  return %dq, %dk, %dv, %dg, %db, %ds0 : tensor<?x?x2x16xbf16>, tensor<?x?x2x16xbf16>, tensor<?x?x4x32xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x4x16x32xf32>
}

// -----

// RetNet (constant decays): the log decays are gates of the chunk ops, but
// they are attributes, so there is no gate gradient; no rank-1 term: no UT
// transform, D = v and dv = dD. Static shapes: ceil(100 / 32) = 4 chunks.
// CHECK-LABEL: func.func @retnet_backward(
// CHECK:         tensor.generate
// CHECK:         %[[GC:.*]] = linattn.chunk_cumsum
// CHECK-NOT:     linattn.ut_transform
// CHECK:         linattn.chunk_state_pass k(%{{.*}}) u(%{{.*}}) gates(%[[GC]]) state(%{{.*}}) {chunk_size = 32 : i64}
// CHECK-SAME:      -> (tensor<2x100x2x8xf32>, tensor<2x4x2x16x8xf32>, tensor<2x2x16x8xf32>)
// CHECK:         linattn.chunk_state_pass_grad q(%{{.*}}) k(%{{.*}}) gates(%[[GC]])
// One value head a q/k head, no qk_l2norm: chunk_grad's dq and dk are the
// gradients.
// CHECK:         %[[DQ:.*]], %[[DK:.*]], %[[DV:.*]] = linattn.chunk_grad q(%{{.*}}) k(%{{.*}}) v(%{{.*}}) gates(%[[GC]]) new_values
// CHECK-SAME:      -> (tensor<2x100x2x16xf32>, tensor<2x100x2x16xf32>, tensor<2x100x2x8xf32>)
// CHECK-NOT:     linattn.qk_grad
// CHECK:         return %[[DQ]], %[[DK]], %[[DV]]
func.func @retnet_backward(%q: tensor<2x100x2x16xf32>, %k: tensor<2x100x2x16xf32>, %v: tensor<2x100x2x8xf32>,
    %s0: tensor<2x2x16x8xf32>, %do: tensor<2x100x2x8xf32>, %ds: tensor<2x2x16x8xf32>)
    -> (tensor<2x100x2x16xf32>, tensor<2x100x2x16xf32>, tensor<2x100x2x8xf32>, tensor<2x2x16x8xf32>) {
  %dq, %dk, %dv, %ds0 = linattn.recurrence_grad constant_decay q(%q) k(%k) v(%v) state(%s0)
      grad_output(%do) grad_final_state(%ds) {decay = array<f32: 0.9, 0.99>}
      : (tensor<2x100x2x16xf32>, tensor<2x100x2x16xf32>, tensor<2x100x2x8xf32>, tensor<2x2x16x8xf32>, tensor<2x100x2x8xf32>, tensor<2x2x16x8xf32>)
      -> (tensor<2x100x2x16xf32>, tensor<2x100x2x16xf32>, tensor<2x100x2x8xf32>, tensor<2x2x16x8xf32>)
  return %dq, %dk, %dv, %ds0 : tensor<2x100x2x16xf32>, tensor<2x100x2x16xf32>, tensor<2x100x2x8xf32>, tensor<2x2x16x8xf32>
}

// -----

// Gated DeltaNet in bf16 with one value head a q/k head and no qk_l2norm:
// chunk_grad rounds dq and dk to bf16 itself (what qk_grad would have
// done); no qk_grad.
// CHECK-LABEL: func.func @gdn_one_value_head_backward(
// CHECK:         %[[DQ:.*]], %[[DK:.*]], %[[DV:.*]], %[[DG:.*]], %[[DB:.*]] = linattn.chunk_grad
// CHECK-SAME:      -> (tensor<?x?x2x16xbf16>, tensor<?x?x2x16xbf16>, tensor<?x?x2x32xbf16>) grad_gates tensor<?x?x2xf32> grad_beta tensor<?x?x2xf32>
// CHECK-NOT:     linattn.qk_grad
// CHECK:         return %[[DQ]], %[[DK]], %[[DV]], %[[DG]], %[[DB]]
func.func @gdn_one_value_head_backward(%q: tensor<?x?x2x16xbf16>, %k: tensor<?x?x2x16xbf16>, %v: tensor<?x?x2x32xbf16>,
    %g: tensor<?x?x2xf32>, %beta: tensor<?x?x2xf32>, %s0: tensor<?x2x16x32xf32>,
    %do: tensor<?x?x2x32xbf16>, %ds: tensor<?x2x16x32xf32>)
    -> (tensor<?x?x2x16xbf16>, tensor<?x?x2x16xbf16>, tensor<?x?x2x32xbf16>, tensor<?x?x2xf32>, tensor<?x?x2xf32>, tensor<?x2x16x32xf32>) {
  %dq, %dk, %dv, %dg, %db, %ds0 = linattn.recurrence_grad gated_delta q(%q) k(%k) v(%v) gate(%g) beta(%beta) state(%s0)
      grad_output(%do) grad_final_state(%ds)
      : (tensor<?x?x2x16xbf16>, tensor<?x?x2x16xbf16>, tensor<?x?x2x32xbf16>, tensor<?x?x2xf32>, tensor<?x?x2xf32>, tensor<?x2x16x32xf32>, tensor<?x?x2x32xbf16>, tensor<?x2x16x32xf32>)
      -> (tensor<?x?x2x16xbf16>, tensor<?x?x2x16xbf16>, tensor<?x?x2x32xbf16>, tensor<?x?x2xf32>, tensor<?x?x2xf32>, tensor<?x2x16x32xf32>)
  return %dq, %dk, %dv, %dg, %db, %ds0 : tensor<?x?x2x16xbf16>, tensor<?x?x2x16xbf16>, tensor<?x?x2x32xbf16>, tensor<?x?x2xf32>, tensor<?x?x2xf32>, tensor<?x2x16x32xf32>
}

// -----

// An adjoint whose recorded strategy is another stays as it is.
// CHECK-LABEL: func.func @recorded_recurrent(
// CHECK:         linattn.recurrence_grad identity
// CHECK-NOT:     linattn.chunk_grad
func.func @recorded_recurrent(%q: tensor<1x8x1x8xf32>, %k: tensor<1x8x1x8xf32>, %v: tensor<1x8x1x8xf32>,
    %s0: tensor<1x1x8x8xf32>, %do: tensor<1x8x1x8xf32>, %ds: tensor<1x1x8x8xf32>)
    -> (tensor<1x8x1x8xf32>, tensor<1x8x1x8xf32>, tensor<1x8x1x8xf32>, tensor<1x1x8x8xf32>) {
  %dq, %dk, %dv, %ds0 = linattn.recurrence_grad identity q(%q) k(%k) v(%v) state(%s0)
      grad_output(%do) grad_final_state(%ds) {linattn.strategy = "recurrent"}
      : (tensor<1x8x1x8xf32>, tensor<1x8x1x8xf32>, tensor<1x8x1x8xf32>, tensor<1x1x8x8xf32>, tensor<1x8x1x8xf32>, tensor<1x1x8x8xf32>)
      -> (tensor<1x8x1x8xf32>, tensor<1x8x1x8xf32>, tensor<1x8x1x8xf32>, tensor<1x1x8x8xf32>)
  return %dq, %dk, %dv, %ds0 : tensor<1x8x1x8xf32>, tensor<1x8x1x8xf32>, tensor<1x8x1x8xf32>, tensor<1x1x8x8xf32>
}

// -----

// A kind without a rank-1 term keeps qk_l2norm as a tensor: q and k
// normalised in f32 (linattn.l2norm) feed the chunk ops, and qk_grad goes
// back through the normalisation without `factored`.
// CHECK-LABEL: func.func @gla_l2norm_backward(
// CHECK-NOT:     linattn.rnorm
// CHECK:         %[[QN:.*]] = linattn.l2norm %{{.*}} : tensor<?x?x2x16xbf16> -> tensor<?x?x2x16xf32>
// CHECK:         %[[KN:.*]] = linattn.l2norm %{{.*}} : tensor<?x?x2x16xbf16> -> tensor<?x?x2x16xf32>
// CHECK:         linattn.chunk_state_pass_grad q(%[[QN]]) k(%[[KN]])
// CHECK:         linattn.chunk_grad q(%[[QN]]) k(%[[KN]]) v(
// CHECK:         linattn.qk_grad %{{.*}} grad(%{{.*}}) {qk_l2norm} :
func.func @gla_l2norm_backward(%q: tensor<?x?x2x16xbf16>, %k: tensor<?x?x2x16xbf16>, %v: tensor<?x?x2x32xbf16>,
    %g: tensor<?x?x2x16xf32>, %s0: tensor<?x2x16x32xf32>, %do: tensor<?x?x2x32xbf16>, %ds: tensor<?x2x16x32xf32>)
    -> (tensor<?x?x2x16xbf16>, tensor<?x?x2x16xbf16>, tensor<?x?x2x32xbf16>, tensor<?x?x2x16xf32>, tensor<?x2x16x32xf32>) {
  %dq, %dk, %dv, %dg, %ds0 = linattn.recurrence_grad key_gate q(%q) k(%k) v(%v) gate(%g) state(%s0)
      grad_output(%do) grad_final_state(%ds) {qk_l2norm}
      : (tensor<?x?x2x16xbf16>, tensor<?x?x2x16xbf16>, tensor<?x?x2x32xbf16>, tensor<?x?x2x16xf32>, tensor<?x2x16x32xf32>, tensor<?x?x2x32xbf16>, tensor<?x2x16x32xf32>)
      -> (tensor<?x?x2x16xbf16>, tensor<?x?x2x16xbf16>, tensor<?x?x2x32xbf16>, tensor<?x?x2x16xf32>, tensor<?x2x16x32xf32>)
  return %dq, %dk, %dv, %dg, %ds0 : tensor<?x?x2x16xbf16>, tensor<?x?x2x16xbf16>, tensor<?x?x2x32xbf16>, tensor<?x?x2x16xf32>, tensor<?x2x16x32xf32>
}

// -----

// f16 keys: S_n stays f32 under narrow-states too (the states' range).
// CHECK-LABEL: func.func @gdn_f16_backward(
// CHECK:         linattn.chunk_state_pass
// CHECK-SAME:      -> (tensor<?x?x2x32xf32>, tensor<?x?x2x16x32xf32>, tensor<?x2x16x32xf32>)
// CHECK:         linattn.chunk_state_pass_grad
// CHECK-SAME:      -> (tensor<?x?x2x32xf32>, tensor<?x?x2x16x32xf32>, tensor<?x2x16x32xf32>)
func.func @gdn_f16_backward(%q: tensor<?x?x2x16xf16>, %k: tensor<?x?x2x16xf16>, %v: tensor<?x?x2x32xf16>,
    %g: tensor<?x?x2xf32>, %beta: tensor<?x?x2xf32>, %s0: tensor<?x2x16x32xf32>,
    %do: tensor<?x?x2x32xf16>, %ds: tensor<?x2x16x32xf32>)
    -> (tensor<?x?x2x16xf16>, tensor<?x?x2x16xf16>, tensor<?x?x2x32xf16>, tensor<?x?x2xf32>, tensor<?x?x2xf32>, tensor<?x2x16x32xf32>) {
  %dq, %dk, %dv, %dg, %db, %ds0 = linattn.recurrence_grad gated_delta q(%q) k(%k) v(%v) gate(%g) beta(%beta) state(%s0)
      grad_output(%do) grad_final_state(%ds)
      : (tensor<?x?x2x16xf16>, tensor<?x?x2x16xf16>, tensor<?x?x2x32xf16>, tensor<?x?x2xf32>, tensor<?x?x2xf32>, tensor<?x2x16x32xf32>, tensor<?x?x2x32xf16>, tensor<?x2x16x32xf32>)
      -> (tensor<?x?x2x16xf16>, tensor<?x?x2x16xf16>, tensor<?x?x2x32xf16>, tensor<?x?x2xf32>, tensor<?x?x2xf32>, tensor<?x2x16x32xf32>)
  return %dq, %dk, %dv, %dg, %db, %ds0 : tensor<?x?x2x16xf16>, tensor<?x?x2x16xf16>, tensor<?x?x2x32xf16>, tensor<?x?x2xf32>, tensor<?x?x2xf32>, tensor<?x2x16x32xf32>
}
