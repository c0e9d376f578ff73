// RUN: linattn-opt %s | FileCheck %s
// RUN: linattn-opt %s -mlir-print-op-generic | linattn-opt | FileCheck %s

// The chunked-state algorithm ops, as the chunked strategy produces them.

// CHECK-LABEL: func.func @chunked_gated_delta
// CHECK:   %[[QN:.*]] = linattn.l2norm %arg0 : tensor<?x?x2x16xbf16> -> tensor<?x?x2x16xf32>
// CHECK:   %[[G:.*]] = linattn.chunk_cumsum %arg3 {chunk_size = 16 : i64} : tensor<?x?x4xf32> -> tensor<?x?x4xf32>
// CHECK:   %[[W:.*]], %[[U:.*]] = linattn.ut_transform k(%arg1) v(%arg2) beta(%arg4) gates(%[[G]]) {chunk_size = 16 : i64, rank1_scale = 1.000000e+00 : f32}
// CHECK:   %[[D:.*]], %[[S:.*]], %[[F:.*]] = linattn.chunk_state_pass k(%arg1) u(%[[U]]) w(%[[W]]) gates(%[[G]]) state(%arg5) {chunk_size = 16 : i64}
// CHECK:   linattn.chunk_output q(%[[QN]]) k(%arg1) new_values(%[[D]]) states(%[[S]]) gates(%[[G]]) {chunk_size = 16 : i64, scale = 2.500000e-01 : f32}
func.func @chunked_gated_delta(%q: tensor<?x?x2x16xbf16>, %k: tensor<?x?x2x16xbf16>, %v: tensor<?x?x4x32xbf16>, %g: tensor<?x?x4xf32>, %beta: tensor<?x?x4xf32>, %s0: tensor<?x4x16x32xf32>) -> (tensor<?x?x4x32xbf16>, tensor<?x4x16x32xf32>) {
  %qn = linattn.l2norm %q : tensor<?x?x2x16xbf16> -> tensor<?x?x2x16xf32>
  %G = linattn.chunk_cumsum %g {chunk_size = 16 : i64} : tensor<?x?x4xf32> -> tensor<?x?x4xf32>
  %w, %u = linattn.ut_transform k(%k) v(%v) beta(%beta) gates(%G) {chunk_size = 16 : i64, rank1_scale = 1.0 : f32}
      : (tensor<?x?x2x16xbf16>, tensor<?x?x4x32xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> (tensor<?x?x4x16xf32>, tensor<?x?x4x32xf32>)
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) w(%w) gates(%G) state(%s0) {chunk_size = 16 : i64}
      : (tensor<?x?x2x16xbf16>, tensor<?x?x4x32xf32>, tensor<?x?x4x16xf32>, tensor<?x?x4xf32>, tensor<?x4x16x32xf32>) -> (tensor<?x?x4x32xf32>, tensor<?x?x4x16x32xf32>, tensor<?x4x16x32xf32>)
  %o = linattn.chunk_output q(%qn) k(%k) new_values(%d) states(%states) gates(%G) {chunk_size = 16 : i64, scale = 0.25 : f32}
      : (tensor<?x?x2x16xf32>, tensor<?x?x2x16xbf16>, tensor<?x?x4x32xf32>, tensor<?x?x4x16x32xf32>, tensor<?x?x4xf32>) -> tensor<?x?x4x32xbf16>
  return %o, %final : tensor<?x?x4x32xbf16>, tensor<?x4x16x32xf32>
}

// qk_l2norm factored: the reciprocal row norms of q and k beside them (the
// UT transform's coefficients take r, the output's rows s; the product
// form of the state pass takes r too).

