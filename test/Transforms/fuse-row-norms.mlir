// RUN: linattn-opt %s --linattn-fuse-row-norms -split-input-file | FileCheck %s

// qk_l2norm factored in a forward: k's norms read by the UT transform, q's
// by the output; both kernels form them and the rnorms go.

// CHECK-LABEL: func.func @forward(
// CHECK-NOT:     linattn.rnorm
// CHECK:         linattn.ut_transform k(%{{[^)]+}}) v(%{{[^)]+}}) beta(%{{[^)]+}}) raw_gates(%{{[^)]+}}) {chunk_size = 64 : i64, k_l2norm, rank1_scale = 1.000000e+00 : f32}
// CHECK:         linattn.chunk_state_pass
// CHECK:         linattn.chunk_output q(%{{[^)]+}}) k(%{{[^)]+}}) new_values({{.*}}q_l2norm
func.func @forward(%q: tensor<?x?x2x64xbf16>, %k: tensor<?x?x2x64xbf16>, %v: tensor<?x?x4x64xbf16>, %g: tensor<?x?x4xf32>, %beta: tensor<?x?x4xf32>, %s0: tensor<?x4x64x64xf32>) -> (tensor<?x?x4x64xbf16>, tensor<?x4x64x64xf32>) {
  %rq = linattn.rnorm %q : tensor<?x?x2x64xbf16> -> tensor<?x?x2xf32>
  %rk = linattn.rnorm %k : tensor<?x?x2x64xbf16> -> tensor<?x?x2xf32>
  %w, %u, %G = linattn.ut_transform k(%k) k_rnorm(%rk) v(%v) beta(%beta) raw_gates(%g) {chunk_size = 64 : i64, rank1_scale = 1.000000e+00 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2xf32>, tensor<?x?x4x64xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> (tensor<?x?x4x64xbf16>, tensor<?x?x4x64xf32>, tensor<?x?x4xf32>)
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) w(%w) gates(%G) state(%s0) {chunk_size = 64 : i64}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xbf16>, tensor<?x?x4xf32>, tensor<?x4x64x64xf32>) -> (tensor<?x?x4x64xbf16>, tensor<?x?x4x64x64xbf16>, tensor<?x4x64x64xf32>)
  %o = linattn.chunk_output q(%q) q_rnorm(%rq) k(%k) new_values(%d) states(%states) gates(%G) {chunk_size = 64 : i64, scale = 0.125 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2xf32>, tensor<?x?x2x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4x64x64xbf16>, tensor<?x?x4xf32>) -> tensor<?x?x4x64xbf16>
  return %o, %final : tensor<?x?x4x64xbf16>, tensor<?x4x64x64xf32>
}

// -----

// An rnorm with another reader (the rank-1 product form's state pass takes
// k_rnorm) stays, and so does its UT transform's operand.

// CHECK-LABEL: func.func @other_reader(
// CHECK:         %[[RK:.*]] = linattn.rnorm
// CHECK:         linattn.ut_transform {{.*}}k_rnorm(%[[RK]])
// CHECK-NOT:     k_l2norm
// CHECK:         linattn.chunk_state_pass {{.*}}k_rnorm(%[[RK]])
func.func @other_reader(%k: tensor<?x?x2x64xbf16>, %v: tensor<?x?x2x64xbf16>, %beta: tensor<?x?x2xf32>, %s0: tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xf32>, tensor<?x2x64x64xf32>) {
  %rk = linattn.rnorm %k : tensor<?x?x2x64xbf16> -> tensor<?x?x2xf32>
  %w, %u = linattn.ut_transform k(%k) k_rnorm(%rk) v(%v) beta(%beta) {chunk_size = 64 : i64, rank1_scale = 1.000000e+00 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2xf32>, tensor<?x?x2x64xbf16>, tensor<?x?x2xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>)
  %d, %states, %final = linattn.chunk_state_pass k(%k) k_rnorm(%rk) u(%v) beta(%beta) state(%s0) {chunk_size = 64 : i64, rank1_scale = 1.000000e+00 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2xf32>, tensor<?x?x2x64xbf16>, tensor<?x?x2xf32>, tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xf32>, tensor<?x?x2x64x64xf32>, tensor<?x2x64x64xf32>)
  return %u, %final : tensor<?x?x2x64xf32>, tensor<?x2x64x64xf32>
}

// -----

// The norms of other rows than the op reads (another tensor's) stay an
// operand: the kernel could not form them from its own tile.

// CHECK-LABEL: func.func @other_rows(
// CHECK:         %[[RX:.*]] = linattn.rnorm
// CHECK:         linattn.ut_transform {{.*}}k_rnorm(%[[RX]])
// CHECK-NOT:     k_l2norm
func.func @other_rows(%x: tensor<?x?x2x64xbf16>, %k: tensor<?x?x2x64xbf16>, %v: tensor<?x?x2x64xbf16>, %beta: tensor<?x?x2xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>) {
  %rx = linattn.rnorm %x : tensor<?x?x2x64xbf16> -> tensor<?x?x2xf32>
  %w, %u = linattn.ut_transform k(%k) k_rnorm(%rx) v(%v) beta(%beta) {chunk_size = 64 : i64, rank1_scale = 1.000000e+00 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2xf32>, tensor<?x?x2x64xbf16>, tensor<?x?x2xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>)
  return %w, %u : tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>
}

// -----

// The passes after it keep the fused form: fusing the cumsum into a UT
// transform that forms its norms keeps `k_l2norm` (the pipeline runs the
// row norms' fusion last, but linattn-opt takes any order).
// RUN: linattn-opt %s --linattn-fuse-row-norms --linattn-fuse-chunk-cumsum -split-input-file | FileCheck %s --check-prefix=ORDER
// CHECK-LABEL: func.func @cumsum_after(
// CHECK:         linattn.ut_transform {{.*}} gates({{.*}}k_l2norm
// ORDER-LABEL: func.func @cumsum_after(
// ORDER-NOT:     linattn.rnorm
// ORDER:         linattn.ut_transform {{.*}} raw_gates({{.*}}k_l2norm
func.func @cumsum_after(%k: tensor<?x?x2x64xbf16>, %v: tensor<?x?x2x64xbf16>, %g: tensor<?x?x2xf32>, %beta: tensor<?x?x2xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>, tensor<?x?x2xf32>) {
  %rk = linattn.rnorm %k : tensor<?x?x2x64xbf16> -> tensor<?x?x2xf32>
  %G = linattn.chunk_cumsum %g {chunk_size = 64 : i64} : tensor<?x?x2xf32> -> tensor<?x?x2xf32>
  %w, %u = linattn.ut_transform k(%k) k_rnorm(%rk) v(%v) beta(%beta) gates(%G) {chunk_size = 64 : i64, rank1_scale = 1.000000e+00 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2xf32>, tensor<?x?x2x64xbf16>, tensor<?x?x2xf32>, tensor<?x?x2xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>)
  return %w, %u, %G : tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>, tensor<?x?x2xf32>
}
