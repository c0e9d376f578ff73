//===- Passes.cpp - C API of the LinAttn passes ---------------------------===//

#include "LinAttn-c/Passes.h"

#include "LinAttn/Conversion/Passes.h"
#include "LinAttn/InitAllPasses.h"
#include "LinAttn/Transforms/Passes.h"

#include "mlir/CAPI/Pass.h"

// The generated definitions call the C++ create*/register* functions
// unqualified.
using namespace mlir;
using namespace mlir::linattn;

extern "C" {

void mlirLinAttnRegisterAllPasses(void) { linattn::registerAllPasses(); }

#include "LinAttn-c/Conversion.capi.cpp.inc"
#include "LinAttn-c/Transforms.capi.cpp.inc"
}
