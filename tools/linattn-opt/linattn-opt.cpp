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

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

/// The input file MlirOptMain reads: the first argument that is neither an
/// option nor -o's value; null for standard input.
static const char *inputFileOf(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "-o")) {
      ++i;
      continue;
    }
    if (argv[i][0] != '-')
      return argv[i];
  }
  return nullptr;
}

int main(int argc, char **argv) {
  // Input nested past what the parser's stack holds is an error, not a
  // crash (standard input is not looked at ahead of the parser).
  if (const char *input = inputFileOf(argc, argv))
    if (auto buffer = llvm::MemoryBuffer::getFile(input))
      if (std::string why = mlir::linattn::checkNestingDepth((*buffer)->getBuffer());
          !why.empty()) {
        llvm::errs() << input << ": error: " << why << "\n";
        return 1;
      }
  mlir::registerAllPasses();
  mlir::linattn::registerAllPasses();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::linattn::registerAllDialects(registry);

  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "LinAttn optimizer driver\n", registry));
}
