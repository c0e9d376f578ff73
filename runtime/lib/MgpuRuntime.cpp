//===- MgpuRuntime.cpp - The mgpu* C ABI on CudaRuntime -------------------===//
//
// Each mgpu function finds the calling thread's default device's shared
// CudaRuntime, forwards to it and turns a failed CudaStatus into a report:
// the error handler if one is installed, else one line on stderr; the
// failed function returns without effect and the process carries on. See
// linattn/MgpuRuntime.h for the contract.
//
//===----------------------------------------------------------------------===//

#include "linattn/MgpuRuntime.h"

#include "linattn/CudaRuntime.h"
#include "linattn/FloatConversion.h"
#include "linattn/InputCheck.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

using linattn::CudaDevicePtr;
using linattn::CudaDim3;
using linattn::CudaErrorKind;
using linattn::CudaEvent;
using linattn::CudaFunction;
using linattn::CudaLaunchConfig;
using linattn::CudaModule;
using linattn::CudaRuntime;
using linattn::CudaStatus;
using linattn::CudaStream;

namespace {

std::mutex handlerMutex;
LinAttnCudaErrorHandler errorHandler = nullptr;
void *errorHandlerData = nullptr;

/// The first failure on this thread since the last clear. A pointer (leaked,
/// one per thread that fails) rather than a thread_local std::string: global
/// destructors of compiled code may fail after thread_local objects of the
/// main thread are destroyed.
thread_local std::string *firstError = nullptr;
thread_local bool hasFirstError = false;

thread_local int32_t defaultDevice = 0;
/// The shared runtime of `cachedDevice`; shared runtimes are never
/// destroyed, so caching the pointer per thread is safe and keeps the
/// launch path off getShared's lock.
thread_local CudaRuntime *cachedRuntime = nullptr;
thread_local int32_t cachedDevice = -1;

/// The compiled function this thread is running (linattnCudaBeginCall):
/// every stream its host code asks for is `stream`.
struct Call {
  bool active = false;
  CudaStream stream = nullptr;
  /// A step of the call failed: its later device work is skipped.
  bool failed = false;
};
thread_local Call currentCall;

/// Why the last GPU module that failed to load did not (its kernels'
/// lookups report it, on whichever thread calls them). A pointer, set on
/// first use: modules load from the compiled code's global constructors,
/// which may run before this file's dynamic initialisers.
std::mutex moduleErrorMutex;
std::string *moduleLoadError = nullptr;

/// Whether the running call already failed, so that `function` does
/// nothing: no kernel runs on memory whose allocation failed, no copy
/// reads it.
bool skippedAfterFailure() { return currentCall.active && currentCall.failed; }

/// Whether `stream` is the running call's stream, on which the host code
/// neither creates, synchronises nor destroys anything.
bool isCallStream(void *stream) {
  return currentCall.active && stream == currentCall.stream;
}

/// Device memory from cuMemAllocAsync, which mgpuMemFree gives back in
/// stream order; anything else (managed memory, synchronous allocations)
/// is freed with cuMemFree.
std::mutex streamOrderedMutex;
std::unordered_set<CudaDevicePtr> streamOrdered;

/// What mgpuMemAlloc has handed out and mgpuMemFree not taken back, and
/// the most of it at any time since the last linattnCudaResetAllocationPeak
/// (in the order the host enqueues them, which is the stream's order).
struct AllocationStats {
  std::mutex mutex;
  std::unordered_map<CudaDevicePtr, uint64_t> sizes;
  uint64_t live = 0, peak = 0;

  void allocated(CudaDevicePtr ptr, uint64_t size) {
    std::lock_guard<std::mutex> lock(mutex);
    sizes[ptr] = size;
    live += size;
    peak = std::max(peak, live);
  }
  void freed(CudaDevicePtr ptr) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = sizes.find(ptr);
    if (it == sizes.end())
      return;
    live -= it->second;
    sizes.erase(it);
  }
};
AllocationStats &allocationStats() {
  static AllocationStats *stats = new AllocationStats;
  return *stats;
}

