//===- KernelSupport.cpp - Whether the chunked kernels take an op ---------===//

#include "KernelSupport.h"

#include "LinAttn/Conversion/LinAttnToGPU/TargetInfo.h"
#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

namespace mlir::linattn::kernel {

using chunked_kernels::kChunk;
using chunked_kernels::kLongChunk;

Type elementOf(Value v) { return cast<ShapedType>(v.getType()).getElementType(); }

Type operandTypeOf(Value v) {
  if (auto norm = v.getDefiningOp<L2NormOp>())
    if (Type in = elementOf(norm.getInput()); in.isBF16() || in.isF16())
      return in;
  // Keys decayed by a cumsum are the keys' kind of operand.
  if (auto cumsum = v.getDefiningOp<ChunkCumsumOp>())
    if (v == cumsum.getDecayedKeys())
      return operandTypeOf(cumsum.getKeys());
  return elementOf(v);
}

FailureOr<Type> mmaTypeOf(Operation *op, ValueRange inputs) {
  Type elem = operandTypeOf(inputs.front());
  for (Value v : inputs)
    if (operandTypeOf(v) != elem)
      return op->emitOpError() << "GPU chunked kernels need q, k and v of one "
                                  "element type, got "
                               << operandTypeOf(v) << " and " << elem;
  if (std::string why = chunked_kernels::checkOperandType(elem); !why.empty())
    return op->emitOpError() << why << " (use strategy=recurrent)";
  return elem;
}

LogicalResult checkChunkGeometry(Operation *op, int64_t chunkSize,
                                 ArrayRef<std::pair<StringRef, int64_t>> dims,
                                 StringRef whyNotLong) {
  if (chunkSize != kChunk && (chunkSize != kLongChunk || !whyNotLong.empty()))
    return op->emitOpError() << "GPU chunked kernels take chunk_size = " << kChunk
                             << (whyNotLong.empty() ? " or " + std::to_string(kLongChunk)
                                                    : " (" + whyNotLong.str() + ")")
                             << ", got " << chunkSize;
  for (auto [name, size] : dims)
    if (std::string why = chunked_kernels::checkHeadDim(name, size); !why.empty())
      return op->emitOpError() << why;
  return success();
}

LogicalResult checkSharedBytes(Operation *op, StringRef kernel, int64_t bytes,
                               const GPUTargetInfo &target) {
  if (bytes <= target.maxSharedBytesPerBlock())
    return success();
  return op->emitOpError() << "GPU " << kernel << " kernel needs " << bytes
                           << " bytes of shared memory, more than the "
                           << target.maxSharedBytesPerBlock()
                           << " a block may have";
}

std::optional<Type> backwardOperandType(ValueRange operands, Value gates,
                                        int64_t chunkSize, int64_t K, int64_t V) {
  Type elem = elementOf(operands.front());
  if (!chunked_kernels::checkOperandType(elem).empty() || chunkSize != kChunk ||
      !chunked_kernels::checkHeadDim("K", K).empty() ||
      !chunked_kernels::checkHeadDim("V", V).empty())
    return std::nullopt;
  for (Value v : operands)
    if (v && (elementOf(v) != elem || isSplitW(v.getType())))
      return std::nullopt;
  if (gates && cast<ShapedType>(gates.getType()).getRank() == 4)
    return std::nullopt; // per key
  return elem;
}

} // namespace mlir::linattn::kernel
