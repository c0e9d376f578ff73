//===- ChunkStatePassToGPU.cpp - linattn.chunk_state_pass to a kernel -----===//
//
// A block per 32 value columns of one (sequence, value head): the state S^T
// lives in the warps' accumulator registers across a sequential loop over
// 64-row steps, each step's inputs staged by cp.async stages ahead. Per
// step (DESIGN.md section 2, with G the in-chunk cumulative log gate and
// G_C its value at the chunk's last token):
//
//   a. D^T = U^T - S^T W^T           (the new values; D = U without W)
//   b. D leaves (or is u itself)
//   c. S^T = exp(G_C) S^T + D'^T K,  D' = diag(exp(G_C - G)) D
//
// Two producer warps after the compute warps issue the stages' copies in
// and the staged outputs' copies out, synchronised by mbarriers (the wide
// 64-column blocks' compute warps issue their own).
//
// What varies (W's form, the gates, what goes through shared memory) is
// decided by StatePassPlan before any IR; StatePassKernel emits the phases.
//
//===----------------------------------------------------------------------===//

#include "StatePassPlan.h"

#include "../ChunkedToGPUPatterns.h"
#include "../Kernel/Gates.h"
#include "../Kernel/MmaEmitter.h"
#include "../KernelSupport.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <optional>

namespace mlir::linattn::kernel {
namespace {

/// The state pass's buffers and run-time sizes, made on the host before the
/// launch.
struct StatePassOperands {
  Value keys, u, w, gates, initialState;    ///< inputs (w, gates optional)
  Value newValues, states, finalState;      ///< results (newValues optional)
  Value queries, output;                    ///< where the plan forms outputs
  Value seqLen, numChunks, numSteps, numSegments;
};

/// A chunk's staged inputs.
struct Stage {
  Value w, k, u, g;
};

/// Emits the state pass kernel's body from its plan, phase by phase.
class StatePassKernel {
public:
  StatePassKernel(const StatePassPlan &plan, const StatePassOperands &io,
                  MmaEmitter &k)
      : p(plan), io(io), k(k), b(k.b), e(k.e) {}

  /// The whole body: place the block, load S, prefetch, loop over the
  /// steps, drain and store the final state.
  void emit();

private:
  /// The block's (columns, head, sequence[, segment]) and the warp's
  /// columns and keys.
  void placeBlock();
  /// The staged inputs of step n in its ring slot (n mod stages), or in
  /// ring slot `slot`.
  Stage stageAt(Value n);
  Stage stageIn(Value slot);
  /// Starts the copies of step n into its ring slot, or `slot` (rows past
  /// the sequence, or every row of a step past the last, arrive as zeros)
  /// and closes their group.
  Value prefetch(Value n, Value slot = Value());
  /// With producer warps: their loop over the block's steps (each step's
  /// copies in, and step j - stages' staged outputs out), and the
  /// mbarriers (a stage's full: the producers' copies landed; empty: the
  /// compute warps read it; an output buffer's: the producers copied it
  /// out).
  void emitProducer(Value steps);
  /// With formsOutput: the output warps' loop over the block's steps (each
  /// step's output from its stage and staged S_n, D_n), and the mbarriers
  /// it arrives on (a stage's "output done"; an output buffer's free).
  void emitOutputWarps(Value steps);
  Value outputDoneBarrier(Value slot);
  /// The output warps' Q buffer of step n: [64][qStride], buffer n mod 2.
  Value queryBuffer(Value n);
  /// Output warp `warp`'s 16 rows of step n's queries into Q buffer n mod 2
  /// (rows past T as zeros), by the warp's lanes, and their copy group.
  void copyQueryRows(Value n, Value warp);
  /// O for the warp's rows m0.. of step n and the block's columns, stored.
  void formOutput(Value n, Value slot, Value m0);
  void flushStep(Value m);
  Value mbarrierAt(Value index);
  Value fullBarrier(Value slot);
  Value emptyBarrier(Value slot);
  /// The staged outputs' buffer `parity` copied out by the producer.
  Value outFreeBarrier(Value parity);
  /// Waits on `bar`, one of a ring of `period` slots that step j uses in
  /// round j / period, for the phase of round j / period - lag: its parity
  /// (j / period + lag) mod 2 (lag 1: the slot's previous use).
  void waitForRound(Value bar, Value j, int64_t period, int64_t lag);
  /// S^T's element i of accumulator tile kt: (key, value column).
  std::pair<Value, Value> stateIndex(int64_t kt, int64_t i);
  /// The warp's S^T tiles from the initial state (zero in a segment past
  /// the first).
  SmallVector<Value> loadInitialState();
  void storeState(ValueRange flat, Value dst, SmallVector<Value> prefix);
  /// The staged output buffers of step n: S_n and D_n.
  std::pair<Value, Value> outputsAt(Value n);
  /// Whether step n starts its (long) chunk.
  Value startsChunk(Value n);
  /// Moves the insertion point into a branch taken where step n starts its
  /// chunk (no branch for 64-token chunks); the caller holds a guard.
  void onlyAtChunkStart(Value n);
  Value chunkOf(Value n);
  /// Copies step m's staged S (if m starts a chunk) and D_m out.
  void flushOutputs(Value m);
  /// One step of the chunk loop: the next carried values.
  SmallVector<Value> step(Value j, ValueRange carriedIn);
  /// The chunk state before step n (the state before a chunk's first step).
  void storeChunkState(Value n, ValueRange flat);
  /// a. D^T = U^T - S^T W^T, the warp's partial over its keys.
  SmallVector<SmallVector<Value>> newValues(const Stage &st, ValueRange flat);
  /// b. The new values D of step n, rows below `valid`.
  void writeNewValues(ArrayRef<SmallVector<Value>> d, Value n, ChunkRows rows);
  /// c. S^T = exp(G_C) S^T + D'^T K: the next S^T tiles.
  SmallVector<Value> updateState(const Stage &st, ValueRange flat,
                                 SmallVector<SmallVector<Value>> d, Value n,
                                 ChunkRows rows, Value lastRow,
                                 ValueRange carriedIn, Value &gLast);
  /// D'^T's A fragment of k-step ks straight from the staged U.
  SmallVector<Value> directFragment(const Stage &st, int64_t ks, Value gLast);
  /// Row gates: row t's decay exp(G_C - G_t) (`gLast` is G_C), zero past
  /// the chunk's valid rows.
  Value rowDecay(const Stage &st, ChunkRows rows, Value gLast, Value t);
  /// Row gates with W: rowDecay of the rows t = accCol(8 rt, odd) this
  /// thread's D tiles hold, at [2 rt + odd].
  SmallVector<Value> rowDecays(const Stage &st, ChunkRows rows, Value gLast);

  const StatePassPlan &p;
  const StatePassOperands &io;
  MmaEmitter &k;
  ImplicitLocOpBuilder &b;
  LoopEmitter &e;

