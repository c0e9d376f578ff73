//===- StatePassPlan.h - The state pass kernel, decided ---------*- C++ -*-===//
//
// Everything the state pass kernel's phases read, computed once from a
// linattn.chunk_state_pass and the target before any IR is made: which
// variant it is (how D arises, how the gates decay, what goes through
// shared memory), its warps' roles and its shared-memory layout.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_CONVERSION_LINATTNTOGPU_STATEPASS_STATEPASSPLAN_H
#define LIB_CONVERSION_LINATTNTOGPU_STATEPASS_STATEPASSPLAN_H

#include "KeyParts.h"

#include "LinAttn/Conversion/LinAttnToGPU/TargetInfo.h"
#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

#include "llvm/Support/MathExtras.h"

#include <optional>

namespace mlir::linattn::kernel {

/// The warps: each carries S^T for 16 value columns (the m of its products)
/// and 1 / kStateKeySplit of the keys in registers, so the state never goes
/// through shared memory; the kStateKeySplit warps of a column group add
/// their partial W S^T products through shared memory. A block's column
/// groups share its staged inputs (B * HV * V / columns blocks).
///
/// The columns, column groups and warps of one state-pass block: those of
/// `op`'s kStateColumnsAttrName (chunked_kernels::kNarrowStateColumns,
/// where linattn-narrow-state-blocks asked; kWideStateColumns, where
/// linattn-widen-state-blocks did), or kStateColumns; none (`whyNot` says
/// why) for any other width, or one that does not divide V, but for the
/// wide request where chunked_kernels::hasWideStateBlocks(V) allows a
/// ragged one (V = 224): there the last block's second half lies past V
/// (its column groups load zeros and store nothing).
struct StateBlock {
  int64_t columns = 0, columnGroups = 0, warps = 0;
  static std::optional<StateBlock> of(Operation *op, int64_t V,
                                      std::string &whyNot);
  /// The block of `columns` (16, 32 or 64) columns.
  static StateBlock withColumns(int64_t columns);
};
/// Input stages in flight: kStateStages keep two chunks' copies in flight
/// while one is computed. Without W the chunk loop is short (no W S product,
/// no exchange) and a fourth stage hides more of the loads' latency:
/// measured -2% (simple GLA) to -11% (linear attention) at T = 16384; with
/// W it made no difference (bench/results/state_pass_stages_ab_c24.log,
/// NOTES c24). Fewer where they do not fit (f32 keys, an f32 W).
constexpr int64_t kStateStages = 3;
constexpr int64_t kStateStagesWithoutW = 4;
/// The gated kernels with W issue a step's copies after its update (see
/// StatePassPlan::prefetchLate) and take a fourth stage for it, so that
/// the copies keep two steps of lead.
constexpr int64_t kStateStagesPrefetchLate = 4;

/// Warps after the producers that form each step's output where the plan
/// forms the outputs (StatePassPlan::formsOutput): one per 16 of the
/// chunk's 64 rows.
constexpr int64_t kOutputWarps = 4;

/// Blocks an SM for the state passes over segments (linattn.segment_maps
/// and the pass entered from their states): their chains are many and
/// short, so a second block an SM hides what the first one waits on.
constexpr int64_t kSegmentBlocksPerSM = 2;

/// Warps that issue the copies where the plan has producer warps
/// (StatePassPlan::producerWarps): one bound the step where its copies are
/// many (the split W, the ungated kernels' staged outputs: +2 to +23%);
/// two gain everywhere measured (bench/NOTES.md pw1).
constexpr int64_t kProducerWarps = 2;
/// The largest K whose wide (kWideStateColumns) blocks may take producer
/// warps (StatePassPlan::build says which and why).
constexpr int64_t kWideProducerMaxKeys = 128;

/// One chunk_state_pass's kernel, decided.
struct StatePassPlan {
  /// How a chunk's new values arise: D = U (no rank-1 term), or D = U - W S
  /// with W rounded once to the operand type, split into two 16-bit parts
  /// (hi, lo) by the UT transform, or f32 (from f32 keys; split as its
  /// fragments are loaded).
  enum class WForm { None, Operand, Split, F32 };
  /// How the gates decay: not at all; per row (scalar gates [B, T, HV]);
  /// per key with the kernel decaying its staged keys by the staged [64][K]
  /// gates; per key with keys a cumsum decayed (K', and one row of chunk
  /// totals G_C per chunk).
  enum class Decay { None, Rows, Keys, DecayedKeys };

  /// What the kernel makes: the state pass's chunk states, new values and
  /// final state(s); or, for linattn.segment_maps, only each segment's map
  /// [A_s | E_s], its blocks spanning K + V columns (the first K from
  /// I with U = 0, the others from zero with U).
  enum class Role { Pass, SegmentMaps };

