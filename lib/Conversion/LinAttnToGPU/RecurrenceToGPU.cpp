//===- RecurrenceToGPU.cpp - linattn.recurrence to a split-key kernel -----===//
//
// The recurrent strategy on a GPU (decode, and the shapes the tensor-core
// kernels do not take): the defining loop,
//
//   u_j = sum_i k_i S_ij,  S_ij <- a_i (S_ij - c k_i u_j) + b_t k_i v_j,
//   o_j = scale sum_i S_ij q_i,
//
// with each state column split over 4 lanes of one warp (8 where K above
// 128 is a multiple of 8: recurrent_kernel::lanesPerColumn), so that a lane
// holds at most 32 consecutive elements of it in registers (64 at such K
// that is not; the loop lowering's one thread per column holds all K and
// spills at K = 128) and the sums over i (u and o) finish with two or
// three shuffles. The state is read once and written
// once per call.
//
// The tokens' inputs are staged in shared memory kWindowTokens at a time,
// prepared once per block for its columns: q and k in f32, normalised
// where `qk_l2norm` asks (a warp per row) and q times scale, the gates
// exponentiated, beta, and v's block columns. A token's step then reads
// f32 operands from shared memory: no global load in the chain that
// carries the state from token to token, and none of the conversions,
// norms or exps repeated by every column's lanes. The first window's loads
// are issued ahead of the state's, so that a decode call waits on one round
// trip to global memory before its step.
//
//===----------------------------------------------------------------------===//

#include "Kernel/KernelEmitter.h"
#include "LinAttn/Conversion/LinAttnToGPU/TargetInfo.h"
#include "LinAttn/Conversion/Passes.h"
#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"
#include "LinAttn/Dialect/LinAttn/IR/TransitionKinds.h"
#include "LinAttn/Utils/LoopEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::linattn {
#define GEN_PASS_DEF_CONVERTLINATTNRECURRENCETOGPU
#include "LinAttn/Conversion/Passes.h.inc"

namespace {
using namespace kernel;

/// Tokens whose inputs are staged in shared memory at once: a decode or
/// speculative-verification call (T <= 8) stages its tokens once.
constexpr int64_t kWindowTokens = 8;
static_assert(recurrent_kernel::kBlockThreads == kThreads,
              "the cost model's column sets are the kernel's");
static_assert(kWindowTokens * kThreads / recurrent_kernel::kMaxLanesPerColumn %
                      kThreads ==
                  0,
              "v's staged columns are spread evenly over the block");
static_assert(kWindowTokens % kWarps == 0,
              "q's and k's staged rows are spread evenly over the warps");

/// How a block's lanes split its state columns, and where a staged row of
/// K keys keeps lane slice s's keys [s n, s n + n): at floats [s stride, s
/// stride + n), with stride = 4 (mod 32) so that the slices' 16-byte loads
/// of a quarter-warp fall in distinct banks.
struct LaneLayout {
  LaneLayout(int64_t K, int64_t V)
      : lanes(recurrent_kernel::lanesPerColumn(K)),
        columnsPerSet(kThreads / lanes),
        columnSets(recurrent_kernel::columnSets(K, V)),
        columnsPerBlock(recurrent_kernel::columnsPerBlock(K, V)),
        keysPerLane(K / lanes),
        sliceStride(keysPerLane + ((4 - keysPerLane) % 32 + 32) % 32) {}
  int64_t rowFloats() const { return lanes * sliceStride; }
  /// A thread holds one column of each of columnSets sets of columnsPerSet
  /// columns (columns c and c + columnsPerSet of the block): two where V is
  /// above one set, so that a token's q, k, gates and beta are read from
  /// shared memory once for both and its two sum chains overlap.
  int64_t lanes, columnsPerSet, columnSets, columnsPerBlock, keysPerLane,
      sliceStride;
};

/// Byte offsets of one window's staged inputs in shared memory (f32):
/// rows of keys in LaneLayout, [kWindowTokens] scalars, and the
/// block's v columns; -1 where the kind has none.
struct WindowLayout {
  int64_t q, k, keyDecay = -1, decay = -1, beta = -1, v, bytes;
};

/// The views of one window's staged inputs.
struct StagedWindow {
  Value q, k;     // [W][rowFloats]: q times scale (and its norm), k (normed)
  Value keyDecay; // [W][rowFloats]: exp(gate) per key (per-key gates)
  Value decay;    // [W]: exp(gate) (gates per head)
  Value beta;     // [W]
  Value v;        // [W][columnsPerBlock]
};

class RecurrenceKernel {
public:
  RecurrenceKernel(RecurrenceOp op, ImplicitLocOpBuilder &b)
      : op(op), b(b), e(b), kind(op.getKindInfo()),
        rows(op.getKeyDim(), op.getValueDim()) {}

