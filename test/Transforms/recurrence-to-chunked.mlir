// RUN: linattn-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(linattn-recurrence-to-chunked{chunk-size=32}))' | FileCheck %s
// RUN: linattn-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(linattn-recurrence-to-chunked))' | FileCheck %s --check-prefix=DEFAULT
// RUN: linattn-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(linattn-recurrence-to-chunked{narrow-intermediates=false}))' | FileCheck %s --check-prefix=WIDE

// Gated delta: cumulative gates per chunk, then the state pass in rank-1
// product form (beta, rank1_scale = 1) and the output combination.

// CHECK-LABEL: func.func @gated_deltanet
// CHECK-SAME:    (%[[Q:.*]]: tensor<?x?x2x16xbf16>, %[[K:.*]]: tensor<?x?x2x16xbf16>, %[[V:.*]]: tensor<?x?x4x32xbf16>, %[[G:.*]]: tensor<?x?x4xf32>, %[[BETA:.*]]: tensor<?x?x4xf32>, %[[S0:.*]]: tensor<?x4x16x32xf32>)
// CHECK:         %[[GC:.*]] = linattn.chunk_cumsum %[[G]] {chunk_size = 32 : i64} : tensor<?x?x4xf32> -> tensor<?x?x4xf32>
// CHECK:         %[[D:.*]], %[[STATES:.*]], %[[FINAL:.*]] = linattn.chunk_state_pass k(%[[K]]) u(%[[V]]) beta(%[[BETA]]) gates(%[[GC]]) state(%[[S0]]) {chunk_size = 32 : i64, rank1_scale = 1.000000e+00 : f32}
// CHECK-SAME:      -> (tensor<?x?x4x32xbf16>, tensor<?x?x4x16x32xbf16>, tensor<?x4x16x32xf32>)
// CHECK:         %[[O:.*]] = linattn.chunk_output q(%[[Q]]) k(%[[K]]) new_values(%[[D]]) states(%[[STATES]]) gates(%[[GC]]) {chunk_size = 32 : i64, scale = 2.500000e-01 : f32}
// CHECK:         return %[[O]], %[[FINAL]]
// DEFAULT-LABEL: func.func @gated_deltanet
// DEFAULT:         linattn.chunk_cumsum %{{.*}} {chunk_size = 64 : i64}
// The new values and chunk states are bf16 like the keys unless
// narrow-intermediates=false.
// WIDE-LABEL:    func.func @gated_deltanet
// WIDE:            linattn.chunk_state_pass
// WIDE-SAME:         -> (tensor<?x?x4x32xf32>, tensor<?x?x4x16x32xf32>, tensor<?x4x16x32xf32>)
func.func @gated_deltanet(%q: tensor<?x?x2x16xbf16>, %k: tensor<?x?x2x16xbf16>, %v: tensor<?x?x4x32xbf16>, %g: tensor<?x?x4xf32>, %beta: tensor<?x?x4xf32>, %s0: tensor<?x4x16x32xf32>) -> (tensor<?x?x4x32xbf16>, tensor<?x4x16x32xf32>) {
  %o, %s = linattn.recurrence gated_delta q(%q) k(%k) v(%v) gate(%g) beta(%beta) state(%s0)
      : (tensor<?x?x2x16xbf16>, tensor<?x?x2x16xbf16>, tensor<?x?x4x32xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x4x16x32xf32>) -> (tensor<?x?x4x32xbf16>, tensor<?x4x16x32xf32>)
  return %o, %s : tensor<?x?x4x32xbf16>, tensor<?x4x16x32xf32>
}

// -----

// Negative eigenvalues: rank1_scale = 2; no gates. Static T = 100 gives
// NC = ceil(100 / 32) = 4 chunk states. The in-op L2 norm of a delta kind
// is factored: q and k stay as they are, the state pass's coefficients
// take k's reciprocal norms and the output q's (linattn.rnorm).

