//===- Dialects.cpp - C API of the LinAttn dialect ------------------------===//

#include "LinAttn-c/Dialects.h"

#include "LinAttn/Dialect/LinAttn/IR/LinAttnDialect.h"
#include "LinAttn/InitAllDialects.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Registration.h"

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(LinAttn, linattn,
                                      mlir::linattn::LinAttnDialect)

void mlirLinAttnRegisterAllDialects(MlirDialectRegistry registry) {
  mlir::linattn::registerAllDialects(*unwrap(registry));
}
