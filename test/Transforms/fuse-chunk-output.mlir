// RUN: linattn-opt %s --linattn-fuse-chunk-output -split-input-file | FileCheck %s

// A state pass whose chunk states and new values only its output reads:
// one op, standing where the pass stood (q comes before it); the final
// state's readers take the fused op's.

// CHECK-LABEL: func.func @forward(
// CHECK-NOT:     linattn.chunk_state_pass k
// CHECK-NOT:     linattn.chunk_output
// CHECK:         %[[O:.*]], %[[F:.*]] = linattn.chunk_state_pass_output q(%arg0) k(%arg1) u(%arg2) w(%arg3) gates(%arg4) state(%arg5) {chunk_size = 64 : i64, q_l2norm, scale = 1.250000e-01 : f32}
// CHECK:         return %[[O]], %[[F]]
func.func @forward(%q: tensor<?x?x2x64xbf16>, %k: tensor<?x?x2x64xbf16>, %u: tensor<?x?x4x64xf32>, %w: tensor<?x?x4x64xbf16>, %G: tensor<?x?x4xf32>, %s0: tensor<?x4x64x64xf32>) -> (tensor<?x?x4x64xbf16>, tensor<?x4x64x64xf32>) {
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) w(%w) gates(%G) state(%s0) {chunk_size = 64 : i64}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xbf16>, tensor<?x?x4xf32>, tensor<?x4x64x64xf32>) -> (tensor<?x?x4x64xbf16>, tensor<?x?x4x64x64xbf16>, tensor<?x4x64x64xf32>)
  %o = linattn.chunk_output q(%q) k(%k) new_values(%d) states(%states) gates(%G) {chunk_size = 64 : i64, q_l2norm, scale = 0.125 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4x64x64xbf16>, tensor<?x?x4xf32>) -> tensor<?x?x4x64xbf16>
  return %o, %final : tensor<?x?x4x64xbf16>, tensor<?x4x64x64xf32>
}

// -----

// The run-time forms: the output of an scf.if's states goes into both
// branches; the 32-column pass fuses, the wide one (linattn.state_columns)
// keeps its output kernel. The new if stands where the old one stood: a
// reader of the final state before the output still sees it defined.

// CHECK-LABEL: func.func @branches(
// CHECK:         %[[R:.*]]:2 = scf.if %arg6 -> (tensor<?x4x64x64xf32>, tensor<?x?x4x64xbf16>) {
// CHECK:           %[[O:.*]], %[[F:.*]] = linattn.chunk_state_pass_output
// CHECK:           scf.yield %[[F]], %[[O]]
// CHECK:         } else {
// CHECK:           %{{.*}}, %{{.*}}, %[[F2:.*]] = linattn.chunk_state_pass {{.*}}linattn.state_columns = 64
// CHECK:           %[[O2:.*]] = linattn.chunk_output
// CHECK:           scf.yield %[[F2]], %[[O2]]
// CHECK:         %[[EARLY:.*]] = tensor.dim %[[R]]#0
// CHECK:         return %[[R]]#1, %[[R]]#0, %[[EARLY]]
func.func @branches(%q: tensor<?x?x2x64xbf16>, %k: tensor<?x?x2x64xbf16>, %u: tensor<?x?x4x64xf32>, %w: tensor<?x?x4x64xbf16>, %G: tensor<?x?x4xf32>, %s0: tensor<?x4x64x64xf32>, %narrow: i1) -> (tensor<?x?x4x64xbf16>, tensor<?x4x64x64xf32>, index) {
  %c0 = arith.constant 0 : index
  %r:3 = scf.if %narrow -> (tensor<?x?x4x64xbf16>, tensor<?x?x4x64x64xbf16>, tensor<?x4x64x64xf32>) {
    %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) w(%w) gates(%G) state(%s0) {chunk_size = 64 : i64}
        : (tensor<?x?x2x64xbf16>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xbf16>, tensor<?x?x4xf32>, tensor<?x4x64x64xf32>) -> (tensor<?x?x4x64xbf16>, tensor<?x?x4x64x64xbf16>, tensor<?x4x64x64xf32>)
    scf.yield %d, %states, %final : tensor<?x?x4x64xbf16>, tensor<?x?x4x64x64xbf16>, tensor<?x4x64x64xf32>
  } else {
    %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) w(%w) gates(%G) state(%s0) {chunk_size = 64 : i64, linattn.state_columns = 64 : i64}
        : (tensor<?x?x2x64xbf16>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xbf16>, tensor<?x?x4xf32>, tensor<?x4x64x64xf32>) -> (tensor<?x?x4x64xbf16>, tensor<?x?x4x64x64xbf16>, tensor<?x4x64x64xf32>)
    scf.yield %d, %states, %final : tensor<?x?x4x64xbf16>, tensor<?x?x4x64x64xbf16>, tensor<?x4x64x64xf32>
  }
  %early = tensor.dim %r#2, %c0 : tensor<?x4x64x64xf32>
  %o = linattn.chunk_output q(%q) k(%k) new_values(%r#0) states(%r#1) gates(%G) {chunk_size = 64 : i64, scale = 0.125 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4x64x64xbf16>, tensor<?x?x4xf32>) -> tensor<?x?x4x64xbf16>
  return %o, %r#2, %early : tensor<?x?x4x64xbf16>, tensor<?x4x64x64xf32>, index
}