// CHECK-LABEL: func.func @negeig
// CHECK-NOT:     linattn.l2norm
// CHECK:         %[[RQ:.*]] = linattn.rnorm %arg0 : tensor<2x100x1x8xf32> -> tensor<2x100x1xf32>
// CHECK:         %[[RK:.*]] = linattn.rnorm %arg1
// CHECK-NOT:     linattn.chunk_cumsum
// CHECK:         linattn.chunk_state_pass k(%arg1) k_rnorm(%[[RK]]) u(%arg2) beta(%arg3) state(%arg4) {chunk_size = 32 : i64, rank1_scale = 2.000000e+00 : f32}
// CHECK-SAME:      -> (tensor<2x100x1x8xf32>, tensor<2x4x1x8x8xf32>, tensor<2x1x8x8xf32>)
// CHECK:         linattn.chunk_output q(%arg0) q_rnorm(%[[RQ]]) k(%arg1)
func.func @negeig(%q: tensor<2x100x1x8xf32>, %k: tensor<2x100x1x8xf32>, %v: tensor<2x100x1x8xf32>, %beta: tensor<2x100x1xf32>, %s0: tensor<2x1x8x8xf32>) -> (tensor<2x100x1x8xf32>, tensor<2x1x8x8xf32>) {
  %o, %s = linattn.recurrence negeig_delta q(%q) k(%k) v(%v) beta(%beta) state(%s0) {qk_l2norm}
      : (tensor<2x100x1x8xf32>, tensor<2x100x1x8xf32>, tensor<2x100x1x8xf32>, tensor<2x100x1xf32>, tensor<2x1x8x8xf32>) -> (tensor<2x100x1x8xf32>, tensor<2x1x8x8xf32>)
  return %o, %s : tensor<2x100x1x8xf32>, tensor<2x1x8x8xf32>
}

// -----

// bf16 DeltaNet with the in-op L2 norm factored: q and k reach the chunk
// ops exact in bf16 (they take them as tensor-core operands), the chunk
// states are bf16 like the keys, but the new values of a delta rule
// without a decay stay f32 (on nearly parallel keys they telescope; NOTES
// p1).

// CHECK-LABEL: func.func @deltanet_bf16_l2norm
// CHECK:         %[[RQ:.*]] = linattn.rnorm %arg0 : tensor<?x?x2x16xbf16> -> tensor<?x?x2xf32>
// CHECK:         %[[RK:.*]] = linattn.rnorm %arg1 : tensor<?x?x2x16xbf16> -> tensor<?x?x2xf32>
// CHECK:         linattn.chunk_state_pass k(%arg1) k_rnorm(%[[RK]])
// CHECK-SAME:      -> (tensor<?x?x2x32xf32>, tensor<?x?x2x16x32xbf16>, tensor<?x2x16x32xf32>)
// CHECK:         linattn.chunk_output q(%arg0) q_rnorm(%[[RQ]]) k(%arg1)
func.func @deltanet_bf16_l2norm(%q: tensor<?x?x2x16xbf16>, %k: tensor<?x?x2x16xbf16>, %v: tensor<?x?x2x32xbf16>, %beta: tensor<?x?x2xf32>, %s0: tensor<?x2x16x32xf32>) -> (tensor<?x?x2x32xbf16>, tensor<?x2x16x32xf32>) {
  %o, %s = linattn.recurrence delta q(%q) k(%k) v(%v) beta(%beta) state(%s0) {qk_l2norm}
      : (tensor<?x?x2x16xbf16>, tensor<?x?x2x16xbf16>, tensor<?x?x2x32xbf16>, tensor<?x?x2xf32>, tensor<?x2x16x32xf32>) -> (tensor<?x?x2x32xbf16>, tensor<?x2x16x32xf32>)
  return %o, %s : tensor<?x?x2x32xbf16>, tensor<?x2x16x32xf32>
}

// -----

// Kinds without a rank-1 term keep the normalisation as a tensor: bf16
// normalised q and k (rounded once, as fla's l2norm_fwd) feed every op.

