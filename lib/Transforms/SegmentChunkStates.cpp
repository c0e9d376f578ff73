//===- SegmentChunkStates.cpp - The state pass cut into segments ----------===//
//
// With scalar transitions a_n = exp(G_C(n)) the state pass
//   S_{n+1} = a_n S_n + B_n
// is a linear recurrence whose composition over a run of chunks is again a
// scalar times a state. Cutting the chunks into segments of M, each run
// from zero gives local states L_n with
//   S_n = L_n + exp(sum_{m = sM}^{n-1} G_C(m)) C_s,
//   C_0 = 0 (S_0 is in segment 0's local states),
//   C_{s+1} = exp(sum over segment s of G_C) C_s + E_s,
// E_s the local state at segment s's end (DESIGN.md section 2's scan over
// chunks, two levels deep). The chunk states' bytes are unchanged; the
// carries are one state per segment.
//
// Dense transitions (a rank-1 term in WY form, or per-key gates) compose
// into K x K maps: each segment's map S -> A_s S + E_s comes from a state
// pass over [A | E] (linattn.segment_maps, K + V columns from [I | 0]),
// the entering states C_{s+1} = A_s C_s + E_s from linattn.segment_entries,
// and the state pass runs again, every segment from its entering state,
// for the chunk states and new values (the outputs are unchanged): about
// (2K + V) / V times the state pass's work, on NS times the chains.
//
// Segments pay only where the sequential chains (B * HV * V / 32 state-pass
// blocks on the GPU) leave the machine idle, which B decides at run time;
// with max-state-columns the pass keeps both forms and branches on B and T.
//
//===----------------------------------------------------------------------===//

#include "LinAttn/Transforms/Passes.h"

#include "RecurrenceUtils.h"

#include "LinAttn/Conversion/LinAttnToGPU/TargetInfo.h"
#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::linattn {
#define GEN_PASS_DEF_LINATTNSEGMENTCHUNKSTATES
#include "LinAttn/Transforms/Passes.h.inc"

namespace {

/// Whether `op` can be cut: not yet segmented, scalar transitions (no
/// rank-1 term, no per-key gates), and chunk states read only by outputs
/// of its chunk size and gates (which then take the carries).
bool isSegmentable(ChunkStatePassOp op) {
  if (op.getSegmentChunks() || op.getW() || op.getBeta() ||
      (op.getGates() && cast<ShapedType>(op.getGates().getType()).getRank() == 4))
    return false;
  return llvm::all_of(op.getChunkStates().getUsers(), [&](Operation *user) {
    auto output = dyn_cast<ChunkOutputOp>(user);
    return output && !output.getCarries() &&
           output.getChunkSize() == op.getChunkSize() &&
           output.getGates() == op.getGates();
  });
}

/// Whether `op` can be cut by the segments' maps: not yet segmented, dense
/// transitions in WY form (a rank-1 term as W, or per-key gates), and
/// chunk states read only by outputs (a forward pass: the backward's
/// recomputed states keep one chain, its segments not yet checked on the
/// GPU).
bool isDenselySegmentable(ChunkStatePassOp op) {
  if (op.getSegmentChunks() || op.getBeta())
    return false;
  bool perKey =
      op.getGates() && cast<ShapedType>(op.getGates().getType()).getRank() == 4;
  return (op.getW() || perKey) &&
         llvm::all_of(op.getChunkStates().getUsers(),
                      [](Operation *user) { return isa<ChunkOutputOp>(user); });
}

/// [B, NS, HV, K, columns] of `elem`: one state-shaped tensor per segment
/// of `op`'s chunks (NS = segmentCount(NC, segmentChunks)).
RankedTensorType perSegmentType(ChunkStatePassOp op, int64_t segmentChunks,
                                int64_t columns, Type elem) {
  auto finalType = cast<RankedTensorType>(op.getFinalState().getType());
  auto statesType = cast<RankedTensorType>(op.getChunkStates().getType());
  return RankedTensorType::get(
      {finalType.getDimSize(0),
       segmentCount(statesType.getDimSize(1), segmentChunks),
       finalType.getDimSize(1), finalType.getDimSize(2), columns},
      elem);
}

/// The maps, the entries and the state pass entered from them, in place
/// of `op`.
void segmentDense(ChunkStatePassOp op, int64_t segmentChunks) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  auto finalType = cast<RankedTensorType>(op.getFinalState().getType());
  int64_t K = finalType.getDimSize(2), V = finalType.getDimSize(3);
  auto segmentType = [&](int64_t columns) {
    return perSegmentType(op, segmentChunks, columns, b.getF32Type());
  };
  IntegerAttr segmentAttr = b.getI64IntegerAttr(segmentChunks);
  auto maps = SegmentMapsOp::create(
      b, loc, segmentType(K + V), op.getK(), op.getU(), op.getW(),
      op.getGates(), op.getChunkSizeAttr(), segmentAttr,
      op.getDecayedKeysAttr());
  maps->setDiscardableAttrs(op->getDiscardableAttrDictionary());
  auto entries = SegmentEntriesOp::create(
      b, loc, TypeRange{segmentType(V), finalType}, maps.getMaps(),
      op.getInitialState());
  auto entered = ChunkStatePassOp::create(
      b, loc,
      TypeRange{op.getNewValues().getType(), op.getChunkStates().getType(),
                segmentType(V)},
      op.getK(), /*k_rnorm=*/Value(), op.getU(), op.getW(), /*beta=*/Value(),
      op.getGates(), entries.getEntries(), op.getChunkSizeAttr(),
      /*rank1_scale=*/FloatAttr(),
      segmentAttr, op.getDecayedKeysAttr());
  entered->setDiscardableAttrs(op->getDiscardableAttrDictionary());
  op.getNewValues().replaceAllUsesWith(entered.getNewValues());
  op.getChunkStates().replaceAllUsesWith(entered.getChunkStates());
  op.getFinalState().replaceAllUsesWith(entries.getFinalState());
  op.erase();
}

