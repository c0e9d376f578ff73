//===- ChunkGradKernels.h - linattn.chunk_grad's two kernels ----*- C++ -*-===//
//
// linattn.chunk_grad on tensor cores is two kernels: the WY factors' share
// (P, Y and Z = (I + L)^-T [dW dD], F = c dL, dv, dbeta) per (chunk, value
// head, sequence), holding the chunk's whole rows or streaming them in
// 64-column slabs, and the key gradients (dq, dk, the gates' gradient) per
// chunk and 64-key block where that kernel takes the op, else per chunk;
// the second reads what the first leaves in global memory as the loop
// lowering leaves it. Each says whether it takes an op's forms.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_CONVERSION_LINATTNTOGPU_CHUNKGRAD_CHUNKGRADKERNELS_H
#define LIB_CONVERSION_LINATTNTOGPU_CHUNKGRAD_CHUNKGRADKERNELS_H

#include "../../LinAttnToLoops/LoopLowerings.h"
#include "../Kernel/KernelEmitter.h"
#include "../Kernel/MmaEmitter.h"

#include "LinAttn/Conversion/LinAttnToGPU/TargetInfo.h"
#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::linattn::kernel {

/// The launch both kernels share: a block of `threads` (four warps unless a
/// plan asks more) per (chunk, value head, sequence), grid (ceil(T / 64),
/// HV, B).
void emitChunkGridLaunch(ImplicitLocOpBuilder &b, Value seqLen,
                         int64_t numVHeads, Value batch, int64_t smemBytes,
                         Type mmaElem, function_ref<void(MmaEmitter &)> body,
                         int64_t threads = kThreads);

/// A chunk_grad kernel's block: four warps, each 16 rows of every product;
/// or eight, warp w rows 16 (w % 4) and half w / 4 of the products'
/// columns (WarpTiling), so that two warps a scheduler hide each other's
/// latencies where one block fills an SM's shared memory (bench/NOTES.md
/// pr1, b13, b14). A plan sets `warps`.
struct ChunkGradWarps {
  int64_t warps = 4;
  int64_t threads() const { return 32 * warps; }
  /// Column halves a row's products are split into (1 or 2).
  int64_t halves() const { return warps / 4; }
  /// Partial sums a row term (a sum over a row's columns) keeps for a row:
  /// one per quad of the accumulator layout and half.
  int64_t termParts() const { return 4 * halves(); }
};

/// Whether chunk_grad's S_n (chunk_states) come in `mmaElem`, the tensor
/// cores' 16-bit type (linattn-recurrence-grad-to-chunked's
/// narrow-states): the kernels then copy them in as they are and multiply
/// them once, where f32 ones are split into hi + lo parts on the way in.
/// The kernels read any other float type widened, as f32.
bool hasNarrowStates(ChunkGradOp op, Type mmaElem);

/// Which part of a chunk's [64 x n] product a warp holds: with four warps
/// (one column half), rows [16 w, + 16) and every column; with eight (two
/// halves), rows [16 (w % 4), + 16) and half w / 4 of the columns, so that
/// two warps share a scheduler where one block fills an SM (bench/NOTES.md
/// pr1, b13).
class WarpTiling {
public:
  WarpTiling(MmaEmitter &k, int64_t halves);
  int64_t halves() const { return numHalves; }
  /// The warp's first row.
  Value m0() const { return firstRow; }
  /// The warp's column half (warp / 4), null with one half.
  Value half() const { return colHalf; }
  /// The first column of the warp's share of `width` columns, null (0)
  /// with one half.
  Value base(int64_t width);
  /// base + x, or x where base is null.
  Value plus(Value base, Value x);
  /// acc += A B over the warp's rows and its columns from `base` (null:
  /// from 0).
  void gemm(SmallVector<SmallVector<Value>> &acc, Operand a, Operand bt,
            int64_t kDim, Value base);

private:
  MmaEmitter &k;
  int64_t numHalves;
  Value firstRow, colHalf;
};

/// The WY share's buffers: inputs, then its results (P = keyPairs, F =
/// factorPairs [B, T, HV, 64] f32, Y = yW [B, T, HV, K] f32, dv, dbeta).
/// With per-key gates P and F stay null, and yW and gateShare ([B, T, HV,
/// K] f32; null without a gates' gradient) take dk's and dL/dG's shares.
/// kRNorm: the op's k_rnorm (qk_l2norm factored), or null.
struct WYGradBuffers {
  Value k, v, beta, gates, w, u, states, gradValues;
  Value keyPairs, factorPairs, yW, gateShare, dv, dbeta;
  Value batch, seqLen;
  Value kRNorm;
};

