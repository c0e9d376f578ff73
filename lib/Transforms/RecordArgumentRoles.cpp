//===- RecordArgumentRoles.cpp - What each argument is to its recurrence --===//

#include "LinAttn/Transforms/Passes.h"

#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::linattn {
#define GEN_PASS_DEF_LINATTNRECORDARGUMENTROLES
#include "LinAttn/Transforms/Passes.h.inc"

namespace {

struct LinAttnRecordArgumentRoles
    : impl::LinAttnRecordArgumentRolesBase<LinAttnRecordArgumentRoles> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (!func.isPublic() || func.isExternal())
        continue;
      auto record = [&](auto op) {
        for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
          auto arg = dyn_cast<BlockArgument>(operand);
          if (!arg || arg.getOwner() != &func.getBody().front())
            continue;
          func.setArgAttr(arg.getArgNumber(), kRoleAttrName,
                          StringAttr::get(&getContext(), op.getOperandName(i)));
        }
      };
      func.walk([&](RecurrenceOp op) { record(op); });
      func.walk([&](RecurrenceGradOp op) { record(op); });
    }
  }
};

} // namespace
} // namespace mlir::linattn
