//===- FuseChunkOutput.cpp - Form the chunk outputs in the state pass -----===//
//
// The fusion decision of the delta rules' chunked forward, made on the
// algorithm ops: a chunk_output that alone reads a chunk_state_pass's chunk
// states and new values becomes, with it, one chunk_state_pass_output,
// whose kernel forms every chunk's output from S_n and D_n where it makes
// them instead of storing both for a second kernel to read back.
//
//===----------------------------------------------------------------------===//

#include "LinAttn/Transforms/Passes.h"

#include "LinAttn/Conversion/LinAttnToGPU/TargetInfo.h"
#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"
#include "LinAttn/Utils/LoopEmitter.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"

namespace mlir::linattn {
#define GEN_PASS_DEF_LINATTNFUSECHUNKOUTPUT
#include "LinAttn/Transforms/Passes.h.inc"

namespace {

Type elementOf(Value v) { return getElementTypeOrSelf(v.getType()); }

/// Whether the fused kernel takes `pass` (chunked_kernels::
/// hasFusedOutputPass and the forms the description names): WY form,
/// unsegmented, one state, the default block, 16-bit D and S_n of k's type.
bool passTakesFusion(ChunkStatePassOp pass) {
  Type elem = elementOf(pass.getK());
  return pass.getW() && !pass.getBeta() && !pass.getKRnorm() &&
         !pass.getSegmentChunks() && !pass.getDecayedKeys() &&
         cast<ShapedType>(pass.getInitialState().getType()).getRank() == 4 &&
         !pass->hasAttr(chunked_kernels::kStateColumnsAttrName) &&
         pass.getChunkSize() == uint64_t(chunked_kernels::kChunk) &&
         (!pass.getGates() ||
          cast<ShapedType>(pass.getGates().getType()).getRank() == 3) &&
         elem.getIntOrFloatBitWidth() == 16 &&
         elementOf(pass.getNewValues()) == elem &&
         elementOf(pass.getChunkStates()) == elem &&
         chunked_kernels::hasFusedOutputPass(dimOf(pass.getK(), 3),
                                             dimOf(pass.getU(), 3));
}

/// Whether `states` comes from a state pass the fused kernel takes, or from
/// an scf.if one of whose branches yields such a pass's (the run-time
/// forms: the default block in one branch, wide blocks in the other).
bool reachesFusablePass(Value states) {
  if (auto pass = states.getDefiningOp<ChunkStatePassOp>())
    return passTakesFusion(pass);
  auto result = dyn_cast<OpResult>(states);
  auto ifOp = result ? dyn_cast<scf::IfOp>(result.getOwner()) : scf::IfOp();
  if (!ifOp || ifOp.getElseRegion().empty())
    return false;
  return llvm::any_of(ifOp->getRegions(), [&](Region &region) {
    return reachesFusablePass(
        region.front().getTerminator()->getOperand(result.getResultNumber()));
  });
}

/// The state pass whose chunk states and new values `output` alone reads,
/// where the fused kernel takes the pair, or null.
ChunkStatePassOp fusablePass(ChunkOutputOp output) {
  auto pass = output.getChunkStates().getDefiningOp<ChunkStatePassOp>();
  if (!pass || output.getNewValues() != pass.getNewValues() ||
      !pass.getNewValues().hasOneUse() || !pass.getChunkStates().hasOneUse() ||
      !passTakesFusion(pass))
    return {};
  // The output: the pass's keys, gates (per row, or none) and chunks; q's
  // norms formed from its rows, if at all; unsegmented.
  if (output.getK() != pass.getK() || output.getGates() != pass.getGates() ||
      (output.getGates() &&
       cast<ShapedType>(output.getGates().getType()).getRank() != 3) ||
      output.getQRnorm() || output.getCarries() ||
      output.getChunkSize() != pass.getChunkSize())
    return {};
  // One 16-bit type for q, k, D, S_n and o.
  Type elem = elementOf(pass.getK());
  if (elementOf(output.getQ()) != elem || elementOf(output.getOutput()) != elem)
    return {};
  return pass;
}

/// Where the fused op can stand: at the pass, where q dominates it, or at
/// the output, where no reader of the final state comes before it.
Operation *insertionPoint(ChunkStatePassOp pass, ChunkOutputOp output,
                          DominanceInfo &dominance) {
  if (dominance.properlyDominates(output.getQ(), pass))
    return pass;
  bool readBefore =
      llvm::any_of(pass.getFinalState().getUsers(), [&](Operation *user) {
        return !dominance.properlyDominates(output.getOperation(), user);
      });
  return readBefore ? nullptr : output.getOperation();
}

/// An output that alone reads two results of an scf.if (the state pass's
/// run-time forms, one a branch) moves into both branches, each then
/// reading its own pass's:
///   %r:3 = scf.if %c { yield %d1, %s1, %f1 } else { yield %d2, %s2, %f2 }
///   %o = chunk_output ... new_values(%r#0) states(%r#1) ...
///   -> %r:2 = scf.if %c { %o1 = chunk_output ... (%d1) (%s1); yield %o1, %f1 }
///            else { ...; yield %o2, %f2 }
/// Its other operands must come before the if.
bool sinkIntoBranches(ChunkOutputOp output, RewriterBase &rewriter) {
  auto values = dyn_cast<OpResult>(output.getNewValues());
  auto states = dyn_cast<OpResult>(output.getChunkStates());
  auto ifOp = values ? dyn_cast<scf::IfOp>(values.getOwner()) : scf::IfOp();
  if (!ifOp || !states || states.getOwner() != ifOp.getOperation() ||
      ifOp.getElseRegion().empty() || !values.hasOneUse() ||
      !states.hasOneUse() || output->getBlock() != ifOp->getBlock())
    return false;
  DominanceInfo dominance(ifOp->getParentOp());
  for (Value operand : output->getOperands())
    if (operand != values && operand != states &&
        !dominance.properlyDominates(operand, ifOp))
      return false;
  unsigned vi = values.getResultNumber(), si = states.getResultNumber();
  // The new if's results: the old ones but D and S_n, then o.
  SmallVector<Type> types;
  SmallVector<unsigned> kept;
  for (OpResult r : ifOp->getResults())
    if (r.getResultNumber() != vi && r.getResultNumber() != si) {
      kept.push_back(r.getResultNumber());
      types.push_back(r.getType());
    }
  types.push_back(output.getOutput().getType());
  // At the old if: readers of its other results may come before the
  // output.
  rewriter.setInsertionPoint(ifOp);
  auto sunk = scf::IfOp::create(rewriter, ifOp.getLoc(), types,
                                ifOp.getCondition(), /*withElse=*/true);
  for (auto [from, to] :
       {std::pair(&ifOp.getThenRegion(), &sunk.getThenRegion()),
        std::pair(&ifOp.getElseRegion(), &sunk.getElseRegion())}) {
    rewriter.eraseBlock(&to->front());
    rewriter.inlineRegionBefore(*from, *to, to->end());
    auto yield = cast<scf::YieldOp>(to->front().getTerminator());
    rewriter.setInsertionPoint(yield);
    IRMapping mapping;
    mapping.map(values, yield.getOperand(vi));
    mapping.map(states, yield.getOperand(si));
    Operation *copy = rewriter.clone(*output, mapping);
    SmallVector<Value> yielded;
    for (unsigned i : kept)
      yielded.push_back(yield.getOperand(i));
    yielded.push_back(copy->getResult(0));
    rewriter.replaceOpWithNewOp<scf::YieldOp>(yield, yielded);
  }
  rewriter.replaceAllUsesWith(output.getOutput(), sunk.getResults().back());
  for (auto [i, r] : llvm::enumerate(kept))
    rewriter.replaceAllUsesWith(ifOp->getResult(r), sunk.getResult(i));
  rewriter.eraseOp(output);
  rewriter.eraseOp(ifOp);
  return true;
}

/// %d, %states, %final = chunk_state_pass ...; %o = chunk_output ...
///   -> %o, %final = chunk_state_pass_output ...
bool fuse(ChunkOutputOp output, DominanceInfo &dominance,
          RewriterBase &rewriter) {
  ChunkStatePassOp pass = fusablePass(output);
  if (!pass)
    return false;
  Operation *at = insertionPoint(pass, output, dominance);
  if (!at)
    return false;
  rewriter.setInsertionPoint(at);
  auto fused = ChunkStatePassOutputOp::create(
      rewriter, output.getLoc(),
      TypeRange{output.getOutput().getType(), pass.getFinalState().getType()},
      output.getQ(), pass.getK(), pass.getU(), pass.getW(), pass.getGates(),
      pass.getInitialState(), pass.getChunkSizeAttr(), output.getScaleAttr(),
      output.getQL2normAttr());
  rewriter.replaceOp(output, fused.getOutput());
  rewriter.replaceAllUsesWith(pass.getFinalState(), fused.getFinalState());
  rewriter.eraseOp(pass);
  return true;
}

struct LinAttnFuseChunkOutput
    : impl::LinAttnFuseChunkOutputBase<LinAttnFuseChunkOutput> {
  using Base::Base;

  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    // Into the run-time forms' branches first, as deep as they go.
    for (bool sunk = true; sunk;) {
      sunk = false;
      SmallVector<ChunkOutputOp> outputs;
      getOperation()->walk([&](ChunkOutputOp op) { outputs.push_back(op); });
      for (ChunkOutputOp op : outputs)
        if (!op.getChunkStates().getDefiningOp<ChunkStatePassOp>() &&
            reachesFusablePass(op.getChunkStates()))
          sunk |= sinkIntoBranches(op, rewriter);
    }
    SmallVector<ChunkOutputOp> outputs;
    getOperation()->walk([&](ChunkOutputOp op) { outputs.push_back(op); });
    for (ChunkOutputOp op : outputs) {
      DominanceInfo dominance(getOperation());
      numFused += fuse(op, dominance, rewriter);
    }
  }
};

} // namespace
} // namespace mlir::linattn
