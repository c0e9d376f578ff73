//===- LinAttnOps.cpp - LinAttn operations --------------------------------===//
//
// Verifiers and helpers of the LinAttn operations.
//
//===----------------------------------------------------------------------===//

#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"

#include <cmath>

using namespace mlir;
using namespace mlir::linattn;

//===----------------------------------------------------------------------===//
// Custom directives
//===----------------------------------------------------------------------===//

/// transition-kind ::= `identity` | `constant_decay` | ... (a bare keyword)
static ParseResult parseTransitionKind(OpAsmParser &parser,
                                       TransitionKindAttr &kind) {
  llvm::SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (failed(parser.parseOptionalKeyword(&keyword)))
    return parser.emitError(loc, "expected a transition kind");
  std::optional<TransitionKind> parsed = symbolizeTransitionKind(keyword);
  if (!parsed) {
    InFlightDiagnostic diag = parser.emitError(loc)
                              << "unknown transition kind '" << keyword
                              << "'; expected one of";
    for (uint32_t i = 0; i <= getMaxEnumValForTransitionKind(); ++i)
      diag << (i ? ", " : " ")
           << stringifyTransitionKind(static_cast<TransitionKind>(i));
    return diag;
  }
  kind = TransitionKindAttr::get(parser.getContext(), *parsed);
  return success();
}

static void printTransitionKind(OpAsmPrinter &printer, Operation *,
                                TransitionKindAttr kind) {
  printer << stringifyTransitionKind(kind.getValue());
}

#define GET_OP_CLASSES
#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.cpp.inc"

//===----------------------------------------------------------------------===//
// RecurrenceOp
//===----------------------------------------------------------------------===//

