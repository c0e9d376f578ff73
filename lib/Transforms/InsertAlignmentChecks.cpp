//===- InsertAlignmentChecks.cpp - Arguments on 16-byte boundaries --------===//
//
// The GPU kernels load their inputs 16 bytes an access (cp.async, vector
// loads of whole rows). An argument whose data starts elsewhere (a view at
// an odd offset) would stop the call at its first such load with a CUDA
// error that leaves the caller's context unusable. Each public function
// checks its memref arguments first; the failed assert is reported and
// the call's device work skipped (linattn-report-check-failures).
//
//===----------------------------------------------------------------------===//

#include "LinAttn/Transforms/Passes.h"

#include "LinAttn/Conversion/LinAttnToGPU/TargetInfo.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir::linattn {
#define GEN_PASS_DEF_LINATTNINSERTALIGNMENTCHECKS
#include "LinAttn/Transforms/Passes.h.inc"

namespace {

struct LinAttnInsertAlignmentChecks
    : impl::LinAttnInsertAlignmentChecksBase<LinAttnInsertAlignmentChecks> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (!func.isPublic() || func.isExternal())
        continue;
      OpBuilder b = OpBuilder::atBlockBegin(&func.getBody().front());
      Location loc = func.getLoc();
      for (BlockArgument arg : func.getArguments()) {
        auto type = dyn_cast<MemRefType>(arg.getType());
        if (!type || !type.getElementType().isIntOrFloat())
          continue;
        // first = aligned pointer + offset * bytes per element.
        int64_t bytes = type.getElementType().getIntOrFloatBitWidth() / 8;
        Value pointer =
            memref::ExtractAlignedPointerAsIndexOp::create(b, loc, arg);
        auto metadata =
            memref::ExtractStridedMetadataOp::create(b, loc, arg);
        Value first = arith::AddIOp::create(
            b, loc, pointer,
            arith::MulIOp::create(
                b, loc, metadata.getOffset(),
                arith::ConstantIndexOp::create(b, loc, bytes)));
        Value rem = arith::RemUIOp::create(
            b, loc, first,
            arith::ConstantIndexOp::create(b, loc, kArgumentAlignmentBytes));
        Value aligned = arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::eq, rem,
            arith::ConstantIndexOp::create(b, loc, 0));
        auto role =
            func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kRoleAttrName);
        std::string message = (func.getSymName() + ": argument #" +
                               Twine(arg.getArgNumber()))
                                  .str();
        if (role)
          message += " (" + role.getValue().str() + ")";
        std::string boundary = std::to_string(kArgumentAlignmentBytes);
        message += " must start on a " + boundary +
                   "-byte boundary (the GPU kernels load it " + boundary +
                   " bytes at a time)";
        cf::AssertOp::create(b, loc, aligned, b.getStringAttr(message));
      }
    }
  }
};

} // namespace
} // namespace mlir::linattn