// CHECK-LABEL: func.func @simple_gla_bf16_l2norm
// CHECK-NOT:     linattn.rnorm
// CHECK:         %[[QN:.*]] = linattn.l2norm %arg0 : tensor<?x?x2x16xbf16> -> tensor<?x?x2x16xbf16>
// CHECK:         %[[KN:.*]] = linattn.l2norm %arg1 : tensor<?x?x2x16xbf16> -> tensor<?x?x2x16xbf16>
// CHECK:         linattn.chunk_state_pass k(%[[KN]]) u(%arg2)
// CHECK:         linattn.chunk_output q(%[[QN]]) k(%[[KN]])
func.func @simple_gla_bf16_l2norm(%q: tensor<?x?x2x16xbf16>, %k: tensor<?x?x2x16xbf16>, %v: tensor<?x?x2x32xbf16>, %g: tensor<?x?x2xf32>, %s0: tensor<?x2x16x32xf32>) -> (tensor<?x?x2x32xbf16>, tensor<?x2x16x32xf32>) {
  %o, %s = linattn.recurrence scalar_gate q(%q) k(%k) v(%v) gate(%g) state(%s0) {qk_l2norm}
      : (tensor<?x?x2x16xbf16>, tensor<?x?x2x16xbf16>, tensor<?x?x2x32xbf16>, tensor<?x?x2xf32>, tensor<?x2x16x32xf32>) -> (tensor<?x?x2x32xbf16>, tensor<?x2x16x32xf32>)
  return %o, %s : tensor<?x?x2x32xbf16>, tensor<?x2x16x32xf32>
}

// -----

// RetNet: a constant log gate log(gamma_hv) per token, generated (selected
// by value head: no constant table, which would be a host global each GPU
// call copies to the device), then accumulated per chunk like any scalar
// gate.

// CHECK-LABEL: func.func @retnet
// CHECK-DAG:     %[[LG0:.*]] = arith.constant -0.693147182 : f32
// CHECK-DAG:     %[[LG1:.*]] = arith.constant -1.38629436 : f32
// CHECK:         %[[LOGG:.*]] = tensor.generate %{{.*}}, %{{.*}} {
// CHECK:         ^bb0(%{{.*}}: index, %{{.*}}: index, %[[HV:.*]]: index):
// CHECK:           %[[HEAD0:.*]] = arith.cmpi eq, %[[HV]], %c0
// CHECK:           %[[LG:.*]] = arith.select %[[HEAD0]], %[[LG0]], %[[LG1]] : f32
// CHECK:           tensor.yield %[[LG]]
// CHECK:         } : tensor<?x?x2xf32>
// CHECK:         %[[GC:.*]] = linattn.chunk_cumsum %[[LOGG]]
// CHECK:         linattn.chunk_state_pass k(%arg1) u(%arg2) gates(%[[GC]]) state(%arg3) {chunk_size = 32 : i64}
func.func @retnet(%q: tensor<?x?x2x4xf32>, %k: tensor<?x?x2x4xf32>, %v: tensor<?x?x2x4xf32>, %s0: tensor<?x2x4x4xf32>) -> (tensor<?x?x2x4xf32>, tensor<?x2x4x4xf32>) {
  %o, %s = linattn.recurrence constant_decay q(%q) k(%k) v(%v) state(%s0) {decay = array<f32: 0.5, 0.25>}
      : (tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x2x4x4xf32>) -> (tensor<?x?x2x4xf32>, tensor<?x2x4x4xf32>)
  return %o, %s : tensor<?x?x2x4xf32>, tensor<?x2x4x4xf32>
}

// -----

// GLA: per-key gates stay per key through the state pass and the output.

// CHECK-LABEL: func.func @gla
// CHECK:         %[[GC:.*]] = linattn.chunk_cumsum %arg3 {chunk_size = 32 : i64} : tensor<?x?x2x4xf32> -> tensor<?x?x2x4xf32>
// CHECK:         linattn.chunk_state_pass k(%arg1) u(%arg2) gates(%[[GC]]) state(%arg4)
// CHECK:         linattn.chunk_output {{.*}} gates(%[[GC]])
func.func @gla(%q: tensor<?x?x2x4xf32>, %k: tensor<?x?x2x4xf32>, %v: tensor<?x?x2x4xf32>, %g: tensor<?x?x2x4xf32>, %s0: tensor<?x2x4x4xf32>) -> (tensor<?x?x2x4xf32>, tensor<?x2x4x4xf32>) {
  %o, %s = linattn.recurrence key_gate q(%q) k(%k) v(%v) gate(%g) state(%s0)
      : (tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x2x4x4xf32>) -> (tensor<?x?x2x4xf32>, tensor<?x2x4x4xf32>)
  return %o, %s : tensor<?x?x2x4xf32>, tensor<?x2x4x4xf32>
}
