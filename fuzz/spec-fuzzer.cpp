//===- spec-fuzzer.cpp - libFuzzer target: specs through linattn-to-cpu ---===//
//
// Any text as a spec, the way linattn-run takes one: refused by the
// nesting-depth check, the parser or the verifier with a diagnostic, or
// accepted and lowered by the linattn-to-cpu pipeline (every strategy the
// input selects by its bytes), which either succeeds or fails with a
// diagnostic. A crash, a sanitizer report or a pass that fails without an
// error is what the fuzzer finds.
//
//===----------------------------------------------------------------------===//

#include "LinAttn/InitAllDialects.h"
#include "LinAttn/Pipelines/Pipelines.h"
#include "LinAttn/Utils/NestingDepth.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <cstdint>
#include <cstdlib>
#include <memory>

using namespace mlir;

namespace {

/// A context serves many inputs: registering and loading the dialects is
/// what a run would otherwise spend its time on. The types and attributes
/// inputs create stay interned in it, so it is replaced every
/// kInputsPerContext inputs to bound the memory.
constexpr int kInputsPerContext = 2000;

MLIRContext &context() {
  static std::unique_ptr<MLIRContext> ctx;
  static int served = 0;
  if (!ctx || ++served % kInputsPerContext == 0) {
    DialectRegistry registry;
    linattn::registerAllDialects(registry);
    ctx = std::make_unique<MLIRContext>(registry, MLIRContext::Threading::DISABLED);
    ctx->loadAllAvailableDialects();
  }
  return *ctx;
}

} // namespace

/// LLVM's headers, compiled here with ASan, poison what BumpPtrAllocator
/// hands out until it is used; Debian's libLLVM, built without, never
/// unpoisons it, so every arena looks freed. Manual poisoning is off; the
/// sanitizer still sees heap, stack and global errors.
extern "C" const char *__asan_default_options() {
  return "allow_user_poisoning=0";
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // The first byte picks the strategy (as --strategy would), the rest is
  // the spec.
  if (size == 0)
    return 0;
  auto strategy = static_cast<linattn::Strategy>(data[0] % 5);
  llvm::StringRef text(reinterpret_cast<const char *>(data + 1), size - 1);
  if (!linattn::checkNestingDepth(text).empty())
    return 0;

  MLIRContext &ctx = context();
  bool reported = false;
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error)
      reported = true;
    return success();
  });
  // As the tools read a file: a NUL-terminated copy, which MLIR's lexer
  // relies on.
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, "spec"),
                               llvm::SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &ctx);
  if (!module || failed(verify(*module)))
    return 0;
  PassManager pm(&ctx);
  linattn::LinAttnToCPUOptions options;
  options.strategy = strategy;
  linattn::buildLinAttnToCPUPipeline(pm, options);
  if (failed(pm.run(*module)) && !reported)
    std::abort(); // a pass failed without saying why
  return 0;
}
