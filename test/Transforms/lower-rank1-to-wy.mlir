// RUN: linattn-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(linattn-lower-rank1-to-wy))' | FileCheck %s
// RUN: linattn-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(linattn-lower-rank1-to-wy{split-w=true}))' | FileCheck %s --check-prefix=SPLIT

// A rank-1 product state pass becomes the UT transform (W, U) and a state
// pass in WY form; rank1_scale and the gates carry over.

// CHECK-LABEL: func.func @rank1
// CHECK:         %[[W:.*]], %[[U:.*]] = linattn.ut_transform k(%arg0) v(%arg1) beta(%arg2) gates(%arg3) {chunk_size = 16 : i64, rank1_scale = 2.000000e+00 : f32}
// CHECK-SAME:      -> (tensor<?x?x4x16xf32>, tensor<?x?x4x32xf32>)
// CHECK:         %{{.*}}, %{{.*}}, %{{.*}} = linattn.chunk_state_pass k(%arg0) u(%[[U]]) w(%[[W]]) gates(%arg3) state(%arg4) {chunk_size = 16 : i64}
// CHECK-NOT:     beta(
// With split-w, the negative-eigenvalue rule's W is two bf16 parts.
// SPLIT-LABEL: func.func @rank1
// SPLIT:         %[[W:.*]], %{{.*}} = linattn.ut_transform
// SPLIT-SAME:      -> (tensor<?x?x4x2x16xbf16>, tensor<?x?x4x32xf32>)
// SPLIT:         linattn.chunk_state_pass k(%arg0) u(%{{.*}}) w(%[[W]])
// SPLIT-SAME:      tensor<?x?x4x2x16xbf16>
func.func @rank1(%k: tensor<?x?x2x16xbf16>, %v: tensor<?x?x4x32xbf16>, %beta: tensor<?x?x4xf32>, %g: tensor<?x?x4xf32>, %s0: tensor<?x4x16x32xf32>) -> (tensor<?x?x4x32xf32>, tensor<?x?x4x16x32xf32>, tensor<?x4x16x32xf32>) {
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%v) beta(%beta) gates(%g) state(%s0) {chunk_size = 16 : i64, rank1_scale = 2.0 : f32}
      : (tensor<?x?x2x16xbf16>, tensor<?x?x4x32xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x4x16x32xf32>) -> (tensor<?x?x4x32xf32>, tensor<?x?x4x16x32xf32>, tensor<?x4x16x32xf32>)
  return %d, %states, %final : tensor<?x?x4x32xf32>, tensor<?x?x4x16x32xf32>, tensor<?x4x16x32xf32>
}

// -----

// The delta rule (rank1_scale = 1) stores W in the keys' type (bf16 here);
// the negative-eigenvalue rule above keeps it f32. U is f32 in both.

// CHECK-LABEL: func.func @delta_rule
// CHECK:         %[[W:.*]], %[[U:.*]] = linattn.ut_transform k(%arg0) v(%arg1) beta(%arg2) {chunk_size = 16 : i64, rank1_scale = 1.000000e+00 : f32}
// CHECK-SAME:      -> (tensor<?x?x4x16xbf16>, tensor<?x?x4x32xf32>)
// CHECK:         linattn.chunk_state_pass k(%arg0) u(%[[U]]) w(%[[W]]) state(%arg3) {chunk_size = 16 : i64}
// CHECK-SAME:      tensor<?x?x4x32xf32>, tensor<?x?x4x16xbf16>, tensor<?x4x16x32xf32>)
// split-w leaves the delta rule's W alone.
// SPLIT-LABEL: func.func @delta_rule
// SPLIT:         linattn.ut_transform
// SPLIT-SAME:      -> (tensor<?x?x4x16xbf16>, tensor<?x?x4x32xf32>)
func.func @delta_rule(%k: tensor<?x?x2x16xbf16>, %v: tensor<?x?x4x32xbf16>, %beta: tensor<?x?x4xf32>, %s0: tensor<?x4x16x32xf32>) -> (tensor<?x?x4x32xf32>, tensor<?x?x4x16x32xf32>, tensor<?x4x16x32xf32>) {
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%v) beta(%beta) state(%s0) {chunk_size = 16 : i64, rank1_scale = 1.0 : f32}
      : (tensor<?x?x2x16xbf16>, tensor<?x?x4x32xbf16>, tensor<?x?x4xf32>, tensor<?x4x16x32xf32>) -> (tensor<?x?x4x32xf32>, tensor<?x?x4x16x32xf32>, tensor<?x4x16x32xf32>)
  return %d, %states, %final : tensor<?x?x4x32xf32>, tensor<?x?x4x16x32xf32>, tensor<?x4x16x32xf32>
}

