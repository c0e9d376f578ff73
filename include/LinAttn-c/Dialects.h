//===- Dialects.h - C API of the LinAttn dialect ------------------*- C -*-===//
//
// Registration of the LinAttn dialect from C (and from anything with a C FFI),
// following MLIR's C API conventions: a dialect handle for
// mlirDialectHandleRegisterDialect / mlirDialectHandleLoadDialect, and one
// call that registers everything LinAttn's pipelines need.
//
//===----------------------------------------------------------------------===//

#ifndef LINATTN_C_DIALECTS_H
#define LINATTN_C_DIALECTS_H

#include "mlir-c/IR.h"

#ifdef __cplusplus
extern "C" {
#endif

/// mlirGetDialectHandle__linattn__(): the `linattn` dialect alone.
MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(LinAttn, linattn);

/// Inserts into `registry` the LinAttn dialect, every dialect its pipelines
/// produce (func, arith, scf, memref, llvm, ...) and the external models
/// (bufferization, LLVM translation) those pipelines rely on; the C
/// counterpart of mlir::linattn::registerAllDialects.
MLIR_CAPI_EXPORTED void
mlirLinAttnRegisterAllDialects(MlirDialectRegistry registry);

#ifdef __cplusplus
}
#endif

#endif // LINATTN_C_DIALECTS_H
