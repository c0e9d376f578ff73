//===- ChunkedToGPUPatterns.h - Chunked algorithm ops to kernels -*- C++ -*-===//
//
// One pattern per chunked-state algorithm op, each in <Op>ToGPU.cpp, each
// lowering exactly the op it is given to one kernel (what a kernel fuses is
// decided before, on the IR: linattn-fuse-chunk-cumsum).
//
//===----------------------------------------------------------------------===//

#ifndef LIB_CONVERSION_LINATTNTOGPU_CHUNKEDTOGPUPATTERNS_H
#define LIB_CONVERSION_LINATTNTOGPU_CHUNKEDTOGPUPATTERNS_H

#include "LinAttn/Conversion/LinAttnToGPU/TargetInfo.h"
#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

#include "mlir/IR/PatternMatch.h"

namespace mlir::linattn::kernel {

/// What the lowerings read besides their op: the target, and the
/// tensor-core operand type of each op that runs products, fixed before
/// any op is rewritten (an operand's producer, an l2norm say, decides it).
class ChunkedLoweringContext {
public:
  /// The operand types of every chunked op under `root`, or an error on
  /// the first op whose inputs the tensor cores cannot take.
  static FailureOr<ChunkedLoweringContext> build(Operation *root,
                                                 const GPUTargetInfo &target,
                                                 bool explain = false);

  const GPUTargetInfo &getTarget() const { return target; }
  /// The 16-bit type `op`'s products run in.
  Type getMmaType(Operation *op) const { return mmaTypes.lookup(op); }
  /// The patterns remark on the kernels they plan (the pass's `explain`).
  bool explains() const { return explain; }

private:
  ChunkedLoweringContext(const GPUTargetInfo &target, bool explain)
      : target(target), explain(explain) {}
  GPUTargetInfo target;
  bool explain;
  DenseMap<Operation *, Type> mmaTypes;
};

void populateL2NormToGPUPatterns(RewritePatternSet &patterns,
                                 const ChunkedLoweringContext &context);
void populateChunkCumsumToGPUPatterns(RewritePatternSet &patterns,
                                      const ChunkedLoweringContext &context);
void populateUTTransformToGPUPatterns(RewritePatternSet &patterns,
                                      const ChunkedLoweringContext &context);
/// Every linattn.chunk_state_pass_output whose kernel the target cannot
/// hold (StatePassPlan::build says why) becomes the two ops it stands for
/// again, a separate output kernel reading the stored states (with
/// `explain`, a remark says why).
void unfuseStatePassOutputsWithoutKernel(Operation *root,
                                         const GPUTargetInfo &target,
                                         bool explain);
void populateChunkStatePassToGPUPatterns(RewritePatternSet &patterns,
                                         const ChunkedLoweringContext &context);
/// The reverse chunk pass of the backward, where its kernel takes the op's
/// forms; the op is left to its loop lowering elsewhere.
void populateChunkStatePassGradToGPUPatterns(
    RewritePatternSet &patterns, const ChunkedLoweringContext &context);
/// Why the reverse pass's kernel does not take `op`, or "" if it does.
std::string whyNoReversePassKernel(ChunkStatePassGradOp op,
                                   const GPUTargetInfo &target);
/// linattn.chunk_grad as tensor-core kernels where they take the op's forms
/// (ChunkGrad/ChunkGradToGPU.cpp); otherwise the op is left to its loop
/// lowering.
void lowerChunkGradToGPU(ChunkGradOp op, const GPUTargetInfo &target);
/// linattn.qk_grad: a warp per (b, t, h) row (K up to 1024).
void populateQKGradToGPUPatterns(RewritePatternSet &patterns,
                                 const ChunkedLoweringContext &context);
/// What runs each of the backward's chunked ops under `root` (the reverse
/// chunk pass, chunk_grad, qk_grad), and why an op keeps its loops, as
/// "reverse chunk pass: tensor-core kernel; chunk_grad: ...": for
/// --explain, from the plans the conversion builds.
std::string describeBackwardKernels(Operation *root, const GPUTargetInfo &target);
/// For convert-linattn-chunked-to-gpu{explain}, before anything is
/// lowered: a remark on each chunk_grad (its kernels or loops, and whether
/// a linattn.qk_grad takes its dq and dk) and each qk_grad under `root`.
void explainBackwardOps(Operation *root, const GPUTargetInfo &target);
void populateSegmentCarriesToGPUPatterns(RewritePatternSet &patterns,
                                         const ChunkedLoweringContext &context);
void populateSegmentEntriesToGPUPatterns(RewritePatternSet &patterns,
                                         const ChunkedLoweringContext &context);
void populateChunkOutputToGPUPatterns(RewritePatternSet &patterns,
                                      const ChunkedLoweringContext &context);

} // namespace mlir::linattn::kernel

#endif // LIB_CONVERSION_LINATTNTOGPU_CHUNKEDTOGPUPATTERNS_H
