//===- KernelSupport.h - Whether the chunked kernels take an op -*- C++ -*-===//
//
// The checks every chunked lowering makes of the op it is given, as op
// errors: the tensor-core operand type of its inputs, its chunk length and
// its head sizes (what the kernels take is TargetInfo.h's).
//
//===----------------------------------------------------------------------===//

#ifndef LIB_CONVERSION_LINATTNTOGPU_KERNELSUPPORT_H
#define LIB_CONVERSION_LINATTNTOGPU_KERNELSUPPORT_H

#include "LinAttn/Conversion/LinAttnToGPU/TargetInfo.h"

#include "mlir/IR/Operation.h"

#include <optional>

namespace mlir::linattn::kernel {

Type elementOf(Value v);

/// The 16-bit type an input is rounded to on the tensor cores: its own, or
/// for the f32 result of `linattn.l2norm` (qk_l2norm) that of the
/// normalised input, as flash-linear-attention does (also when a cumsum
/// decayed those keys).
Type operandTypeOf(Value v);

/// The tensor-core operand type of an op's inputs, or an error: their
/// 16-bit type, or bf16 where they are f32 (the kernels split each f32
/// operand into bf16 hi + lo; not beside per-key `gates`). Called before
/// any op is rewritten, while l2norm results are visible.
FailureOr<Type> mmaTypeOf(Operation *op, ValueRange inputs, Value gates = {});

/// Errors unless `op`'s kernels take `chunkSize` and every named dimension:
/// chunks of kChunk tokens, or kLongChunk where `whyNotLong` is empty (it
/// says why the op has no long-chunk kernel otherwise); head dimensions
/// the kernels take.
LogicalResult checkChunkGeometry(Operation *op, int64_t chunkSize,
                                 ArrayRef<std::pair<StringRef, int64_t>> dims,
                                 StringRef whyNotLong = "");

/// "N bytes of shared memory, more than the M a block may have": the tail
/// of every message about a kernel plan that does not fit `target`.
std::string sharedBytesExcess(int64_t bytes, const GPUTargetInfo &target);
/// "its tiles need " + sharedBytesExcess: why a kernel plan does not fit,
/// for --explain.
std::string sharedBytesReason(int64_t bytes, const GPUTargetInfo &target);

/// How the backward's tensor-core kernels (the reverse chunk pass,
/// chunk_grad's two kernels) take an op's operands.
struct BackwardOperandForms {
  /// The 16-bit type the tensor cores run in: the type of every operand
  /// but the keys (dO, W).
  Type mmaElem;
  /// q and k come f32 (qk_l2norm's normalised keys) beside 16-bit others:
  /// the kernels hold them split, x ~= hi + lo, as every f32 operand (in
  /// bf16 the normalised keys moved dgate by 3e-2 on hard inputs,
  /// bench/NOTES.md b6).
  bool splitKeys = false;
  /// The gates are per key ([B, T, HV, K]: GLA, KDA), which only the
  /// reverse pass takes so far.
  bool perKeyGates = false;
  /// W comes split by the UT transform ([B, T, HV, 2, K], hi and lo parts
  /// of the others' type: negeig's), staged in both parts.
  bool splitW = false;
};

/// The forms the backward's kernels take an op's operands in, or none
/// where they do not take it: the non-null `others` in one 16-bit type (a
/// split W's parts too), the non-null `keys` (q, k) in that type
/// or all f32, gates per row, per key or none, 64-token chunks, and head
/// sizes K and V the chunked kernels take. Those ops then keep their loop
/// lowering, so this is a choice, not an error; `whyNot` (when given) gets
/// the reason, for --explain.
std::optional<BackwardOperandForms>
backwardOperandForms(ValueRange keys, ValueRange others, Value gates,
                     int64_t chunkSize, int64_t K, int64_t V,
                     std::string *whyNot = nullptr);

/// Errors unless `bytes` of shared memory fit one block on `target`: the
/// check of a kernel whose tiles grow with K and V.
LogicalResult checkSharedBytes(Operation *op, StringRef kernel, int64_t bytes,
                               const GPUTargetInfo &target);

} // namespace mlir::linattn::kernel

#endif // LIB_CONVERSION_LINATTNTOGPU_KERNELSUPPORT_H
