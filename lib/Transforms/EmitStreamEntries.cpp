//===- EmitStreamEntries.cpp - Synchronous and stream entry points --------===//
//
// The host code gpu-to-llvm produces asks the runtime for a stream around
// every allocation and launch and waits for each. LinAttn's runtime binds
// all of those to one stream per call instead (linattnCudaBeginCall), so
// this pass wraps each public function in the two calls that bracket it,
// once on the legacy default stream (waited for) and once on a stream the
// caller passes (not waited for).
//
//===----------------------------------------------------------------------===//

#include "LinAttn/Transforms/Passes.h"

#include "RuntimeFunctions.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::linattn {
#define GEN_PASS_DEF_LINATTNEMITSTREAMENTRIES
#include "LinAttn/Transforms/Passes.h.inc"

namespace {

constexpr StringLiteral kBeginCall = "linattnCudaBeginCall";
constexpr StringLiteral kEndCall = "linattnCudaEndCall";

/// Whether `func`'s results can be handed to a caller who frees them (the
/// ABI of linattn/Abi.h: each result a buffer of its own, made by the
/// call); an error on the function naming the result if not.
LogicalResult checkResultsAreNewBuffers(func::FuncOp func) {
  LogicalResult result = success();
  func.walk([&](func::ReturnOp ret) {
    llvm::SmallDenseMap<Value, unsigned> seen;
    for (unsigned i = 0, e = ret.getNumOperands(); i < e; ++i) {
      Value value = ret.getOperand(i);
      if (!isa<BaseMemRefType>(value.getType()))
        continue;
      auto why = [&]() -> std::string {
        if (auto arg = dyn_cast<BlockArgument>(value))
          return "is its argument #" + std::to_string(arg.getArgNumber());
        if (auto [it, inserted] = seen.try_emplace(value, i); !inserted)
          return "is also result #" + std::to_string(it->second);
        if (value.getDefiningOp<memref::GetGlobalOp>())
          return "is a constant";
        return "";
      }();
      if (why.empty())
        continue;
      func.emitOpError() << "result #" << i << " " << why
                         << ": a compiled GPU function's results are new "
                            "device buffers its caller frees (linattn/Abi.h); "
                            "return results of linattn ops";
      result = failure();
    }
  });
  return result;
}

struct LinAttnEmitStreamEntries
    : impl::LinAttnEmitStreamEntriesBase<LinAttnEmitStreamEntries> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    StringRef cInterface = LLVM::LLVMDialect::getEmitCWrapperAttrName();
    auto ptrType = LLVM::LLVMPointerType::get(ctx);
    SymbolTable symbols(module);

    SmallVector<func::FuncOp> publicFuncs;
    for (auto func : module.getOps<func::FuncOp>())
      if (func.isPublic() && !func.isExternal())
        publicFuncs.push_back(func);
    if (publicFuncs.empty())
      return;
    func::FuncOp begin = declareRuntimeFunction(
        module, kBeginCall, FunctionType::get(ctx, {ptrType}, {}));
    func::FuncOp end = declareRuntimeFunction(
        module, kEndCall,
        FunctionType::get(ctx, {IntegerType::get(ctx, 1)}, {}));
    if (!begin || !end)
      return signalPassFailure();

    for (func::FuncOp func : publicFuncs)
      if (failed(checkResultsAreNewBuffers(func)))
        return signalPassFailure();
    for (func::FuncOp func : publicFuncs) {
      std::string name = func.getSymName().str();
      std::string bodyName = "__linattn_body_" + name;
      std::string asyncName = name + "_async";
      for (const std::string &taken : {bodyName, asyncName})
        if (symbols.lookup(taken)) {
          func.emitOpError() << "needs the symbol '" << taken
                             << "' for its entry points, but the module "
                                "already defines it";
          return signalPassFailure();
        }

      // The body keeps the code; calls to @f now reach it directly (a
      // nested call would otherwise begin a second call on the thread).
      if (failed(symbols.rename(func, bodyName)))
        return signalPassFailure();
      func.setPrivate();
      func->removeAttr(cInterface);
      // Not exported from the object either: only the entries are the ABI.
      func->setAttr("llvm.linkage",
                    LLVM::LinkageAttr::get(ctx, LLVM::Linkage::Internal));

      FunctionType type = func.getFunctionType();
      auto emitEntry = [&](StringRef entryName, bool onCallerStream) {
        SmallVector<Type> inputs;
        if (onCallerStream)
          inputs.push_back(ptrType);
        llvm::append_range(inputs, type.getInputs());
        OpBuilder b(func);
        Location loc = func.getLoc();
        auto entry = func::FuncOp::create(
            b, loc, entryName, FunctionType::get(ctx, inputs, type.getResults()));
        entry->setAttr(cInterface, UnitAttr::get(ctx));
        Block *block = entry.addEntryBlock();
        b.setInsertionPointToStart(block);
        ValueRange args = block->getArguments();
        // The synchronous entry runs on the legacy default stream (null):
        // it begins after earlier work of blocking streams, like a
        // synchronous CUDA call.
        Value stream = onCallerStream
                           ? args.front()
                           : LLVM::ZeroOp::create(b, loc, ptrType).getResult();
        func::CallOp::create(b, loc, begin, ValueRange{stream});
        auto body = func::CallOp::create(
            b, loc, func, onCallerStream ? args.drop_front() : args);
        Value synchronize =
            arith::ConstantIntOp::create(b, loc, !onCallerStream, 1);
        func::CallOp::create(b, loc, end, ValueRange{synchronize});
        func::ReturnOp::create(b, loc, body.getResults());
        symbols.insert(entry);
      };
      emitEntry(name, /*onCallerStream=*/false);
      emitEntry(asyncName, /*onCallerStream=*/true);
    }
  }
};

} // namespace
} // namespace mlir::linattn