namespace {
/// Dimension names of each operand, for messages.
constexpr const char *kQKDims[] = {"B", "T", "H", "K"};
constexpr const char *kVDims[] = {"B", "T", "HV", "V"};
constexpr const char *kScalarGateDims[] = {"B", "T", "HV"};
constexpr const char *kKeyGateDims[] = {"B", "T", "HV", "K"};
constexpr const char *kStateDims[] = {"B", "HV", "K", "V"};

bool isSupportedInputElementType(Type t) {
  return t.isBF16() || t.isF16() || t.isF32();
}

std::string formatDim(int64_t d) {
  return ShapedType::isDynamic(d) ? std::string("?") : std::to_string(d);
}

/// What linattn.recurrence and linattn.recurrence_grad share, for either op
/// (both have the spec's operands first and its attributes).
template <typename SpecOp>
float effectiveScale(SpecOp op) {
  if (std::optional<APFloat> s = op.getScale())
    return s->convertToFloat();
  return 1.0f / std::sqrt(static_cast<float>(op.getKeyDim()));
}

template <typename SpecOp>
float decayForHead(SpecOp op, int64_t hv) {
  ArrayRef<float> gammas = *op.getDecay();
  return gammas.size() == 1 ? gammas[0] : gammas[hv];
}

template <typename SpecOp>
SmallVector<float> decayPerHead(SpecOp op) {
  SmallVector<float> gammas;
  for (int64_t hv = 0; hv < op.getNumVHeads(); ++hv)
    gammas.push_back(decayForHead(op, hv));
  return gammas;
}

template <typename SpecOp>
StringRef specOperandName(SpecOp op, unsigned i) {
  if (i < 3)
    return (const char *[]){"q", "k", "v"}[i];
  unsigned state = op.getInitialStateIndex();
  if (i == state)
    return "initial_state";
  if (i == state + 1)
    return "grad_output";
  if (i == state + 2)
    return "grad_final_state";
  if (i == 3 && op.getGate())
    return "gate";
  return "beta";
}

/// The forward spec's equalities, over operands q, k, v, [gate], [beta],
/// initial_state.
template <typename SpecOp>
SmallVector<SpecDimEquality> specDimEqualities(SpecOp op) {
  enum { Q = 0, K = 1, V = 2 };
  unsigned next = 3;
  std::optional<unsigned> gate, beta;
  if (op.getGate())
    gate = next++;
  if (op.getBeta())
    beta = next++;
  unsigned state = next;

  SmallVector<SpecDimEquality> eqs = {
      {Q, 0, K, 0, "B"},      {Q, 0, V, 0, "B"},  {Q, 0, state, 0, "B"},
      {Q, 1, K, 1, "T"},      {Q, 1, V, 1, "T"},  {Q, 2, K, 2, "H"},
      {Q, 3, K, 3, "K"},      {V, 2, state, 1, "HV"},
      {Q, 3, state, 2, "K"},  {V, 3, state, 3, "V"},
  };
  for (std::optional<unsigned> operand : {gate, beta}) {
    if (!operand)
      continue;
    eqs.push_back({Q, 0, *operand, 0, "B"});
    eqs.push_back({Q, 1, *operand, 1, "T"});
    eqs.push_back({V, 2, *operand, 2, "HV"});
  }
  if (gate && cast<RankedTensorType>(op.getGate().getType()).getRank() == 4)
    eqs.push_back({Q, 3, *gate, 3, "K"});
  return eqs;
}

/// Checks that `result` is `expectShape` (B and T may be dynamic on either
/// side) of `expectElem`, with static sizes from `firstStaticDim` on.
LogicalResult checkResultType(Operation *op, Value result, StringRef name,
                              ArrayRef<int64_t> expectShape, Type expectElem,
                              StringRef layout, int64_t firstStaticDim) {
  auto type = dyn_cast<RankedTensorType>(result.getType());
  bool ok = type && type.getRank() == (int64_t)expectShape.size() &&
            type.getElementType() == expectElem;
  for (int64_t d = 0; ok && d < (int64_t)expectShape.size(); ++d) {
    int64_t got = type.getDimSize(d), want = expectShape[d];
    ok = ShapedType::isDynamic(got) || ShapedType::isDynamic(want) ||
         got == want;
  }
  for (int64_t d = firstStaticDim; ok && d < type.getRank(); ++d)
    if (type.isDynamicDim(d))
      return op->emitOpError()
             << "result '" << name << "' must have static head counts and "
             << "head dims (only B and T may be dynamic, as in the "
                "operands: they size the kernels' tiles), got "
             << type;
  if (ok)
    return success();
  std::string expected = "tensor<";
  for (int64_t d : expectShape)
    expected += formatDim(d) + "x";
  llvm::raw_string_ostream os(expected);
  os << expectElem << ">";
  return op->emitOpError() << "result '" << name << "' must be " << layout
                           << " = " << expected << ", got "
                           << result.getType();
}

/// Everything the verifier checks of the spec's operands and attributes
/// (ranks, element types, static sizes, the operands the kind takes, the
/// dimensions operands share, sizes the code can hold), for either op.
template <typename SpecOp>
LogicalResult verifySpec(SpecOp op) {
  auto qType = cast<RankedTensorType>(op.getQ().getType());
  auto kType = cast<RankedTensorType>(op.getK().getType());
  auto vType = cast<RankedTensorType>(op.getV().getType());
  auto stateType = cast<RankedTensorType>(op.getInitialState().getType());
  StringRef kindName = stringifyTransitionKind(op.getKind());

  // Ranks.
  auto checkRank = [&](RankedTensorType t, StringRef name, int64_t rank,
                       StringRef layout) -> LogicalResult {
    if (t.getRank() == rank)
      return success();
    return op.emitOpError() << "'" << name << "' must be a rank-" << rank
                            << " tensor " << layout << ", got " << t;
  };
  if (failed(checkRank(qType, "q", 4, "[B, T, H, K]")) ||
      failed(checkRank(kType, "k", 4, "[B, T, H, K]")) ||
      failed(checkRank(vType, "v", 4, "[B, T, HV, V]")) ||
      failed(checkRank(stateType, "initial_state", 4, "[B, HV, K, V]")))
    return failure();

  // Element types.
  Type elemType = qType.getElementType();
  if (!isSupportedInputElementType(elemType))
    return op.emitOpError() << "'q' element type must be bf16, f16 or f32, got "
                            << elemType;
  if (kType.getElementType() != elemType)
    return op.emitOpError() << "'k' element type " << kType.getElementType()
                            << " must match the element type of 'q' ("
                            << elemType << ")";
  if (vType.getElementType() != elemType)
    return op.emitOpError() << "'v' element type " << vType.getElementType()
                            << " must match the element type of 'q' ("
                            << elemType << ")";
  if (!stateType.getElementType().isF32())
    return op.emitOpError()
           << "'initial_state' must have element type f32 (the "
              "state is kept in fp32), got "
           << stateType.getElementType();

  // Head counts and head dims are static: they size registers and tiles.
  for (auto [type, name, dims] :
       {std::make_tuple(qType, "q", kQKDims), std::make_tuple(kType, "k", kQKDims),
        std::make_tuple(vType, "v", kVDims)}) {
    for (int64_t d = 2; d < 4; ++d)
      if (type.isDynamicDim(d))
        return op.emitOpError() << "dimension " << dims[d] << " of '" << name
                                << "' must be static (only B and T may be "
                                   "dynamic), got "
                                << type;
  }
  for (int64_t d = 1; d < 4; ++d)
    if (stateType.isDynamicDim(d))
      return op.emitOpError() << "dimension " << kStateDims[d]
                              << " of 'initial_state' must be static (only B "
                                 "may be dynamic), got "
                              << stateType;
  int64_t numQKHeads = op.getNumQKHeads(), numVHeads = op.getNumVHeads();
  if (numQKHeads <= 0 || op.getKeyDim() <= 0 || numVHeads <= 0 ||
      op.getValueDim() <= 0)
    return op.emitOpError() << "H, K, HV and V must be positive, got H = "
                            << numQKHeads << ", K = " << op.getKeyDim()
                            << ", HV = " << numVHeads
                            << ", V = " << op.getValueDim();
  if (numVHeads % numQKHeads != 0)
    return op.emitOpError() << "the number of value heads HV = " << numVHeads
                            << " must be a multiple of the number of "
                               "query/key heads H = "
                            << numQKHeads;

  // Operands required or forbidden by the kind.
  const TransitionKindInfo &info = op.getKindInfo();
  bool wantsGate = info.hasGateOperand(), wantsBeta = info.hasRank1();
  if (wantsGate && !op.getGate())
    return op.emitOpError() << "kind '" << kindName
                            << "' requires a 'gate' operand (log-space gate)";
  if (!wantsGate && op.getGate())
    return op.emitOpError() << "kind '" << kindName
                            << "' takes no 'gate' operand";
  if (wantsBeta && !op.getBeta())
    return op.emitOpError() << "kind '" << kindName
                            << "' requires a 'beta' operand [B, T, HV]";
  if (!wantsBeta && op.getBeta())
    return op.emitOpError() << "kind '" << kindName
                            << "' takes no 'beta' operand";

  // Gate and beta shapes.
  if (Value gate = op.getGate()) {
    auto gateType = cast<RankedTensorType>(gate.getType());
    bool perKey = info.decay == DecayForm::PerKey;
    int64_t rank = perKey ? 4 : 3;
    if (gateType.getRank() != rank)
      return op.emitOpError() << "kind '" << kindName << "' takes a "
                              << (perKey ? "per-key gate [B, T, HV, K]"
                                         : "scalar gate [B, T, HV]")
                              << " of rank " << rank << ", got " << gateType;
    if (!isSupportedInputElementType(gateType.getElementType()))
      return op.emitOpError() << "'gate' element type must be bf16, f16 or "
                                 "f32, got "
                              << gateType.getElementType();
  }
  if (Value beta = op.getBeta()) {
    auto betaType = cast<RankedTensorType>(beta.getType());
    if (betaType.getRank() != 3)
      return op.emitOpError()
             << "'beta' must be a rank-3 tensor [B, T, HV], got " << betaType;
    if (!isSupportedInputElementType(betaType.getElementType()))
      return op.emitOpError() << "'beta' element type must be bf16, f16 or "
                                 "f32, got "
                              << betaType.getElementType();
  }

  // Dimensions shared between operands.
  auto dimName = [&](unsigned operand, unsigned dim) -> const char * {
    StringRef name = op.getOperandName(operand);
    if (name == "q" || name == "k")
      return kQKDims[dim];
    if (name == "v" || name == "grad_output")
      return kVDims[dim];
    if (name == "initial_state" || name == "grad_final_state")
      return kStateDims[dim];
    if (name == "gate" &&
        cast<RankedTensorType>(op.getGate().getType()).getRank() == 4)
      return kKeyGateDims[dim];
    return kScalarGateDims[dim];
  };
  for (const SpecDimEquality &eq : op.getDimEqualities()) {
    auto lhs = cast<RankedTensorType>(op->getOperand(eq.lhsOperand).getType());
    auto rhs = cast<RankedTensorType>(op->getOperand(eq.rhsOperand).getType());
    int64_t l = lhs.getDimSize(eq.lhsDim), r = rhs.getDimSize(eq.rhsDim);
    if (ShapedType::isDynamic(l) || ShapedType::isDynamic(r) || l == r)
      continue;
    return op.emitOpError()
           << "dimension " << dimName(eq.rhsOperand, eq.rhsDim) << " of '"
           << op.getOperandName(eq.rhsOperand) << "' (" << r
           << ") must equal " << eq.what << " = " << l << " (dimension "
           << dimName(eq.lhsOperand, eq.lhsDim) << " of '"
           << op.getOperandName(eq.lhsOperand) << "')";
  }

  // Sizes the generated code can hold: every tensor's bytes in int64, and
  // T below 2^31 (the kernels count a sequence's rows in 32 bits).
  constexpr int64_t kMaxElements = int64_t(1) << 60;
  constexpr int64_t kMaxSeqLen = (int64_t(1) << 31) - 1;
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    auto type = cast<RankedTensorType>(operand.getType());
    int64_t elements = 1;
    for (int64_t d : type.getShape()) {
      if (ShapedType::isDynamic(d))
        continue;
      if (d != 0 && elements > kMaxElements / d)
        return op.emitOpError()
               << "'" << op.getOperandName(i) << "' of type " << type
               << " has more than 2^60 elements: its size overflows the "
                  "generated code's 64-bit sizes";
      elements *= d;
    }
  }
  if (int64_t t = qType.getDimSize(1);
      !ShapedType::isDynamic(t) && t > kMaxSeqLen)
    return op.emitOpError() << "T = " << t << " is too long: the kernels "
                            << "take sequences of at most 2^31 - 1 tokens";

  // Attributes.
  if (std::optional<APFloat> scaleAttr = op.getScale()) {
    float scale = scaleAttr->convertToFloat();
    if (!std::isfinite(scale) || scale <= 0.0f)
      return op.emitOpError() << "'scale' must be finite and positive, got "
                              << scale;
  }
  bool wantsDecay = info.decay == DecayForm::Constant;
  if (wantsDecay && !op.getDecay())
    return op.emitOpError() << "kind 'constant_decay' requires a 'decay' "
                               "attribute: array<f32: gamma per value head>";
  if (!wantsDecay && op.getDecay())
    return op.emitOpError() << "'decay' is only allowed with kind "
                               "'constant_decay', not '"
                            << kindName << "'";
  if (std::optional<ArrayRef<float>> decay = op.getDecay()) {
    if (decay->size() != 1 && (int64_t)decay->size() != numVHeads)
      return op.emitOpError()
             << "'decay' must hold one gamma per value head (HV = "
             << numVHeads << ") or a single shared gamma, got "
             << decay->size() << " values";
    for (auto [i, gamma] : llvm::enumerate(*decay))
      if (!(gamma > 0.0f && gamma <= 1.0f))
        return op.emitOpError() << "'decay' values must lie in (0, 1], got "
                                << gamma << " at index " << i;
  }
  return success();
}
} // namespace

