//===- LinAttnOps.cpp - LinAttn operations --------------------------------===//
//
// Verifiers and helpers of the LinAttn operations.
//
//===----------------------------------------------------------------------===//

#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"

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
} // namespace

bool RecurrenceOp::isDeltaRule() {
  switch (getKind()) {
  case TransitionKind::Delta:
  case TransitionKind::GatedDelta:
  case TransitionKind::NegEigDelta:
    return true;
  default:
    return false;
  }
}

bool RecurrenceOp::hasGateOperand() {
  switch (getKind()) {
  case TransitionKind::ScalarGate:
  case TransitionKind::KeyGate:
  case TransitionKind::GatedDelta:
    return true;
  default:
    return false;
  }
}

float RecurrenceOp::getEffectiveScale() {
  if (std::optional<APFloat> s = getScale())
    return s->convertToFloat();
  return 1.0f / std::sqrt(static_cast<float>(getKeyDim()));
}

float RecurrenceOp::getDecayForHead(int64_t hv) {
  ArrayRef<float> gammas = *getDecay();
  return gammas.size() == 1 ? gammas[0] : gammas[hv];
}

StringRef RecurrenceOp::getOperandName(unsigned i) {
  if (i < 3)
    return (const char *[]){"q", "k", "v"}[i];
  if (i == getNumOperands() - 1)
    return "initial_state";
  if (i == 3 && getGate())
    return "gate";
  return "beta";
}

