//===- Passes.h - C API of the LinAttn passes ---------------------*- C -*-===//
//
// Registration and creation of LinAttn passes from C. After
// mlirLinAttnRegisterAllPasses(), mlirParsePassPipeline and
// mlirOpPassManagerAddPipeline accept every LinAttn pass and pipeline by name
// (e.g. "builtin.module(linattn-to-cpu)").
//
//===----------------------------------------------------------------------===//

#ifndef LINATTN_C_PASSES_H
#define LINATTN_C_PASSES_H

#include "mlir-c/Pass.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Registers every LinAttn pass and pipeline with the global registry; the C
/// counterpart of mlir::linattn::registerAllPasses.
MLIR_CAPI_EXPORTED void mlirLinAttnRegisterAllPasses(void);

#ifdef __cplusplus
}
#endif

// Per pass, generated from the pass definitions (as mlir-c/Transforms.h):
// mlirCreateLinAttn<Group><Pass>() and mlirRegisterLinAttn<Group><Pass>().
#include "LinAttn-c/Conversion.capi.h.inc"
#include "LinAttn-c/Transforms.capi.h.inc"

#endif // LINATTN_C_PASSES_H
