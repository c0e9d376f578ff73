//===- Passes.h - LinAttn conversion passes ---------------------*- C++ -*-===//

#ifndef LINATTN_CONVERSION_PASSES_H
#define LINATTN_CONVERSION_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir::linattn {

#define GEN_PASS_DECL
#include "LinAttn/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "LinAttn/Conversion/Passes.h.inc"

} // namespace mlir::linattn

#endif // LINATTN_CONVERSION_PASSES_H
