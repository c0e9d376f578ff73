// RUN: linattn-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(linattn-segment-chunk-states{segment-chunks=4}))' | FileCheck %s
// RUN: not linattn-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(linattn-segment-chunk-states{segment-chunks=0}))' 2>&1 | FileCheck %s --check-prefix=ZERO

// ZERO: segment-chunks must be positive, got 0

// A state pass with row gates and its output: the segmented pass returns
// each segment's end ([B, NS, HV, K, V]), segment_carries composes them
// (carries in the chunk states' type, the f32 final state) and the output
// adds the carries back.

// CHECK-LABEL: func.func @row_gates
// CHECK:         %[[D:.*]], %[[STATES:.*]], %[[ENDS:.*]] = linattn.chunk_state_pass k(%arg0) u(%arg1) gates(%arg2) state(%arg3) {chunk_size = 64 : i64, segment_chunks = 4 : i64}
// CHECK-SAME:      -> (tensor<?x?x2x32xbf16>, tensor<?x?x2x16x32xbf16>, tensor<?x?x2x16x32xf32>)
// CHECK:         %[[CARRIES:.*]], %[[FINAL:.*]] = linattn.segment_carries ends(%[[ENDS]]) gates(%arg2) {chunk_size = 64 : i64, segment_chunks = 4 : i64}
// CHECK-SAME:      -> (tensor<?x?x2x16x32xbf16>, tensor<?x2x16x32xf32>)
// CHECK:         %[[O:.*]] = linattn.chunk_output q(%arg4) k(%arg0) new_values(%[[D]]) states(%[[STATES]]) gates(%arg2) carries(%[[CARRIES]]) {chunk_size = 64 : i64, scale = 2.500000e-01 : f32, segment_chunks = 4 : i64}
// CHECK:         return %[[O]], %[[FINAL]]
func.func @row_gates(%k: tensor<?x?x1x16xbf16>, %v: tensor<?x?x2x32xbf16>, %g: tensor<?x?x2xf32>, %s0: tensor<?x2x16x32xf32>, %q: tensor<?x?x1x16xbf16>) -> (tensor<?x?x2x32xbf16>, tensor<?x2x16x32xf32>) {
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%v) gates(%g) state(%s0) {chunk_size = 64 : i64}
      : (tensor<?x?x1x16xbf16>, tensor<?x?x2x32xbf16>, tensor<?x?x2xf32>, tensor<?x2x16x32xf32>) -> (tensor<?x?x2x32xbf16>, tensor<?x?x2x16x32xbf16>, tensor<?x2x16x32xf32>)
  %o = linattn.chunk_output q(%q) k(%k) new_values(%d) states(%states) gates(%g) {chunk_size = 64 : i64, scale = 0.25 : f32}
      : (tensor<?x?x1x16xbf16>, tensor<?x?x1x16xbf16>, tensor<?x?x2x32xbf16>, tensor<?x?x2x16x32xbf16>, tensor<?x?x2xf32>) -> tensor<?x?x2x32xbf16>
  return %o, %final : tensor<?x?x2x32xbf16>, tensor<?x2x16x32xf32>
}

// -----

// A static T: NS = ceil(ceil(300 / 64) / 4) = 2; no gates (linear
// attention): segment_carries takes none.

// CHECK-LABEL: func.func @static_no_gates
// CHECK:         linattn.chunk_state_pass k(%arg0) u(%arg1) state(%arg2) {chunk_size = 64 : i64, segment_chunks = 4 : i64}
// CHECK-SAME:      -> (tensor<1x300x1x16xf32>, tensor<1x5x1x16x16xf32>, tensor<1x2x1x16x16xf32>)
// CHECK:         linattn.segment_carries ends(%{{.*}}) {chunk_size = 64 : i64, segment_chunks = 4 : i64} : (tensor<1x2x1x16x16xf32>) -> (tensor<1x2x1x16x16xf32>, tensor<1x1x16x16xf32>)
func.func @static_no_gates(%k: tensor<1x300x1x16xf32>, %v: tensor<1x300x1x16xf32>, %s0: tensor<1x1x16x16xf32>, %q: tensor<1x300x1x16xf32>) -> (tensor<1x300x1x16xf32>, tensor<1x1x16x16xf32>) {
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%v) state(%s0) {chunk_size = 64 : i64}
      : (tensor<1x300x1x16xf32>, tensor<1x300x1x16xf32>, tensor<1x1x16x16xf32>) -> (tensor<1x300x1x16xf32>, tensor<1x5x1x16x16xf32>, tensor<1x1x16x16xf32>)
  %o = linattn.chunk_output q(%q) k(%k) new_values(%d) states(%states) {chunk_size = 64 : i64, scale = 0.25 : f32}
      : (tensor<1x300x1x16xf32>, tensor<1x300x1x16xf32>, tensor<1x300x1x16xf32>, tensor<1x5x1x16x16xf32>) -> tensor<1x300x1x16xf32>
  return %o, %final : tensor<1x300x1x16xf32>, tensor<1x1x16x16xf32>
}