void segment(ChunkStatePassOp op, int64_t segmentChunks) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  auto finalType = cast<RankedTensorType>(op.getFinalState().getType());
  auto statesType = cast<RankedTensorType>(op.getChunkStates().getType());
  // [B, NS, HV, K, V]: ends in f32, carries in the chunk states' type (they
  // only feed the outputs, as the chunk states do).
  auto segmentType = [&](Type elem) {
    return perSegmentType(op, segmentChunks, finalType.getDimSize(3), elem);
  };
  IntegerAttr segmentAttr = b.getI64IntegerAttr(segmentChunks);
  auto local = ChunkStatePassOp::create(
      b, loc,
      TypeRange{op.getNewValues().getType(), statesType,
                segmentType(finalType.getElementType())},
      op.getK(), /*k_rnorm=*/Value(), op.getU(), /*w=*/Value(),
      /*beta=*/Value(), op.getGates(), op.getInitialState(),
      op.getChunkSizeAttr(), /*rank1_scale=*/FloatAttr(),
      segmentAttr, /*decayed_keys=*/UnitAttr());
  local->setDiscardableAttrs(op->getDiscardableAttrDictionary());
  auto carries = SegmentCarriesOp::create(
      b, loc, TypeRange{segmentType(statesType.getElementType()), finalType},
      local.getFinalState(), op.getGates(), op.getChunkSizeAttr(), segmentAttr);
  for (Operation *user : llvm::make_early_inc_range(op.getChunkStates().getUsers())) {
    auto output = cast<ChunkOutputOp>(user);
    OpBuilder ob(output);
    auto segmented = ChunkOutputOp::create(
        ob, output.getLoc(), output.getOutput().getType(), output.getQ(),
        output.getQRnorm(), output.getK(), local.getNewValues(),
        local.getChunkStates(),
        output.getGates(), carries.getCarries(), output.getChunkSizeAttr(),
        output.getScaleAttr(), segmentAttr, output.getQL2normAttr());
    segmented->setDiscardableAttrs(output->getDiscardableAttrDictionary());
    output.getOutput().replaceAllUsesWith(segmented.getOutput());
    output.erase();
  }
  op.getNewValues().replaceAllUsesWith(local.getNewValues());
  op.getFinalState().replaceAllUsesWith(carries.getFinalState());
  op.erase();
}

