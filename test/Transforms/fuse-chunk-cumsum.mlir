// RUN: linattn-opt %s --linattn-fuse-chunk-cumsum -split-input-file | FileCheck %s

// A scalar cumsum read first by a UT transform: the transform sums the raw
// gates itself and returns G, which the state pass and the output read.

// CHECK-LABEL: func.func @into_ut_transform(
// CHECK-SAME:      %{{[^:]+}}: tensor<?x?x2x64xbf16>, %[[K:[^:]+]]: tensor<?x?x2x64xbf16>, %[[V:[^:]+]]: tensor<?x?x2x64xbf16>, %[[G:[^:]+]]: tensor<?x?x2xf32>, %[[BETA:[^:]+]]: tensor<?x?x2xf32>
// CHECK-NOT:     linattn.chunk_cumsum
// CHECK:         %[[W:.*]], %[[U:.*]], %[[GC:.*]] = linattn.ut_transform k(%[[K]]) v(%[[V]]) beta(%[[BETA]]) raw_gates(%[[G]]) {chunk_size = 64 : i64, rank1_scale = 1.000000e+00 : f32}
// CHECK:         linattn.chunk_state_pass k(%[[K]]) u(%[[U]]) w(%[[W]]) gates(%[[GC]])
// CHECK:         linattn.chunk_output {{.*}} gates(%[[GC]])
func.func @into_ut_transform(%q: tensor<?x?x2x64xbf16>, %k: tensor<?x?x2x64xbf16>, %v: tensor<?x?x2x64xbf16>, %g: tensor<?x?x2xf32>, %beta: tensor<?x?x2xf32>, %s0: tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x2x64x64xf32>) {
  %G = linattn.chunk_cumsum %g {chunk_size = 64 : i64} : tensor<?x?x2xf32> -> tensor<?x?x2xf32>
  %w, %u = linattn.ut_transform k(%k) v(%v) beta(%beta) gates(%G) {chunk_size = 64 : i64, rank1_scale = 1.000000e+00 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2xf32>, tensor<?x?x2xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>)
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) w(%w) gates(%G) state(%s0) {chunk_size = 64 : i64}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xbf16>, tensor<?x?x2xf32>, tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x?x2x64x64xbf16>, tensor<?x2x64x64xf32>)
  %o = linattn.chunk_output q(%q) k(%k) new_values(%d) states(%states) gates(%G) {chunk_size = 64 : i64, scale = 0.125 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64x64xbf16>, tensor<?x?x2xf32>) -> tensor<?x?x2x64xbf16>
  return %o, %final : tensor<?x?x2x64xbf16>, tensor<?x2x64x64xf32>
}

// -----

// A cumsum read before the UT transform (here by a state pass) stays: the
// transform could not have computed what an earlier op reads.

// CHECK-LABEL: func.func @read_before_ut(
// CHECK:         %[[G:.*]] = linattn.chunk_cumsum
// CHECK:         linattn.chunk_state_pass {{.*}} gates(%[[G]])
// CHECK:         linattn.ut_transform {{.*}} gates(%[[G]])
// CHECK-NOT:     raw_gates
func.func @read_before_ut(%k: tensor<?x?x2x64xbf16>, %v: tensor<?x?x2x64xbf16>, %beta: tensor<?x?x2xf32>, %g: tensor<?x?x2xf32>, %s0: tensor<?x2x64x64xf32>) -> (tensor<?x2x64x64xf32>, tensor<?x?x2x64xbf16>) {
  %G = linattn.chunk_cumsum %g {chunk_size = 64 : i64} : tensor<?x?x2xf32> -> tensor<?x?x2xf32>
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%v) gates(%G) state(%s0) {chunk_size = 64 : i64}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2xf32>, tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x?x2x64x64xbf16>, tensor<?x2x64x64xf32>)
  %w, %u = linattn.ut_transform k(%k) v(%v) beta(%beta) gates(%G) {chunk_size = 64 : i64, rank1_scale = 1.000000e+00 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2xf32>, tensor<?x?x2xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>)
  return %final, %w : tensor<?x2x64x64xf32>, tensor<?x?x2x64xbf16>
}