// CHECK-LABEL: func.func @chunked_gated_delta_factored_l2norm
// CHECK:   %[[RQ:.*]] = linattn.rnorm %arg0 : tensor<?x?x2x16xbf16> -> tensor<?x?x2xf32>
// CHECK:   %[[RK:.*]] = linattn.rnorm %arg1 : tensor<?x?x2x16xbf16> -> tensor<?x?x2xf32>
// CHECK:   linattn.chunk_state_pass k(%arg1) k_rnorm(%[[RK]]) u(%arg2) beta(%arg4) gates(%{{.*}}) state(%arg5) {chunk_size = 16 : i64, rank1_scale = 1.000000e+00 : f32}
// CHECK:   linattn.ut_transform k(%arg1) k_rnorm(%[[RK]]) v(%arg2) beta(%arg4) gates(%{{.*}}) {chunk_size = 16 : i64, rank1_scale = 1.000000e+00 : f32}
// CHECK:   linattn.chunk_output q(%arg0) q_rnorm(%[[RQ]]) k(%arg1) new_values(%{{.*}}) states(%{{.*}}) gates(%{{.*}})
func.func @chunked_gated_delta_factored_l2norm(%q: tensor<?x?x2x16xbf16>, %k: tensor<?x?x2x16xbf16>, %v: tensor<?x?x4x32xbf16>, %g: tensor<?x?x4xf32>, %beta: tensor<?x?x4xf32>, %s0: tensor<?x4x16x32xf32>) -> (tensor<?x?x4x32xbf16>, tensor<?x4x16x32xf32>, tensor<?x4x16x32xf32>) {
  %rq = linattn.rnorm %q : tensor<?x?x2x16xbf16> -> tensor<?x?x2xf32>
  %rk = linattn.rnorm %k : tensor<?x?x2x16xbf16> -> tensor<?x?x2xf32>
  %G = linattn.chunk_cumsum %g {chunk_size = 16 : i64} : tensor<?x?x4xf32> -> tensor<?x?x4xf32>
  %d0, %states0, %final0 = linattn.chunk_state_pass k(%k) k_rnorm(%rk) u(%v) beta(%beta) gates(%G) state(%s0) {chunk_size = 16 : i64, rank1_scale = 1.0 : f32}
      : (tensor<?x?x2x16xbf16>, tensor<?x?x2xf32>, tensor<?x?x4x32xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x4x16x32xf32>) -> (tensor<?x?x4x32xf32>, tensor<?x?x4x16x32xf32>, tensor<?x4x16x32xf32>)
  %w, %u = linattn.ut_transform k(%k) k_rnorm(%rk) v(%v) beta(%beta) gates(%G) {chunk_size = 16 : i64, rank1_scale = 1.0 : f32}
      : (tensor<?x?x2x16xbf16>, tensor<?x?x2xf32>, tensor<?x?x4x32xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> (tensor<?x?x4x16xbf16>, tensor<?x?x4x32xf32>)
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) w(%w) gates(%G) state(%s0) {chunk_size = 16 : i64}
      : (tensor<?x?x2x16xbf16>, tensor<?x?x4x32xf32>, tensor<?x?x4x16xbf16>, tensor<?x?x4xf32>, tensor<?x4x16x32xf32>) -> (tensor<?x?x4x32xbf16>, tensor<?x?x4x16x32xbf16>, tensor<?x4x16x32xf32>)
  %o = linattn.chunk_output q(%q) q_rnorm(%rq) k(%k) new_values(%d) states(%states) gates(%G) {chunk_size = 16 : i64, scale = 0.25 : f32}
      : (tensor<?x?x2x16xbf16>, tensor<?x?x2xf32>, tensor<?x?x2x16xbf16>, tensor<?x?x4x32xbf16>, tensor<?x?x4x16x32xbf16>, tensor<?x?x4xf32>) -> tensor<?x?x4x32xbf16>
  return %o, %final, %final0 : tensor<?x?x4x32xbf16>, tensor<?x4x16x32xf32>, tensor<?x4x16x32xf32>
}

// KDA: per-key gates in the WY form (the UT transform, the state pass and
// the chunk transitions take them).

