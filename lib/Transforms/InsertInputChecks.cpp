//===- InsertInputChecks.cpp - Check inputs before a GPU call runs --------===//
//
// A positive log gate or a beta above 1 makes the recurrence blow up into
// NaN without a word. Compiled with the check, a library's public
// functions hand each floating-point argument to LinAttn's CUDA runtime
// first (linattnCudaCheckInput<type>, linattn/MgpuRuntime.h), which names
// the first element the recurrence cannot take; the rule itself has one
// home, the runtime's linattn/InputCheck.h, which the runners share.
//
//===----------------------------------------------------------------------===//

#include "LinAttn/Transforms/Passes.h"

#include "RuntimeFunctions.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir::linattn {
#define GEN_PASS_DEF_LINATTNINSERTINPUTCHECKS
#include "LinAttn/Transforms/Passes.h.inc"

namespace {

/// The runtime's check for memrefs of `elementType`, or "" if it has none.
StringRef checkFunctionName(Type elementType) {
  if (elementType.isF32())
    return "linattnCudaCheckInputF32";
  if (elementType.isF16())
    return "linattnCudaCheckInputF16";
  if (elementType.isBF16())
    return "linattnCudaCheckInputBF16";
  if (elementType.isF64())
    return "linattnCudaCheckInputF64";
  return "";
}

struct LinAttnInsertInputChecks
    : impl::LinAttnInsertInputChecksBase<LinAttnInsertInputChecks> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    auto ptrType = LLVM::LLVMPointerType::get(ctx);
    SmallVector<func::FuncOp> publicFunctions;
    for (auto func : module.getOps<func::FuncOp>())
      if (func.isPublic() && !func.isExternal())
        publicFunctions.push_back(func);
    for (func::FuncOp func : publicFunctions) {
      OpBuilder b = OpBuilder::atBlockBegin(&func.getBody().front());
      Location loc = func.getLoc();
      for (BlockArgument arg : func.getArguments()) {
        auto type = dyn_cast<MemRefType>(arg.getType());
        if (!type)
          continue;
        StringRef name = checkFunctionName(type.getElementType());
        if (name.empty())
          continue;
        auto unranked = UnrankedMemRefType::get(type.getElementType(),
                                                type.getMemorySpace());
        func::FuncOp check = declareRuntimeFunction(
            module, name,
            FunctionType::get(ctx, {b.getI64Type(), unranked, ptrType}, {}));
        if (!check)
          return signalPassFailure();
        auto roleAttr = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                          kRoleAttrName);
        std::string role = roleAttr ? roleAttr.getValue().str() : "";
        Value index =
            arith::ConstantIntOp::create(b, loc, arg.getArgNumber(), 64);
        Value cast = memref::CastOp::create(b, loc, unranked, arg);
        Value roleString = LLVM::createGlobalString(
            loc, b,
            ("__linattn_role_" + func.getSymName() + "_" +
             Twine(arg.getArgNumber()))
                .str(),
            role + '\0',
            LLVM::Linkage::Internal);
        func::CallOp::create(b, loc, check, ValueRange{index, cast, roleString});
      }
    }
  }
};

} // namespace
} // namespace mlir::linattn