  /// Decides the kernel for `op`, or an error naming what it cannot take.
  static FailureOr<StatePassPlan> build(ChunkStatePassOp op, Type mmaElem,
                                        const GPUTargetInfo &target);
  static FailureOr<StatePassPlan> build(SegmentMapsOp op, Type mmaElem,
                                        const GPUTargetInfo &target);
  static FailureOr<StatePassPlan> build(ChunkStatePassOutputOp op, Type mmaElem,
                                        const GPUTargetInfo &target);

private:
  /// The operands both ops' kernels read.
  struct Operands {
    Operation *op;
    Value k, u, w, gates;
    bool decayedKeys;
    int64_t chunk;
    std::optional<int64_t> segmentChunks;
    Type valueElem, stateElem; ///< the pass's outputs (maps: u's type)
    bool enteredSegments;      ///< a [B, NS, HV, K, V] initial state
    /// linattn.chunk_state_pass_output: the queries, the scale and whether
    /// q's row norms are formed (q_l2norm).
    Value q = {};
    float scale = 0.0f;
    bool qL2norm = false;
  };
  /// build, with a kWideStateColumns request taken (allowWide) or
  /// replaced by kStateColumns (where the wide plan did not fit).
  static FailureOr<StatePassPlan> build(const Operands &in, Role role,
                                        Type mmaElem,
                                        const GPUTargetInfo &target,
                                        bool allowWide);

public:
  Role role = Role::Pass;
  // The problem.
  Type mmaElem;              ///< tensor-core operand type (bf16 or f16)
  Type kElem, uElem, wElem;  ///< staged inputs' element types
  Type valueElem, stateElem; ///< new values' and chunk states' types
  int64_t numQKHeads = 0, numVHeads = 0, K = 0, V = 0;
  int64_t chunk = 0;         ///< tokens per chunk
  int64_t stepsPerChunk = 1; ///< 64-row steps per chunk (2 for 128)
  /// Segmented (linattn-segment-chunk-states): a block per segment of this
  /// many chunks, each from zero but the first, or (enteredSegments) each
  /// from its own state [B, NS, HV, K, V].
  std::optional<int64_t> segmentChunks;
  int64_t segmentSteps = 0;
  bool enteredSegments = false;
  /// The state's columns the blocks span: V, or K + V for the maps.
  int64_t columns = 0;
  StateBlock block; ///< the block's columns and warps
  /// Blocks across the columns; with `ragged` the last one's columns run
  /// past `columns` (wide blocks over V = 224: StateBlock::of).
  int64_t blocksAcross() const { return llvm::divideCeil(columns, block.columns); }
  bool ragged() const { return columns % block.columns != 0; }
  WForm w = WForm::None;
  Decay decay = Decay::None;

  // The variant.
  /// 16-bit keys go to the tensor cores by ldmatrix; f32 keys (the
  /// backward's normalised keys) are split as their fragments are loaded.
  bool keysAreOperands = true;
  /// Without W, D is U: where their types agree the new values are u
  /// itself, and the kernel writes no copy of it.
  bool forwardValues = false;
  /// D'^T's A fragments come from the staged U by ldmatrix .trans, decayed
  /// per row pair in fp32 and rounded once (bench/NOTES.md c31).
  bool directD = false;
  /// D' enters the update split (hi + lo): it came out of the ungated delta
  /// rule's cancellation D = U - W S, or belongs to an f32 spec; otherwise
  /// rounded once to the operand type (build says why).
  bool splitUpdate = false;
  /// 16-bit chunk states and new values leave through shared memory by
  /// stmatrix (sm_90), copied out in 16-byte rows one step later.
  bool stageStates = false, stageValues = false;
  /// The copies' rows in 32-bit arithmetic (KernelEmitter::copyRowsAsync):
  /// where there is W (NOTES c32).
  bool narrowRows = false;
  /// A long chunk with row gates carries its first step's last gate after
  /// the state, for the second step's decay.
  bool carryGateBase = false;
  /// The key parts' partial D products are summed through shared memory.
  bool exchange = false;
  /// Chunk states and new values leave (not for the maps).
  bool writesOutputs = true;
  /// Blocks an SM the shared memory is sized for: the segments' passes
  /// (many short chains) take kSegmentBlocksPerSM.
  int64_t blocksPerSM = 1;
  /// Step n issues step n + stages - 1's copies after its update instead
  /// of right after its barrier: their ~200 instructions a warp then wait
  /// behind the update's products rather than in front of the step's
  /// chain. Taken where there are gates and W and the keys go to the
  /// tensor cores as staged (16-bit), and a fourth stage fits:
  /// the gated delta rule's and KDA's state pass -5 to -11% (K = 128); the
  /// ungated delta rule and the kernels without W measured 3-5% slower
  /// with it, and three stages with it lose the copies' lead (K = 64: +27%)
  /// (bench/NOTES.md q1). Never with producer warps (they issue the
  /// copies): the wide blocks keep it.
  bool prefetchLate = false;
  /// kProducerWarps warps after the block's `block.warps` compute warps
  /// issue every stage's copies in and every staged output's copies out,
  /// the compute warps none of either: each stage has a "full" mbarrier
  /// (the producer threads arrive as their copies land,
  /// cp.async.mbarrier.arrive.noinc) and an "empty" one (the compute
  /// threads arrive once their step has read it and staged its outputs);
  /// each output buffer a "copied out" one (the producer threads arrive).
  /// The compute warps' own barriers are a named barrier of their threads.
  /// The copies' ~200 instructions a warp and step and the registers they
  /// hold leave the compute warps' chain (bench/NOTES.md pw1; one producer
  /// warp was too few: its issue bound the step where the copies are many).
  bool producerWarps = false;
  /// Where producerWarps is false: why (build's rule, for describe).
  StringRef withoutProducersWhy;
  /// kOutputWarps warps after the producers form every step's output
  /// (linattn.chunk_state_pass_output) from S_n and D_n as the compute
  /// warps stage them, and nothing copies those out:
  ///   O = scale r (diag(exp(G)) Q S_n + (Q K^T * exp(G_i - G_j) * causal) D_n)
  /// (r q's reciprocal row norms where qL2norm, else 1) for the block's
  /// columns, output warp w taking rows [16 w, 16 w + 16). Each warp
  /// copies its own rows of Q (two buffers, a step ahead); K and G come
  /// from the stage, so a stage is refilled once the output warps have
  /// read it ("output done", one mbarrier a stage), and an output buffer
  /// is free once they have (its "copied out" mbarrier, their arrivals).
  bool formsOutput = false;
  Type qElem, outputElem;
  float scale = 0.0f;
  bool qL2norm = false;

