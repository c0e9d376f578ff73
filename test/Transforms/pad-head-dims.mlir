// RUN: linattn-opt %s -split-input-file --linattn-pad-head-dims | FileCheck %s
// RUN: not linattn-opt %s -split-input-file --linattn-pad-head-dims=multiple=24 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: linattn-pad-head-dims: multiple must be a positive multiple of 16, got 24

// K = V = 80 (a multiple of 16, not of 32): q, k, v and the initial state
// copied into zero-padded tensors of 96 (the slab past 80 of each padded
// dimension, within 80 along the padded dimensions before it, filled with
// zeros, so that no two slabs meet; the input copied into the leading slice,
// each in place: whole rows, which the GPU moves 16 bytes an access), the
// recurrence at 96 with the scale of K = 80 (1 / sqrt(80) = 0.1118) made
// explicit, o and the final state sliced back to 80 (a copy of the
// leading slice). Scalar gates and beta stay as they are.
// CHECK-LABEL: func.func @gated_delta_80(
// CHECK-SAME:      %[[Q:[^:]+]]: tensor<?x?x2x80xbf16>, %[[K:[^:]+]]: tensor<?x?x2x80xbf16>, %[[V:[^:]+]]: tensor<?x?x2x80xbf16>, %[[G:[^:]+]]: tensor<?x?x2xf32>, %[[B:[^:]+]]: tensor<?x?x2xf32>, %[[S0:[^:]+]]: tensor<?x2x80x80xf32>)
// CHECK:         %[[QB:.*]] = bufferization.alloc_tensor(%[[D0:.*]], %[[D1:.*]]) : tensor<?x?x2x96xbf16>
// CHECK:         %[[QT:.*]] = tensor.extract_slice %[[QB]][0, 0, 0, 80] [%[[D0]], %[[D1]], 2, 16] [1, 1, 1, 1]
// CHECK:         %[[QZ:.*]] = linalg.fill ins(%{{.*}} : bf16) outs(%[[QT]] : tensor<?x?x2x16xbf16>)
// CHECK:         %[[QF:.*]] = tensor.insert_slice %[[QZ]] into %[[QB]][0, 0, 0, 80] [%[[D0]], %[[D1]], 2, 16] [1, 1, 1, 1]
// CHECK:         %[[QW:.*]] = tensor.extract_slice %[[QF]][0, 0, 0, 0] [%[[D0]], %[[D1]], 2, 80] [1, 1, 1, 1]
// CHECK:         %[[QC:.*]] = linalg.copy ins(%[[Q]] : tensor<?x?x2x80xbf16>) outs(%[[QW]] : tensor<?x?x2x80xbf16>)
// CHECK:         %[[QP:.*]] = tensor.insert_slice %[[QC]] into %[[QF]][0, 0, 0, 0] [%[[D0]], %[[D1]], 2, 80] [1, 1, 1, 1]
// CHECK:         %[[KP:.*]] = tensor.insert_slice %{{.*}} into %{{.*}} : tensor<?x?x2x80xbf16> into tensor<?x?x2x96xbf16>
// CHECK:         %[[VP:.*]] = tensor.insert_slice %{{.*}} into %{{.*}} : tensor<?x?x2x80xbf16> into tensor<?x?x2x96xbf16>
// CHECK:         linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<?x2x16x96xf32>)
// CHECK:         tensor.extract_slice %{{.*}}[0, 0, 0, 80] [%{{.*}}, 2, 80, 16] [1, 1, 1, 1]
// CHECK:         linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<?x2x80x16xf32>)
// CHECK:         %[[SP:.*]] = tensor.insert_slice %{{.*}} into %{{.*}} : tensor<?x2x80x80xf32> into tensor<?x2x96x96xf32>
// CHECK:         %[[O:.*]], %[[S:.*]] = linattn.recurrence gated_delta q(%[[QP]]) k(%[[KP]]) v(%[[VP]]) gate(%[[G]]) beta(%[[B]]) state(%[[SP]]) {scale = 0.111803398 : f32}
// CHECK-SAME:      -> (tensor<?x?x2x96xbf16>, tensor<?x2x96x96xf32>)
// CHECK:         %[[OW:.*]] = tensor.extract_slice %[[O]][0, 0, 0, 0] [%{{.*}}, %{{.*}}, 2, 80] [1, 1, 1, 1] : tensor<?x?x2x96xbf16> to tensor<?x?x2x80xbf16>
// CHECK:         %[[OB:.*]] = bufferization.alloc_tensor(%{{.*}}, %{{.*}}) : tensor<?x?x2x80xbf16>
// CHECK:         %[[OS:.*]] = linalg.copy ins(%[[OW]] : tensor<?x?x2x80xbf16>) outs(%[[OB]] : tensor<?x?x2x80xbf16>)
// CHECK:         %[[SS:.*]] = linalg.copy ins(%{{.*}} : tensor<?x2x80x80xf32>) outs(%{{.*}} : tensor<?x2x80x80xf32>)
// CHECK:         return %[[OS]], %[[SS]]
func.func @gated_delta_80(%q: tensor<?x?x2x80xbf16>, %k: tensor<?x?x2x80xbf16>, %v: tensor<?x?x2x80xbf16>, %g: tensor<?x?x2xf32>, %b: tensor<?x?x2xf32>, %s0: tensor<?x2x80x80xf32>) -> (tensor<?x?x2x80xbf16>, tensor<?x2x80x80xf32>) {
  %o, %s = linattn.recurrence gated_delta q(%q) k(%k) v(%v) gate(%g) beta(%b) state(%s0)
      : (tensor<?x?x2x80xbf16>, tensor<?x?x2x80xbf16>, tensor<?x?x2x80xbf16>, tensor<?x?x2xf32>, tensor<?x?x2xf32>, tensor<?x2x80x80xf32>) -> (tensor<?x?x2x80xbf16>, tensor<?x2x80x80xf32>)
  return %o, %s : tensor<?x?x2x80xbf16>, tensor<?x2x80x80xf32>
}

