//===- GpuOccupancyHints.cpp - Registers must not cap occupancy -----------===//
//
// A kernel that plans its shared memory for N resident blocks per SM gets
// nvvm.minctasm = N (PTX .minnctapersm), so that ptxas keeps its registers
// within 65536 / (N * threads) instead of letting them cut occupancy below
// what the shared memory allows (the UT kernel: 155 registers, 3 blocks
// per SM where its 52 KB would let 4 run). N never asks for fewer
// registers a thread than the pass's floor, or than the kernel's own
// (kMinRegistersAttrName on its dynamic shared memory, where its lowering
// measured that it needs more).
//
//===----------------------------------------------------------------------===//

#include "LinAttn/Transforms/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"

namespace mlir::linattn {
#define GEN_PASS_DEF_LINATTNGPUOCCUPANCYHINTS
#include "LinAttn/Transforms/Passes.h.inc"

namespace {

/// 32-bit registers of an sm_90 SM.
constexpr int64_t kRegistersPerSM = 65536;

struct LinAttnGpuOccupancyHints
    : impl::LinAttnGpuOccupancyHintsBase<LinAttnGpuOccupancyHints> {
  using Base::Base;

  /// The registers a thread of `kernel` keeps at least: the pass's floor,
  /// or the kernel's own where it asks for more; failure (reported) where
  /// its request is not a positive integer.
  FailureOr<int64_t> registerFloor(gpu::GPUFuncOp kernel) {
    int64_t floor = minRegistersPerThread;
    WalkResult walk = kernel.walk([&](gpu::DynamicSharedMemoryOp smem) {
      Attribute asked = smem->getAttr(kMinRegistersAttrName);
      if (!asked)
        return WalkResult::advance();
      auto registers = dyn_cast<IntegerAttr>(asked);
      if (!registers || registers.getInt() <= 0) {
        smem.emitError() << kMinRegistersAttrName
                         << " must be a positive integer, got " << asked;
        return WalkResult::interrupt();
      }
      floor = std::max(floor, registers.getInt());
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
    return floor;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (sharedMemoryPerSM <= 0 || reservedSharedMemoryPerBlock < 0 ||
        maxThreadsPerSM <= 0 || minRegistersPerThread <= 0) {
      module.emitError()
          << "linattn-gpu-occupancy-hints: shared-memory-per-sm, "
             "max-threads-per-sm and min-registers-per-thread must be "
             "positive and reserved-shared-memory-per-block not negative, "
             "got "
          << sharedMemoryPerSM.getValue() << ", " << maxThreadsPerSM.getValue()
          << ", " << minRegistersPerThread.getValue() << " and "
          << reservedSharedMemoryPerBlock.getValue();
      return signalPassFailure();
    }
    StringRef attrName = NVVM::NVVMDialect::getMinctasmAttrName();
    // Blocks per SM each kernel's launches allow; the fewest if it is
    // launched with different sizes.
    llvm::DenseMap<Operation *, int64_t> blocksPerSM;
    bool invalidRequest = false;
    module.walk([&](gpu::LaunchFuncOp launch) {
      APInt smem;
      Value smemSize = launch.getDynamicSharedMemorySize();
      if (!smemSize || !matchPattern(smemSize, m_ConstantInt(&smem)) ||
          smem.isZero())
        return;
      int64_t threads = 1;
      for (Value d : {launch.getBlockSizeX(), launch.getBlockSizeY(),
                      launch.getBlockSizeZ()}) {
        APInt size;
        if (!matchPattern(d, m_ConstantInt(&size)))
          return;
        threads *= size.getSExtValue();
      }
      auto kernel = SymbolTable::lookupNearestSymbolFrom<gpu::GPUFuncOp>(
          launch, launch.getKernel());
      if (!kernel || threads <= 0)
        return;
      FailureOr<int64_t> floor = registerFloor(kernel);
      if (failed(floor)) {
        invalidRequest = true;
        return;
      }
      int64_t bySmem = sharedMemoryPerSM /
                       (smem.getSExtValue() + reservedSharedMemoryPerBlock);
      int64_t byRegisters = kRegistersPerSM / (*floor * threads);
      int64_t blocks =
          std::min({bySmem, maxThreadsPerSM / threads, byRegisters});
      auto [it, inserted] = blocksPerSM.try_emplace(kernel, blocks);
      if (!inserted)
        it->second = std::min(it->second, blocks);
    });
    if (invalidRequest)
      return signalPassFailure();
    for (auto [kernel, blocks] : blocksPerSM) {
      // One block per SM needs no hint: the registers cannot lower it.
      if (blocks < 2)
        continue;
      kernel->setAttr(attrName,
                      IntegerAttr::get(IntegerType::get(&getContext(), 32),
                                       blocks));
      ++numHinted;
    }
  }
};

} // namespace
} // namespace mlir::linattn
