// RUN: linattn-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(convert-linattn-to-loops))' | FileCheck %s --check-prefix=RAW
// RUN: linattn-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(convert-linattn-to-loops),canonicalize,cse)' | FileCheck %s

// Gated delta rule with dynamic B and T, HV = 2H: the result buffers, and one column j of one (b, hv) state per parallel
// iteration, kept in a private K-vector across the loop over t:
//   u = sum_i k_i S_ij,  S_ij <- exp(g) (S_ij - beta k_i u) + beta k_i v_j,
//   o_j = scale * sum_i S_ij q_i.

// RAW-LABEL: func.func @gated_deltanet
// RAW-COUNT-6: bufferization.to_buffer %{{.*}} read_only
// RAW: scf.parallel (%{{.*}}, %{{.*}}) = (%{{.*}}, %{{.*}}) to (%{{.*}}, %{{.*}})
// RAW: scf.parallel (%{{.*}}) = (%{{.*}}) to (%{{.*}})
// RAW-NOT: = linattn.recurrence

// CHECK-LABEL: func.func @gated_deltanet
// CHECK-DAG:   %[[SCALE:.*]] = arith.constant 2.500000e-01 : f32
// Run-time shape checks are linattn-insert-shape-checks' job, not this one's.
// CHECK-NOT:   cf.assert
// CHECK-DAG:   %[[B:.*]] = tensor.dim %arg0, %c0
// CHECK-DAG:   %[[T:.*]] = tensor.dim %arg0, %c1
// CHECK:       %[[O:.*]] = memref.alloc(%[[B]], %[[T]]) : memref<?x?x4x32xbf16>
// CHECK:       %[[S:.*]] = memref.alloc(%[[B]]) : memref<?x4x16x32xf32>
// Canonicalization merges the nested (b, hv) and (j) parallel loops.
// CHECK:       scf.parallel (%[[BI:.*]], %[[HV:.*]], %[[J:.*]]) = (%c0, %c0, %c0) to (%[[B]], %c4, %c32) step (%c1, %c1, %c1) {
// CHECK:         %[[H:.*]] = arith.divui %[[HV]], %c2 : index
// The column is a vector<K> carried across the loop over t.
// CHECK:         %[[COL0:.*]] = scf.for %[[I0:.*]] = %c0 to %c16 step %c1 iter_args(%{{.*}}) -> (vector<16xf32>) {
// CHECK:           tensor.extract %arg5[%[[BI]], %[[HV]], %[[I0]], %[[J]]]
// CHECK:           vector.insert
// CHECK:         %[[COLT:.*]] = scf.for %[[TI:.*]] = %c0 to %[[T]] step %c1 iter_args(%[[COL:.*]] = %[[COL0]]) -> (vector<16xf32>) {
// CHECK:           %[[G:.*]] = tensor.extract %arg3[%[[BI]], %[[TI]], %[[HV]]]
// CHECK:           %[[DECAY:.*]] = math.exp %[[G]] : f32
// CHECK:           %[[BETA:.*]] = tensor.extract %arg4[%[[BI]], %[[TI]], %[[HV]]]
// CHECK:           %[[WRITE:.*]] = arith.mulf %[[BETA]], %{{.*}} : f32
// u = k^T S[:, j]
// CHECK:           %[[U:.*]] = scf.for {{.*}} iter_args
// CHECK:             vector.extract %[[COL]]
// CHECK:             tensor.extract %arg1[%[[BI]], %[[TI]], %[[H]], %{{.*}}] : tensor<?x?x2x16xbf16>
// CHECK:           %[[CU:.*]] = arith.mulf %[[BETA]], %[[U]] : f32
// The column update fused with o_j.
// CHECK:           %[[UPD:.*]]:2 = scf.for %[[I:.*]] = %c0 to %c16 step %c1 iter_args(%[[C:.*]] = %[[COL]], %{{.*}} = %{{.*}}) -> (vector<16xf32>, f32) {
// CHECK:             %[[SIJ:.*]] = vector.extract %[[C]][%[[I]]]
// CHECK:             %[[R1:.*]] = arith.mulf %{{.*}}, %[[CU]] : f32
// CHECK:             %[[SUB:.*]] = arith.subf %[[SIJ]], %[[R1]] : f32
// CHECK:             %[[DEC:.*]] = arith.mulf %[[DECAY]], %[[SUB]] : f32
// CHECK:             %[[W:.*]] = arith.mulf %{{.*}}, %[[WRITE]] : f32
// CHECK:             %[[NEW:.*]] = arith.addf %[[DEC]], %[[W]] : f32
// CHECK:             vector.insert %[[NEW]], %[[C]] [%[[I]]]
// CHECK:           %[[SC:.*]] = arith.mulf %[[UPD]]#1, %[[SCALE]] : f32
// CHECK:           %[[TR:.*]] = arith.truncf %[[SC]] : f32 to bf16
// CHECK:           memref.store %[[TR]], %[[O]][%[[BI]], %[[TI]], %[[HV]], %[[J]]]
// CHECK:           scf.yield %[[UPD]]#0
// CHECK:         scf.for
// CHECK:           vector.extract %[[COLT]]
// CHECK:           memref.store %{{.*}}, %[[S]][%[[BI]], %[[HV]], %{{.*}}, %[[J]]]
// CHECK:       bufferization.to_tensor %[[O]] restrict writable
// CHECK:       bufferization.to_tensor %[[S]] restrict writable
func.func @gated_deltanet(%q: tensor<?x?x2x16xbf16>, %k: tensor<?x?x2x16xbf16>, %v: tensor<?x?x4x32xbf16>, %g: tensor<?x?x4xf32>, %beta: tensor<?x?x4xf32>, %s0: tensor<?x4x16x32xf32>) -> (tensor<?x?x4x32xbf16>, tensor<?x4x16x32xf32>) {
  %o, %s = linattn.recurrence gated_delta q(%q) k(%k) v(%v) gate(%g) beta(%beta) state(%s0)
      : (tensor<?x?x2x16xbf16>, tensor<?x?x2x16xbf16>, tensor<?x?x4x32xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x4x16x32xf32>) -> (tensor<?x?x4x32xbf16>, tensor<?x4x16x32xf32>)
  return %o, %s : tensor<?x?x4x32xbf16>, tensor<?x4x16x32xf32>
}

