// RUN: linattn-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(linattn-segment-chunk-states{segment-chunks=16 max-state-columns=2112 max-dense-state-columns=1056}))' | FileCheck %s
// RUN: not linattn-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(linattn-segment-chunk-states{segment-chunks=16 max-state-columns=2112 max-dense-state-columns=-1}))' 2>&1 | FileCheck %s --check-prefix=NEGATIVE-DENSE
// RUN: not linattn-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(linattn-segment-chunk-states{segment-chunks=16 max-state-columns=-1}))' 2>&1 | FileCheck %s --check-prefix=NEGATIVE

// NEGATIVE: max-state-columns must be 0 (always segment) or positive, got -1
// NEGATIVE-DENSE: max-dense-state-columns must be 0 (never at run time) or positive, got -1

// With max-state-columns the pass keeps both forms and chooses at run
// time: segmented where B * HV * V <= 2112 (here HV * V = 2 * 32 = 64 per
// sequence) and ceil(T / 64) > 16 chunks, the original elsewhere. Only
// what is read after the branch leaves it (the output and the final
// state; the new values only feed the output).

// CHECK-LABEL: func.func @row_gates
// CHECK-DAG:     %[[B:.*]] = tensor.dim %arg1, %c0
// CHECK-DAG:     %[[T:.*]] = tensor.dim %arg0, %c1
// CHECK-DAG:     %[[COLS:.*]] = arith.muli %[[B]], %c64{{.*}} : index
// CHECK-DAG:     %[[NC:.*]] = arith.ceildivui %[[T]], %c64
// CHECK-DAG:     %[[LONG:.*]] = arith.cmpi ugt, %[[NC]], %c16
// CHECK-DAG:     %[[FEW:.*]] = arith.cmpi ule, %[[COLS]], %c2112
// CHECK:         %[[COND:.*]] = arith.andi %[[FEW]], %[[LONG]] : i1
// CHECK:         %[[R:.*]]:2 = scf.if %[[COND]] -> (tensor<?x2x16x32xf32>, tensor<?x?x2x32xbf16>) {
// CHECK:           linattn.chunk_state_pass {{.*}}segment_chunks = 16 : i64
// CHECK:           %[[C:.*]], %[[F:.*]] = linattn.segment_carries
// CHECK:           %[[O:.*]] = linattn.chunk_output {{.*}} carries(%[[C]]) {{.*}}segment_chunks = 16 : i64
// CHECK:           scf.yield %[[F]], %[[O]]
// CHECK:         } else {
// CHECK:           %{{.*}}, %{{.*}}, %[[F2:.*]] = linattn.chunk_state_pass k(%arg0) u(%arg1) gates(%arg2) state(%arg3) {chunk_size = 64 : i64}
// CHECK:           %[[O2:.*]] = linattn.chunk_output
// CHECK-NOT:         carries(
// CHECK:           scf.yield %[[F2]], %[[O2]]
// CHECK:         }
// CHECK:         return %[[R]]#1, %[[R]]#0
func.func @row_gates(%k: tensor<?x?x1x16xbf16>, %v: tensor<?x?x2x32xbf16>, %g: tensor<?x?x2xf32>, %s0: tensor<?x2x16x32xf32>, %q: tensor<?x?x1x16xbf16>) -> (tensor<?x?x2x32xbf16>, tensor<?x2x16x32xf32>) {
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%v) gates(%g) state(%s0) {chunk_size = 64 : i64}
      : (tensor<?x?x1x16xbf16>, tensor<?x?x2x32xbf16>, tensor<?x?x2xf32>, tensor<?x2x16x32xf32>) -> (tensor<?x?x2x32xbf16>, tensor<?x?x2x16x32xbf16>, tensor<?x2x16x32xf32>)
  %o = linattn.chunk_output q(%q) k(%k) new_values(%d) states(%states) gates(%g) {chunk_size = 64 : i64, scale = 0.25 : f32}
      : (tensor<?x?x1x16xbf16>, tensor<?x?x1x16xbf16>, tensor<?x?x2x32xbf16>, tensor<?x?x2x16x32xbf16>, tensor<?x?x2xf32>) -> tensor<?x?x2x32xbf16>
  return %o, %final : tensor<?x?x2x32xbf16>, tensor<?x2x16x32xf32>
}

// -----

// An output reading a value made after the state pass (here q's l2norm):
// the branch would sit before it, so the pass leaves both ops alone.

