//===- ChunkStatePassToGPU.cpp - linattn.chunk_state_pass to a kernel -------===//
//
// A block per 32 value columns of one (sequence, value head): the state S^T
// lives in the warps' accumulator registers across the chunk loop, each
// chunk's inputs staged by cp.async stages ahead.
//
//===----------------------------------------------------------------------===//

#include "ChunkedToGPUPatterns.h"
#include "KernelSupport.h"
#include "Kernel/Gates.h"
#include "Kernel/MmaEmitter.h"
#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::linattn::kernel {

/// The state pass: each warp carries S^T for 16 value columns (the m of
/// its products) and 1 / kStateKeySplit of the keys in registers, so the
/// state never goes through shared memory; the kStateKeySplit warps of a
/// column group add their partial W S^T products through shared memory.
/// kStateColumnGroups groups share a block and its staged inputs
/// (B * HV * V / 32 blocks of 4 warps); kStateStages stages keep two
/// chunks' copies in flight, kStateStagesWithoutW three where there is no
/// W S product and no per-key gate (fewer where they do not fit: f32 keys,
/// from linattn.l2norm, or an f32 W).
constexpr int64_t kStateColumns = chunked_kernels::kStateColumns;
constexpr int64_t kStateColumnGroups = kStateColumns / 16;
static_assert(kStateColumns % 16 == 0, "a warp carries 16 state columns");
constexpr int64_t kStateKeySplit = 2;
constexpr int64_t kStateWarps = kStateColumnGroups * kStateKeySplit;
constexpr int64_t kStateStages = 3;
/// Without W the chunk loop is short (no W S product, no exchange) and a
/// fourth stage hides more of the loads' latency: measured -2% (simple
/// GLA) to -11% (linear attention) at T = 16384; with W it made no
/// difference (bench/results/state_pass_stages_ab_c24.log, NOTES c24).
constexpr int64_t kStateStagesWithoutW = 4;

