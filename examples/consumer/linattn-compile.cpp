//===- linattn-compile.cpp - A compiler that embeds LinAttn ---------------===//
//
// The smallest host compiler: its own context and pass manager, LinAttn's
// dialects, and the linattn-to-cpu pipeline added programmatically. Compiles
// a built-in spec, or the file given as the only argument, to the LLVM
// dialect and prints it.
//
//===----------------------------------------------------------------------===//

#include "LinAttn/InitAllDialects.h"
#include "LinAttn/Pipelines/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

// Linear attention (identity transition), B and T dynamic, H = HV = 2,
// K = 16, V = 8.
static const char *const kSpec = R"mlir(
func.func @linear_attention(%q: tensor<?x?x2x16xf32>, %k: tensor<?x?x2x16xf32>,
    %v: tensor<?x?x2x8xf32>, %s0: tensor<?x2x16x8xf32>)
    -> (tensor<?x?x2x8xf32>, tensor<?x2x16x8xf32>) {
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%s0)
      : (tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?x?x2x8xf32>,
         tensor<?x2x16x8xf32>) -> (tensor<?x?x2x8xf32>, tensor<?x2x16x8xf32>)
  return %o, %s : tensor<?x?x2x8xf32>, tensor<?x2x16x8xf32>
}
)mlir";

int main(int argc, char **argv) {
  if (argc > 2) {
    llvm::errs() << "usage: " << argv[0] << " [spec.mlir]\n";
    return 2;
  }

  mlir::DialectRegistry registry;
  mlir::linattn::registerAllDialects(registry);
  mlir::MLIRContext context(registry);

  mlir::OwningOpRef<mlir::ModuleOp> module;
  llvm::SourceMgr sourceMgr;
  if (argc == 2)
    module = mlir::parseSourceFile<mlir::ModuleOp>(argv[1], sourceMgr,
                                                   &context);
  else
    module = mlir::parseSourceString<mlir::ModuleOp>(kSpec, &context);
  if (!module)
    return 1; // The parser has reported the error.

  mlir::PassManager pm(&context);
  mlir::linattn::LinAttnToCPUOptions options;
  options.emitCInterface = true;
  mlir::linattn::buildLinAttnToCPUPipeline(pm, options);
  if (mlir::failed(pm.run(*module))) {
    llvm::errs() << "linattn-compile: linattn-to-cpu failed\n";
    return 1;
  }

  module->print(llvm::outs());
  llvm::outs() << "\n";
  return 0;
}
