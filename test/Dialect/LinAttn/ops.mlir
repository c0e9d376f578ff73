// RUN: linattn-opt %s -split-input-file | FileCheck %s
// RUN: linattn-opt %s -split-input-file -mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC
// Round trip through the generic form and back to the custom form.
// RUN: linattn-opt %s -split-input-file -mlir-print-op-generic | linattn-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @linear_attention
// CHECK: linattn.recurrence identity q(%{{.*}}) k(%{{.*}}) v(%{{.*}}) state(%{{.*}}) : (tensor<?x?x2x16xbf16>, tensor<?x?x2x16xbf16>, tensor<?x?x2x32xbf16>, tensor<?x2x16x32xf32>) -> (tensor<?x?x2x32xbf16>, tensor<?x2x16x32xf32>)
// GENERIC-LABEL: sym_name = "linear_attention"
// GENERIC: "linattn.recurrence"(%{{.*}}) <{kind = #linattn<transition identity>, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 1>}>
func.func @linear_attention(%q: tensor<?x?x2x16xbf16>, %k: tensor<?x?x2x16xbf16>, %v: tensor<?x?x2x32xbf16>, %s0: tensor<?x2x16x32xf32>) -> (tensor<?x?x2x32xbf16>, tensor<?x2x16x32xf32>) {
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%s0)
      : (tensor<?x?x2x16xbf16>, tensor<?x?x2x16xbf16>, tensor<?x?x2x32xbf16>, tensor<?x2x16x32xf32>) -> (tensor<?x?x2x32xbf16>, tensor<?x2x16x32xf32>)
  return %o, %s : tensor<?x?x2x32xbf16>, tensor<?x2x16x32xf32>
}

// -----

// CHECK-LABEL: func.func @retnet
// CHECK: linattn.recurrence constant_decay q(%{{.*}}) k(%{{.*}}) v(%{{.*}}) state(%{{.*}}) {decay = array<f32: 9.687500e-01, 9.843750e-01>, scale = 2.500000e-01 : f32}
// GENERIC: decay = array<f32: 9.687500e-01, 9.843750e-01>, kind = #linattn<transition constant_decay>
func.func @retnet(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x8xf32>, %s0: tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>) {
  %o, %s = linattn.recurrence constant_decay q(%q) k(%k) v(%v) state(%s0) {decay = array<f32: 0.96875, 0.984375>, scale = 0.25 : f32}
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return %o, %s : tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>
}

// -----

// CHECK-LABEL: func.func @simple_gla
// CHECK: linattn.recurrence scalar_gate q(%{{.*}}) k(%{{.*}}) v(%{{.*}}) gate(%{{.*}}) state(%{{.*}}) {qk_l2norm}
// GENERIC: operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 1>, qk_l2norm
func.func @simple_gla(%q: tensor<?x?x2x16xf16>, %k: tensor<?x?x2x16xf16>, %v: tensor<?x?x4x32xf16>, %g: tensor<?x?x4xf16>, %s0: tensor<?x4x16x32xf32>) -> (tensor<?x?x4x32xf16>, tensor<?x4x16x32xf32>) {
  %o, %s = linattn.recurrence scalar_gate q(%q) k(%k) v(%v) gate(%g) state(%s0) {qk_l2norm}
      : (tensor<?x?x2x16xf16>, tensor<?x?x2x16xf16>, tensor<?x?x4x32xf16>, tensor<?x?x4xf16>, tensor<?x4x16x32xf32>) -> (tensor<?x?x4x32xf16>, tensor<?x4x16x32xf32>)
  return %o, %s : tensor<?x?x4x32xf16>, tensor<?x4x16x32xf32>
}

// -----

// CHECK-LABEL: func.func @gla
// CHECK: linattn.recurrence key_gate q(%{{.*}}) k(%{{.*}}) v(%{{.*}}) gate(%{{.*}}) state(%{{.*}}) :
func.func @gla(%q: tensor<2x?x2x16xbf16>, %k: tensor<2x?x2x16xbf16>, %v: tensor<2x?x2x32xbf16>, %g: tensor<2x?x2x16xf32>, %s0: tensor<2x2x16x32xf32>) -> (tensor<2x?x2x32xbf16>, tensor<2x2x16x32xf32>) {
  %o, %s = linattn.recurrence key_gate q(%q) k(%k) v(%v) gate(%g) state(%s0)
      : (tensor<2x?x2x16xbf16>, tensor<2x?x2x16xbf16>, tensor<2x?x2x32xbf16>, tensor<2x?x2x16xf32>, tensor<2x2x16x32xf32>) -> (tensor<2x?x2x32xbf16>, tensor<2x2x16x32xf32>)
  return %o, %s : tensor<2x?x2x32xbf16>, tensor<2x2x16x32xf32>
}