  // The warps' roles.
  int64_t keysPerWarp = 0; ///< K / kStateKeySplit
  int64_t keyTiles = 0;    ///< accumulator tiles of S^T per warp
  int64_t rowTiles = 0;    ///< 8-row tiles of a 64-row step

  // Shared memory: `stages` stages of a chunk's inputs as they come from
  // global memory (W, K, the block's U columns, the gates), then the
  // exchange of partial products, then two buffers of staged outputs.
  struct Stage {
    int64_t wCols = 0, wStride = 0, kStride = 0, uStride = 0;
    int64_t gateRows = 0, gateCols = 0;
    int64_t wBytes = 0, kBytes = 0, uBytes = 0, gBytes = 0;
    int64_t kOffset() const { return wBytes; }
    int64_t uOffset() const { return wBytes + kBytes; }
    int64_t gOffset() const { return wBytes + kBytes + uBytes; }
    int64_t bytes() const { return wBytes + kBytes + uBytes + gBytes; }
  };
  Stage stage;
  int64_t stages = 0;
  int64_t exchangeOffset = 0, exchangeBytes = 0;
  /// Each output buffer: S_n [K][outStride] then D_n [64][outStride].
  int64_t outOffset = 0, outStride = 0, stateOutBytes = 0, valueOutBytes = 0;
  int64_t outBytes = 0; ///< both buffers
  /// With producer warps: the stages' full then empty mbarriers, then the
  /// two output buffers' (8 bytes each).
  /// With formsOutput: the output warps' two Q buffers [64][qStride]
  /// after the output buffers (each warp its own 16 rows of each).
  int64_t qOffset = 0, qStride = 0, qBufferBytes = 0;
  /// With formsOutput, after those three kinds of mbarriers: each stage's
  /// "output done".
  int64_t barrierOffset = 0, barrierBytes = 0;
  int64_t sharedBytes() const { return barrierOffset + barrierBytes; }
  /// The compute warps' threads, the producers', the output warps', and
  /// the block's.
  int64_t computeThreads() const { return block.warps * 32; }
  int64_t producerThreads() const { return producerWarps ? kProducerWarps * 32 : 0; }
  int64_t outputThreads() const { return formsOutput ? kOutputWarps * 32 : 0; }
  int64_t threads() const {
    return computeThreads() + producerThreads() + outputThreads();
  }
  /// The producers copy the staged chunk states and new values out (not
  /// where the output warps consume them).
  bool copiesStagedOut() const {
    return (stageStates || stageValues) && !formsOutput;
  }

  /// The plan in one line (convert-linattn-chunked-to-gpu{explain}): the
  /// blocks, warps, stages, D' rounded or split, staged outputs, blocks an
  /// SM and shared memory.
  std::string describe() const;

  bool hasW() const { return w != WForm::None; }
  /// W goes to the tensor cores as it is staged (16-bit, plain or split).
  bool wIsOperand() const { return w == WForm::Operand || w == WForm::Split; }
  bool hasGates() const { return decay != Decay::None; }
  bool perKey() const { return decay == Decay::Keys || decay == Decay::DecayedKeys; }
};

} // namespace mlir::linattn::kernel

#endif // LIB_CONVERSION_LINATTNTOGPU_STATEPASS_STATEPASSPLAN_H
