//===- linattn-gpu-run.cpp - Run a compiled spec on the GPU ---------------===//
//
//   linattn-gpu-run LIB.so --entry NAME --input a.npy ... --output o.npy ...
//       [--bench N] [--warmup W] [--graph] [--bytes B] [--flops F]
//       [--json FILE] [--check-inputs]
//
// The GPU twin of linattn-run, with no MLIR: loads a library made by
// linattn-compile, checks the .npy inputs against the function's recorded
// signature (__linattn_signature_NAME), copies them to the device in the
// argument's element type, calls _mlir_ciface_NAME on device memref
// descriptors and writes the results as float32 .npy files. With --bench it
// enqueues W warm-up calls and N timed calls of _mlir_ciface_NAME_async
// back to back on one stream, with a CUDA event between calls (median, min,
// max of the N intervals), rotating between copies of the inputs when one
// set fits in L2, and prints ms, TB/s over --bytes and TFLOP/s over
// --flops. The host enqueues ahead of the GPU, as a model's forward pass
// does, so the intervals are GPU time (launch latency hidden, as in a CUDA
// graph replay). With --graph each input set's call (and the frees of its
// results) is captured once into a CUDA graph, and the timed runs replay
// the graphs instead of calling, as a model's captured forward pass does
// and as fla is timed (bench/gpu/fla_time.py). See linattn/Abi.h for the
// functions' C ABI.
//
//===----------------------------------------------------------------------===//

#include "linattn/CudaRuntime.h"
#include "linattn/FloatConversion.h"
#include "linattn/InputCheck.h"
#include "linattn/MgpuRuntime.h"
#include "linattn/Npy.h"
#include "linattn/Signature.h"

#include <dlfcn.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

using namespace linattn;

namespace {

[[noreturn]] void fail(const std::string &message) {
  std::fprintf(stderr, "linattn-gpu-run: error: %s\n", message.c_str());
  std::exit(EXIT_FAILURE);
}

void check(const CudaStatus &status, const std::string &what) {
  if (!status.ok())
    fail(what + ": " + status.message());
}

/// `text` as a whole integer in [lo, hi], else an error naming `flag`.
long long parseInteger(const char *flag, const std::string &text, long long lo,
                       long long hi) {
  errno = 0;
  char *end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end || errno == ERANGE || v < lo || v > hi)
    fail(std::string(flag) + " takes an integer in [" + std::to_string(lo) +
         ", " + std::to_string(hi) + "], got '" + text + "'");
  return v;
}

/// `text` as a whole finite number >= 0, else an error naming `flag`.
double parseAmount(const char *flag, const std::string &text) {
  errno = 0;
  char *end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end || errno == ERANGE || !std::isfinite(v) || v < 0)
    fail(std::string(flag) + " takes a finite number >= 0, got '" + text + "'");
  return v;
}

/// A device tensor and the memref descriptor that points at it:
/// {allocated, aligned, offset, sizes[R], strides[R]} in 64-bit words.
struct DeviceTensor {
  CudaDevicePtr ptr = 0;
  size_t bytes = 0;
  std::vector<int64_t> descriptor;
};

std::vector<char> toElementBytes(const NpyArray &a, const TensorSpec &spec) {
  std::vector<char> out(a.data.size() * spec.width());
  for (size_t i = 0; i < a.data.size(); ++i) {
    float x = static_cast<float>(a.data[i]);
    if (spec.elem == "f32") {
      std::memcpy(&out[i * 4], &x, 4);
    } else {
      uint16_t h = spec.elem == "bf16" ? floatToBF16(x) : floatToF16(x);
      std::memcpy(&out[i * 2], &h, 2);
    }
  }
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

} // namespace

