//===- EmitCInterface.cpp - Mark public functions for C callers -----------===//

#include "LinAttn/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::linattn {
#define GEN_PASS_DEF_LINATTNEMITCINTERFACE
#include "LinAttn/Transforms/Passes.h.inc"

namespace {
struct LinAttnEmitCInterface
    : impl::LinAttnEmitCInterfaceBase<LinAttnEmitCInterface> {
  void runOnOperation() override {
    StringRef attrName = LLVM::LLVMDialect::getEmitCWrapperAttrName();
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (func.isPublic() && !func.isExternal())
        func->setAttr(attrName, UnitAttr::get(&getContext()));
  }
};
} // namespace
} // namespace mlir::linattn
