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

#endif // LINATTN_TRANSFORMS_PASSES_TD