namespace {

LogicalResult lowerChunkStatePass(ChunkStatePassOp op, Type mmaType,
                                  const GPUTargetInfo &target,
                                  RewriterBase &rewriter) {
  if (op.getBeta())
    return op.emitOpError() << "the rank-1 product form has no GPU kernel: run "
                               "linattn-lower-rank1-to-wy first";
  Type elem = mmaType;
  int64_t numQKHeads = dimOf(op.getK(), 2), K = dimOf(op.getK(), 3);
  int64_t numVHeads = dimOf(op.getU(), 2), V = dimOf(op.getU(), 3);
  // Per-key gates (key_gate, GLA): G is [B, T, HV, K] and decays keys,
  // not rows of D (see step c).
  bool perKey =
      op.getGates() && cast<ShapedType>(op.getGates().getType()).getRank() == 4;
  assert(!(perKey && op.getW()) &&
         "the verifier admits per-key gates only without a rank-1 term");
  int64_t chunk = op.getChunkSize();
  if (failed(checkChunkGeometry(op, chunk, {{"K", K}, {"V", V}},
                                op.getW() ? "the WY form"
                                : perKey  ? "per-key gates"
                                          : "")))
    return failure();
  // The loop walks 64-row steps; a long chunk is stepsPerChunk of them,
  // and its state is stored before its first step only.
  int64_t stepsPerChunk = chunk / kChunk;
  // Segmented (linattn-segment-chunk-states): a block per segment of
  // segmentChunks chunks, each from zero but the first.
  std::optional<uint64_t> segmentChunks = op.getSegmentChunks();
  int64_t segmentSteps = segmentChunks ? int64_t(*segmentChunks) * stepsPerChunk : 0;

  rewriter.setInsertionPoint(op);
  ImplicitLocOpBuilder b(op.getLoc(), rewriter);
  LoopEmitter e(b);
  // Decayed keys (linattn-fuse-chunk-cumsum): K' = k exp(G_C - G) in K's
  // place (one per value head) and the chunks' total gates G_C in the
  // gates' (one row per chunk); the loop neither decays keys nor waits to.
  bool decayed = op.getDecayedKeys();
  Value kBuf = e.toBuffer(op.getK());
  Value uBuf = e.toBuffer(op.getU());
  Value wBuf = op.getW() ? e.toBuffer(op.getW()) : Value();
  Value gates = op.getGates() ? e.toBuffer(op.getGates()) : Value();
  Value s0 = e.toBuffer(op.getInitialState());
  Value batch = e.dim(kBuf, 0), seqLen = e.dim(kBuf, 1);
  Value numChunks = arith::CeilDivUIOp::create(b, seqLen, e.index(chunk));
  Value numSteps = arith::CeilDivUIOp::create(b, seqLen, e.index(kChunk));
  Value hvDim = e.index(numVHeads);
  // Without W, D = U - W S is U: where their types agree the new values
  // are u itself, and the kernel writes no copy of it.
  Type uElem = elementOf(op.getU()), valueElem = elementOf(op.getNewValues());
  bool forwardValues = !wBuf && valueElem == uElem;
  Value newValues = forwardValues
                        ? Value()
                        : e.allocFor(op.getNewValues().getType(),
                                     {batch, seqLen, hvDim, e.index(V)});
  Value states = e.allocFor(op.getChunkStates().getType(),
                            {batch, numChunks, hvDim, e.index(K), e.index(V)});
  Value numSegmentsValue = segmentChunks ? e.segmentCount(numChunks, *segmentChunks)
                                         : Value();
  Value finalState =
      segmentChunks
          ? e.allocFor(op.getFinalState().getType(),
                       {batch, numSegmentsValue, hvDim, e.index(K), e.index(V)})
          : e.allocFor(op.getFinalState().getType(),
                       {batch, hvDim, e.index(K), e.index(V)});

  // Shared memory: `stages` stages of a chunk's inputs as they come
  // from global memory (W, K, the block's U columns, the row gates); while
  // chunk n is computed, cp.async brings chunk n + stages - 1. Rows
  // are padded so that the fragment loads below touch distinct banks: W and
  // K like every ldmatrix tile (an f32 W by 32 bytes: lanes of a half-warp
  // read 8-byte pairs of rows 8 apart), U by 16 bytes (lanes read rows 2
  // apart).
  Type kElem = elementOf(op.getK());
  Type wElem = wBuf ? elementOf(op.getW()) : Type();
  auto bytesOf = [](Type t) { return int64_t(t.getIntOrFloatBitWidth() / 8); };
  bool kIsOperand = kElem == elem; // else f32 keys (an l2norm result)
  // W in the operand type (rounded once by the UT transform) goes to the
  // tensor cores as it is; an f32 W (from f32 keys) is split as its
  // fragments are loaded; a split W (negeig) comes as two 16-bit parts,
  // staged side by side as rows of 2K (hi, then lo).
  bool wIsOperand = wBuf && wElem == elem;
  bool wSplit = wBuf && isSplitW(op.getW().getType());
  int64_t wCols = wSplit ? 2 * K : K;
  int64_t wStride = !wBuf        ? 0
                    : wIsOperand ? wCols + kPad
                                 : K + 32 / bytesOf(wElem);
  int64_t kStride = kIsOperand ? K + kPad : K + 8;
  int64_t uStride = kStateColumns + 16 / bytesOf(uElem);
  int64_t wStageBytes = wBuf ? kChunk * wStride * bytesOf(wElem) : 0;
  int64_t kStageBytes = kChunk * kStride * bytesOf(kElem);
  int64_t uStageBytes = kChunk * uStride * bytesOf(uElem);
  int64_t gateCols = perKey ? K : 1;
  int64_t gateRows = decayed ? 1 : kChunk;
  int64_t gStageBytes = gates ? gateRows * gateCols * 4 : 0;
  int64_t stageBytes = wStageBytes + kStageBytes + uStageBytes + gStageBytes;
  int64_t keysPerWarp = K / kStateKeySplit;
  static_assert(64 % (16 * kStateKeySplit) == 0,
                "every K the geometry check admits splits into 16-key k-steps");
  static_assert((kChunk / 8) % (2 * kStateKeySplit) == 0,
                "the key parts stage D's row tiles in pairs");
  int64_t keyTiles = keysPerWarp / 8, rowTiles = kChunk / 8;
  // Partial W S^T products of the warps, as held in registers: tile rt of
  // warp w at [w][rt][lane] (16 bytes each).
  bool exchange = wBuf && kStateKeySplit > 1;
  int64_t xchgBytes = exchange ? kStateWarps * rowTiles * 32 * 16 : 0;
  // Without W, D = U: where U is staged in the operand type and no copy of
  // it is written, step c takes D'^T's A fragments from the stage by
  // ldmatrix .trans (four registers per instruction) and decays each
  // register's two rows in fp32 before rounding them once: the values of
  // the accumulator-layout path, which loads, widens, decays and selects
  // element by element (a 16-bit load per element; simple GLA's state pass
  // -10% at T = 16384: bench/NOTES.md c31). Rows past T are staged zeros
  // with zero gates, so their decayed D is 0 without a select.
  bool directD = !wBuf && (!perKey || decayed) && forwardValues && uElem == elem;
  // 16-bit chunk states and new values leave through shared memory: a
  // warp's S^T and D^T accumulator tiles go in by stmatrix .trans (four
  // 8x8 tiles per instruction) as rows of the block's 32 columns, and the
  // next iteration, past its barrier, copies the rows out in 16-byte
  // pieces; two buffers alternate. Stored straight from the accumulators
  // they would take one 2-byte store per element. fp32 results (without
  // narrow-intermediates) and chips before sm_90 keep those direct stores.
  auto is16Bit = [](Type t) { return t.getIntOrFloatBitWidth() == 16; };
  bool stageStates = target.hasStMatrix() && is16Bit(elementOf(op.getChunkStates()));
  bool stageValues = target.hasStMatrix() && newValues && is16Bit(valueElem);
  int64_t outStride = kStateColumns + kPad;
  int64_t stateOutBytes = stageStates ? K * outStride * 2 : 0;
  int64_t valueOutBytes = stageValues ? kChunk * outStride * 2 : 0;
  int64_t outBytes = 2 * (stateOutBytes + valueOutBytes);
  // Per-key gates (GLA) that the state pass decays itself stage [64][K]
  // gates besides: their loop is not the short one, and keeps three.
  int64_t stages =
      wBuf || (perKey && !decayed) ? kStateStages : kStateStagesWithoutW;
  while (stages > 2 && stages * stageBytes + xchgBytes + outBytes > target.maxSharedBytesPerBlock())
    --stages;
  int64_t xchgOffset = stages * stageBytes;
  int64_t outOffset = xchgOffset + xchgBytes;
  if (outOffset + outBytes > target.maxSharedBytesPerBlock())
    return op.emitOpError() << "GPU state pass needs " << outOffset + outBytes
                            << " bytes of shared memory, more than the "
                            << target.maxSharedBytesPerBlock() << " a block may have";

  Value zBlocks = segmentChunks ? e.mulIndex(batch, numSegmentsValue) : batch;
  emitLaunch(b, {e.index(V / kStateColumns), hvDim, zBlocks},
             outOffset + outBytes, elem, [&](MmaEmitter &k) {
    Block *body = b.getInsertionBlock();
    Value vTile = body->getArgument(0), hv = body->getArgument(1);
    Value bIdx = body->getArgument(2);
    // The block's steps [firstStep, endStep): all of them, or its
    // segment's; rows past endStep are prefetched as zeros (the next
    // segment's block reads them).
    Value segment, firstStep = e.index(0), endStep = numSteps, stepLimit = seqLen;
    if (segmentChunks) {
      segment = arith::RemUIOp::create(b, bIdx, numSegmentsValue);
      bIdx = arith::DivUIOp::create(b, bIdx, numSegmentsValue);
      firstStep = e.mulIndex(segment, e.index(segmentSteps));
      endStep = e.minIndex(e.addIndex(firstStep, e.index(segmentSteps)), numSteps);
      stepLimit = e.minIndex(seqLen, e.mulIndex(endStep, e.index(kChunk)));
    }
    Value h = e.qkHead(hv, numVHeads, numQKHeads);
    // The warp's 16 value columns (vLocal within the block's, vGlobal in
    // V) and its keys [key0, key0 + keysPerWarp).
    Value columnGroup = arith::DivUIOp::create(b, k.warp, e.index(kStateKeySplit));
    Value keyPart = arith::RemUIOp::create(b, k.warp, e.index(kStateKeySplit));
    Value vLocal = e.mulIndex(columnGroup, e.index(16));
    Value vGlobal = e.addIndex(e.mulIndex(vTile, e.index(kStateColumns)), vLocal);
    Value key0 = e.mulIndex(keyPart, e.index(keysPerWarp));
    Value v0 = e.mulIndex(vTile, e.index(kStateColumns));
    Type f32 = b.getF32Type();

    struct Stage {
      Value w, k, u, g;
    };
    auto stageAt = [&](Value n) {
      Value stage = arith::RemUIOp::create(b, n, e.index(stages));
      Value base = e.mulIndex(stage, e.index(stageBytes));
      auto at = [&](int64_t offset) { return e.addIndex(base, e.index(offset)); };
      Stage st;
      if (wBuf)
        st.w = k.tile(base, kChunk, wStride, wElem);
      st.k = k.tile(at(wStageBytes), kChunk, kStride, kElem);
      st.u = k.tile(at(wStageBytes + kStageBytes), kChunk, uStride, uElem);
      if (gates) // [64][1] for gates [B, T, HV] (one 4-byte copy per row),
                 // [64][K] per key, [1][K] chunk totals.
        st.g = k.tile(at(wStageBytes + kStageBytes + uStageBytes), gateRows,
                      gateCols, f32);
      return st;
    };
    // Starts the copies of chunk `n` (rows past the sequence, or every row
    // of a chunk past the last, arrive as zeros) and closes their group;
    // rows in 32-bit arithmetic where there is W (copyRowsAsync).
    bool narrowRows = wBuf != nullptr;
    auto prefetch = [&](Value n) {
      auto [t0, valid] = chunkRows(e, n, stepLimit);
      Stage st = stageAt(n);
      Value zero = e.index(0);
      if (wBuf)
        k.copyRowsAsync(st.w, zero, wCols, t0, valid, seqLen, wBuf,
                        [&](Value t, Value c) -> SmallVector<Value> {
          if (wSplit) // column c of the staged row: part c / K, key c % K
            return {bIdx, t, hv, arith::DivUIOp::create(b, c, e.index(K)),
                    arith::RemUIOp::create(b, c, e.index(K))};
          return {bIdx, t, hv, c};
        }, kChunk, narrowRows);
      k.copyRowsAsync(st.k, zero, K, t0, valid, seqLen, kBuf,
                      [&](Value t, Value c) -> SmallVector<Value> {
        return {bIdx, t, decayed ? hv : h, c};
      }, kChunk, narrowRows);
      k.copyRowsAsync(st.u, zero, kStateColumns, t0, valid, seqLen, uBuf,
                      [&](Value t, Value c) -> SmallVector<Value> {
        return {bIdx, t, hv, e.addIndex(v0, c)};
      }, kChunk, narrowRows);
      if (decayed) // chunk n's row of G_C (zeros past the last chunk)
        k.copyRowsAsync(st.g, zero, K, n,
                        k.select(k.ult(n, numChunks), e.index(1), e.index(0)),
                        numChunks, gates,
                        [&](Value chunkIdx, Value c) -> SmallVector<Value> {
          return {bIdx, chunkIdx, hv, c};
        }, /*rows=*/1);
      else if (gates)
        k.copyRowsAsync(st.g, zero, gateCols, t0, valid, seqLen, gates,
                        [&](Value t, Value c) -> SmallVector<Value> {
          if (perKey)
            return {bIdx, t, hv, c};
          return {bIdx, t, hv};
        }, kChunk, narrowRows);
      return k.commitCopies();
    };

    // S^T of the warp's columns and keys is carried as keyTiles
    // accumulator tiles: element i of tile kt is S[key0 + accCol(8 kt, i)]
    // [vGlobal + accRow(0, i)]. Flattened: tile kt at 4 kt.
    auto stateIndex = [&](int64_t kt, int64_t i) -> std::pair<Value, Value> {
      return {e.addIndex(key0, k.accCol(8 * kt, i)),
              e.addIndex(vGlobal, k.accRow(e.index(0), i))};
    };
    SmallVector<Value> init;
    Value fromInitial =
        segmentChunks ? arith::CmpIOp::create(b, arith::CmpIPredicate::eq, segment,
                                              e.index(0)).getResult()
                      : Value();
    for (int64_t kt = 0; kt < keyTiles; ++kt)
      for (int64_t i = 0; i < 4; ++i) {
        auto [key, v] = stateIndex(kt, i);
        Value x = e.loadF32(s0, {bIdx, hv, key, v});
        init.push_back(fromInitial ? k.select(fromInitial, x, e.f32(0.0f)) : x);
      }
    auto storeState = [&](ValueRange flat, Value dst, SmallVector<Value> prefix) {
      for (int64_t kt = 0; kt < keyTiles; ++kt)
        for (int64_t i = 0; i < 4; ++i) {
          auto [key, v] = stateIndex(kt, i);
          SmallVector<Value> idx = prefix;
          idx.append({key, v});
          e.storeFromF32(flat[4 * kt + i], dst, idx);
        }
    };

    // The output buffers of chunk n: S_n ([K][32] of the block's columns)
    // then D_n ([64][32]), in the states' and new values' types.
    Type stateElem = elementOf(op.getChunkStates());
    auto outputsAt = [&](Value n) -> std::pair<Value, Value> {
      Value parity = arith::RemUIOp::create(b, n, e.index(2));
      Value base = e.addIndex(e.index(outOffset),
                              e.mulIndex(parity, e.index(outBytes / 2)));
      return {stageStates ? k.tile(base, K, outStride, stateElem) : Value(),
              stageValues ? k.tile(e.addIndex(base, e.index(stateOutBytes)),
                                   kChunk, outStride, valueElem)
                          : Value()};
    };
    // Whether step n of a long chunk starts it, and so stores its state
    // (at n / stepsPerChunk).
    auto startsChunk = [&](Value n) -> Value {
      assert(stepsPerChunk > 1 && "every step starts a 64-token chunk");
      return arith::CmpIOp::create(
          b, arith::CmpIPredicate::eq,
          arith::RemUIOp::create(b, n, e.index(stepsPerChunk)), e.index(0));
    };
    // Moves the insertion point into a branch taken where step n starts
    // its chunk (always, for 64-token chunks: no branch); the caller holds
    // an InsertionGuard.
    auto onlyAtChunkStart = [&](Value n) {
      if (stepsPerChunk > 1)
        b.setInsertionPointToStart(
            scf::IfOp::create(b, startsChunk(n), false).thenBlock());
    };
    auto chunkOf = [&](Value n) {
      return stepsPerChunk == 1
                 ? n
                 : arith::DivUIOp::create(b, n, e.index(stepsPerChunk)).getResult();
    };
    // Copies step m's staged S (if m starts a chunk) and D_m (its rows
    // below `valid`) out.
    auto flushOutputs = [&](Value m) {
      auto [sOut, dOut] = outputsAt(m);
      Value zero = e.index(0);
      if (sOut) {
        OpBuilder::InsertionGuard guard(b);
        onlyAtChunkStart(m);
        Value c = chunkOf(m);
        k.copyRowsOut(sOut, zero, K, kStateColumns, Value(), states,
                      [&](Value r, Value col) -> SmallVector<Value> {
          return {bIdx, c, hv, r, e.addIndex(v0, col)};
        });
      }
      if (dOut) {
        auto [t0, valid] = chunkRows(e, m, seqLen);
        k.copyRowsOut(dOut, zero, kChunk, kStateColumns, valid, newValues,
                      [&](Value r, Value c) -> SmallVector<Value> {
          return {bIdx, e.addIndex(t0, r), hv, e.addIndex(v0, c)};
        });
      }
    };

    // A long chunk's second step decays the state by exp(G_last - G_63):
    // its cumulative gates run from the chunk's start, and the first
    // step's last one (G_63) is carried after the state.
    bool carryGateBase = stepsPerChunk > 1 && gates && !perKey;
    if (carryGateBase)
      init.push_back(e.f32(0.0f));
    int64_t numStateValues = keyTiles * 4;
    // Step j of the block's range (the unsegmented kernel's IR unchanged).
    auto blockStep = [&](Value j) {
      return segmentChunks ? e.addIndex(firstStep, j) : j;
    };
    Value firstGroup = prefetch(blockStep(e.index(0)));
    for (int64_t ahead = 1; ahead + 1 < stages; ++ahead)
      prefetch(blockStep(e.index(ahead)));
    ValueRange carried = e.forEachReduce(
        segmentChunks ? e.subIndex(endStep, firstStep) : numSteps, init,
        [&](Value j, ValueRange carriedIn) -> SmallVector<Value> {
      Value n = blockStep(j);
      ValueRange flat = carriedIn.take_front(numStateValues);
      ChunkRows rows = chunkRows(e, n, seqLen);
      // Chunk n has landed once at most stages - 2 newer groups are in
      // flight; the barrier makes every thread's copies visible and frees
      // the stage of chunk n - 1 for chunk n + stages - 1.
      k.waitCopies(firstGroup, stages - 2);
      k.barrier();
      prefetch(e.addIndex(n, e.index(stages - 1)));
      Stage st = stageAt(n);
      Value lastRow = e.subIndex(rows.valid, e.index(1));
      // Per-key gates: K' = K * exp(G_C - G) in place (step c's B
      // operand), each element once per block; the barrier before step c
      // publishes it.
      if (perKey && !decayed)
        decayRows(k, st.k, st.k, st.g, rows.valid, [&](Value) { return lastRow; }, K);
      if (stageStates || stageValues) {
        // Step n - 1's outputs, staged before the barrier.
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(
            scf::IfOp::create(b, k.ult(firstStep, n), false).thenBlock());
        flushOutputs(e.subIndex(n, e.index(1)));
      }
      {
        // The state before a chunk's first step is the chunk's state.
        OpBuilder::InsertionGuard guard(b);
        onlyAtChunkStart(n);
        if (stageStates) {
          // The warp's S^T accumulator tiles, transposed: S's rows (keys)
          // as they are laid out in memory.
          Value sOut = outputsAt(n).first;
          for (int64_t kt = 0; kt < keyTiles; kt += 2)
            k.stmatrix4(sOut, e.addIndex(key0, e.index(8 * kt)), vLocal,
                        flat.slice(4 * kt, 4), flat.slice(4 * kt + 4, 4),
                        /*transposed=*/true);
        } else {
          storeState(flat, states, {bIdx, chunkOf(n), hv});
        }
      }

      // a. D^T = U^T - S^T W^T for the warp's 16 columns and the chunk's
      //    64 rows (rowTiles tiles of 8 rows): each warp of the column
      //    group adds -S^T W^T over its keys, key part 0 onto U^T. A = -S^T
      //    comes split from the state registers, B = W^T by ldmatrix from
      //    W's staged rows (an f32 W split as its fragments are loaded);
      //    rows past T are staged zeros, so D is 0 there.
      auto loadU = [&] {
        SmallVector<Value> u;
        for (int64_t rt = 0; rt < rowTiles; ++rt)
          for (int64_t i = 0; i < 4; ++i)
            u.push_back(e.loadF32(st.u, {k.accCol(8 * rt, i),
                                         e.addIndex(vLocal, k.accRow(e.index(0), i))}));
        return u;
      };
      SmallVector<Value> dFlat;
      if (directD) {
        // Step c reads D from the stage itself.
      } else if (exchange) {
        // Key part 0 starts from U, the others from zero: a warp-uniform
        // branch instead of a select per element.
        auto ifOp = scf::IfOp::create(
            b, SmallVector<Type>(rowTiles * 4, f32),
            arith::CmpIOp::create(b, arith::CmpIPredicate::eq, keyPart, e.index(0)),
            /*withElseRegion=*/true);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(ifOp.thenBlock());
        scf::YieldOp::create(b, loadU());
        b.setInsertionPointToStart(ifOp.elseBlock());
        scf::YieldOp::create(b, SmallVector<Value>(rowTiles * 4, e.f32(0.0f)));
        dFlat.append(ifOp.getResults().begin(), ifOp.getResults().end());
      } else {
        dFlat = loadU();
      }
      SmallVector<SmallVector<Value>> d;
      for (int64_t rt = 0; rt < rowTiles && !directD; ++rt)
        d.push_back(SmallVector<Value>(ArrayRef(dFlat).slice(4 * rt, 4)));
      if (wBuf) {
        for (int64_t ks = 0; ks < keysPerWarp / 16; ++ks) {
          SmallVector<Value> s0Tile(flat.slice(8 * ks, 4));
          SmallVector<Value> s1Tile(flat.slice(8 * ks + 4, 4));
          // A bf16 W (rounded by the UT transform) meets S^T rounded
          // once as well: bench/model/bf16_intermediates.py puts the
          // cost at <= 1e-4 of o's error (T = 4096, delta and gated
          // delta, soft and hard inputs), for 32 of the warp's 128
          // products per chunk. So does a split W (negeig): S^T hi
          // against W's hi and lo, two products instead of the three of
          // a split S (o's worst error on the H200 check 4.09e-3 ->
          // 4.18e-3, state pass -7% at T = 16384: NOTES c28). An f32 W
          // (f32 keys) keeps both split: hi hi + hi lo + lo hi.
          auto [aHi, aLo] = k.fragmentAFromAcc(s0Tile, s1Tile, /*negate=*/true,
                                               /*split=*/!wIsOperand);
          if (wIsOperand) {
            Value k0 = e.addIndex(key0, e.index(16 * ks));
            for (int64_t rt = 0; rt < rowTiles; rt += 2) {
              // B^T = W: rows 8 rt .. 8 rt + 15 (two n-tiles) at once; a
              // split W's lo part K columns to the right.
              SmallVector<Value> bFrag = k.fragB2({st.w}, 8 * rt, k0);
              SmallVector<Value> bLoFrag;
              if (wSplit)
                bLoFrag = k.fragB2({st.w}, 8 * rt, e.addIndex(k0, e.index(K)));
              for (int64_t j = 0; j < 2; ++j)
                d[rt + j] = k.mmaSplit(aHi, aLo, ArrayRef(bFrag).slice(2 * j, 2),
                                       wSplit ? ArrayRef(bLoFrag).slice(2 * j, 2)
                                              : ArrayRef<Value>(),
                                       d[rt + j]);
            }
            continue;
          }
          for (int64_t rt = 0; rt < rowTiles; ++rt) {
            // b_j = (W[8 rt + g][16 ks + 2q + 8 j], ... + 1), split.
            SmallVector<Value> bHi, bLo;
            Value row = e.addIndex(e.index(8 * rt), k.group);
            for (int64_t j = 0; j < 2; ++j) {
              Value col = e.addIndex(e.addIndex(key0, e.index(16 * ks + 8 * j)),
                                     e.mulIndex(k.quad, e.index(2)));
              auto [hi, lo] = k.splitRegister(k.loadWidened(st.w, {row, col}, 2));
              bHi.push_back(hi);
              bLo.push_back(lo);
            }
            d[rt] = k.mmaSplit(aHi, aLo, bHi, bLo, d[rt]);
          }
        }
      }
      if (exchange) {
        // D = sum of the group's partials in key-part order, the same sum
        // (bit for bit) in every warp of the group: each warp reads its
        // own partial back too rather than choosing it by a select.
        auto f32x4 = VectorType::get({4}, f32);
        Value xchg = k.tile(xchgOffset, kStateWarps * rowTiles * 32, 4, f32);
        auto slot = [&](Value w, int64_t rt) {
          return e.addIndex(
              e.mulIndex(e.addIndex(e.mulIndex(w, e.index(rowTiles)), e.index(rt)),
                         e.index(32)),
              k.lane);
        };
        for (int64_t rt = 0; rt < rowTiles; ++rt)
          vector::StoreOp::create(
              b, vector::FromElementsOp::create(b, f32x4, d[rt]), xchg,
              ValueRange{slot(k.warp, rt), e.index(0)}, false, llvm::Align(16));
        k.barrier();
        Value firstWarp = e.mulIndex(columnGroup, e.index(kStateKeySplit));
        SmallVector<SmallVector<Value>> sum;
        for (int64_t part = 0; part < kStateKeySplit; ++part) {
          Value w = e.addIndex(firstWarp, e.index(part));
          for (int64_t rt = 0; rt < rowTiles; ++rt) {
            Value x = vector::LoadOp::create(b, f32x4, xchg,
                                             ValueRange{slot(w, rt), e.index(0)},
                                             false, llvm::Align(16));
            SmallVector<Value> p;
            for (int64_t i = 0; i < 4; ++i)
              p.push_back(vector::ExtractOp::create(b, x, i));
            if (part == 0) {
              sum.push_back(p);
              continue;
            }
            for (int64_t i = 0; i < 4; ++i)
              sum[rt][i] = e.add(sum[rt][i], p[i]);
          }
        }
        d = sum;
      }

      // b. The new values D, for rows below `valid`; the warps of a
      //    column group take turns by row tile (staged: key part p stages
      //    the p-th run of row tiles).
      int64_t tilesPerPart = rowTiles / kStateKeySplit;
      if (stageValues) {
        Value dOut = outputsAt(n).second;
        for (int64_t part = 0; part < kStateKeySplit; ++part) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(
              scf::IfOp::create(b,
                                arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                                      keyPart, e.index(part)),
                                false)
                  .thenBlock());
          for (int64_t rt = part * tilesPerPart; rt < (part + 1) * tilesPerPart;
               rt += 2)
            k.stmatrix4(dOut, e.index(8 * rt), vLocal, d[rt], d[rt + 1],
                        /*transposed=*/true);
        }
      }
      for (int64_t rt = 0; newValues && !stageValues && rt < rowTiles; ++rt)
        for (int64_t odd = 0; odd < 2; ++odd) {
          Value t = k.accCol(8 * rt, odd);
          Value store = k.ult(t, rows.valid);
          if (kStateKeySplit > 1)
            store = arith::AndIOp::create(
                b, store,
                arith::CmpIOp::create(b, arith::CmpIPredicate::eq, keyPart,
                                      e.index(rt % kStateKeySplit)));
          auto ifOp = scf::IfOp::create(b, store, false);
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(ifOp.thenBlock());
          for (int64_t i : {odd, odd + 2})
            e.storeFromF32(d[rt][i], newValues,
                           {bIdx, e.addIndex(rows.t0, t), hv,
                            e.addIndex(vGlobal, k.accRow(e.index(0), i))});
        }

      // c. S^T = exp(G_C) S^T + D'^T K with D' = diag(exp(G_C - G_t)) D
      //    (G_C the last valid row's gate): the decay goes onto the fp32
      //    D, so the keys stay exact and only A is split. Rows past T are
      //    dropped before the exp can meet them.
      Value gLast;
      if (perKey && !decayed)
        k.barrier();
      if (gates && !perKey) {
        gLast = memref::LoadOp::create(b, st.g, ValueRange{lastRow, e.index(0)});
        for (int64_t rt = 0; rt < rowTiles && !directD; ++rt)
          for (int64_t odd = 0; odd < 2; ++odd) {
            Value t = k.accCol(8 * rt, odd);
            Value gt = memref::LoadOp::create(b, st.g, ValueRange{t, e.index(0)});
            Value decay = k.exp(e.sub(gLast, gt));
            Value keep = k.ult(t, rows.valid);
            for (int64_t i : {odd, odd + 2})
              d[rt][i] = k.select(keep, e.mul(d[rt][i], decay), e.f32(0.0f));
          }
      }
      SmallVector<SmallVector<Value>> acc;
      Value stateDecay;
      if (gates && !perKey) {
        // G_last minus the gate the step starts from: 0 at a chunk's
        // start, the previous step's G_last within a long chunk.
        Value gBase = carryGateBase
                          ? k.select(startsChunk(n), e.f32(0.0f), carriedIn.back())
                          : Value();
        stateDecay = k.exp(gBase ? e.sub(gLast, gBase) : gLast);
      }
      for (int64_t kt = 0; kt < keyTiles; ++kt) {
        SmallVector<Value> tile(flat.slice(4 * kt, 4));
        if (stateDecay)
          for (Value &x : tile)
            x = e.mul(x, stateDecay);
        // Per key: elements odd and odd + 2 of tile kt are S^T[v][key] of
        // one key, decayed by exp(G_C[key]).
        for (int64_t odd = 0; perKey && odd < 2; ++odd) {
          Value key = stateIndex(kt, odd).first;
          Value decay = k.exp(memref::LoadOp::create(
              b, st.g, ValueRange{decayed ? e.index(0) : lastRow, key}));
          for (int64_t i : {odd, odd + 2})
            tile[i] = e.mul(tile[i], decay);
        }
        acc.push_back(tile);
      }
      // D' is split where it came out of a rank-1 cancellation. Without
      // W it is v times a decay (exactly v without gates): rounded once,
      // it moves the model's state error by about 1e-3 and o's not at
      // all (scalar_gate rows of bench/model/bf16_intermediates.py), for
      // half of the update's products. The delta rule's D keeps its lo:
      // rounded, o's error on nearly parallel keys grows toward the bound
      // (3.2 -> 3.9e-3 in the model, 1.1e-2 for negeig).
      bool splitUpdate = wBuf != nullptr;
      // directD: register j of the fragment holds rows 16 ks + 8 (j / 2) +
      // 2 quad + {0, 1} of column vLocal + group + 8 (j % 2); each row
      // pair's decays are taken once for both registers that share it.
      auto directFragment = [&](int64_t ks) {
        SmallVector<Value> pairs = k.ldmatrix4Pairs(
            {st.u, /*transposed=*/true}, vLocal, e.index(16 * ks), /*swap=*/false);
        SmallVector<Value> regs;
        auto f32x2 = VectorType::get({2}, f32);
        Value decays;
        for (int64_t j = 0; j < 4; ++j) {
          Value pair = pairs[j];
          if (gLast) {
            if (j % 2 == 0) {
              Value t = e.addIndex(e.index(16 * ks + 8 * (j / 2)),
                                   e.mulIndex(k.quad, e.index(2)));
              SmallVector<Value> rowDecays;
              for (Value r : {t, e.addIndex(t, e.index(1))})
                rowDecays.push_back(k.exp(e.sub(
                    gLast, memref::LoadOp::create(b, st.g, ValueRange{r, e.index(0)}))));
              decays = vector::FromElementsOp::create(b, f32x2, rowDecays);
            }
            Value wide = arith::ExtFOp::create(b, f32x2, pair);
            pair = arith::TruncFOp::create(b, pair.getType(),
                                           arith::MulFOp::create(b, wide, decays));
          }
          regs.push_back(k.mmaRegister(pair));
        }
        return regs;
      };
      for (int64_t ks = 0; ks < kChunk / 16; ++ks) {
        auto [aHi, aLo] =
            directD ? std::pair(directFragment(ks), SmallVector<Value>())
                    : k.fragmentAFromAcc(d[2 * ks], d[2 * ks + 1],
                                         /*negate=*/false, splitUpdate);
        for (int64_t kt = 0; kt < keyTiles; kt += 2) {
          // B = K (k = row, n = key): two key tiles per fragment load.
          SmallVector<Value> bFrag =
              kIsOperand ? k.fragB2({st.k, /*transposed=*/true}, key0, 8 * kt, 16 * ks)
                         : k.fragB2FromF32Columns(st.k, key0, 8 * kt, 16 * ks);
          for (int64_t j = 0; j < 2; ++j)
            acc[kt + j] = k.mmaSplit(aHi, aLo, ArrayRef(bFrag).slice(2 * j, 2),
                                     /*bLo=*/{}, acc[kt + j]);
        }
      }
      SmallVector<Value> next;
      for (auto &tile : acc)
        next.append(tile.begin(), tile.end());
      if (carryGateBase)
        next.push_back(gLast);
      return next;
    });
    ValueRange final = carried.take_front(numStateValues);
    // The prefetches past the final step (all zero-size) drain; the last
    // step's staged outputs leave.
    k.waitCopies(firstGroup, 0);
    if (stageStates || stageValues) {
      k.barrier();
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(
          scf::IfOp::create(b, k.ult(firstStep, endStep), false).thenBlock());
      flushOutputs(e.subIndex(endStep, e.index(1)));
    }
    if (segmentChunks)
      storeState(final, finalState, {bIdx, segment, hv});
    else
      storeState(final, finalState, {bIdx, hv});
  }, kStateWarps * 32);
  rewriter.replaceOp(
      op, ValueRange{forwardValues
                         ? op.getU()
                         : e.toTensor(newValues, op.getNewValues().getType()),
                     e.toTensor(states, op.getChunkStates().getType()),
                     e.toTensor(finalState, op.getFinalState().getType())});
  return success();
}

struct ChunkStatePassToGPU : OpRewritePattern<ChunkStatePassOp> {
  ChunkStatePassToGPU(MLIRContext *ctx, const ChunkedLoweringContext &context)
      : OpRewritePattern(ctx), context(context) {}
  LogicalResult matchAndRewrite(ChunkStatePassOp op,
                                PatternRewriter &rewriter) const override {
    return lowerChunkStatePass(op, context.getMmaType(op), context.getTarget(),
                               rewriter);
  }
  const ChunkedLoweringContext &context;
};

} // namespace

void populateChunkStatePassToGPUPatterns(RewritePatternSet &patterns,
                                         const ChunkedLoweringContext &context) {
  patterns.add<ChunkStatePassToGPU>(patterns.getContext(), context);
}

} // namespace mlir::linattn::kernel
