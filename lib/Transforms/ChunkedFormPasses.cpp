//===- ChunkedFormPasses.cpp - The chunked forms the pipelines make -------===//

#include "LinAttn/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"

namespace mlir::linattn {

void addChunkedFormPasses(OpPassManager &funcPm, int64_t chunkSize,
                          int64_t headDimMultiple) {
  if (headDimMultiple > 0)
    funcPm.addPass(createLinAttnPadHeadDims(
        LinAttnPadHeadDimsOptions{headDimMultiple}));
  funcPm.addPass(createLinAttnRecurrenceToChunked(
      LinAttnRecurrenceToChunkedOptions{chunkSize,
                                        /*narrowIntermediates=*/true}));
  funcPm.addPass(createLinAttnLowerRank1ToWY(
      LinAttnLowerRank1ToWYOptions{/*splitW=*/true}));
}

} // namespace mlir::linattn