// CHECK-LABEL: func.func @chunked_kda
// CHECK:   %[[G:.*]] = linattn.chunk_cumsum %arg3 {chunk_size = 16 : i64} : tensor<?x?x4x16xf32> -> tensor<?x?x4x16xf32>
// CHECK:   %[[W:.*]], %[[U:.*]] = linattn.ut_transform k(%arg1) v(%arg2) beta(%arg4) gates(%[[G]]) {chunk_size = 16 : i64, rank1_scale = 1.000000e+00 : f32}
// CHECK:   linattn.chunk_state_pass k(%arg1) u(%[[U]]) w(%[[W]]) gates(%[[G]]) state(%arg5) {chunk_size = 16 : i64}
// CHECK:   linattn.chunk_transitions k(%arg1) u(%[[U]]) w(%[[W]]) gates(%[[G]]) {chunk_size = 16 : i64}
func.func @chunked_kda(%q: tensor<?x?x2x16xbf16>, %k: tensor<?x?x2x16xbf16>, %v: tensor<?x?x4x32xbf16>, %g: tensor<?x?x4x16xf32>, %beta: tensor<?x?x4xf32>, %s0: tensor<?x4x16x32xf32>) -> (tensor<?x4x16x32xf32>, tensor<?x?x4x16x16xf32>) {
  %G = linattn.chunk_cumsum %g {chunk_size = 16 : i64} : tensor<?x?x4x16xf32> -> tensor<?x?x4x16xf32>
  %w, %u = linattn.ut_transform k(%k) v(%v) beta(%beta) gates(%G) {chunk_size = 16 : i64, rank1_scale = 1.0 : f32}
      : (tensor<?x?x2x16xbf16>, tensor<?x?x4x32xbf16>, tensor<?x?x4xf32>, tensor<?x?x4x16xf32>) -> (tensor<?x?x4x16xf32>, tensor<?x?x4x32xf32>)
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) w(%w) gates(%G) state(%s0) {chunk_size = 16 : i64}
      : (tensor<?x?x2x16xbf16>, tensor<?x?x4x32xf32>, tensor<?x?x4x16xf32>, tensor<?x?x4x16xf32>, tensor<?x4x16x32xf32>) -> (tensor<?x?x4x32xf32>, tensor<?x?x4x16x32xf32>, tensor<?x4x16x32xf32>)
  %m, %b = linattn.chunk_transitions k(%k) u(%u) w(%w) gates(%G) {chunk_size = 16 : i64}
      : (tensor<?x?x2x16xbf16>, tensor<?x?x4x32xf32>, tensor<?x?x4x16xf32>, tensor<?x?x4x16xf32>) -> (tensor<?x?x4x16x16xf32>, tensor<?x?x4x16x32xf32>)
  return %final, %m : tensor<?x4x16x32xf32>, tensor<?x?x4x16x16xf32>
}

// A split W (negative eigenvalues): hi and lo parts in the keys' bf16,
// [B, T, HV, 2, K].
// CHECK-LABEL: func.func @split_w
// CHECK:   %[[W:.*]], %[[U:.*]] = linattn.ut_transform k(%arg0) v(%arg1) beta(%arg2) {chunk_size = 16 : i64, rank1_scale = 2.000000e+00 : f32}
// CHECK-SAME: -> (tensor<?x?x4x2x16xbf16>, tensor<?x?x4x32xf32>)
// CHECK:   linattn.chunk_state_pass k(%arg0) u(%[[U]]) w(%[[W]]) state(%arg3) {chunk_size = 16 : i64}
func.func @split_w(%k: tensor<?x?x2x16xbf16>, %v: tensor<?x?x4x32xbf16>, %beta: tensor<?x?x4xf32>, %s0: tensor<?x4x16x32xf32>) -> (tensor<?x?x4x32xbf16>, tensor<?x?x4x16x32xbf16>, tensor<?x4x16x32xf32>) {
  %w, %u = linattn.ut_transform k(%k) v(%v) beta(%beta) {chunk_size = 16 : i64, rank1_scale = 2.0 : f32}
      : (tensor<?x?x2x16xbf16>, tensor<?x?x4x32xbf16>, tensor<?x?x4xf32>) -> (tensor<?x?x4x2x16xbf16>, tensor<?x?x4x32xf32>)
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) w(%w) state(%s0) {chunk_size = 16 : i64}
      : (tensor<?x?x2x16xbf16>, tensor<?x?x4x32xf32>, tensor<?x?x4x2x16xbf16>, tensor<?x4x16x32xf32>) -> (tensor<?x?x4x32xbf16>, tensor<?x?x4x16x32xbf16>, tensor<?x4x16x32xf32>)
  return %d, %states, %final : tensor<?x?x4x32xbf16>, tensor<?x?x4x16x32xbf16>, tensor<?x4x16x32xf32>
}

