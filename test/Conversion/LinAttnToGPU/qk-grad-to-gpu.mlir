// RUN: linattn-opt %s --convert-linattn-chunked-to-gpu -split-input-file | FileCheck %s

// linattn.qk_grad: a warp per (b, t, h) row, four rows a block (blocks
// (ceil(T / 4), H, B)); lane l sums keys l and l + 32 of the row's two value
// heads' shares; with qk_l2norm, |x|^2 and y . dy by butterflies of
// shuffles (offsets 16, 8, 4, 2, 1).
// CHECK-LABEL: func.func @l2norm_grouped(
// CHECK:         %[[OUT:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?x2x64xbf16>
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %{{.*}}, %{{.*}} = %c2{{[_0-9]*}}, %{{.*}} = %{{.*}}) threads(%{{.*}}) in (%{{.*}} = %c128{{[_0-9]*}}
// CHECK-COUNT-4: memref.load %{{.*}} : memref<?x?x4x64xf32>
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK:         math.sqrt
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK-COUNT-2: memref.store %{{.*}}, %[[OUT]]
// CHECK-NOT:     linattn.qk_grad
func.func @l2norm_grouped(%x: tensor<?x?x2x64xbf16>, %g: tensor<?x?x4x64xf32>) -> tensor<?x?x2x64xbf16> {
  %dx = linattn.qk_grad %x grad(%g) {qk_l2norm} : (tensor<?x?x2x64xbf16>, tensor<?x?x4x64xf32>) -> tensor<?x?x2x64xbf16>
  return %dx : tensor<?x?x2x64xbf16>
}

// -----

// Without the norm, K = 40: the second key of a lane exists for lanes 0-7
// only; the others read key 39 and store nothing.
// CHECK-LABEL: func.func @plain_tail(
// CHECK:         gpu.launch
// CHECK-NOT:     gpu.shuffle
// CHECK:         memref.store
// CHECK:         scf.if
// CHECK:           memref.store
func.func @plain_tail(%x: tensor<?x?x2x40xbf16>, %g: tensor<?x?x2x40xf32>) -> tensor<?x?x2x40xbf16> {
  %dx = linattn.qk_grad %x grad(%g) : (tensor<?x?x2x40xbf16>, tensor<?x?x2x40xf32>) -> tensor<?x?x2x40xbf16>
  return %dx : tensor<?x?x2x40xbf16>
}

// -----

// The factored form's gradient (chunk_grad with q_rnorm and k_rnorm): dx =
// dy - y (y . dy), the same sums and no multiply by r after them.
// CHECK-LABEL: func.func @factored(
// CHECK:         gpu.launch
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK:         %[[R:.*]] = arith.divf %{{.*}}, %{{.*}} : f32
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK:         %[[Y:.*]] = arith.mulf %[[R]], %{{.*}} : f32
// CHECK-NEXT:    %[[YD:.*]] = arith.mulf %[[Y]], %{{.*}} : f32
// CHECK-NEXT:    %[[DX:.*]] = arith.subf %{{.*}}, %[[YD]] : f32
// CHECK-NOT:     arith.mulf %[[R]], %[[DX]]
// CHECK:         memref.store
func.func @factored(%x: tensor<?x?x2x64xbf16>, %g: tensor<?x?x4x64xf32>) -> tensor<?x?x2x64xbf16> {
  %dx = linattn.qk_grad %x grad(%g) {qk_l2norm, factored} : (tensor<?x?x2x64xbf16>, tensor<?x?x4x64xf32>) -> tensor<?x?x2x64xbf16>
  return %dx : tensor<?x?x2x64xbf16>
}