  // The block and the warp.
  Value hv, bIdx, h, segment;
  Value firstStep, endStep, stepLimit; ///< the block's steps and rows
  Value columnGroup, keyPart;
  Value vLocal, vGlobal, key0, v0; ///< the warp's columns and keys
  /// A ragged plan's: the block's columns in V (64, or 32 for the last
  /// block), and whether the warp's 16 columns are (a whole column group
  /// lies in or past V, V a multiple of 32).
  Value blockColumnsIn, warpColumnsIn;
  /// The maps: whether the block's columns are A_s's (from I, with U = 0),
  /// and U's column of the block's first (E_s's columns).
  Value transitionColumns, u0;
  Value firstGroup;                ///< the first prefetch's copy group
};

void StatePassKernel::placeBlock() {
  Block *body = b.getInsertionBlock();
  Value vTile = body->getArgument(0);
  hv = body->getArgument(1);
  bIdx = body->getArgument(2);
  // The block's steps [firstStep, endStep): all of them, or its segment's;
  // rows past endStep are prefetched as zeros (the next segment's block
  // reads them).
  firstStep = e.index(0);
  endStep = io.numSteps;
  stepLimit = io.seqLen;
  if (p.segmentChunks) {
    segment = arith::RemUIOp::create(b, bIdx, io.numSegments);
    bIdx = arith::DivUIOp::create(b, bIdx, io.numSegments);
    firstStep = e.mulIndex(segment, e.index(p.segmentSteps));
    endStep = e.minIndex(e.addIndex(firstStep, e.index(p.segmentSteps)),
                         io.numSteps);
    stepLimit = e.minIndex(io.seqLen, e.mulIndex(endStep, e.index(kChunk)));
  }
  h = e.qkHead(hv, p.numVHeads, p.numQKHeads);
  // The warp's 16 value columns (vLocal within the block's, vGlobal in V)
  // and its keys [key0, key0 + keysPerWarp).
  columnGroup = arith::DivUIOp::create(b, k.warp, e.index(kStateKeySplit));
  keyPart = arith::RemUIOp::create(b, k.warp, e.index(kStateKeySplit));
  vLocal = e.mulIndex(columnGroup, e.index(16));
  vGlobal = e.addIndex(e.mulIndex(vTile, e.index(p.block.columns)), vLocal);
  key0 = e.mulIndex(keyPart, e.index(p.keysPerWarp));
  v0 = e.mulIndex(vTile, e.index(p.block.columns));
  u0 = v0;
  if (p.role == StatePassPlan::Role::SegmentMaps) {
    transitionColumns = k.ult(v0, e.index(p.K));
    u0 = k.select(transitionColumns, e.index(0), e.subIndex(v0, e.index(p.K)));
  }
  if (p.ragged()) {
    blockColumnsIn = e.minIndex(e.index(p.block.columns),
                                e.subIndex(e.index(p.columns), v0));
    warpColumnsIn = k.ult(vGlobal, e.index(p.columns));
  }
}

Stage StatePassKernel::stageAt(Value n) {
  return stageIn(arith::RemUIOp::create(b, n, e.index(p.stages)));
}

Stage StatePassKernel::stageIn(Value slot) {
  const StatePassPlan::Stage &s = p.stage;
  Value base = e.mulIndex(slot, e.index(s.bytes()));
  auto at = [&](int64_t offset) { return e.addIndex(base, e.index(offset)); };
  Stage st;
  if (p.hasW())
    st.w = k.tile(base, kChunk, s.wStride, p.wElem);
  st.k = k.tile(at(s.kOffset()), kChunk, s.kStride, p.kElem);
  st.u = k.tile(at(s.uOffset()), kChunk, s.uStride, p.uElem);
  if (p.hasGates())
    st.g = k.tile(at(s.gOffset()), s.gateRows, s.gateCols, b.getF32Type());
  return st;
}

Value StatePassKernel::prefetch(Value n, Value slot) {
  auto [t0, valid] = chunkRows(e, n, stepLimit);
  Stage st = slot ? stageIn(slot) : stageAt(n);
  Value zero = e.index(0);
  int64_t K = p.K;
  if (p.hasW())
    k.copyRowsAsync(st.w, zero, p.stage.wCols, t0, valid, io.seqLen, io.w,
                    [&](Value t, Value c) -> SmallVector<Value> {
      if (p.w == StatePassPlan::WForm::Split) // staged column c: part c / K, key c % K
        return {bIdx, t, hv, arith::DivUIOp::create(b, c, e.index(K)),
                arith::RemUIOp::create(b, c, e.index(K))};
      return {bIdx, t, hv, c};
    }, kChunk, p.narrowRows);
  bool decayedKeys = p.decay == StatePassPlan::Decay::DecayedKeys;
  k.copyRowsAsync(st.k, zero, K, t0, valid, io.seqLen, io.keys,
                  [&](Value t, Value c) -> SmallVector<Value> {
    return {bIdx, t, decayedKeys ? hv : h, c};
  }, kChunk, p.narrowRows);
  // A_s's columns stage U = 0: every row arrives as zeros.
  k.copyRowsAsync(st.u, zero, p.block.columns, t0,
                  transitionColumns ? k.select(transitionColumns, zero, valid)
                                    : valid,
                  io.seqLen, io.u,
                  [&](Value t, Value c) -> SmallVector<Value> {
    return {bIdx, t, hv, e.addIndex(u0, c)};
  }, kChunk, p.narrowRows, blockColumnsIn);
  if (decayedKeys) // chunk n's row of G_C (zeros past the last chunk)
    k.copyRowsAsync(st.g, zero, K, n,
                    k.select(k.ult(n, io.numChunks), e.index(1), e.index(0)),
                    io.numChunks, io.gates,
                    [&](Value chunkIdx, Value c) -> SmallVector<Value> {
      return {bIdx, chunkIdx, hv, c};
    }, /*rows=*/1);
  else if (p.hasGates())
    k.copyRowsAsync(st.g, zero, p.stage.gateCols, t0, valid, io.seqLen,
                    io.gates, [&](Value t, Value c) -> SmallVector<Value> {
      if (p.perKey())
        return {bIdx, t, hv, c};
      return {bIdx, t, hv};
    }, kChunk, p.narrowRows);
  return k.commitCopies();
}

// S^T of the warp's columns and keys is carried as keyTiles accumulator
// tiles: element i of tile kt is S[key0 + accCol(8 kt, i)][vGlobal +
// accRow(0, i)]. Flattened: tile kt at 4 kt.
std::pair<Value, Value> StatePassKernel::stateIndex(int64_t kt, int64_t i) {
  return {e.addIndex(key0, k.accCol(8 * kt, i)),
          e.addIndex(vGlobal, k.accRow(e.index(0), i))};
}

SmallVector<Value> StatePassKernel::loadInitialState() {
  SmallVector<Value> init;
  // The maps start from [I | 0]: 1 where the column is the key's.
  if (p.role == StatePassPlan::Role::SegmentMaps) {
    for (int64_t kt = 0; kt < p.keyTiles; ++kt)
      for (int64_t i = 0; i < 4; ++i) {
        auto [key, v] = stateIndex(kt, i);
        init.push_back(k.select(
            arith::CmpIOp::create(b, arith::CmpIPredicate::eq, key, v),
            e.f32(1.0f), e.f32(0.0f)));
      }
    return init;
  }
  Value fromInitial = p.segmentChunks && !p.enteredSegments
                          ? arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                                  segment, e.index(0))
                                .getResult()
                          : Value();
  for (int64_t kt = 0; kt < p.keyTiles; ++kt)
    for (int64_t i = 0; i < 4; ++i) {
      auto [key, v] = stateIndex(kt, i);
      // A ragged block's columns past V read the last one (in bounds; their
      // state is never stored, and no other column reads it).
      if (p.ragged())
        v = e.minIndex(v, e.index(p.columns - 1));
      Value x = p.enteredSegments
                    ? e.loadF32(io.initialState, {bIdx, segment, hv, key, v})
                    : e.loadF32(io.initialState, {bIdx, hv, key, v});
      init.push_back(fromInitial ? k.select(fromInitial, x, e.f32(0.0f)) : x);
    }
  return init;
}

void StatePassKernel::storeState(ValueRange flat, Value dst,
                                 SmallVector<Value> prefix) {
  OpBuilder::InsertionGuard guard(b);
  if (warpColumnsIn)
    b.setInsertionPointToStart(
        scf::IfOp::create(b, warpColumnsIn, false).thenBlock());
  for (int64_t kt = 0; kt < p.keyTiles; ++kt)
    for (int64_t i = 0; i < 4; ++i) {
      auto [key, v] = stateIndex(kt, i);
      SmallVector<Value> idx = prefix;
      idx.append({key, v});
      e.storeFromF32(flat[4 * kt + i], dst, idx);
    }
}

// The output buffers of step n: S_n ([K][32] of the block's columns) then
// D_n ([64][32]), in the states' and new values' types.
std::pair<Value, Value> StatePassKernel::outputsAt(Value n) {
  Value parity = arith::RemUIOp::create(
      b, p.producerWarps ? e.subIndex(n, firstStep) : n, e.index(2));
  Value base = e.addIndex(e.index(p.outOffset),
                          e.mulIndex(parity, e.index(p.outBytes / 2)));
  return {p.stageStates ? k.tile(base, p.K, p.outStride, p.stateElem) : Value(),
          p.stageValues ? k.tile(e.addIndex(base, e.index(p.stateOutBytes)),
                                 kChunk, p.outStride, p.valueElem)
                        : Value()};
}

Value StatePassKernel::startsChunk(Value n) {
  assert(p.stepsPerChunk > 1 && "every step starts a 64-token chunk");
  return arith::CmpIOp::create(
      b, arith::CmpIPredicate::eq,
      arith::RemUIOp::create(b, n, e.index(p.stepsPerChunk)), e.index(0));
}

void StatePassKernel::onlyAtChunkStart(Value n) {
  if (p.stepsPerChunk > 1)
    b.setInsertionPointToStart(
        scf::IfOp::create(b, startsChunk(n), false).thenBlock());
}

Value StatePassKernel::chunkOf(Value n) {
  return p.stepsPerChunk == 1
             ? n
             : arith::DivUIOp::create(b, n, e.index(p.stepsPerChunk)).getResult();
}

void StatePassKernel::flushOutputs(Value m) {
  auto [sOut, dOut] = outputsAt(m);
  Value zero = e.index(0);
  if (sOut) {
    OpBuilder::InsertionGuard guard(b);
    onlyAtChunkStart(m);
    Value c = chunkOf(m);
    k.copyRowsOut(sOut, zero, p.K, p.block.columns, Value(), io.states,
                  [&](Value r, Value col) -> SmallVector<Value> {
      return {bIdx, c, hv, r, e.addIndex(v0, col)};
    }, /*byWarp=*/false, blockColumnsIn);
  }
  if (dOut) {
    ChunkRows rows = chunkRows(e, m, io.seqLen);
    k.copyRowsOut(dOut, zero, kChunk, p.block.columns, rows.valid, io.newValues,
                  [&](Value r, Value c) -> SmallVector<Value> {
      return {bIdx, e.addIndex(rows.t0, r), hv, e.addIndex(v0, c)};
    }, /*byWarp=*/false, blockColumnsIn);
  }
}

void StatePassKernel::storeChunkState(Value n, ValueRange flat) {
  OpBuilder::InsertionGuard guard(b);
  onlyAtChunkStart(n);
  if (!p.stageStates)
    return storeState(flat, io.states, {bIdx, chunkOf(n), hv});
  // The warp's S^T accumulator tiles, transposed: S's rows (keys) as they
  // are laid out in memory.
  Value sOut = outputsAt(n).first;
  for (int64_t kt = 0; kt < p.keyTiles; kt += 2)
    k.stmatrix4(sOut, e.addIndex(key0, e.index(8 * kt)), vLocal,
                flat.slice(4 * kt, 4), flat.slice(4 * kt + 4, 4),
                /*transposed=*/true);
}

// D^T = U^T - S^T W^T for the warp's 16 columns and the step's 64 rows
// (rowTiles tiles of 8 rows): each warp of the column group adds -S^T W^T
// over its keys, key part 0 onto U^T. A = -S^T comes from the state
// registers, B = W^T by ldmatrix from W's staged rows (an f32 W split as
// its fragments are loaded); rows past T are staged zeros, so D is 0 there.
SmallVector<SmallVector<Value>> StatePassKernel::newValues(const Stage &st,
                                                           ValueRange flat) {
  Type f32 = b.getF32Type();
  auto loadU = [&] {
    SmallVector<Value> u;
    for (int64_t rt = 0; rt < p.rowTiles; ++rt)
      for (int64_t i = 0; i < 4; ++i)
        u.push_back(e.loadF32(st.u, {k.accCol(8 * rt, i),
                                     e.addIndex(vLocal, k.accRow(e.index(0), i))}));
    return u;
  };
  SmallVector<Value> dFlat;
  if (p.directD)
    return {}; // step c reads D from the stage itself
  if (p.exchange) {
    // Key part 0 starts from U, the others from zero: a warp-uniform
    // branch instead of a select per element.
    auto ifOp = scf::IfOp::create(
        b, SmallVector<Type>(p.rowTiles * 4, f32),
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, keyPart, e.index(0)),
        /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    scf::YieldOp::create(b, loadU());
    b.setInsertionPointToStart(ifOp.elseBlock());
    scf::YieldOp::create(b, SmallVector<Value>(p.rowTiles * 4, e.f32(0.0f)));
    dFlat.append(ifOp.getResults().begin(), ifOp.getResults().end());
  } else {
    dFlat = loadU();
  }
  SmallVector<SmallVector<Value>> d;
  for (int64_t rt = 0; rt < p.rowTiles; ++rt)
    d.push_back(SmallVector<Value>(ArrayRef(dFlat).slice(4 * rt, 4)));
  if (!p.hasW())
    return d;
  for (int64_t ks = 0; ks < p.keysPerWarp / 16; ++ks) {
    SmallVector<Value> s0Tile(flat.slice(8 * ks, 4));
    SmallVector<Value> s1Tile(flat.slice(8 * ks + 4, 4));
    // A 16-bit W (rounded by the UT transform) meets S^T rounded once as
    // well: bench/model/bf16_intermediates.py puts the cost at <= 1e-4 of
    // o's error (T = 4096, delta and gated delta, soft and hard inputs),
    // for 32 of the warp's 128 products per chunk. So does a split W
    // (negeig): S^T hi against W's hi and lo, two products instead of the
    // three of a split S (o's worst error on the H200 check 4.09e-3 ->
    // 4.18e-3, state pass -7% at T = 16384: NOTES c28). An f32 W (f32
    // keys) keeps both split: hi hi + hi lo + lo hi.
    auto [aHi, aLo] = k.fragmentAFromAcc(s0Tile, s1Tile, /*negate=*/true,
                                         /*split=*/!p.wIsOperand());
    if (p.wIsOperand()) {
      bool splitW = p.w == StatePassPlan::WForm::Split;
      Value k0 = e.addIndex(key0, e.index(16 * ks));
      for (int64_t rt = 0; rt < p.rowTiles; rt += 2) {
        // B^T = W: rows 8 rt .. 8 rt + 15 (two n-tiles) at once; a split
        // W's lo part K columns to the right.
        SmallVector<Value> bFrag = k.fragB2({st.w}, 8 * rt, k0);
        SmallVector<Value> bLoFrag;
        if (splitW)
          bLoFrag = k.fragB2({st.w}, 8 * rt, e.addIndex(k0, e.index(p.K)));
        for (int64_t j = 0; j < 2; ++j)
          d[rt + j] = k.mmaSplit(aHi, aLo, ArrayRef(bFrag).slice(2 * j, 2),
                                 splitW ? ArrayRef(bLoFrag).slice(2 * j, 2)
                                        : ArrayRef<Value>(),
                                 d[rt + j]);
      }
      continue;
    }
    for (int64_t rt = 0; rt < p.rowTiles; ++rt) {
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
  return d;
}

// The new values D for rows below `valid`; the warps of a column group take
// turns by row tile (staged: key part p stages the p-th run of row tiles).
void StatePassKernel::writeNewValues(ArrayRef<SmallVector<Value>> d, Value n,
                                     ChunkRows rows) {
  int64_t tilesPerPart = p.rowTiles / kStateKeySplit;
  if (p.stageValues) {
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
    return;
  }
  for (int64_t rt = 0; !p.forwardValues && rt < p.rowTiles; ++rt)
    for (int64_t odd = 0; odd < 2; ++odd) {
      Value t = k.accCol(8 * rt, odd);
      Value store = k.ult(t, rows.valid);
      if (warpColumnsIn)
        store = arith::AndIOp::create(b, store, warpColumnsIn);
      if (kStateKeySplit > 1)
        store = arith::AndIOp::create(
            b, store,
            arith::CmpIOp::create(b, arith::CmpIPredicate::eq, keyPart,
                                  e.index(rt % kStateKeySplit)));
      auto ifOp = scf::IfOp::create(b, store, false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      for (int64_t i : {odd, odd + 2})
        e.storeFromF32(d[rt][i], io.newValues,
                       {bIdx, e.addIndex(rows.t0, t), hv,
                        e.addIndex(vGlobal, k.accRow(e.index(0), i))});
    }
}

// Register j of the fragment holds rows 16 ks + 8 (j / 2) + 2 quad + {0, 1}
// of column vLocal + group + 8 (j % 2); each row pair's decays are taken
// once for both registers that share it. Here each thread takes its own
// rows' exps, next to the k-step's ldmatrix: the decays shared by shuffles
// (rowDecays) cost the short step of the kernels without W up to 7%,
// taken first or before the update (bench/NOTES.md s3).
SmallVector<Value> StatePassKernel::directFragment(const Stage &st, int64_t ks,
                                                   Value gLast) {
  SmallVector<Value> pairs = k.ldmatrix4Pairs(
      {st.u, /*transposed=*/true}, vLocal, e.index(16 * ks), /*swap=*/false);
  SmallVector<Value> regs;
  auto f32x2 = VectorType::get({2}, b.getF32Type());
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
}

// A row past T takes decay 0 (its D is finite: U and W arrive as zeros
// there), one select a row instead of one an element.
Value StatePassKernel::rowDecay(const Stage &st, ChunkRows rows, Value gLast,
                                Value t) {
  Value gt = memref::LoadOp::create(b, st.g, ValueRange{t, e.index(0)});
  return k.select(k.ult(t, rows.valid), k.exp(e.sub(gLast, gt)), e.f32(0.0f));
}

// Each lane takes two rows' exp and the others come by shuffles
// (MmaEmitter::perAccColumnShared): 2 exps a thread where each took its 16
// rows' own.
SmallVector<Value> StatePassKernel::rowDecays(const Stage &st, ChunkRows rows,
                                              Value gLast) {
  return k.perAccColumnShared(
      [&](Value t) { return rowDecay(st, rows, gLast, t); });
}

// S^T = exp(G_C) S^T + D'^T K with D' = diag(exp(G_C - G_t)) D (G_C the
// last valid row's gate): the decay goes onto the fp32 D, so the keys stay
// exact and D' alone is rounded (or split: StatePassPlan::splitUpdate).
// Rows past T take a zero decay, whatever their exp came to. Per key, the
// keys are decayed instead (K' = K exp(G_C - G), staged or decayed in
// place) and the state by exp(G_C) per key.
SmallVector<Value> StatePassKernel::updateState(
    const Stage &st, ValueRange flat, SmallVector<SmallVector<Value>> d,
    Value n, ChunkRows rows, Value lastRow, ValueRange carriedIn, Value &gLast) {
  using Decay = StatePassPlan::Decay;
  if (p.decay == Decay::Keys)
    k.barrier(); // every thread's K' is decayed
  bool rowGates = p.decay == Decay::Rows;
  if (rowGates) {
    gLast = memref::LoadOp::create(b, st.g, ValueRange{lastRow, e.index(0)});
    if (p.hasW()) {
      SmallVector<Value> decays = rowDecays(st, rows, gLast);
      for (int64_t rt = 0; rt < p.rowTiles; ++rt)
        for (int64_t i = 0; i < 4; ++i) // element i is row accCol(8 rt, i)
          d[rt][i] = e.mul(d[rt][i], decays[2 * rt + i % 2]);
    } else if (!p.directD) {
      // Without W (a short step) each thread takes its own rows' exps.
      for (int64_t rt = 0; rt < p.rowTiles; ++rt)
        for (int64_t odd = 0; odd < 2; ++odd) {
          Value decay = rowDecay(st, rows, gLast, k.accCol(8 * rt, odd));
          for (int64_t i : {odd, odd + 2})
            d[rt][i] = e.mul(d[rt][i], decay);
        }
    }
  }
  SmallVector<SmallVector<Value>> acc;
  Value stateDecay;
  if (rowGates) {
    // G_last minus the gate the step starts from: 0 at a chunk's start,
    // the previous step's G_last within a long chunk.
    Value gBase = p.carryGateBase
                      ? k.select(startsChunk(n), e.f32(0.0f), carriedIn.back())
                      : Value();
    stateDecay = k.exp(gBase ? e.sub(gLast, gBase) : gLast);
  }
  for (int64_t kt = 0; kt < p.keyTiles; ++kt) {
    SmallVector<Value> tile(flat.slice(4 * kt, 4));
    if (stateDecay)
      for (Value &x : tile)
        x = e.mul(x, stateDecay);
    // Per key: elements odd and odd + 2 of tile kt are S^T[v][key] of one
    // key, decayed by exp(G_C[key]).
    for (int64_t odd = 0; p.perKey() && odd < 2; ++odd) {
      Value key = stateIndex(kt, odd).first;
      Value gRow = p.decay == Decay::DecayedKeys ? e.index(0) : lastRow;
      Value decay =
          k.exp(memref::LoadOp::create(b, st.g, ValueRange{gRow, key}));
      for (int64_t i : {odd, odd + 2})
        tile[i] = e.mul(tile[i], decay);
    }
    acc.push_back(tile);
  }
  for (int64_t ks = 0; ks < kChunk / 16; ++ks) {
    auto [aHi, aLo] =
        p.directD ? std::pair(directFragment(st, ks, gLast), SmallVector<Value>())
                  : k.fragmentAFromAcc(d[2 * ks], d[2 * ks + 1],
                                       /*negate=*/false, p.splitUpdate);
    for (int64_t kt = 0; kt < p.keyTiles; kt += 2) {
      // B = K (k = row, n = key): two key tiles per fragment load; f32
      // keys (the backward's normalised ones) split, so that the states
      // it recomputes are those of the keys its gradients take.
      SmallVector<Value> bLo;
      SmallVector<Value> bFrag =
          p.keysAreOperands
              ? k.fragB2({st.k, /*transposed=*/true}, key0, 8 * kt, 16 * ks)
              : k.fragB2FromF32Columns(st.k, key0, 8 * kt, 16 * ks, bLo);
      for (int64_t j = 0; j < 2; ++j)
        acc[kt + j] = k.mmaSplit(aHi, aLo, ArrayRef(bFrag).slice(2 * j, 2),
                                 bLo.empty() ? ArrayRef<Value>()
                                             : ArrayRef(bLo).slice(2 * j, 2),
                                 acc[kt + j]);
    }
  }
  SmallVector<Value> next;
  for (auto &tile : acc)
    next.append(tile.begin(), tile.end());
  return next;
}

SmallVector<Value> StatePassKernel::step(Value j, ValueRange carriedIn) {
  // Step j of the block's range (the unsegmented kernel's IR unchanged).
  Value n = p.segmentChunks ? e.addIndex(firstStep, j) : j;
  ValueRange flat = carriedIn.take_front(p.keyTiles * 4);
  ChunkRows rows = chunkRows(e, n, io.seqLen);
  // Step n has landed once at most stages - 2 newer groups are in flight;
  // the barrier makes every thread's copies visible and frees the stage of
  // step n - 1 for step n + stages - 1. With producer warps, step j's
  // slot is j mod stages, landed once its full barrier completes the
  // phase of its round (j / stages); the compute warps' barrier still
  // orders the exchange between steps.
  Value slot;
  if (p.producerWarps) {
    slot = arith::RemUIOp::create(b, j, e.index(p.stages));
    waitForRound(fullBarrier(slot), j, p.stages, /*lag=*/0);
  } else {
    k.waitCopies(firstGroup, p.stages - 2);
  }
  k.barrier();
  auto prefetchAhead = [&] { prefetch(e.addIndex(n, e.index(p.stages - 1))); };
  if (!p.prefetchLate && !p.producerWarps)
    prefetchAhead();
  Stage st = slot ? stageIn(slot) : stageAt(n);
  Value lastRow = e.subIndex(rows.valid, e.index(1));
  // Per-key gates: K' = K * exp(G_C - G) in place (step c's B operand),
  // each element once per block; the barrier before step c publishes it.
  if (p.decay == StatePassPlan::Decay::Keys)
    decayRows(k, st.k, st.k, st.g, rows.valid, [&](Value) { return lastRow; },
              p.K);
  if (p.producerWarps && (p.stageStates || p.stageValues)) {
    // The producers have copied out step j - 2's outputs, which used this
    // step's output buffer (its phase of round j / 2 - 1).
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(
        scf::IfOp::create(b, k.ult(e.index(1), j), false).thenBlock());
    waitForRound(outFreeBarrier(arith::RemUIOp::create(b, j, e.index(2))), j,
                 2, /*lag=*/1);
  } else if (p.stageStates || p.stageValues) {
    // Step n - 1's outputs, staged before the barrier.
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(
        scf::IfOp::create(b, k.ult(firstStep, n), false).thenBlock());
    flushOutputs(e.subIndex(n, e.index(1)));
  }
  if (p.writesOutputs)
    storeChunkState(n, flat);
  SmallVector<SmallVector<Value>> d = newValues(st, flat);
  if (p.exchange)
    d = sumKeyParts(k, p.exchangeOffset, p.block.warps, columnGroup, d,
                    /*ownFromRegisters=*/true);
  if (p.writesOutputs)
    writeNewValues(d, n, rows);
  Value gLast;
  SmallVector<Value> next =
      updateState(st, flat, std::move(d), n, rows, lastRow, carriedIn, gLast);
  // Late, the copies still go to step n - 1's slot: no warp reads it after
  // this step's barrier.
  if (p.prefetchLate)
    prefetchAhead();
  if (p.producerWarps) // this thread has read the stage
    k.mbarrierArrive(emptyBarrier(slot));
  if (p.carryGateBase)
    next.push_back(gLast);
  return next;
}

// The mbarriers after the output buffers: stages full, stages empty, then
// the two output buffers'.
Value StatePassKernel::mbarrierAt(Value index) {
  Value bars =
      k.tile(p.barrierOffset, p.barrierBytes / 8, 1, b.getI64Type());
  return k.sharedPointer(bars, index, e.index(0));
}

Value StatePassKernel::fullBarrier(Value slot) { return mbarrierAt(slot); }

void StatePassKernel::waitForRound(Value bar, Value j, int64_t period,
                                   int64_t lag) {
  Value round = arith::DivUIOp::create(b, j, e.index(period));
  if (lag)
    round = e.addIndex(round, e.index(lag));
  k.mbarrierWait(bar, arith::RemUIOp::create(b, round, e.index(2)));
}

Value StatePassKernel::emptyBarrier(Value slot) {
  return mbarrierAt(e.addIndex(slot, e.index(p.stages)));
}

Value StatePassKernel::outFreeBarrier(Value parity) {
  return mbarrierAt(e.addIndex(parity, e.index(2 * p.stages)));
}

Value StatePassKernel::outputDoneBarrier(Value slot) {
  return mbarrierAt(e.addIndex(slot, e.index(2 * p.stages + 2)));
}

// The producers copy block step m's staged outputs out, then free their
// buffer.
void StatePassKernel::flushStep(Value m) {
  flushOutputs(p.segmentChunks ? e.addIndex(firstStep, m) : m);
  k.mbarrierArrive(outFreeBarrier(arith::RemUIOp::create(b, m, e.index(2))));
}

// The producer threads copy step j into slot j mod stages once the compute
// warps have read the slot's previous round (empty barrier, phase round -
// 1), then arrive on its full barrier as their copies land, then copy step
// j - stages' staged outputs out (the compute warps staged them before
// their arrival on its empty barrier).
void StatePassKernel::emitProducer(Value steps) {
  Value tid = k.tid;
  int64_t threads = k.threads;
  k.tid = e.subIndex(tid, e.index(p.computeThreads()));
  k.threads = p.producerThreads();
  e.forEach(steps, [&](Value j) {
    Value slot = arith::RemUIOp::create(b, j, e.index(p.stages));
    Value reused = k.ult(e.index(p.stages - 1), j); // j >= stages
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(
          scf::IfOp::create(b, reused, false).thenBlock());
      // Read by the compute warps, and by the output warps after them.
      waitForRound(p.formsOutput ? outputDoneBarrier(slot) : emptyBarrier(slot),
                   j, p.stages, /*lag=*/1);
    }
    prefetch(p.segmentChunks ? e.addIndex(firstStep, j) : j, slot);
    k.copiesArrive(fullBarrier(slot));
    // Step j - stages, read (its empty barrier), has its outputs staged.
    if (p.copiesStagedOut()) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(
          scf::IfOp::create(b, reused, false).thenBlock());
      flushStep(e.subIndex(j, e.index(p.stages)));
    }
  });
  // The last steps' outputs: once each step is read.
  if (p.copiesStagedOut()) {
    Value first = e.subIndex(arith::MaxUIOp::create(b, steps, e.index(p.stages)),
                             e.index(p.stages));
    e.forEach(e.subIndex(steps, first), [&](Value i) {
      Value m = e.addIndex(first, i);
      waitForRound(emptyBarrier(arith::RemUIOp::create(b, m, e.index(p.stages))),
                   m, p.stages, /*lag=*/0);
      flushStep(m);
    });
  }
  k.waitAllCopies();
  k.tid = tid;
  k.threads = threads;
}

Value StatePassKernel::queryBuffer(Value n) {
  Value parity = arith::RemUIOp::create(b, n, e.index(2));
  return k.tile(e.addIndex(e.index(p.qOffset),
                           e.mulIndex(parity, e.index(p.qBufferBytes))),
                kChunk, p.qStride, p.qElem);
}

void StatePassKernel::copyQueryRows(Value n, Value warp) {
  ChunkRows rows = chunkRows(e, n, io.seqLen);
  Value m0 = e.mulIndex(warp, e.index(16));
  // The warp's rows below T: min(valid - m0, 16), none past valid.
  Value valid =
      k.select(k.ult(m0, rows.valid),
               e.minIndex(e.subIndex(rows.valid, m0), e.index(16)), e.index(0));
  Value buffer = queryBuffer(n);
  k.copyRowsAsync(
      buffer, m0, p.K, e.addIndex(rows.t0, m0), valid, io.seqLen, io.queries,
      [&](Value t, Value c) -> SmallVector<Value> {
        return {bIdx, t, h, c};
      },
      /*rows=*/16, p.narrowRows);
}

// O = scale r (diag(exp(G)) Q S_n + P D_n), P = Q K^T * exp(G_i - G_j) *
// causal, for the warp's rows [m0, m0 + 16) and the block's columns, as
// linattn.chunk_output's kernel forms it (P split into hi + lo for P D).
// The warp's Q fragments stay in registers for both products; P comes a
// 16-column block at a time, only for the blocks at or before the warp's
// rows (warp w: w + 1 of the four), each consumed as it is made.
void StatePassKernel::formOutput(Value n, Value slot, Value m0) {
  Stage st = stageIn(slot);
  auto [sOut, dOut] = outputsAt(n);
  ChunkRows rows = chunkRows(e, n, io.seqLen);
  Value qTile = queryBuffer(n);
  SmallVector<MmaEmitter::FragmentA> qFragments;
  for (int64_t k0 = 0; k0 < p.K; k0 += 16)
    qFragments.push_back({k.fragA({qTile}, m0, k0), {}});
  auto queries = [&](int64_t k0) { return qFragments[k0 / 16]; };
  bool rowGates = p.decay == StatePassPlan::Decay::Rows;
  auto gate = [&](Value r) {
    return memref::LoadOp::create(b, st.g, ValueRange{r, e.index(0)})
        .getResult();
  };
  int64_t nTiles = p.block.columns / 8;
  SmallVector<SmallVector<Value>> o = k.zeroAcc(nTiles);
  k.gemm(o, queries, Operand::of(sOut, Value(), /*transposed=*/true), p.K);
  if (rowGates)
    for (int64_t nt = 0; nt < nTiles; ++nt)
      for (int64_t i = 0; i < 4; ++i)
        o[nt][i] = e.mul(o[nt][i], k.exp(gate(k.accRow(m0, i))));
  // o += P_c D_c for the 16 columns c0.. of block c (and D's rows c0..).
  auto addBlock = [&](SmallVector<SmallVector<Value>> acc, int64_t c0) {
    SmallVector<SmallVector<Value>> scores = k.zeroAcc(2);
    k.gemm(scores, queries, Operand::of(st.k, Value()), p.K, c0);
    for (int64_t nt = 0; nt < 2; ++nt)
      for (int64_t i = 0; i < 4; ++i) {
        Value r = k.accRow(m0, i), c = k.accCol(c0 + 8 * nt, i);
        Value x = scores[nt][i];
        if (rowGates)
          x = e.mul(x, k.exp(e.sub(gate(r), gate(c))));
        Value causal =
            arith::CmpIOp::create(b, arith::CmpIPredicate::ule, c, r);
        scores[nt][i] = k.select(causal, x, e.f32(0.0f));
      }
    auto [aHi, aLo] =
        k.fragmentAFromAcc(scores[0], scores[1], /*negate=*/false);
    for (int64_t nt = 0; nt < nTiles; nt += 2) {
      SmallVector<Value> bFrag =
          k.fragB2({dOut, /*transposed=*/true}, 8 * nt, e.index(c0));
      for (int64_t j = 0; j < 2; ++j)
        acc[nt + j] = k.mmaSplit(aHi, aLo, ArrayRef(bFrag).slice(2 * j, 2),
                                 ArrayRef<Value>(), acc[nt + j]);
    }
    return acc;
  };
  o = addBlock(o, 0);
  for (int64_t c0 = 16; c0 < kChunk; c0 += 16) {
    // A warp-uniform branch: the warp's rows reach column block c0.
    SmallVector<Value> flat = flattenTiles(o);
    auto ifOp = scf::IfOp::create(b, TypeRange(ValueRange(flat)),
                                  k.ult(e.index(c0 - 1), m0), true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      scf::YieldOp::create(b, flattenTiles(addBlock(o, c0)));
      b.setInsertionPointToStart(ifOp.elseBlock());
      scf::YieldOp::create(b, flat);
    }
    o = unflattenTiles(ifOp.getResults());
  }
  std::optional<std::array<Value, 2>> norms;
  if (p.qL2norm)
    norms = k.accRowInverseNorms(qTile, Value(), m0, p.K, L2NormOp::kEpsilon);
  for (int64_t half = 0; half < 2; ++half) {
    Value rowScale =
        norms ? e.mul(e.f32(p.scale), (*norms)[half]) : e.f32(p.scale);
    for (SmallVector<Value> &tile : o)
      for (int64_t i : {2 * half, 2 * half + 1})
        tile[i] = e.mul(tile[i], rowScale);
  }
  for (int64_t nt = 0; nt < nTiles; ++nt)
    k.forEachPair(m0, nt, [&](Value r, Value c, int64_t i) {
      k.storePair(o[nt][i], o[nt][i + 1], io.output,
                  {bIdx, e.addIndex(rows.t0, r), hv, e.addIndex(v0, c)},
                  k.ult(r, rows.valid));
    });
}

// Output warp w copies its rows of step j + 1's queries while it forms step
// j's output: once its own copies of step j have landed (one group in
// flight), the compute warps have staged S_j and D_j (step j's empty
// barrier), and the stage still holds K and G (the producers refill it
// only after this warp's "output done").
void StatePassKernel::emitOutputWarps(Value steps) {
  Value tid = k.tid, warp = k.warp;
  int64_t threads = k.threads;
  int64_t before = p.computeThreads() + p.producerThreads();
  k.tid = k.lane;
  k.threads = 32;
  Value outputWarp = e.subIndex(warp, e.index(before / 32));
  Value m0 = e.mulIndex(outputWarp, e.index(16));
  Value fullWarp = arith::ConstantOp::create(b, b.getI32IntegerAttr(-1));
  auto blockStep = [&](Value j) {
    return p.segmentChunks ? e.addIndex(firstStep, j) : j;
  };
  copyQueryRows(blockStep(e.index(0)), outputWarp);
  Value group = k.commitCopies();
  e.forEach(steps, [&](Value j) {
    // Every lane is past step j - 1's reads of the buffer step j + 1 takes.
    NVVM::SyncWarpOp::create(b, fullWarp);
    Value next = e.addIndex(j, e.index(1));
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(
          scf::IfOp::create(b, k.ult(next, steps), false).thenBlock());
      copyQueryRows(blockStep(next), outputWarp);
    }
    k.commitCopies();
    k.waitCopies(group, 1);
    NVVM::SyncWarpOp::create(b, fullWarp);
    Value slot = arith::RemUIOp::create(b, j, e.index(p.stages));
    waitForRound(emptyBarrier(slot), j, p.stages, /*lag=*/0);
    formOutput(blockStep(j), slot, m0);
    k.mbarrierArrive(outFreeBarrier(arith::RemUIOp::create(b, j, e.index(2))));
    k.mbarrierArrive(outputDoneBarrier(slot));
  });
  k.waitAllCopies();
  k.tid = tid;
  k.threads = threads;
}

void StatePassKernel::emit() {
  placeBlock();
  Value steps = p.segmentChunks ? e.subIndex(endStep, firstStep) : io.numSteps;
  // With producer warps, the rest is the compute warps' branch.
  std::optional<OpBuilder::InsertionGuard> computeBranch;
  if (p.producerWarps) {
    // Thread 0 sets up the barriers; the last kProducerWarps warps are
    // the producers, the others compute under a barrier of their own.
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(
          scf::IfOp::create(b, k.ult(k.tid, e.index(1)), false).thenBlock());
      for (int64_t slot = 0; slot < p.stages; ++slot) {
        k.mbarrierInit(fullBarrier(e.index(slot)), p.producerThreads());
        k.mbarrierInit(emptyBarrier(e.index(slot)), p.computeThreads());
      }
      // The staged outputs' buffers are freed by whoever reads them.
      for (int64_t parity = 0; parity < 2; ++parity)
        k.mbarrierInit(outFreeBarrier(e.index(parity)),
                       p.formsOutput ? p.outputThreads() : p.producerThreads());
      for (int64_t slot = 0; p.formsOutput && slot < p.stages; ++slot)
        k.mbarrierInit(outputDoneBarrier(e.index(slot)), p.outputThreads());
    }
    k.barrier();
    auto ifOp = scf::IfOp::create(
        b, k.ult(k.tid, e.index(p.computeThreads())), /*withElse=*/true);
    computeBranch.emplace(b);
    b.setInsertionPointToStart(ifOp.elseBlock());
    if (p.formsOutput) {
      auto roles = scf::IfOp::create(
          b, k.ult(k.tid, e.index(p.computeThreads() + p.producerThreads())),
          /*withElse=*/true);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(roles.thenBlock());
      emitProducer(steps);
      b.setInsertionPointToStart(roles.elseBlock());
      emitOutputWarps(steps);
    } else {
      emitProducer(steps);
    }
    b.setInsertionPointToStart(ifOp.thenBlock());
    k.threads = p.computeThreads();
    k.barrierThreads = p.computeThreads();
  }
  SmallVector<Value> init = loadInitialState();
  // A long chunk's second step decays the state by exp(G_last - G_63): its
  // cumulative gates run from the chunk's start, and the first step's last
  // one (G_63) is carried after the state.
  if (p.carryGateBase)
    init.push_back(e.f32(0.0f));
  auto blockStep = [&](int64_t j) {
    return p.segmentChunks ? e.addIndex(firstStep, e.index(j)) : e.index(j);
  };
  if (!p.producerWarps) {
    firstGroup = prefetch(blockStep(0));
    for (int64_t ahead = 1; ahead + 1 < p.stages; ++ahead)
      prefetch(blockStep(ahead));
  }
  ValueRange carried = e.forEachReduce(
      steps, init,
      [&](Value j, ValueRange carriedIn) { return step(j, carriedIn); });
  ValueRange final = carried.take_front(p.keyTiles * 4);
  // The prefetches past the final step (all zero-size) drain; the last
  // step's staged outputs leave.
  if (!p.producerWarps)
    k.waitCopies(firstGroup, 0);
  if (!p.producerWarps && (p.stageStates || p.stageValues)) {
    k.barrier();
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(
        scf::IfOp::create(b, k.ult(firstStep, endStep), false).thenBlock());
    flushOutputs(e.subIndex(endStep, e.index(1)));
  }
  if (p.segmentChunks)
    storeState(final, io.finalState, {bIdx, segment, hv});
  else
    storeState(final, io.finalState, {bIdx, hv});
}

