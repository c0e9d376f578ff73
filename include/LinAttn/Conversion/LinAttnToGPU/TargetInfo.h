//===- TargetInfo.h - What the GPU kernels know of their target -*- C++ -*-===//
//
// One home for the facts about the GPU target that the conversion to GPU
// kernels, the strategy selector and the cost model all need: the chip's
// compute capability and SM count, the shared memory a block may take, the
// instructions the kernels rely on, and what the chunked tensor-core
// kernels take (chunk lengths, head sizes, element types).
//
//===----------------------------------------------------------------------===//

#ifndef LINATTN_CONVERSION_LINATTNTOGPU_TARGETINFO_H
#define LINATTN_CONVERSION_LINATTNTOGPU_TARGETINFO_H

#include "mlir/IR/Types.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mlir::linattn {
class RecurrenceOp;

/// Streaming multiprocessors of the sm_90 parts LinAttn is tuned on (H100
/// SXM, H200): the default every planner (selector, cost model, segments)
/// assumes.
constexpr int64_t kHopperSMs = 132;

/// The boundary every GPU function argument's first element sits on
/// (linattn/Abi.h): the kernels load 16 bytes an access (cp.async, vector
/// row copies), and linattn-insert-alignment-checks asserts it per call.
constexpr int64_t kArgumentAlignmentBytes = 16;

/// The largest key dimension K the GPU code is generated for. Every
/// strategy's fallback, the recurrent kernel, keeps a K-vector per thread
/// with its loops unrolled, and compiling it grows with K
/// past 10 s beyond this limit (bench/NOTES.md l1).
constexpr int64_t kMaxGPUKeyDim = 2048;

/// The attribute by which a kernel asks linattn-gpu-occupancy-hints for at
/// least this many registers a thread (an IntegerAttr): set on the kernel's
/// `gpu.dynamic_shared_memory` op, which gpu-kernel-outlining carries into
/// the gpu.func where it drops the gpu.launch's own attributes.
constexpr StringLiteral kMinRegistersAttrName =
    "linattn.min_registers_per_thread";

/// An NVIDIA GPU the kernels are generated for.
class GPUTargetInfo {
public:
  /// The target named by a CUDA chip name, "sm_XY" or "sm_XYa" (sm_90a:
  /// compute capability 90), or none for any other string.
  static std::optional<GPUTargetInfo> forChip(StringRef chip);

  /// One NVIDIA H200 (sm_90a), the target every measurement in bench/ is
  /// from.
  static GPUTargetInfo h200();

  /// 10 * major + minor: 90 for sm_90a.
  int computeCapability() const { return capability; }
  /// Streaming multiprocessors: 132 on the H100 SXM and the H200, the
  /// sm_90 parts LinAttn is tuned on; other chips are planned as if they
  /// had as many.
  int64_t smCount() const { return sms; }
  /// Dynamic shared memory one block may opt in to: the chip's limit per
  /// block (sm_90: 227 KiB), which counts static shared memory too, less
  /// the static bytes every kernel declares (kKernelStaticSharedBytes).
  int64_t maxSharedBytesPerBlock() const {
    return maxSharedBytes - kKernelStaticSharedBytes;
  }
  /// The same with `blocksPerSM` blocks resident on one SM: the SM's
  /// shared memory (one block's limit plus the 1 KiB the hardware reserves
  /// for each block: 228 KiB on sm_90) split between them, less each
  /// block's reserve and static bytes.
  int64_t maxSharedBytesPerBlock(int64_t blocksPerSM) const {
    int64_t perSM = maxSharedBytes + kBlockReservedSharedBytes;
    return std::min(maxSharedBytesPerBlock(),
                    perSM / blocksPerSM - kBlockReservedSharedBytes -
                        kKernelStaticSharedBytes);
  }
  static constexpr int64_t kBlockReservedSharedBytes = 1024;
  /// Static shared memory in every kernel: the symbol MLIR's
  /// gpu.dynamic_shared_memory lowers to (`.shared .align 16 .b8`, one
  /// byte that ptxas counts as static), at its alignment. With it, a
  /// dynamic size of the chip's whole limit is refused at launch
  /// (bench/NOTES.md w1: a plan of exactly 232448 bytes).
  static constexpr int64_t kKernelStaticSharedBytes = 16;
  /// stmatrix (sm_90 and later): 16-bit accumulator tiles leave through
  /// shared memory in one instruction per four 8x8 tiles.
  bool hasStMatrix() const { return capability >= 90; }

private:
  GPUTargetInfo(int capability, int64_t sms, int64_t maxSharedBytes)
      : capability(capability), sms(sms), maxSharedBytes(maxSharedBytes) {}
  int capability;
  int64_t sms;
  int64_t maxSharedBytes;
};

