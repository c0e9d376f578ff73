// RUN: linattn-opt %s --linattn-insert-input-checks | FileCheck %s

// Each public function hands every floating-point memref argument, with
// the recurrence operand it is, to the runtime's check of its element type
// first; integer arguments and private functions are left alone.

// CHECK-DAG:   llvm.mlir.global internal constant @__linattn_role_f_0("q\00")
// CHECK-DAG:   llvm.mlir.global internal constant @__linattn_role_f_1("gate\00")
// CHECK-DAG:   llvm.mlir.global internal constant @__linattn_role_f_2("\00")
// CHECK-LABEL: func.func @f(
// CHECK-SAME:      %[[Q:.*]]: memref<?x?x8x64xbf16> {linattn.role = "q"}, %[[G:.*]]: memref<?x?x8xf32> {linattn.role = "gate"}, %[[X:.*]]: memref<4xf64>, %[[N:.*]]: memref<4xi32>)
// CHECK:         %[[I0:.*]] = arith.constant 0 : i64
// CHECK:         %[[U0:.*]] = memref.cast %[[Q]] : memref<?x?x8x64xbf16> to memref<*xbf16>
// CHECK:         %[[R0:.*]] = llvm.mlir.addressof @__linattn_role_f_0
// CHECK:         call @linattnCudaCheckInputBF16(%[[I0]], %[[U0]], %{{.*}}) : (i64, memref<*xbf16>, !llvm.ptr) -> ()
// CHECK:         %[[U1:.*]] = memref.cast %[[G]] : memref<?x?x8xf32> to memref<*xf32>
// CHECK:         call @linattnCudaCheckInputF32(%{{.*}}, %[[U1]], %{{.*}}) : (i64, memref<*xf32>, !llvm.ptr) -> ()
// CHECK:         %[[U2:.*]] = memref.cast %[[X]] : memref<4xf64> to memref<*xf64>
// CHECK:         call @linattnCudaCheckInputF64(%{{.*}}, %[[U2]], %{{.*}}) : (i64, memref<*xf64>, !llvm.ptr) -> ()
// CHECK-NOT:     call @linattnCudaCheckInput
// CHECK:         return
func.func @f(%q: memref<?x?x8x64xbf16> {linattn.role = "q"},
             %g: memref<?x?x8xf32> {linattn.role = "gate"},
             %x: memref<4xf64>, %n: memref<4xi32>) {
  return
}

// CHECK-LABEL: func.func private @helper(
// CHECK-NOT:     call @linattnCudaCheckInput
func.func private @helper(%x: memref<4xf32>) {
  return
}

// CHECK-DAG: func.func private @linattnCudaCheckInputBF16(i64, memref<*xbf16>, !llvm.ptr)
// CHECK-DAG: func.func private @linattnCudaCheckInputF32(i64, memref<*xf32>, !llvm.ptr)
// CHECK-DAG: func.func private @linattnCudaCheckInputF64(i64, memref<*xf64>, !llvm.ptr)
