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

FailureOr<Type> mmaTypeOf(Operation *op, ValueRange inputs, Value gates) {
  Type elem = operandTypeOf(inputs.front());
  for (Value v : inputs)
    if (operandTypeOf(v) != elem)
      return op->emitOpError() << "GPU chunked kernels need q, k and v of one "
                                  "element type, got "
                               << operandTypeOf(v) << " and " << elem;
  if (std::string why = chunked_kernels::checkOperandType(elem); !why.empty())
    return op->emitOpError() << why << " (use strategy=recurrent)";
  if (std::string why = chunked_kernels::checkOperandGates(
          elem, gates && cast<ShapedType>(gates.getType()).getRank() == 4,
          cast<ShapedType>(inputs.front().getType()).getShape().back());
      !why.empty())
    return op->emitOpError() << why << " (use strategy=recurrent)";
  return chunked_kernels::mmaTypeFor(elem);
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

std::optional<BackwardOperandForms>
backwardOperandForms(ValueRange keys, ValueRange others, Value gates,
                     int64_t chunkSize, int64_t K, int64_t V,
                     std::string *whyNot) {
  auto no = [&](std::string why) -> std::optional<BackwardOperandForms> {
    if (whyNot)
      *whyNot = std::move(why);
    return std::nullopt;
  };
  auto typeName = [](Type t) {
    std::string text;
    llvm::raw_string_ostream(text) << t;
    return text;
  };
  BackwardOperandForms forms;
  // The backward's kernels hold dO (and W, U) as 16-bit tiles; an f32
  // spec's dO would need its own lo tiles, which do not fit beside the
  // split states (the forward's kernels split f32 inputs, these do not).
  forms.mmaElem = elementOf(others.front());
  if (!forms.mmaElem.isBF16() && !forms.mmaElem.isF16())
    return no("its operands are " + typeName(forms.mmaElem) +
              ", not 16-bit (f32 inputs)");
  if (chunkSize != kChunk)
    return no("chunk_size " + std::to_string(chunkSize) + ", not " +
              std::to_string(kChunk));
  for (auto [name, size] : {std::pair{"K", K}, std::pair{"V", V}})
    if (std::string why = chunked_kernels::checkHeadDim(name, size); !why.empty())
      return no(why);
  for (Value v : others) {
    if (v && isSplitW(v.getType()))
      forms.splitW = true;
    if (v && elementOf(v) != forms.mmaElem)
      return no("its operands are not all of one 16-bit type (" +
                typeName(elementOf(v)) + " beside " + typeName(forms.mmaElem) +
                ")");
  }
  Type keyElem = elementOf(keys.front());
  forms.splitKeys = keyElem.isF32();
  if (keyElem != forms.mmaElem && !forms.splitKeys)
    return no("its keys are " + typeName(keyElem) + ", neither f32 nor " +
              typeName(forms.mmaElem));
  for (Value v : keys)
    if (v && elementOf(v) != keyElem)
      return no("its q and k differ in element type");
  forms.perKeyGates = gates && cast<ShapedType>(gates.getType()).getRank() == 4;
  return forms;
}

} // namespace mlir::linattn::kernel