/// f(a[0], ..., a[N - 1]) for a function of N pointer arguments (a
/// compiled entry: the results, the stream for _async, one descriptor per
/// argument).
template <size_t... I>
void callWith(void *f, const std::vector<void *> &a, std::index_sequence<I...>) {
  using Fn = void (*)(decltype((void)I, (void *)nullptr)...);
  reinterpret_cast<Fn>(f)(a[I]...);
}
template <size_t... N>
bool callWithAnyOf(void *f, const std::vector<void *> &a,
                   std::index_sequence<N...>) {
  return ((a.size() == N + 1 &&
           (callWith(f, a, std::make_index_sequence<N + 1>{}), true)) ||
          ...);
}
/// The most pointers an entry takes: the results, a stream and 14
/// arguments (a backward of 8 arguments takes 10).
constexpr size_t kMaxEntryPointers = 16;
void callWithPointers(void *f, const std::vector<void *> &a) {
  if (!callWithAnyOf(f, a, std::make_index_sequence<kMaxEntryPointers>{}))
    fail("functions of more than " + std::to_string(kMaxEntryPointers - 2) +
         " arguments are not supported");
}

int main(int argc, char **argv) {
  std::string libPath, entry, jsonPath;
  std::vector<std::string> inputs, outputs;
  int benchRuns = 0, warmup = 5;
  bool graph = false, checkInputs = false, reportMemory = false;
  double bytesMoved = 0, flops = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char *flag) -> std::string {
      std::string prefix = std::string(flag) + "=";
      if (a.rfind(prefix, 0) == 0)
        return a.substr(prefix.size());
      if (a == flag && i + 1 < argc)
        return argv[++i];
      fail(std::string(flag) + " needs a value");
    };
    if (a == "--help" || a == "-h") {
      std::printf("usage: linattn-gpu-run LIB.so --entry NAME --input a.npy ... "
                  "--output o.npy ... [--bench N] [--warmup W] [--graph] "
                  "[--bytes B] [--flops F] [--json FILE] [--check-inputs] [--memory]\n"
                  "  --memory: print the device memory the first call allocates "
                  "for its results and, beyond them, at most for its "
                  "intermediates\n"
                  "  --check-inputs: before running, report the first input "
                  "element that is not finite, a log gate above 0 or a beta "
                  "outside [0, 1]\n");
      return 0;
    }
    if (a.rfind("--entry", 0) == 0) entry = value("--entry");
    else if (a.rfind("--input", 0) == 0) inputs.push_back(value("--input"));
    else if (a.rfind("--output", 0) == 0) outputs.push_back(value("--output"));
    else if (a.rfind("--bench", 0) == 0)
      benchRuns = int(parseInteger("--bench", value("--bench"), 0, 1000000));
    else if (a.rfind("--warmup", 0) == 0)
      warmup = int(parseInteger("--warmup", value("--warmup"), 0, 1000000));
    else if (a == "--graph") graph = true;
    else if (a == "--memory") reportMemory = true;
    else if (a == "--check-inputs") checkInputs = true;
    else if (a.rfind("--bytes", 0) == 0) bytesMoved = parseAmount("--bytes", value("--bytes"));
    else if (a.rfind("--flops", 0) == 0) flops = parseAmount("--flops", value("--flops"));
    else if (a.rfind("--json", 0) == 0) jsonPath = value("--json");
    else if (a[0] == '-') fail("unknown option '" + a + "' (see --help)");
    else if (libPath.empty()) libPath = a;
    else fail("more than one library given ('" + libPath + "', '" + a + "')");
  }
  if (libPath.empty())
    fail("no library given (usage: linattn-gpu-run LIB.so --entry NAME ...)");
  if (entry.empty())
    fail("--entry NAME is required (the spec function to run)");
  std::set<std::string> distinct(outputs.begin(), outputs.end());
  if (distinct.size() != outputs.size())
    fail("two --output files have one path: each result needs its own file");
  if (!jsonPath.empty() && !std::ofstream(jsonPath, std::ios::app))
    fail("cannot write the --json file '" + jsonPath + "'");

  // Loading the library loads its GPU modules (global constructors); a
  // failure there is reported by the library (one line) and kept as its
  // status, read before the first call.
  void *lib = dlopen(libPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    fail("cannot load '" + libPath + "': " + dlerror());
  // The library's mgpu calls bind to the runtime this runner links (the
  // first definition in the process), or to its own copy where it keeps
  // one: the status is read, and the handler installed, in both.
  using FirstError = const char *(*)();
  using SetHandler = void (*)(LinAttnCudaErrorHandler, void *);
  auto ownError =
      reinterpret_cast<FirstError>(dlsym(lib, "linattnCudaGetFirstError"));
  auto libraryError = [&]() -> const char * {
    if (const char *e = linattnCudaGetFirstError())
      return e;
    return ownError ? ownError() : nullptr;
  };
  bool loadFailed = libraryError() != nullptr;
  // From here on this runner reports the library's failures itself.
  LinAttnCudaErrorHandler quiet = [](const char *, void *) {};
  linattnCudaSetErrorHandler(quiet, nullptr);
  if (auto setHandler = reinterpret_cast<SetHandler>(
          dlsym(lib, "linattnCudaSetErrorHandler")))
    setHandler(quiet, nullptr);
  auto *signature = static_cast<const char *>(
      dlsym(lib, ("__linattn_signature_" + entry).c_str()));
  void *function = dlsym(lib, ("_mlir_ciface_" + entry).c_str());
  void *asyncFunction = dlsym(lib, ("_mlir_ciface_" + entry + "_async").c_str());
  if (!signature || !function || !asyncFunction)
    fail("'" + libPath + "' has no compiled function '" + entry +
         "' (expected symbols __linattn_signature_" + entry + ", _mlir_ciface_" +
         entry + " and _mlir_ciface_" + entry + "_async)");
  // The arguments' roles (q, k, v, gate, beta, initial_state), where the
  // library recorded them: what --check-inputs checks each against.
  std::vector<std::string> roles;
  if (auto *text = static_cast<const char *>(
          dlsym(lib, ("__linattn_roles_" + entry).c_str()))) {
    std::string list = text;
    for (size_t pos = 0;;) {
      size_t comma = list.find(',', pos);
      roles.push_back(list.substr(pos, comma == std::string::npos
                                           ? std::string::npos
                                           : comma - pos));
      if (comma == std::string::npos)
        break;
      pos = comma + 1;
    }
  }
  std::vector<TensorSpec> argSpecs, resultSpecs;
  if (!parseSignature(signature, argSpecs, resultSpecs))
    fail("malformed signature in '" + libPath + "': " + signature);
  if (inputs.size() != argSpecs.size())
    fail("@" + entry + " takes " + std::to_string(argSpecs.size()) +
         " arguments but " + std::to_string(inputs.size()) +
         " --input files were given");
  if (outputs.size() != resultSpecs.size())
    fail("@" + entry + " returns " + std::to_string(resultSpecs.size()) +
         " results but " + std::to_string(outputs.size()) +
         " --output files were given");

  // Inputs: read, check, convert, copy to the device.
  std::vector<std::vector<char>> hostInputs;
  std::vector<std::vector<int64_t>> shapes;
  size_t inputBytes = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    NpyArray a;
    std::string problem;
    if (!readNpy(inputs[i], a, problem))
      fail("argument #" + std::to_string(i) + ": " + problem);
    const TensorSpec &spec = argSpecs[i];
    bool fits = a.shape.size() == spec.shape.size();
    for (size_t d = 0; fits && d < a.shape.size(); ++d)
      fits = spec.shape[d] < 0 || spec.shape[d] == a.shape[d];
    if (!fits)
      fail("argument #" + std::to_string(i) + " (" + inputs[i] +
           ") has shape " + formatShape(a.shape) + " but @" + entry +
           " expects " + spec.text());
    if (checkInputs)
      if (std::string why =
              checkInput(a, i, i < roles.size() ? roles[i] : std::string());
          !why.empty())
        fail(why);
    hostInputs.push_back(toElementBytes(a, spec));
    shapes.push_back(a.shape);
    inputBytes += hostInputs.back().size();
  }

  if (loadFailed)
    std::exit(EXIT_FAILURE); // the library said why, in one line
  CudaRuntime *rt = nullptr;
  check(CudaRuntime::getShared(0, rt), "CUDA");

  // Copies of the inputs to rotate through when one set would stay in L2.
  const size_t l2Bytes = 60u << 20;
  int copies = benchRuns > 0 && inputBytes > 0 && inputBytes < 2 * l2Bytes
                   ? int(std::min<size_t>(8, 2 * l2Bytes / inputBytes + 1))
                   : 1;
  std::vector<std::vector<DeviceTensor>> sets(copies);
  for (auto &set : sets) {
    for (size_t i = 0; i < hostInputs.size(); ++i) {
      DeviceTensor t;
      t.bytes = hostInputs[i].size();
      check(rt->alloc(std::max<size_t>(t.bytes, 1), t.ptr),
            "allocating argument #" + std::to_string(i));
      check(rt->copyToDevice(t.ptr, hostInputs[i].data(), t.bytes),
            "copying argument #" + std::to_string(i));
      int64_t p = static_cast<int64_t>(t.ptr);
      const std::vector<int64_t> &shape = shapes[i];
      t.descriptor = {p, p, 0};
      t.descriptor.insert(t.descriptor.end(), shape.begin(), shape.end());
      std::vector<int64_t> strides(shape.size(), 1);
      for (int64_t d = int64_t(shape.size()) - 2; d >= 0; --d)
        strides[d] = strides[d + 1] * shape[d + 1];
      t.descriptor.insert(t.descriptor.end(), strides.begin(), strides.end());
      set.push_back(std::move(t));
    }
  }

  size_t resultWords = 0;
  for (const TensorSpec &r : resultSpecs)
    resultWords += 3 + 2 * r.shape.size();
  std::vector<int64_t> results(std::max<size_t>(resultWords, 1));
  // _mlir_ciface_NAME(results *, descriptor *...) and
  // _mlir_ciface_NAME_async(results *, stream, descriptor *...): every
  // argument is a pointer, so the call is a fixed-arity call through void
  // pointers. `stream` null: the synchronous entry.
  CudaStream benchStream = nullptr;
  auto call = [&](std::vector<DeviceTensor> &set, CudaStream stream) {
    std::fill(results.begin(), results.end(), 0);
    std::vector<void *> a = {results.data()};
    if (stream)
      a.push_back(stream);
    for (DeviceTensor &t : set)
      a.push_back(t.descriptor.data());
    void *f = stream ? asyncFunction : function;
    callWithPointers(f, a);
  };
  // Results are stream-ordered allocations of the call (linattn/Abi.h):
  // freed in the order of the stream that computed them.
  auto freeResults = [&](CudaStream stream) {
    const int64_t *desc = results.data();
    for (const TensorSpec &r : resultSpecs) {
      check(rt->freeAsync(static_cast<CudaDevicePtr>(desc[0]), stream),
            "freeing a result");
      desc += 3 + 2 * r.shape.size();
    }
  };

  // One run whose results are written out.
  linattnCudaResetAllocationPeak();
  call(sets[0], nullptr);
  if (const char *e = libraryError())
    fail("running @" + entry + ": " + e);
  check(rt->synchronize(), "running @" + entry);
  if (reportMemory) {
    uint64_t resultBytes = 0;
    const int64_t *d = results.data();
    for (const TensorSpec &spec : resultSpecs) {
      size_t rank = spec.shape.size();
      uint64_t n = 1;
      for (size_t i = 0; i < rank; ++i)
        n *= uint64_t(d[3 + i]);
      resultBytes += n * spec.width();
      d += 3 + 2 * rank;
    }
    uint64_t peak = linattnCudaGetAllocationPeak();
    std::printf("device_memory: results=%llu intermediates_peak=%llu bytes\n",
                (unsigned long long)resultBytes,
                (unsigned long long)(peak > resultBytes ? peak - resultBytes : 0));
  }
  const int64_t *desc = results.data();
  for (size_t r = 0; r < resultSpecs.size(); ++r) {
    const TensorSpec &spec = resultSpecs[r];
    size_t rank = spec.shape.size();
    std::vector<int64_t> shape(desc + 3, desc + 3 + rank);
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    std::vector<char> raw(size_t(n) * spec.width());
    if (n > 0)
      check(rt->copyToHost(raw.data(),
                           static_cast<CudaDevicePtr>(desc[1]) +
                               desc[2] * spec.width(),
                           raw.size()),
            "copying result #" + std::to_string(r));
    std::vector<float> values(n);
    for (int64_t i = 0; i < n; ++i) {
      if (spec.elem == "f32") {
        std::memcpy(&values[i], &raw[i * 4], 4);
      } else {
        uint16_t h;
        std::memcpy(&h, &raw[i * 2], 2);
        values[i] = spec.elem == "bf16" ? bf16ToFloat(h) : f16ToFloat(h);
      }
    }
    std::string problem;
    if (!writeNpyF32(outputs[r], shape, values.data(), problem))
      fail("result #" + std::to_string(r) + ": " + problem);
    desc += 3 + 2 * rank;
  }
  freeResults(nullptr);
  check(rt->synchronize(), "freeing the results");

  if (benchRuns == 0)
    return 0;
  // The library's status after the calls of each phase (a failed call
  // skips its work, so the timings would be of nothing).
  auto checkCalls = [&](const std::string &what) {
    if (const char *e = libraryError())
      fail(what + " @" + entry + ": " + e);
  };
  check(rt->createStream(benchStream), "creating a stream");
  // One timed run: a call and the frees of its results, or the replay of
  // that, captured once per input set.
  std::vector<CudaGraphExec> graphs;
  for (int c = 0; graph && c < copies; ++c) {
    graphs.push_back(nullptr);
    check(rt->captureGraph(benchStream, [&] {
            call(sets[c], benchStream);
            freeResults(benchStream);
          }, graphs.back()),
          "capturing @" + entry + " into a CUDA graph");
  }
  if (graph)
    checkCalls("capturing");
  auto run = [&](int i) {
    if (graph) {
      check(rt->launchGraph(graphs[i % copies], benchStream),
            "replaying @" + entry);
      return;
    }
    call(sets[i % copies], benchStream);
    freeResults(benchStream);
  };
  for (int i = 0; i < warmup; ++i)
    run(i);
  checkCalls("warming up");
  check(rt->synchronizeStream(benchStream), "warm-up");
  // events[i] and events[i + 1] bracket timed call i; the frees between
  // calls are stream-ordered bookkeeping, no GPU work.
  std::vector<CudaEvent> events(benchRuns + 1, nullptr);
  for (CudaEvent &e : events)
    check(rt->createEvent(e), "creating an event");
  check(rt->recordEvent(events[0], benchStream), "recording an event");
  for (int i = 0; i < benchRuns; ++i) {
    run(i);
    check(rt->recordEvent(events[i + 1], benchStream), "recording an event");
  }
  checkCalls("timing");
  check(rt->synchronizeStream(benchStream), "running @" + entry);
  std::vector<double> ms;
  for (int i = 0; i < benchRuns; ++i) {
    float elapsed = 0;
    check(rt->elapsedMs(events[i], events[i + 1], elapsed), "reading an event");
    ms.push_back(elapsed);
  }
  for (CudaEvent e : events)
    check(rt->destroyEvent(e), "destroying an event");
  for (CudaGraphExec g : graphs)
    check(rt->destroyGraph(g), "destroying a graph");
  check(rt->destroyStream(benchStream), "destroying a stream");
  double med = median(ms);
  double tbs = bytesMoved > 0 ? bytesMoved / (med * 1e-3) / 1e12 : 0;
  double tflops = flops > 0 ? flops / (med * 1e-3) / 1e12 : 0;
  std::printf("entry=%s runs=%d warmup=%d input_copies=%d graph=%d "
              "median_ms=%.4f min_ms=%.4f max_ms=%.4f TB/s=%.3f TFLOP/s=%.3f\n",
              entry.c_str(), benchRuns, warmup, copies, int(graph), med,
              *std::min_element(ms.begin(), ms.end()),
              *std::max_element(ms.begin(), ms.end()), tbs, tflops);
  if (!jsonPath.empty()) {
    std::ofstream json(jsonPath);
    json << "{\"entry\": \"" << entry << "\", \"runs\": " << benchRuns
         << ", \"warmup\": " << warmup << ", \"input_copies\": " << copies
         << ", \"graph\": " << (graph ? "true" : "false")
         << ", \"median_ms\": " << med << ", \"min_ms\": "
         << *std::min_element(ms.begin(), ms.end())
         << ", \"max_ms\": " << *std::max_element(ms.begin(), ms.end())
         << ", \"tb_per_s\": " << tbs << ", \"tflop_per_s\": " << tflops
         << "}\n";
  }
  return 0;
}