// -----

// A cumsum of another chunk size than the transform's stays.

// CHECK-LABEL: func.func @other_chunk_size(
// CHECK:         linattn.chunk_cumsum
// CHECK:         linattn.ut_transform {{.*}} gates(
func.func @other_chunk_size(%k: tensor<?x?x2x64xbf16>, %v: tensor<?x?x2x64xbf16>, %beta: tensor<?x?x2xf32>, %g: tensor<?x?x2xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>) {
  %G = linattn.chunk_cumsum %g {chunk_size = 32 : i64} : tensor<?x?x2xf32> -> tensor<?x?x2xf32>
  %w, %u = linattn.ut_transform k(%k) v(%v) beta(%beta) gates(%G) {chunk_size = 64 : i64, rank1_scale = 1.000000e+00 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2xf32>, tensor<?x?x2xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>)
  return %w, %u : tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>
}

// -----

// A per-key cumsum read first by a state pass without a rank-1 term (GLA):
// it moves to just before the state pass and also returns the keys decayed
// to their chunk's end and the chunk totals, which the state pass takes
// (decayed_keys); the output still reads G.

// CHECK-LABEL: func.func @decaying_keys(
// CHECK-SAME:      %{{[^:]+}}: tensor<?x?x2x64xbf16>, %[[K:[^:]+]]: tensor<?x?x2x64xbf16>, %[[V:[^:]+]]: tensor<?x?x4x64xbf16>, %[[G:[^:]+]]: tensor<?x?x4x64xf32>
// CHECK:         %[[GC:.*]], %[[KD:.*]], %[[TOT:.*]] = linattn.chunk_cumsum %[[G]] keys(%[[K]] : tensor<?x?x2x64xbf16>) {chunk_size = 64 : i64} : tensor<?x?x4x64xf32> -> tensor<?x?x4x64xf32>, tensor<?x?x4x64xbf16>, tensor<?x?x4x64xf32>
// CHECK-NEXT:    linattn.chunk_state_pass k(%[[KD]]) u(%[[V]]) gates(%[[TOT]]) state(%{{.*}}) {chunk_size = 64 : i64, decayed_keys}
// CHECK:         linattn.chunk_output {{.*}} gates(%[[GC]])
func.func @decaying_keys(%q: tensor<?x?x2x64xbf16>, %k: tensor<?x?x2x64xbf16>, %v: tensor<?x?x4x64xbf16>, %g: tensor<?x?x4x64xf32>, %s0: tensor<?x4x64x64xf32>) -> (tensor<?x?x4x64xbf16>, tensor<?x4x64x64xf32>) {
  %G = linattn.chunk_cumsum %g {chunk_size = 64 : i64} : tensor<?x?x4x64xf32> -> tensor<?x?x4x64xf32>
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%v) gates(%G) state(%s0) {chunk_size = 64 : i64}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4x64xf32>, tensor<?x4x64x64xf32>) -> (tensor<?x?x4x64xbf16>, tensor<?x?x4x64x64xbf16>, tensor<?x4x64x64xf32>)
  %o = linattn.chunk_output q(%q) k(%k) new_values(%d) states(%states) gates(%G) {chunk_size = 64 : i64, scale = 0.125 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4x64x64xbf16>, tensor<?x?x4x64xf32>) -> tensor<?x?x4x64xbf16>
  return %o, %final : tensor<?x?x4x64xbf16>, tensor<?x4x64x64xf32>
}

// -----

// A per-key cumsum read first by an output (here before the state pass),
// of keys defined after it: it stays as it is, and so does the state pass.