// -----

// Per-key gates (GLA) are padded with log gates of 0; K = 48 -> 64, V =
// 64 stays (v and o are not copied); q and k, one value, are copied once;
// a given scale is kept.
// CHECK-LABEL: func.func @gla_48_64(
// CHECK-SAME:      %[[Q:[^:]+]]: tensor<?x?x1x48xbf16>, %[[V:[^:]+]]: tensor<?x?x1x64xbf16>
// CHECK:         %[[QP:.*]] = tensor.insert_slice %{{.*}} : tensor<?x?x1x48xbf16> into tensor<?x?x1x64xbf16>
// CHECK:         %[[GP:.*]] = tensor.insert_slice %{{.*}} : tensor<?x?x1x48xf32> into tensor<?x?x1x64xf32>
// CHECK:         %[[SP:.*]] = tensor.insert_slice %{{.*}} : tensor<?x1x48x64xf32> into tensor<?x1x64x64xf32>
// CHECK:         %[[O:.*]], %{{.*}} = linattn.recurrence key_gate q(%[[QP]]) k(%[[QP]]) v(%[[V]]) gate(%[[GP]]) state(%[[SP]]) {scale = 2.500000e-01 : f32}
// CHECK:         %[[SS:.*]] = linalg.copy ins(%{{.*}} : tensor<?x1x48x64xf32>) outs(%{{.*}} : tensor<?x1x48x64xf32>)
// CHECK:         return %[[O]], %[[SS]]
func.func @gla_48_64(%q: tensor<?x?x1x48xbf16>, %v: tensor<?x?x1x64xbf16>, %g: tensor<?x?x1x48xf32>, %s0: tensor<?x1x48x64xf32>) -> (tensor<?x?x1x64xbf16>, tensor<?x1x48x64xf32>) {
  %o, %s = linattn.recurrence key_gate q(%q) k(%q) v(%v) gate(%g) state(%s0) {scale = 0.25 : f32}
      : (tensor<?x?x1x48xbf16>, tensor<?x?x1x48xbf16>, tensor<?x?x1x64xbf16>, tensor<?x?x1x48xf32>, tensor<?x1x48x64xf32>) -> (tensor<?x?x1x64xbf16>, tensor<?x1x48x64xf32>)
  return %o, %s : tensor<?x?x1x64xbf16>, tensor<?x1x48x64xf32>
}

// -----

// Left alone: head sizes the kernels take, one that is no multiple of 16,
// and a recurrence given to another strategy.
// CHECK-LABEL: func.func @untouched(
// CHECK-NOT:     linalg
// CHECK-COUNT-3: linattn.recurrence identity
// CHECK-NOT:     linalg
func.func @untouched(%q: tensor<2x8x1x64xf32>, %v: tensor<2x8x1x64xf32>, %s0: tensor<2x1x64x64xf32>,
                     %q40: tensor<2x8x1x40xf32>, %s40: tensor<2x1x40x64xf32>,
                     %q80: tensor<2x8x1x80xf32>, %s80: tensor<2x1x80x64xf32>) -> (tensor<2x8x1x64xf32>, tensor<2x8x1x64xf32>, tensor<2x8x1x64xf32>) {
  %o, %s = linattn.recurrence identity q(%q) k(%q) v(%v) state(%s0)
      : (tensor<2x8x1x64xf32>, tensor<2x8x1x64xf32>, tensor<2x8x1x64xf32>, tensor<2x1x64x64xf32>) -> (tensor<2x8x1x64xf32>, tensor<2x1x64x64xf32>)
  %o2, %s2 = linattn.recurrence identity q(%q40) k(%q40) v(%v) state(%s40)
      : (tensor<2x8x1x40xf32>, tensor<2x8x1x40xf32>, tensor<2x8x1x64xf32>, tensor<2x1x40x64xf32>) -> (tensor<2x8x1x64xf32>, tensor<2x1x40x64xf32>)
  %o3, %s3 = linattn.recurrence identity q(%q80) k(%q80) v(%v) state(%s80) {linattn.strategy = "recurrent"}
      : (tensor<2x8x1x80xf32>, tensor<2x8x1x80xf32>, tensor<2x8x1x64xf32>, tensor<2x1x80x64xf32>) -> (tensor<2x8x1x64xf32>, tensor<2x1x80x64xf32>)
  return %o, %o2, %o3 : tensor<2x8x1x64xf32>, tensor<2x8x1x64xf32>, tensor<2x8x1x64xf32>
}