// f32 keys (normalised from 16-bit inputs, as the backward keeps them)
// with W in a 16-bit type, rounded or split.
// CHECK-LABEL: func.func @f32_keys_narrow_w
// CHECK:   linattn.ut_transform k(%arg0) v(%arg1) beta(%arg2) {chunk_size = 16 : i64, rank1_scale = 1.000000e+00 : f32}
// CHECK-SAME: -> (tensor<?x?x4x16xbf16>, tensor<?x?x4x32xf32>)
// CHECK:   linattn.ut_transform k(%arg0) v(%arg1) beta(%arg2) {chunk_size = 16 : i64, rank1_scale = 2.000000e+00 : f32}
// CHECK-SAME: -> (tensor<?x?x4x2x16xbf16>, tensor<?x?x4x32xf32>)
func.func @f32_keys_narrow_w(%k: tensor<?x?x2x16xf32>, %v: tensor<?x?x4x32xbf16>, %beta: tensor<?x?x4xf32>) -> (tensor<?x?x4x16xbf16>, tensor<?x?x4x2x16xbf16>) {
  %w, %u = linattn.ut_transform k(%k) v(%v) beta(%beta) {chunk_size = 16 : i64, rank1_scale = 1.0 : f32}
      : (tensor<?x?x2x16xf32>, tensor<?x?x4x32xbf16>, tensor<?x?x4xf32>) -> (tensor<?x?x4x16xbf16>, tensor<?x?x4x32xf32>)
  %ws, %us = linattn.ut_transform k(%k) v(%v) beta(%beta) {chunk_size = 16 : i64, rank1_scale = 2.0 : f32}
      : (tensor<?x?x2x16xf32>, tensor<?x?x4x32xbf16>, tensor<?x?x4xf32>) -> (tensor<?x?x4x2x16xbf16>, tensor<?x?x4x32xf32>)
  return %w, %ws : tensor<?x?x4x16xbf16>, tensor<?x?x4x2x16xbf16>
}

