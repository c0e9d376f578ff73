//===- InsertShapeChecks.cpp - Run-time checks of a recurrence's shapes ---===//

#include "LinAttn/Transforms/Passes.h"

#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::linattn {
#define GEN_PASS_DEF_LINATTNINSERTSHAPECHECKS
#include "LinAttn/Transforms/Passes.h.inc"

namespace {

struct LinAttnInsertShapeChecks
    : impl::LinAttnInsertShapeChecksBase<LinAttnInsertShapeChecks> {
  void runOnOperation() override {
    getOperation()->walk([](Operation *op) {
      if (auto recurrence = dyn_cast<RecurrenceOp>(op))
        insertChecks(recurrence, "linattn.recurrence");
      else if (auto grad = dyn_cast<RecurrenceGradOp>(op))
        insertChecks(grad, "linattn.recurrence_grad");
    });
  }

  /// A cf.assert for each dynamic dimension equality of `op`.
  template <typename SpecOp>
  static void insertChecks(SpecOp op, StringRef opName) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    for (const SpecDimEquality &eq : op.getDimEqualities()) {
      Value lhs = op.getOperand(eq.lhsOperand);
      Value rhs = op.getOperand(eq.rhsOperand);
      auto lhsType = cast<RankedTensorType>(lhs.getType());
      auto rhsType = cast<RankedTensorType>(rhs.getType());
      if (!lhsType.isDynamicDim(eq.lhsDim) && !rhsType.isDynamicDim(eq.rhsDim))
        continue; // The verifier proved it.
      auto size = [&](Value v, unsigned d) -> Value {
        return tensor::DimOp::create(b, loc, v, d);
      };
      Value lhsSize = size(lhs, eq.lhsDim);
      Value rhsSize = size(rhs, eq.rhsDim);
      Value same = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                         lhsSize, rhsSize);
      std::string msg =
          (opName + ": dimension " + eq.what + " of '" +
           op.getOperandName(eq.rhsOperand) + "' does not match '" +
           op.getOperandName(eq.lhsOperand) + "'")
              .str();
      cf::AssertOp::create(b, loc, same, b.getStringAttr(msg));
    }
  }
};

} // namespace
} // namespace mlir::linattn
