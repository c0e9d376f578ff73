//===- linattn-run.cpp - JIT-run a LinAttn spec on .npy files -------------===//
//
//   linattn-run FILE.mlir [--entry NAME] --input a.npy ... --output o.npy ...
//
// Compiles the module for the host CPU in process (linattn-to-cpu, then the
// MLIR ExecutionEngine), feeds the entry function's tensor arguments from
// .npy files in argument order (converted to the argument element type),
// and writes its tensor results as float32 .npy files in result order.
// Every bad input is reported as one line naming the argument; the exit
// status is non-zero.
//
//===----------------------------------------------------------------------===//

#include "LinAttn/Utils/NestingDepth.h"
#include "LinAttn/Dialect/LinAttn/IR/LinAttnOps.h"
#include "LinAttn/InitAllDialects.h"
#include "LinAttn/Pipelines/Pipelines.h"
#include "LinAttn/Transforms/Passes.h"

#include "linattn/InputCheck.h"
#include "linattn/FloatConversion.h"
#include "linattn/Npy.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <unistd.h>

using namespace mlir;
namespace cl = llvm::cl;

/// linattn-run's own options: --help lists these, not every option the
/// linked LLVM and MLIR libraries register.
static cl::OptionCategory runnerOptions("linattn-run options");

static cl::opt<std::string> inputFilename(cl::Positional,
                                          cl::desc("<spec.mlir>"),
                                          cl::Required,
    cl::cat(runnerOptions));
static cl::opt<std::string>
    entryName("entry", cl::desc("Function to run (default: the only public "
                                "function); NAME_backward, where the file "
                                "defines only NAME, runs NAME's derived "
                                "gradient (linattn-generate-backward)"),
              cl::value_desc("name"),
    cl::cat(runnerOptions));
static cl::list<std::string>
    inputFiles("input", cl::desc(".npy file for the next argument"),
               cl::value_desc("file.npy"),
    cl::cat(runnerOptions));
static cl::list<std::string>
    outputFiles("output", cl::desc(".npy file for the next result"),
                cl::value_desc("file.npy"),
    cl::cat(runnerOptions));
static cl::opt<mlir::linattn::Strategy>
    strategy("strategy", cl::desc("Algorithm for linattn.recurrence"),
             cl::init(mlir::linattn::Strategy::Auto),
             mlir::linattn::strategyOptionValues(),
    cl::cat(runnerOptions));
static cl::opt<int64_t> chunkSize("chunk-size",
                                  cl::desc("Tokens per chunk (chunked)"),
                                  cl::init(64),
    cl::cat(runnerOptions));
static cl::opt<int64_t> segmentChunks(
    "segment-chunks",
    cl::desc("Chunks per segment of the state pass where transitions are "
             "scalars (0: one segment)"),
    cl::init(0),
    cl::cat(runnerOptions));
static cl::opt<bool> checkInputs(
    "check-inputs",
    cl::desc("Before running, report the first input element that is not "
             "finite, a log gate above 0 or a beta outside [0, 1]"),
    cl::cat(runnerOptions));
static cl::opt<bool> printTime("time",
                               cl::desc("Print the run time (excluding "
                                        "compilation) as 'time_ms=<ms>'"),
    cl::cat(runnerOptions));

namespace {

/// The compiled code reports a failed run-time check (cf.assert: a shape
/// contract the inputs break) by printing it and calling abort(). Turn that
/// into an error exit instead of a crash.
extern "C" void onCompiledCodeAbort(int) {
  static const char message[] =
      "linattn-run: error: the compiled function stopped on a failed "
      "run-time check (message above)\n";
  ssize_t ignored = write(STDERR_FILENO, message, sizeof(message) - 1);
  (void)ignored;
  _exit(EXIT_FAILURE);
}

/// Reports one error line and returns failure.
LogicalResult error(const Twine &message) {
  llvm::errs() << "linattn-run: error: " << message << "\n";
  return failure();
}

std::string typeString(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << type;
  return s;
}

std::string shapeString(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") +
         (ShapedType::isDynamic(shape[i]) ? std::string("?")
                                          : std::to_string(shape[i]));
  return s + "]";
}

/// Element types a runner argument or result may have.
bool isRunnableElementType(Type t) { return t.isBF16() || t.isF16() || t.isF32(); }

/// A dense buffer plus the memref descriptor the C interface expects:
/// {allocated, aligned, offset, sizes[R], strides[R]} as 64-bit words.
struct HostTensor {
  std::vector<uint16_t> halfData;
  std::vector<float> floatData;
  std::vector<int64_t> descriptor;