//===----------------------------------------------------------------------===//
// RecurrenceOp
//===----------------------------------------------------------------------===//

float RecurrenceOp::getEffectiveScale() { return effectiveScale(*this); }
float RecurrenceOp::getDecayForHead(int64_t hv) {
  return decayForHead(*this, hv);
}
SmallVector<float> RecurrenceOp::getDecayPerHead() {
  return decayPerHead(*this);
}
StringRef RecurrenceOp::getOperandName(unsigned i) {
  return specOperandName(*this, i);
}
SmallVector<SpecDimEquality> RecurrenceOp::getDimEqualities() {
  return specDimEqualities(*this);
}

LogicalResult RecurrenceOp::verify() {
  if (failed(verifySpec(*this)))
    return failure();
  // Results: o is [B, T, HV, V] in v's element type, the state [B, HV, K, V]
  // in f32. B and T may be dynamic where the operand's are static, but two
  // static sizes must agree; head counts and head dims are static, as in
  // the operands.
  auto qType = cast<RankedTensorType>(getQ().getType());
  if (failed(checkResultType(*this, getOutput(), "output",
                             {qType.getDimSize(0), qType.getDimSize(1),
                              getNumVHeads(), getValueDim()},
                             qType.getElementType(),
                             "[B, T, HV, V] in v's element type",
                             /*firstStaticDim=*/2)) ||
      failed(checkResultType(*this, getFinalState(), "final_state",
                             {qType.getDimSize(0), getNumVHeads(),
                              getKeyDim(), getValueDim()},
                             Float32Type::get(getContext()),
                             "[B, HV, K, V] in f32", /*firstStaticDim=*/1)))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// RecurrenceGradOp
//===----------------------------------------------------------------------===//

float RecurrenceGradOp::getEffectiveScale() { return effectiveScale(*this); }
float RecurrenceGradOp::getDecayForHead(int64_t hv) {
  return decayForHead(*this, hv);
}
SmallVector<float> RecurrenceGradOp::getDecayPerHead() {
  return decayPerHead(*this);
}
StringRef RecurrenceGradOp::getOperandName(unsigned i) {
  return specOperandName(*this, i);
}

SmallVector<SpecDimEquality> RecurrenceGradOp::getDimEqualities() {
  SmallVector<SpecDimEquality> eqs = specDimEqualities(*this);
  unsigned v = 2, state = getInitialStateIndex();
  unsigned gradOutput = state + 1, gradState = state + 2;
  const char *vNames[] = {"B", "T", "HV", "V"};
  const char *stateNames[] = {"B", "HV", "K", "V"};
  for (unsigned d = 0; d < 4; ++d) {
    eqs.push_back({v, d, gradOutput, d, vNames[d]});
    eqs.push_back({state, d, gradState, d, stateNames[d]});
  }
  return eqs;
}

void RecurrenceGradOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  // d<operand>: dq, dk, dv, dgate, dbeta, dinitial_state.
  for (auto [i, gradient] : llvm::enumerate(getGradients()))
    setNameFn(gradient, ("d" + getOperandName(i)).str());
}

RankedTensorType RecurrenceGradOp::getGradientType(RankedTensorType operandType,
                                                   unsigned i) {
  if (i < 3)
    return operandType;
  return operandType.clone(Float32Type::get(operandType.getContext()));
}

