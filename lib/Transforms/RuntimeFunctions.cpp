//===- RuntimeFunctions.cpp - Declarations of LinAttn's runtime calls -----===//

#include "RuntimeFunctions.h"

namespace mlir::linattn {

func::FuncOp declareRuntimeFunction(ModuleOp module, StringRef name,
                                    FunctionType type) {
  if (Operation *existing = module.lookupSymbol(name)) {
    auto func = dyn_cast<func::FuncOp>(existing);
    if (func && func.isExternal() && func.getFunctionType() == type)
      return func;
    existing->emitOpError() << "defines '" << name
                            << "', which LinAttn's CUDA runtime provides as "
                            << type;
    return nullptr;
  }
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  auto decl = func::FuncOp::create(b, module.getLoc(), name, type);
  decl.setPrivate();
  return decl;
}

} // namespace mlir::linattn
