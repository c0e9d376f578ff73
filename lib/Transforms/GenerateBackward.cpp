//===- GenerateBackward.cpp - The gradient function of each spec ----------===//
//
// Derives @NAME_backward from each public spec function @NAME: the adjoint
// of its linattn.recurrence, linattn.recurrence_grad, whose semantics (and
// the equations it implements) the op's documentation states.
//
//===----------------------------------------------------------------------===//

#include "LinAttn/Transforms/Passes.h"

#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::linattn {
#define GEN_PASS_DEF_LINATTNGENERATEBACKWARD
#include "LinAttn/Transforms/Passes.h.inc"

namespace {

/// The recurrence a spec function computes: its body is the recurrence on
/// its arguments, each argument exactly one operand, returning (o, s). Or
/// why not.
FailureOr<RecurrenceOp> specRecurrence(func::FuncOp func, std::string &why) {
  Block &body = func.getBody().front();
  auto ops = body.without_terminator();
  auto recurrence =
      ops.empty() ? RecurrenceOp() : dyn_cast<RecurrenceOp>(*ops.begin());
  if (!recurrence || std::next(ops.begin()) != ops.end()) {
    why = "its body must be one linattn.recurrence returning (o, final "
          "state)";
    return failure();
  }
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  if (ret.getNumOperands() != 2 ||
      ret.getOperand(0) != recurrence.getOutput() ||
      ret.getOperand(1) != recurrence.getFinalState()) {
    why = "it must return the recurrence's (o, final state), in that order";
    return failure();
  }
  SmallVector<int> operandOfArg(func.getNumArguments(), -1);
  for (auto [i, operand] : llvm::enumerate(recurrence->getOperands())) {
    auto arg = dyn_cast<BlockArgument>(operand);
    if (!arg || arg.getOwner() != &body) {
      why = ("operand '" + recurrence.getOperandName(i) +
             "' of its recurrence must be a function argument")
                .str();
      return failure();
    }
    if (operandOfArg[arg.getArgNumber()] >= 0) {
      why = ("argument #" + Twine(arg.getArgNumber()) + " is both '" +
             recurrence.getOperandName(operandOfArg[arg.getArgNumber()]) +
             "' and '" + recurrence.getOperandName(i) +
             "': each argument must be one operand")
                .str();
      return failure();
    }
    operandOfArg[arg.getArgNumber()] = i;
  }
  for (auto [arg, operand] : llvm::enumerate(operandOfArg))
    if (operand < 0) {
      why = ("argument #" + Twine(arg) + " is not an operand of its recurrence")
                .str();
      return failure();
    }
  return recurrence;
}

struct LinAttnGenerateBackward
    : impl::LinAttnGenerateBackwardBase<LinAttnGenerateBackward> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> specs;
    for (auto func : module.getOps<func::FuncOp>())
      if (func.isPublic() && !func.isExternal() &&
          !func.getBody().getOps<RecurrenceOp>().empty())
        specs.push_back(func);
    for (func::FuncOp func : specs)
      if (failed(derive(module, func)))
        return signalPassFailure();
  }

  /// Adds @NAME_backward after @NAME.
  LogicalResult derive(ModuleOp module, func::FuncOp func) {
    std::string why;
    FailureOr<RecurrenceOp> found = specRecurrence(func, why);
    if (failed(found))
      return func.emitError() << "cannot derive the backward of @"
                              << func.getSymName() << ": " << why;
    RecurrenceOp forward = *found;
    std::string name = (func.getSymName() + "_backward").str();
    if (module.lookupSymbol(name))
      return func.emitError()
             << "cannot derive the backward of @" << func.getSymName() << ": @"
             << name << " exists already";

    // (forward arguments..., do, ds) -> (d argument...).
    FunctionType type = func.getFunctionType();
    SmallVector<Type> inputs(type.getInputs());
    inputs.append(type.getResults().begin(), type.getResults().end());
    SmallVector<Type> gradTypes;
    for (auto [i, operand] : llvm::enumerate(forward->getOperands()))
      gradTypes.push_back(RecurrenceGradOp::getGradientType(
          cast<RankedTensorType>(operand.getType()), i));

    OpBuilder b(func);
    b.setInsertionPointAfter(func);
    Location loc = func.getLoc();
    SmallVector<Type> resultTypes;
    for (BlockArgument arg : func.getArguments())
      for (auto [i, operand] : llvm::enumerate(forward->getOperands()))
        if (operand == arg)
          resultTypes.push_back(gradTypes[i]);
    auto backward = func::FuncOp::create(
        b, loc, name, b.getFunctionType(inputs, resultTypes));
    Block *entry = backward.addEntryBlock();
    b.setInsertionPointToStart(entry);

    // The adjoint reads the same arguments in the forward's operand order.
    SmallVector<Value> operands;
    for (Value operand : forward->getOperands())
      operands.push_back(
          entry->getArgument(cast<BlockArgument>(operand).getArgNumber()));
    unsigned numArgs = func.getNumArguments();
    auto grad = RecurrenceGradOp::create(
        b, loc, gradTypes, forward.getKindAttr(), operands[0], operands[1],
        operands[2], forward.getGate() ? operands[3] : Value(),
        forward.getBeta() ? operands[forward.getGate() ? 4 : 3] : Value(),
        operands.back(), entry->getArgument(numArgs),
        entry->getArgument(numArgs + 1), forward.getScaleAttr(),
        forward.getDecayAttr(), forward.getQkL2normAttr());
    SmallVector<Value> results;
    for (BlockArgument arg : func.getArguments())
      for (auto [i, operand] : llvm::enumerate(forward->getOperands()))
        if (operand == arg)
          results.push_back(grad.getGradientOf(i));
    func::ReturnOp::create(b, loc, results);
    return success();
  }
};

} // namespace
} // namespace mlir::linattn
