//===- linattn-plugin.cpp - LinAttn as an mlir-opt plugin -----------------===//
//
// One shared object for stock mlir-opt (or any MlirOptMain tool linked to the
// MLIR dylib), loadable both ways:
//
//   mlir-opt --load-dialect-plugin=LinAttnPlugin.so \
//            --load-pass-plugin=LinAttnPlugin.so  spec.mlir --linattn-to-cpu
//
// The LinAttn objects are compiled in; MLIR itself comes from libMLIR.so so
// that the plugin and the host share one set of registries and TypeIDs.
//
//===----------------------------------------------------------------------===//

#include "LinAttn/InitAllDialects.h"
#include "LinAttn/InitAllPasses.h"

#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"

using namespace mlir;

/// --load-dialect-plugin: the LinAttn dialect plus every dialect and external
/// model its pipelines need, as linattn-opt registers them.
extern "C" LLVM_ATTRIBUTE_WEAK DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "LinAttn", LLVM_VERSION_STRING,
          [](DialectRegistry *registry) {
            linattn::registerAllDialects(*registry);
          }};
}

/// --load-pass-plugin: every LinAttn pass and pipeline.
extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "LinAttn", LLVM_VERSION_STRING,
          []() { linattn::registerAllPasses(); }};
}