  void run(RewriterBase &rewriter);

private:
  /// The sum of `x` over the lanes of a column.
  Value sumOverColumnLanes(Value x) {
    for (int32_t offset = 1; offset < rows.lanes; offset *= 2)
      x = e.add(x, gpu::ShuffleOp::create(b, x, offset, 32,
                                          gpu::ShuffleMode::XOR)
                       .getShuffleResult());
    return x;
  }

  /// sum_m x[m] y[m] over this lane's keys, in kPartialSums interleaved
  /// partial sums: a 32-key lane's dependent chain of FMAs is then 8 long
  /// instead of 32 (each token's two such sums are on its critical path).
  static constexpr int64_t kPartialSums = 4;
  Value laneDot(ArrayRef<Value> x, ArrayRef<Value> y) {
    SmallVector<Value> partial(std::min<int64_t>(kPartialSums, x.size()),
                               e.f32(0.0f));
    for (size_t m = 0; m < x.size(); ++m)
      partial[m % partial.size()] =
          math::FmaOp::create(b, x[m], y[m], partial[m % partial.size()]);
    return sumPartials(partial);
  }
  Value sumPartials(ArrayRef<Value> partial) {
    SmallVector<Value> level(partial.begin(), partial.end());
    while (level.size() > 1) {
      SmallVector<Value> next;
      for (size_t i = 0; i + 1 < level.size(); i += 2)
        next.push_back(e.add(level[i], level[i + 1]));
      if (level.size() % 2)
        next.push_back(level.back());
      level = next;
    }
    return level.front();
  }

  WindowLayout planWindow() const;
  StagedWindow viewWindow(const WindowLayout &at);
  /// This thread's share of the global loads that stage tokens [t0, t0 +
  /// valid) (valid >= 1), in the order storeWindow takes them; rows past
  /// `valid` load token t0 + valid - 1's values, which are never read.
  /// Loading is apart from storing so that the first window's loads can
  /// be issued ahead of the state's (a warp issues in order: a load after
  /// a use of an earlier load waits for it).
  SmallVector<Value> loadWindow(Value bIdx, Value h, Value hv, Value t0,
                                Value valid, Value firstColumn);
  /// Fills `w` from loadWindow's values: q and k in f32 (normalised where
  /// `qk_l2norm` asks, q times scale), the gates exponentiated, beta, v.
  void storeWindow(const StagedWindow &w, ArrayRef<Value> loads);
  /// The calling lane's K / 32 (rounded up) values of src[prefix..., :]:
  /// keys lane + 32 j, a key past K reading key K - 1.
  SmallVector<Value> loadKeyRow(Value src, SmallVector<Value> prefix);
  /// Row `row` of the staged tile `dst` from the warp's loadKeyRow values
  /// `xs`: each value x through map(x, norm), with norm = 1 / sqrt(sum of
  /// the row's squares + eps) where `normed` (keys past K count as 0 and
  /// are not stored).
  void storeKeyRow(Value dst, Value row, ArrayRef<Value> xs, bool normed,
                   function_ref<Value(Value, Value)> map);
  /// This lane's keys of staged row `row` (its slice, in 16-byte loads).
  SmallVector<Value> loadLaneSlice(Value tile, Value row);