LogicalResult RecurrenceGradOp::verify() {
  // The cotangents first: the shared checks index their dimensions.
  auto vType = cast<RankedTensorType>(getV().getType());
  auto gradOutputType = cast<RankedTensorType>(getGradOutput().getType());
  auto gradStateType = cast<RankedTensorType>(getGradFinalState().getType());
  if (gradOutputType.getRank() != 4 ||
      gradOutputType.getElementType() != vType.getElementType())
    return emitOpError() << "'grad_output' must be a rank-4 tensor [B, T, HV, "
                            "V] in v's element type ("
                         << vType.getElementType() << "), got "
                         << gradOutputType;
  if (gradStateType.getRank() != 4 || !gradStateType.getElementType().isF32())
    return emitOpError() << "'grad_final_state' must be a rank-4 tensor [B, "
                            "HV, K, V] of f32, got "
                         << gradStateType;
  if (failed(verifySpec(*this)))
    return failure();

  // One gradient per forward operand, in its shape.
  unsigned numGradients = getInitialStateIndex() + 1;
  if (getGradients().size() != numGradients)
    return emitOpError() << "must return " << numGradients
                         << " gradients (one per operand of the forward "
                            "recurrence: q, k, v"
                         << (getGate() ? ", gate" : "")
                         << (getBeta() ? ", beta" : "")
                         << ", initial_state), got " << getGradients().size();
  for (unsigned i = 0; i < numGradients; ++i) {
    auto operandType = cast<RankedTensorType>(getOperand(i).getType());
    RankedTensorType want = getGradientType(operandType, i);
    std::string name = ("d" + getOperandName(i)).str();
    std::string layout = i == numGradients - 1
                             ? "[B, HV, K, V] in f32"
                             : (i < 3 ? "the shape and element type of '"
                                      : "the shape of '") +
                                   getOperandName(i).str() +
                                   (i < 3 ? "'" : "' in f32");
    if (failed(checkResultType(*this, getGradientOf(i), name, want.getShape(),
                               want.getElementType(), layout,
                               /*firstStaticDim=*/i == numGradients - 1 ? 1
                                                                        : 2)))
      return failure();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Chunked-state algorithm ops
//===----------------------------------------------------------------------===//

int64_t mlir::linattn::segmentCount(int64_t numChunks, int64_t segmentChunks) {
  if (ShapedType::isDynamic(numChunks))
    return ShapedType::kDynamic;
  return std::max<int64_t>(1, (numChunks + segmentChunks - 1) / segmentChunks);
}

bool mlir::linattn::isSplitW(Type wType) {
  auto tensor = dyn_cast<ShapedType>(wType);
  return tensor && tensor.hasRank() && tensor.getRank() == 5;
}

namespace {

/// Checks operand and result tensors against named layouts such as
/// [B, T, HV, V]: the rank, the element type, that head counts and head
/// dims (H, K, HV, V) are static, and that every named dimension agrees
/// with its first static occurrence.
class LayoutChecker {
public:
  explicit LayoutChecker(Operation *op) : op(op) {}

  enum class Elem { AnyFloat, F32 };

  LogicalResult check(Type type, StringRef name, ArrayRef<StringRef> layout,
                      Elem elem) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    std::string layoutText = "[" + llvm::join(layout, ", ") + "]";
    if (!tensor || tensor.getRank() != (int64_t)layout.size())
      return op->emitOpError()
             << "'" << name << "' must be a rank-" << layout.size()
             << " tensor " << layoutText << ", got " << type;
    Type et = tensor.getElementType();
    if (elem == Elem::F32 && !et.isF32())
      return op->emitOpError() << "'" << name << "' must have element type "
                               << "f32, got " << et;
    if (elem == Elem::AnyFloat && !isSupportedInputElementType(et))
      return op->emitOpError() << "'" << name
                               << "' element type must be bf16, f16 or f32, "
                                  "got "
                               << et;
    for (auto [d, dimName] : llvm::enumerate(layout)) {
      int64_t size = tensor.getDimSize(d);
      bool mustBeStatic = dimName == "H" || dimName == "K" ||
                          dimName == "HV" || dimName == "V";
      if (mustBeStatic && ShapedType::isDynamic(size))
        return op->emitOpError()
               << "dimension " << dimName << " of '" << name
               << "' must be static (only B, T and NC may be dynamic), got "
               << type;
      if (ShapedType::isDynamic(size))
        continue;
      auto [it, inserted] =
          bound.try_emplace(dimName, std::make_pair(size, name.str()));
      if (!inserted && it->second.first != size)
        return op->emitOpError()
               << "dimension " << dimName << " of '" << name << "' (" << size
               << ") must equal " << dimName << " = " << it->second.first
               << " (from '" << it->second.second << "')";
    }
    return success();
  }

  /// The static size bound to `dimName`, or kDynamic.
  int64_t get(StringRef dimName) const {
    auto it = bound.find(dimName);
    return it == bound.end() ? ShapedType::kDynamic : it->second.first;
  }

  /// HV must be a multiple of H (value heads share query/key heads).
  LogicalResult checkHeadGroups() {
    int64_t h = get("H"), hv = get("HV");
    if (!ShapedType::isDynamic(h) && !ShapedType::isDynamic(hv) &&
        (h <= 0 || hv % h != 0))
      return op->emitOpError() << "the number of value heads HV = " << hv
                               << " must be a multiple of the number of "
                                  "query/key heads H = "
                               << h;
    return success();
  }

  /// NC, when static with a static T, is ceil(T / chunk_size).
  LogicalResult checkChunkCount(int64_t chunkSize) {
    int64_t t = get("T"), nc = get("NC");
    if (ShapedType::isDynamic(t) || ShapedType::isDynamic(nc))
      return success();
    int64_t want = (t + chunkSize - 1) / chunkSize;
    if (nc != want)
      return op->emitOpError() << "the number of chunks NC = " << nc
                               << " must be ceil(T / chunk_size) = " << want
                               << " for T = " << t << " and chunk_size = "
                               << chunkSize;
    return success();
  }

private:
  Operation *op;
  llvm::StringMap<std::pair<int64_t, std::string>> bound;
};

using Elem = LayoutChecker::Elem;
const SmallVector<StringRef> kQKLayout = {"B", "T", "H", "K"};
const SmallVector<StringRef> kVLayout = {"B", "T", "HV", "V"};
const SmallVector<StringRef> kWLayout = {"B", "T", "HV", "K"};
const SmallVector<StringRef> kScalarGateLayout = {"B", "T", "HV"};
const SmallVector<StringRef> kStateLayout = {"B", "HV", "K", "V"};
const SmallVector<StringRef> kChunkStatesLayout = {"B", "NC", "HV", "K", "V"};
const SmallVector<StringRef> kSegmentStatesLayout = {"B", "NS", "HV", "K", "V"};
const SmallVector<StringRef> kSplitWLayout = {"B", "T", "HV", "2", "K"};
const SmallVector<StringRef> kChunkTotalsLayout = {"B", "NC", "HV", "K"};
const SmallVector<StringRef> kRNormLayout = {"B", "T", "H"};

/// An optional q_rnorm or k_rnorm operand: [B, T, H] f32.
LogicalResult checkRNorm(LayoutChecker &checker, Value rnorm, StringRef name) {
  if (!rnorm)
    return success();
  return checker.check(rnorm.getType(), name, kRNormLayout, Elem::F32);
}

/// W as `linattn.ut_transform` makes it and `linattn.chunk_state_pass` takes
/// it: [B, T, HV, K] in f32 or rounded once to the keys' 16-bit type, or
/// split, [B, T, HV, 2, K] in the keys' 16-bit type (hi and lo parts). f32
/// keys (normalised from 16-bit inputs, as the backward keeps them) may
/// meet W in either 16-bit type, rounded or split.
LogicalResult checkW(Operation *op, LayoutChecker &checker, Value w, Value k) {
  Type wType = w.getType();
  Type wElem = getElementTypeOrSelf(wType);
  Type kElem = getElementTypeOrSelf(k.getType());
  bool anyNarrow = kElem.isF32();
  if (!isSplitW(wType)) {
    if (failed(checker.check(wType, "w", kWLayout, Elem::AnyFloat)))
      return failure();
    if (!wElem.isF32() && wElem != kElem && !anyNarrow)
      return op->emitOpError() << "'w' must have element type f32 or the keys' "
                               << kElem << ", got " << wElem;
    return success();
  }
  if (failed(checker.check(wType, "w", kSplitWLayout, Elem::AnyFloat)))
    return failure();
  int64_t parts = cast<RankedTensorType>(wType).getDimSize(3);
  if (parts != 2)
    return op->emitOpError() << "a split 'w' [B, T, HV, 2, K] holds two parts "
                                "(hi, lo) in dimension 3, got "
                             << wType;
  if (wElem.isF32())
    return op->emitOpError() << "a split 'w' must have a 16-bit element type, "
                                "got f32";
  if (wElem != kElem && !anyNarrow)
    return op->emitOpError() << "a split 'w' must have the keys' 16-bit "
                                "element type, got "
                             << wElem << " with " << kElem << " keys";
  return success();
}

/// NS, when static with a static T, is segmentCount(ceil(T / chunk_size),
/// segment_chunks).
LogicalResult checkSegmentCount(Operation *op, LayoutChecker &checker,
                                int64_t chunkSize, int64_t segmentChunks) {
  int64_t t = checker.get("T"), ns = checker.get("NS");
  if (ShapedType::isDynamic(t) || ShapedType::isDynamic(ns))
    return success();
  int64_t want = segmentCount((t + chunkSize - 1) / chunkSize, segmentChunks);
  if (ns != want)
    return op->emitOpError()
           << "the number of segments NS = " << ns
           << " must be max(1, ceil(ceil(T / chunk_size) / segment_chunks)) = "
           << want
           << " for T = " << t << ", chunk_size = " << chunkSize
           << " and segment_chunks = " << segmentChunks;
  return success();
}

/// Segments need transitions that are scalars: no rank-1 term, and gates
/// per row (or none).
LogicalResult checkSegmentable(Operation *op, bool rank1, Value gates) {
  if (rank1)
    return op->emitOpError() << "'segment_chunks' needs transitions that are "
                                "scalars: the rank-1 term makes them matrices";
  if (gates && cast<ShapedType>(gates.getType()).getRank() == 4)
    return op->emitOpError() << "'segment_chunks' needs transitions that are "
                                "scalars: per-key gates make them diagonal "
                                "matrices";
  return success();
}

/// A segment map [A_s | E_s] has K + V columns.
LogicalResult checkMapColumns(Operation *op, const LayoutChecker &checker) {
  int64_t columns = checker.get("K + V"), keys = checker.get("K"),
          values = checker.get("V");
  if (!ShapedType::isDynamic(columns) && !ShapedType::isDynamic(keys) &&
      !ShapedType::isDynamic(values) && columns != keys + values)
    return op->emitOpError() << "'maps' must have K + V = " << keys + values
                             << " columns ([A_s | E_s]), got " << columns;
  return success();
}

/// Gates are [B, T, HV] or, where allowed, per key [B, T, HV, K].
LogicalResult checkGates(LayoutChecker &checker, Operation *op, Value gates,
                         bool allowPerKey) {
  if (!gates)
    return success();
  auto type = cast<RankedTensorType>(gates.getType());
  if (allowPerKey && type.getRank() == 4)
    return checker.check(type, "gates", kWLayout, Elem::F32);
  if (!allowPerKey && type.getRank() == 4)
    return op->emitOpError() << "'gates' must be scalar per head [B, T, HV] "
                                "here, got "
                             << type;
  return checker.check(type, "gates", kScalarGateLayout, Elem::F32);
}

/// The output scale of the chunked ops: finite and positive.
LogicalResult checkPositiveScale(Operation *op, APFloat scaleAttr) {
  float scale = scaleAttr.convertToFloat();
  if (!std::isfinite(scale) || scale <= 0.0f)
    return op->emitOpError()
           << "'scale' must be finite and positive, got " << scale;
  return success();
}

LogicalResult checkRank1Scale(Operation *op, std::optional<APFloat> scale) {
  if (!scale)
    return success();
  float s = scale->convertToFloat();
  if (s != 1.0f && s != 2.0f)
    return op->emitOpError() << "'rank1_scale' must be 1 (delta rule) or 2 "
                                "(negative eigenvalues), got "
                             << s;
  return success();
}

} // namespace

/// The row norms' input (linattn.l2norm, linattn.rnorm): bf16, f16 or f32.
static LogicalResult verifyNormInput(Operation *op, RankedTensorType in) {
  if (!isSupportedInputElementType(in.getElementType()))
    return op->emitOpError() << "input element type must be bf16, f16 or f32, "
                                "got "
                             << in.getElementType();
  return success();
}

LogicalResult L2NormOp::verify() {
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getResult().getType());
  if (failed(verifyNormInput(*this, in)))
    return failure();
  if (in.getRank() < 1 || in.isDynamicDim(in.getRank() - 1))
    return emitOpError() << "the normalised (last) dimension must be static, "
                            "got "
                         << in;
  if ((!out.getElementType().isF32() &&
       out.getElementType() != in.getElementType()) ||
      failed(verifyCompatibleShape(in.getShape(), out.getShape())))
    return emitOpError() << "result must have the input's shape and element "
                            "type f32 or the input's ("
                         << in.getElementType() << "), got " << out;
  return success();
}

