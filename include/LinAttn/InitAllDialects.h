//===- InitAllDialects.h - LinAttn dialect registration ---------*- C++ -*-===//

#ifndef LINATTN_INITALLDIALECTS_H
#define LINATTN_INITALLDIALECTS_H

#include "mlir/IR/DialectRegistry.h"

namespace mlir::linattn {

/// Registers the LinAttn dialect, every dialect its pipelines produce, and
/// the external models (bufferization, LLVM translation) they rely on.
void registerAllDialects(DialectRegistry &registry);

} // namespace mlir::linattn

#endif // LINATTN_INITALLDIALECTS_H
