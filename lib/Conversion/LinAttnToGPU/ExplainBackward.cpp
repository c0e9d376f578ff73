//===- ExplainBackward.cpp - What runs the backward's chunked ops ---------===//
//
// For --explain: which of the backward's chunked ops the tensor-core kernels
// take and which keep (part of) their loop lowering, and why, asked of the
// same kernel plans the conversion builds.
//
//===----------------------------------------------------------------------===//

#include "ChunkGrad/ChunkGradKernels.h"
#include "ChunkedToGPUPatterns.h"
#include "StatePass/OutputShareOfGradValues.h"

#include "llvm/ADT/StringExtras.h"

namespace mlir::linattn::kernel {

/// linattn.qk_grad's kernel in words, for both of --explain's forms: a warp
/// per (b, t, h) row, summing its value heads' shares and going back
/// through the norm where it does.
static std::string describeQKGradKernel(QKGradOp qk) {
  std::string text = "a warp per (b, t, h) row";
  int64_t heads = dimOf(qk.getInput(), 2), valueHeads = dimOf(qk.getGrad(), 2);
  if (valueHeads != heads)
    text += ", the shares of its " + std::to_string(valueHeads / heads) +
            " value heads summed";
  if (qk.getFactored())
    text += ", back through qk_l2norm factored (the norms' share added)";
  else if (qk.getQkL2norm())
    text += ", back through qk_l2norm";
  return text;
}

static constexpr const char *kOwnGradients =
    "dq, dk: chunk_grad's own (one value head a q/k head, no qk_l2norm: no "
    "qk_grad)";

/// Whether a linattn.qk_grad takes chunk_grad's dq (sums it over value
/// heads, or goes back through qk_l2norm).
static bool takenByQKGrad(ChunkGradOp grad) {
  return llvm::any_of(grad.getGradQ().getUsers(),
                      [](Operation *user) { return isa<QKGradOp>(user); });
}

std::string describeBackwardKernels(Operation *root, const GPUTargetInfo &target) {
  SmallVector<std::string> parts;
  auto add = [&](std::string part) {
    if (!llvm::is_contained(parts, part)) // dq's and dk's qk_grad alike
      parts.push_back(std::move(part));
  };
  root->walk([&](Operation *op) {
    if (auto pass = dyn_cast<ChunkStatePassGradOp>(op)) {
      std::string why = whyNoReversePassKernel(pass, target);
      if (!why.empty())
        add("reverse chunk pass: loops (" + why + ")");
      else if (whyNoOutputShareKernel(pass, target).empty())
        add("reverse chunk pass: tensor-core kernel, after the kernel of its "
            "per-key scores' share");
      else
        add("reverse chunk pass: tensor-core kernel");
    } else if (auto grad = dyn_cast<ChunkGradOp>(op)) {
      add("chunk_grad: " + describeChunkGradLowering(grad, target));
      if (!takenByQKGrad(grad))
        add(kOwnGradients);
    } else if (auto qk = dyn_cast<QKGradOp>(op)) {
      add("qk_grad: " + describeQKGradKernel(qk));
    }
  });
  return llvm::join(parts, "; ");
}

void explainBackwardOps(Operation *root, const GPUTargetInfo &target) {
  root->walk([&](Operation *op) {
    if (auto grad = dyn_cast<ChunkGradOp>(op)) {
      grad.emitRemark() << "linattn GPU kernels for " << op->getName() << ": "
                        << describeChunkGradLowering(grad, target) << "; "
                        << (takenByQKGrad(grad)
                                ? "dq, dk per value head in f32, for qk_grad"
                                : kOwnGradients);
    } else if (auto qk = dyn_cast<QKGradOp>(op)) {
      qk.emitRemark() << "linattn GPU kernel for " << op->getName() << ": "
                      << describeQKGradKernel(qk);
    }
  });
}

} // namespace mlir::linattn::kernel
