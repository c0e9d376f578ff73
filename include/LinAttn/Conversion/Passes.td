//===- Passes.td - LinAttn conversion passes ---------------*- tablegen -*-===//

#ifndef LINATTN_CONVERSION_PASSES_TD
#define LINATTN_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertLinAttnToLoops
    : Pass<"convert-linattn-to-loops"> {
  let summary = "Lower linattn.recurrence to its sequential loop (the oracle)";
  let description = [{
    Rewrites every `linattn.recurrence` into the loop that defines its
    semantics: for each sequence b and value head hv, for t = 1..T,

        S = M_t S + b_t k_t v_t^T,     o_t = scale * S^T q_t

    on memrefs (`bufferization.to_buffer` of the operands, fresh buffers for
    the results wrapped by `bufferization.to_tensor`), with `scf.for` loops
    and fp32 arithmetic. The state lives in the final-state buffer. Dynamic
    B and T are checked against each other with `cf.assert` before the loop.
    This is the reference every other algorithm is proved against; it is
    neither parallel nor fast.
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect",
    "mlir::bufferization::BufferizationDialect",
    "mlir::cf::ControlFlowDialect",
    "mlir::math::MathDialect",
    "mlir::memref::MemRefDialect",
    "mlir::scf::SCFDialect",
    "mlir::tensor::TensorDialect",
  ];
  let statistics = [
    Statistic<"numLowered", "num-lowered",
              "Number of linattn.recurrence ops lowered to loops">,
  ];
}

#endif // LINATTN_CONVERSION_PASSES_TD
