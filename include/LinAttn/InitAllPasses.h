//===- InitAllPasses.h - LinAttn pass registration --------------*- C++ -*-===//

#ifndef LINATTN_INITALLPASSES_H
#define LINATTN_INITALLPASSES_H

namespace mlir::linattn {

/// Registers every LinAttn pass and pipeline with the global registry.
void registerAllPasses();

} // namespace mlir::linattn

#endif // LINATTN_INITALLPASSES_H
