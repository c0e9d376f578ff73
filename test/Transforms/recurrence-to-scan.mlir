// RUN: linattn-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(linattn-recurrence-to-scan))' | FileCheck %s

// GLA (per-key gate), GVA with HV = 2H: token maps (g_t, k_t v_t^T), a scan
// over T composing them in log space from the carry-in (0, S_0), and the
// output contraction o = scale S^T q.

// CHECK-DAG: #[[KMAP:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2 floordiv 2, d3)>
// CHECK-DAG: #[[GATE:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @gla
// CHECK:         %[[KV:.*]] = linalg.generic {{.*}} ins(%arg1, %arg2 : tensor<?x?x2x4xf32>, tensor<?x?x4x8xf32>) outs(%{{.*}} : tensor<?x?x4x4x8xf32>)
// CHECK:           arith.mulf
// CHECK:         %[[G0:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<?x4x4xf32>)
// CHECK:         %[[SCAN:.*]]:4 = linattn.scan dimension(1) ins(%arg3, %[[KV]] : tensor<?x?x4x4xf32>, tensor<?x?x4x4x8xf32>) init(%[[G0]], %arg4 : tensor<?x4x4xf32>, tensor<?x4x4x8xf32>) {
// CHECK:         ^bb0(%[[G1:.*]]: tensor<4x4xf32>, %[[B1:.*]]: tensor<4x4x8xf32>, %[[G2:.*]]: tensor<4x4xf32>, %[[B2:.*]]: tensor<4x4x8xf32>):
// CHECK:           %[[G:.*]] = arith.addf %[[G1]], %[[G2]] : tensor<4x4xf32>
// CHECK:           %[[B:.*]] = linalg.generic {indexing_maps = [#[[GATE]], {{.*}}]{{.*}} ins(%[[G2]], %[[B1]], %[[B2]] :
// CHECK:             math.exp
// CHECK:             arith.mulf
// CHECK:             arith.addf
// CHECK:           linattn.yield %[[G]], %[[B]]
// CHECK:         %[[O:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]{{.*}} ins(%[[SCAN]]#1, %arg0
// CHECK:         return %{{.*}}, %[[SCAN]]#3
func.func @gla(%q: tensor<?x?x2x4xf32>, %k: tensor<?x?x2x4xf32>, %v: tensor<?x?x4x8xf32>, %g: tensor<?x?x4x4xf32>, %s0: tensor<?x4x4x8xf32>) -> (tensor<?x?x4x8xf32>, tensor<?x4x4x8xf32>) {
  %o, %s = linattn.recurrence key_gate q(%q) k(%k) v(%v) gate(%g) state(%s0)
      : (tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?x4x8xf32>, tensor<?x?x4x4xf32>, tensor<?x4x4x8xf32>) -> (tensor<?x?x4x8xf32>, tensor<?x4x4x8xf32>)
  return %o, %s : tensor<?x?x4x8xf32>, tensor<?x4x4x8xf32>
}

// -----

// Linear attention: no gate, so the element is k v^T alone and the combiner
// is a sum; bf16 output is narrowed after scaling.

// CHECK-LABEL: func.func @linear_attention
// CHECK:         linattn.scan dimension(1) ins(%{{.*}} : tensor<1x5x1x4x4xf32>) init(%arg3 : tensor<1x1x4x4xf32>) {
// CHECK:         ^bb0(%[[B1:.*]]: tensor<1x4x4xf32>, %[[B2:.*]]: tensor<1x4x4xf32>):
// CHECK:           %[[S:.*]] = arith.addf %[[B1]], %[[B2]] : tensor<1x4x4xf32>
// CHECK:           linattn.yield %[[S]]
// CHECK:         arith.truncf %{{.*}} : f32 to bf16
func.func @linear_attention(%q: tensor<1x5x1x4xbf16>, %k: tensor<1x5x1x4xbf16>, %v: tensor<1x5x1x4xbf16>, %s0: tensor<1x1x4x4xf32>) -> (tensor<1x5x1x4xbf16>, tensor<1x1x4x4xf32>) {
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%s0)
      : (tensor<1x5x1x4xbf16>, tensor<1x5x1x4xbf16>, tensor<1x5x1x4xbf16>, tensor<1x1x4x4xf32>) -> (tensor<1x5x1x4xbf16>, tensor<1x1x4x4xf32>)
  return %o, %s : tensor<1x5x1x4xbf16>, tensor<1x1x4x4xf32>
}