/// What the chunked tensor-core kernels take, on every target they run on.
namespace chunked_kernels {
/// Tokens per chunk: four warps of 16 rows each.
constexpr int64_t kChunk = 64;
/// The long chunk of the kinds without a rank-1 term and with one decay
/// per row (linear attention, RetNet, simple GLA).
constexpr int64_t kLongChunk = 128;
/// Value columns of the state one block of the state pass carries (two
/// column groups of 16, four warps); a state pass marked
/// kStateColumnsAttrName = kNarrowStateColumns carries half as many (one
/// group, two warps), twice the blocks, for calls whose blocks would fill
/// under half the SMs (linattn-narrow-state-blocks; bench/NOTES.md e1, w1).
constexpr int64_t kStateColumns = 32;
constexpr int64_t kNarrowStateColumns = 16;
/// A state pass marked kStateColumnsAttrName = kWideStateColumns carries
/// twice the columns (four groups, eight warps) in half the blocks, where
/// the 32-column blocks would take more than one wave
/// (linattn-widen-state-blocks; bench/NOTES.md w3). A request: where its
/// shared memory does not fit, its outputs leave from registers instead of
/// staged (K > 128, w4), and where even that does not, the kernel keeps
/// kStateColumns.
constexpr int64_t kWideStateColumns = 64;
constexpr StringLiteral kStateColumnsAttrName = "linattn.state_columns";
/// The state columns B * HV * V at and under which the state pass's
/// B * HV * V / kStateColumns blocks (one an SM) fill at most half the
/// SMs: there its chains leave the GPU idle, and the automatic pipeline
/// (strategy=auto) runs more of them at run time, by segments of
/// kAutoSegmentChunks chunks (scalar transitions) or narrow blocks (the
/// others).
constexpr int64_t fewChainsStateColumns(int64_t smCount) { return 16 * smCount; }
/// The state columns B * HV * V above which the state pass's
/// B * HV * V / kStateColumns blocks (one an SM) take more than one wave:
/// there the automatic pipeline runs kWideStateColumns blocks, chosen at
/// run time (bench/NOTES.md w3).
constexpr int64_t manyChainsStateColumns(int64_t smCount) {
  return kStateColumns * smCount;
}
/// Whether linattn-widen-state-blocks gives a state pass of value size V
/// its kWideStateColumns form: V a multiple of it, or V = 224 and above (a
/// multiple of kStateColumns), where the last wide block is half past V
/// (ragged): there 4 wide blocks beat 7 of 32 columns, while at V = 160
/// (3 against 5) the half-empty block costs more than it saves where the
/// blocks take several waves (measured: bench/NOTES.md r3). The pass, the
/// kernel's plan and the strategy's explanation read this one rule.
constexpr bool hasWideStateBlocks(int64_t valueDim) {
  return valueDim % kWideStateColumns == 0 ||
         (valueDim % kStateColumns == 0 && valueDim >= 7 * kStateColumns);
}
/// Whether the state pass's kernel forms the chunks' outputs itself (a
/// linattn.chunk_state_pass_output, linattn-fuse-chunk-output) at key size
/// K and value size V: its 32-column blocks with producer warps, whose
/// shared memory holds the output warps' queries beside three input stages
/// up to K = 128.
constexpr int64_t kMaxFusedOutputKeyDim = 128;
constexpr bool hasFusedOutputPass(int64_t keyDim, int64_t valueDim) {
  return keyDim <= kMaxFusedOutputKeyDim && valueDim % kStateColumns == 0;
}
/// Chunks per segment of the automatic segments (bench/NOTES.md c27, c29).
constexpr int64_t kAutoSegmentChunks = 16;
/// Whether the automatic pipeline cuts a state pass with dense transitions
/// (a rank-1 term, per-key gates) of key size K by segment maps
/// (linattn-segment-chunk-states): K at most 128, where the entries' K x K
/// products and the maps' two blocks an SM were measured.
constexpr bool hasDenseSegments(int64_t keyDim) { return keyDim <= 128; }
/// The automatic dense segments run where a sequence has more than this
/// many chunks and B * HV * V <= denseSegmentStateColumns: the maps and
/// the second pass cost about three state passes on NS times the chains,
/// so a few segments lose (level at T = 8192, 128 chunks; bench/NOTES.md
/// s1).
constexpr int64_t kDenseSegmentMinChunks = 128;
/// The state columns B * HV * V up to which the automatic pipeline cuts a
/// state pass in WY form by segment maps: where the narrow blocks fill a
/// quarter of the SMs or fewer (B * HV * V / 16 <= smCount / 2). On the
/// H200 (bench/NOTES.md s1) B = 1, HV = 8, V = 128 (1024 columns) gained
/// 8-9% at T >= 16384; B = 2 (2048) lost 40%.
constexpr int64_t denseSegmentStateColumns(int64_t smCount) {
  return 8 * smCount;
}
/// What the automatic pipeline runs, chosen at run time, where a state
/// pass's chains are few (B * HV * V <= maxStateColumns): segments along T
/// for scalar transitions (linattn-segment-chunk-states), narrow blocks
/// for the others (a rank-1 term or per-key gates; linattn-narrow-state-
/// blocks), or neither where even B = 1 passes the limit, or V does not
/// split into narrow blocks. The passes and the strategy's explanation
/// read this one rule.
enum class FewChainsForm { None, Segments, NarrowBlocks };
constexpr FewChainsForm fewChainsForm(bool scalarTransitions, int64_t numVHeads,
                                      int64_t valueDim, int64_t maxStateColumns) {
  if (numVHeads * valueDim > maxStateColumns)
    return FewChainsForm::None;
  if (scalarTransitions)
    return FewChainsForm::Segments;
  return valueDim % kNarrowStateColumns == 0 ? FewChainsForm::NarrowBlocks
                                             : FewChainsForm::None;
}
/// Head sizes K and V the kernels take: multiples of kHeadDimMultiple (a
/// state-pass block's columns; a warp's keys are K / 2 in 16-key k-steps)
/// up to kMaxHeadDim. Above 128 some kinds' tiles outgrow a block's shared
/// memory (the state pass of negeig's split W at 256); the conversion says
/// so, and linattn-fit-chunked-kernels asks it before a spec is committed
/// to the chunked form.
constexpr int64_t kHeadDimMultiple = 32;
constexpr int64_t kMaxHeadDim = 256;
/// A recurrence's head sizes may be multiples of kPaddedHeadDimMultiple
/// from kHeadDimMultiple up: linattn-pad-head-dims computes it at the
/// sizes rounded up to kHeadDimMultiple (zero padding is exact).
constexpr int64_t kPaddedHeadDimMultiple = 16;
/// The head size the kernels run a recurrence's `size` at.
int64_t paddedHeadDim(int64_t size);

/// Why the GPU code cannot target `chip`, or "" if it can: a CUDA chip
/// name (sm_XY or sm_XYa) from sm_80 (cp.async, bf16 tensor cores) to
/// sm_90a (the PTX 8.0 the pipeline emits; newer chips need newer PTX and
/// were never run).
std::string checkChip(StringRef chip);
/// Why the kernels cannot take a head dimension `name` (K or V) of `size`,
/// or "" if they can.
std::string checkHeadDim(StringRef name, int64_t size);
/// Why the kernels cannot run inputs of element type `elem` on tensor
/// cores, or "" if they can: bf16 and f16 as they are, f32 split into two
/// bf16 parts, x ~= hi + lo (about 16 significant bits; each product of
/// two split operands is three MMAs, hi hi + hi lo + lo hi).
std::string checkOperandType(Type elem);
/// The largest (padded) K at which f32 inputs with per-key gates have
/// chunked kernels: the output kernel holds Q, K and K' split (six 16-bit
/// [64][K] tiles) beside the [64][K] f32 gates, 138 KB at K = 128 and
/// 204 KB at 192, where the state tile no longer fits.
constexpr int64_t kMaxSplitPerKeyHeadDim = 128;
/// Why the kernels cannot take inputs of element type `elem` beside the
/// gates, per key (`perKeyGates`) or not, at (padded) head size `keyDim`,
/// or "" if they can: f32 inputs with per-key gates only up to
/// kMaxSplitPerKeyHeadDim.
std::string checkOperandGates(Type elem, bool perKeyGates, int64_t keyDim);
/// The tensor-core operand type of inputs of element type `elem` (one
/// checkOperandType takes): its own, or bf16 for f32 (the split's parts).
Type mmaTypeFor(Type elem);
/// Why a recurrence's chunked form (chunks of kChunk) has no tensor-core
/// kernels, or "" if it has: the checks the conversion makes of the
/// algorithm ops it becomes, asked of the spec (its head sizes padded).
std::string whyNoKernels(RecurrenceOp op);
} // namespace chunked_kernels

