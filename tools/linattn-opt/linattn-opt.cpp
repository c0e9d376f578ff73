//===- linattn-opt.cpp - The LinAttn optimizer driver ---------------------===//
//
// mlir-opt with the LinAttn dialect, passes and pipelines, plus every
// upstream dialect and pass so specs can be mixed with other IR.
//
//===----------------------------------------------------------------------===//

#include "LinAttn/InitAllDialects.h"
#include "LinAttn/InitAllPasses.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::linattn::registerAllPasses();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::linattn::registerAllDialects(registry);

  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "LinAttn optimizer driver\n", registry));
}
