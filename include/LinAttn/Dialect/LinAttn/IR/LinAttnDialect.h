//===- LinAttnDialect.h - LinAttn dialect -----------------------*- C++ -*-===//
//
// The LinAttn dialect and its attributes.
//
//===----------------------------------------------------------------------===//

#ifndef LINATTN_DIALECT_LINATTN_IR_LINATTNDIALECT_H
#define LINATTN_DIALECT_LINATTN_IR_LINATTNDIALECT_H

#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"

#include "LinAttn/Dialect/LinAttn/IR/LinAttnOpsDialect.h.inc"

#include "LinAttn/Dialect/LinAttn/IR/LinAttnEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "LinAttn/Dialect/LinAttn/IR/LinAttnAttrs.h.inc"

#endif // LINATTN_DIALECT_LINATTN_IR_LINATTNDIALECT_H