  /// One token: the lane's slots of its columns after it (set by set, the
  /// token's q, k, gates and beta loaded once), and the outputs.
  SmallVector<Value> step(const StagedWindow &w, Value row, Value t, Value bIdx,
                          Value hv, ArrayRef<Value> columns, Value gamma,
                          ValueRange slots);

  RecurrenceOp op;
  ImplicitLocOpBuilder &b;
  LoopEmitter e;
  const TransitionKindInfo &kind;
  LaneLayout rows;
  Value q, k, v, gate, beta, initialState, outBuf, stateBuf;
  SmallVector<Value> isOutputLane; // per set: slice 0 of a column inside V
  Value sliceBase;     // this lane's slice's first float in a staged row
  SmallVector<Value> columnInBlock; // per set: this lane's column in the block
  KernelEmitter *kernel = nullptr;
};

WindowLayout RecurrenceKernel::planWindow() const {
  SharedLayout shared;
  int64_t W = kWindowTokens, rowBytes = rows.rowFloats() * 4;
  WindowLayout at;
  at.q = shared.take(W * rowBytes);
  at.k = shared.take(W * rowBytes);
  if (kind.decay == DecayForm::PerKey)
    at.keyDecay = shared.take(W * rowBytes);
  if (kind.decay == DecayForm::Scalar)
    at.decay = shared.take(W * 4);
  if (kind.hasRank1())
    at.beta = shared.take(W * 4);
  at.v = shared.take(W * rows.columnsPerBlock * 4);
  at.bytes = shared.size();
  return at;
}

StagedWindow RecurrenceKernel::viewWindow(const WindowLayout &at) {
  Type f32 = b.getF32Type();
  int64_t W = kWindowTokens;
  StagedWindow w;
  w.q = kernel->tile(at.q, W, rows.rowFloats(), f32);
  w.k = kernel->tile(at.k, W, rows.rowFloats(), f32);
  if (at.keyDecay >= 0)
    w.keyDecay = kernel->tile(at.keyDecay, W, rows.rowFloats(), f32);
  if (at.decay >= 0)
    w.decay = kernel->vec(at.decay, W, f32);
  if (at.beta >= 0)
    w.beta = kernel->vec(at.beta, W, f32);
  w.v = kernel->tile(at.v, W, rows.columnsPerBlock, f32);
  return w;
}

SmallVector<Value> RecurrenceKernel::loadKeyRow(Value src,
                                                SmallVector<Value> prefix) {
  int64_t K = op.getKeyDim(), perLane = (K + 31) / 32;
  SmallVector<Value> xs;
  prefix.push_back(Value());
  for (int64_t j = 0; j < perLane; ++j) {
    Value i = e.addIndex(kernel->lane, e.index(32 * j));
    prefix.back() = K % 32 ? e.minIndex(i, e.index(K - 1)) : i;
    xs.push_back(e.loadF32(src, prefix));
  }
  return xs;
}

void RecurrenceKernel::storeKeyRow(Value dst, Value row, ArrayRef<Value> xs,
                                   bool normed,
                                   function_ref<Value(Value, Value)> map) {
  int64_t K = op.getKeyDim();
  SmallVector<Value> keys, inside, values;
  for (size_t j = 0; j < xs.size(); ++j) {
    Value i = e.addIndex(kernel->lane, e.index(32 * j));
    Value in = K % 32 ? kernel->ult(i, e.index(K)) : Value();
    keys.push_back(i);
    inside.push_back(in);
    values.push_back(in ? kernel->select(in, xs[j], e.f32(0.0f)) : xs[j]);
  }
  Value norm;
  if (normed) {
    Value sum = e.f32(0.0f);
    for (Value x : values)
      sum = math::FmaOp::create(b, x, x, sum);
    norm = e.inverseNormOfSquares(kernel->warpSum(sum), L2NormOp::kEpsilon);
  }
  Value perLaneKeys = e.index(rows.keysPerLane);
  for (size_t j = 0; j < values.size(); ++j) {
    Value at = e.addIndex(
        e.mulIndex(arith::DivUIOp::create(b, keys[j], perLaneKeys),
                   e.index(rows.sliceStride)),
        arith::RemUIOp::create(b, keys[j], perLaneKeys));
    auto store = [&] {
      memref::StoreOp::create(b, map(values[j], norm), dst,
                              ValueRange{row, at});
    };
    if (!inside[j]) {
      store();
      continue;
    }
    auto ifOp = scf::IfOp::create(b, inside[j], false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    store();
  }
}

SmallVector<Value> RecurrenceKernel::loadWindow(Value bIdx, Value h, Value hv,
                                                Value t0, Value valid,
                                                Value firstColumn) {
  int64_t W = kWindowTokens, V = op.getValueDim();
  Value lastRow = e.subIndex(valid, e.index(1));
  auto tokenOf = [&](Value row) {
    return e.addIndex(t0, e.minIndex(row, lastRow));
  };
  SmallVector<Value> loads;
  // The scalars of each token, thread i < W's (the others read row W - 1's).
  Value scalarToken = tokenOf(e.minIndex(kernel->tid, e.index(W - 1)));
  if (kind.decay == DecayForm::Scalar)
    loads.push_back(e.loadF32(gate, {bIdx, scalarToken, hv}));
  if (kind.hasRank1())
    loads.push_back(e.loadF32(beta, {bIdx, scalarToken, hv}));
  // q's and k's rows (and per-key gates'), a warp each.
  for (int64_t r0 = 0; r0 < W; r0 += kWarps) {
    Value t = tokenOf(e.addIndex(e.index(r0), kernel->warp));
    llvm::append_range(loads, loadKeyRow(q, {bIdx, t, h}));
    llvm::append_range(loads, loadKeyRow(k, {bIdx, t, h}));
    if (kind.decay == DecayForm::PerKey)
      llvm::append_range(loads, loadKeyRow(gate, {bIdx, t, hv}));
  }
  // v's block columns (a column past V reads column V - 1), element i of
  // the [W][columns] tile taken by thread i mod kThreads.
  int64_t columns = rows.columnsPerBlock;
  for (int64_t i0 = 0; i0 < W * columns; i0 += kThreads) {
    Value i = e.addIndex(e.index(i0), kernel->tid);
    Value row = arith::DivUIOp::create(b, i, e.index(columns));
    Value c = arith::RemUIOp::create(b, i, e.index(columns));
    Value column = e.minIndex(e.addIndex(firstColumn, c), e.index(V - 1));
    loads.push_back(e.loadF32(v, {bIdx, tokenOf(row), hv, column}));
  }
  return loads;
}

void RecurrenceKernel::storeWindow(const StagedWindow &w,
                                   ArrayRef<Value> loads) {
  int64_t W = kWindowTokens, perLane = (op.getKeyDim() + 31) / 32;
  auto take = [&](int64_t n) {
    ArrayRef<Value> taken = loads.take_front(n);
    loads = loads.drop_front(n);
    return taken;
  };
  Value gateT = w.decay ? take(1).front() : Value();
  Value betaT = w.beta ? take(1).front() : Value();
  bool normed = op.getQkL2norm();
  Value scale = e.f32(op.getEffectiveScale());
  for (int64_t r0 = 0; r0 < W; r0 += kWarps) {
    Value row = e.addIndex(e.index(r0), kernel->warp);
    storeKeyRow(w.q, row, take(perLane), normed, [&](Value x, Value norm) {
      return e.mul(x, norm ? e.mul(scale, norm) : scale);
    });
    storeKeyRow(w.k, row, take(perLane), normed,
                [&](Value x, Value norm) { return norm ? e.mul(x, norm) : x; });
    if (w.keyDecay)
      storeKeyRow(w.keyDecay, row, take(perLane), /*normed=*/false,
                  [&](Value x, Value) { return e.exp(x); });
  }
  int64_t columns = rows.columnsPerBlock;
  for (int64_t i0 = 0; i0 < W * columns; i0 += kThreads) {
    Value i = e.addIndex(e.index(i0), kernel->tid);
    Value row = arith::DivUIOp::create(b, i, e.index(columns));
    Value c = arith::RemUIOp::create(b, i, e.index(columns));
    memref::StoreOp::create(b, take(1).front(), w.v, ValueRange{row, c});
  }
  assert(loads.empty() && "storeWindow takes every value loadWindow loads");
  if (!gateT && !betaT)
    return;
  Value decayT = gateT ? e.exp(gateT) : Value();
  auto ifOp = scf::IfOp::create(b, kernel->ult(kernel->tid, e.index(W)), false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  if (decayT)
    memref::StoreOp::create(b, decayT, w.decay, ValueRange{kernel->tid});
  if (betaT)
    memref::StoreOp::create(b, betaT, w.beta, ValueRange{kernel->tid});
}

SmallVector<Value> RecurrenceKernel::loadLaneSlice(Value tile, Value row) {
  int64_t n = rows.keysPerLane, width = 4;
  while (n % width != 0)
    width /= 2;
  SmallVector<Value> values;
  for (int64_t m = 0; m < n; m += width) {
    Value vec = kernel->loadWidened(
        tile, {row, e.addIndex(sliceBase, e.index(m))}, width);
    for (int64_t l = 0; l < width; ++l)
      values.push_back(vector::ExtractOp::create(b, vec, l));
  }
  return values;
}

// S <- a (S - c k u^T) + b k v^T with u = S^T k is taken as
// S <- a S + k (b v - a c u)^T (a the decay where it is one per token or
// none; a per-key decay of a delta kind is applied first, and without the
// rank-1 term there is no u): one multiply and one FMA a slot.
SmallVector<Value> RecurrenceKernel::step(const StagedWindow &w, Value row,
                                          Value t, Value bIdx, Value hv,
                                          ArrayRef<Value> columns, Value gamma,
                                          ValueRange slots) {
  bool delta = kind.hasRank1();
  bool decayFirst = delta && kind.decay == DecayForm::PerKey;
  SmallVector<Value> ks = loadLaneSlice(w.k, row);
  SmallVector<Value> qs = loadLaneSlice(w.q, row);
  Value decay = gamma;
  if (w.decay)
    decay = memref::LoadOp::create(b, w.decay, ValueRange{row});
  SmallVector<Value> keyDecay;
  if (w.keyDecay)
    keyDecay = loadLaneSlice(w.keyDecay, row);
  Value betaT, c;
  if (delta) {
    betaT = memref::LoadOp::create(b, w.beta, ValueRange{row});
    c = e.scaleExactly(kind.rank1Scale, betaT);
  }
  int64_t n = rows.keysPerLane;
  SmallVector<Value> after;
  for (int64_t set = 0; set < rows.columnSets; ++set) {
    SmallVector<Value> s(slots.begin() + set * n,
                         slots.begin() + (set + 1) * n);
    if (decayFirst)
      for (size_t m = 0; m < s.size(); ++m)
        s[m] = e.mul(keyDecay[m], s[m]);

    Value vj =
        memref::LoadOp::create(b, w.v, ValueRange{row, columnInBlock[set]});
    Value coefficient = vj;
    if (delta) {
      Value rank1 = e.mul(c, sumOverColumnLanes(laneDot(ks, s)));
      if (decay)
        rank1 = e.mul(decay, rank1);
      coefficient = e.sub(e.mul(betaT, vj), rank1);
    }
    SmallVector<Value> o(std::min<int64_t>(kPartialSums, s.size()),
                         e.f32(0.0f));
    for (size_t m = 0; m < s.size(); ++m) {
      Value a = decayFirst                        ? Value()
                : kind.decay == DecayForm::PerKey ? keyDecay[m]
                                                  : decay;
      Value decayed = a ? e.mul(a, s[m]) : s[m];
      s[m] = math::FmaOp::create(b, ks[m], coefficient, decayed);
      o[m % o.size()] = math::FmaOp::create(b, s[m], qs[m], o[m % o.size()]);
    }
    Value out = sumOverColumnLanes(sumPartials(o));
    auto ifOp = scf::IfOp::create(b, isOutputLane[set], false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    e.storeFromF32(out, outBuf, {bIdx, t, hv, columns[set]});
    llvm::append_range(after, s);
  }
  return after;
}

void RecurrenceKernel::run(RewriterBase &rewriter) {
  int64_t K = op.getKeyDim(), V = op.getValueDim();
  int64_t HV = op.getNumVHeads(), H = op.getNumQKHeads();
  q = e.toBuffer(op.getQ());
  k = e.toBuffer(op.getK());
  v = e.toBuffer(op.getV());
  if (Value g = op.getGate())
    gate = e.toBuffer(g);
  if (Value b = op.getBeta())
    beta = e.toBuffer(b);
  initialState = e.toBuffer(op.getInitialState());
  Value batch = e.dim(q, 0), seqLen = e.dim(q, 1);
  outBuf = e.allocFor(op.getOutput().getType(),
                      {batch, seqLen, e.index(HV), e.index(V)});
  stateBuf = e.allocFor(op.getFinalState().getType(),
                        {batch, e.index(HV), e.index(K), e.index(V)});

  WindowLayout windowAt = planWindow();
  int64_t columns = rows.columnsPerBlock;
  int64_t columnBlocks = (V + columns - 1) / columns;
  emitLaunch(b, {e.index(columnBlocks), e.index(HV), batch}, windowAt.bytes,
             [&](KernelEmitter &kernel) {
    this->kernel = &kernel;
    kernel.requireRegistersPerThread(
        recurrent_kernel::registersPerThread(rows.columnSets));
    Block *body = b.getInsertionBlock();
    Value hv = body->getArgument(1), bIdx = body->getArgument(2);
    Value h = arith::DivUIOp::create(b, hv, e.index(HV / H));
    Value slice = arith::RemUIOp::create(b, kernel.tid, e.index(rows.lanes));
    Value columnInSet =
        arith::DivUIOp::create(b, kernel.tid, e.index(rows.lanes));
    Value firstColumn = e.mulIndex(body->getArgument(0), e.index(columns));
    // Every lane runs every step (the shuffles need the whole warp); a
    // column past V reads column V - 1 and writes nothing.
    SmallVector<Value> column, inside, readColumn;
    Value sliceZero =
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, slice, e.index(0));
    for (int64_t set = 0; set < rows.columnSets; ++set) {
      columnInBlock.push_back(
          e.addIndex(columnInSet, e.index(set * rows.columnsPerSet)));
      column.push_back(e.addIndex(firstColumn, columnInBlock.back()));
      inside.push_back(kernel.ult(column.back(), e.index(V)));
      readColumn.push_back(arith::SelectOp::create(
          b, inside.back(), column.back(), e.index(V - 1)));
      isOutputLane.push_back(
          arith::AndIOp::create(b, inside.back(), sliceZero));
    }
    // Lane `slice` of a column holds keys [slice n, slice n + n).
    int64_t n = rows.keysPerLane;
    Value firstKey = e.mulIndex(slice, e.index(n));
    sliceBase = e.mulIndex(slice, e.index(rows.sliceStride));
    SmallVector<Value> keys;
    for (int64_t m = 0; m < n; ++m)
      keys.push_back(e.addIndex(firstKey, e.index(m)));
    Value gamma = kind.decay == DecayForm::Constant
                      ? e.selectF32(hv, op.getDecayPerHead())
                      : Value();
    StagedWindow staged = viewWindow(windowAt);

    auto loadState = [&] {
      SmallVector<Value> slots;
      for (int64_t set = 0; set < rows.columnSets; ++set)
        for (Value i : keys)
          slots.push_back(
              e.loadF32(initialState, {bIdx, hv, i, readColumn[set]}));
      return slots;
    };
    auto storeState = [&](ValueRange slots) {
      for (int64_t set = 0; set < rows.columnSets; ++set) {
        auto ifOp = scf::IfOp::create(b, inside[set], false);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(ifOp.thenBlock());
        for (size_t m = 0; m < keys.size(); ++m)
          e.storeFromF32(slots[set * n + m], stateBuf,
                         {bIdx, hv, keys[m], column[set]});
      }
    };
    // Window w's first token and its count of tokens.
    auto windowStart = [&](Value wIdx) {
      return e.mulIndex(wIdx, e.index(kWindowTokens));
    };
    auto windowTokens = [&](Value t0) {
      return e.minIndex(e.index(kWindowTokens), e.subIndex(seqLen, t0));
    };
    // T = 0 returns the initial state.
    auto hasTokens = scf::IfOp::create(b, kernel.ult(e.index(0), seqLen),
                                       /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(hasTokens.elseBlock());
      storeState(loadState());
    }
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(hasTokens.thenBlock());
    // The first window's loads go out before the state's: a decode call
    // then waits on one round trip to global memory, with the token's
    // inputs ahead of the state in the queue.
    Value firstT0 = e.index(0);
    SmallVector<Value> first =
        loadWindow(bIdx, h, hv, firstT0, windowTokens(firstT0), firstColumn);
    SmallVector<Value> column0 = loadState();
    storeWindow(staged, first);
    kernel.barrier();
    Value windows = arith::CeilDivUIOp::create(b, seqLen, e.index(kWindowTokens));
    ValueRange columnT = e.forEachReduce(
        windows, column0,
        [&](Value wIdx, ValueRange slots) -> SmallVector<Value> {
          Value t0 = windowStart(wIdx), valid = windowTokens(t0);
          {
            // Window 0 was staged ahead of the loop.
            auto later =
                scf::IfOp::create(b, kernel.ult(e.index(0), wIdx), false);
            OpBuilder::InsertionGuard guard(b);
            b.setInsertionPointToStart(later.thenBlock());
            storeWindow(staged,
                        loadWindow(bIdx, h, hv, t0, valid, firstColumn));
            kernel.barrier();
          }
          ValueRange after =
              e.forEachReduce(valid, slots, [&](Value row, ValueRange carried) {
                return step(staged, row, e.addIndex(t0, row), bIdx, hv,
                            readColumn, gamma, carried);
              });
          // The next window's staging overwrites what these steps read.
          kernel.barrier();
          return SmallVector<Value>(after.begin(), after.end());
        });
    storeState(columnT);
  });
  e.replaceWithBuffers(rewriter, op, {outBuf, stateBuf});
}

struct ConvertLinAttnRecurrenceToGPU
    : impl::ConvertLinAttnRecurrenceToGPUBase<ConvertLinAttnRecurrenceToGPU> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<RecurrenceOp> ops;
    getOperation()->walk([&](RecurrenceOp op) { ops.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (RecurrenceOp op : ops) {
      if (!recurrent_kernel::whyNoSplitKeyKernel(op).empty())
        continue; // the loop lowering's one thread per column takes it
      rewriter.setInsertionPoint(op);
      ImplicitLocOpBuilder b(op.getLoc(), rewriter);
      RecurrenceKernel(op, b).run(rewriter);
      ++numKernels;
    }
  }
};

} // namespace
} // namespace mlir::linattn
