// RUN: linattn-opt %s --convert-linattn-chunked-to-gpu | FileCheck %s

// linattn.l2norm on the GPU: one warp per row, x / sqrt(sum(x^2) + eps).
// Blocks of 128 threads take 4 rows (t = 4 blockIdx.x + warp); lane l
// holds x[l + 32 j] (consecutive lanes read consecutive keys), the sum of
// squares goes round the warp by a butterfly of 5 xor shuffles, and the
// normalised row is stored in f32.

// CHECK-LABEL: func.func @norm(
// CHECK:         %[[IN:.*]] = bufferization.to_buffer
// CHECK:         %[[OUT:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?x2x128xf32>
// CHECK:         %[[BLOCKS:.*]] = arith.ceildivui %{{.*}}, %c4{{[_0-9]*}} : index
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %[[BLOCKS]], {{.*}}) threads(%{{.*}}) in (%{{.*}} = %c128{{[_0-9]*}}, {{.*}}) {
// CHECK:           scf.if
// CHECK-COUNT-4:     memref.load %[[IN]]
// CHECK-NOT:         memref.load
// CHECK:             gpu.shuffle  xor %{{.*}}, %c16_i32
// CHECK:             gpu.shuffle  xor %{{.*}}, %c8_i32
// CHECK:             gpu.shuffle  xor %{{.*}}, %c4_i32
// CHECK:             gpu.shuffle  xor %{{.*}}, %c2_i32
// CHECK:             gpu.shuffle  xor %{{.*}}, %c1_i32
// CHECK:             math.sqrt
// CHECK-COUNT-4:     memref.store %{{.*}}, %[[OUT]]
// CHECK-NOT:         scf.if
// CHECK:           gpu.terminator
func.func @norm(%q: tensor<?x?x2x128xbf16>) -> tensor<?x?x2x128xf32> {
  %y = linattn.l2norm %q : tensor<?x?x2x128xbf16> -> tensor<?x?x2x128xf32>
  return %y : tensor<?x?x2x128xf32>
}

// K = 40: the second group of 32 keys is partial; its loads read a clamped
// key and select zero past 40, its stores are guarded.
// CHECK-LABEL: func.func @partial_row(
// CHECK:         gpu.launch
// CHECK:           arith.minui
// CHECK:           arith.select
// CHECK:           math.sqrt
// CHECK:           memref.store
// CHECK:           scf.if
// CHECK-NEXT:        arith.mulf
// CHECK-NEXT:        memref.store
func.func @partial_row(%q: tensor<?x?x2x40xf32>) -> tensor<?x?x2x40xf32> {
  %y = linattn.l2norm %q : tensor<?x?x2x40xf32> -> tensor<?x?x2x40xf32>
  return %y : tensor<?x?x2x40xf32>
}