// The fused forms linattn-fuse-chunk-cumsum makes: a UT transform that sums
// its raw gates and returns G; a per-key cumsum that also returns the keys
// decayed to their chunk's end and the chunk totals, for a state pass with
// decayed keys.
// CHECK-LABEL: func.func @fused_forms
// CHECK:   %{{.*}}, %{{.*}}, %[[G:.*]] = linattn.ut_transform k(%arg0) v(%arg1) beta(%arg2) raw_gates(%arg3) {chunk_size = 16 : i64, rank1_scale = 1.000000e+00 : f32}
// CHECK-SAME: -> (tensor<?x?x4x16xbf16>, tensor<?x?x4x32xf32>, tensor<?x?x4xf32>)
// CHECK:   %{{.*}}, %[[KD:.*]], %[[GC:.*]] = linattn.chunk_cumsum %arg4 keys(%arg0 : tensor<?x?x2x16xbf16>) {chunk_size = 16 : i64} : tensor<?x?x4x16xf32> -> tensor<?x?x4x16xf32>, tensor<?x?x4x16xbf16>, tensor<?x?x4x16xf32>
// CHECK:   linattn.chunk_state_pass k(%[[KD]]) u(%arg1) gates(%[[GC]]) state(%arg5) {chunk_size = 16 : i64, decayed_keys}
func.func @fused_forms(%k: tensor<?x?x2x16xbf16>, %v: tensor<?x?x4x32xbf16>, %beta: tensor<?x?x4xf32>, %g: tensor<?x?x4xf32>, %gk: tensor<?x?x4x16xf32>, %s0: tensor<?x4x16x32xf32>) -> (tensor<?x?x4x16xbf16>, tensor<?x?x4x32xf32>, tensor<?x?x4xf32>, tensor<?x4x16x32xf32>) {
  %w, %u, %G = linattn.ut_transform k(%k) v(%v) beta(%beta) raw_gates(%g) {chunk_size = 16 : i64, rank1_scale = 1.0 : f32}
      : (tensor<?x?x2x16xbf16>, tensor<?x?x4x32xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> (tensor<?x?x4x16xbf16>, tensor<?x?x4x32xf32>, tensor<?x?x4xf32>)
  %Gk, %kd, %gc = linattn.chunk_cumsum %gk keys(%k : tensor<?x?x2x16xbf16>) {chunk_size = 16 : i64}
      : tensor<?x?x4x16xf32> -> tensor<?x?x4x16xf32>, tensor<?x?x4x16xbf16>, tensor<?x?x4x16xf32>
  %d, %states, %final = linattn.chunk_state_pass k(%kd) u(%v) gates(%gc) state(%s0) {chunk_size = 16 : i64, decayed_keys}
      : (tensor<?x?x4x16xbf16>, tensor<?x?x4x32xbf16>, tensor<?x?x4x16xf32>, tensor<?x4x16x32xf32>) -> (tensor<?x?x4x32xbf16>, tensor<?x?x4x16x32xbf16>, tensor<?x4x16x32xf32>)
  return %w, %u, %G, %final : tensor<?x?x4x16xbf16>, tensor<?x?x4x32xf32>, tensor<?x?x4xf32>, tensor<?x4x16x32xf32>
}

// The state pass with the outputs formed in it (linattn-fuse-chunk-output).
// CHECK-LABEL: func.func @state_pass_output
// CHECK:   linattn.chunk_state_pass_output q(%arg0) k(%arg1) u(%arg2) w(%arg3) gates(%arg4) state(%arg5) {chunk_size = 64 : i64, q_l2norm, scale = 2.500000e-01 : f32}
// CHECK:   linattn.chunk_state_pass_output q(%arg0) k(%arg1) u(%arg2) state(%arg5) {chunk_size = 64 : i64, scale = 2.500000e-01 : f32}
func.func @state_pass_output(%q: tensor<?x?x2x32xbf16>, %k: tensor<?x?x2x32xbf16>, %u: tensor<?x?x4x32xf32>, %w: tensor<?x?x4x32xbf16>, %G: tensor<?x?x4xf32>, %s0: tensor<?x4x32x32xf32>) -> (tensor<?x?x4x32xbf16>, tensor<?x4x32x32xf32>) {
  %o, %final = linattn.chunk_state_pass_output q(%q) k(%k) u(%u) w(%w) gates(%G) state(%s0) {chunk_size = 64 : i64, q_l2norm, scale = 0.25 : f32}
      : (tensor<?x?x2x32xbf16>, tensor<?x?x2x32xbf16>, tensor<?x?x4x32xf32>, tensor<?x?x4x32xbf16>, tensor<?x?x4xf32>, tensor<?x4x32x32xf32>) -> (tensor<?x?x4x32xbf16>, tensor<?x4x32x32xf32>)
  %o2, %final2 = linattn.chunk_state_pass_output q(%q) k(%k) u(%u) state(%s0) {chunk_size = 64 : i64, scale = 0.25 : f32}
      : (tensor<?x?x2x32xbf16>, tensor<?x?x2x32xbf16>, tensor<?x?x4x32xf32>, tensor<?x4x32x32xf32>) -> (tensor<?x?x4x32xbf16>, tensor<?x4x32x32xf32>)
  return %o, %final2 : tensor<?x?x4x32xbf16>, tensor<?x4x32x32xf32>
}
