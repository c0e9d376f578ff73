//===- Passes.td - LinAttn transformation passes -----------*- tablegen -*-===//

#ifndef LINATTN_TRANSFORMS_PASSES_TD
#define LINATTN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def LinAttnEmitCInterface
    : Pass<"linattn-emit-c-interface", "mlir::ModuleOp"> {
  let summary = "Mark public functions for the C calling interface";
  let description = [{
    Sets `llvm.emit_c_interface` on every public `func.func` definition so
    that `convert-func-to-llvm` also emits `_mlir_ciface_<name>`, which takes
    memrefs as pointers to descriptors. Host programs (and `linattn-run`)
    call compiled specs through it.
  }];
}

def LinAttnRecurrenceToChunked
    : InterfacePass<"linattn-recurrence-to-chunked",
                    "mlir::FunctionOpInterface"> {
  let summary = "Rewrite linattn.recurrence into the chunkwise two-pass form";
  let description = [{
    Splits T into chunks of `chunk-size` tokens and rewrites every
    `linattn.recurrence` into algorithm ops:

        [linattn.l2norm]            q, k        (with qk_l2norm)
        [linattn.chunk_cumsum]      G           (gated kinds; constant_decay
                                                 gets g = log(gamma) per token)
        linattn.chunk_state_pass    D, S_n, S_T (delta kinds in rank-1
                                                 product form, with beta)
        linattn.chunk_output        o

    Delta kinds keep the chunk's product of rank-1 transitions unexpanded;
    `linattn-lower-rank1-to-wy` turns it into WY/UT form.
  }];
  let options = [
    Option<"chunkSize", "chunk-size", "int64_t", /*default=*/"64",
           "Tokens per chunk">,
  ];
  let dependentDialects = [
    "mlir::arith::ArithDialect",
    "mlir::tensor::TensorDialect",
  ];
  let statistics = [
    Statistic<"numRewritten", "num-rewritten",
              "Number of recurrences rewritten to the chunked form">,
  ];
}

def LinAttnLowerRank1ToWY
    : InterfacePass<"linattn-lower-rank1-to-wy", "mlir::FunctionOpInterface"> {
  let summary = "Lower products of rank-1 transitions to WY/UT form";
  let description = [{
    Rewrites a `linattn.chunk_state_pass` in rank-1 product form (operand
    `beta`: the chunk's transitions `a_t (I - c_t k_t k_t^T)` applied one by
    one) into `linattn.ut_transform`, which computes

        A = (I + StrictLower(diag(c) K K^T * exp(G_i - G_j)))^-1
        W = A diag(c exp(G)) K,     U = A diag(beta) V,

    and a state pass in WY form (`D = U - W S_n`), where everything but the
    triangular solve is a matrix product.
  }];
  let statistics = [
    Statistic<"numRewritten", "num-rewritten",
              "Number of rank-1 state passes rewritten to WY form">,
  ];
}

#endif // LINATTN_TRANSFORMS_PASSES_TD