LogicalResult RNormOp::verify() {
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getResult().getType());
  if (failed(verifyNormInput(*this, in)))
    return failure();
  if (in.getRank() != 4 || in.isDynamicDim(3))
    return emitOpError() << "input must be [B, T, H, K] with a static K, got "
                         << in;
  if (!out.getElementType().isF32() || out.getRank() != 3 ||
      failed(verifyCompatibleShape(in.getShape().drop_back(), out.getShape())))
    return emitOpError() << "result must be the input's rows [B, T, H] in f32, "
                            "got "
                         << out << " for " << in;
  return success();
}

LogicalResult ChunkCumsumOp::verify() {
  LayoutChecker checker(*this);
  auto type = cast<RankedTensorType>(getGate().getType());
  ArrayRef<StringRef> layout =
      type.getRank() == 4 ? ArrayRef<StringRef>(kWLayout) : kScalarGateLayout;
  if (type.getRank() != 3 && type.getRank() != 4)
    return emitOpError() << "'gate' must be [B, T, HV] or [B, T, HV, K], got "
                         << type;
  if (failed(checker.check(type, "gate", layout, Elem::AnyFloat)) ||
      failed(checker.check(getResult().getType(), "result", layout, Elem::F32)))
    return failure();
  if (bool(getDecayedKeys()) != bool(getKeys()) ||
      bool(getChunkTotals()) != bool(getKeys()))
    return emitOpError() << "returns 'decayed_keys' and 'chunk_totals' exactly "
                            "when it takes 'keys'";
  if (!getKeys())
    return success();
  if (type.getRank() != 4)
    return emitOpError() << "'keys' are decayed by per-key gates [B, T, HV, K], "
                            "got 'gate' "
                         << type;
  Type keyElem = getElementTypeOrSelf(getKeys().getType());
  if (failed(checker.check(getKeys().getType(), "keys", kQKLayout,
                           Elem::AnyFloat)) ||
      failed(checker.check(getDecayedKeys().getType(), "decayed_keys", kWLayout,
                           Elem::AnyFloat)) ||
      failed(checker.check(getChunkTotals().getType(), "chunk_totals",
                           kChunkTotalsLayout, Elem::F32)) ||
      failed(checker.checkHeadGroups()) ||
      failed(checker.checkChunkCount(getChunkSize())))
    return failure();
  if (getElementTypeOrSelf(getDecayedKeys().getType()) != keyElem)
    return emitOpError() << "'decayed_keys' must have the keys' element type "
                         << keyElem << ", got "
                         << getElementTypeOrSelf(getDecayedKeys().getType());
  return success();
}

LogicalResult UTTransformOp::verify() {
  LayoutChecker checker(*this);
  if (getKRnorm() && getKL2norm())
    return emitOpError() << "takes either 'k_rnorm' or 'k_l2norm' (the op "
                            "forms k's row norms itself), not both";
  if (getGates() && getRawGates())
    return emitOpError() << "takes either 'gates' (cumulative) or 'raw_gates' "
                            "(summed by the op), not both";
  if (bool(getRawGates()) != bool(getCumulativeGates()))
    return emitOpError() << "returns 'cumulative_gates' exactly when it takes "
                            "'raw_gates'";
  if (getRawGates() &&
      (failed(checker.check(getRawGates().getType(), "raw_gates",
                            kScalarGateLayout, Elem::AnyFloat)) ||
       failed(checker.check(getCumulativeGates().getType(), "cumulative_gates",
                            kScalarGateLayout, Elem::F32))))
    return failure();
  if (failed(checker.check(getK().getType(), "k", kQKLayout, Elem::AnyFloat)) ||
      failed(checkRNorm(checker, getKRnorm(), "k_rnorm")) ||
      failed(checker.check(getV().getType(), "v", kVLayout, Elem::AnyFloat)) ||
      failed(checker.check(getBeta().getType(), "beta", kScalarGateLayout,
                           Elem::AnyFloat)) ||
      failed(checkGates(checker, *this, getGates(), /*allowPerKey=*/true)) ||
      failed(checkW(*this, checker, getW(), getK())) ||
      failed(checker.check(getU().getType(), "u", kVLayout, Elem::F32)) ||
      failed(checker.checkHeadGroups()))
    return failure();
  return checkRank1Scale(*this, getRank1Scale());
}