// CHECK-LABEL: func.func @late_operand
// CHECK-NOT:     scf.if
// CHECK-NOT:     segment_chunks
func.func @late_operand(%k: tensor<?x?x1x16xbf16>, %v: tensor<?x?x1x16xbf16>, %s0: tensor<?x1x16x16xf32>, %q: tensor<?x?x1x16xbf16>) -> (tensor<?x?x1x16xbf16>, tensor<?x1x16x16xf32>) {
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%v) state(%s0) {chunk_size = 64 : i64}
      : (tensor<?x?x1x16xbf16>, tensor<?x?x1x16xbf16>, tensor<?x1x16x16xf32>) -> (tensor<?x?x1x16xbf16>, tensor<?x?x1x16x16xbf16>, tensor<?x1x16x16xf32>)
  %qn = linattn.l2norm %q : tensor<?x?x1x16xbf16> -> tensor<?x?x1x16xf32>
  %o = linattn.chunk_output q(%qn) k(%k) new_values(%d) states(%states) {chunk_size = 64 : i64, scale = 0.25 : f32}
      : (tensor<?x?x1x16xf32>, tensor<?x?x1x16xbf16>, tensor<?x?x1x16xbf16>, tensor<?x?x1x16x16xbf16>) -> tensor<?x?x1x16xbf16>
  return %o, %final : tensor<?x?x1x16xbf16>, tensor<?x1x16x16xf32>
}

// -----

// An output in another block than the state pass (here inside a branch of
// the caller's own): left alone as well.

// CHECK-LABEL: func.func @output_in_region
// CHECK-NOT:     segment_chunks
func.func @output_in_region(%c: i1, %k: tensor<?x?x1x16xbf16>, %v: tensor<?x?x1x16xbf16>, %s0: tensor<?x1x16x16xf32>, %q: tensor<?x?x1x16xbf16>) -> (tensor<?x?x1x16xbf16>, tensor<?x1x16x16xf32>) {
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%v) state(%s0) {chunk_size = 64 : i64}
      : (tensor<?x?x1x16xbf16>, tensor<?x?x1x16xbf16>, tensor<?x1x16x16xf32>) -> (tensor<?x?x1x16xbf16>, tensor<?x?x1x16x16xbf16>, tensor<?x1x16x16xf32>)
  %o = scf.if %c -> tensor<?x?x1x16xbf16> {
    %x = linattn.chunk_output q(%q) k(%k) new_values(%d) states(%states) {chunk_size = 64 : i64, scale = 0.25 : f32}
        : (tensor<?x?x1x16xbf16>, tensor<?x?x1x16xbf16>, tensor<?x?x1x16xbf16>, tensor<?x?x1x16x16xbf16>) -> tensor<?x?x1x16xbf16>
    scf.yield %x : tensor<?x?x1x16xbf16>
  } else {
    scf.yield %d : tensor<?x?x1x16xbf16>
  }
  return %o, %final : tensor<?x?x1x16xbf16>, tensor<?x1x16x16xf32>
}

// -----

// HV * V alone over max-state-columns (here 80 * 32 = 2560 > 2112, as
// Mamba-2's 80 value heads of 64): the segmented form would never run,
// so the pass leaves the state pass alone rather than branch
// (chunked_kernels::fewChainsForm).

// CHECK-LABEL: func.func @many_value_heads
// CHECK-NOT:     scf.if
// CHECK-NOT:     segment_chunks
// CHECK:         linattn.chunk_output
// CHECK-NOT:       carries(
func.func @many_value_heads(%k: tensor<?x?x1x16xbf16>, %v: tensor<?x?x80x32xbf16>, %g: tensor<?x?x80xf32>, %s0: tensor<?x80x16x32xf32>, %q: tensor<?x?x1x16xbf16>) -> (tensor<?x?x80x32xbf16>, tensor<?x80x16x32xf32>) {
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%v) gates(%g) state(%s0) {chunk_size = 64 : i64}
      : (tensor<?x?x1x16xbf16>, tensor<?x?x80x32xbf16>, tensor<?x?x80xf32>, tensor<?x80x16x32xf32>) -> (tensor<?x?x80x32xbf16>, tensor<?x?x80x16x32xbf16>, tensor<?x80x16x32xf32>)
  %o = linattn.chunk_output q(%q) k(%k) new_values(%d) states(%states) gates(%g) {chunk_size = 64 : i64, scale = 0.25 : f32}
      : (tensor<?x?x1x16xbf16>, tensor<?x?x1x16xbf16>, tensor<?x?x80x32xbf16>, tensor<?x?x80x16x32xbf16>, tensor<?x?x80xf32>) -> tensor<?x?x80x32xbf16>
  return %o, %final : tensor<?x?x80x32xbf16>, tensor<?x80x16x32xf32>
}

// -----

// The WY form: the state pass alone branches (its outputs read what either
// form makes), segmented by maps where B * HV * V <= 1056 and ceil(T / 64)
// > 128 chunks.