  void *dataPointer() {
    return halfData.empty() ? static_cast<void *>(floatData.data())
                            : static_cast<void *>(halfData.data());
  }
};

/// Converts `array` to `elemType` and builds its descriptor.
void packTensor(const ::linattn::NpyArray &array, Type elemType,
                HostTensor &out) {
  size_t n = array.data.size();
  if (elemType.isF32()) {
    out.floatData.resize(std::max<size_t>(n, 1));
    for (size_t i = 0; i < n; ++i)
      out.floatData[i] = static_cast<float>(array.data[i]);
  } else {
    out.halfData.resize(std::max<size_t>(n, 1));
    for (size_t i = 0; i < n; ++i) {
      float x = static_cast<float>(array.data[i]);
      out.halfData[i] =
          elemType.isBF16() ? ::linattn::floatToBF16(x) : ::linattn::floatToF16(x);
    }
  }
  auto ptr = reinterpret_cast<int64_t>(out.dataPointer());
  out.descriptor = {ptr, ptr, 0};
  int64_t rank = array.shape.size();
  out.descriptor.insert(out.descriptor.end(), array.shape.begin(),
                        array.shape.end());
  std::vector<int64_t> strides(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * array.shape[d + 1];
  out.descriptor.insert(out.descriptor.end(), strides.begin(), strides.end());
}

/// Checks the run-time shapes against every linattn.recurrence (and
/// recurrence_grad) in `func` that reads the function's arguments directly:
/// the same equalities the verifier proves statically (e.g. T of v equals T
/// of q).
LogicalResult checkRecurrenceShapes(func::FuncOp func,
                                    ArrayRef<::linattn::NpyArray> inputs) {
  LogicalResult result = success();
  auto check = [&](auto op) {
    for (const auto &eq : op.getDimEqualities()) {
      auto lhs = dyn_cast<BlockArgument>(op->getOperand(eq.lhsOperand));
      auto rhs = dyn_cast<BlockArgument>(op->getOperand(eq.rhsOperand));
      if (!lhs || !rhs || lhs.getOwner() != &func.getBody().front() ||
          rhs.getOwner() != &func.getBody().front())
        continue;
      int64_t l = inputs[lhs.getArgNumber()].shape[eq.lhsDim];
      int64_t r = inputs[rhs.getArgNumber()].shape[eq.rhsDim];
      if (l == r)
        continue;
      result = error(Twine("argument #") + Twine(rhs.getArgNumber()) + " ('" +
                     op.getOperandName(eq.rhsOperand) + "', from " +
                     inputFiles[rhs.getArgNumber()] + ") has " + eq.what +
                     " = " + Twine(r) + " but argument #" +
                     Twine(lhs.getArgNumber()) + " ('" +
                     op.getOperandName(eq.lhsOperand) + "', from " +
                     inputFiles[lhs.getArgNumber()] + ") has " + eq.what +
                     " = " + Twine(l));
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  };
  func.walk([&](Operation *op) {
    if (auto recurrence = dyn_cast<mlir::linattn::RecurrenceOp>(op))
      return check(recurrence);
    if (auto grad = dyn_cast<mlir::linattn::RecurrenceGradOp>(op))
      return check(grad);
    return WalkResult::advance();
  });
  return result;
}

/// With --entry NAME_backward where the file defines @NAME but not
/// @NAME_backward, derives it (linattn-generate-backward).
LogicalResult deriveBackwardIfAsked(ModuleOp module) {
  StringRef name = entryName;
  if (!name.consume_back("_backward") || module.lookupSymbol(entryName) ||
      !module.lookupSymbol<func::FuncOp>(name))
    return success();
  PassManager pm(module.getContext());
  pm.addPass(mlir::linattn::createLinAttnGenerateBackward());
  if (failed(pm.run(module)))
    return error("deriving @" + entryName + " from @" + name + " failed");
  return success();
}

/// Picks the entry function: --entry, or the only public definition.
FailureOr<func::FuncOp> findEntry(ModuleOp module) {
  if (!entryName.empty()) {
    auto func = module.lookupSymbol<func::FuncOp>(entryName);
    if (!func || func.isExternal())
      return error("no function @" + entryName + " defined in " +
                   inputFilename);
    return func;
  }
  SmallVector<func::FuncOp> candidates;
  for (auto func : module.getOps<func::FuncOp>())
    if (func.isPublic() && !func.isExternal())
      candidates.push_back(func);
  if (candidates.size() == 1)
    return candidates.front();
  std::string names;
  for (func::FuncOp f : candidates)
    names += " @" + f.getSymName().str();
  return error(Twine(candidates.empty() ? "no public function"
                                        : "several public functions") +
               " in " + inputFilename +
               (candidates.empty() ? "" : " (" + names + " )") +
               "; name one with --entry");
}

/// Reads and checks every input against the function type.
LogicalResult loadInputs(func::FuncOp func,
                         SmallVectorImpl<::linattn::NpyArray> &inputs) {
  FunctionType type = func.getFunctionType();
  if (inputFiles.size() != type.getNumInputs())
    return error("@" + func.getSymName() + " takes " +
                 Twine(type.getNumInputs()) + " arguments but " +
                 Twine(inputFiles.size()) + " --input files were given");
  if (outputFiles.size() != type.getNumResults())
    return error("@" + func.getSymName() + " returns " +
                 Twine(type.getNumResults()) + " results but " +
                 Twine(outputFiles.size()) + " --output files were given");
  llvm::StringSet<> distinct;
  for (const std::string &path : outputFiles)
    if (!distinct.insert(path).second)
      return error("two --output files have one path ('" + path +
                   "'): each result needs its own file");
  for (auto [i, resultType] : llvm::enumerate(type.getResults())) {
    auto tensor = dyn_cast<RankedTensorType>(resultType);
    if (!tensor || !isRunnableElementType(tensor.getElementType()))
      return error("result #" + Twine(i) + " of @" + func.getSymName() +
                   " has type " + typeString(resultType) +
                   "; linattn-run returns ranked tensors of bf16, f16 or f32");
  }
  inputs.resize(type.getNumInputs());
  for (auto [i, argType] : llvm::enumerate(type.getInputs())) {
    auto tensor = dyn_cast<RankedTensorType>(argType);
    if (!tensor || !isRunnableElementType(tensor.getElementType()))
      return error("argument #" + Twine(i) + " of @" + func.getSymName() +
                   " has type " + typeString(argType) +
                   "; linattn-run passes ranked tensors of bf16, f16 or f32");
    std::string problem;
    if (!::linattn::readNpy(inputFiles[i], inputs[i], problem))
      return error("argument #" + Twine(i) + ": " + problem);
    ArrayRef<int64_t> want = tensor.getShape();
    const std::vector<int64_t> &got = inputs[i].shape;
    bool fits = want.size() == got.size();
    for (size_t d = 0; fits && d < got.size(); ++d)
      fits = ShapedType::isDynamic(want[d]) || want[d] == got[d];
    if (!fits)
      return error("argument #" + Twine(i) + " (" + inputFiles[i] +
                   ") has shape " + ::linattn::formatShape(got) +
                   " but @" + func.getSymName() + " expects " +
                   shapeString(want) + " (" + typeString(argType) + ")");
  }
  return checkRecurrenceShapes(func, inputs);
}

/// Reads one result descriptor (strided) into a dense float vector.
std::vector<float> unpackResult(const int64_t *desc, RankedTensorType type,
                                std::vector<int64_t> &shape) {
  int64_t rank = type.getRank();
  const char *aligned = reinterpret_cast<const char *>(desc[1]);
  int64_t offset = desc[2];
  shape.assign(desc + 3, desc + 3 + rank);
  const int64_t *strides = desc + 3 + rank;
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  std::vector<float> out(n);
  Type elem = type.getElementType();
  size_t width = elem.isF32() ? 4 : 2;
  std::vector<int64_t> index(rank, 0);
  for (int64_t linear = 0; linear < n; ++linear) {
    int64_t at = offset;
    for (int64_t d = 0; d < rank; ++d)
      at += index[d] * strides[d];
    const char *p = aligned + at * width;
    if (elem.isF32()) {
      std::memcpy(&out[linear], p, 4);
    } else {
      uint16_t bits;
      std::memcpy(&bits, p, 2);
      out[linear] =
          elem.isBF16() ? ::linattn::bf16ToFloat(bits) : ::linattn::f16ToFloat(bits);
    }
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
  }
  return out;
}

LogicalResult run(MLIRContext &context) {
  std::string errorMessage;
  auto file = openInputFile(inputFilename, &errorMessage);
  if (!file)
    return error(errorMessage);
  if (std::string why = mlir::linattn::checkNestingDepth(file->getBuffer());
      !why.empty())
    return error(inputFilename + ": " + why);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagHandler(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return error("could not parse " + inputFilename);
  if (failed(module->verify()))
    return error(inputFilename + " does not verify");

  if (failed(deriveBackwardIfAsked(*module)))
    return failure();
  FailureOr<func::FuncOp> entry = findEntry(*module);
  if (failed(entry))
    return failure();
  std::string name = entry->getSymName().str();
  FunctionType type = entry->getFunctionType();
  SmallVector<RankedTensorType> resultTypes;
  for (Type t : type.getResults())
    resultTypes.push_back(cast<RankedTensorType>(t));

  SmallVector<::linattn::NpyArray> inputs;
  if (failed(loadInputs(*entry, inputs)))
    return failure();
  if (checkInputs) {
    // Each argument's role: the recurrence operand it is, if one is.
    SmallVector<std::string> roles(inputs.size());
    auto record = [&](auto op) {
      for (auto [i, operand] : llvm::enumerate(op->getOperands()))
        if (auto arg = dyn_cast<BlockArgument>(operand);
            arg && arg.getOwner() == &entry->getBody().front())
          roles[arg.getArgNumber()] = op.getOperandName(i).str();
    };
    entry->walk([&](mlir::linattn::RecurrenceOp op) { record(op); });
    entry->walk([&](mlir::linattn::RecurrenceGradOp op) { record(op); });
    for (auto [i, array] : llvm::enumerate(inputs))
      if (std::string why = ::linattn::checkInput(array, i, roles[i]);
          !why.empty())
        return error(why);
  }

  PassManager pm(&context);
  mlir::linattn::LinAttnToCPUOptions options;
  options.strategy = strategy;
  options.chunkSize = chunkSize;
  options.segmentChunks = segmentChunks;
  mlir::linattn::buildLinAttnToCPUPipeline(pm, options);
  if (failed(pm.run(*module)))
    return error("lowering " + inputFilename + " for the CPU failed");

  ExecutionEngineOptions engineOptions;
  auto transformer = makeOptimizingTransformer(/*optLevel=*/3, /*sizeLevel=*/0,
                                               /*targetMachine=*/nullptr);
  engineOptions.transformer = transformer;
  engineOptions.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Aggressive;
  SmallVector<StringRef> sharedLibs;
  if (llvm::sys::fs::exists(LINATTN_C_RUNNER_UTILS))
    sharedLibs.push_back(LINATTN_C_RUNNER_UTILS);
  engineOptions.sharedLibPaths = sharedLibs;
  auto engine = ExecutionEngine::create(*module, engineOptions);
  if (!engine)
    return error("JIT compilation failed: " +
                 llvm::toString(engine.takeError()));

  SmallVector<HostTensor> tensors(inputs.size());
  for (auto [i, array] : llvm::enumerate(inputs))
    packTensor(array, cast<RankedTensorType>(type.getInput(i)).getElementType(),
               tensors[i]);

  // _mlir_ciface_<name>(results *, desc *...): results come back through a
  // struct of descriptors, one per result, 64-bit words each.
  size_t resultWords = 0;
  for (RankedTensorType t : resultTypes)
    resultWords += 3 + 2 * t.getRank();
  std::vector<int64_t> results(std::max<size_t>(resultWords, 1), 0);
  void *resultPtr = results.data();
  SmallVector<void *> descriptorPtrs;
  for (HostTensor &t : tensors)
    descriptorPtrs.push_back(t.descriptor.data());
  SmallVector<void *> packedArgs;
  if (!resultTypes.empty())
    packedArgs.push_back(&resultPtr);
  for (void *&p : descriptorPtrs)
    packedArgs.push_back(&p);

  // Unbuffered stdout so a failed check's message is not lost at abort().
  std::fflush(stdout);
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  std::signal(SIGABRT, onCompiledCodeAbort);
  auto start = std::chrono::steady_clock::now();
  if (llvm::Error err =
          (*engine)->invokePacked("_mlir_ciface_" + name, packedArgs))
    return error("running @" + name + " failed: " +
                 llvm::toString(std::move(err)) +
                 " (MLIR's C runner utilities are expected at " +
                 LINATTN_C_RUNNER_UTILS ")");
  auto stop = std::chrono::steady_clock::now();
  std::signal(SIGABRT, SIG_DFL);
  if (printTime)
    llvm::outs() << "time_ms="
                 << std::chrono::duration<double, std::milli>(stop - start).count()
                 << "\n";

  // Write results, then free the buffers the function allocated (never the
  // inputs, which a function may return as they are).
  std::set<int64_t> ours;
  for (HostTensor &t : tensors)
    ours.insert(t.descriptor[0]);
  std::set<int64_t> freed;
  LogicalResult status = success();
  const int64_t *desc = results.data();
  for (auto [i, resultType] : llvm::enumerate(resultTypes)) {
    std::vector<int64_t> shape;
    std::vector<float> data = unpackResult(desc, resultType, shape);
    std::string problem;
    if (!::linattn::writeNpyF32(outputFiles[i], shape, data.data(), problem))
      status = error("result #" + Twine(i) + ": " + problem);
    if (!ours.count(desc[0]) && freed.insert(desc[0]).second)
      std::free(reinterpret_cast<void *>(desc[0]));
    desc += 3 + 2 * resultType.getRank();
  }
  return status;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM y(argc, argv);
  cl::HideUnrelatedOptions(runnerOptions);
  cl::ParseCommandLineOptions(
      argc, argv,
      "LinAttn runner: JIT-compile a spec for the CPU and run one function "
      "on .npy inputs\n");
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();

  DialectRegistry registry;
  mlir::linattn::registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  return failed(run(context)) ? EXIT_FAILURE : EXIT_SUCCESS;
}