void report(const char *function, const CudaStatus &status) {
  std::string message = std::string(function) + ": " + status.message();
  bool first = !hasFirstError;
  if (first) {
    if (!firstError)
      firstError = new std::string;
    *firstError = message;
    hasFirstError = true;
  }
  if (currentCall.active)
    currentCall.failed = true;
  LinAttnCudaErrorHandler handler;
  void *data;
  {
    std::lock_guard<std::mutex> lock(handlerMutex);
    handler = errorHandler;
    data = errorHandlerData;
  }
  if (handler) {
    handler(message.c_str(), data);
    return;
  }
  // One line: the first failure since the last clear is the cause, later
  // ones on this thread its consequences (a handler gets them all).
  if (!first)
    return;
  std::fprintf(stderr, "linattn-cuda-runtime: error: %s\n", message.c_str());
  std::fflush(stderr);
}

/// Reports `status` if it failed; true if it did.
bool failed(const char *function, const CudaStatus &status) {
  if (status.ok())
    return false;
  report(function, status);
  return true;
}

/// The default device's runtime, or null after reporting why there is none.
CudaRuntime *runtime(const char *function) {
  if (cachedRuntime && cachedDevice == defaultDevice)
    return cachedRuntime;
  CudaRuntime *shared = nullptr;
  if (failed(function, CudaRuntime::getShared(defaultDevice, shared)))
    return nullptr;
  cachedRuntime = shared;
  cachedDevice = defaultDevice;
  return shared;
}

CudaDevicePtr devicePtr(const void *p) {
  return reinterpret_cast<CudaDevicePtr>(p);
}

/// The leading fields of MLIR's ranked memref descriptor; sizes[rank] and
/// then strides[rank] follow `offset`.
struct MemRefDescriptor {
  char *allocated;
  char *aligned;
  int64_t offset;

  const int64_t *sizes() const {
    return reinterpret_cast<const int64_t *>(this + 1);
  }
  const int64_t *strides(int64_t rank) const { return sizes() + rank; }
};

/// The bytes a strided memref's elements span from its first element; 0 if
/// it has none.
uint64_t spanBytes(int64_t rank, const MemRefDescriptor *d,
                   int64_t elementSize) {
  const int64_t *sizes = d->sizes();
  const int64_t *strides = d->strides(rank);
  int64_t lastIndex = 0;
  for (int64_t i = 0; i < rank; ++i) {
    if (sizes[i] == 0)
      return 0;
    lastIndex += (sizes[i] - 1) * strides[i];
  }
  return static_cast<uint64_t>(lastIndex + 1) * elementSize;
}

} // namespace

extern "C" {

void linattnCudaSetErrorHandler(LinAttnCudaErrorHandler handler,
                                void *userData) {
  std::lock_guard<std::mutex> lock(handlerMutex);
  errorHandler = handler;
  errorHandlerData = userData;
}

const char *linattnCudaGetFirstError(void) {
  return hasFirstError ? firstError->c_str() : nullptr;
}

void linattnCudaClearError(void) { hasFirstError = false; }

void linattnCudaCheckFailed(const char *message) {
  report("check", CudaStatus::error(CudaErrorKind::InvalidArgument,
                                    message ? message : "(no message)"));
}

} // extern "C"