SmallVector<RecurrenceOp::DimEquality> RecurrenceOp::getDimEqualities() {
  enum { Q = 0, K = 1, V = 2 };
  unsigned next = 3;
  std::optional<unsigned> gate, beta;
  if (getGate())
    gate = next++;
  if (getBeta())
    beta = next++;
  unsigned state = next;

  SmallVector<DimEquality> eqs = {
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
  if (gate && cast<RankedTensorType>(getGate().getType()).getRank() == 4)
    eqs.push_back({Q, 3, *gate, 3, "K"});
  return eqs;
}

LogicalResult RecurrenceOp::verify() {
  auto qType = cast<RankedTensorType>(getQ().getType());
  auto kType = cast<RankedTensorType>(getK().getType());
  auto vType = cast<RankedTensorType>(getV().getType());
  auto stateType = cast<RankedTensorType>(getInitialState().getType());
  StringRef kindName = stringifyTransitionKind(getKind());

  // Ranks.
  auto checkRank = [&](RankedTensorType t, StringRef name, int64_t rank,
                       StringRef layout) -> LogicalResult {
    if (t.getRank() == rank)
      return success();
    return emitOpError() << "'" << name << "' must be a rank-" << rank
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
    return emitOpError() << "'q' element type must be bf16, f16 or f32, got "
                         << elemType;
  if (kType.getElementType() != elemType)
    return emitOpError() << "'k' element type " << kType.getElementType()
                         << " must match the element type of 'q' ("
                         << elemType << ")";
  if (vType.getElementType() != elemType)
    return emitOpError() << "'v' element type " << vType.getElementType()
                         << " must match the element type of 'q' ("
                         << elemType << ")";
  if (!stateType.getElementType().isF32())
    return emitOpError() << "'initial_state' must have element type f32 (the "
                            "state is kept in fp32), got "
                         << stateType.getElementType();

  // Head counts and head dims are static: they size registers and tiles.
  for (auto [type, name, dims] :
       {std::make_tuple(qType, "q", kQKDims), std::make_tuple(kType, "k", kQKDims),
        std::make_tuple(vType, "v", kVDims)}) {
    for (int64_t d = 2; d < 4; ++d)
      if (type.isDynamicDim(d))
        return emitOpError() << "dimension " << dims[d] << " of '" << name
                             << "' must be static (only B and T may be "
                                "dynamic), got "
                             << type;
  }
  for (int64_t d = 1; d < 4; ++d)
    if (stateType.isDynamicDim(d))
      return emitOpError() << "dimension " << kStateDims[d]
                           << " of 'initial_state' must be static (only B "
                              "may be dynamic), got "
                           << stateType;
  int64_t numQKHeads = getNumQKHeads(), numVHeads = getNumVHeads();
  if (numQKHeads <= 0 || getKeyDim() <= 0 || numVHeads <= 0 ||
      getValueDim() <= 0)
    return emitOpError() << "H, K, HV and V must be positive, got H = "
                         << numQKHeads << ", K = " << getKeyDim()
                         << ", HV = " << numVHeads << ", V = " << getValueDim();
  if (numVHeads % numQKHeads != 0)
    return emitOpError() << "the number of value heads HV = " << numVHeads
                         << " must be a multiple of the number of query/key "
                            "heads H = "
                         << numQKHeads;

  // Operands required or forbidden by the kind.
  bool wantsGate = hasGateOperand(), wantsBeta = isDeltaRule();
  if (wantsGate && !getGate())
    return emitOpError() << "kind '" << kindName
                         << "' requires a 'gate' operand (log-space gate)";
  if (!wantsGate && getGate())
    return emitOpError() << "kind '" << kindName
                         << "' takes no 'gate' operand";
  if (wantsBeta && !getBeta())
    return emitOpError() << "kind '" << kindName
                         << "' requires a 'beta' operand [B, T, HV]";
  if (!wantsBeta && getBeta())
    return emitOpError() << "kind '" << kindName
                         << "' takes no 'beta' operand";

  // Gate and beta shapes.
  if (Value gate = getGate()) {
    auto gateType = cast<RankedTensorType>(gate.getType());
    bool perKey = getKind() == TransitionKind::KeyGate;
    int64_t rank = perKey ? 4 : 3;
    if (gateType.getRank() != rank)
      return emitOpError() << "kind '" << kindName << "' takes a "
                           << (perKey ? "per-key gate [B, T, HV, K]"
                                      : "scalar gate [B, T, HV]")
                           << " of rank " << rank << ", got " << gateType;
    if (!isSupportedInputElementType(gateType.getElementType()))
      return emitOpError() << "'gate' element type must be bf16, f16 or f32, "
                              "got "
                           << gateType.getElementType();
  }
  if (Value beta = getBeta()) {
    auto betaType = cast<RankedTensorType>(beta.getType());
    if (betaType.getRank() != 3)
      return emitOpError() << "'beta' must be a rank-3 tensor [B, T, HV], got "
                           << betaType;
    if (!isSupportedInputElementType(betaType.getElementType()))
      return emitOpError() << "'beta' element type must be bf16, f16 or f32, "
                              "got "
                           << betaType.getElementType();
  }

  // Dimensions shared between operands.
  auto dimName = [&](unsigned operand, unsigned dim) -> const char * {
    StringRef name = getOperandName(operand);
    if (name == "q" || name == "k")
      return kQKDims[dim];
    if (name == "v")
      return kVDims[dim];
    if (name == "initial_state")
      return kStateDims[dim];
    if (name == "gate" &&
        cast<RankedTensorType>(getGate().getType()).getRank() == 4)
      return kKeyGateDims[dim];
    return kScalarGateDims[dim];
  };
  for (const DimEquality &eq : getDimEqualities()) {
    auto lhs = cast<RankedTensorType>(getOperand(eq.lhsOperand).getType());
    auto rhs = cast<RankedTensorType>(getOperand(eq.rhsOperand).getType());
    int64_t l = lhs.getDimSize(eq.lhsDim), r = rhs.getDimSize(eq.rhsDim);
    if (ShapedType::isDynamic(l) || ShapedType::isDynamic(r) || l == r)
      continue;
    return emitOpError() << "dimension " << dimName(eq.rhsOperand, eq.rhsDim)
                         << " of '" << getOperandName(eq.rhsOperand) << "' ("
                         << r << ") must equal " << eq.what << " = " << l
                         << " (dimension " << dimName(eq.lhsOperand, eq.lhsDim)
                         << " of '" << getOperandName(eq.lhsOperand) << "')";
  }

  // Results: o is [B, T, HV, V] in v's element type, the state [B, HV, K, V]
  // in f32. A result dim may be dynamic where the operand's is static, but
  // two static sizes must agree.
  auto checkResult = [&](Value result, StringRef name,
                         ArrayRef<int64_t> expectShape, Type expectElem,
                         StringRef layout) -> LogicalResult {
    auto type = dyn_cast<RankedTensorType>(result.getType());
    bool ok = type && type.getRank() == (int64_t)expectShape.size() &&
              type.getElementType() == expectElem;
    for (int64_t d = 0; ok && d < (int64_t)expectShape.size(); ++d) {
      int64_t got = type.getDimSize(d), want = expectShape[d];
      ok = ShapedType::isDynamic(got) || ShapedType::isDynamic(want) ||
           got == want;
    }
    if (ok)
      return success();
    std::string expected = "tensor<";
    for (int64_t d : expectShape)
      expected += formatDim(d) + "x";
    llvm::raw_string_ostream os(expected);
    os << expectElem << ">";
    return emitOpError() << "result '" << name << "' must be " << layout
                         << " = " << expected << ", got " << result.getType();
  };
  if (failed(checkResult(getOutput(), "output",
                         {qType.getDimSize(0), qType.getDimSize(1), numVHeads,
                          getValueDim()},
                         elemType, "[B, T, HV, V] in v's element type")) ||
      failed(checkResult(getFinalState(), "final_state",
                         {qType.getDimSize(0), numVHeads, getKeyDim(),
                          getValueDim()},
                         Float32Type::get(getContext()),
                         "[B, HV, K, V] in f32")))
    return failure();

  // Attributes.
  if (std::optional<APFloat> scaleAttr = getScale()) {
    float scale = scaleAttr->convertToFloat();
    if (!std::isfinite(scale) || scale <= 0.0f)
      return emitOpError() << "'scale' must be finite and positive, got "
                           << scale;
  }
  bool wantsDecay = getKind() == TransitionKind::ConstantDecay;
  if (wantsDecay && !getDecay())
    return emitOpError() << "kind 'constant_decay' requires a 'decay' "
                            "attribute: array<f32: gamma per value head>";
  if (!wantsDecay && getDecay())
    return emitOpError() << "'decay' is only allowed with kind "
                            "'constant_decay', not '"
                         << kindName << "'";
  if (std::optional<ArrayRef<float>> decay = getDecay()) {
    if (decay->size() != 1 && (int64_t)decay->size() != numVHeads)
      return emitOpError() << "'decay' must hold one gamma per value head (HV "
                              "= "
                           << numVHeads << ") or a single shared gamma, got "
                           << decay->size() << " values";
    for (auto [i, gamma] : llvm::enumerate(*decay))
      if (!(gamma > 0.0f && gamma <= 1.0f))
        return emitOpError() << "'decay' values must lie in (0, 1], got "
                             << gamma << " at index " << i;
  }
  return success();
}