LogicalResult ChunkStatePassOp::verify() {
  LayoutChecker checker(*this);
  if (getW() && getBeta())
    return emitOpError() << "takes either 'w' (WY form) or 'beta' (rank-1 "
                            "product form), not both";
  if (getBeta() && !getRank1Scale())
    return emitOpError() << "the rank-1 product form (with 'beta') requires "
                            "'rank1_scale'";
  if (!getBeta() && getRank1Scale())
    return emitOpError() << "'rank1_scale' is only meaningful with 'beta'";
  if (getKRnorm() && !getBeta())
    return emitOpError() << "'k_rnorm' takes the rank-1 product form "
                            "('beta'); in the WY form 'w' and 'u' carry it "
                            "(linattn.ut_transform's 'k_rnorm')";
  bool rank1 = getW() || getBeta();
  // Segments entered from their own states ([B, NS, HV, K, V]): any
  // transitions but the rank-1 product form.
  bool entered = cast<ShapedType>(getInitialState().getType()).getRank() == 5;
  if (entered && !getSegmentChunks())
    return emitOpError() << "a [B, NS, HV, K, V] 'initial_state' (every "
                            "segment's entering state) needs 'segment_chunks'";
  if (entered && getBeta())
    return emitOpError() << "segments entered from their own states take the "
                            "WY form, not 'beta': run linattn-lower-rank1-to-wy "
                            "first";
  if (getDecayedKeys()) {
    if (getBeta() || (getSegmentChunks() && !entered))
      return emitOpError() << "'decayed_keys' takes neither 'beta' nor "
                              "'segment_chunks' with segments from zero";
    if (!getGates() || cast<ShapedType>(getGates().getType()).getRank() != 4)
      return emitOpError() << "'decayed_keys' needs the chunks' total per-key "
                              "gates [B, NC, HV, K] as 'gates'";
    if (failed(checker.check(getK().getType(), "k", kWLayout, Elem::AnyFloat)) ||
        failed(checker.check(getGates().getType(), "gates", kChunkTotalsLayout,
                             Elem::F32)))
      return failure();
  }
  if ((!getDecayedKeys() &&
       failed(checker.check(getK().getType(), "k", kQKLayout, Elem::AnyFloat))) ||
      failed(checker.check(getU().getType(), "u", kVLayout, Elem::AnyFloat)) ||
      (getW() && failed(checkW(*this, checker, getW(), getK()))) ||
      (getBeta() && failed(checker.check(getBeta().getType(), "beta",
                                         kScalarGateLayout, Elem::AnyFloat))) ||
      failed(checkRNorm(checker, getKRnorm(), "k_rnorm")) ||
      (!getDecayedKeys() &&
       failed(checkGates(checker, *this, getGates(), /*allowPerKey=*/true))) ||
      failed(checker.check(getInitialState().getType(), "initial_state",
                           entered ? kSegmentStatesLayout : kStateLayout,
                           Elem::F32)) ||
      failed(checker.check(getNewValues().getType(), "new_values", kVLayout,
                           Elem::AnyFloat)) ||
      failed(checker.check(getChunkStates().getType(), "chunk_states",
                           kChunkStatesLayout, Elem::AnyFloat)) ||
      failed(checker.check(getFinalState().getType(), "final_state",
                           getSegmentChunks() ? kSegmentStatesLayout
                                              : kStateLayout,
                           Elem::F32)) ||
      failed(checker.checkHeadGroups()) ||
      failed(checker.checkChunkCount(getChunkSize())))
    return failure();
  if (std::optional<uint64_t> segmentChunks = getSegmentChunks())
    if ((!entered && failed(checkSegmentable(*this, rank1, getGates()))) ||
        failed(checkSegmentCount(*this, checker, getChunkSize(),
                                 *segmentChunks)))
      return failure();
  return checkRank1Scale(*this, getRank1Scale());
}

LogicalResult SegmentCarriesOp::verify() {
  LayoutChecker checker(*this);
  if (failed(checker.check(getEnds().getType(), "ends", kSegmentStatesLayout,
                           Elem::F32)) ||
      failed(checkGates(checker, *this, getGates(), /*allowPerKey=*/false)) ||
      failed(checker.check(getCarries().getType(), "carries",
                           kSegmentStatesLayout, Elem::AnyFloat)) ||
      failed(checker.check(getFinalState().getType(), "final_state",
                           kStateLayout, Elem::F32)) ||
      failed(checkSegmentCount(*this, checker, getChunkSize(),
                               getSegmentChunks())))
    return failure();
  return success();
}

LogicalResult SegmentMapsOp::verify() {
  LayoutChecker checker(*this);
  bool perKey =
      getGates() && cast<ShapedType>(getGates().getType()).getRank() == 4;
  if (getDecayedKeys() && !perKey)
    return emitOpError() << "'decayed_keys' needs the chunks' total per-key "
                            "gates [B, NC, HV, K] as 'gates'";
  if ((getDecayedKeys()
           ? failed(checker.check(getK().getType(), "k", kWLayout,
                                  Elem::AnyFloat)) ||
                 failed(checker.check(getGates().getType(), "gates",
                                      kChunkTotalsLayout, Elem::F32))
           : failed(checker.check(getK().getType(), "k", kQKLayout,
                                  Elem::AnyFloat)) ||
                 failed(checkGates(checker, *this, getGates(),
                                   /*allowPerKey=*/true))) ||
      failed(checker.check(getU().getType(), "u", kVLayout, Elem::AnyFloat)) ||
      (getW() && failed(checkW(*this, checker, getW(), getK()))) ||
      failed(checker.check(getMaps().getType(), "maps",
                           {"B", "NS", "HV", "K", "K + V"}, Elem::F32)) ||
      failed(checker.checkHeadGroups()) ||
      failed(checker.checkChunkCount(getChunkSize())) ||
      failed(checkSegmentCount(*this, checker, getChunkSize(),
                               getSegmentChunks())))
    return failure();
  return checkMapColumns(*this, checker);
}

LogicalResult SegmentEntriesOp::verify() {
  LayoutChecker checker(*this);
  if (failed(checker.check(getMaps().getType(), "maps",
                           {"B", "NS", "HV", "K", "K + V"}, Elem::F32)) ||
      failed(checker.check(getInitialState().getType(), "initial_state",
                           kStateLayout, Elem::F32)) ||
      failed(checker.check(getEntries().getType(), "entries",
                           kSegmentStatesLayout, Elem::F32)) ||
      failed(checker.check(getFinalState().getType(), "final_state",
                           kStateLayout, Elem::F32)))
    return failure();
  return checkMapColumns(*this, checker);
}

LogicalResult ChunkOutputOp::verify() {
  LayoutChecker checker(*this);
  if (failed(checkPositiveScale(*this, getScale())))
    return failure();
  if (getQRnorm() && getQL2norm())
    return emitOpError() << "takes either 'q_rnorm' or 'q_l2norm' (the op "
                            "forms q's row norms itself), not both";
  if (failed(checker.check(getQ().getType(), "q", kQKLayout, Elem::AnyFloat)) ||
      failed(checkRNorm(checker, getQRnorm(), "q_rnorm")) ||
      failed(checker.check(getK().getType(), "k", kQKLayout, Elem::AnyFloat)) ||
      failed(checker.check(getNewValues().getType(), "new_values", kVLayout,
                           Elem::AnyFloat)) ||
      failed(checker.check(getChunkStates().getType(), "chunk_states",
                           kChunkStatesLayout, Elem::AnyFloat)) ||
      failed(checkGates(checker, *this, getGates(), /*allowPerKey=*/true)) ||
      failed(checker.check(getOutput().getType(), "output", kVLayout,
                           Elem::AnyFloat)) ||
      failed(checker.checkHeadGroups()) ||
      failed(checker.checkChunkCount(getChunkSize())))
    return failure();
  std::optional<uint64_t> segmentChunks = getSegmentChunks();
  if (bool(getCarries()) != bool(segmentChunks))
    return emitOpError() << "'carries' and 'segment_chunks' come together: "
                            "segment-local chunk states need both";
  if (segmentChunks &&
      (failed(checkSegmentable(*this, /*rank1=*/false, getGates())) ||
       failed(checker.check(getCarries().getType(), "carries",
                            kSegmentStatesLayout, Elem::AnyFloat)) ||
       failed(checkSegmentCount(*this, checker, getChunkSize(), *segmentChunks))))
    return failure();
  return success();
}

LogicalResult ChunkStatePassOutputOp::verify() {
  LayoutChecker checker(*this);
  if (failed(checkPositiveScale(*this, getScale())))
    return failure();
  if (failed(checker.check(getQ().getType(), "q", kQKLayout, Elem::AnyFloat)) ||
      failed(checker.check(getK().getType(), "k", kQKLayout, Elem::AnyFloat)) ||
      failed(checker.check(getU().getType(), "u", kVLayout, Elem::AnyFloat)) ||
      (getW() && failed(checkW(*this, checker, getW(), getK()))) ||
      failed(checkGates(checker, *this, getGates(), /*allowPerKey=*/false)) ||
      failed(checker.check(getInitialState().getType(), "initial_state",
                           kStateLayout, Elem::F32)) ||
      failed(checker.check(getOutput().getType(), "output", kVLayout,
                           Elem::AnyFloat)) ||
      failed(checker.check(getFinalState().getType(), "final_state",
                           kStateLayout, Elem::F32)) ||
      failed(checker.checkHeadGroups()))
    return failure();
  return success();
}

