//===- TargetInfo.cpp - What the GPU kernels know of their target ---------===//

#include "LinAttn/Conversion/LinAttnToGPU/TargetInfo.h"

#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MathExtras.h"

namespace mlir::linattn {

/// Shared memory a block may opt in to on sm_90 (227 KiB), static included.
constexpr int64_t kHopperMaxSharedBytes = 232448;

std::optional<GPUTargetInfo> GPUTargetInfo::forChip(StringRef chip) {
  int version;
  if (!chip.consume_front("sm_"))
    return std::nullopt;
  chip.consume_back("a");
  if (chip.getAsInteger(10, version))
    return std::nullopt;
  return GPUTargetInfo(version, kHopperSMs, kHopperMaxSharedBytes);
}

GPUTargetInfo GPUTargetInfo::h200() { return *forChip("sm_90a"); }

namespace chunked_kernels {

std::string checkChip(StringRef chip) {
  std::optional<GPUTargetInfo> target = GPUTargetInfo::forChip(chip);
  if (!target)
    return ("chip '" + chip + "' is not a CUDA chip name (sm_XY or sm_XYa)").str();
  if (target->computeCapability() < 80 || target->computeCapability() > 90)
    return ("chip '" + chip +
            "' cannot run LinAttn's GPU code: it targets sm_80 to sm_90a "
            "(cp.async and bf16 tensor cores from sm_80; PTX 8.0)")
        .str();
  return "";
}

std::string checkHeadDim(StringRef name, int64_t size) {
  if (size % kHeadDimMultiple != 0 || size < kHeadDimMultiple ||
      size > kMaxHeadDim)
    return ("GPU chunked kernels need " + name + " = a multiple of " +
            llvm::itostr(kHeadDimMultiple) + " up to " +
            llvm::itostr(kMaxHeadDim) + ", got " + llvm::itostr(size))
        .str();
  return "";
}

std::string checkOperandType(Type elem) {
  if (elem.isBF16() || elem.isF16() || elem.isF32())
    return "";
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "GPU chunked kernels run bf16/f16 inputs on tensor cores, f32 ones "
        "split into bf16 hi + lo parts; '"
     << elem << "' inputs have no chunked GPU mapping";
  return text;
}

std::string checkOperandGates(Type elem, bool perKeyGates, int64_t keyDim) {
  // The per-key kernels hold q, k and the decayed keys split (hi and lo
  // tiles each): twice the 16-bit tiles, beside [64][K] f32 gates.
  if (elem.isF32() && perKeyGates && keyDim > kMaxSplitPerKeyHeadDim)
    return "GPU chunked kernels take f32 inputs with per-key gates up to K "
           "= " + std::to_string(kMaxSplitPerKeyHeadDim) +
           " (their split tiles' shared memory), got K = " +
           std::to_string(keyDim);
  return "";
}

Type mmaTypeFor(Type elem) {
  return elem.isF32() ? BFloat16Type::get(elem.getContext()) : elem;
}

std::string whyNoKernels(RecurrenceOp op) {
  for (Value operand : {op.getQ(), op.getK(), op.getV()}) {
    Type elem = cast<ShapedType>(operand.getType()).getElementType();
    if (std::string why = checkOperandType(elem); !why.empty())
      return why;
    if (!elem.isF32())
      continue;
    const TransitionKindInfo &info = op.getKindInfo();
    if (std::string why =
            checkOperandGates(elem, info.decay == DecayForm::PerKey,
                              paddedHeadDim(op.getKeyDim()));
        !why.empty())
      return why;
    // The split's error (about 2^-17 of each product) is not damped by
    // reflections (eigenvalues down to -1): on hard inputs (beta near 1,
    // nearly parallel keys) negeig's o came 1.5-1.9e-4 from fp64 on the
    // H200, past f32's 1e-4 (bench/NOTES.md f2; DeltaNet 4.7e-5).
    if (info.rank1Scale > 1.0f)
      return "f32 inputs of a kind whose transitions reflect ('" +
             stringifyTransitionKind(op.getKind()).str() +
             "'): the split operands' error accumulates past 1e-4";
  }
  for (auto [name, size] : {std::pair<StringRef, int64_t>{"K", op.getKeyDim()},
                            {"V", op.getValueDim()}})
    if (size % kPaddedHeadDimMultiple != 0 ||
        !checkHeadDim(name, paddedHeadDim(size)).empty())
      return ("GPU chunked kernels need " + name + " = a multiple of " +
              llvm::itostr(kPaddedHeadDimMultiple) + " from " +
              llvm::itostr(kHeadDimMultiple) + " up to " +
              llvm::itostr(kMaxHeadDim) + ", got " + llvm::itostr(size))
          .str();
  return "";
}

int64_t paddedHeadDim(int64_t size) {
  return llvm::alignTo(size, kHeadDimMultiple);
}

} // namespace chunked_kernels

namespace recurrent_kernel {
int64_t lanesPerColumn(int64_t K) {
  return K > 128 && K % kMaxLanesPerColumn == 0 ? kMaxLanesPerColumn : 4;
}

int64_t registersPerThread(int64_t columnsPerThread) {
  return columnsPerThread == 2 ? kTwoColumnRegistersPerThread
                               : kMinRegistersPerThread;
}

int64_t columnSets(int64_t K, int64_t V) {
  return V > kBlockThreads / lanesPerColumn(K) ? 2 : 1;
}

int64_t columnsPerBlock(int64_t K, int64_t V) {
  return kBlockThreads / lanesPerColumn(K) * columnSets(K, V);
}

int64_t chainedKeysPerStep(int64_t K, int64_t V) {
  return K / lanesPerColumn(K) * columnSets(K, V);
}

std::string whyNoSplitKeyKernel(RecurrenceOp op) {
  int64_t K = op.getKeyDim(), lanes = lanesPerColumn(K);
  if (K % lanes != 0)
    return "K = " + std::to_string(K) + " is not a multiple of " +
           std::to_string(lanes);
  if (K > kMaxKeyDim)
    return "K = " + std::to_string(K) + " is above " +
           std::to_string(kMaxKeyDim);
  return "";
}

std::string describeKernel(RecurrenceOp op) {
  std::string why = whyNoSplitKeyKernel(op);
  return why.empty() ? "split-key kernel" : "one thread per column: " + why;
}
} // namespace recurrent_kernel
} // namespace mlir::linattn
