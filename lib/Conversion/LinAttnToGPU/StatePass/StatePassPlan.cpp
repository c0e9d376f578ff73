//===- StatePassPlan.cpp - The state pass kernel, decided -----------------===//

#include "StatePassPlan.h"

#include "../Kernel/KernelEmitter.h"
#include "../KernelSupport.h"

#include "llvm/Support/raw_ostream.h"

namespace mlir::linattn::kernel {

static int64_t bytesOf(Type t) { return t.getIntOrFloatBitWidth() / 8; }

std::optional<StateBlock> StateBlock::of(Operation *op, int64_t V,
                                         std::string &whyNot) {
  int64_t columns = chunked_kernels::kStateColumns;
  if (auto attr = op->getAttrOfType<IntegerAttr>(
          chunked_kernels::kStateColumnsAttrName)) {
    columns = attr.getInt();
    if (columns != chunked_kernels::kStateColumns &&
        columns != chunked_kernels::kNarrowStateColumns &&
        columns != chunked_kernels::kWideStateColumns) {
      whyNot = (chunked_kernels::kStateColumnsAttrName + " must be " +
                Twine(chunked_kernels::kNarrowStateColumns) + ", " +
                Twine(chunked_kernels::kStateColumns) + " or " +
                Twine(chunked_kernels::kWideStateColumns) + ", got " +
                Twine(columns))
                   .str();
      return std::nullopt;
    }
  }
  bool raggedWide = columns == chunked_kernels::kWideStateColumns &&
                    chunked_kernels::hasWideStateBlocks(V);
  if (V % columns != 0 && !raggedWide) {
    whyNot = ("V = " + Twine(V) + " is not a multiple of the state pass "
              "blocks' " + Twine(columns) + " columns")
                 .str();
    return std::nullopt;
  }
  return withColumns(columns);
}

StateBlock StateBlock::withColumns(int64_t columns) {
  StateBlock block;
  block.columns = columns;
  block.columnGroups = columns / 16;
  block.warps = block.columnGroups * kStateKeySplit;
  return block;
}

FailureOr<StatePassPlan> StatePassPlan::build(ChunkStatePassOp op, Type mmaElem,
                                              const GPUTargetInfo &target) {
  if (op.getBeta())
    return op.emitOpError() << "the rank-1 product form has no GPU kernel: run "
                               "linattn-lower-rank1-to-wy first";
  std::optional<int64_t> segmentChunks;
  if (std::optional<uint64_t> m = op.getSegmentChunks())
    segmentChunks = int64_t(*m);
  Operands in{op, op.getK(), op.getU(), op.getW(), op.getGates(),
              op.getDecayedKeys(), int64_t(op.getChunkSize()), segmentChunks,
              elementOf(op.getNewValues()), elementOf(op.getChunkStates()),
              cast<ShapedType>(op.getInitialState().getType()).getRank() == 5};
  return build(in, Role::Pass, mmaElem, target, /*allowWide=*/true);
}

FailureOr<StatePassPlan> StatePassPlan::build(SegmentMapsOp op, Type mmaElem,
                                              const GPUTargetInfo &target) {
  Operands in{op, op.getK(), op.getU(), op.getW(), op.getGates(),
              op.getDecayedKeys(), int64_t(op.getChunkSize()),
              int64_t(op.getSegmentChunks()), elementOf(op.getU()),
              elementOf(op.getU()), /*enteredSegments=*/false};
  return build(in, Role::SegmentMaps, mmaElem, target, /*allowWide=*/false);
}

FailureOr<StatePassPlan> StatePassPlan::build(ChunkStatePassOutputOp op,
                                              Type mmaElem,
                                              const GPUTargetInfo &target) {
  // D and S_n in k's type, as the op's unfused form holds them.
  Type elem = elementOf(op.getK());
  Operands in{op,
              op.getK(),
              op.getU(),
              op.getW(),
              op.getGates(),
              /*decayedKeys=*/false,
              int64_t(op.getChunkSize()),
              /*segmentChunks=*/std::nullopt,
              elem,
              elem,
              /*enteredSegments=*/false,
              op.getQ(),
              op.getScale().convertToFloat(),
              op.getQL2norm()};
  return build(in, Role::Pass, mmaElem, target, /*allowWide=*/false);
}

FailureOr<StatePassPlan> StatePassPlan::build(const Operands &in, Role role,
                                              Type mmaElem,
                                              const GPUTargetInfo &target,
                                              bool allowWide) {
  Operation *op = in.op;
  StatePassPlan p;
  p.role = role;
  p.mmaElem = mmaElem;
  p.numQKHeads = dimOf(in.k, 2);
  p.K = dimOf(in.k, 3);
  p.numVHeads = dimOf(in.u, 2);
  p.V = dimOf(in.u, 3);
  p.columns = role == Role::SegmentMaps ? p.K + p.V : p.V;
  p.chunk = in.chunk;
  bool perKey =
      in.gates && cast<ShapedType>(in.gates.getType()).getRank() == 4;
  if (failed(checkChunkGeometry(op, p.chunk, {{"K", p.K}, {"V", p.V}},
                                in.w    ? "the WY form"
                                : perKey ? "per-key gates"
                                         : "")))
    return failure();
  std::string whyNot;
  std::optional<StateBlock> block = StateBlock::of(op, p.V, whyNot);
  if (!block)
    return op->emitOpError() << "GPU state pass: " << whyNot;
  if (!allowWide && block->columns == chunked_kernels::kWideStateColumns)
    block = StateBlock::withColumns(chunked_kernels::kStateColumns);
  p.block = *block;
  // The loop walks 64-row steps; a long chunk is stepsPerChunk of them,
  // and its state is stored before its first step only.
  p.stepsPerChunk = p.chunk / kChunk;
  if (in.segmentChunks) {
    p.segmentChunks = *in.segmentChunks;
    p.segmentSteps = *p.segmentChunks * p.stepsPerChunk;
  }
  p.writesOutputs = role == Role::Pass;
  p.formsOutput = static_cast<bool>(in.q);
  if (p.formsOutput) {
    p.qElem = elementOf(in.q);
    p.outputElem = elementOf(op->getResult(0));
    p.scale = in.scale;
    p.qL2norm = in.qL2norm;
  }
  p.enteredSegments = in.enteredSegments;

  p.kElem = elementOf(in.k);
  p.uElem = elementOf(in.u);
  p.valueElem = in.valueElem;
  p.stateElem = in.stateElem;
  if (Value w = in.w) {
    p.wElem = elementOf(w);
    p.w = isSplitW(w.getType()) ? WForm::Split
          : p.wElem == mmaElem  ? WForm::Operand
                                : WForm::F32;
  }
  p.decay = !in.gates         ? Decay::None
            : !perKey          ? Decay::Rows
            : in.decayedKeys   ? Decay::DecayedKeys
                               : Decay::Keys;

  p.keysAreOperands = p.kElem == mmaElem;
  p.forwardValues = !p.hasW() && p.valueElem == p.uElem;
  p.directD = !p.hasW() && p.decay != Decay::Keys && p.forwardValues &&
              p.uElem == mmaElem;
  // D' enters the update K^T D' rounded once to the operand type, or split
  // (hi + lo: twice the update's products and the split's conversions, a
  // fifth of the step's instructions; bench/NOTES.md s2). Without W it is
  // v times a decay (exactly v without gates): rounded, it moves the
  // model's state error by about 1e-3 and o's not at all (scalar_gate rows
  // of bench/model/bf16_intermediates.py). With W and a decay (gated delta,
  // KDA) the decay damps what the rounding adds: o's error unmoved in the
  // model on soft and hard inputs, the final state's at the bf16 level
  // (~2e-3; fla rounds v_new the same way; with weak gates, outside the
  // check's inputs, ~9e-3). Without a decay the delta rule's D keeps its
  // lo: rounded, o's error on nearly parallel keys grows toward the bound
  // (3.2 -> 3.9e-3 in the model, 1.1e-2 for negeig). An f32 spec's D' (its
  // keys f32, or without W its values) is split too: rounded, it would
  // cost the spec its 1e-4. (With W, U is f32 whatever the spec's type.)
  bool f32Spec = p.hasW() ? p.kElem.isF32() : p.uElem.isF32();
  p.splitUpdate = f32Spec || (p.hasW() && !p.hasGates());
  auto is16Bit = [](Type t) { return t.getIntOrFloatBitWidth() == 16; };
  p.stageStates =
      p.writesOutputs && target.hasStMatrix() && is16Bit(p.stateElem);
  p.stageValues = p.writesOutputs && target.hasStMatrix() &&
                  !p.forwardValues && is16Bit(p.valueElem);
  p.narrowRows = p.hasW();
  p.carryGateBase = p.stepsPerChunk > 1 && p.decay == Decay::Rows;
  p.exchange = p.hasW() && kStateKeySplit > 1;

  p.keysPerWarp = p.K / kStateKeySplit;
  static_assert(64 % (16 * kStateKeySplit) == 0,
                "every K the geometry check admits splits into 16-key k-steps");
  static_assert((kChunk / 8) % (2 * kStateKeySplit) == 0,
                "the key parts stage D's row tiles in pairs");
  p.keyTiles = p.keysPerWarp / 8;
  p.rowTiles = kChunk / 8;

  // A stage's rows are padded so that the fragment loads touch distinct
  // banks: W and K like every ldmatrix tile (an f32 W by 32 bytes: lanes of
  // a half-warp read 8-byte pairs of rows 8 apart), U by 16 bytes (lanes
  // read rows 2 apart). A split W is staged as rows of 2K (hi, then lo).
  Stage &s = p.stage;
  s.wCols = p.w == WForm::Split ? 2 * p.K : p.K;
  s.wStride = !p.hasW()       ? 0
              : p.wIsOperand() ? s.wCols + kPad
                               : p.K + 32 / bytesOf(p.wElem);
  s.kStride = p.keysAreOperands ? p.K + kPad : p.K + 8;
  s.uStride = p.block.columns + 16 / bytesOf(p.uElem);
  s.wBytes = p.hasW() ? kChunk * s.wStride * bytesOf(p.wElem) : 0;
  s.kBytes = kChunk * s.kStride * bytesOf(p.kElem);
  s.uBytes = kChunk * s.uStride * bytesOf(p.uElem);
  // [64][1] row gates (one 4-byte copy per row), [64][K] per key, [1][K]
  // chunk totals.
  s.gateCols = p.perKey() ? p.K : 1;
  s.gateRows = p.decay == Decay::DecayedKeys ? 1 : kChunk;
  s.gBytes = p.hasGates() ? s.gateRows * s.gateCols * 4 : 0;
  // Partial W S^T products of the warps, as held in registers: tile rt of
  // warp w at [w][rt][lane] (16 bytes each).
  p.exchangeBytes =
      p.exchange ? keyPartsExchangeBytes(p.block.warps, p.rowTiles) : 0;
  p.outStride = p.block.columns + kPad;
  if (p.formsOutput) {
    p.qStride = p.K + kPad;
    p.qBufferBytes = kChunk * p.qStride * bytesOf(p.qElem);
  }
  // Segments' passes: many short chains, sized for kSegmentBlocksPerSM
  // blocks an SM.
  if (role == Role::SegmentMaps || p.enteredSegments)
    p.blocksPerSM = kSegmentBlocksPerSM;
  int64_t limit = target.maxSharedBytesPerBlock(p.blocksPerSM);
  // Two stages at least (where the compute warps issue their own copies,
  // step n's wait leaves stages - 2 groups in flight), or, as the last
  // resort with producer warps, one: its copies then in turn with the
  // step that reads them (K = 256 with a split W or f32 keys: 110 KB a
  // stage).
  bool oneStage = false;
  // The stages, then the exchange, then the staged outputs; true where
  // they fit.
  auto layOut = [&] {
    p.stateOutBytes = p.stageStates ? p.K * p.outStride * 2 : 0;
    p.valueOutBytes = p.stageValues ? kChunk * p.outStride * 2 : 0;
    p.outBytes = 2 * (p.stateOutBytes + p.valueOutBytes);
    // Per-key gates that the state pass decays itself stage [64][K] gates
    // besides: their loop is not the short one, and keeps three.
    bool late = p.wIsOperand() && p.keysAreOperands && p.hasGates();
    p.stages = late ? kStateStagesPrefetchLate
               : p.hasW() || p.decay == Decay::Keys ? kStateStages
                                                    : kStateStagesWithoutW;
    // The layout for a number of stages: the stages, the exchange, the
    // output buffers, then (with producer warps) each stage's full and
    // empty mbarriers and each output buffer's.
    auto place = [&](int64_t stages) {
      p.stages = stages;
      p.exchangeOffset = stages * s.bytes();
      p.outOffset = p.exchangeOffset + p.exchangeBytes;
      p.qOffset = p.outOffset + p.outBytes;
      p.barrierOffset = p.qOffset + 2 * p.qBufferBytes;
      p.barrierBytes = p.producerWarps
                           ? (2 * stages + 2 + (p.formsOutput ? stages : 0)) * 8
                           : 0;
    };
    place(p.stages);
    int64_t fewest = oneStage ? 1 : 2;
    while (p.stages > fewest && p.sharedBytes() > limit)
      place(p.stages - 1);
    p.prefetchLate =
        !p.producerWarps && late && p.stages == kStateStagesPrefetchLate;
    return p.sharedBytes() <= limit;
  };
  // Wide blocks are a request (kWideStateColumns): where their stages,
  // exchange and staged outputs do not fit (K > 128), the new values and
  // then the chunk states leave straight from registers; where even that
  // does not fit, the 32-column kernel runs. Staged outputs are worth less
  // than the wide block's single wave (bench/NOTES.md w4), and than a
  // second block an SM for the segments' passes; where even those do not
  // fit two an SM, one block an SM keeps them.
  bool wide = p.block.columns == chunked_kernels::kWideStateColumns;
  // Producer warps: the state pass -3 to -11% across the families
  // (bench/NOTES.md pw1). A wide block with them holds ten warps, three on
  // some sub-partitions: 168 registers a thread. Its steps with W rounded
  // once and row gates or none (gated delta, delta) gain 4-11% up to K =
  // 128; the others lose there (no W: short steps whose copies bind two
  // producers, +8-16%; negeig's split W spills, +26%; KDA +3%), and
  // beyond K = 128 every wide kernel spills 600 bytes and more (pw2).
  if (wide && p.K > kWideProducerMaxKeys)
    p.withoutProducersWhy = "a wide block above K = 128 would spill with them";
  else if (wide && (p.w != WForm::Operand || p.perKey()))
    p.withoutProducersWhy = "a wide block without a W rounded once and row "
                            "gates or none loses with them";
  p.producerWarps = p.withoutProducersWhy.empty();
  bool stagedStates = p.stageStates, stagedValues = p.stageValues;
  bool shrink = wide || p.blocksPerSM > 1;
  if (!layOut() && shrink && p.stageValues) {
    p.stageValues = false;
    layOut();
  }
  if (p.sharedBytes() > limit && shrink && p.stageStates) {
    p.stageStates = false;
    layOut();
  }
  if (p.sharedBytes() > limit && p.blocksPerSM > 1) {
    p.blocksPerSM = 1;
    limit = target.maxSharedBytesPerBlock();
    p.stageStates = stagedStates;
    p.stageValues = stagedValues;
    layOut();
  }
  if (p.sharedBytes() > limit && wide)
    return build(in, role, mmaElem, target, /*allowWide=*/false);
  if (p.sharedBytes() > limit && p.producerWarps) {
    oneStage = true;
    layOut();
  }
  if (p.sharedBytes() > limit)
    return op->emitOpError() << "GPU state pass needs "
                             << sharedBytesExcess(p.sharedBytes(), target);
  if (p.formsOutput) {
    // The output warps read S_n and D_n where the compute warps stage
    // them, their Q buffers beside the stages (the last resort's single
    // stage would serialise the copies the outputs wait on).
    StringRef whyNot =
        !p.producerWarps || oneStage ? "needs producer warps and two stages"
        : !p.stageStates || !p.stageValues
            ? "needs 16-bit chunk states and new values staged by stmatrix "
              "(sm_90)"
        : p.decay != Decay::None && p.decay != Decay::Rows
            ? "takes row gates or none"
        : !p.hasW() ? "takes the WY form"
        : p.qElem != mmaElem || p.outputElem != mmaElem || !p.keysAreOperands
            ? "needs q, k and o in the operand type"
        : p.chunk != kChunk || p.ragged() ? "takes 64-token chunks and whole "
                                            "blocks"
                                          : "";
    if (!whyNot.empty())
      return op->emitOpError()
             << "GPU state pass with the outputs in it " << whyNot;
  }
  return p;
}

std::string StatePassPlan::describe() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << blocksAcross() << " blocks of " << block.columns
     << " state columns a value head and "
     << (segmentChunks ? "segment" : "sequence");
  if (ragged())
    os << " (the last block's columns past " << columns << " load zeros and "
       << "store nothing)";
  if (segmentChunks)
    os << " (segments of " << *segmentChunks << " chunks"
       << (enteredSegments ? ", each from its own entry state)" : ")");
  os << ", " << block.warps << " compute warps";
  if (producerWarps)
    os << " and " << kProducerWarps << " producer warps issuing the copies";
  else
    os << " issuing their own copies (" << withoutProducersWhy << ")";
  os << ", " << threads() << " threads; " << stages
     << (stages == 1 ? " input stage" : " input stages");
  if (prefetchLate)
    os << " (copies issued after the update)";
  os << "; the update takes D' "
     << (splitUpdate ? "split (hi + lo)" : "rounded once");
  if (formsOutput)
    os << "; chunk states and new values staged in shared memory for "
       << kOutputWarps << " output warps, which form each chunk's output "
       << "(neither stored)"
       << (qL2norm ? ", q's row norms from their Q rows" : "");
  else if (stageStates || stageValues)
    os << "; "
       << (stageStates && stageValues ? "chunk states and new values"
           : stageStates              ? "chunk states"
                                      : "new values")
       << " leave through shared memory";
  os << "; " << sharedBytes() << " bytes of shared memory, sized for "
     << blocksPerSM << (blocksPerSM == 1 ? " block" : " blocks") << " an SM";
  return text;
}

} // namespace mlir::linattn::kernel
