//===- ChunkGeometry.cpp - Chunks of a sequence inside a kernel -----------===//

#include "ChunkGeometry.h"

namespace mlir::linattn::kernel {

ChunkRows chunkRows(LoopEmitter &e, Value n, Value seqLen, int64_t rows) {
  Value t0 = e.mulIndex(n, e.index(rows));
  Value valid = e.minIndex(e.index(rows), e.subIndex(seqLen, e.minIndex(t0, seqLen)));
  return {t0, valid};
}

Value blockLastRow(LoopEmitter &e, Value row0, Value valid) {
  return e.minIndex(e.addIndex(row0, e.index(15)), e.subIndex(valid, e.index(1)));
}

} // namespace mlir::linattn::kernel