namespace {

/// Element types of the input check, with their host decoding.
enum class CheckedElement { F32, F16, BF16, F64 };

size_t elementBytes(CheckedElement type) {
  switch (type) {
  case CheckedElement::F16:
  case CheckedElement::BF16:
    return 2;
  case CheckedElement::F32:
    return 4;
  case CheckedElement::F64:
    return 8;
  }
  return 4;
}

double decode(CheckedElement type, const char *p) {
  switch (type) {
  case CheckedElement::F32: {
    float x;
    std::memcpy(&x, p, sizeof x);
    return x;
  }
  case CheckedElement::F64: {
    double x;
    std::memcpy(&x, p, sizeof x);
    return x;
  }
  case CheckedElement::F16:
  case CheckedElement::BF16: {
    uint16_t bits;
    std::memcpy(&bits, p, sizeof bits);
    return type == CheckedElement::F16 ? linattn::f16ToFloat(bits)
                                       : linattn::bf16ToFloat(bits);
  }
  }
  return 0;
}

/// linattnCudaCheckInput*: the span of the strided memref copied to the
/// host on the call's stream, its elements gathered row-major, checked.
void checkInput(CheckedElement type, int64_t argIndex, int64_t rank,
                void *descriptor, const char *role) {
  constexpr const char *kWhat = "check-inputs";
  if (skippedAfterFailure())
    return;
  auto *d = static_cast<const MemRefDescriptor *>(descriptor);
  if (rank < 0 || !d) {
    report(kWhat, CudaStatus::error(CudaErrorKind::InvalidArgument,
                                    "argument #" + std::to_string(argIndex) +
                                        ": no memref descriptor"));
    return;
  }
  const int64_t *sizes = d->sizes();
  const int64_t *strides = d->strides(rank);
  size_t bytesPerElement = elementBytes(type);
  uint64_t span = spanBytes(rank, d, bytesPerElement);
  if (span == 0)
    return;
  CudaRuntime *rt = runtime(kWhat);
  if (!rt)
    return;
  std::vector<char> host(span);
  const char *first = d->aligned + d->offset * int64_t(bytesPerElement);
  CudaStream stream = currentCall.active ? currentCall.stream : nullptr;
  if (failed(kWhat, rt->copyAsync(host.data(), first, span, stream)) ||
      failed(kWhat, rt->synchronizeStream(stream)))
    return;
  std::vector<int64_t> shape(sizes, sizes + rank);
  size_t count = 1;
  for (int64_t size : shape)
    count *= size_t(size);
  std::vector<double> values(count);
  std::vector<int64_t> at(rank, 0);
  for (size_t n = 0; n < count; ++n) {
    int64_t element = 0;
    for (int64_t i = 0; i < rank; ++i)
      element += at[i] * strides[i];
    values[n] = decode(type, host.data() + element * int64_t(bytesPerElement));
    for (int64_t i = rank; i-- > 0;) // the next index, row-major
      if (++at[i] < sizes[i])
        break;
      else
        at[i] = 0;
  }
  std::string why = linattn::checkInputValues(shape, values.data(),
                                              size_t(argIndex), role ? role : "");
  if (!why.empty())
    report(kWhat, CudaStatus::error(CudaErrorKind::InvalidArgument, why));
}

} // namespace

