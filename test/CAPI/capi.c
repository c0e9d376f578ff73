//===- capi.c - LinAttn through the C API ---------------------------------===//
//
// A C host that embeds LinAttn with nothing but the C API: register the
// dialects and passes, parse a spec, run linattn-to-cpu by name, print.
//
//===----------------------------------------------------------------------===//

// RUN: linattn-capi-test 2>&1 | FileCheck %s

#include "LinAttn-c/Dialects.h"
#include "LinAttn-c/Passes.h"

#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"
#include "mlir-c/Support.h"

#include <stdio.h>
#include <stdlib.h>

// Scalar-gated (simple GLA) recurrence, B = 1, T = 4, H = HV = 2, K = 16,
// V = 8, fp32.
static const char *kSpec =
    "func.func @simple_gla(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xf32>,\n"
    "    %v: tensor<1x4x2x8xf32>, %g: tensor<1x4x2xf32>,\n"
    "    %s0: tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>) {\n"
    "  %o, %s = linattn.recurrence scalar_gate q(%q) k(%k) v(%v) gate(%g) state(%s0)\n"
    "      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x8xf32>,\n"
    "         tensor<1x4x2xf32>, tensor<1x2x16x8xf32>)\n"
    "      -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)\n"
    "  return %o, %s : tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>\n"
    "}\n";

static void printToStdout(MlirStringRef str, void *userData) {
  (void)userData;
  fwrite(str.data, 1, str.length, stdout);
}

static void fail(const char *what) {
  fprintf(stderr, "capi: %s\n", what);
  exit(1);
}

int main(void) {
  MlirContext ctx = mlirContextCreate();

  // The dialect handle alone, as a host that only wants to parse specs would.
  MlirDialectHandle linattn = mlirGetDialectHandle__linattn__();
  MlirStringRef ns = mlirDialectHandleGetNamespace(linattn);
  fprintf(stdout, "dialect: %.*s\n", (int)ns.length, ns.data);
  // CHECK: dialect: linattn
  MlirDialect dialect = mlirDialectHandleLoadDialect(linattn, ctx);
  if (mlirDialectIsNull(dialect))
    fail("could not load the linattn dialect");

  // Everything the CPU pipeline needs (func, arith, ..., llvm, and the
  // bufferization and translation external models).
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  mlirLinAttnRegisterAllDialects(registry);
  mlirContextAppendDialectRegistry(ctx, registry);
  mlirDialectRegistryDestroy(registry);
  mlirLinAttnRegisterAllPasses();

  MlirModule module =
      mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(kSpec));
  if (mlirModuleIsNull(module))
    fail("could not parse the spec");
  MlirOperation moduleOp = mlirModuleGetOperation(module);
  mlirOperationPrint(moduleOp, printToStdout, NULL);
  fprintf(stdout, "\n");
  // CHECK-LABEL: func.func @simple_gla(
  // CHECK:       linattn.recurrence scalar_gate

  // The pipeline by its registered name, with an option.
  MlirPassManager pm = mlirPassManagerCreate(ctx);
  MlirOpPassManager opm = mlirPassManagerGetAsOpPassManager(pm);
  if (mlirLogicalResultIsFailure(mlirParsePassPipeline(
          opm,
          mlirStringRefCreateFromCString(
              "builtin.module(linattn-to-cpu{emit-c-interface=true})"),
          printToStdout, NULL)))
    fail("could not parse the pass pipeline");
  if (mlirLogicalResultIsFailure(mlirPassManagerRunOnOp(pm, moduleOp)))
    fail("linattn-to-cpu failed");
  mlirOperationPrint(moduleOp, printToStdout, NULL);
  fprintf(stdout, "\n");
  // CHECK-NOT:   linattn.recurrence {{[a-z]}}
  // CHECK-LABEL: llvm.func @simple_gla(
  // CHECK:       llvm.intr.exp
  // CHECK-LABEL: llvm.func @_mlir_ciface_simple_gla(
  // CHECK-NOT:   {{tensor\.|memref\.|scf\.|arith\.|bufferization\.}}

  // One pass through its generated C constructor.
  MlirModule again =
      mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(kSpec));
  MlirPassManager loops = mlirPassManagerCreate(ctx);
  MlirOpPassManager funcPm = mlirPassManagerGetNestedUnder(
      loops, mlirStringRefCreateFromCString("func.func"));
  mlirOpPassManagerAddOwnedPass(
      funcPm, mlirCreateLinAttnConversionConvertLinAttnToLoops());
  if (mlirLogicalResultIsFailure(
          mlirPassManagerRunOnOp(loops, mlirModuleGetOperation(again))))
    fail("convert-linattn-to-loops failed");
  mlirOperationPrint(mlirModuleGetOperation(again), printToStdout, NULL);
  fprintf(stdout, "\n");
  // CHECK-LABEL: func.func @simple_gla(
  // CHECK-NOT:   linattn.recurrence {{[a-z]}}
  // CHECK:       scf.for
  // CHECK:       math.exp

  mlirPassManagerDestroy(loops);
  mlirModuleDestroy(again);
  mlirPassManagerDestroy(pm);
  mlirModuleDestroy(module);
  mlirContextDestroy(ctx);
  fprintf(stdout, "done\n");
  // CHECK: done
  return 0;
}
