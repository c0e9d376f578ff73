// RUN: linattn-opt %s --linattn-insert-alignment-checks | FileCheck %s

// Each public function first asserts, for every memref argument, that its
// first element (aligned pointer + offset x bytes per element) sits on a
// 16-byte boundary, naming the argument and its role; private functions
// are left alone.

// CHECK-LABEL: func.func @f(
// CHECK-SAME:      %[[Q:[^:]+]]: memref<?x?x8x48xbf16> {linattn.role = "q"}, %[[S:[^:]+]]: memref<?x8x48x48xf32, strided<[?, ?, ?, 1], offset: ?>>, %[[N:[^:]+]]: memref<4xi8>)
// CHECK:         %[[P:.*]] = memref.extract_aligned_pointer_as_index %[[Q]]
// CHECK:         %{{.*}}, %[[OFF:.*]], %{{.*}}:4, %{{.*}}:4 = memref.extract_strided_metadata %[[Q]]
// CHECK:         %[[BYTES:.*]] = arith.muli %[[OFF]], %c2 : index
// CHECK:         %[[FIRST:.*]] = arith.addi %[[P]], %[[BYTES]] : index
// CHECK:         %[[REM:.*]] = arith.remui %[[FIRST]], %c16 : index
// CHECK:         %[[OK:.*]] = arith.cmpi eq, %[[REM]], %c0 : index
// CHECK:         cf.assert %[[OK]], "f: argument #0 (q) must start on a 16-byte boundary (the GPU kernels load it 16 bytes at a time)"
// CHECK:         memref.extract_strided_metadata %[[S]]
// CHECK:         arith.muli %{{.*}}, %c4 : index
// CHECK:         cf.assert %{{.*}}, "f: argument #1 must start on a 16-byte boundary
// CHECK:         memref.extract_strided_metadata %[[N]]
// CHECK:         arith.muli %{{.*}}, %c1 : index
// CHECK:         cf.assert %{{.*}}, "f: argument #2 must start
// CHECK-NOT:     cf.assert
// CHECK:         return
func.func @f(%q: memref<?x?x8x48xbf16> {linattn.role = "q"},
             %s: memref<?x8x48x48xf32, strided<[?, ?, ?, 1], offset: ?>>,
             %n: memref<4xi8>) {
  return
}

// CHECK-LABEL: func.func private @helper(
// CHECK-NOT:     cf.assert
func.func private @helper(%x: memref<4xf32>) {
  return
}
