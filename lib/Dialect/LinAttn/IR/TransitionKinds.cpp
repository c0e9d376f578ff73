//===- TransitionKinds.cpp - What each transition kind means --------------===//

#include "LinAttn/Dialect/LinAttn/IR/TransitionKinds.h"

#include "llvm/Support/ErrorHandling.h"

namespace mlir::linattn {

/// kind                           decay                rank1Scale
static const TransitionKindInfo kTransitionKinds[] = {
    {TransitionKind::Identity,      DecayForm::None,     0.0f},
    {TransitionKind::ConstantDecay, DecayForm::Constant, 0.0f},
    {TransitionKind::ScalarGate,    DecayForm::Scalar,   0.0f},
    {TransitionKind::KeyGate,       DecayForm::PerKey,   0.0f},
    {TransitionKind::Delta,         DecayForm::None,     1.0f},
    {TransitionKind::GatedDelta,    DecayForm::Scalar,   1.0f},
    {TransitionKind::NegEigDelta,   DecayForm::None,     2.0f},
    {TransitionKind::KeyGatedDelta, DecayForm::PerKey,   1.0f},
};

const TransitionKindInfo &getTransitionKindInfo(TransitionKind kind) {
  for (const TransitionKindInfo &info : kTransitionKinds)
    if (info.kind == kind)
      return info;
  llvm_unreachable("every transition kind has a row in kTransitionKinds");
}

} // namespace mlir::linattn