/// What the recurrent strategy's split-key kernel takes
/// (convert-linattn-recurrence-to-gpu); the rest goes to the loop
/// lowering's kernel, one thread per state column.
namespace recurrent_kernel {
/// Lanes that share one state column: 4, or kMaxLanesPerColumn where K is
/// above 128 and a multiple of it, so that a lane holds at most 32 keys in
/// registers (48 to 64 spilled 324-644 bytes under the 80 registers of the
/// six blocks an SM the kernel's shared memory allows; bench/NOTES.md d5).
constexpr int64_t kMaxLanesPerColumn = 8;
int64_t lanesPerColumn(int64_t K);
/// The largest K the kernel takes (64 keys a lane of four).
constexpr int64_t kMaxKeyDim = 256;
/// Registers a thread the kernel asks for (kMinRegistersAttrName): its
/// window's shared memory lets six blocks of 128 threads run, whose 80
/// registers spill the token step at 32 keys a lane; with 96, five blocks
/// at 88 registers run a delta rule's single token 5-9% faster
/// (bench/NOTES.md d5, d6).
constexpr int64_t kMinRegistersPerThread = 96;
/// Registers a thread asks for where it holds two state columns (V above
/// one set's columns): 2 x 32 slots of state, and ptxas at K = 128 then
/// takes 128 with no spill (four blocks an SM; bench/NOTES.md e11).
constexpr int64_t kTwoColumnRegistersPerThread = 128;
/// Registers a thread the kernel asks for at `columnsPerThread` (1 or 2).
int64_t registersPerThread(int64_t columnsPerThread);
/// Threads of the kernel's block (kernel::kThreads, which
/// RecurrenceToGPU.cpp asserts equal).
constexpr int64_t kBlockThreads = 128;
/// State columns a thread holds at K x V: two (columns c and c + one set)
/// where V is above one set's kBlockThreads / lanesPerColumn(K) columns,
/// else one (bench/NOTES.md e11).
int64_t columnSets(int64_t K, int64_t V);
/// State columns a block holds: columnSets(K, V) sets of
/// kBlockThreads / lanesPerColumn(K) (the grid has ceil(V / it) blocks a
/// head, the last one partly idle where V is not a multiple).
int64_t columnsPerBlock(int64_t K, int64_t V);
/// The multiply-adds a thread chains into its sums in one token step: its
/// K / lanesPerColumn(K) keys of each column it holds (64 at K = V = 128,
/// 24 at K = V = 48). The cost model's token step grows with it.
int64_t chainedKeysPerStep(int64_t K, int64_t V);
/// Why the split-key kernel cannot take `op`, or "" if it can.
std::string whyNoSplitKeyKernel(RecurrenceOp op);
/// The kernel the recurrent strategy runs `op` with, for explanations:
/// "split-key kernel" or "one thread per column: <why>".
std::string describeKernel(RecurrenceOp op);
} // namespace recurrent_kernel

} // namespace mlir::linattn

#endif // LINATTN_CONVERSION_LINATTNTOGPU_TARGETINFO_H
