//===- Passes.h - LinAttn transformation passes -----------------*- C++ -*-===//

#ifndef LINATTN_TRANSFORMS_PASSES_H
#define LINATTN_TRANSFORMS_PASSES_H

#include "LinAttn/Conversion/LinAttnToGPU/TargetInfo.h"

#include "mlir/Pass/Pass.h"

namespace mlir::linattn {

#define GEN_PASS_DECL
#include "LinAttn/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "LinAttn/Transforms/Passes.h.inc"

} // namespace mlir::linattn

#endif // LINATTN_TRANSFORMS_PASSES_H