// -----

// The WY form (a rank-1 term: matrix transitions) and per-key gates
// (diagonal ones) compose into K x K maps: segment_maps ([A_s | E_s],
// K + V = 32 columns), segment_entries (every segment's entering state and
// the final state), and the state pass again, every segment entered from
// its state ([B, NS, HV, K, V]); no carries.

// CHECK-LABEL: func.func @not_scalar
// CHECK:         %[[MAPS:.*]] = linattn.segment_maps k(%arg0) u(%arg1) w(%arg2) {chunk_size = 64 : i64, segment_chunks = 4 : i64}
// CHECK-SAME:      -> tensor<?x?x1x16x32xf32>
// CHECK:         %[[ENTRIES:.*]], %[[FINAL:.*]] = linattn.segment_entries maps(%[[MAPS]]) state(%arg4)
// CHECK-SAME:      -> (tensor<?x?x1x16x16xf32>, tensor<?x1x16x16xf32>)
// CHECK:         linattn.chunk_state_pass k(%arg0) u(%arg1) w(%arg2) state(%[[ENTRIES]]) {chunk_size = 64 : i64, segment_chunks = 4 : i64}
// CHECK:         %[[MAPS2:.*]] = linattn.segment_maps k(%arg0) u(%arg1) gates(%arg3)
// CHECK:         %{{.*}}, %[[FINAL2:.*]] = linattn.segment_entries maps(%[[MAPS2]]) state(%arg4)
// CHECK-NOT:     linattn.segment_carries
// CHECK:         return %[[FINAL]], %[[FINAL2]]
func.func @not_scalar(%k: tensor<?x?x1x16xbf16>, %u: tensor<?x?x1x16xf32>, %w: tensor<?x?x1x16xbf16>, %gk: tensor<?x?x1x16xf32>, %s0: tensor<?x1x16x16xf32>) -> (tensor<?x1x16x16xf32>, tensor<?x1x16x16xf32>) {
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) w(%w) state(%s0) {chunk_size = 64 : i64}
      : (tensor<?x?x1x16xbf16>, tensor<?x?x1x16xf32>, tensor<?x?x1x16xbf16>, tensor<?x1x16x16xf32>) -> (tensor<?x?x1x16xf32>, tensor<?x?x1x16x16xf32>, tensor<?x1x16x16xf32>)
  %d2, %states2, %final2 = linattn.chunk_state_pass k(%k) u(%u) gates(%gk) state(%s0) {chunk_size = 64 : i64}
      : (tensor<?x?x1x16xbf16>, tensor<?x?x1x16xf32>, tensor<?x?x1x16xf32>, tensor<?x1x16x16xf32>) -> (tensor<?x?x1x16xf32>, tensor<?x?x1x16x16xf32>, tensor<?x1x16x16xf32>)
  return %final, %final2 : tensor<?x1x16x16xf32>, tensor<?x1x16x16xf32>
}

// -----

// Chunk states read by something other than an output stay whole.

// CHECK-LABEL: func.func @other_user
// CHECK-NOT:     segment_chunks
// CHECK:         return
func.func @other_user(%k: tensor<?x?x1x16xf32>, %v: tensor<?x?x1x16xf32>, %s0: tensor<?x1x16x16xf32>) -> tensor<?x?x1x16x16xf32> {
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%v) state(%s0) {chunk_size = 64 : i64}
      : (tensor<?x?x1x16xf32>, tensor<?x?x1x16xf32>, tensor<?x1x16x16xf32>) -> (tensor<?x?x1x16xf32>, tensor<?x?x1x16x16xf32>, tensor<?x1x16x16xf32>)
  return %states : tensor<?x?x1x16x16xf32>
}

// -----

// A WY-form state pass whose chunk states something other than an output
// reads (the backward's recomputed states) stays one chain.

// CHECK-LABEL: func.func @wy_other_user
// CHECK-NOT:     linattn.segment_maps
// CHECK-NOT:     segment_chunks
// CHECK:         return
func.func @wy_other_user(%k: tensor<?x?x1x16xbf16>, %u: tensor<?x?x1x16xf32>, %w: tensor<?x?x1x16xbf16>, %s0: tensor<?x1x16x16xf32>) -> tensor<?x?x1x16x16xf32> {
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) w(%w) state(%s0) {chunk_size = 64 : i64}
      : (tensor<?x?x1x16xbf16>, tensor<?x?x1x16xf32>, tensor<?x?x1x16xbf16>, tensor<?x1x16x16xf32>) -> (tensor<?x?x1x16xf32>, tensor<?x?x1x16x16xf32>, tensor<?x1x16x16xf32>)
  return %states : tensor<?x?x1x16x16xf32>
}
