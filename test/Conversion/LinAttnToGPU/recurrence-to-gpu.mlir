// RUN: linattn-opt %s --convert-linattn-recurrence-to-gpu | FileCheck %s

// The recurrent strategy on the GPU: blocks of 128 threads over (32 value
// columns, value head, batch index); lane tid holds keys 4 (tid % 4) + m
// of column tid / 4 (here K = 16: four slots carried across the loop over
// t, q's and k's four loaded as one vector), a column past V (here 40, two
// column blocks) reads column V - 1 and
// writes nothing, and each sum over keys (the two L2 norms, u = k^T S,
// o = S^T q) ends with xor-shuffles by 1 and 2. Value head hv reads q/k
// head hv / 2 (HV = 4, H = 2).

// CHECK-LABEL: func.func @gdn(
// CHECK:         %[[OUT:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?x4x40xbf16>
// CHECK:         %[[STATE:.*]] = memref.alloc(%{{.*}}) : memref<?x4x16x40xf32>
// CHECK:         gpu.launch blocks(%{{.*}}, %[[HV:.*]], %[[B:.*]]) in (%{{.*}} = %c2{{[_0-9]*}}, %{{.*}} = %c4{{[_0-9]*}}, %{{.*}} = %{{.*}}) threads(%[[TID:[^,]*]], {{.*}}) in (%{{.*}} = %c128{{[_0-9]*}}, {{.*}}) {
// CHECK:           arith.divui %[[HV]], %c2
// CHECK:           arith.remui %[[TID]], %c4
// CHECK:           arith.divui %[[TID]], %c4
// CHECK:           arith.select %{{.*}}, %{{.*}}, %c39
// CHECK:           arith.muli %{{.*}}, %c4
// CHECK:           scf.for %[[T:.*]] = {{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32) {
// CHECK-COUNT-2:     vector.load %{{.*}}[%{{.*}}, %[[T]], %{{.*}}, %{{.*}}] {alignment = 8 : i64} : memref<?x?x2x16xbf16>, vector<4xbf16>
// CHECK-COUNT-2:     gpu.shuffle  xor %{{.*}}, %c1_i32
// CHECK:             math.exp
// CHECK:             gpu.shuffle  xor %{{.*}}, %c1_i32
// CHECK:             gpu.shuffle  xor %{{.*}}, %c2_i32
// CHECK:             gpu.shuffle  xor %{{.*}}, %c1_i32
// CHECK:             gpu.shuffle  xor %{{.*}}, %c2_i32
// CHECK:             scf.if
// CHECK:               memref.store %{{.*}}, %[[OUT]]
// CHECK:           scf.if
// CHECK-COUNT-4:     memref.store %{{.*}}, %[[STATE]]
// CHECK:           gpu.terminator
func.func @gdn(%q: tensor<?x?x2x16xbf16>, %k: tensor<?x?x2x16xbf16>, %v: tensor<?x?x4x40xbf16>, %g: tensor<?x?x4xf32>, %beta: tensor<?x?x4xf32>, %s0: tensor<?x4x16x40xf32>) -> (tensor<?x?x4x40xbf16>, tensor<?x4x16x40xf32>) {
  %o, %s = linattn.recurrence gated_delta q(%q) k(%k) v(%v) gate(%g) beta(%beta) state(%s0) {qk_l2norm}
      : (tensor<?x?x2x16xbf16>, tensor<?x?x2x16xbf16>, tensor<?x?x4x40xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x4x16x40xf32>) -> (tensor<?x?x4x40xbf16>, tensor<?x4x16x40xf32>)
  return %o, %s : tensor<?x?x4x40xbf16>, tensor<?x4x16x40xf32>
}

// A K the lanes cannot split evenly is left to convert-linattn-to-loops.
// CHECK-LABEL: func.func @odd_keys(
// CHECK-NOT:     gpu.launch
// CHECK:         linattn.recurrence
func.func @odd_keys(%q: tensor<?x?x1x6xf32>, %k: tensor<?x?x1x6xf32>, %v: tensor<?x?x1x8xf32>, %s0: tensor<?x1x6x8xf32>) -> (tensor<?x?x1x8xf32>, tensor<?x1x6x8xf32>) {
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%s0)
      : (tensor<?x?x1x6xf32>, tensor<?x?x1x6xf32>, tensor<?x?x1x8xf32>, tensor<?x1x6x8xf32>) -> (tensor<?x?x1x8xf32>, tensor<?x1x6x8xf32>)
  return %o, %s : tensor<?x?x1x8xf32>, tensor<?x1x6x8xf32>
}
