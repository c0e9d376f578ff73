// An algorithm whose loops have no GPU mapping yet is refused with a message
// that names the host op touching device memory and what to use instead.
// (strategy=chunked is mapped: convert-linattn-chunked-to-gpu, tested in
// chunked-to-gpu.mlir and test/Pipelines/linattn-to-nvvm-chunked.test; the
// segment scan's chunk_transitions and scan are not. K = V = 64 so that its
// ut_transform, which is mapped, passes the kernel's size limits.)
// RUN: not linattn-opt %s --linattn-to-nvvm='format=isa strategy=segment-scan' -o /dev/null 2>&1 | FileCheck %s

// CHECK: error: 'memref.{{load|store}}' op runs on the host but reads or writes device memory: this part of the algorithm has no GPU mapping yet (on the GPU, use strategy=recurrent)
func.func @deltanet(%q: tensor<?x?x2x64xbf16>, %v: tensor<?x?x2x64xbf16>, %beta: tensor<?x?x2xf32>, %s0: tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x2x64x64xf32>) {
  %o, %s = linattn.recurrence delta q(%q) k(%q) v(%v) beta(%beta) state(%s0)
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2xf32>, tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x2x64x64xf32>)
  return %o, %s : tensor<?x?x2x64xbf16>, tensor<?x2x64x64xf32>
}
