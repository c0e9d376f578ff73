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
      ChunkGradLowering lowering = chooseChunkGradLowering(grad, target);
      switch (lowering.kind) {
      case ChunkGradLowering::Kind::Loops:
        add("chunk_grad: loops (" + lowering.why + ")");
        break;
      case ChunkGradLowering::Kind::KeyKernel: {
        std::string key = "the key kernel (" + describeKeyGradKernel(grad, target) + ")";
        add(lowering.why.empty() ? "chunk_grad: " + key
                                 : "chunk_grad: loops for the WY share (" +
                                       lowering.why + "), then " + key);
        break;
      }
      case ChunkGradLowering::Kind::WYAndKeyKernels:
        add("chunk_grad: the WY kernel (" + describeWYGradKernel(grad, target) +
            ") and the key kernel (" + describeKeyGradKernel(grad, target) + ")");
        break;
      }
      if (llvm::none_of(grad.getGradQ().getUsers(),
                        [](Operation *user) { return isa<QKGradOp>(user); }))
        add("dq, dk: chunk_grad's own (one value head a q/k head, no "
            "qk_l2norm: no qk_grad)");
    } else if (isa<QKGradOp>(op)) {
      add("qk_grad: a warp per (b, t, h) row");
    }
  });
  return llvm::join(parts, "; ");
}

} // namespace mlir::linattn::kernel