// -----

// A state pass without a rank-1 term is left alone.

// CHECK-LABEL: func.func @no_rank1
// CHECK-NOT:     linattn.ut_transform
// CHECK:         linattn.chunk_state_pass k(%arg0) u(%arg1) state(%arg2) {chunk_size = 16 : i64}
func.func @no_rank1(%k: tensor<?x?x2x16xf32>, %v: tensor<?x?x2x8xf32>, %s0: tensor<?x2x16x8xf32>) -> (tensor<?x?x2x8xf32>, tensor<?x?x2x16x8xf32>, tensor<?x2x16x8xf32>) {
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%v) state(%s0) {chunk_size = 16 : i64}
      : (tensor<?x?x2x16xf32>, tensor<?x?x2x8xf32>, tensor<?x2x16x8xf32>) -> (tensor<?x?x2x8xf32>, tensor<?x?x2x16x8xf32>, tensor<?x2x16x8xf32>)
  return %d, %states, %final : tensor<?x?x2x8xf32>, tensor<?x?x2x16x8xf32>, tensor<?x2x16x8xf32>
}

// -----

// split-w keeps an f32 W for f32 keys (no 16-bit type to split into) and
// for a state pass the selector gave to the segment scan (its ops take W
// whole).

// SPLIT-LABEL: func.func @negeig_f32_keys
// SPLIT:         linattn.ut_transform
// SPLIT-SAME:      -> (tensor<?x?x2x16xf32>, tensor<?x?x2x8xf32>)
func.func @negeig_f32_keys(%k: tensor<?x?x2x16xf32>, %v: tensor<?x?x2x8xf32>, %beta: tensor<?x?x2xf32>, %s0: tensor<?x2x16x8xf32>) -> (tensor<?x?x2x8xf32>, tensor<?x?x2x16x8xf32>, tensor<?x2x16x8xf32>) {
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%v) beta(%beta) state(%s0) {chunk_size = 16 : i64, rank1_scale = 2.0 : f32}
      : (tensor<?x?x2x16xf32>, tensor<?x?x2x8xf32>, tensor<?x?x2xf32>, tensor<?x2x16x8xf32>) -> (tensor<?x?x2x8xf32>, tensor<?x?x2x16x8xf32>, tensor<?x2x16x8xf32>)
  return %d, %states, %final : tensor<?x?x2x8xf32>, tensor<?x?x2x16x8xf32>, tensor<?x2x16x8xf32>
}

// SPLIT-LABEL: func.func @negeig_segment_scan
// SPLIT:         linattn.ut_transform
// SPLIT-SAME:      -> (tensor<?x?x2x16xf32>, tensor<?x?x2x8xf32>)
// SPLIT:         linattn.chunk_state_pass
// SPLIT-SAME:      linattn.strategy = "segment-scan"
func.func @negeig_segment_scan(%k: tensor<?x?x2x16xbf16>, %v: tensor<?x?x2x8xbf16>, %beta: tensor<?x?x2xf32>, %s0: tensor<?x2x16x8xf32>) -> (tensor<?x?x2x8xf32>, tensor<?x?x2x16x8xf32>, tensor<?x2x16x8xf32>) {
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%v) beta(%beta) state(%s0) {chunk_size = 16 : i64, rank1_scale = 2.0 : f32, linattn.strategy = "segment-scan"}
      : (tensor<?x?x2x16xbf16>, tensor<?x?x2x8xbf16>, tensor<?x?x2xf32>, tensor<?x2x16x8xf32>) -> (tensor<?x?x2x8xf32>, tensor<?x?x2x16x8xf32>, tensor<?x2x16x8xf32>)
  return %d, %states, %final : tensor<?x?x2x8xf32>, tensor<?x?x2x16x8xf32>, tensor<?x2x16x8xf32>
}