extern "C" {

void linattnCudaCheckInputF32(int64_t argIndex, int64_t rank, void *descriptor,
                              const char *role) {
  checkInput(CheckedElement::F32, argIndex, rank, descriptor, role);
}
void linattnCudaCheckInputF16(int64_t argIndex, int64_t rank, void *descriptor,
                              const char *role) {
  checkInput(CheckedElement::F16, argIndex, rank, descriptor, role);
}
void linattnCudaCheckInputBF16(int64_t argIndex, int64_t rank, void *descriptor,
                               const char *role) {
  checkInput(CheckedElement::BF16, argIndex, rank, descriptor, role);
}
void linattnCudaCheckInputF64(int64_t argIndex, int64_t rank, void *descriptor,
                              const char *role) {
  checkInput(CheckedElement::F64, argIndex, rank, descriptor, role);
}

//===----------------------------------------------------------------------===//
// Calls
//===----------------------------------------------------------------------===//

void linattnCudaBeginCall(void *stream) {
  if (currentCall.active) {
    report("linattnCudaBeginCall",
           CudaStatus::error(CudaErrorKind::InvalidArgument,
                             "a compiled function was called while another "
                             "one was running on this thread"));
    return;
  }
  currentCall.active = true;
  currentCall.stream = static_cast<CudaStream>(stream);
}

void linattnCudaEndCall(bool synchronize) {
  Call call = currentCall;
  currentCall = Call();
  if (!call.active || !synchronize)
    return;
  if (CudaRuntime *rt = runtime("linattnCudaEndCall"))
    failed("linattnCudaEndCall", rt->synchronizeStream(call.stream));
}

//===----------------------------------------------------------------------===//
// Modules and kernels
//===----------------------------------------------------------------------===//

/// Remembers why a module did not load (the first message this thread
/// reported while loading it) for its kernels' lookups.
static void rememberModuleError() {
  std::lock_guard<std::mutex> lock(moduleErrorMutex);
  if (!moduleLoadError)
    moduleLoadError = new std::string;
  *moduleLoadError = hasFirstError ? *firstError : "unknown error";
}

void *mgpuModuleLoad(void *data, size_t gpuBlobSize) {
  CudaRuntime *rt = runtime("mgpuModuleLoad");
  CudaModule module = nullptr;
  if (!rt ||
      failed("mgpuModuleLoad", rt->loadModule(data, gpuBlobSize, module))) {
    rememberModuleError();
    return nullptr;
  }
  return module;
}

void *mgpuModuleLoadJIT(void *data, int optLevel) {
  CudaRuntime *rt = runtime("mgpuModuleLoadJIT");
  CudaModule module = nullptr;
  if (!rt ||
      failed("mgpuModuleLoadJIT", rt->loadModuleJIT(data, optLevel, module))) {
    rememberModuleError();
    return nullptr;
  }
  return module;
}

void mgpuModuleUnload(void *module) {
  if (!module) // it did not load
    return;
  CudaRuntime *rt = runtime("mgpuModuleUnload");
  if (!rt)
    return;
  CudaStatus status = rt->unloadModule(static_cast<CudaModule>(module));
  // Compiled code unloads its modules from a global destructor, which can
  // run after the driver has shut down at process exit: the module is gone
  // with it, so CUDA_ERROR_DEINITIALIZED (4) is not a failure here.
  constexpr int kCudaErrorDeinitialized = 4;
  if (status.kind() == CudaErrorKind::Driver &&
      status.cudaResult() == kCudaErrorDeinitialized)
    return;
  failed("mgpuModuleUnload", std::move(status));
}

void *mgpuModuleGetFunction(void *module, const char *name) {
  if (!module) {
    std::string why;
    {
      std::lock_guard<std::mutex> lock(moduleErrorMutex);
      why = moduleLoadError ? *moduleLoadError : "unknown error";
    }
    report("mgpuModuleGetFunction",
           CudaStatus::error(CudaErrorKind::InvalidArgument,
                             std::string("kernel '") + (name ? name : "") +
                                 "' is unavailable: its GPU module did not "
                                 "load (" + why + ")"));
    return nullptr;
  }
  CudaRuntime *rt = runtime("mgpuModuleGetFunction");
  CudaFunction function = nullptr;
  if (!rt || failed("mgpuModuleGetFunction",
                    rt->getFunction(static_cast<CudaModule>(module), name,
                                    function)))
    return nullptr;
  return function;
}

/// Whether LINATTN_KERNEL_TIMES is set (and not "0").
static bool kernelTimes() {
  static const bool on = [] {
    const char *v = std::getenv("LINATTN_KERNEL_TIMES");
    return v && *v && std::string(v) != "0";
  }();
  return on;
}

/// The launch both mgpu entry points perform; `cluster` is {1, 1, 1} for an
/// ordinary launch.
static void launch(const char *entry, void *function, CudaDim3 cluster,
                   CudaDim3 grid, CudaDim3 block, int32_t smem, void *stream,
                   void **params, void **extra) {
  if (skippedAfterFailure())
    return;
  if (!function) {
    report(entry, CudaStatus::error(CudaErrorKind::InvalidArgument,
                                    "launching a kernel that was not found "
                                    "(its lookup failed)"));
    return;
  }
  CudaRuntime *rt = runtime(entry);
  if (!rt)
    return;
  auto kernel = static_cast<CudaFunction>(function);
  if (smem < 0) {
    report(entry, CudaStatus::error(
                      CudaErrorKind::InvalidArgument,
                      "launching kernel '" + rt->functionName(kernel) +
                          "': negative dynamic shared memory size " +
                          std::to_string(smem)));
    return;
  }
  // A grid without blocks (B or T = 0) has nothing to do; the driver would
  // refuse it.
  if (grid.x == 0 || grid.y == 0 || grid.z == 0)
    return;
  CudaLaunchConfig config;
  config.cluster = cluster;
  config.grid = grid;
  config.block = block;
  config.sharedMemBytes = static_cast<uint32_t>(smem);
  config.stream = static_cast<CudaStream>(stream);
  if (!kernelTimes()) {
    failed(entry, rt->launch(kernel, config, params, extra));
    return;
  }
  // LINATTN_KERNEL_TIMES=1: time this launch alone with a pair of events
  // on its stream (synchronous: for finding the slow kernel, not for the
  // benchmark's numbers) and print it to stderr.
  CudaEvent start = nullptr, end = nullptr;
  float ms = 0.0f;
  if (failed(entry, rt->createEvent(start, /*timing=*/true)) ||
      failed(entry, rt->createEvent(end, /*timing=*/true)) ||
      failed(entry, rt->recordEvent(start, config.stream)) ||
      failed(entry, rt->launch(kernel, config, params, extra)) ||
      failed(entry, rt->recordEvent(end, config.stream)) ||
      failed(entry, rt->synchronizeEvent(end)) ||
      failed(entry, rt->elapsedMs(start, end, ms)))
    return;
  std::fprintf(stderr, "kernel %s grid (%ld, %ld, %ld) block %ld smem %d: %.4f ms\n",
               rt->functionName(kernel).c_str(), (long)grid.x, (long)grid.y,
               (long)grid.z, (long)block.x, smem, ms);
  failed(entry, rt->destroyEvent(start));
  failed(entry, rt->destroyEvent(end));
}

void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, void *stream,
                      void **params, void **extra, size_t /*paramsCount*/) {
  launch("mgpuLaunchKernel", function, {1, 1, 1}, {gridX, gridY, gridZ},
         {blockX, blockY, blockZ}, smem, stream, params, extra);
}

