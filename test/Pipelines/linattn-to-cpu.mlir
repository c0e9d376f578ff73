// RUN: linattn-opt %s --linattn-to-cpu | FileCheck %s
// RUN: linattn-opt %s --linattn-to-cpu=emit-c-interface=false | FileCheck %s --check-prefix=NOCIFACE
// RUN: linattn-opt %s --linattn-to-cpu=strategy=chunked | FileCheck %s --check-prefix=FREE

// The whole CPU pipeline ends in the LLVM dialect: no linattn, tensor,
// memref, scf or arith op is left, and public functions get a C wrapper
// that takes memref descriptors by pointer.

// CHECK-NOT:   linattn.recurrence {{[a-z]}}
// CHECK-LABEL: llvm.func @deltanet(
// CHECK:       llvm.call @malloc
// CHECK:       llvm.fmul
// CHECK-LABEL: llvm.func @_mlir_ciface_deltanet(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr)
// CHECK-NOT:   {{tensor\.|memref\.|scf\.|arith\.|bufferization\.}}

// Chunked: the five intermediates (W with its fp32 working copy, U, the
// new values (f32 for an ungated delta rule) and the chunk states) are
// freed in the call; the two results are not.
// FREE-LABEL:    llvm.func @deltanet(
// FREE-COUNT-7:  llvm.call @malloc
// FREE-COUNT-5:  llvm.call @free
// FREE-NOT:      llvm.call @free
// FREE-LABEL:    llvm.func @_mlir_ciface_deltanet(

// NOCIFACE-LABEL: llvm.func @deltanet(
// NOCIFACE-NOT:   _mlir_ciface_
func.func @deltanet(%q: tensor<?x?x2x16xbf16>, %k: tensor<?x?x2x16xbf16>, %v: tensor<?x?x2x32xbf16>, %beta: tensor<?x?x2xf32>, %s0: tensor<?x2x16x32xf32>) -> (tensor<?x?x2x32xbf16>, tensor<?x2x16x32xf32>) {
  %o, %s = linattn.recurrence delta q(%q) k(%k) v(%v) beta(%beta) state(%s0)
      : (tensor<?x?x2x16xbf16>, tensor<?x?x2x16xbf16>, tensor<?x?x2x32xbf16>, tensor<?x?x2xf32>, tensor<?x2x16x32xf32>) -> (tensor<?x?x2x32xbf16>, tensor<?x2x16x32xf32>)
  return %o, %s : tensor<?x?x2x32xbf16>, tensor<?x2x16x32xf32>
}
