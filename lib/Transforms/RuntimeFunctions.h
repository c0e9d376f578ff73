//===- RuntimeFunctions.h - Declarations of LinAttn's runtime calls -*- C++ -*-===//
//
// The host code passes call functions of LinAttn's CUDA runtime
// (runtime/include/linattn/MgpuRuntime.h) by name; each declares the ones
// it calls here, once per module.
//
//===----------------------------------------------------------------------===//

#ifndef LIB_TRANSFORMS_RUNTIMEFUNCTIONS_H
#define LIB_TRANSFORMS_RUNTIMEFUNCTIONS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::linattn {

/// The private declaration of runtime function `name` of `type` in
/// `module`, added once; null after an error on the op if the module
/// defines the name otherwise.
func::FuncOp declareRuntimeFunction(ModuleOp module, StringRef name,
                                    FunctionType type);

} // namespace mlir::linattn

#endif // LIB_TRANSFORMS_RUNTIMEFUNCTIONS_H