// CHECK-LABEL: func.func @output_first(
// CHECK:         %[[G:.*]] = linattn.chunk_cumsum %{{.*}} {chunk_size = 64 : i64} : tensor<?x?x2x64xf32> -> tensor<?x?x2x64xf32>
// CHECK:         linattn.chunk_output {{.*}} gates(%[[G]])
// CHECK:         linattn.chunk_state_pass {{.*}} gates(%[[G]]) state(%{{.*}}) {chunk_size = 64 : i64}
// CHECK-NOT:     decayed_keys
func.func @output_first(%q: tensor<?x?x2x64xbf16>, %k0: tensor<?x?x2x64xbf16>, %v: tensor<?x?x2x64xbf16>, %g: tensor<?x?x2x64xf32>, %states: tensor<?x?x2x64x64xbf16>, %s0: tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x2x64x64xf32>) {
  %G = linattn.chunk_cumsum %g {chunk_size = 64 : i64} : tensor<?x?x2x64xf32> -> tensor<?x?x2x64xf32>
  %o = linattn.chunk_output q(%q) k(%k0) new_values(%v) states(%states) gates(%G) {chunk_size = 64 : i64, scale = 0.125 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64x64xbf16>, tensor<?x?x2x64xf32>) -> tensor<?x?x2x64xbf16>
  %k = arith.negf %k0 : tensor<?x?x2x64xbf16>
  %d, %s, %final = linattn.chunk_state_pass k(%k) u(%v) gates(%G) state(%s0) {chunk_size = 64 : i64}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>, tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x?x2x64x64xbf16>, tensor<?x2x64x64xf32>)
  return %o, %final : tensor<?x?x2x64xbf16>, tensor<?x2x64x64xf32>
}

// -----

// KDA: a per-key cumsum read first by the UT transform, then by a WY state
// pass whose keys are defined before the cumsum: the cumsum stays in
// place, also returns the decayed keys and the chunk totals, and the state
// pass takes those with its W; the transform and the output still read G.

// CHECK-LABEL: func.func @kda_in_place(
// CHECK-SAME:      %{{[^:]+}}: tensor<?x?x2x64xbf16>, %[[K:[^:]+]]: tensor<?x?x2x64xbf16>
// CHECK:         %[[GC:.*]], %[[KD:.*]], %[[TOT:.*]] = linattn.chunk_cumsum %{{.*}} keys(%[[K]] : tensor<?x?x2x64xbf16>) {chunk_size = 64 : i64}
// CHECK-NEXT:    %[[W:.*]], %[[U:.*]] = linattn.ut_transform k(%[[K]]) {{.*}} gates(%[[GC]])
// CHECK-NEXT:    linattn.chunk_state_pass k(%[[KD]]) u(%[[U]]) w(%[[W]]) gates(%[[TOT]]) state(%{{.*}}) {chunk_size = 64 : i64, decayed_keys}
// CHECK:         linattn.chunk_output {{.*}} gates(%[[GC]])
func.func @kda_in_place(%q: tensor<?x?x2x64xbf16>, %k: tensor<?x?x2x64xbf16>, %v: tensor<?x?x2x64xbf16>, %g: tensor<?x?x2x64xf32>, %beta: tensor<?x?x2xf32>, %s0: tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x2x64x64xf32>) {
  %G = linattn.chunk_cumsum %g {chunk_size = 64 : i64} : tensor<?x?x2x64xf32> -> tensor<?x?x2x64xf32>
  %w, %u = linattn.ut_transform k(%k) v(%v) beta(%beta) gates(%G) {chunk_size = 64 : i64, rank1_scale = 1.000000e+00 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2xf32>, tensor<?x?x2x64xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>)
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) w(%w) gates(%G) state(%s0) {chunk_size = 64 : i64}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>, tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x?x2x64x64xbf16>, tensor<?x2x64x64xf32>)
  %o = linattn.chunk_output q(%q) k(%k) new_values(%d) states(%states) gates(%G) {chunk_size = 64 : i64, scale = 0.125 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64x64xbf16>, tensor<?x?x2x64xf32>) -> tensor<?x?x2x64xbf16>
  return %o, %final : tensor<?x?x2x64xbf16>, tensor<?x2x64x64xf32>
}