// -----

// Static shapes need no run-time checks. A per-key gate decays each row i by
// exp(g_i); the in-op L2 norm scales q and k by 1 / sqrt(sum(x^2) + 1e-6).

// CHECK-LABEL: func.func @gla_static
// CHECK-NOT:   cf.assert
// CHECK-DAG:   %[[EPS:.*]] = arith.constant 9.99999997E-7 : f32
// CHECK:       scf.parallel
// CHECK:         math.sqrt
// CHECK:         scf.for %[[I:.*]] = %c0 to %c16 step %c1 iter_args
// CHECK:           %[[GI:.*]] = tensor.extract %arg3[%{{.*}}, %{{.*}}, %{{.*}}, %[[I]]] : tensor<2x5x2x16xf32>
// CHECK:           %[[DI:.*]] = math.exp %[[GI]] : f32
// CHECK:           arith.mulf %[[DI]], %{{.*}} : f32
// CHECK-NOT:   = linattn.recurrence
func.func @gla_static(%q: tensor<2x5x2x16xf32>, %k: tensor<2x5x2x16xf32>, %v: tensor<2x5x2x8xf32>, %g: tensor<2x5x2x16xf32>, %s0: tensor<2x2x16x8xf32>) -> (tensor<2x5x2x8xf32>, tensor<2x2x16x8xf32>) {
  %o, %s = linattn.recurrence key_gate q(%q) k(%k) v(%v) gate(%g) state(%s0) {qk_l2norm}
      : (tensor<2x5x2x16xf32>, tensor<2x5x2x16xf32>, tensor<2x5x2x8xf32>, tensor<2x5x2x16xf32>, tensor<2x2x16x8xf32>) -> (tensor<2x5x2x8xf32>, tensor<2x2x16x8xf32>)
  return %o, %s : tensor<2x5x2x8xf32>, tensor<2x2x16x8xf32>
}

// -----

// RetNet: gamma per value head, selected among constants by head index.