void mgpuLaunchClusterKernel(void *function, intptr_t clusterX,
                             intptr_t clusterY, intptr_t clusterZ,
                             intptr_t gridX, intptr_t gridY, intptr_t gridZ,
                             intptr_t blockX, intptr_t blockY, intptr_t blockZ,
                             int32_t smem, void *stream, void **params,
                             void **extra) {
  launch("mgpuLaunchClusterKernel", function, {clusterX, clusterY, clusterZ},
         {gridX, gridY, gridZ}, {blockX, blockY, blockZ}, smem, stream,
         params, extra);
}

//===----------------------------------------------------------------------===//
// Streams and events
//===----------------------------------------------------------------------===//

void *mgpuStreamCreate(void) {
  if (currentCall.active)
    return currentCall.stream;
  CudaRuntime *rt = runtime("mgpuStreamCreate");
  CudaStream stream = nullptr;
  if (!rt || failed("mgpuStreamCreate", rt->createStream(stream)))
    return nullptr;
  return stream;
}

void mgpuStreamDestroy(void *stream) {
  if (isCallStream(stream))
    return;
  if (CudaRuntime *rt = runtime("mgpuStreamDestroy"))
    failed("mgpuStreamDestroy",
           rt->destroyStream(static_cast<CudaStream>(stream)));
}

void mgpuStreamSynchronize(void *stream) {
  // Within a call everything is ordered on its stream and the host never
  // reads device memory: there is nothing to wait for (the caller
  // synchronises, or linattnCudaEndCall does for a synchronous call).
  if (isCallStream(stream))
    return;
  if (CudaRuntime *rt = runtime("mgpuStreamSynchronize"))
    failed("mgpuStreamSynchronize",
           rt->synchronizeStream(static_cast<CudaStream>(stream)));
}

void mgpuStreamWaitEvent(void *stream, void *event) {
  if (CudaRuntime *rt = runtime("mgpuStreamWaitEvent"))
    failed("mgpuStreamWaitEvent",
           rt->streamWaitEvent(static_cast<CudaStream>(stream),
                               static_cast<CudaEvent>(event)));
}

void *mgpuEventCreate(void) {
  CudaRuntime *rt = runtime("mgpuEventCreate");
  CudaEvent event = nullptr;
  if (!rt ||
      failed("mgpuEventCreate", rt->createEvent(event, /*timing=*/false)))
    return nullptr;
  return event;
}

void mgpuEventDestroy(void *event) {
  if (CudaRuntime *rt = runtime("mgpuEventDestroy"))
    failed("mgpuEventDestroy",
           rt->destroyEvent(static_cast<CudaEvent>(event)));
}

void mgpuEventSynchronize(void *event) {
  if (CudaRuntime *rt = runtime("mgpuEventSynchronize"))
    failed("mgpuEventSynchronize",
           rt->synchronizeEvent(static_cast<CudaEvent>(event)));
}