/// The inputs every state pass kernel reads (k, u, w, gates) and its run-time
/// sizes, from `op`'s operands.
StatePassOperands stagedInputs(const StatePassPlan &p, ImplicitLocOpBuilder &b,
                               LoopEmitter &e, Value k, Value u, Value w,
                               Value gates) {
  StatePassOperands io;
  io.keys = e.toBuffer(k);
  io.u = e.toBuffer(u);
  io.w = w ? e.toBuffer(w) : Value();
  io.gates = gates ? e.toBuffer(gates) : Value();
  io.seqLen = e.dim(io.keys, 1);
  io.numChunks = arith::CeilDivUIOp::create(b, io.seqLen, e.index(p.chunk));
  io.numSteps = arith::CeilDivUIOp::create(b, io.seqLen, e.index(kChunk));
  if (p.segmentChunks)
    io.numSegments = e.segmentCount(io.numChunks, *p.segmentChunks);
  return io;
}

/// Launches the kernel: a block per (block.columns of the plan's columns,
/// value head, sequence[, segment]).
void launchStatePass(const StatePassPlan &p, const StatePassOperands &io,
                     ImplicitLocOpBuilder &b, LoopEmitter &e) {
  Value batch = e.dim(io.keys, 0);
  Value zBlocks = p.segmentChunks ? e.mulIndex(batch, io.numSegments) : batch;
  emitLaunch(b, {e.index(p.blocksAcross()), e.index(p.numVHeads),
                 zBlocks},
             p.sharedBytes(), p.mmaElem, [&](MmaEmitter &k) {
    StatePassKernel(p, io, k).emit();
  }, p.threads());
}