// CHECK-LABEL: func.func @wy_form
// CHECK-DAG:     %[[NC:.*]] = arith.ceildivui %{{.*}}, %c64
// CHECK-DAG:     %[[LONG:.*]] = arith.cmpi ugt, %[[NC]], %c128
// CHECK-DAG:     %[[FEW:.*]] = arith.cmpi ule, %{{.*}}, %c1056
// CHECK:         %[[COND:.*]] = arith.andi %[[FEW]], %[[LONG]] : i1
// CHECK:         %[[R:.*]]:3 = scf.if %[[COND]]
// CHECK:           %[[MAPS:.*]] = linattn.segment_maps k(%arg0) u(%arg1) w(%arg2) gates(%arg3) {chunk_size = 64 : i64, segment_chunks = 16 : i64}
// CHECK:           %[[E:.*]], %[[F:.*]] = linattn.segment_entries maps(%[[MAPS]]) state(%arg4)
// CHECK:           %[[D:.*]], %[[S:.*]], %{{.*}} = linattn.chunk_state_pass {{.*}}state(%[[E]]) {chunk_size = 64 : i64, segment_chunks = 16 : i64}
// CHECK:           scf.yield %[[D]], %[[S]], %[[F]]
// CHECK:         } else {
// CHECK:           linattn.chunk_state_pass k(%arg0) u(%arg1) w(%arg2) gates(%arg3) state(%arg4) {chunk_size = 64 : i64}
// CHECK:         }
// CHECK:         linattn.chunk_output {{.*}}new_values(%[[R]]#0) states(%[[R]]#1)
// CHECK:         return %{{.*}}, %[[R]]#2
func.func @wy_form(%k: tensor<?x?x1x32xbf16>, %u: tensor<?x?x2x32xbf16>, %w: tensor<?x?x2x32xbf16>, %g: tensor<?x?x2xf32>, %s0: tensor<?x2x32x32xf32>, %q: tensor<?x?x1x32xbf16>) -> (tensor<?x?x2x32xbf16>, tensor<?x2x32x32xf32>) {
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) w(%w) gates(%g) state(%s0) {chunk_size = 64 : i64}
      : (tensor<?x?x1x32xbf16>, tensor<?x?x2x32xbf16>, tensor<?x?x2x32xbf16>, tensor<?x?x2xf32>, tensor<?x2x32x32xf32>) -> (tensor<?x?x2x32xbf16>, tensor<?x?x2x32x32xbf16>, tensor<?x2x32x32xf32>)
  %o = linattn.chunk_output q(%q) k(%k) new_values(%d) states(%states) gates(%g) {chunk_size = 64 : i64, scale = 0.25 : f32}
      : (tensor<?x?x1x32xbf16>, tensor<?x?x1x32xbf16>, tensor<?x?x2x32xbf16>, tensor<?x?x2x32x32xbf16>, tensor<?x?x2xf32>) -> tensor<?x?x2x32xbf16>
  return %o, %final : tensor<?x?x2x32xbf16>, tensor<?x2x32x32xf32>
}

// -----

// Per-key gates without a rank-1 term (GLA) are not cut at run time (their
// maps cost more than they saved), nor is a key size above 128.

// CHECK-LABEL: func.func @not_at_run_time
// CHECK-NOT:     scf.if
// CHECK-NOT:     linattn.segment_maps
// CHECK:         return
func.func @not_at_run_time(%k: tensor<?x?x1x32xbf16>, %u: tensor<?x?x1x32xbf16>, %gk: tensor<?x?x1x32xf32>, %s0: tensor<?x1x32x32xf32>, %k2: tensor<?x?x1x160xbf16>, %u2: tensor<?x?x1x32xbf16>, %w2: tensor<?x?x1x160xbf16>, %s2: tensor<?x1x160x32xf32>) -> (tensor<?x1x32x32xf32>, tensor<?x1x160x32xf32>) {
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) gates(%gk) state(%s0) {chunk_size = 64 : i64}
      : (tensor<?x?x1x32xbf16>, tensor<?x?x1x32xbf16>, tensor<?x?x1x32xf32>, tensor<?x1x32x32xf32>) -> (tensor<?x?x1x32xbf16>, tensor<?x?x1x32x32xbf16>, tensor<?x1x32x32xf32>)
  %d2, %states2, %final2 = linattn.chunk_state_pass k(%k2) u(%u2) w(%w2) state(%s2) {chunk_size = 64 : i64}
      : (tensor<?x?x1x160xbf16>, tensor<?x?x1x32xbf16>, tensor<?x?x1x160xbf16>, tensor<?x1x160x32xf32>) -> (tensor<?x?x1x32xbf16>, tensor<?x?x1x160x32xbf16>, tensor<?x1x160x32xf32>)
  return %final, %final2 : tensor<?x1x32x32xf32>, tensor<?x1x160x32xf32>
}