void mgpuEventRecord(void *event, void *stream) {
  if (CudaRuntime *rt = runtime("mgpuEventRecord"))
    failed("mgpuEventRecord", rt->recordEvent(static_cast<CudaEvent>(event),
                                              static_cast<CudaStream>(stream)));
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

/// LINATTN_POISON_ALLOCS=1 fills every new device allocation with 0xFF
/// bytes, a NaN in f32, f16 and bf16: a checker then finds any output
/// element the compiled code failed to write.
static bool poisonAllocations() {
  static const bool poison = [] {
    const char *v = std::getenv("LINATTN_POISON_ALLOCS");
    return v && *v && std::string(v) != "0";
  }();
  return poison;
}

void *mgpuMemAlloc(uint64_t sizeBytes, void *stream, bool isHostShared) {
  if (skippedAfterFailure())
    return nullptr;
  CudaRuntime *rt = runtime("mgpuMemAlloc");
  if (!rt)
    return nullptr;
  CudaDevicePtr ptr = 0;
  if (isHostShared || (!stream && !currentCall.active)) {
    // Managed memory, or device memory for code outside a call that asked
    // for no stream: synchronous, usable by any stream at once.
    if (failed("mgpuMemAlloc", isHostShared ? rt->allocManaged(sizeBytes, ptr)
                                            : rt->alloc(sizeBytes, ptr)))
      return nullptr;
    {
      // The address may be one a caller freed with cuMemFree after a
      // stream-ordered allocation: it is not stream-ordered now.
      std::lock_guard<std::mutex> lock(streamOrderedMutex);
      streamOrdered.erase(ptr);
    }
    allocationStats().allocated(ptr, sizeBytes);
    if (poisonAllocations() &&
        failed("mgpuMemAlloc (poisoning)", rt->memset8(ptr, 0xFF, sizeBytes)))
      return nullptr;
    return reinterpret_cast<void *>(ptr);
  }
  // Device memory in the order of `stream`, from the device's pool: no
  // synchronisation, and after the first calls no driver allocation.
  auto s = static_cast<CudaStream>(stream);
  if (failed("mgpuMemAlloc", rt->allocAsync(sizeBytes, s, ptr)))
    return nullptr;
  if (ptr) {
    std::lock_guard<std::mutex> lock(streamOrderedMutex);
    streamOrdered.insert(ptr);
  }
  allocationStats().allocated(ptr, sizeBytes);
  if (poisonAllocations() &&
      failed("mgpuMemAlloc (poisoning)",
             rt->memset8Async(ptr, 0xFF, sizeBytes, s)))
    return nullptr;
  return reinterpret_cast<void *>(ptr);
}

void mgpuMemFree(void *ptr, void *stream) {
  CudaRuntime *rt = runtime("mgpuMemFree");
  if (!rt || !ptr)
    return;
  bool ordered;
  {
    std::lock_guard<std::mutex> lock(streamOrderedMutex);
    ordered = streamOrdered.erase(devicePtr(ptr)) != 0;
  }
  allocationStats().freed(devicePtr(ptr));
  failed("mgpuMemFree",
         ordered ? rt->freeAsync(devicePtr(ptr), static_cast<CudaStream>(stream))
                 : rt->free(devicePtr(ptr)));
}

void linattnCudaResetAllocationPeak(void) {
  AllocationStats &stats = allocationStats();
  std::lock_guard<std::mutex> lock(stats.mutex);
  stats.sizes.clear();
  stats.live = stats.peak = 0;
}

uint64_t linattnCudaGetAllocationPeak(void) {
  AllocationStats &stats = allocationStats();
  std::lock_guard<std::mutex> lock(stats.mutex);
  return stats.peak;
}

void mgpuMemcpy(void *dst, void *src, size_t sizeBytes, void *stream) {
  if (skippedAfterFailure())
    return;
  if (sizeBytes && (!dst || !src)) {
    report("mgpuMemcpy", CudaStatus::error(CudaErrorKind::InvalidArgument,
                                           "copying " + std::to_string(sizeBytes) +
                                               " bytes to or from a null "
                                               "pointer"));
    return;
  }
  if (CudaRuntime *rt = runtime("mgpuMemcpy"))
    failed("mgpuMemcpy", rt->copyAsync(dst, src, sizeBytes,
                                       static_cast<CudaStream>(stream)));
}

void mgpuMemset32(void *dst, unsigned int value, size_t count, void *stream) {
  if (skippedAfterFailure())
    return;
  if (CudaRuntime *rt = runtime("mgpuMemset32"))
    failed("mgpuMemset32",
           rt->memset32Async(devicePtr(dst), value, count,
                             static_cast<CudaStream>(stream)));
}

void mgpuMemset16(void *dst, unsigned short value, size_t count,
                  void *stream) {
  if (skippedAfterFailure())
    return;
  if (CudaRuntime *rt = runtime("mgpuMemset16"))
    failed("mgpuMemset16",
           rt->memset16Async(devicePtr(dst), value, count,
                             static_cast<CudaStream>(stream)));
}

void mgpuMemHostRegister(void *ptr, uint64_t sizeBytes) {
  if (CudaRuntime *rt = runtime("mgpuMemHostRegister"))
    failed("mgpuMemHostRegister", rt->hostRegister(ptr, sizeBytes));
}

void mgpuMemHostUnregister(void *ptr) {
  if (CudaRuntime *rt = runtime("mgpuMemHostUnregister"))
    failed("mgpuMemHostUnregister", rt->hostUnregister(ptr));
}

void mgpuMemHostRegisterMemRef(int64_t rank, void *descriptor,
                               int64_t elementSizeBytes) {
  auto *d = static_cast<MemRefDescriptor *>(descriptor);
  uint64_t bytes = spanBytes(rank, d, elementSizeBytes);
  if (bytes == 0)
    return;
  mgpuMemHostRegister(d->aligned + d->offset * elementSizeBytes, bytes);
}

void mgpuMemHostUnregisterMemRef(int64_t rank, void *descriptor,
                                 int64_t elementSizeBytes) {
  auto *d = static_cast<MemRefDescriptor *>(descriptor);
  if (spanBytes(rank, d, elementSizeBytes) == 0)
    return;
  mgpuMemHostUnregister(d->aligned + d->offset * elementSizeBytes);
}

//===----------------------------------------------------------------------===//
// Devices and tensor maps
//===----------------------------------------------------------------------===//

void mgpuSetDefaultDevice(int32_t device) { defaultDevice = device; }

void *mgpuTensorMapEncodeTiledMemref(int64_t tensorRank, void *descriptor,
                                     int64_t tensorDataType,
                                     int64_t interleave, int64_t swizzle,
                                     int64_t l2Promotion, int64_t oobFill,
                                     int64_t *boxDims) {
  const char *function = "mgpuTensorMapEncodeTiledMemref";
  CudaRuntime *rt = runtime(function);
  if (!rt)
    return nullptr;
  auto invalid = [&](const std::string &why) {
    report(function, CudaStatus::error(CudaErrorKind::InvalidArgument,
                                       "encoding a rank-" +
                                           std::to_string(tensorRank) +
                                           " tiled tensor map: " + why));
    return nullptr;
  };
  // Bytes per element of CU_TENSOR_MAP_DATA_TYPE_UINT8 (0) ... _TFLOAT32_FTZ
  // (12); the packed sub-byte types after them are not supported here.
  static const int elementBytes[] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4};
  if (tensorDataType < 0 ||
      tensorDataType >= int64_t(sizeof(elementBytes) / sizeof(int)))
    return invalid("unsupported CUtensorMapDataType " +
                   std::to_string(tensorDataType));
  if (tensorRank < 1 || tensorRank > 5)
    return invalid("the rank must be between 1 and 5");
  int64_t elementSize = elementBytes[tensorDataType];

  // The driver wants dimensions innermost first, and the byte strides of
  // dimensions 1..rank-1; MLIR's descriptor is outermost first.
  auto *d = static_cast<MemRefDescriptor *>(descriptor);
  const int64_t *sizes = d->sizes();
  const int64_t *strides = d->strides(tensorRank);
  if (strides[tensorRank - 1] != 1)
    return invalid("the innermost stride is " +
                   std::to_string(strides[tensorRank - 1]) + ", not 1");
  uint64_t globalDims[5] = {0}, globalStrides[5] = {0};
  uint32_t box[5] = {0}, elementStrides[5] = {0};
  for (int64_t r = 0; r < tensorRank; ++r) {
    int64_t source = tensorRank - 1 - r;
    globalDims[r] = static_cast<uint64_t>(sizes[source]);
    box[r] = static_cast<uint32_t>(boxDims[source]);
    elementStrides[r] = 1;
    if (r > 0)
      globalStrides[r - 1] =
          static_cast<uint64_t>(strides[source] * elementSize);
  }

  linattn::CudaDevicePtr deviceMap = 0;
  alignas(128) unsigned char map[128] = {0};
  if (failed(function,
             rt->encodeTensorMapTiled(
                 map, static_cast<int>(tensorDataType),
                 static_cast<unsigned>(tensorRank),
                 d->aligned + d->offset * elementSize, globalDims,
                 globalStrides, box, elementStrides,
                 static_cast<int>(interleave), static_cast<int>(swizzle),
                 static_cast<int>(l2Promotion), static_cast<int>(oobFill))) ||
      failed(function, rt->alloc(sizeof(map), deviceMap)) ||
      failed(function, rt->copyToDevice(deviceMap, map, sizeof(map))))
    return nullptr;
  return reinterpret_cast<void *>(deviceMap);
}

} // extern "C"
