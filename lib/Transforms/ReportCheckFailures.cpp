//===- ReportCheckFailures.cpp - Failed checks through the CUDA runtime ---===//
//
// A compiled GPU library runs inside its caller's process, where a failed
// cf.assert would abort it. Each host-side assert becomes a report to
// LinAttn's CUDA runtime, which records it as the call's status and skips
// the rest of the call's device work (linattn/MgpuRuntime.h).
//
//===----------------------------------------------------------------------===//

#include "LinAttn/Transforms/Passes.h"

#include "RuntimeFunctions.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir::linattn {
#define GEN_PASS_DEF_LINATTNREPORTCHECKFAILURES
#include "LinAttn/Transforms/Passes.h.inc"

namespace {

constexpr StringLiteral kCheckFailed = "linattnCudaCheckFailed";

struct LinAttnReportCheckFailures
    : impl::LinAttnReportCheckFailuresBase<LinAttnReportCheckFailures> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<cf::AssertOp> asserts;
    // Host functions only: a kernel's asserts (none are emitted) stay.
    for (auto func : module.getOps<func::FuncOp>())
      func.walk([&](cf::AssertOp op) { asserts.push_back(op); });
    if (asserts.empty())
      return;
    MLIRContext *ctx = &getContext();
    auto ptrType = LLVM::LLVMPointerType::get(ctx);
    func::FuncOp report = declareRuntimeFunction(
        module, kCheckFailed, FunctionType::get(ctx, {ptrType}, {}));
    if (!report)
      return signalPassFailure();
    for (auto [i, op] : llvm::enumerate(asserts)) {
      OpBuilder b(op);
      Location loc = op.getLoc();
      Value failed = arith::XOrIOp::create(
          b, loc, op.getArg(), arith::ConstantIntOp::create(b, loc, 1, 1));
      auto ifOp = scf::IfOp::create(b, loc, failed, /*withElseRegion=*/false);
      b.setInsertionPointToStart(ifOp.thenBlock());
      Value message = LLVM::createGlobalString(
          loc, b, ("__linattn_check_" + Twine(i)).str(),
          (op.getMsg() + Twine('\0')).str(), LLVM::Linkage::Internal);
      func::CallOp::create(b, loc, report, ValueRange{message});
      op.erase();
    }
  }
};

} // namespace
} // namespace mlir::linattn
