//===- SelectStrategy.cpp - Choose algorithms by shape --------------------===//
//
// Records on every linattn.recurrence the algorithm the cost model ranks
// fastest for its shape; with a dynamic T, dispatches at run time between
// clones of the recurrence, one per range of T.
//
//===----------------------------------------------------------------------===//

#include "LinAttn/Transforms/Passes.h"

#include "LinAttn/Conversion/LinAttnToGPU/TargetInfo.h"

#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"
#include "LinAttn/Transforms/CostModel.h"
#include "LinAttn/Transforms/GPUCostModel.h"
#include "LinAttn/Transforms/Strategy.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::linattn {
#define GEN_PASS_DEF_LINATTNSELECTSTRATEGY
#define GEN_PASS_DEF_LINATTNEXPLAIN
#include "LinAttn/Transforms/Passes.h.inc"

namespace {

constexpr llvm::StringLiteral kSeqLenRangeAttrName = "linattn.seq_len_range";
/// Dynamic T is planned over [1, 2^kMaxLog2SeqLen].
constexpr int kMaxLog2SeqLen = 22;

ProblemShape shapeOf(RecurrenceOp op, int64_t seqLen, int64_t assumedBatch) {
  ProblemShape s;
  s.batch = ShapedType::isDynamic(op.getBatchSize()) ? assumedBatch
                                                     : op.getBatchSize();
  s.seqLen = seqLen;
  s.numQKHeads = op.getNumQKHeads();
  s.numVHeads = op.getNumVHeads();
  s.keyDim = op.getKeyDim();
  s.valueDim = op.getValueDim();
  s.elementBytes =
      cast<RankedTensorType>(op.getQ().getType()).getElementTypeBitWidth() / 8;
  s.deltaRule = op.getKindInfo().hasRank1();
  s.perKeyGates = op.getKindInfo().decay == DecayForm::PerKey;
  s.qkL2Norm = op.getQkL2norm();
  return s;
}

/// A later choice replaces the current one only if it is faster by more
/// than this fraction: near-ties would otherwise split T into many ranges,
/// each a clone of the recurrence to compile.
constexpr double kSwitchMargin = 0.10;

/// Two estimates make the same choice: same algorithm and chunk size (the
/// segment count follows from T and is not compiled in).
bool sameChoice(const StrategyEstimate &a, const StrategyEstimate &b) {
  return a.strategy == b.strategy && a.chunkSize == b.chunkSize;
}

/// A maximal range of T with one choice.
struct Regime {
  int64_t lo, hi; // inclusive; hi = -1: unbounded
  StrategyEstimate choice;
  /// Where set (a dynamic B), the regime's T bound is per batch: hi_i for
  /// B in [from_i, from_{i+1}) (the last without end), hi their largest;
  /// (from_i, hi_i) in increasing from, from_0 = 1.
  SmallVector<std::pair<int64_t, int64_t>> hiFromBatch;
};

/// The choices over every T, as ranges: exact boundaries, found by
/// bisection between powers of two.
SmallVector<Regime> planOverSeqLen(RecurrenceOp op, const TargetModel &target,
                                   int64_t assumedBatch) {
  // Whether `current` should give way to the best choice at T = t.
  auto switches = [&](const StrategyEstimate &current, int64_t t,
                      StrategyEstimate &best) {
    ProblemShape shape = shapeOf(op, t, assumedBatch);
    best = chooseStrategy(shape, target);
    if (sameChoice(best, current))
      return false;
    for (const StrategyEstimate &e : estimateStrategies(shape, target))
      if (sameChoice(e, current))
        return !e.applicable || best.seconds < (1.0 - kSwitchMargin) * e.seconds;
    return true;
  };
  SmallVector<Regime> regimes;
  int64_t lo = 1;
  StrategyEstimate current =
      chooseStrategy(shapeOf(op, 1, assumedBatch), target), best;
  for (int k = 1; k <= kMaxLog2SeqLen; ++k) {
    int64_t t = int64_t(1) << k;
    if (!switches(current, t, best))
      continue;
    // The first T in (t / 2, t] at which the choice changes.
    int64_t a = t / 2, b = t;
    while (b - a > 1) {
      int64_t mid = a + (b - a) / 2;
      StrategyEstimate ignored;
      if (switches(current, mid, ignored))
        b = mid;
      else
        a = mid;
    }
    regimes.push_back({lo, a, current});
    lo = b;
    switches(current, b, current);
  }
  regimes.push_back({lo, -1, current});
  return regimes;
}

void record(RecurrenceOp op, const StrategyEstimate &choice) {
  Builder b(op.getContext());
  op->setAttr(kStrategyAttrName,
              b.getStringAttr(stringifyStrategy(choice.strategy)));
  if (choice.chunkSize)
    op->setAttr(kChunkSizeAttrName, b.getI64IntegerAttr(choice.chunkSize));
  else
    op->removeAttr(kChunkSizeAttrName);
}

std::string formatSeconds(double seconds) {
  std::string s;
  llvm::raw_string_ostream os(s);
  if (seconds >= 1e-3)
    os << llvm::format("%8.3f ms", seconds * 1e3);
  else
    os << llvm::format("%8.1f us", seconds * 1e6);
  return s;
}

/// The remark --linattn-explain prints for one recurrence.
void explainOp(RecurrenceOp op, const TargetModel &target, int64_t assumedBatch,
               ArrayRef<Regime> regimes) {
  int64_t seqLen = op.getSeqLen();
  std::string rangeText;
  if (auto range = op->getAttrOfType<DenseI64ArrayAttr>(kSeqLenRangeAttrName)) {
    seqLen = range[1] > 0 ? range[1] : range[0];
    rangeText = " in [" + std::to_string(range[0]) + ", " +
                (range[1] < 0 ? std::string("inf") : std::to_string(range[1])) +
                "] of the run-time dispatch (estimated at T = " +
                std::to_string(seqLen) + ")";
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  bool dynamicT = ShapedType::isDynamic(seqLen);
  ProblemShape shape =
      shapeOf(op, dynamicT ? regimes.back().lo : seqLen, assumedBatch);
  os << "linattn strategy for " << stringifyTransitionKind(op.getKind())
     << ": B = "
     << (ShapedType::isDynamic(op.getBatchSize())
             ? "? (assumed " + std::to_string(assumedBatch) + ")"
             : std::to_string(op.getBatchSize()))
     << ", HV = " << shape.numVHeads << " (B*HV = "
     << shape.batch * shape.numVHeads << " lanes), T = "
     << (dynamicT ? std::string("?") : std::to_string(seqLen)) << rangeText
     << ", K = " << shape.keyDim << ", V = " << shape.valueDim << ", "
     << target.smCount << " SMs\n";
  if (dynamicT) {
    os << "  T is dynamic: run-time dispatch on T\n";
    for (const Regime &r : regimes)
      os << "    T in [" << r.lo << ", "
         << (r.hi < 0 ? std::string("inf") : std::to_string(r.hi))
         << "]: " << stringifyStrategy(r.choice.strategy)
         << (r.choice.chunkSize ? " C=" + std::to_string(r.choice.chunkSize)
                                : std::string())
         << "\n";
    os << "  estimates at T = " << shape.seqLen << ":\n";
  }
  StrategyEstimate best = chooseStrategy(shape, target);
  for (const StrategyEstimate &e : estimateStrategies(shape, target)) {
    os << "  " << llvm::left_justify(describe(e), 22);
    if (!e.applicable)
      os << "        n/a  " << e.detail << "\n";
    else
      os << formatSeconds(e.seconds) << "  " << e.detail
         << (sameChoice(e, best) ? "  <- fastest" : "") << "\n";
  }
  if (std::optional<Strategy> recorded = getRecordedStrategy(op)) {
    os << "  chosen: " << stringifyStrategy(*recorded);
    if (auto c = op->getAttrOfType<IntegerAttr>(kChunkSizeAttrName))
      os << " C=" << c.getInt();
  } else {
    os << "  would choose: " << describe(best)
       << " (no strategy recorded; run --linattn-select-strategy)";
  }
  op.emitRemark() << text;
}

/// A dynamic B's T limit is planned per range of batches [2^i, 2^(i+1))
/// up to kLastPlannedBatch (the last range without end): B is known when
/// the call runs, and the limits grow with it, up to 5x (gated delta f32:
/// 50 at B = 1, 256 from 64), as the chunked path's launches and partly filled
/// SMs weigh less against the recurrent kernel's state traffic. Every
/// range keeps the limit all of kPlannedBatches share (the shortest over
/// them); past it a range runs recurrent only where the model has it
/// faster by kPerBatchLimitMargin at both its ends (both paths' modelled
/// times are monotone in B).
constexpr int64_t kLastPlannedBatch = 1024;
constexpr int64_t kPlannedBatches[] = {1, 4, 16, 64, 256};

std::string plannedBatchesText() {
  std::string text = "{";
  for (int64_t batch : kPlannedBatches)
    text += (text.size() > 1 ? ", " : "") + std::to_string(batch);
  return text + "}";
}

/// The longest T the recurrent kernel takes where the fitted model
/// (GPUCostModel.h) has it faster than the chunked kernels (by `margin`),
/// at B = `batch`.
int64_t recurrentSeqLenLimitAt(RecurrenceOp op, int64_t batch, int64_t smCount,
                               double margin = 1.0) {
  return lastRecurrentSeqLen(shapeOf(op, 1, batch), smCount, margin);
}

/// The limit every planned batch shares, and the planned batch that sets
/// it (the first of the shortest).
std::pair<int64_t, int64_t> sharedSeqLenLimit(RecurrenceOp op,
                                              int64_t smCount) {
  std::pair<int64_t, int64_t> shared = {1, kMaxRecurrentSeqLen + 1};
  for (int64_t batch : kPlannedBatches)
    if (int64_t limit = recurrentSeqLenLimitAt(op, batch, smCount);
        limit < shared.second)
      shared = {batch, limit};
  return shared;
}

/// For a dynamic B: (from, limit) per range of batches [from, next from),
/// adjacent ranges of one limit merged.
SmallVector<std::pair<int64_t, int64_t>>
recurrentSeqLenLimitsByBatch(RecurrenceOp op, int64_t smCount) {
  int64_t shared = sharedSeqLenLimit(op, smCount).second;
  SmallVector<std::pair<int64_t, int64_t>> limits;
  for (int64_t from = 1; from <= kLastPlannedBatch; from *= 2) {
    // The last range ends at the largest B one call's state may take at
    // these sizes; its limit there has long stopped moving.
    int64_t to = from < kLastPlannedBatch ? 2 * from - 1 : 16 * from;
    int64_t limit = std::max(
        shared,
        std::min(
            recurrentSeqLenLimitAt(op, from, smCount, kPerBatchLimitMargin),
            recurrentSeqLenLimitAt(op, to, smCount, kPerBatchLimitMargin)));
    if (limits.empty() || limits.back().second != limit)
      limits.push_back({from, limit});
  }
  return limits;
}

/// The limits by batch as text: "29 at B = 1-7, 35 at B = 8-15, ..., 30
/// at B >= 128".
std::string describeLimits(ArrayRef<std::pair<int64_t, int64_t>> limits) {
  std::string text;
  for (auto [i, range] : llvm::enumerate(limits)) {
    auto [from, limit] = range;
    text += (i ? ", " : "") + std::to_string(limit) + " at B ";
    if (i + 1 == limits.size()) {
      text += (from == 1 ? "= any" : ">= " + std::to_string(from));
      continue;
    }
    int64_t to = limits[i + 1].first - 1;
    text += from == to ? "= " + std::to_string(from)
                       : "= " + std::to_string(from) + "-" + std::to_string(to);
  }
  return text;
}

/// The fitted estimates of both paths at T = `seqLen` and B = `batch`, as
/// remark lines.
std::string explainGPUEstimates(RecurrenceOp op, int64_t batch,
                                int64_t seqLen, int64_t smCount) {
  ProblemShape shape = shapeOf(op, seqLen, batch);
  GPUPathEstimate rec = estimateRecurrentCall(shape, smCount);
  GPUPathEstimate chunked = estimateChunkedCall(shape, smCount);
  return "\n  fitted model at B = " + std::to_string(batch) +
         ", T = " + std::to_string(seqLen) + ": recurrent " +
         formatSeconds(rec.seconds) + " = " + rec.detail + "\n" +
         std::string(std::to_string(batch).size() +
                         std::to_string(seqLen).size() + 30,
                     ' ') +
         "chunked   " + formatSeconds(chunked.seconds) + " = " +
         chunked.detail;
}

/// How the chunked path's state pass runs under strategy=auto, as a remark
/// line: it is chosen at run time on B * HV * V (fewChainsStateColumns),
/// by linattn-segment-chunk-states for scalar transitions and
/// linattn-narrow-state-blocks for the others, both by fewChainsForm, the
/// rule read here.
std::string explainStatePassForm(RecurrenceOp op, int64_t smCount) {
  using chunked_kernels::FewChainsForm;
  int64_t limit = chunked_kernels::fewChainsStateColumns(smCount);
  int64_t numVHeads = op.getNumVHeads();
  int64_t valueDim = chunked_kernels::paddedHeadDim(op.getValueDim());
  int64_t perSequence = numVHeads * valueDim;
  bool scalar = op.getKindInfo().isScalar();
  FewChainsForm form =
      chunked_kernels::fewChainsForm(scalar, numVHeads, valueDim, limit);
  std::string many = scalar ? "one pass over the chunks" : "32-column blocks";
  // Where B * HV * V passes manyChainsStateColumns, 64-column blocks
  // (linattn-widen-state-blocks).
  int64_t manyLimit = chunked_kernels::manyChainsStateColumns(smCount);
  bool widens = chunked_kernels::hasWideStateBlocks(valueDim);
  int64_t lastNarrowerB = manyLimit / perSequence; // B <= this: no wide blocks
  std::string wideBlocks = "64-column blocks (eight warps, half the blocks)";
  std::string wide = widens ? ", and " + wideBlocks + " where B * HV * V > " +
                                  std::to_string(manyLimit) + " (B >= " +
                                  std::to_string(lastNarrowerB + 1) + ")"
                            : std::string();
  std::string limitText = std::to_string(limit);
  if (form == FewChainsForm::None) {
    std::string why = " (HV * V = " + std::to_string(perSequence) + " > " +
                      limitText + ")";
    if (!widens)
      return "\n  state pass: " + many + " at every B" + why;
    if (lastNarrowerB == 0)
      return "\n  state pass: " + wideBlocks + " at every B" + why;
    return "\n  state pass: " + many + " at B <= " +
           std::to_string(lastNarrowerB) + why + wide;
  }
  std::string few =
      form == FewChainsForm::Segments
          ? "segments of " +
                std::to_string(chunked_kernels::kAutoSegmentChunks) +
                " chunks (the state pass parallel over T)"
          : "16-column state-pass blocks (two warps, twice the blocks)";
  std::string when = "B * HV * V <= " + limitText + " (B <= " +
                     std::to_string(limit / perSequence) + ")";
  if (form == FewChainsForm::Segments)
    when += " and T > " +
            std::to_string(chunked_kernels::kAutoSegmentChunks *
                           chunked_kernels::kChunk) +
            " tokens";
  // The WY form: segment maps first where the chains are fewest and the
  // sequence long (linattn-segment-chunk-states), the narrow blocks below
  // that.
  std::string dense;
  int64_t denseLimit = chunked_kernels::denseSegmentStateColumns(smCount);
  if (form == FewChainsForm::NarrowBlocks && op.getKindInfo().hasRank1() &&
      perSequence <= denseLimit &&
      chunked_kernels::hasDenseSegments(
          chunked_kernels::paddedHeadDim(op.getKeyDim())))
    dense = "segment maps of " +
            std::to_string(chunked_kernels::kAutoSegmentChunks) +
            " chunks (each segment's K x K map, then the state pass again "
            "from the segments' entering states) where B * HV * V <= " +
            std::to_string(denseLimit) + " (B <= " +
            std::to_string(denseLimit / perSequence) + ") and T > " +
            std::to_string(chunked_kernels::kDenseSegmentMinChunks *
                           chunked_kernels::kChunk) +
            " tokens; ";
  return "\n  state pass, chosen at run time: " + dense + few + " where " +
         when + ", else " + many + wide;
}

/// The GPU choice: chunked (C = chunked_kernels::kChunk) wherever its
/// kernels apply (the conversion's own checks, TargetInfo.h), but
/// recurrent for sequences short enough that the fitted model
/// (GPUCostModel.h, fitted to the kernels' measured times) has the
/// recurrent kernel faster: one launch and one state read and write
/// instead of the chunked kernels' launches and a 64-token chunk for a few
/// tokens. With a dynamic T the two are dispatched at run time; `regimes`
/// receives them then.
/// With a dynamic B the limit is per batch range (`limits`, of which
/// `limit` is then the largest); a static T takes the shortest of them.
StrategyEstimate
chooseGPUStrategy(RecurrenceOp op, int64_t smCount, std::string &why,
                  int64_t &limit,
                  SmallVectorImpl<std::pair<int64_t, int64_t>> &limits,
                  SmallVectorImpl<Regime> &regimes) {
  StrategyEstimate recurrent, chunked;
  recurrent.strategy = Strategy::Recurrent;
  chunked.strategy = Strategy::Chunked;
  chunked.chunkSize = chunked_kernels::kChunk;
  why = chunked_kernels::whyNoKernels(op);
  if (!why.empty())
    return recurrent;
  int64_t shortest;
  if (ShapedType::isDynamic(op.getBatchSize())) {
    limits = recurrentSeqLenLimitsByBatch(op, smCount);
    limit = shortest = limits.front().second;
    for (auto [from, l] : limits) {
      limit = std::max(limit, l);
      shortest = std::min(shortest, l);
    }
  } else {
    limit = shortest = recurrentSeqLenLimitAt(op, op.getBatchSize(), smCount);
  }
  int64_t seqLen = op.getSeqLen();
  if (!ShapedType::isDynamic(seqLen)) {
    if (seqLen <= shortest)
      return recurrent;
    if (seqLen > limit)
      return chunked;
    // A static T inside the limits' spread: dispatched on B alone.
  } else if (limit == 0) {
    return chunked;
  }
  Regime rec{1, limit, recurrent, {}}, rest{shortest + 1, -1, chunked, {}};
  if (limits.size() > 1)
    rec.hiFromBatch.assign(limits.begin(), limits.end());
  regimes.push_back(rec);
  regimes.push_back(rest);
  return chunked;
}

struct LinAttnSelectStrategy
    : impl::LinAttnSelectStrategyBase<LinAttnSelectStrategy> {
  using Base::Base;

  void runOnOperation() override {
    if (smCount <= 0 || assumedBatch <= 0) {
      getOperation()->emitError()
          << "linattn-select-strategy: sm-count and assumed-batch must be "
             "positive, got "
          << smCount.getValue() << " and " << assumedBatch.getValue();
      return signalPassFailure();
    }
    if (gpuKernels) {
      // Collected first: a dispatch replaces the op by clones.
      SmallVector<RecurrenceOp> ops;
      getOperation()->walk([&](RecurrenceOp op) {
        if (!op->hasAttr(kSeqLenRangeAttrName))
          ops.push_back(op);
      });
      for (RecurrenceOp op : ops) {
        ++numSelected;
        std::string why;
        int64_t limit = 0;
        SmallVector<std::pair<int64_t, int64_t>> limits;
        SmallVector<Regime> regimes;
        StrategyEstimate choice =
            chooseGPUStrategy(op, smCount, why, limit, limits, regimes);
        bool dynamicT = ShapedType::isDynamic(op.getSeqLen());
        std::string bound =
            limits.size() > 1 ? "the limit of B below" : std::to_string(limit);
        if (explain) {
          std::string text;
          if (!regimes.empty())
            text = std::string(dynamicT ? "T is dynamic" : "B is dynamic") +
                   ": recurrent for T <= " + bound + " (decode; " +
                   recurrent_kernel::describeKernel(op) + "), else " +
                   describe(choice);
          else if (choice.strategy == Strategy::Recurrent)
            text = describe(choice) + " (" +
                   recurrent_kernel::describeKernel(op) + ")";
          else
            text = describe(choice);
          text += why.empty() ? " (tensor-core kernels apply)"
                              : " (no chunked kernels: " + why + ")";
          int64_t K = op.getKeyDim(), V = op.getValueDim();
          int64_t paddedK = chunked_kernels::paddedHeadDim(K);
          int64_t paddedV = chunked_kernels::paddedHeadDim(V);
          if (why.empty() && (paddedK != K || paddedV != V))
            text += "\n  chunked at K = " + std::to_string(paddedK) +
                    ", V = " + std::to_string(paddedV) +
                    " (zero-padded from " + std::to_string(K) + ", " +
                    std::to_string(V) + ": linattn-pad-head-dims)";
          if (why.empty()) {
            // The estimates at the batch whose limit is the shortest (a
            // static B: its own).
            int64_t batchShown = op.getBatchSize(), limitShown = limit;
            if (!limits.empty())
              std::tie(batchShown, limitShown) = sharedSeqLenLimit(op, smCount);
            text += "\n  recurrent while the fitted model has it faster: up "
                    "to T = ";
            if (limits.empty())
              text += std::to_string(limit) +
                      " at B = " + std::to_string(batchShown);
            else
              text += describeLimits(limits) +
                      " (B is dynamic: at least the limit B = " +
                      std::to_string(batchShown) +
                      " sets, the shortest over B in " + plannedBatchesText() +
                      "; past it a range of B takes the recurrent kernel "
                      "where the model has it under " +
                      llvm::formatv("{0:F2}", kPerBatchLimitMargin).str() +
                      "x the chunked time at both ends; compared at run "
                      "time)";
            int64_t at =
                dynamicT ? std::max<int64_t>(limitShown, 1) : op.getSeqLen();
            text += explainGPUEstimates(op, batchShown, at, smCount);
            if (dynamicT)
              text +=
                  explainGPUEstimates(op, batchShown, limitShown + 1, smCount);
            if (choice.strategy == Strategy::Chunked)
              text += explainStatePassForm(op, smCount);
          }
          op.emitRemark() << "linattn GPU strategy for "
                          << stringifyTransitionKind(op.getKind()) << ": "
                          << text;
        }
        if (regimes.empty()) {
          record(op, choice);
        } else {
          ++numDispatched;
          dispatchOnSeqLen(op, regimes);
        }
      }
      return;
    }
    TargetModel target;
    target.smCount = smCount;
    SmallVector<RecurrenceOp> ops;
    getOperation()->walk([&](RecurrenceOp op) {
      if (!op->hasAttr(kSeqLenRangeAttrName))
        ops.push_back(op);
    });
    for (RecurrenceOp op : ops) {
      ++numSelected;
      if (!ShapedType::isDynamic(op.getSeqLen())) {
        record(op, chooseStrategy(shapeOf(op, op.getSeqLen(), assumedBatch),
                                  target));
        if (explain)
          explainOp(op, target, assumedBatch, {});
        continue;
      }
      SmallVector<Regime> regimes = planOverSeqLen(op, target, assumedBatch);
      if (explain)
        explainOp(op, target, assumedBatch, regimes);
      if (regimes.size() == 1) {
        record(op, regimes.front().choice);
        continue;
      }
      ++numDispatched;
      dispatchOnSeqLen(op, regimes);
    }
  }

  /// if (T <= hi_0) { clone_0 } else if (T <= hi_1) { clone_1 } ... else
  /// { clone_n }, each clone with its regime's strategy.
  void dispatchOnSeqLen(RecurrenceOp op, ArrayRef<Regime> regimes) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    Value seqLen = tensor::DimOp::create(b, loc, op.getQ(), 1);
    std::function<SmallVector<Value>(OpBuilder &, size_t)> build =
        [&](OpBuilder &builder, size_t i) -> SmallVector<Value> {
      auto cloneFor = [&](OpBuilder &cb) {
        Operation *clone = cb.clone(*op);
        auto rec = cast<RecurrenceOp>(clone);
        record(rec, regimes[i].choice);
        rec->setAttr(kSeqLenRangeAttrName,
                     cb.getDenseI64ArrayAttr({regimes[i].lo, regimes[i].hi}));
        return SmallVector<Value>(clone->getResults());
      };
      if (i + 1 == regimes.size())
        return cloneFor(builder);
      // A bound per batch range: select(B < from_{j+1}, hi_j, ...), from
      // the last range down.
      ArrayRef<std::pair<int64_t, int64_t>> byBatch = regimes[i].hiFromBatch;
      Value bound;
      if (byBatch.empty()) {
        bound = arith::ConstantIndexOp::create(builder, loc, regimes[i].hi);
      } else {
        Value batch = tensor::DimOp::create(builder, loc, op.getQ(), 0);
        bound =
            arith::ConstantIndexOp::create(builder, loc, byBatch.back().second);
        for (size_t j = byBatch.size() - 1; j-- > 0;) {
          Value below = arith::CmpIOp::create(
              builder, loc, arith::CmpIPredicate::ult, batch,
              arith::ConstantIndexOp::create(builder, loc,
                                             byBatch[j + 1].first));
          bound = arith::SelectOp::create(
              builder, loc, below,
              arith::ConstantIndexOp::create(builder, loc, byBatch[j].second),
              bound);
        }
      }
      Value inRange = arith::CmpIOp::create(
          builder, loc, arith::CmpIPredicate::ule, seqLen, bound);
      auto branch = scf::IfOp::create(builder, loc, op->getResultTypes(),
                                      inRange, /*withElse=*/true);
      {
        OpBuilder thenBuilder = OpBuilder::atBlockBegin(branch.thenBlock());
        scf::YieldOp::create(thenBuilder, loc, cloneFor(thenBuilder));
      }
      {
        OpBuilder elseBuilder = OpBuilder::atBlockBegin(branch.elseBlock());
        scf::YieldOp::create(elseBuilder, loc, build(elseBuilder, i + 1));
      }
      return SmallVector<Value>(branch.getResults());
    };
    SmallVector<Value> results = build(b, 0);
    op->replaceAllUsesWith(results);
    op->erase();
  }
};

struct LinAttnExplain : impl::LinAttnExplainBase<LinAttnExplain> {
  using Base::Base;

  void runOnOperation() override {
    TargetModel target;
    target.smCount = smCount;
    getOperation()->walk([&](RecurrenceOp op) {
      SmallVector<Regime> regimes;
      if (ShapedType::isDynamic(op.getSeqLen()) &&
          !op->hasAttr(kSeqLenRangeAttrName))
        regimes = planOverSeqLen(op, target, assumedBatch);
      explainOp(op, target, assumedBatch, regimes);
    });
  }
};

} // namespace
} // namespace mlir::linattn