// -----

// What the fused kernel does not take keeps the pair: chunk states read
// by another op too, f32 chunk states, no W (D = u), a segmented pass, K
// above 128.

// CHECK-LABEL: func.func @kept(
// CHECK-NOT:     linattn.chunk_state_pass_output
// CHECK-COUNT-5: linattn.chunk_output
// CHECK-NOT:     linattn.chunk_state_pass_output
func.func @kept(%q: tensor<?x?x2x64xbf16>, %k: tensor<?x?x2x64xbf16>, %u: tensor<?x?x4x64xf32>, %w: tensor<?x?x4x64xbf16>, %G: tensor<?x?x4xf32>, %s0: tensor<?x4x64x64xf32>, %v: tensor<?x?x4x64xbf16>, %k2: tensor<?x?x2x256xbf16>, %u2: tensor<?x?x4x64xf32>, %w2: tensor<?x?x4x256xbf16>, %s2: tensor<?x4x256x64xf32>, %q2: tensor<?x?x2x256xbf16>) -> (tensor<?x?x4x64xbf16>, tensor<?x?x4x64x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4x64xbf16>) {
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) w(%w) gates(%G) state(%s0) {chunk_size = 64 : i64}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xbf16>, tensor<?x?x4xf32>, tensor<?x4x64x64xf32>) -> (tensor<?x?x4x64xbf16>, tensor<?x?x4x64x64xbf16>, tensor<?x4x64x64xf32>)
  %o = linattn.chunk_output q(%q) k(%k) new_values(%d) states(%states) gates(%G) {chunk_size = 64 : i64, scale = 0.125 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4x64x64xbf16>, tensor<?x?x4xf32>) -> tensor<?x?x4x64xbf16>
  %d1, %states1, %final1 = linattn.chunk_state_pass k(%k) u(%u) w(%w) gates(%G) state(%s0) {chunk_size = 64 : i64}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xbf16>, tensor<?x?x4xf32>, tensor<?x4x64x64xf32>) -> (tensor<?x?x4x64xbf16>, tensor<?x?x4x64x64xf32>, tensor<?x4x64x64xf32>)
  %o1 = linattn.chunk_output q(%q) k(%k) new_values(%d1) states(%states1) gates(%G) {chunk_size = 64 : i64, scale = 0.125 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4x64x64xf32>, tensor<?x?x4xf32>) -> tensor<?x?x4x64xbf16>
  %d2, %states2, %final2 = linattn.chunk_state_pass k(%k) u(%v) gates(%G) state(%s0) {chunk_size = 64 : i64}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4xf32>, tensor<?x4x64x64xf32>) -> (tensor<?x?x4x64xbf16>, tensor<?x?x4x64x64xbf16>, tensor<?x4x64x64xf32>)
  %o2 = linattn.chunk_output q(%q) k(%k) new_values(%d2) states(%states2) gates(%G) {chunk_size = 64 : i64, scale = 0.125 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4x64x64xbf16>, tensor<?x?x4xf32>) -> tensor<?x?x4x64xbf16>
  %d3, %states3, %final3 = linattn.chunk_state_pass k(%k) u(%v) gates(%G) state(%s0) {chunk_size = 64 : i64, segment_chunks = 4 : i64}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4xf32>, tensor<?x4x64x64xf32>) -> (tensor<?x?x4x64xbf16>, tensor<?x?x4x64x64xbf16>, tensor<?x?x4x64x64xf32>)
  %o3 = linattn.chunk_output q(%q) k(%k) new_values(%d3) states(%states3) gates(%G) {chunk_size = 64 : i64, scale = 0.125 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4x64x64xbf16>, tensor<?x?x4xf32>) -> tensor<?x?x4x64xbf16>
  %d4, %states4, %final4 = linattn.chunk_state_pass k(%k2) u(%u2) w(%w2) gates(%G) state(%s2) {chunk_size = 64 : i64}
      : (tensor<?x?x2x256xbf16>, tensor<?x?x4x64xf32>, tensor<?x?x4x256xbf16>, tensor<?x?x4xf32>, tensor<?x4x256x64xf32>) -> (tensor<?x?x4x64xbf16>, tensor<?x?x4x256x64xbf16>, tensor<?x4x256x64xf32>)
  %o4 = linattn.chunk_output q(%q2) k(%k2) new_values(%d4) states(%states4) gates(%G) {chunk_size = 64 : i64, scale = 0.125 : f32}
      : (tensor<?x?x2x256xbf16>, tensor<?x?x2x256xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4x256x64xbf16>, tensor<?x?x4xf32>) -> tensor<?x?x4x64xbf16>
  return %o, %states, %o1, %o2, %o3, %o4 : tensor<?x?x4x64xbf16>, tensor<?x?x4x64x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4x64xbf16>
}
