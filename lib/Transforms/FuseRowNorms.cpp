//===- FuseRowNorms.cpp - Form qk_l2norm's row norms in their readers -----===//
//
// The fusion decision of qk_l2norm factored, made on the algorithm ops: an
// rnorm read only by UT transforms (of its keys) and chunk outputs (of its
// queries) becomes their `k_l2norm` / `q_l2norm`, each kernel forming the
// norms of the rows it stages.
//
//===----------------------------------------------------------------------===//

#include "LinAttn/Transforms/Passes.h"

#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

#include "mlir/IR/PatternMatch.h"

namespace mlir::linattn {
#define GEN_PASS_DEF_LINATTNFUSEROWNORMS
#include "LinAttn/Transforms/Passes.h.inc"

namespace {

/// Whether `user` reads r = rnorm(x) only as the norms of rows it reads
/// itself: a UT transform's `k_rnorm` of its keys x, or a chunk output's
/// `q_rnorm` of its queries x, and as no other operand (r [B, T, H] f32
/// could also stand for gates or betas where H = HV).
bool formsNormsItself(Operation *user, RNormOp norm) {
  Value r = norm.getResult(), x = norm.getInput();
  if (llvm::count(user->getOperands(), r) != 1)
    return false;
  if (auto ut = dyn_cast<UTTransformOp>(user))
    return ut.getKRnorm() == r && ut.getK() == x;
  if (auto output = dyn_cast<ChunkOutputOp>(user))
    return output.getQRnorm() == r && output.getQ() == x;
  return false;
}

/// r = rnorm(x) read only by such ops: each takes the attribute instead.
///   %r = rnorm %k; ut_transform k(%k) k_rnorm(%r) ...
///   -> ut_transform k(%k) ... {k_l2norm}
bool foldIntoReaders(RNormOp norm, RewriterBase &rewriter) {
  if (norm->use_empty() ||
      !llvm::all_of(norm->getUsers(), [&](Operation *user) {
        return formsNormsItself(user, norm);
      }))
    return false;
  for (Operation *user : llvm::make_early_inc_range(norm->getUsers())) {
    rewriter.modifyOpInPlace(user, [&] {
      if (auto ut = dyn_cast<UTTransformOp>(user)) {
        ut.getKRnormMutable().clear();
        ut.setKL2norm(true);
      } else {
        auto output = cast<ChunkOutputOp>(user);
        output.getQRnormMutable().clear();
        output.setQL2norm(true);
      }
    });
  }
  rewriter.eraseOp(norm);
  return true;
}

struct LinAttnFuseRowNorms
    : impl::LinAttnFuseRowNormsBase<LinAttnFuseRowNorms> {
  using Base::Base;

  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<RNormOp> norms;
    getOperation()->walk([&](RNormOp op) { norms.push_back(op); });
    for (RNormOp op : norms)
      numFolded += foldIntoReaders(op, rewriter);
  }
};

} // namespace
} // namespace mlir::linattn
