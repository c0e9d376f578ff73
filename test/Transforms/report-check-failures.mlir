// RUN: linattn-opt %s --linattn-report-check-failures | FileCheck %s

// A host function's run-time check reports through the CUDA runtime where
// it fails, instead of aborting the process; the message is a private
// global string.

// CHECK:       llvm.mlir.global internal constant @__linattn_check_0("linattn.recurrence: dimension T of 'v' does not match 'q'\00")
// CHECK-LABEL: func.func @f(
// CHECK-SAME:      %[[SAME:.*]]: i1)
// CHECK-NOT:     cf.assert
// CHECK:         %[[TRUE:.*]] = arith.constant true
// CHECK:         %[[FAILED:.*]] = arith.xori %[[SAME]], %[[TRUE]] : i1
// CHECK:         scf.if %[[FAILED]] {
// CHECK:           %[[MSG:.*]] = llvm.mlir.addressof @__linattn_check_0 : !llvm.ptr
// CHECK:           func.call @linattnCudaCheckFailed(%{{.*}}) : (!llvm.ptr) -> ()
// CHECK:         }
// CHECK:         return
// CHECK:       func.func private @linattnCudaCheckFailed(!llvm.ptr)
func.func @f(%same: i1) {
  cf.assert %same, "linattn.recurrence: dimension T of 'v' does not match 'q'"
  return
}
