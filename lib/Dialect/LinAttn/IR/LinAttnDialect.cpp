//===- LinAttnDialect.cpp - LinAttn dialect -------------------------------===//

#include "LinAttn/Dialect/LinAttn/IR/LinAttnDialect.h"
#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::linattn;

#include "LinAttn/Dialect/LinAttn/IR/LinAttnOpsDialect.cpp.inc"

#include "LinAttn/Dialect/LinAttn/IR/LinAttnEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "LinAttn/Dialect/LinAttn/IR/LinAttnAttrs.cpp.inc"

void LinAttnDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "LinAttn/Dialect/LinAttn/IR/LinAttnAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.cpp.inc"
      >();
}
