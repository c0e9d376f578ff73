// RUN: linattn-opt %s --convert-linattn-chunked-to-gpu -split-input-file | FileCheck %s
// RUN: linattn-opt %s --convert-linattn-chunked-to-gpu -split-input-file | FileCheck %s --check-prefix=MMA

// linattn.chunk_grad: the WY factors' share stays loops (P, the back
// substitution's Y and Z, F = c dL with dv and dbeta: three parallel
// nests), then one tensor-core kernel per (chunk, value head, sequence)
// computes dq, dk and the gates' gradient. The output pairs dP are the
// kernel's own (the loops no longer write them).
//
// Shared memory (bf16, K = V = 64, row gates, beta): q and k (64 x 72 x 2
// = 9216 each), dO (9216), D split (2 x 9216), dP~ split (2 x 9216), F * E
// + (F * E)^T split (2 x 9216), S's and H's rows split (4 x 9216), M f32
// (64 x 65 x 4 = 16640), the rows' f64 terms (2 x 2048), <S, H>'s
// partials (1024), gates and c (2 x 256): 142080.
// CHECK-LABEL: func.func @gated_delta(
// CHECK:         scf.parallel
// CHECK:         scf.parallel
// CHECK:         scf.parallel
// CHECK:         arith.constant 142080 : i32
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %{{.*}}, %{{.*}} = %c4{{[_0-9]*}}, %{{.*}} = %{{.*}}) threads(%{{.*}}) in (%{{.*}} = %c128{{[_0-9]*}}
// CHECK-NOT:     linattn.chunk_grad
//
// 448 products per block and warp: dO D^T (8 tiles x 4 k-steps, D split:
// 64) and Q K^T (32); then dO S^T (64), dP~ K (64), D H^T (both split:
// 96), dP~^T Q (64), (F * E + (F * E)^T) K (64).
// MMA-LABEL: func.func @gated_delta(
// MMA-COUNT-448: nvvm.mma.sync
// MMA-NOT:       nvvm.mma.sync
func.func @gated_delta(%q: tensor<?x?x2x64xbf16>, %k: tensor<?x?x2x64xbf16>, %v: tensor<?x?x4x64xbf16>, %beta: tensor<?x?x4xf32>, %g: tensor<?x?x4xf32>, %w: tensor<?x?x4x64xbf16>, %u: tensor<?x?x4x64xf32>, %d: tensor<?x?x4x64xf32>, %s: tensor<?x?x4x64x64xf32>, %do: tensor<?x?x4x64xbf16>, %dd: tensor<?x?x4x64xf32>, %hs: tensor<?x?x4x64x64xf32>) -> (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) {
  %dq, %dk, %dv, %dg, %db = linattn.chunk_grad q(%q) k(%k) v(%v) beta(%beta) gates(%g) w(%w) u(%u) new_values(%d) states(%s) grad_output(%do) grad_new_values(%dd) grad_states(%hs) {chunk_size = 64 : i64, rank1_scale = 1.000000e+00 : f32, scale = 0.125 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4x64xbf16>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64x64xf32>, tensor<?x?x4x64xbf16>, tensor<?x?x4x64xf32>, tensor<?x?x4x64x64xf32>)
      -> (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xbf16>) grad_gates tensor<?x?x4xf32> grad_beta tensor<?x?x4xf32>
  return %dq, %dk, %dv, %dg, %db : tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>
}

// -----

// Per-key gates (GLA): the op stays whole for its loop lowering.
// CHECK-LABEL: func.func @per_key_gates(
// CHECK-NOT:     gpu.launch
// CHECK:         linattn.chunk_grad
func.func @per_key_gates(%q: tensor<?x?x2x64xbf16>, %k: tensor<?x?x2x64xbf16>, %v: tensor<?x?x2x64xbf16>, %g: tensor<?x?x2x64xf32>, %d: tensor<?x?x2x64xf32>, %s: tensor<?x?x2x64x64xf32>, %do: tensor<?x?x2x64xbf16>, %dd: tensor<?x?x2x64xf32>, %hs: tensor<?x?x2x64x64xf32>) -> (tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>) {
  %dq, %dk, %dv, %dg = linattn.chunk_grad q(%q) k(%k) v(%v) gates(%g) new_values(%d) states(%s) grad_output(%do) grad_new_values(%dd) grad_states(%hs) {chunk_size = 64 : i64, scale = 0.125 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64x64xf32>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>, tensor<?x?x2x64x64xf32>)
      -> (tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xbf16>) grad_gates tensor<?x?x2x64xf32>
  return %dq, %dk, %dv, %dg : tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>
}