void ChunkStatePassOutputOp::unfuse() {
  OpBuilder builder(getOperation());
  Location loc = getLoc();
  auto u = cast<RankedTensorType>(getU().getType());
  auto state = cast<RankedTensorType>(getInitialState().getType());
  Type elem = getElementTypeOrSelf(getK().getType());
  // D [B, T, HV, V] and the chunk states [B, NC, HV, K, V], NC static
  // where T is.
  int64_t t = u.getDimSize(1);
  int64_t chunks =
      ShapedType::isDynamic(t)
          ? ShapedType::kDynamic
          : (t + int64_t(getChunkSize()) - 1) / int64_t(getChunkSize());
  auto newValues = RankedTensorType::get(u.getShape(), elem);
  auto states =
      RankedTensorType::get({state.getDimSize(0), chunks, state.getDimSize(1),
                             state.getDimSize(2), state.getDimSize(3)},
                            elem);
  auto pass = ChunkStatePassOp::create(
      builder, loc, TypeRange{newValues, states, getFinalState().getType()},
      getK(), /*k_rnorm=*/Value(), getU(), getW(), /*beta=*/Value(), getGates(),
      getInitialState(), getChunkSizeAttr(), /*rank1_scale=*/FloatAttr(),
      /*segment_chunks=*/IntegerAttr(), /*decayed_keys=*/UnitAttr());
  auto output = ChunkOutputOp::create(
      builder, loc, getOutput().getType(), getQ(), /*q_rnorm=*/Value(), getK(),
      pass.getNewValues(), pass.getChunkStates(), getGates(),
      /*carries=*/Value(), getChunkSizeAttr(), getScaleAttr(),
      /*segment_chunks=*/IntegerAttr(), getQL2normAttr());
  getOutput().replaceAllUsesWith(output.getOutput());
  getFinalState().replaceAllUsesWith(pass.getFinalState());
  erase();
}

//===----------------------------------------------------------------------===//
// ScanOp
//===----------------------------------------------------------------------===//

RankedTensorType ScanOp::getElementType(unsigned i) {
  auto type = cast<RankedTensorType>(getInputs()[i].getType());
  return RankedTensorType::get(type.getShape().drop_front(getDimension() + 1),
                               type.getElementType());
}

RankedTensorType ScanOp::getCarryType(unsigned i) {
  auto type = cast<RankedTensorType>(getInputs()[i].getType());
  SmallVector<int64_t> shape(type.getShape());
  shape.erase(shape.begin() + getDimension());
  return RankedTensorType::get(shape, type.getElementType());
}

LogicalResult ScanOp::verify() {
  unsigned n = getInputs().size();
  int64_t dim = getDimension();
  if (n == 0)
    return emitOpError() << "needs at least one input to scan";
  auto first = cast<RankedTensorType>(getInputs()[0].getType());
  for (auto [i, input] : llvm::enumerate(getInputs())) {
    auto type = cast<RankedTensorType>(input.getType());
    if (type.getRank() <= dim)
      return emitOpError() << "input #" << i << " has rank " << type.getRank()
                           << " but the scan dimension is " << dim;
    for (int64_t d = 0; d <= dim; ++d) {
      int64_t a = first.getDimSize(d), b = type.getDimSize(d);
      if (!ShapedType::isDynamic(a) && !ShapedType::isDynamic(b) && a != b)
        return emitOpError() << "input #" << i << " has size " << b
                             << " in dimension " << d << " but input #0 has "
                             << a << " (inputs share the batch dimensions "
                                     "and the scan dimension)";
    }
  }
  if (!getInits().empty() && getInits().size() != n)
    return emitOpError() << "takes one init per input (" << n << "), got "
                         << getInits().size();
  if (getExclusive() && getInits().empty())
    return emitOpError() << "an exclusive scan needs 'init' (its first "
                            "output)";
  for (auto [i, init] : llvm::enumerate(getInits()))
    if (failed(verifyCompatibleShape(init.getType(), getCarryType(i))) ||
        getElementTypeOrSelf(init.getType()) !=
            getCarryType(i).getElementType())
      return emitOpError() << "init #" << i << " must have type "
                           << getCarryType(i) << " (input #" << i
                           << " without the scan dimension), got "
                           << init.getType();
  if (getNumResults() != 2 * n)
    return emitOpError() << "has " << getNumResults() << " results; expected "
                         << 2 * n << " (the " << n
                         << " scanned tensors, then the " << n
                         << " carries out)";
  for (unsigned i = 0; i < n; ++i) {
    if (failed(verifyCompatibleShape(getOutputs()[i].getType(),
                                     getInputs()[i].getType())) ||
        getElementTypeOrSelf(getOutputs()[i].getType()) !=
            getElementTypeOrSelf(getInputs()[i].getType()))
      return emitOpError() << "result #" << i << " must have the type of input #"
                           << i << " (" << getInputs()[i].getType()
                           << "), got " << getOutputs()[i].getType();
    if (failed(verifyCompatibleShape(getCarries()[i].getType(),
                                     getCarryType(i))) ||
        getElementTypeOrSelf(getCarries()[i].getType()) !=
            getCarryType(i).getElementType())
      return emitOpError() << "result #" << n + i << " (carry out #" << i
                           << ") must have type " << getCarryType(i)
                           << ", got " << getCarries()[i].getType();
  }
  return success();
}

LogicalResult ScanOp::verifyRegions() {
  unsigned n = getInputs().size();
  Block &body = getCombiner().front();
  if (body.getNumArguments() != 2 * n)
    return emitOpError() << "combiner must take " << 2 * n
                         << " arguments (the accumulated tuple, then the next "
                            "one), got "
                         << body.getNumArguments();
  for (unsigned i = 0; i < 2 * n; ++i) {
    RankedTensorType want = getElementType(i % n);
    if (body.getArgument(i).getType() != want)
      return emitOpError() << "combiner argument #" << i << " must be "
                           << want << " (the element of input #" << i % n
                           << "), got " << body.getArgument(i).getType();
  }
  auto yield = cast<YieldOp>(body.getTerminator());
  if (yield.getValues().size() != n)
    return yield.emitOpError() << "must yield " << n
                               << " values (one per input), got "
                               << yield.getValues().size();
  for (unsigned i = 0; i < n; ++i)
    if (yield.getValues()[i].getType() != getElementType(i))
      return yield.emitOpError()
             << "value #" << i << " must be " << getElementType(i)
             << " (the element of input #" << i << "), got "
             << yield.getValues()[i].getType();
  return success();
}

//===----------------------------------------------------------------------===//
// Segment-scan ops
//===----------------------------------------------------------------------===//

LogicalResult ChunkTransitionsOp::verify() {
  LayoutChecker checker(*this);
  bool wy = static_cast<bool>(getW());
  if (failed(checker.check(getK().getType(), "k", kQKLayout, Elem::AnyFloat)) ||
      failed(checker.check(getU().getType(), "u", kVLayout, Elem::AnyFloat)) ||
      (wy && failed(checker.check(getW().getType(), "w", kWLayout, Elem::AnyFloat))) ||
      failed(checkGates(checker, *this, getGates(), /*allowPerKey=*/true)) ||
      failed(checker.check(getOffsets().getType(), "offsets",
                           kChunkStatesLayout, Elem::F32)))
    return failure();
  auto transitions = cast<RankedTensorType>(getTransitions().getType());
  if (wy) {
    if (failed(checker.check(transitions, "transitions",
                             {"B", "NC", "HV", "K", "K"}, Elem::F32)))
      return failure();
  } else {
    bool perKey =
        getGates() && cast<RankedTensorType>(getGates().getType()).getRank() == 4;
    SmallVector<StringRef> layout = {"B", "NC", "HV"};
    if (perKey)
      layout.push_back("K");
    if (transitions.getRank() != (int64_t)layout.size())
      return emitOpError() << "without 'w' the transitions are log decays "
                           << "[" << llvm::join(layout, ", ") << "], got "
                           << transitions;
    if (failed(checker.check(transitions, "transitions", layout, Elem::F32)))
      return failure();
  }
  if (failed(checker.checkHeadGroups()) ||
      failed(checker.checkChunkCount(getChunkSize())))
    return failure();
  return success();
}