// CHECK-LABEL: func.func @retnet
// CHECK-DAG:   %[[G0:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-DAG:   %[[G1:.*]] = arith.constant 2.500000e-01 : f32
// The unit B dimension folds away: the parallel loop is over (hv, j).
// CHECK:       scf.parallel (%[[HV:[a-z0-9]+]], %{{[a-z0-9]+}}) =
// CHECK:         %[[GAMMA:.*]] = scf.index_switch %[[HV]] -> f32
// CHECK:         case 0 {
// CHECK:           scf.yield %[[G0]] : f32
// CHECK:         default {
// CHECK:           scf.yield %[[G1]] : f32
// CHECK:         arith.mulf %[[GAMMA]], %{{.*}} : f32
func.func @retnet(%q: tensor<1x3x2x4xf16>, %k: tensor<1x3x2x4xf16>, %v: tensor<1x3x2x4xf16>, %s0: tensor<1x2x4x4xf32>) -> (tensor<1x3x2x4xf16>, tensor<1x2x4x4xf32>) {
  %o, %s = linattn.recurrence constant_decay q(%q) k(%k) v(%v) state(%s0) {decay = array<f32: 0.5, 0.25>}
      : (tensor<1x3x2x4xf16>, tensor<1x3x2x4xf16>, tensor<1x3x2x4xf16>, tensor<1x2x4x4xf32>) -> (tensor<1x3x2x4xf16>, tensor<1x2x4x4xf32>)
  return %o, %s : tensor<1x3x2x4xf16>, tensor<1x2x4x4xf32>
}

// -----

// linattn.chunk_grad's loops (the GPU's fallback where its kernels do not
// take the forms: here f32), one nest over (b, hv, chunk) each: the pairs
// with a thread per token and column quarter (64 x 4), the back
// substitution per column of Y and Z (K + V), the row scalars per token,
// the key gradients per key and group of rows (32 keys x 16 groups of 4
// rows), the rows' chunk-end shares of dL/dG summed per key, then the row
// gates' suffix sums (bench/NOTES.md l2).
// RAW-LABEL: func.func @chunk_grad_nests
// RAW-COUNT-2: memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?x2x32xf64>
// RAW:      scf.parallel (%{{.*}}, %{{.*}}, %{{.*}}) = {{.*}} to (%{{.*}}, %c2{{.*}}, %{{.*}})
// RAW:        scf.parallel (%{{.*}}) = (%{{.*}}) to (%c256) step
// RAW:        scf.parallel (%{{.*}}) = (%{{.*}}) to (%c64{{.*}}) step
// RAW:        scf.parallel (%{{.*}}) = (%{{.*}}) to (%c64{{.*}}) step
// RAW:        scf.parallel (%{{.*}}) = (%{{.*}}) to (%c512) step
// RAW:        scf.parallel (%{{.*}}) = (%{{.*}}) to (%c32{{.*}}) step
// RAW:        scf.parallel (%{{.*}}) = (%{{.*}}) to (%c1{{_[0-9]+}}) step
// RAW-NOT:    linattn.chunk_grad
func.func @chunk_grad_nests(%q: tensor<?x?x2x32xf32>, %k: tensor<?x?x2x32xf32>, %v: tensor<?x?x2x32xf32>, %beta: tensor<?x?x2xf32>, %g: tensor<?x?x2xf32>, %w: tensor<?x?x2x32xf32>, %u: tensor<?x?x2x32xf32>, %d: tensor<?x?x2x32xf32>, %s: tensor<?x?x2x32x32xf32>, %do: tensor<?x?x2x32xf32>, %dd: tensor<?x?x2x32xf32>, %hs: tensor<?x?x2x32x32xf32>) -> (tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>, tensor<?x?x2xf32>, tensor<?x?x2xf32>) {
  %dq, %dk, %dv, %dg, %db = linattn.chunk_grad q(%q) k(%k) v(%v) beta(%beta) gates(%g) w(%w) u(%u) new_values(%d) states(%s) grad_output(%do) grad_new_values(%dd) grad_states(%hs) {chunk_size = 64 : i64, rank1_scale = 1.000000e+00 : f32, scale = 0.125 : f32}
      : (tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>, tensor<?x?x2xf32>, tensor<?x?x2xf32>, tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>, tensor<?x?x2x32x32xf32>, tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>, tensor<?x?x2x32x32xf32>)
      -> (tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>) grad_gates tensor<?x?x2xf32> grad_beta tensor<?x?x2xf32>
  return %dq, %dk, %dv, %dg, %db : tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>, tensor<?x?x2xf32>, tensor<?x?x2xf32>
}
