// RUN: linattn-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(linattn-narrow-state-blocks{max-state-columns=2112}))' | FileCheck %s
// RUN: not linattn-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(linattn-narrow-state-blocks{max-state-columns=0}))' 2>&1 | FileCheck %s --check-prefix=ZERO

// ZERO: linattn-narrow-state-blocks: max-state-columns must be positive, got 0

// A state pass in WY form (its transitions dense: segments cannot cut it)
// is kept in both block widths, chosen at run time on B * HV * V (here
// HV * V = 2 * 128 = 256 per sequence): blocks of 16 columns, marked for
// the GPU conversion, where B * 256 <= 2112; the plain 32-column pass
// elsewhere. All three results leave the branch.

// CHECK-LABEL: func.func @wy_form
// CHECK:         %[[B:.*]] = tensor.dim %arg1, %c0
// CHECK:         %[[COLS:.*]] = arith.muli %[[B]], %c256
// CHECK:         %[[FEW:.*]] = arith.cmpi ule, %[[COLS]], %c2112
// CHECK:         %[[R:.*]]:3 = scf.if %[[FEW]] -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128x128xbf16>, tensor<?x2x128x128xf32>) {
// CHECK:           %[[N0:.*]], %[[N1:.*]], %[[N2:.*]] = linattn.chunk_state_pass k(%arg0) u(%arg1) w(%arg2) gates(%arg3) state(%arg4) {chunk_size = 64 : i64, linattn.state_columns = 16 : i64}
// CHECK:           scf.yield %[[N0]], %[[N1]], %[[N2]]
// CHECK:         } else {
// CHECK:           %[[W0:.*]], %[[W1:.*]], %[[W2:.*]] = linattn.chunk_state_pass k(%arg0) u(%arg1) w(%arg2) gates(%arg3) state(%arg4) {chunk_size = 64 : i64} :
// CHECK:           scf.yield %[[W0]], %[[W1]], %[[W2]]
// CHECK:         }
// CHECK:         return %[[R]]#0, %[[R]]#1, %[[R]]#2
func.func @wy_form(%k: tensor<?x?x2x128xbf16>, %u: tensor<?x?x2x128xf32>, %w: tensor<?x?x2x128xbf16>, %G: tensor<?x?x2xf32>, %s0: tensor<?x2x128x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128x128xbf16>, tensor<?x2x128x128xf32>) {
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) w(%w) gates(%G) state(%s0) {chunk_size = 64 : i64}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xf32>, tensor<?x?x2x128xbf16>, tensor<?x?x2xf32>, tensor<?x2x128x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128x128xbf16>, tensor<?x2x128x128xf32>)
  return %d, %states, %final : tensor<?x?x2x128xbf16>, tensor<?x?x2x128x128xbf16>, tensor<?x2x128x128xf32>
}

// -----

// The backward's reverse pass keeps its 32-column blocks (its 16-column
// kernel is slower, bench/NOTES.md w2).

// CHECK-LABEL: func.func @reverse_pass
// CHECK-NOT:     scf.if
// CHECK-NOT:     linattn.state_columns
// CHECK:         return
func.func @reverse_pass(%q: tensor<?x?x2x128xbf16>, %k: tensor<?x?x2x128xbf16>, %do: tensor<?x?x2x128xbf16>, %ds: tensor<?x2x128x128xf32>) -> (tensor<?x?x2x128xf32>, tensor<?x?x2x128x128xf32>, tensor<?x2x128x128xf32>) {
  %dd, %hs, %ds0 = linattn.chunk_state_pass_grad q(%q) k(%k) grad_output(%do) grad_final_state(%ds) {chunk_size = 64 : i64, scale = 0.125 : f32}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x2x128x128xf32>)
      -> (tensor<?x?x2x128xf32>, tensor<?x?x2x128x128xf32>, tensor<?x2x128x128xf32>)
  return %dd, %hs, %ds0 : tensor<?x?x2x128xf32>, tensor<?x?x2x128x128xf32>, tensor<?x2x128x128xf32>
}

// -----

// Left alone: a state pass with scalar transitions (segments are its
// answer), one already segmented, one already given a width, and (below)
// one whose HV * V alone passes the limit (32 x 128 = 4096 > 2112: never
// narrow, whatever B).

// CHECK-LABEL: func.func @left_alone
// CHECK-NOT:     scf.if
// CHECK-COUNT-3: linattn.chunk_state_pass
// CHECK-NOT:     scf.if
func.func @left_alone(%k: tensor<?x?x2x64xbf16>, %v: tensor<?x?x2x64xbf16>, %G: tensor<?x?x2xf32>, %s0: tensor<?x2x64x64xf32>, %u: tensor<?x?x2x64xf32>, %w: tensor<?x?x2x64xbf16>) -> (tensor<?x2x64x64xf32>, tensor<?x?x2x64xbf16>, tensor<?x2x64x64xf32>) {
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%v) gates(%G) state(%s0) {chunk_size = 64 : i64}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2xf32>, tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x?x2x64x64xbf16>, tensor<?x2x64x64xf32>)
  %d2, %states2, %ends = linattn.chunk_state_pass k(%k) u(%v) gates(%G) state(%s0) {chunk_size = 64 : i64, segment_chunks = 16 : i64}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2xf32>, tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x?x2x64x64xbf16>, tensor<?x?x2x64x64xf32>)
  %d3, %states3, %final3 = linattn.chunk_state_pass k(%k) u(%u) w(%w) gates(%G) state(%s0) {chunk_size = 64 : i64, linattn.state_columns = 32 : i64}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xbf16>, tensor<?x?x2xf32>, tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x?x2x64x64xbf16>, tensor<?x2x64x64xf32>)
  return %final, %d3, %final3 : tensor<?x2x64x64xf32>, tensor<?x?x2x64xbf16>, tensor<?x2x64x64xf32>
}

// -----

// CHECK-LABEL: func.func @many_value_heads
// CHECK-NOT:     scf.if
// CHECK-NOT:     linattn.state_columns
func.func @many_value_heads(%k: tensor<?x?x16x128xbf16>, %u: tensor<?x?x32x128xf32>, %w: tensor<?x?x32x128xbf16>, %G: tensor<?x?x32xf32>, %s0: tensor<?x32x128x128xf32>) -> tensor<?x32x128x128xf32> {
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) w(%w) gates(%G) state(%s0) {chunk_size = 64 : i64}
      : (tensor<?x?x16x128xbf16>, tensor<?x?x32x128xf32>, tensor<?x?x32x128xbf16>, tensor<?x?x32xf32>, tensor<?x32x128x128xf32>) -> (tensor<?x?x32x128xbf16>, tensor<?x?x32x128x128xbf16>, tensor<?x32x128x128xf32>)
  return %final : tensor<?x32x128x128xf32>
}
