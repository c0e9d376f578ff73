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

} // namespace mlir::linattn

#endif // LINATTN_TRANSFORMS_PASSES_H