/// The chunk state pass's outputs: the new values (unless they are u
/// itself), the chunk states and the final state(s).
void allocateOutputs(ChunkStatePassOp op, const StatePassPlan &p,
                     StatePassOperands &io, LoopEmitter &e) {
  io.initialState = e.toBuffer(op.getInitialState());
  Value batch = e.dim(io.keys, 0);
  Value hvDim = e.index(p.numVHeads);
  if (!p.forwardValues)
    io.newValues = e.allocFor(op.getNewValues().getType(),
                              {batch, io.seqLen, hvDim, e.index(p.V)});
  io.states = e.allocFor(op.getChunkStates().getType(),
                         {batch, io.numChunks, hvDim, e.index(p.K), e.index(p.V)});
  io.finalState =
      p.segmentChunks
          ? e.allocFor(op.getFinalState().getType(),
                       {batch, io.numSegments, hvDim, e.index(p.K), e.index(p.V)})
          : e.allocFor(op.getFinalState().getType(),
                       {batch, hvDim, e.index(p.K), e.index(p.V)});
}

SmallVector<Value> results(ChunkStatePassOp op, const StatePassPlan &p,
                           const StatePassOperands &io, LoopEmitter &e) {
  return {p.forwardValues ? op.getU()
                          : e.toTensor(io.newValues, op.getNewValues().getType()),
          e.toTensor(io.states, op.getChunkStates().getType()),
          e.toTensor(io.finalState, op.getFinalState().getType())};
}

