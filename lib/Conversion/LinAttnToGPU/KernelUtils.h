//===- KernelUtils.h - Helpers of the LinAttn GPU conversions ---*- C++ -*-===//

#ifndef LIB_CONVERSION_LINATTNTOGPU_KERNELUTILS_H
#define LIB_CONVERSION_LINATTNTOGPU_KERNELUTILS_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir::linattn {

/// Whether `op` runs on the device: inside a gpu.launch body or an outlined
/// gpu.module.
inline bool insideKernel(Operation *op) {
  return op->getParentOfType<gpu::LaunchOp>() ||
         op->getParentOfType<gpu::GPUModuleOp>();
}

} // namespace mlir::linattn

#endif // LIB_CONVERSION_LINATTNTOGPU_KERNELUTILS_H