// -----

// Delta rules have no token-scan form and are left alone.

// CHECK-LABEL: func.func @deltanet
// CHECK:         linattn.recurrence delta
// CHECK-NOT:     linattn.scan
func.func @deltanet(%q: tensor<1x5x1x4xf32>, %v: tensor<1x5x1x4xf32>, %beta: tensor<1x5x1xf32>, %s0: tensor<1x1x4x4xf32>) -> (tensor<1x5x1x4xf32>, tensor<1x1x4x4xf32>) {
  %o, %s = linattn.recurrence delta q(%q) k(%q) v(%v) beta(%beta) state(%s0)
      : (tensor<1x5x1x4xf32>, tensor<1x5x1x4xf32>, tensor<1x5x1x4xf32>, tensor<1x5x1xf32>, tensor<1x1x4x4xf32>) -> (tensor<1x5x1x4xf32>, tensor<1x1x4x4xf32>)
  return %o, %s : tensor<1x5x1x4xf32>, tensor<1x1x4x4xf32>
}

// -----

// RetNet: the constant decay gamma is scanned as it is, from the identity
// (1, S_0), composing multiplicatively: exp(log gamma) would round, and the
// rounding would compound over the 1 / (1 - gamma) tokens a state remembers.

// CHECK-LABEL: func.func @retnet
// CHECK-DAG:     %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG:     %[[GAMMA0:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-DAG:     %[[GAMMA1:.*]] = arith.constant 2.500000e-01 : f32
// CHECK:         %[[DECAYS:.*]] = tensor.generate
// CHECK:           %[[HEAD0:.*]] = arith.cmpi eq, %{{.*}}, %c0
// CHECK:           %[[GAMMA:.*]] = arith.select %[[HEAD0]], %[[GAMMA0]], %[[GAMMA1]] : f32
// CHECK:           tensor.yield %[[GAMMA]]
// CHECK:         %[[M0:.*]] = linalg.fill ins(%[[ONE]] : f32) outs(%{{.*}} : tensor<?x2xf32>)
// CHECK:         linattn.scan dimension(1) ins(%[[DECAYS]], %{{.*}} : tensor<?x?x2xf32>, tensor<?x?x2x4x4xf32>) init(%[[M0]], %arg3 :
// CHECK:         ^bb0(%[[M1:.*]]: tensor<2xf32>, %[[B1:.*]]: tensor<2x4x4xf32>, %[[M2:.*]]: tensor<2xf32>, %[[B2:.*]]: tensor<2x4x4xf32>):
// CHECK:           %[[M:.*]] = arith.mulf %[[M1]], %[[M2]] : tensor<2xf32>
// CHECK:           %[[B:.*]] = linalg.generic {{.*}} ins(%[[M2]], %[[B1]], %[[B2]] :
// CHECK-NOT:         math.exp
// CHECK:             arith.mulf
// CHECK:             arith.addf
// CHECK:           linattn.yield %[[M]], %[[B]]
func.func @retnet(%q: tensor<?x?x2x4xf32>, %k: tensor<?x?x2x4xf32>, %v: tensor<?x?x2x4xf32>, %s0: tensor<?x2x4x4xf32>) -> (tensor<?x?x2x4xf32>, tensor<?x2x4x4xf32>) {
  %o, %s = linattn.recurrence constant_decay q(%q) k(%k) v(%v) state(%s0) {decay = array<f32: 0.5, 0.25>}
      : (tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x?x2x4xf32>, tensor<?x2x4x4xf32>) -> (tensor<?x?x2x4xf32>, tensor<?x2x4x4xf32>)
  return %o, %s : tensor<?x?x2x4xf32>, tensor<?x2x4x4xf32>
}
