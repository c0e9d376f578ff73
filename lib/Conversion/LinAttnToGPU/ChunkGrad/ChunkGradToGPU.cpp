//===- ChunkGradToGPU.cpp - linattn.chunk_grad to kernels -----------------===//
//
// linattn.chunk_grad on the GPU: both tensor-core kernels where they take
// the op (the WY share, by 64-column slabs or else by whole rows; then the
// key gradients); the key kernel after the loops of the WY share where
// only it does (not with per-key gates, whose WY share only the kernel
// reduces as the key kernel reads it); the loop lowering alone elsewhere
// (f32 dO, f32 keys with per-key gates, heads above 128 that are not
// multiples of 64 or have per-key gates). The key gradients run by key
// block (two blocks an SM) where that kernel takes the op, else a block
// per chunk.
//
//===----------------------------------------------------------------------===//

#include "ChunkGradKernels.h"

#include "../ChunkedToGPUPatterns.h"
#include "../Kernel/MmaEmitter.h"

#include "LinAttn/Utils/LoopEmitter.h"

namespace mlir::linattn::kernel {

/// Gates per key ([B, T, HV, K]: GLA, KDA).
static bool hasPerKeyGates(ChunkGradOp op) {
  return op.getGates() && cast<ShapedType>(op.getGates().getType()).getRank() == 4;
}

void emitChunkGridLaunch(ImplicitLocOpBuilder &b, Value seqLen,
                         int64_t numVHeads, Value batch, int64_t smemBytes,
                         Type mmaElem, function_ref<void(MmaEmitter &)> body,
                         int64_t threads) {
  LoopEmitter e(b);
  Value numChunks = arith::CeilDivUIOp::create(b, seqLen, e.index(kChunk));
  emitLaunch(b, {numChunks, e.index(numVHeads), batch}, smemBytes, mmaElem, body,
             threads);
}

bool hasNarrowStates(ChunkGradOp op, Type mmaElem) {
  return cast<ShapedType>(op.getChunkStates().getType()).getElementType() == mmaElem;
}

std::string describeChunkGradBlock(int64_t warps, int64_t sharedBytes) {
  return std::to_string(warps) + " warps, " + std::to_string(sharedBytes) +
         " bytes of shared memory";
}

WarpTiling::WarpTiling(MmaEmitter &k, int64_t halves) : k(k), numHalves(halves) {
  LoopEmitter &e = k.e;
  if (halves == 1) {
    firstRow = e.mulIndex(k.warp, e.index(16));
    return;
  }
  firstRow = e.mulIndex(arith::RemUIOp::create(k.b, k.warp, e.index(4)), e.index(16));
  colHalf = arith::DivUIOp::create(k.b, k.warp, e.index(4));
}

Value WarpTiling::base(int64_t width) {
  return colHalf ? k.e.mulIndex(colHalf, k.e.index(width / numHalves)) : Value();
}

Value WarpTiling::plus(Value base, Value x) {
  return base ? k.e.addIndex(base, x) : x;
}

void WarpTiling::gemm(SmallVector<SmallVector<Value>> &acc, Operand a, Operand bt,
                      int64_t kDim, Value base) {
  if (base)
    k.gemm(acc, a, firstRow, bt, kDim, base);
  else
    k.gemm(acc, a, firstRow, bt, kDim);
}

ChunkGradLowering chooseChunkGradLowering(ChunkGradOp op,
                                          const GPUTargetInfo &target) {
  using Kind = ChunkGradLowering::Kind;
  // The key gradients by key block where that kernel takes the op (two
  // blocks an SM; heads up to 256), else a block per chunk.
  std::string whyNotBlocks = whyNoKeyBlockGradKernel(op, target);
  bool keyBlocks = whyNotBlocks.empty();
  if (!keyBlocks)
    if (std::string why = whyNoKeyGradKernel(op, target); !why.empty())
      return {Kind::Loops, "the key kernel: " + why +
                               (why == whyNotBlocks ? "" : "; by key block: " + whyNotBlocks)};
  if (!op.getBeta())
    return {Kind::KeyKernel, "", keyBlocks};
  // The WY share by slabs where that kernel takes the op (two blocks an
  // SM at any head size; faster than whole rows at K = V = 128 for every
  // form measured, bench/NOTES.md ws1), else by whole rows.
  std::string whyNotSlabs = whyNoWYSlabGradKernel(op, target);
  if (whyNotSlabs.empty())
    return {Kind::WYAndKeyKernels, "", keyBlocks, /*wySlabs=*/true};
  if (std::string why = whyNoWYGradKernel(op, target); !why.empty()) {
    if (why != whyNotSlabs)
      why += "; by slabs: " + whyNotSlabs;
    // Per-key gates: the key kernel takes the WY kernel's shares, which
    // the loops do not leave.
    if (hasPerKeyGates(op))
      return {Kind::Loops, "the WY kernel: " + why};
    return {Kind::KeyKernel, why, keyBlocks};
  }
  return {Kind::WYAndKeyKernels, whyNotSlabs, keyBlocks};
}

/// The key kernel the lowering chose, in words.
static std::string describeKeyKernel(ChunkGradOp op, const GPUTargetInfo &target,
                                     const ChunkGradLowering &lowering) {
  if (lowering.keyBlocks)
    return "the key kernel by key block (" + describeKeyBlockGradKernel(op, target) +
           ")";
  return "the key kernel (" + describeKeyGradKernel(op, target) +
         "; not by key block: " + whyNoKeyBlockGradKernel(op, target) + ")";
}

std::string describeChunkGradLowering(ChunkGradOp op,
                                      const GPUTargetInfo &target) {
  ChunkGradLowering lowering = chooseChunkGradLowering(op, target);
  switch (lowering.kind) {
  case ChunkGradLowering::Kind::Loops:
    return "loops (" + lowering.why + ")";
  case ChunkGradLowering::Kind::KeyKernel: {
    std::string key = describeKeyKernel(op, target, lowering);
    return lowering.why.empty()
               ? key
               : "loops for the WY share (" + lowering.why + "), then " + key;
  }
  case ChunkGradLowering::Kind::WYAndKeyKernels:
    if (lowering.wySlabs)
      return "the WY kernel by slabs (" + describeWYSlabGradKernel(op, target) +
             ") and " + describeKeyKernel(op, target, lowering);
    return "the WY kernel (" + describeWYGradKernel(op, target) +
           "; not by slabs: " + lowering.why + ") and " +
           describeKeyKernel(op, target, lowering);
  }
  llvm_unreachable("every lowering described");
}

void lowerChunkGradToGPU(ChunkGradOp op, const GPUTargetInfo &target) {
  ChunkGradLowering lowering = chooseChunkGradLowering(op, target);
  if (lowering.kind == ChunkGradLowering::Kind::Loops)
    return; // the loop lowering takes the whole op
  auto keyKernel = [&](ImplicitLocOpBuilder &b, const ChunkGradKeyInputs &io) {
    if (lowering.keyBlocks)
      emitKeyBlockGradKernel(b, op, target, io);
    else
      emitKeyGradKernel(b, op, target, io);
  };
  if (lowering.kind == ChunkGradLowering::Kind::KeyKernel)
    return lowerChunkGrad(op, keyKernel);

  ImplicitLocOpBuilder b(op.getLoc(), op);
  LoopEmitter e(b);
  auto buffer = [&](Value t) { return t ? e.toBuffer(t) : Value(); };
  ChunkGradKeyInputs keys;
  keys.q = buffer(op.getQ());
  keys.k = buffer(op.getK());
  keys.beta = buffer(op.getBeta());
  keys.gates = buffer(op.getGates());
  keys.newValues = buffer(op.getNewValues());
  keys.states = buffer(op.getChunkStates());
  keys.gradOutput = buffer(op.getGradOutput());
  keys.gradStates = buffer(op.getGradChunkStates());
  keys.qRNorm = buffer(op.getQRnorm());
  keys.kRNorm = buffer(op.getKRnorm());
  keys.batch = e.dim(keys.q, 0);
  keys.seqLen = e.dim(keys.q, 1);
  int64_t HV = dimOf(op.getV(), 2), K = dimOf(op.getQ(), 3), V = dimOf(op.getV(), 3);
  Value hvDim = e.index(HV);
  SmallVector<Value> keySizes = {keys.batch, keys.seqLen, hvDim, e.index(K)};
  auto scratch = [&](int64_t last) {
    return e.allocFor(MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic,
                                       HV, last},
                                      b.getF32Type()),
                      {keys.batch, keys.seqLen, hvDim, e.index(last)});
  };
  // Per-key gates: the WY kernel reduces P and F itself, to dk's and
  // dL/dG's shares (yW, wyGateShare).
  bool perKey = hasPerKeyGates(op);
  if (!perKey) {
    keys.keyPairs = scratch(op.getChunkSize());
    keys.factorPairs = scratch(op.getChunkSize());
  }
  keys.yW = scratch(K);
  if (perKey && op.getGradGates())
    keys.wyGateShare = scratch(K);
  keys.dq = e.allocFor(op.getGradQ().getType(), keySizes);
  keys.dk = e.allocFor(op.getGradK().getType(), keySizes);
  SmallVector<Value> results = {keys.dq, keys.dk};

  WYGradBuffers wy;
  wy.k = keys.k;
  wy.v = buffer(op.getV());
  wy.beta = keys.beta;
  wy.gates = keys.gates;
  wy.w = buffer(op.getW());
  wy.u = buffer(op.getU());
  wy.states = keys.states;
  wy.gradValues = buffer(op.getGradNewValues());
  wy.keyPairs = keys.keyPairs;
  wy.factorPairs = keys.factorPairs;
  wy.yW = keys.yW;
  wy.gateShare = keys.wyGateShare;
  wy.dv = e.allocFor(op.getGradV().getType(),
                     {keys.batch, keys.seqLen, hvDim, e.index(V)});
  results.push_back(wy.dv);
  if (op.getGradGates()) {
    keys.dgates = e.allocFor(op.getGradGates().getType(),
                             {keys.batch, keys.seqLen, hvDim});
    results.push_back(keys.dgates);
  }
  wy.dbeta = e.allocFor(op.getGradBeta().getType(),
                        {keys.batch, keys.seqLen, hvDim});
  results.push_back(wy.dbeta);
  wy.batch = keys.batch;
  wy.seqLen = keys.seqLen;
  wy.kRNorm = keys.kRNorm;

  if (lowering.wySlabs)
    emitWYSlabGradKernel(b, op, target, wy);
  else
    emitWYGradKernel(b, op, target, wy);
  keyKernel(b, keys);
  e.replaceWithBuffers(op, results);
}

} // namespace mlir::linattn::kernel