/// Both forms of `op` and the outputs reading its chunk states, chosen at
/// run time:
///   B * HV * V <= maxStateColumns and ceil(T / chunk_size) > segmentChunks
///     ? segmented : as they were.
/// (B * HV * V: the state columns the sequential pass carries side by side;
/// a single segment would only add the carries.) Returns false, changing
/// nothing, where an output lies in another block or reads a value defined
/// after `op` (the branch sits at `op`), HV or V is dynamic, or HV * V
/// alone passes the limit (the segmented form would never run:
/// fewChainsForm).
bool segmentAtRunTime(ChunkStatePassOp op, int64_t segmentChunks,
                      int64_t maxStateColumns, DominanceInfo &dominance) {
  auto uType = cast<RankedTensorType>(op.getU().getType());
  if (uType.isDynamicDim(2) || uType.isDynamicDim(3) ||
      chunked_kernels::fewChainsForm(/*scalarTransitions=*/true,
                                     uType.getDimSize(2), uType.getDimSize(3),
                                     maxStateColumns) !=
          chunked_kernels::FewChainsForm::Segments)
    return false;
  SmallVector<ChunkOutputOp> outputs;
  for (Operation *user : op.getChunkStates().getUsers()) {
    if (user->getBlock() != op->getBlock())
      return false;
    outputs.push_back(cast<ChunkOutputOp>(user));
  }
  llvm::sort(outputs, [](ChunkOutputOp a, ChunkOutputOp b) {
    return a->isBeforeInBlock(b);
  });
  for (ChunkOutputOp output : outputs) {
    for (Value v : output->getOperands())
      if (v.getDefiningOp() != op && !dominance.properlyDominates(v, op))
        return false;
  }

  OpBuilder b(op);
  Location loc = op.getLoc();
  Value seqLen = tensor::DimOp::create(b, loc, op.getK(), 1);
  auto index = [&](int64_t x) {
    return arith::ConstantIndexOp::create(b, loc, x).getResult();
  };
  Value numChunks =
      arith::CeilDivUIOp::create(b, loc, seqLen, index(op.getChunkSize()));
  Value cond = arith::AndIOp::create(
      b, loc, buildFewStateColumns(b, loc, op.getU(), maxStateColumns),
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, numChunks,
                            index(segmentChunks)));

  // Results: what is read after the branch (the final state and the
  // outputs, usually; the new values only feed the outputs).
  SmallPtrSet<Operation *, 4> inside(outputs.begin(), outputs.end());
  inside.insert(op);
  SmallVector<Value> replaced;
  for (Value v : {op.getNewValues(), op.getFinalState()})
    if (llvm::any_of(v.getUsers(), [&](Operation *u) { return !inside.contains(u); }))
      replaced.push_back(v);
  for (ChunkOutputOp output : outputs)
    if (!output.getOutput().use_empty())
      replaced.push_back(output.getOutput());
  SmallVector<Type> types;
  for (Value v : replaced)
    types.push_back(v.getType());
  auto ifOp = scf::IfOp::create(b, loc, types, cond, /*withElseRegion=*/true);
  for (bool segmented : {true, false}) {
    Block *block = segmented ? ifOp.thenBlock() : ifOp.elseBlock();
    OpBuilder bb = OpBuilder::atBlockEnd(block);
    IRMapping map;
    auto pass = cast<ChunkStatePassOp>(bb.clone(*op, map));
    for (ChunkOutputOp output : outputs)
      bb.clone(*output, map);
    SmallVector<Value> yielded;
    for (Value v : replaced)
      yielded.push_back(map.lookup(v));
    scf::YieldOp::create(bb, loc, yielded);
    if (segmented)
      segment(pass, segmentChunks);
  }
  for (auto [v, result] : llvm::zip(replaced, ifOp.getResults()))
    v.replaceAllUsesWith(result);
  for (ChunkOutputOp output : llvm::reverse(outputs))
    output.erase();
  op.erase();
  return true;
}

