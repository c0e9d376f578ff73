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
  return op->emitOpError() << "GPU " << kernel << " kernel needs "
                           << sharedBytesExcess(bytes, target);
}

std::string sharedBytesExcess(int64_t bytes, const GPUTargetInfo &target) {
  return std::to_string(bytes) + " bytes of shared memory, more than the " +
         std::to_string(target.maxSharedBytesPerBlock()) + " a block may have";
}

std::string sharedBytesReason(int64_t bytes, const GPUTargetInfo &target) {
  return "its tiles need " + sharedBytesExcess(bytes, target);
}

std::optional<Type> backwardOperandType(ValueRange operands, Value gates,
                                        int64_t chunkSize, int64_t K, int64_t V,
                                        std::string *whyNot) {
  auto no = [&](std::string why) -> std::optional<Type> {
    if (whyNot)
      *whyNot = std::move(why);
    return std::nullopt;
  };
  Type elem = elementOf(operands.front());
  if (!chunked_kernels::checkOperandType(elem).empty()) {
    std::string type;
    llvm::raw_string_ostream(type) << elem;
    return no("its operands are " + type +
              ", not 16-bit (f32 inputs, or qk_l2norm's normalised q and k)");
  }
  if (chunkSize != kChunk)
    return no("chunk_size " + std::to_string(chunkSize) + ", not " +
              std::to_string(kChunk));
  for (auto [name, size] : {std::pair{"K", K}, std::pair{"V", V}})
    if (std::string why = chunked_kernels::checkHeadDim(name, size); !why.empty())
      return no(why);
  for (Value v : operands) {
    if (v && isSplitW(v.getType()))
      return no("W is split into hi and lo parts");
    if (v && elementOf(v) != elem)
      return no("its operands are not all of one 16-bit type (f32 keys, say)");
  }
  if (gates && cast<ShapedType>(gates.getType()).getRank() == 4)
    return no("its gates are per key");
  return elem;
}

} // namespace mlir::linattn::kernel
