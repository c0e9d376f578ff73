//===- linattn-opt.cpp - The LinAttn optimizer driver ---------------------===//
//
// mlir-opt with the LinAttn dialect, passes and pipelines, plus every
// upstream dialect and pass so specs can be mixed with other IR.
//
//===----------------------------------------------------------------------===//

#include "LinAttn/InitAllDialects.h"
#include "LinAttn/InitAllPasses.h"
#include "LinAttn/Utils/NestingDepth.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

#include "mlir/Support/FileUtilities.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::linattn::registerAllPasses();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::linattn::registerAllDialects(registry);

  auto [inputFilename, outputFilename] = mlir::registerAndParseCLIOptions(
      argc, argv, "LinAttn optimizer driver\n", registry);
  mlir::MlirOptMainConfig config = mlir::MlirOptMainConfig::createFromCLOptions();
  if (config.shouldShowDialects() || config.shouldListPasses())
    return mlir::asMainReturnCode(
        mlir::MlirOptMain(argc, argv, inputFilename, outputFilename, registry));

  // The input, file or standard input, is read here so that text nested
  // past what the parser's stack holds is an error, not a crash.
  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> input =
      mlir::openInputFile(inputFilename, &errorMessage);
  if (!input) {
    llvm::errs() << errorMessage << "\n";
    return 1;
  }
  if (std::string why = mlir::linattn::checkNestingDepth(input->getBuffer());
      !why.empty()) {
    llvm::errs() << (inputFilename == "-" ? "<stdin>" : inputFilename)
                 << ": error: " << why << "\n";
    return 1;
  }
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputFilename, &errorMessage);
  if (!output) {
    llvm::errs() << errorMessage << "\n";
    return 1;
  }
  if (mlir::failed(
          mlir::MlirOptMain(output->os(), std::move(input), registry, config)))
    return 1;
  output->keep();
  return 0;
}
