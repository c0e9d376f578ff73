//===- ChunkOutputToGPU.cpp - linattn.chunk_output to a kernel --------------===//
//
// A block per (chunk, tile of value columns: 64 or 32, or the wider tile
// of wideOutputColumnsFor): Q S_n and the masked scores times the new
// values, on tensor cores; per-key gates by PerKeyScores.h.
//
//===----------------------------------------------------------------------===//

#include "ChunkedToGPUPatterns.h"
#include "KernelSupport.h"
#include "Kernel/Gates.h"
#include "Kernel/PerKeyScores.h"
#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "llvm/ADT/StringExtras.h"

#include <limits>

namespace mlir::linattn::kernel {

/// Value columns per block of the output kernel. Every block recomputes
/// Q K^T and reloads Q and K, so wider blocks do less of both; with 16-bit
/// S and D tiles 64 columns fit 3 blocks per SM (62720 B) and measured
/// 0.33 ms against 32 columns' 0.51 ms (B = 4, T = 16384, K = V = 128 on
/// the H200; bench/NOTES.md c16). With f32 tiles (split in two) 64 columns
/// had measured slower, 2.89 vs 2.27 ms, when the shared tiles halved the
/// resident blocks.
constexpr int64_t kOutputColumns = 64;

/// The output kernel's value columns per block for head size V: 64 where
/// they divide V, else 32.
static int64_t outputColumnsFor(int64_t V) {
  return V % kOutputColumns == 0 ? kOutputColumns : kOutputColumns / 2;
}

/// A wider choice where those leave more than two blocks a chunk or an
/// odd count, each block recomputing Q K^T (per-key gates: pairing two
/// tiles in a block's units, which an odd count cannot): V itself up to
/// 96, else V / 2 (160, 192, 224), or none (bench/NOTES.md o1).
static std::optional<int64_t> wideOutputColumnsFor(int64_t V) {
  int64_t columns = V <= 96 ? V : V / 2;
  bool evenTiles = V % kOutputColumns == 0 && (V / kOutputColumns) % 2 == 0;
  if (columns == outputColumnsFor(V) || (V > 96 && evenTiles))
    return std::nullopt;
  return columns;
}

namespace {

LogicalResult lowerChunkOutput(ChunkOutputOp op, Type mmaType,
                               const GPUTargetInfo &target, bool explain,
                               RewriterBase &rewriter) {
  std::optional<Type> mmaElem = mmaType;
  bool perKey =
      op.getGates() && cast<ShapedType>(op.getGates().getType()).getRank() == 4;
  int64_t numQKHeads = dimOf(op.getQ(), 2), K = dimOf(op.getQ(), 3);
  int64_t numVHeads = dimOf(op.getNewValues(), 2);
  int64_t V = dimOf(op.getNewValues(), 3);
  if (failed(checkChunkGeometry(op, op.getChunkSize(), {{"K", K}, {"V", V}},
                                perKey ? "per-key gates" : "")))
    return failure();
  // A block takes one chunk: a warp per 16 rows (8 warps for a long
  // chunk), each over the chunk's 64-row segments up to its own.
  int64_t chunk = op.getChunkSize(), numSegments = chunk / kChunk;
  int64_t numWarps = chunk / 16;
  // The block's value columns, their 8-column tiles, and the chunk's
  // column tiles: chosen with the units below (useColumns).
  int64_t cols = 0, nTiles = 0, columnTiles = 0;
  // Per-key gates: a block takes two column tiles of its chunk, a unit of
  // numWarps warps each (the kernel's `unit`), so that Q, K, K' and the
  // gates are loaded and K' decayed once for both. Warp w of unit 0 owns
  // row block w, of unit 1 row block numWarps - 1 - w: a warp's score
  // blocks grow with its row block (1 to 4), and warps w and w + 4 (one SM
  // sub-partition, if warps go to them by warp % 4) score 5 together.
  // Measured -2% (GLA's output kernel at T = 1024; bench/NOTES.md c36):
  // it waits on its tiles' loads more than on the busiest sub-partition.
  // Two units where their tiles fit one block's shared memory (K = 256
  // does not: one unit then). Scalar gates (or none) pair units too, so
  // that a chunk's Q and K are read once for both tiles, but only where
  // that leaves fewer blocks a chunk per resident block and no fewer
  // resident blocks (the choice below; bench/NOTES.md ut1).
  bool mayPairUnits = numSegments == 1 && !op.getCarries();
  int64_t units = 1;

  if (op.getCarries() && elementOf(op.getCarries()) != elementOf(op.getChunkStates()))
    return op.emitOpError() << "GPU output kernel stages carries in the chunk "
                               "states' tile: their element types must agree, got "
                            << elementOf(op.getCarries()) << " and "
                            << elementOf(op.getChunkStates());

  // Shared memory: Q [C][K], K [C][K] (per-key gates: and the decayed
  // keys K' [64][K]; f32 q and k, an f32 spec's: the lo parts of those
  // tiles after them), then
  // S [K][cols] and D [C][cols]
  // (each split if f32; 16-bit ones are operands as they are; both read
  // transposed by ldmatrix .trans); C row gates, or per key [64][K].
  // Everything is loaded at once, so the block waits on global memory
  // once; P stays in registers.
  bool sIsOperand = elementOf(op.getChunkStates()) == *mmaElem;
  bool dIsOperand = elementOf(op.getNewValues()) == *mmaElem;
  // An f32 spec's q and k are split like S and D: rounded, Q K^T and Q S
  // would cost it its 1e-4. So is K' under per-key gates.
  bool splitQK = elementOf(op.getQ()).isF32();
  // With two units, each has its own S and D tiles and an output tile
  // (the Q tile's rows, which unit 0 stages its output in, are read by
  // unit 1 until it is done).
  int64_t qBytes = chunk * (K + kPad) * 2;
  int64_t qkTiles = perKey ? 3 : 2;
  int64_t sOffset = (splitQK ? 2 : 1) * qkTiles * qBytes;
  // Per-key gate rows are padded by 16 bytes: the score operands read
  // 8-byte pairs of 8 rows at once, which an unpadded 512-byte stride
  // (K = 128) puts in the same banks.
  int64_t gStride = perKey ? K + 4 : 1;
  int64_t gBytes = chunk * gStride * 4;
  int64_t sBytes, dBytes, sUnitBytes, dUnitBytes;
  int64_t dOffset, gOffset, outOffset, outBytes, qRNormOffset;
  // qk_l2norm factored: the rows' output scales s (q_rnorm) after the
  // rest; with q_l2norm each warp forms its rows' s from the Q tile.
  bool rowScales = static_cast<bool>(op.getQRnorm());
  bool formsRowScales = op.getQL2norm();
  auto layOut = [&] {
    sBytes = K * (cols + kPad) * 2;
    dBytes = chunk * (cols + kPad) * 2;
    sUnitBytes = (sIsOperand ? 1 : 2) * sBytes;
    dUnitBytes = (dIsOperand ? 1 : 2) * dBytes;
    dOffset = sOffset + units * sUnitBytes;
    gOffset = dOffset + units * dUnitBytes;
    outOffset = gOffset + gBytes;
    outBytes = units > 1 ? units * dBytes : 0;
    qRNormOffset = outOffset + outBytes;
    return qRNormOffset + (rowScales ? chunk * 4 : 0);
  };
  int64_t limit = target.maxSharedBytesPerBlock();
  // Blocks of `width` columns with their units (two where they fit): how
  // many an SM's shared memory holds (0: none fits).
  auto useColumns = [&](int64_t width, bool pairUnits) {
    cols = width;
    columnTiles = V / cols;
    nTiles = cols / 8;
    units = pairUnits && columnTiles % 2 == 0 ? 2 : 1;
    if (units > 1 && layOut() > limit)
      units = 1;
    int64_t bytes = layOut();
    return bytes <= limit ? limit / bytes : 0;
  };
  // The wide choice where its blocks a chunk over the blocks an SM holds
  // are no more than the default's (by shared memory, capped at two: a
  // thread's 128-255 registers allow two or three 128-thread blocks an SM
  // anyway). Each block recomputes the chunk's Q K^T, so fewer blocks a
  // chunk win unless they halve the resident ones. Measured (NOTES o1): gated delta V = 96, 1 block of 96
  // columns (3 an SM) 0.045 ms against 3 of 32 (5) 0.062; V = 224, 2 of
  // 112 (1) 0.222 against 7 of 32 (2) 0.277; negeig V = 192 (D split), 2
  // of 96 (1) 0.202 against 3 of 64 (2) 0.160. (Two 256-thread blocks of
  // paired units allow 128 registers a thread: the same cap.)
  constexpr int64_t kResidentByRegisters = 2;
  auto residentBlocks = [&](int64_t width, bool pairUnits) {
    return std::min(useColumns(width, pairUnits), kResidentByRegisters);
  };
  auto chunkWaves = [&](int64_t width, bool pairUnits) {
    int64_t resident = residentBlocks(width, pairUnits);
    return resident ? double(columnTiles / units) / double(resident)
                    : std::numeric_limits<double>::infinity();
  };
  // Per-key gates pair their units wherever they fit. Scalar gates take
  // the width by the waves of one unit, then pair that width's units where
  // that lowers the waves without lowering the resident blocks. Measured
  // (NOTES ut1, B 4 T 4096, forwards from graphs): gated delta K = V =
  // 128 0.237 -> 0.235 ms, in f32 0.643 -> 0.571 (its output kernel one
  // block an SM either way, 0.270 -> 0.199); where the units halved the
  // resident blocks they lost: DeltaNet's split D 0.254 -> 0.272, K = V =
  // 192 (96-column tiles) 0.477 -> 0.508.
  bool pairsPerKey = perKey && mayPairUnits;
  double defaultWaves = chunkWaves(outputColumnsFor(V), pairsPerKey);
  std::optional<int64_t> wide = wideOutputColumnsFor(V);
  bool wideTaken = wide && chunkWaves(*wide, pairsPerKey) <= defaultWaves;
  int64_t width = wideTaken ? *wide : outputColumnsFor(V);
  bool pairUnits = pairsPerKey;
  if (!perKey && mayPairUnits) {
    int64_t singleResident = residentBlocks(width, false);
    double single = chunkWaves(width, false);
    pairUnits = residentBlocks(width, true) >= singleResident &&
                chunkWaves(width, true) < single;
  }
  useColumns(width, pairUnits);
  int64_t sharedBytes = layOut();
  if (failed(checkSharedBytes(op, "output", sharedBytes, target)))
    return failure();
  int64_t blocksPerChunk = columnTiles / units;
  if (explain) {
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "linattn GPU kernel for " << op->getName() << ": " << blocksPerChunk
       << (blocksPerChunk == 1 ? " block" : " blocks") << " a chunk of "
       << cols * units << " value columns";
    if (wideTaken)
      os << " (the wider tile: fewer blocks recomputing Q K^T)";
    else if (wide)
      os << " (not the wider " << *wide
         << "-column tile: fewer blocks an SM would hold it than it saves)";
    os << ", " << units << (units == 1 ? " unit" : " units") << " of "
       << numWarps << " warps (" << units * numWarps * 32 << " threads)";
    if (units > 1)
      os << (perKey ? " sharing the chunk's per-key scores"
                    : " sharing the chunk's Q and K tiles");
    os << "; each block recomputes Q K^T"
       << (perKey ? " by per-key score blocks" : "");
    SmallVector<StringRef> split;
    if (splitQK)
      split.push_back(perKey ? "q, k and K'" : "q and k");
    if (!sIsOperand)
      split.push_back("S");
    if (!dIsOperand)
      split.push_back("D");
    if (!split.empty())
      os << "; " << llvm::join(split, ", ") << " split (hi + lo)";
    if (rowScales)
      os << "; each row times q's reciprocal norm (qk_l2norm factored)";
    if (formsRowScales)
      os << "; each row times q's reciprocal norm, formed from the Q tile "
            "(q_l2norm)";
    int64_t perSM = limit / sharedBytes;
    os << "; " << sharedBytes << " bytes of shared memory (" << perSM
       << (perSM == 1 ? " block" : " blocks") << " an SM by it)";
    op.emitRemark() << text;
  }

  rewriter.setInsertionPoint(op);
  ImplicitLocOpBuilder b(op.getLoc(), rewriter);
  LoopEmitter e(b);
  Value qBuf = e.toBuffer(op.getQ()), kBuf = e.toBuffer(op.getK());
  Value qRNorm = rowScales ? e.toBuffer(op.getQRnorm()) : Value();
  Value dBuf = e.toBuffer(op.getNewValues());
  Value states = e.toBuffer(op.getChunkStates());
  Value gates = op.getGates() ? e.toBuffer(op.getGates()) : Value();
  // Segment-local states: chunk n adds exp(sum of G_C over its segment's
  // chunks before it) C_s (step 3b).
  Value carries = op.getCarries() ? e.toBuffer(op.getCarries()) : Value();
  int64_t segmentChunks = op.getSegmentChunks().value_or(0);
  Value batch = e.dim(qBuf, 0), seqLen = e.dim(qBuf, 1);
  Value out = e.allocFor(op.getOutput().getType(),
                         {batch, seqLen, e.index(numVHeads), e.index(V)});
  float scale = op.getScale().convertToFloat();

  Value numChunks = arith::CeilDivUIOp::create(b, seqLen, e.index(chunk));
  Value blocks = e.mulIndex(numChunks, e.index(blocksPerChunk));

  emitLaunch(b, {blocks, e.index(numVHeads), batch}, sharedBytes,
             *mmaElem, [&](MmaEmitter &k) {
    Block *body = b.getInsertionBlock();
    Value n = arith::DivUIOp::create(b, body->getArgument(0),
                                     e.index(blocksPerChunk));
    // The block's first column tile; unit u takes tile firstTile + u.
    Value firstTile =
        arith::RemUIOp::create(b, body->getArgument(0), e.index(blocksPerChunk));
    if (units > 1)
      firstTile = e.mulIndex(firstTile, e.index(units));
    auto unitColumns = [&](Value u) {
      Value tile = units > 1 ? e.addIndex(firstTile, u) : firstTile;
      return e.mulIndex(tile, e.index(cols));
    };
    // Byte `offset` of unit u's copy of a tile of `unitBytes` per unit.
    auto unitOffset = [&](int64_t offset, Value u, int64_t unitBytes) {
      if (units == 1)
        return e.index(offset);
      return e.addIndex(e.index(offset), e.mulIndex(u, e.index(unitBytes)));
    };
    Value unit = units > 1 ? arith::DivUIOp::create(b, k.warp, e.index(numWarps))
                                 .getResult()
                           : e.index(0);
    Value v0 = unitColumns(unit);
    // The warp's 16 rows (row block `rowBlock`).
    Value rowBlock = k.warp;
    if (units > 1) {
      Value w = arith::RemUIOp::create(b, k.warp, e.index(numWarps));
      rowBlock = k.select(k.ult(unit, e.index(1)), w,
                          e.subIndex(e.index(numWarps - 1), w));
    }
    Value hv = body->getArgument(1), bIdx = body->getArgument(2);
    Value h = e.qkHead(hv, numVHeads, numQKHeads);
    ChunkRows rows = chunkRows(e, n, seqLen, chunk);
    Type elem = *mmaElem, f32 = b.getF32Type();
    Value qTile = k.tile(0, chunk, K + kPad, elem);
    Value kTile = k.tile(qBytes, chunk, K + kPad, elem);
    // Tile i's lo part, where q and k are split.
    auto loTile = [&](int64_t i, int64_t rows) {
      return splitQK ? k.tile((qkTiles + i) * qBytes, rows, K + kPad, elem)
                     : Value();
    };
    Value qLo = loTile(0, chunk), kLo = loTile(1, chunk);
    Operand qOperand = Operand::of(qTile, qLo);
    Operand kOperand = Operand::of(kTile, kLo);
    // Unit u's S and D tiles (hi, then lo where they are f32), and the
    // calling warp's.
    auto sTile = [&](Value u, int64_t part) {
      return k.tile(unitOffset(sOffset + part * sBytes, u, sUnitBytes), K,
                    cols + kPad, elem);
    };
    auto dTile = [&](Value u, int64_t part) {
      return k.tile(unitOffset(dOffset + part * dBytes, u, dUnitBytes), chunk,
                    cols + kPad, elem);
    };
    Value sHi = sTile(unit, 0), sLo = sIsOperand ? Value() : sTile(unit, 1);
    Value dHi = dTile(unit, 0), dLo = dIsOperand ? Value() : dTile(unit, 1);
    Value kdTile = perKey ? k.tile(2 * qBytes, kChunk, K + kPad, elem) : Value();
    Value kdLo = perKey ? loTile(2, kChunk) : Value();
    Value gShared = perKey ? k.tile(gOffset, kChunk, gStride, f32)
                           : k.vec(gOffset, chunk, f32);

    // 1. Q and K of the chunk, S_n and D of the block's columns, row
    //    gates (per key: the [64][K] gates by cp.async). Operand-typed
    //    tiles arrive by cp.async, straight into shared memory (rows past
    //    T as zeros); f32 ones (l2norm results, fp32 states or new values)
    //    through registers, rounded or split.
    Value zero = e.index(0);
    bool async = false;
    auto chunkTile = [&](Value dst, Value dstLo, int64_t width, Value src,
                         function_ref<SmallVector<Value>(Value, Value)> at) {
      if (elementOf(src) == elem) {
        async = true;
        return k.copyRowsAsync(dst, zero, width, rows.t0, rows.valid, seqLen, src,
                               at, chunk);
      }
      k.fillTile(dst, chunk, width, rows.valid, [&](Value r, Value c) {
        return k.load8(src, at(e.addIndex(rows.t0, r), c));
      }, dstLo);
    };
    chunkTile(qTile, qLo, K, qBuf, [&](Value t, Value c) -> SmallVector<Value> {
      return {bIdx, t, h, c};
    });
    chunkTile(kTile, kLo, K, kBuf, [&](Value t, Value c) -> SmallVector<Value> {
      return {bIdx, t, h, c};
    });
    // Unit u's columns of a [B, N, HV, K, V] state (chunk states, or
    // carries) into its S tile: by cp.async (true) or through registers.
    auto loadStateTile = [&](Value src, Value at, Value u) {
      Value columns = unitColumns(u);
      auto index = [&](Value r, Value c) -> SmallVector<Value> {
        return {bIdx, at, hv, r, e.addIndex(columns, c)};
      };
      if (sIsOperand) {
        k.copyRowsAsync(sTile(u, 0), zero, cols, zero, e.index(K),
                        e.index(K), src, index, /*rows=*/K);
        return true;
      }
      k.fillTile(sTile(u, 0), K, cols, Value(), [&](Value r, Value c) {
        return k.load8(src, index(r, c));
      }, sTile(u, 1));
      return false;
    };
    for (int64_t u = 0; u < units; ++u) {
      Value columns = unitColumns(e.index(u));
      async |= loadStateTile(states, n, e.index(u));
      chunkTile(dTile(e.index(u), 0), dIsOperand ? Value() : dTile(e.index(u), 1),
                cols, dBuf, [&](Value t, Value c) -> SmallVector<Value> {
        return {bIdx, t, hv, e.addIndex(columns, c)};
      });
    }
    if (perKey) {
      async = true;
      k.copyRowsAsync(gShared, zero, K, rows.t0, rows.valid, seqLen, gates,
                      [&](Value t, Value c) -> SmallVector<Value> {
        return {bIdx, t, hv, c};
      });
    } else {
      fillRowGates(k, gShared, gates, bIdx, rows, hv, chunk);
    }
    Value sShared = rowScales ? k.vec(qRNormOffset, chunk, f32) : Value();
    if (rowScales)
      fillRowGates(k, sShared, qRNorm, bIdx, rows, h, chunk);
    if (async)
      k.waitCopies(k.commitCopies(), 0);
    k.barrier();
    if (perKey) {
      // K' = K * exp(G_L - G) for perKeyBlockScores, L the last valid row
      // of the key's 16-row block.
      decayRows(k, kTile, kdTile, gShared, rows.valid, [&](Value r) {
        Value row0 =
            e.mulIndex(arith::DivUIOp::create(b, r, e.index(16)), e.index(16));
        return blockLastRow(e, row0, rows.valid);
      }, K, kLo, kdLo);
      k.barrier();
    }

    // 2. P = Mask_{j <= i}(Q K^T * exp(G_i - G_j)) for the warp's 16 rows
    //    and the 64 columns of segment `segment`, kept in its accumulator
    //    registers (scalar gates; per key, step 3 computes P a column
    //    block at a time, after Q S).
    Value m0 = e.mulIndex(rowBlock, e.index(16));
    auto segmentScores = [&](int64_t segment) {
      int64_t c0 = segment * kChunk;
      SmallVector<SmallVector<Value>> p = k.zeroAcc(kChunk / 8);
      k.gemm(p, qOperand, m0, kOperand, K, c0);
      for (int64_t nt = 0; nt < kChunk / 8; ++nt)
        for (int64_t i = 0; i < 4; ++i) {
          Value r = k.accRow(m0, i), c = k.accCol(c0 + 8 * nt, i);
          Value gr = memref::LoadOp::create(b, gShared, r);
          Value gc = memref::LoadOp::create(b, gShared, c);
          Value x = e.mul(p[nt][i], k.exp(e.sub(gr, gc)));
          Value causal = arith::CmpIOp::create(b, arith::CmpIPredicate::ule, c, r);
          p[nt][i] = k.select(causal, x, e.f32(0.0f));
        }
      return p;
    };
    // o += P D over D's rows [k0, k0 + 16), P's two accumulator tiles of
    // those columns: P is the A operand straight from its accumulators
    // (split), D comes from shared memory, split if it is f32.
    auto addBlockValues = [&](SmallVector<SmallVector<Value>> &o, ArrayRef<Value> p0,
                              ArrayRef<Value> p1, Value k0) {
      auto [aHi, aLo] = k.fragmentAFromAcc(p0, p1, /*negate=*/false);
      for (int64_t nt = 0; nt < nTiles; nt += 2) {
        SmallVector<Value> bHi = k.fragB2({dHi, /*transposed=*/true}, 8 * nt, k0);
        SmallVector<Value> bLo = dLo ? k.fragB2({dLo, /*transposed=*/true}, 8 * nt, k0)
                                     : SmallVector<Value>();
        for (int64_t j = 0; j < 2; ++j)
          o[nt + j] = k.mmaSplit(aHi, aLo, ArrayRef(bHi).slice(2 * j, 2),
                                 dLo ? ArrayRef(bLo).slice(2 * j, 2)
                                     : ArrayRef<Value>(),
                                 o[nt + j]);
      }
    };
    // o += P D over segment `segment`'s rows of D.
    auto addSegmentValues = [&](SmallVector<SmallVector<Value>> &o,
                                ArrayRef<SmallVector<Value>> p, int64_t segment) {
      for (int64_t ks = 0; ks < kChunk / 16; ++ks)
        addBlockValues(o, p[2 * ks], p[2 * ks + 1],
                       e.index(segment * kChunk + 16 * ks));
    };
    SmallVector<SmallVector<Value>> p;
    if (!perKey)
      p = segmentScores(0);

    // 3. O = scale (diag(exp(G)) Q S + P D), P over the segments up to the
    //    warp's; S comes from shared memory, split if it is f32. Per key,
    //    the A operand of Q S is Q * exp(G) itself (<= |q|), rounded once
    //    (split for an f32 spec).
    SmallVector<SmallVector<Value>> o = k.zeroAcc(nTiles);
    Operand sOperand = {{sHi, /*transposed=*/true}};
    if (sLo)
      sOperand.lo = TileView{sLo, true};
    if (perKey) {
      k.gemm(o, [&](int64_t k0) {
        return k.fragAFromPairs(m0, k0, [&](Value r, Value c) {
          Value q = k.loadWidenedJoined(qTile, qLo, {r, c}, 2);
          Value g = k.loadWidened(gShared, {r, c}, 2);
          return e.mul(q, k.expPair(g));
        }, /*split=*/splitQK);
      }, sOperand, K);
    } else {
      k.gemm(o, qOperand, m0, sOperand, K);
      for (int64_t nt = 0; nt < nTiles; ++nt)
        for (int64_t i = 0; i < 4; ++i) {
          Value g = memref::LoadOp::create(b, gShared, k.accRow(m0, i));
          o[nt][i] = e.mul(o[nt][i], k.exp(g));
        }
    }
    // 3b. Segment-local states: once every warp is past Q S_n, the
    //     segment's carry C_s takes S's tile (by cp.async, landing while
    //     P D runs) and the block sums log a = sum of G_C over the
    //     segment's chunks before n (one per lane, shuffles).
    Value hasCarry, carryLogDecay;
    if (carries) {
      Value segment = arith::DivUIOp::create(b, n, e.index(segmentChunks));
      hasCarry = k.ult(e.index(0), segment);
      auto ifOp = scf::IfOp::create(b, TypeRange{f32}, hasCarry, true);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      k.barrier();
      if (loadStateTile(carries, segment, unit))
        k.commitCopies();
      scf::YieldOp::create(
          b, sumChunkTotals(k, gates, bIdx, hv,
                            e.mulIndex(segment, e.index(segmentChunks)), n,
                            segmentChunks, chunk, seqLen));
      b.setInsertionPointToStart(ifOp.elseBlock());
      scf::YieldOp::create(b, e.f32(0.0f));
      carryLogDecay = ifOp.getResult(0);
    }
    if (perKey) {
      // Per key, P D a column block at a time: o += P_b D_b for the
      // blocks b <= the warp's (none for a warp past T). The loop body is
      // the code of one block, where four unrolled blocks overflowed the
      // instruction cache (GLA's output kernel: 30% of its stalls were
      // instruction fetch, bench/NOTES.md c34).
      PerKeyDiagonal diagonal =
          perKeyDiagonal(k, qOperand, kOperand, gShared, m0, rows.valid, K);
      Value numBlocks = k.select(k.ult(m0, rows.valid),
                                 e.addIndex(rowBlock, e.index(1)), e.index(0));
      ValueRange sums = e.forEachReduce(
          numBlocks, flattenTiles(o),
          [&](Value block, ValueRange acc) -> SmallVector<Value> {
            Value row0 = e.mulIndex(block, e.index(16));
            SmallVector<Value> scores =
                perKeyBlockScores(k, qOperand, Operand::of(kdTile, kdLo),
                                  gShared, m0, row0, rows.valid, diagonal, K);
            for (int64_t i = 0; i < 8; ++i) {
              // Element i % 4 of tile i / 4: row accRow(m0, i % 4), column
              // row0 + 8 (i / 4) + accCol(0, i % 4).
              Value r = k.accRow(m0, i % 4);
              Value c = e.addIndex(row0, k.accCol(8 * (i / 4), i % 4));
              Value causal =
                  arith::CmpIOp::create(b, arith::CmpIPredicate::ule, c, r);
              scores[i] = k.select(causal, scores[i], e.f32(0.0f));
            }
            SmallVector<SmallVector<Value>> oBlock = unflattenTiles(acc);
            addBlockValues(oBlock, ArrayRef(scores).take_front(4),
                           ArrayRef(scores).drop_front(4), row0);
            return flattenTiles(oBlock);
          });
      o = unflattenTiles(sums);
    } else {
      addSegmentValues(o, p, 0);
    }
    for (int64_t segment = 1; segment < numSegments; ++segment) {
      // Only the warps whose rows lie at or past the segment's first row
      // see its columns (a warp-uniform branch).
      SmallVector<Value> flat = flattenTiles(o);
      auto ifOp = scf::IfOp::create(
          b, TypeRange(ValueRange(flat)),
          k.ult(e.index(segment * kChunk / 16 - 1), rowBlock), true);
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(ifOp.thenBlock());
        SmallVector<SmallVector<Value>> oSegment = o;
        addSegmentValues(oSegment, segmentScores(segment), segment);
        scf::YieldOp::create(b, flattenTiles(oSegment));
        b.setInsertionPointToStart(ifOp.elseBlock());
        scf::YieldOp::create(b, flat);
      }
      o = unflattenTiles(ifOp.getResults());
    }
    if (carries) {
      // 3c. O += diag(exp(G + log a)) Q C_s, where there is a carry.
      SmallVector<Value> flat = flattenTiles(o);
      auto ifOp = scf::IfOp::create(b, TypeRange(ValueRange(flat)), hasCarry, true);
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(ifOp.thenBlock());
        k.waitCopies(k.commitCopies(), 0);
        k.barrier();
        SmallVector<SmallVector<Value>> qc = k.zeroAcc(nTiles);
        k.gemm(qc, qOperand, m0, sOperand, K);
        SmallVector<SmallVector<Value>> sums = o;
        for (int64_t nt = 0; nt < nTiles; ++nt)
          for (int64_t i = 0; i < 4; ++i) {
            Value g = memref::LoadOp::create(b, gShared, k.accRow(m0, i));
            sums[nt][i] = math::FmaOp::create(
                b, qc[nt][i], k.exp(e.add(g, carryLogDecay)), sums[nt][i]);
          }
        scf::YieldOp::create(b, flattenTiles(sums));
        b.setInsertionPointToStart(ifOp.elseBlock());
        scf::YieldOp::create(b, flat);
      }
      o = unflattenTiles(ifOp.getResults());
    }
    if (sShared || formsRowScales) {
      // o_i = scale s_i (...): the factored normalisation's row scale, read
      // or formed from the warp's own rows of Q (which no warp has
      // overwritten yet: step 4 comes after).
      std::optional<std::array<Value, 2>> formed;
      if (formsRowScales)
        formed = k.accRowInverseNorms(qTile, qLo, m0, K, L2NormOp::kEpsilon);
      for (int64_t half = 0; half < 2; ++half) {
        Value s =
            formed ? (*formed)[half]
                   : memref::LoadOp::create(b, sShared, k.accRow(m0, 2 * half))
                         .getResult();
        Value rowScale = e.mul(e.f32(scale), s);
        for (SmallVector<Value> &tile : o)
          for (int64_t i : {2 * half, 2 * half + 1})
            tile[i] = e.mul(tile[i], rowScale);
      }
    } else {
      for (SmallVector<Value> &tile : o)
        for (Value &x : tile)
          x = e.mul(x, e.f32(scale));
    }
    if (!target.hasStMatrix() || elementOf(out) != elem) {
      for (int64_t nt = 0; nt < nTiles; ++nt)
        k.forEachPair(m0, nt, [&](Value r, Value c, int64_t i) {
          k.storePair(o[nt][i], o[nt][i + 1], out,
                      {bIdx, e.addIndex(rows.t0, r), hv, e.addIndex(v0, c)},
                      k.ult(r, rows.valid));
        });
      return;
    }
    // 4. O leaves through the warp's own 16 rows of the Q tile (no other
    //    warp reads them; with two units, of its unit's output tile):
    //    stmatrix, then 16-byte row pieces, 8 rows of 128 bytes per
    //    instruction instead of 4-byte pairs.
    Value outTile = units > 1 ? k.tile(unitOffset(outOffset, unit, dBytes), chunk,
                                       cols + kPad, elem)
                              : qTile;
    Value fullWarp = arith::ConstantOp::create(b, b.getI32IntegerAttr(-1));
    NVVM::SyncWarpOp::create(b, fullWarp);
    for (int64_t nt = 0; nt < nTiles; nt += 2)
      k.stmatrix4(outTile, m0, e.index(8 * nt), o[nt], o[nt + 1],
                  /*transposed=*/false);
    NVVM::SyncWarpOp::create(b, fullWarp);
    k.copyRowsOut(outTile, m0, 16, cols, rows.valid, out,
                  [&](Value r, Value c) -> SmallVector<Value> {
      return {bIdx, e.addIndex(rows.t0, r), hv, e.addIndex(v0, c)};
    }, /*byWarp=*/true);
  }, units * numWarps * 32);
  e.replaceWithBuffers(rewriter, op, {out});
  return success();
}

struct ChunkOutputToGPU : OpRewritePattern<ChunkOutputOp> {
  ChunkOutputToGPU(MLIRContext *ctx, const ChunkedLoweringContext &context)
      : OpRewritePattern(ctx), context(context) {}
  LogicalResult matchAndRewrite(ChunkOutputOp op,
                                PatternRewriter &rewriter) const override {
    return lowerChunkOutput(op, context.getMmaType(op), context.getTarget(),
                            context.explains(), rewriter);
  }
  const ChunkedLoweringContext &context;
};

} // namespace

void populateChunkOutputToGPUPatterns(RewritePatternSet &patterns,
                                      const ChunkedLoweringContext &context) {
  patterns.add<ChunkOutputToGPU>(patterns.getContext(), context);
}

} // namespace mlir::linattn::kernel