/// The state pass with the outputs in it: the output and the final state
/// (q is its one input beyond the pass's).
void allocateOutputs(ChunkStatePassOutputOp op, const StatePassPlan &p,
                     StatePassOperands &io, LoopEmitter &e) {
  io.initialState = e.toBuffer(op.getInitialState());
  io.queries = e.toBuffer(op.getQ());
  Value batch = e.dim(io.keys, 0);
  Value hvDim = e.index(p.numVHeads);
  io.output = e.allocFor(op.getOutput().getType(),
                         {batch, io.seqLen, hvDim, e.index(p.V)});
  io.finalState = e.allocFor(op.getFinalState().getType(),
                             {batch, hvDim, e.index(p.K), e.index(p.V)});
}

SmallVector<Value> results(ChunkStatePassOutputOp op, const StatePassPlan &,
                           const StatePassOperands &io, LoopEmitter &e) {
  return {e.toTensor(io.output, op.getOutput().getType()),
          e.toTensor(io.finalState, op.getFinalState().getType())};
}

/// The segment maps store only every segment's end, [A_s | E_s].
void allocateOutputs(SegmentMapsOp op, const StatePassPlan &p,
                     StatePassOperands &io, LoopEmitter &e) {
  io.finalState = e.allocFor(op.getMaps().getType(),
                             {e.dim(io.keys, 0), io.numSegments,
                              e.index(p.numVHeads), e.index(p.K),
                              e.index(p.columns)});
}