// -----

// CHECK-LABEL: func.func @kda
// CHECK: linattn.recurrence kda q(%{{.*}}) k(%{{.*}}) v(%{{.*}}) gate(%{{.*}}) beta(%{{.*}}) state(%{{.*}}) {qk_l2norm} :
func.func @kda(%q: tensor<2x?x2x16xbf16>, %k: tensor<2x?x2x16xbf16>, %v: tensor<2x?x4x32xbf16>, %g: tensor<2x?x4x16xf32>, %beta: tensor<2x?x4xf32>, %s0: tensor<2x4x16x32xf32>) -> (tensor<2x?x4x32xbf16>, tensor<2x4x16x32xf32>) {
  %o, %s = linattn.recurrence kda q(%q) k(%k) v(%v) gate(%g) beta(%beta) state(%s0) {qk_l2norm}
      : (tensor<2x?x2x16xbf16>, tensor<2x?x2x16xbf16>, tensor<2x?x4x32xbf16>, tensor<2x?x4x16xf32>, tensor<2x?x4xf32>, tensor<2x4x16x32xf32>) -> (tensor<2x?x4x32xbf16>, tensor<2x4x16x32xf32>)
  return %o, %s : tensor<2x?x4x32xbf16>, tensor<2x4x16x32xf32>
}

// -----

// CHECK-LABEL: func.func @deltanet
// CHECK: linattn.recurrence delta q(%{{.*}}) k(%{{.*}}) v(%{{.*}}) beta(%{{.*}}) state(%{{.*}}) :
// GENERIC: operandSegmentSizes = array<i32: 1, 1, 1, 0, 1, 1>
func.func @deltanet(%q: tensor<?x?x2x16xbf16>, %k: tensor<?x?x2x16xbf16>, %v: tensor<?x?x2x32xbf16>, %beta: tensor<?x?x2xbf16>, %s0: tensor<?x2x16x32xf32>) -> (tensor<?x?x2x32xbf16>, tensor<?x2x16x32xf32>) {
  %o, %s = linattn.recurrence delta q(%q) k(%k) v(%v) beta(%beta) state(%s0)
      : (tensor<?x?x2x16xbf16>, tensor<?x?x2x16xbf16>, tensor<?x?x2x32xbf16>, tensor<?x?x2xbf16>, tensor<?x2x16x32xf32>) -> (tensor<?x?x2x32xbf16>, tensor<?x2x16x32xf32>)
  return %o, %s : tensor<?x?x2x32xbf16>, tensor<?x2x16x32xf32>
}

// -----

// CHECK-LABEL: func.func @gated_deltanet
// CHECK: linattn.recurrence gated_delta q(%{{.*}}) k(%{{.*}}) v(%{{.*}}) gate(%{{.*}}) beta(%{{.*}}) state(%{{.*}}) {scale = 1.250000e-01 : f32}
// GENERIC: operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1>
func.func @gated_deltanet(%q: tensor<?x?x8x64xbf16>, %k: tensor<?x?x8x64xbf16>, %v: tensor<?x?x16x64xbf16>, %g: tensor<?x?x16xf32>, %beta: tensor<?x?x16xf32>, %s0: tensor<?x16x64x64xf32>) -> (tensor<?x?x16x64xbf16>, tensor<?x16x64x64xf32>) {
  %o, %s = linattn.recurrence gated_delta q(%q) k(%k) v(%v) gate(%g) beta(%beta) state(%s0) {scale = 0.125 : f32}
      : (tensor<?x?x8x64xbf16>, tensor<?x?x8x64xbf16>, tensor<?x?x16x64xbf16>, tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x16x64x64xf32>) -> (tensor<?x?x16x64xbf16>, tensor<?x16x64x64xf32>)
  return %o, %s : tensor<?x?x16x64xbf16>, tensor<?x16x64x64xf32>
}

// -----

// CHECK-LABEL: func.func @deltanet_negeig
// CHECK: linattn.recurrence negeig_delta
func.func @deltanet_negeig(%q: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>, %v: tensor<?x?x2x32xf32>, %beta: tensor<?x?x2xf32>, %s0: tensor<?x2x16x32xf32>) -> (tensor<?x?x2x32xf32>, tensor<?x2x16x32xf32>) {
  %o, %s = linattn.recurrence negeig_delta q(%q) k(%k) v(%v) beta(%beta) state(%s0)
      : (tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x32xf32>, tensor<?x?x2xf32>, tensor<?x2x16x32xf32>) -> (tensor<?x?x2x32xf32>, tensor<?x2x16x32xf32>)
  return %o, %s : tensor<?x?x2x32xf32>, tensor<?x2x16x32xf32>
}
