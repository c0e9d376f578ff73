// RUN: linattn-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(linattn-state-pass-to-scan))' | FileCheck %s

// WY form: dense chunk transitions, an exclusive scan of dense affine maps
// from (I, S_0), then the new values from the scanned entering states.

// CHECK-LABEL: func.func @wy
// CHECK:         %[[M:.*]], %[[B:.*]] = linattn.chunk_transitions k(%arg0) u(%arg1) w(%arg2) gates(%arg3) {chunk_size = 16 : i64}
// CHECK-SAME:      -> (tensor<2x3x4x8x8xf32>, tensor<2x3x4x8x4xf32>)
// CHECK:         %[[I:.*]] = tensor.generate
// CHECK:           arith.cmpi eq
// CHECK:         %[[S:.*]]:4 = linattn.scan dimension(1) exclusive ins(%[[M]], %[[B]] : {{.*}}) init(%[[I]], %arg4 : tensor<2x4x8x8xf32>, tensor<2x4x8x4xf32>) {
// M2 M1 and M2 B1 + B2: two batched contractions.
// CHECK-COUNT-2:   iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK:           linattn.yield
// CHECK:         %[[D:.*]] = linattn.chunk_new_values u(%arg1) w(%arg2) states(%[[S]]#1) {chunk_size = 16 : i64}
// CHECK:         return %[[D]], %[[S]]#1, %[[S]]#3
func.func @wy(%k: tensor<2x40x2x8xf32>, %u: tensor<2x40x4x4xf32>, %w: tensor<2x40x4x8xf32>, %g: tensor<2x40x4xf32>, %s0: tensor<2x4x8x4xf32>) -> (tensor<2x40x4x4xf32>, tensor<2x3x4x8x4xf32>, tensor<2x4x8x4xf32>) {
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) w(%w) gates(%g) state(%s0) {chunk_size = 16 : i64}
      : (tensor<2x40x2x8xf32>, tensor<2x40x4x4xf32>, tensor<2x40x4x8xf32>, tensor<2x40x4xf32>, tensor<2x4x8x4xf32>) -> (tensor<2x40x4x4xf32>, tensor<2x3x4x8x4xf32>, tensor<2x4x8x4xf32>)
  return %d, %states, %final : tensor<2x40x4x4xf32>, tensor<2x3x4x8x4xf32>, tensor<2x4x8x4xf32>
}

// -----

// Per-key gates without a rank-1 term: chunk decays stay in log space.

// CHECK-LABEL: func.func @gla
// CHECK:         linattn.chunk_transitions k(%arg0) u(%arg1) gates(%arg2) {chunk_size = 16 : i64} {{.*}} -> (tensor<?x?x2x8xf32>, tensor<?x?x2x8x4xf32>)
// CHECK:         linalg.fill
// CHECK:         linattn.scan dimension(1) exclusive
// CHECK:           math.exp
// CHECK:         linattn.chunk_new_values u(%arg1) states(
func.func @gla(%k: tensor<?x?x2x8xf32>, %u: tensor<?x?x2x4xf32>, %g: tensor<?x?x2x8xf32>, %s0: tensor<?x2x8x4xf32>) -> (tensor<?x?x2x4xf32>, tensor<?x?x2x8x4xf32>, tensor<?x2x8x4xf32>) {
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) gates(%g) state(%s0) {chunk_size = 16 : i64}
      : (tensor<?x?x2x8xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x8xf32>, tensor<?x2x8x4xf32>) -> (tensor<?x?x2x4xf32>, tensor<?x?x2x8x4xf32>, tensor<?x2x8x4xf32>)
  return %d, %states, %final : tensor<?x?x2x4xf32>, tensor<?x?x2x8x4xf32>, tensor<?x2x8x4xf32>
}

// -----

// Rank-1 product form and state passes recorded for another strategy stay.

// CHECK-LABEL: func.func @untouched
// CHECK-NOT:     linattn.scan
// CHECK:         linattn.chunk_state_pass k(%arg0) u(%arg1) beta(%arg2)
// CHECK:         linattn.chunk_state_pass k(%arg0) u(%arg1) state(%arg3) {chunk_size = 16 : i64, linattn.strategy = "chunked"}
func.func @untouched(%k: tensor<1x8x1x4xf32>, %u: tensor<1x8x1x4xf32>, %beta: tensor<1x8x1xf32>, %s0: tensor<1x1x4x4xf32>) -> (tensor<1x8x1x4xf32>, tensor<1x8x1x4xf32>) {
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) beta(%beta) state(%s0) {chunk_size = 16 : i64, rank1_scale = 1.0 : f32}
      : (tensor<1x8x1x4xf32>, tensor<1x8x1x4xf32>, tensor<1x8x1xf32>, tensor<1x1x4x4xf32>) -> (tensor<1x8x1x4xf32>, tensor<1x1x1x4x4xf32>, tensor<1x1x4x4xf32>)
  %d2, %states2, %final2 = linattn.chunk_state_pass k(%k) u(%u) state(%s0) {chunk_size = 16 : i64, linattn.strategy = "chunked"}
      : (tensor<1x8x1x4xf32>, tensor<1x8x1x4xf32>, tensor<1x1x4x4xf32>) -> (tensor<1x8x1x4xf32>, tensor<1x1x1x4x4xf32>, tensor<1x1x4x4xf32>)
  return %d, %d2 : tensor<1x8x1x4xf32>, tensor<1x8x1x4xf32>
}

// -----

// bf16 chunk states and new values (as linattn-recurrence-to-chunked makes
// them for bf16 keys): the new values are computed from the scan's f32
// states in f32; both results are rounded after.

// CHECK-LABEL: func.func @narrow_intermediates
// CHECK:         %[[S:.*]]:4 = linattn.scan
// CHECK:         %[[D:.*]] = linattn.chunk_new_values u(%arg1) w(%arg2) states(%[[S]]#1) {chunk_size = 16 : i64} : ({{.*}}, tensor<2x3x4x8x4xf32>) -> tensor<2x40x4x4xf32>
// CHECK:         %[[NARROWD:.*]] = arith.truncf %[[D]] : tensor<2x40x4x4xf32> to tensor<2x40x4x4xbf16>
// CHECK:         %[[NARROWS:.*]] = arith.truncf %[[S]]#1 : tensor<2x3x4x8x4xf32> to tensor<2x3x4x8x4xbf16>
// CHECK:         return %[[NARROWD]], %[[NARROWS]], %[[S]]#3
func.func @narrow_intermediates(%k: tensor<2x40x2x8xbf16>, %u: tensor<2x40x4x4xf32>, %w: tensor<2x40x4x8xbf16>, %g: tensor<2x40x4xf32>, %s0: tensor<2x4x8x4xf32>) -> (tensor<2x40x4x4xbf16>, tensor<2x3x4x8x4xbf16>, tensor<2x4x8x4xf32>) {
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) w(%w) gates(%g) state(%s0) {chunk_size = 16 : i64}
      : (tensor<2x40x2x8xbf16>, tensor<2x40x4x4xf32>, tensor<2x40x4x8xbf16>, tensor<2x40x4xf32>, tensor<2x4x8x4xf32>) -> (tensor<2x40x4x4xbf16>, tensor<2x3x4x8x4xbf16>, tensor<2x4x8x4xf32>)
  return %d, %states, %final : tensor<2x40x4x4xbf16>, tensor<2x3x4x8x4xbf16>, tensor<2x4x8x4xf32>
}