SmallVector<Value> results(SegmentMapsOp op, const StatePassPlan &,
                           const StatePassOperands &io, LoopEmitter &e) {
  return {e.toTensor(io.finalState, op.getMaps().getType())};
}

/// linattn.chunk_state_pass or linattn.segment_maps: the state pass's
/// kernel, planned for the op.
template <typename OpTy>
struct StatePassToGPU : OpRewritePattern<OpTy> {
  StatePassToGPU(MLIRContext *ctx, const ChunkedLoweringContext &context)
      : OpRewritePattern<OpTy>(ctx), context(context) {}
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    FailureOr<StatePassPlan> plan =
        StatePassPlan::build(op, context.getMmaType(op), context.getTarget());
    if (failed(plan))
      return failure();
    if (context.explains())
      op.emitRemark() << "linattn GPU kernel for " << op->getName() << ": "
                      << plan->describe();
    rewriter.setInsertionPoint(op);
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    LoopEmitter e(b);
    StatePassOperands io = stagedInputs(*plan, b, e, op.getK(), op.getU(),
                                        op.getW(), op.getGates());
    allocateOutputs(op, *plan, io, e);
    launchStatePass(*plan, io, b, e);
    rewriter.replaceOp(op, results(op, *plan, io, e));
    return success();
  }
  const ChunkedLoweringContext &context;
};

} // namespace