/// Why the WY kernel does not take `op`, or "" if it does: it takes beta,
/// a 16-bit W as the UT transform rounds it or splits it (hi and lo
/// parts, negeig's), f32 U, gates per row or none,
/// or per key with 16-bit keys and K a multiple of 32, within shared
/// memory.
std::string whyNoWYGradKernel(ChunkGradOp op, const GPUTargetInfo &target);
/// The WY kernel's block for `op` (which it takes), for --explain: "N
/// warps, B bytes of shared memory".
std::string describeWYGradKernel(ChunkGradOp op, const GPUTargetInfo &target);
void emitWYGradKernel(ImplicitLocOpBuilder &b, ChunkGradOp op,
                      const GPUTargetInfo &target, const WYGradBuffers &io);

/// Why the WY slab kernel (WYSlabGradKernel.cpp: the WY share with a
/// chunk's rows streamed in 64-column slabs, ~95 KB of shared memory at
/// any head size) does not take `op`, or "" if it does: what the WY kernel
/// takes with gates per row or none, K and V multiples of 64 up to 256.
std::string whyNoWYSlabGradKernel(ChunkGradOp op, const GPUTargetInfo &target);
/// "N warps, B bytes of shared memory, M blocks an SM".
std::string describeWYSlabGradKernel(ChunkGradOp op,
                                     const GPUTargetInfo &target);
void emitWYSlabGradKernel(ImplicitLocOpBuilder &b, ChunkGradOp op,
                          const GPUTargetInfo &target, const WYGradBuffers &io);

/// Why the key kernel does not take `op`, or "" if it does: it takes
/// 16-bit dO, q and k 16-bit or f32, gates per row or none, or per key
/// with 16-bit q and k (with WY factors only after the WY kernel), K and V
/// at most 128.
std::string whyNoKeyGradKernel(ChunkGradOp op, const GPUTargetInfo &target);
/// The key kernel's block for `op` (which it takes), as describeWYGradKernel.
std::string describeKeyGradKernel(ChunkGradOp op, const GPUTargetInfo &target);
/// "N warps, B bytes of shared memory".
std::string describeChunkGradBlock(int64_t warps, int64_t sharedBytes);
void emitKeyGradKernel(ImplicitLocOpBuilder &b, ChunkGradOp op,
                       const GPUTargetInfo &target, const ChunkGradKeyInputs &io);

/// Why the key-block kernel (KeyBlockGradKernel.cpp: a block per chunk and
/// 64 keys, V in slabs, two blocks an SM) does not take `op`, or "" if it
/// does: what the key kernel takes with gates per row or none, K and V
/// multiples of 64 up to 256.
std::string whyNoKeyBlockGradKernel(ChunkGradOp op, const GPUTargetInfo &target);
/// "N warps, B bytes of shared memory, M a chunk".
std::string describeKeyBlockGradKernel(ChunkGradOp op,
                                       const GPUTargetInfo &target);
/// The key-block kernel and, with a gates' gradient, the small kernel that
/// sums its blocks' partial row terms into dgate.
void emitKeyBlockGradKernel(ImplicitLocOpBuilder &b, ChunkGradOp op,
                            const GPUTargetInfo &target,
                            const ChunkGradKeyInputs &io);

/// How linattn.chunk_grad lowers on the GPU: decided once, read by the
/// conversion and by --explain.
struct ChunkGradLowering {
  enum class Kind {
    Loops,          ///< the loop lowering alone (`why`: which kernel refuses, why)
    KeyKernel,      ///< the WY share (if any) as loops, then the key kernel
                    ///< (`why`: the WY kernel's reason, "" without beta;
                    ///< not with per-key gates and WY factors)
    WYAndKeyKernels ///< both kernels, no loops (`why`: the slab kernel's
                    ///< reason where the WY share runs by whole rows)
  };
  Kind kind;
  std::string why;
  /// The key gradients by key block (emitKeyBlockGradKernel) rather than
  /// a block per chunk (emitKeyGradKernel), where that kernel takes the op.
  bool keyBlocks = false;
  /// The WY share by slabs (emitWYSlabGradKernel) rather than by whole
  /// rows (emitWYGradKernel; `why` then says why not by slabs).
  bool wySlabs = false;
};
ChunkGradLowering chooseChunkGradLowering(ChunkGradOp op,
                                          const GPUTargetInfo &target);
/// The choice in words, for --explain: "the WY kernel (8 warps, N bytes of
/// shared memory) and the key kernel (...)", "loops (why)", or the WY
/// share's loops then the key kernel.
std::string describeChunkGradLowering(ChunkGradOp op,
                                      const GPUTargetInfo &target);

} // namespace mlir::linattn::kernel

#endif // LIB_CONVERSION_LINATTNTOGPU_CHUNKGRAD_CHUNKGRADKERNELS_H
