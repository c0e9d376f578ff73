//===- Passes.h - LinAttn transformation passes -----------------*- C++ -*-===//

#ifndef LINATTN_TRANSFORMS_PASSES_H
#define LINATTN_TRANSFORMS_PASSES_H

#include "LinAttn/Conversion/LinAttnToGPU/TargetInfo.h"

#include "mlir/Pass/Pass.h"

namespace mlir::linattn {

/// The argument attribute naming the recurrence operand an argument is
/// (linattn-record-argument-roles; read by linattn-emit-signatures).
constexpr llvm::StringLiteral kRoleAttrName = "linattn.role";

#define GEN_PASS_DECL
#include "LinAttn/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "LinAttn/Transforms/Passes.h.inc"

/// The chunked forms of the recurrences selected for them, as the default
/// pipelines make them (`funcPm` nests on func.func): head sizes padded to
/// `headDimMultiple` where it is non-zero (linattn-pad-head-dims; the GPU
/// kernels' multiple), chunks of `chunkSize` with narrow intermediates
/// (linattn-recurrence-to-chunked), the rank-1 products in WY form with W
/// split for 16-bit operands (linattn-lower-rank1-to-wy).
/// linattn-fit-chunked-kernels tries the same.
void addChunkedFormPasses(OpPassManager &funcPm, int64_t chunkSize,
                          int64_t headDimMultiple = 0);

} // namespace mlir::linattn

#endif // LINATTN_TRANSFORMS_PASSES_H
