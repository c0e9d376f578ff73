// RUN: linattn-opt %s --convert-linattn-chunked-to-gpu -split-input-file | FileCheck %s

// linattn.segment_carries: C_{s+1} = exp(L_s) C_s + E_s, a thread per state
// element (blocks of 128 over K x V), sequential over the segments; each
// segment's decay L_s, the sum of its chunks' total gates, is summed by the
// lanes (a chunk each) and a butterfly of shuffles.

// CHECK-LABEL: func.func @row_gates(
// CHECK-SAME:      %[[ENDS:[^:]+]]: tensor<?x?x2x128x128xf32>, %[[G:[^:]+]]: tensor<?x?x2xf32>)
// CHECK:         %[[EB:.*]] = bufferization.to_buffer %[[ENDS]] read_only
// CHECK:         %[[GB:.*]] = bufferization.to_buffer %[[G]] read_only
// CHECK:         %[[C:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?x2x128x128xbf16>
// CHECK:         %[[F:.*]] = memref.alloc(%{{.*}}) : memref<?x2x128x128xf32>
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %c128{{[_0-9]*}}, %{{.*}} = %c2{{[_0-9]*}},
// CHECK:           scf.for
// CHECK:             memref.store %{{.*}}, %[[C]]
// CHECK:             memref.load %[[GB]]
// CHECK-COUNT-5:     gpu.shuffle xor
// CHECK:             llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK:             memref.load %[[EB]]
// CHECK:           memref.store %{{.*}}, %[[F]]
// CHECK:           gpu.terminator
func.func @row_gates(%ends: tensor<?x?x2x128x128xf32>, %G: tensor<?x?x2xf32>) -> (tensor<?x?x2x128x128xbf16>, tensor<?x2x128x128xf32>) {
  %c, %final = linattn.segment_carries ends(%ends) gates(%G) {chunk_size = 64 : i64, segment_chunks = 4 : i64}
      : (tensor<?x?x2x128x128xf32>, tensor<?x?x2xf32>) -> (tensor<?x?x2x128x128xbf16>, tensor<?x2x128x128xf32>)
  return %c, %final : tensor<?x?x2x128x128xbf16>, tensor<?x2x128x128xf32>
}

// -----

// Without gates (linear attention) nothing decays: no loads of gates, no
// shuffles.

// CHECK-LABEL: func.func @no_gates(
// CHECK:         gpu.launch
// CHECK-NOT:       gpu.shuffle
// CHECK-NOT:       llvm.call_intrinsic
// CHECK:           gpu.terminator
func.func @no_gates(%ends: tensor<?x?x2x64x64xf32>) -> (tensor<?x?x2x64x64xbf16>, tensor<?x2x64x64xf32>) {
  %c, %final = linattn.segment_carries ends(%ends) {chunk_size = 64 : i64, segment_chunks = 16 : i64}
      : (tensor<?x?x2x64x64xf32>) -> (tensor<?x?x2x64x64xbf16>, tensor<?x2x64x64xf32>)
  return %c, %final : tensor<?x?x2x64x64xbf16>, tensor<?x2x64x64xf32>
}