/// Both forms of a densely segmentable `op` in WY form, chosen at run time:
///   B * HV * V <= maxStateColumns and ceil(T / chunk_size) >
///   kDenseSegmentMinChunks ? segmented by maps : as it was.
/// Only the state pass branches: its outputs read the chunk states and new
/// values either form makes. Returns false, changing nothing, without W
/// (per-key gates alone: GLA's maps cost more than they saved, NOTES s1),
/// where the head sizes have no dense segments on the GPU
/// (hasDenseSegments), or where HV * V alone passes the limit (the
/// segmented form would never run).
bool segmentDenseAtRunTime(ChunkStatePassOp op, int64_t segmentChunks,
                           int64_t maxStateColumns) {
  auto uType = cast<RankedTensorType>(op.getU().getType());
  auto kType = cast<RankedTensorType>(op.getK().getType());
  if (!op.getW() || maxStateColumns <= 0 ||
      !chunked_kernels::hasDenseSegments(kType.getDimSize(3)) ||
      uType.getDimSize(2) * uType.getDimSize(3) > maxStateColumns)
    return false;
  OpBuilder b(op);
  Location loc = op.getLoc();
  Value seqLen = tensor::DimOp::create(b, loc, op.getU(), 1);
  Value numChunks = arith::CeilDivUIOp::create(
      b, loc, seqLen,
      arith::ConstantIndexOp::create(b, loc, op.getChunkSize()));
  Value cond = arith::AndIOp::create(
      b, loc, buildFewStateColumns(b, loc, op.getU(), maxStateColumns),
      arith::CmpIOp::create(
          b, loc, arith::CmpIPredicate::ugt, numChunks,
          arith::ConstantIndexOp::create(
              b, loc, chunked_kernels::kDenseSegmentMinChunks)));
  auto ifOp = scf::IfOp::create(b, loc, op->getResultTypes(), cond,
                                /*withElseRegion=*/true);
  for (bool segmented : {true, false}) {
    OpBuilder bb = OpBuilder::atBlockEnd(segmented ? ifOp.thenBlock()
                                                   : ifOp.elseBlock());
    auto clone = cast<ChunkStatePassOp>(bb.clone(*op));
    scf::YieldOp::create(bb, loc, clone->getResults());
    if (segmented)
      segmentDense(clone, segmentChunks);
  }
  op->replaceAllUsesWith(ifOp.getResults());
  op.erase();
  return true;
}

struct LinAttnSegmentChunkStates
    : impl::LinAttnSegmentChunkStatesBase<LinAttnSegmentChunkStates> {
  using Base::Base;

  void runOnOperation() override {
    if (int64_t(segmentChunks) <= 0) {
      getOperation()->emitError()
          << "linattn-segment-chunk-states: segment-chunks must be positive, got "
          << int64_t(segmentChunks);
      return signalPassFailure();
    }
    if (int64_t(maxDenseStateColumns) < 0) {
      getOperation()->emitError()
          << "linattn-segment-chunk-states: max-dense-state-columns must be 0 "
             "(never at run time) or positive, got "
          << int64_t(maxDenseStateColumns);
      return signalPassFailure();
    }
    if (int64_t(maxStateColumns) < 0) {
      getOperation()->emitError()
          << "linattn-segment-chunk-states: max-state-columns must be 0 "
             "(always segment) or positive, got "
          << int64_t(maxStateColumns);
      return signalPassFailure();
    }
    SmallVector<ChunkStatePassOp> candidates, denseCandidates;
    getOperation()->walk([&](ChunkStatePassOp op) {
      if (isSegmentable(op))
        candidates.push_back(op);
      else if (isDenselySegmentable(op))
        denseCandidates.push_back(op);
    });
    DominanceInfo dominance(getOperation());
    for (ChunkStatePassOp op : candidates) {
      if (maxStateColumns == 0)
        segment(op, segmentChunks);
      else if (!segmentAtRunTime(op, segmentChunks, maxStateColumns, dominance))
        continue;
      ++numSegmented;
    }
    for (ChunkStatePassOp op : denseCandidates) {
      if (maxStateColumns == 0)
        segmentDense(op, segmentChunks);
      else if (!segmentDenseAtRunTime(op, segmentChunks, maxDenseStateColumns))
        continue;
      ++numSegmented;
    }
  }
};

} // namespace
} // namespace mlir::linattn