LogicalResult ChunkNewValuesOp::verify() {
  LayoutChecker checker(*this);
  if (failed(checker.check(getU().getType(), "u", kVLayout, Elem::AnyFloat)) ||
      (getW() &&
       failed(checker.check(getW().getType(), "w", kWLayout, Elem::AnyFloat))) ||
      failed(checker.check(getChunkStates().getType(), "chunk_states",
                           kChunkStatesLayout, Elem::F32)) ||
      failed(checker.check(getNewValues().getType(), "new_values", kVLayout,
                           Elem::F32)) ||
      failed(checker.checkChunkCount(getChunkSize())))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Chunked backward ops
//===----------------------------------------------------------------------===//

namespace {

} // namespace

LogicalResult ChunkStatePassGradOp::verify() {
  LayoutChecker checker(*this);
  if (failed(checkPositiveScale(*this, getScale())) ||
      failed(checker.check(getQ().getType(), "q", kQKLayout, Elem::AnyFloat)) ||
      failed(checkRNorm(checker, getQRnorm(), "q_rnorm")) ||
      failed(checker.check(getK().getType(), "k", kQKLayout, Elem::AnyFloat)) ||
      (getW() && failed(checkW(*this, checker, getW(), getK()))) ||
      failed(checkGates(checker, *this, getGates(), /*allowPerKey=*/true)) ||
      failed(checker.check(getGradOutput().getType(), "grad_output", kVLayout,
                           Elem::AnyFloat)) ||
      failed(checker.check(getGradFinalState().getType(), "grad_final_state",
                           kStateLayout, Elem::F32)) ||
      failed(checker.check(getGradNewValues().getType(), "grad_new_values",
                           kVLayout, Elem::F32)) ||
      failed(checker.check(getGradChunkStates().getType(), "grad_chunk_states",
                           kChunkStatesLayout, Elem::F32)) ||
      failed(checker.check(getGradInitialState().getType(),
                           "grad_initial_state", kStateLayout, Elem::F32)) ||
      failed(checker.checkHeadGroups()) ||
      failed(checker.checkChunkCount(getChunkSize())))
    return failure();
  return success();
}

LogicalResult ChunkGradOp::verify() {
  LayoutChecker checker(*this);
  bool wy = getBeta() || getW() || getU();
  if (wy && !(getBeta() && getW() && getU() && getRank1Scale()))
    return emitOpError() << "the WY form needs 'beta', 'w', 'u' and "
                            "'rank1_scale' together";
  if (bool(getGradBeta()) != bool(getBeta()))
    return emitOpError() << "returns 'grad_beta' exactly when it takes 'beta'";
  if (getGradGates() && !getGates())
    return emitOpError() << "'grad_gates' needs 'gates'";
  bool factored = getQRnorm() || getKRnorm();
  if (factored && !(getQRnorm() && getKRnorm() && wy))
    return emitOpError() << "'q_rnorm' and 'k_rnorm' (qk_l2norm factored) "
                            "come together, with the WY form";
  if (failed(checkPositiveScale(*this, getScale())) ||
      failed(checker.check(getQ().getType(), "q", kQKLayout, Elem::AnyFloat)) ||
      failed(checkRNorm(checker, getQRnorm(), "q_rnorm")) ||
      failed(checker.check(getK().getType(), "k", kQKLayout, Elem::AnyFloat)) ||
      failed(checkRNorm(checker, getKRnorm(), "k_rnorm")) ||
      failed(checker.check(getV().getType(), "v", kVLayout, Elem::AnyFloat)) ||
      failed(checkGates(checker, *this, getGates(), /*allowPerKey=*/true)) ||
      failed(checker.check(getNewValues().getType(), "new_values", kVLayout,
                           Elem::AnyFloat)) ||
      failed(checker.check(getChunkStates().getType(), "chunk_states",
                           kChunkStatesLayout, Elem::AnyFloat)) ||
      failed(checker.check(getGradOutput().getType(), "grad_output", kVLayout,
                           Elem::AnyFloat)) ||
      failed(checker.check(getGradNewValues().getType(), "grad_new_values",
                           kVLayout, Elem::F32)) ||
      failed(checker.check(getGradChunkStates().getType(), "grad_states",
                           kChunkStatesLayout, Elem::F32)) ||
      failed(checker.check(getGradQ().getType(), "grad_q", kWLayout,
                           Elem::AnyFloat)) ||
      failed(checker.check(getGradK().getType(), "grad_k", kWLayout,
                           Elem::AnyFloat)) ||
      failed(checker.check(getGradV().getType(), "grad_v", kVLayout,
                           Elem::AnyFloat)) ||
      failed(checker.checkHeadGroups()) ||
      failed(checker.checkChunkCount(getChunkSize())))
    return failure();
  // grad_q and grad_k are per value head in f32, or, where each q/k head
  // has one value head, q's and k's own gradients in their element type.
  for (auto [result, input, name, inputName] :
       {std::tuple{getGradQ(), getQ(), "grad_q", "q"},
        std::tuple{getGradK(), getK(), "grad_k", "k"}}) {
    Type elem = getElementTypeOrSelf(result.getType());
    Type inputElem = getElementTypeOrSelf(input.getType());
    if (elem.isF32())
      continue;
    if (factored)
      return emitOpError() << "'" << name
                           << "' of the factored form (q_rnorm, k_rnorm) is "
                              "f32 for linattn.qk_grad {factored}, got "
                           << elem;
    if (checker.get("H") != checker.get("HV"))
      return emitOpError() << "'" << name
                           << "' is per value head in f32 where HV = "
                           << checker.get("HV") << " != H = " << checker.get("H")
                           << " (linattn.qk_grad sums it), got " << elem;
    if (elem != inputElem)
      return emitOpError() << "'" << name
                           << "' must be f32 or the element type of '"
                           << inputName << "' (" << inputElem << "), got "
                           << elem;
  }
  if (wy &&
      (failed(checker.check(getBeta().getType(), "beta", kScalarGateLayout,
                            Elem::AnyFloat)) ||
       failed(checkW(*this, checker, getW(), getK())) ||
       failed(checker.check(getU().getType(), "u", kVLayout, Elem::F32)) ||
       failed(checker.check(getGradBeta().getType(), "grad_beta",
                            kScalarGateLayout, Elem::F32)) ||
       failed(checkRank1Scale(*this, getRank1Scale()))))
    return failure();
  if (getGradGates() && getGradGates().getType() != getGates().getType())
    return emitOpError() << "'grad_gates' must have the gates' type "
                         << getGates().getType() << ", got "
                         << getGradGates().getType();
  return success();
}

LogicalResult QKGradOp::verify() {
  LayoutChecker checker(*this);
  if (failed(checker.check(getInput().getType(), "input", kQKLayout,
                           Elem::AnyFloat)) ||
      failed(checker.check(getGrad().getType(), "grad", kWLayout, Elem::F32)) ||
      failed(checker.checkHeadGroups()))
    return failure();
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getResult().getType());
  if (!isSupportedInputElementType(out.getElementType()) ||
      failed(verifyCompatibleShape(in.getShape(), out.getShape())))
    return emitOpError() << "result must have the input's shape [B, T, H, K] "
                            "and a float element type, got "
                         << out;
  if (getFactored() && !getQkL2norm())
    return emitOpError() << "'factored' is a form of 'qk_l2norm' (the "
                            "normalisation's gradient) and needs it";
  return success();
}