void unfuseStatePassOutputsWithoutKernel(Operation *root,
                                         const GPUTargetInfo &target,
                                         bool explain) {
  SmallVector<ChunkStatePassOutputOp> fused;
  root->walk([&](ChunkStatePassOutputOp op) { fused.push_back(op); });
  for (ChunkStatePassOutputOp op : fused) {
    std::string why;
    {
      // The plan's error is the reason, not a failure: the pair runs.
      ScopedDiagnosticHandler capture(op.getContext(), [&](Diagnostic &d) {
        if (d.getSeverity() != DiagnosticSeverity::Error)
          return failure();
        why = d.str();
        return success();
      });
      if (succeeded(StatePassPlan::build(
              op, chunked_kernels::mmaTypeFor(elementOf(op.getK())), target)))
        continue;
    }
    if (explain)
      op.emitRemark() << "linattn GPU kernel for " << op->getName()
                      << ": none (" << why
                      << "); the state pass and a separate output kernel run";
    op.unfuse();
  }
}

void populateChunkStatePassToGPUPatterns(RewritePatternSet &patterns,
                                         const ChunkedLoweringContext &context) {
  patterns.add<StatePassToGPU<ChunkStatePassOp>, StatePassToGPU<SegmentMapsOp>,
               StatePassToGPU<ChunkStatePassOutputOp>>(patterns.getContext(),
                                                       context);
}

} // namespace mlir::linattn::kernel
