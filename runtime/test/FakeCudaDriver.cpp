//===- FakeCudaDriver.cpp - A libcuda.so.1 stand-in for tests -------------===//
//
// Built as lib/fake-cuda/libcuda.so.1 and loaded through
// LINATTN_CUDA_DRIVER, it lets the runtime's tests run every path, errors
// included, on machines without a GPU. It exports the driver entry points
// the runtime resolves (cuEventElapsedTime only under its original name, so
// the fallback is exercised too) and runs them on the host:
//
//  - device memory is host memory (calloc), copies and memsets are memmove
//    and loops, streams and events complete at once;
//  - a module image is the text "FAKE-CUBIN name name ...": the kernels it
//    has. Launching `fake_fill_i32(int *dst, int value, long long count)`
//    writes dst[i] = value + i; other kernels do nothing. PTX text is a
//    module of its `.entry` kernels (linattn-compile --format=isa libraries
//    load and launch, computing nothing). A real cubin (ELF)
//    gives CUDA_ERROR_NO_BINARY_FOR_GPU; JIT input containing "syntax error"
//    fails with a JIT log;
//  - limits are checked as the driver does (block size, dynamic shared
//    memory above 48 KiB only after cuFuncSetAttribute, a current context
//    for everything that needs one).
//
// Environment:
//   LINATTN_FAKE_CUDA_DEVICES=N   devices (default 1)
//   LINATTN_FAKE_CUDA_FAIL=cuLaunchKernel=701,cuInit=100
//                                 calls that return the given CUresult
//   LINATTN_FAKE_CUDA_TRACE=1     print each call and its arguments to
//                                 stderr as "fake-cuda: ..."
//
//===----------------------------------------------------------------------===//

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace {

using CUresult = int;
using CUdeviceptr = unsigned long long;

constexpr CUresult kSuccess = 0;
constexpr CUresult kInvalidValue = 1;
constexpr CUresult kOutOfMemory = 2;
constexpr CUresult kNotInitialized = 3;
constexpr CUresult kInvalidDevice = 101;
constexpr CUresult kInvalidImage = 200;
constexpr CUresult kInvalidContext = 201;
constexpr CUresult kNoBinaryForGpu = 209;
constexpr CUresult kInvalidPtx = 218;
constexpr CUresult kInvalidHandle = 400;
constexpr CUresult kNotFound = 500;
constexpr CUresult kHostMemoryAlreadyRegistered = 712;
constexpr CUresult kHostMemoryNotRegistered = 713;

constexpr int kMaxSharedOptin = 232448;
constexpr size_t kTotalMemory = size_t(1) << 30;

struct Function {
  std::string name;
  int maxDynamicShared = 48 * 1024;
  bool nonPortableClusters = false;
};
struct Module {
  std::vector<Function *> functions;
};
struct Stream {
  unsigned flags;
};
struct Event {
  unsigned flags;
  bool recorded = false;
  float time = 0;
};
struct Context {
  int device;
  int references = 0;
};

std::mutex mutex;
bool initialized = false;
Context contexts[8] = {{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}};
thread_local Context *current = nullptr;
std::map<CUdeviceptr, size_t> allocations;
std::set<void *> registered;
float clockMs = 0;

bool tracing() {
  static const bool on = std::getenv("LINATTN_FAKE_CUDA_TRACE") != nullptr;
  return on;
}

void trace(const char *format, ...) {
  if (!tracing())
    return;
  va_list args;
  va_start(args, format);
  std::fputs("fake-cuda: ", stderr);
  std::vfprintf(stderr, format, args);
  std::fputc('\n', stderr);
  va_end(args);
}

/// The CUresult LINATTN_FAKE_CUDA_FAIL assigns to `call`, else 0.
CUresult injected(const char *call) {
  static const std::map<std::string, int> failures = [] {
    std::map<std::string, int> parsed;
    const char *spec = std::getenv("LINATTN_FAKE_CUDA_FAIL");
    std::string s = spec ? spec : "";
    size_t pos = 0;
    while (pos < s.size()) {
      size_t end = s.find(',', pos);
      if (end == std::string::npos)
        end = s.size();
      std::string item = s.substr(pos, end - pos);
      size_t eq = item.find('=');
      if (eq != std::string::npos)
        parsed[item.substr(0, eq)] = std::atoi(item.c_str() + eq + 1);
      pos = end + 1;
    }
    return parsed;
  }();
  auto it = failures.find(call);
  return it == failures.end() ? 0 : it->second;
}

int deviceCount() {
  const char *n = std::getenv("LINATTN_FAKE_CUDA_DEVICES");
  int count = n ? std::atoi(n) : 1;
  return count < 0 ? 0 : (count > 8 ? 8 : count);
}

/// Every entry point but cuInit, cuDriverGetVersion and the error names
/// starts with this: an injected failure, or not initialised.
#define FAKE_ENTER(call)                                                       \
  do {                                                                         \
    if (CUresult injected_ = injected(call))                                   \
      return injected_;                                                        \
    if (!initialized)                                                          \
      return kNotInitialized;                                                  \
  } while (false)

/// ... and this too where the driver needs a current context.
#define FAKE_NEED_CONTEXT()                                                    \
  do {                                                                         \
    if (!current)                                                              \
      return kInvalidContext;                                                  \
  } while (false)

bool isAllocated(CUdeviceptr p) {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = allocations.upper_bound(p);
  if (it == allocations.begin())
    return false;
  --it;
  return p < it->first + it->second;
}

const struct {
  CUresult code;
  const char *name;
  const char *text;
} errorNames[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {34, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU",
     "no kernel image is available for execution on the device"},
    {218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS",
     "an illegal memory access was encountered"},
    {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
     "too many resources requested for launch"},
    {712, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
     "part or all of the requested memory range is already mapped"},
    {713, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
     "pointer does not correspond to a registered memory region"},
    {719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
     "system has unsupported display driver / cuda driver combination"},
    {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

std::string dims(unsigned x, unsigned y, unsigned z) {
  return "[" + std::to_string(x) + ", " + std::to_string(y) + ", " +
         std::to_string(z) + "]";
}

CUresult launch(const char *call, Function *f, unsigned gx, unsigned gy,
                unsigned gz, unsigned bx, unsigned by, unsigned bz,
                unsigned smem, Stream *stream, void **params,
                const std::string &extraTrace) {
  if (!f)
    return kInvalidHandle;
  trace("%s '%s' grid %s block %s smem %u stream %s%s", call, f->name.c_str(),
        dims(gx, gy, gz).c_str(), dims(bx, by, bz).c_str(), smem,
        stream ? "user" : "default", extraTrace.c_str());
  if (!gx || !gy || !gz || !bx || !by || !bz ||
      (unsigned long long)bx * by * bz > 1024 || gy > 65535 || gz > 65535)
    return kInvalidValue;
  if (smem > unsigned(f->maxDynamicShared))
    return kInvalidValue;
  if (f->name == "fake_fill_i32") {
    if (!params)
      return kInvalidValue;
    CUdeviceptr dst = *static_cast<CUdeviceptr *>(params[0]);
    int value = *static_cast<int *>(params[1]);
    long long count = *static_cast<long long *>(params[2]);
    if (!isAllocated(dst) || !isAllocated(dst + (count - 1) * 4))
      return 700; // CUDA_ERROR_ILLEGAL_ADDRESS, reported here at once
    int *out = reinterpret_cast<int *>(dst);
    for (long long i = 0; i < count; ++i)
      out[i] = value + static_cast<int>(i);
  }
  return kSuccess;
}

/// The memsets' common part: `count` elements of `value` at `dst`, all
/// inside one allocation.
template <typename T>
CUresult fill(CUdeviceptr dst, T value, size_t count) {
  if (!isAllocated(dst) || !isAllocated(dst + sizeof(T) * count - 1))
    return kInvalidValue;
  auto *p = reinterpret_cast<T *>(dst);
  for (size_t i = 0; i < count; ++i)
    p[i] = value;
  return kSuccess;
}

} // namespace

extern "C" {

//===--- Initialisation, errors, devices ---------------------------------===//

CUresult cuInit(unsigned flags) {
  trace("cuInit(%u)", flags);
  if (CUresult r = injected("cuInit"))
    return r;
  initialized = true;
  return kSuccess;
}

CUresult cuDriverGetVersion(int *version) {
  if (CUresult r = injected("cuDriverGetVersion"))
    return r;
  *version = 12080;
  return kSuccess;
}

CUresult cuGetErrorName(CUresult error, const char **name) {
  for (const auto &e : errorNames)
    if (e.code == error) {
      *name = e.name;
      return kSuccess;
    }
  *name = nullptr;
  return kInvalidValue;
}

CUresult cuGetErrorString(CUresult error, const char **text) {
  for (const auto &e : errorNames)
    if (e.code == error) {
      *text = e.text;
      return kSuccess;
    }
  *text = nullptr;
  return kInvalidValue;
}

CUresult cuDeviceGetCount(int *count) {
  FAKE_ENTER("cuDeviceGetCount");
  *count = deviceCount();
  return kSuccess;
}

CUresult cuDeviceGet(int *device, int ordinal) {
  FAKE_ENTER("cuDeviceGet");
  if (ordinal < 0 || ordinal >= deviceCount())
    return kInvalidDevice;
  *device = ordinal;
  return kSuccess;
}

CUresult cuDeviceGetName(char *name, int length, int device) {
  FAKE_ENTER("cuDeviceGetName");
  if (device < 0 || device >= deviceCount())
    return kInvalidDevice;
  std::snprintf(name, length, "LinAttn Fake GPU");
  return kSuccess;
}

CUresult cuDeviceGetAttribute(int *value, int attribute, int device) {
  FAKE_ENTER("cuDeviceGetAttribute");
  if (device < 0 || device >= deviceCount())
    return kInvalidDevice;
  switch (attribute) {
  case 1: // MAX_THREADS_PER_BLOCK
    *value = 1024;
    break;
  case 13: // CLOCK_RATE (kHz)
    *value = 1980000;
    break;
  case 16: // MULTIPROCESSOR_COUNT
    *value = 4;
    break;
  case 33: // PCI_BUS_ID
    *value = 0x19;
    break;
  case 36: // MEMORY_CLOCK_RATE (kHz)
    *value = 2619000;
    break;
  case 37: // GLOBAL_MEMORY_BUS_WIDTH
    *value = 5120;
    break;
  case 38: // L2_CACHE_SIZE
    *value = 50 << 20;
    break;
  case 75: // COMPUTE_CAPABILITY_MAJOR
    *value = 9;
    break;
  case 81: // MAX_SHARED_MEMORY_PER_MULTIPROCESSOR
    *value = 233472;
    break;
  case 97: // MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
    *value = kMaxSharedOptin;
    break;
  case 115: // MEMORY_POOLS_SUPPORTED
  case 120: // CLUSTER_LAUNCH
    *value = 1;
    break;
  default: // COMPUTE_CAPABILITY_MINOR (76), PCI domain/device, ...
    *value = 0;
    break;
  }
  return kSuccess;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, int device) {
  FAKE_ENTER("cuDeviceTotalMem_v2");
  if (device < 0 || device >= deviceCount())
    return kInvalidDevice;
  *bytes = kTotalMemory;
  return kSuccess;
}

//===--- Contexts ---------------------------------------------------------===//

CUresult cuDevicePrimaryCtxRetain(Context **context, int device) {
  FAKE_ENTER("cuDevicePrimaryCtxRetain");
  if (device < 0 || device >= deviceCount())
    return kInvalidDevice;
  ++contexts[device].references;
  *context = &contexts[device];
  trace("cuDevicePrimaryCtxRetain(device %d)", device);
  return kSuccess;
}

CUresult cuDevicePrimaryCtxRelease_v2(int device) {
  FAKE_ENTER("cuDevicePrimaryCtxRelease_v2");
  if (device < 0 || device >= deviceCount())
    return kInvalidDevice;
  --contexts[device].references;
  trace("cuDevicePrimaryCtxRelease_v2(device %d)", device);
  return kSuccess;
}

CUresult cuCtxSetCurrent(Context *context) {
  FAKE_ENTER("cuCtxSetCurrent");
  current = context;
  trace("cuCtxSetCurrent(device %d)", context ? context->device : -1);
  return kSuccess;
}

CUresult cuCtxSynchronize() {
  FAKE_ENTER("cuCtxSynchronize");
  FAKE_NEED_CONTEXT();
  return kSuccess;
}

//===--- Modules and launches ---------------------------------------------===//

static CUresult loadModule(Module **module, const void *image) {
  const char *text = static_cast<const char *>(image);
  if (std::strncmp(text, "\x7f" "ELF", 4) == 0)
    return kNoBinaryForGpu;
  // PTX (what linattn-compile --format=isa embeds): a module of its
  // `.entry` kernels, which launch without running.
  if (std::strstr(text, ".version") && std::strstr(text, ".entry ")) {
    Module *m = new Module;
    for (const char *p = std::strstr(text, ".entry "); p;
         p = std::strstr(p + 7, ".entry ")) {
      const char *name = p + 7, *end = std::strchr(name, '(');
      if (end)
        m->functions.push_back(new Function{std::string(name, end)});
    }
    *module = m;
    return kSuccess;
  }
  if (std::strncmp(text, "FAKE-CUBIN", 10) != 0)
    return kInvalidImage;
  Module *m = new Module;
  std::string names = text + 10;
  size_t pos = 0;
  while ((pos = names.find_first_not_of(" \n\t", pos)) != std::string::npos) {
    size_t end = names.find_first_of(" \n\t", pos);
    if (end == std::string::npos)
      end = names.size();
    m->functions.push_back(new Function{names.substr(pos, end - pos)});
    pos = end;
  }
  *module = m;
  return kSuccess;
}

CUresult cuModuleLoadData(Module **module, const void *image) {
  FAKE_ENTER("cuModuleLoadData");
  FAKE_NEED_CONTEXT();
  trace("cuModuleLoadData");
  return loadModule(module, image);
}

CUresult cuModuleLoadDataEx(Module **module, const void *image,
                            unsigned numOptions, int *options,
                            void **values) {
  FAKE_ENTER("cuModuleLoadDataEx");
  FAKE_NEED_CONTEXT();
  char *errorLog = nullptr;
  size_t errorLogSize = 0;
  long optLevel = -1;
  for (unsigned i = 0; i < numOptions; ++i) {
    if (options[i] == 5) // CU_JIT_ERROR_LOG_BUFFER
      errorLog = static_cast<char *>(values[i]);
    else if (options[i] == 6) // CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES
      errorLogSize = reinterpret_cast<size_t>(values[i]);
    else if (options[i] == 7) // CU_JIT_OPTIMIZATION_LEVEL
      optLevel = static_cast<long>(reinterpret_cast<intptr_t>(values[i]));
  }
  trace("cuModuleLoadDataEx(optimization level %ld)", optLevel);
  if (std::strstr(static_cast<const char *>(image), "syntax error")) {
    if (errorLog && errorLogSize)
      std::snprintf(errorLog, errorLogSize,
                    "ptxas application ptx input, line 3; error   : fake "
                    "syntax error\nptxas fatal   : Ptx assembly aborted due "
                    "to errors\n");
    return kInvalidPtx;
  }
  return loadModule(module, image);
}

CUresult cuModuleUnload(Module *module) {
  FAKE_ENTER("cuModuleUnload");
  if (!module)
    return kInvalidHandle;
  for (Function *f : module->functions)
    delete f;
  delete module;
  return kSuccess;
}

CUresult cuModuleGetFunction(Function **function, Module *module,
                             const char *name) {
  FAKE_ENTER("cuModuleGetFunction");
  if (!module)
    return kInvalidHandle;
  for (Function *f : module->functions)
    if (f->name == name) {
      *function = f;
      return kSuccess;
    }
  return kNotFound;
}

CUresult cuFuncSetAttribute(Function *function, int attribute, int value) {
  FAKE_ENTER("cuFuncSetAttribute");
  if (!function)
    return kInvalidHandle;
  trace("cuFuncSetAttribute('%s', %d, %d)", function->name.c_str(), attribute,
        value);
  if (attribute == 8) { // MAX_DYNAMIC_SHARED_SIZE_BYTES
    if (value < 0 || value > kMaxSharedOptin)
      return kInvalidValue;
    function->maxDynamicShared = value;
    return kSuccess;
  }
  if (attribute == 14) { // NON_PORTABLE_CLUSTER_SIZE_ALLOWED
    function->nonPortableClusters = value != 0;
    return kSuccess;
  }
  return kInvalidValue;
}

CUresult cuLaunchKernel(Function *f, unsigned gx, unsigned gy, unsigned gz,
                        unsigned bx, unsigned by, unsigned bz, unsigned smem,
                        Stream *stream, void **params, void **extra) {
  FAKE_ENTER("cuLaunchKernel");
  FAKE_NEED_CONTEXT();
  (void)extra;
  return launch("cuLaunchKernel", f, gx, gy, gz, bx, by, bz, smem, stream,
                params, "");
}

/// cuda.h's CUlaunchAttribute and CUlaunchConfig.
struct FakeLaunchAttribute {
  int id;
  char pad[4];
  union {
    char bytes[64];
    struct {
      unsigned x, y, z;
    } clusterDim;
  } value;
};
struct FakeLaunchConfig {
  unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  Stream *hStream;
  FakeLaunchAttribute *attrs;
  unsigned numAttrs;
};

CUresult cuLaunchKernelEx(const FakeLaunchConfig *config, Function *f,
                          void **params, void **extra) {
  FAKE_ENTER("cuLaunchKernelEx");
  FAKE_NEED_CONTEXT();
  (void)extra;
  std::string cluster;
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    if (config->attrs[i].id != 4) // CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
      return kInvalidValue;
    const auto &c = config->attrs[i].value.clusterDim;
    if (!f || (c.x * c.y * c.z > 8 && !f->nonPortableClusters))
      return kInvalidValue;
    cluster = " cluster " + dims(c.x, c.y, c.z);
  }
  return launch("cuLaunchKernelEx", f, config->gridDimX, config->gridDimY,
                config->gridDimZ, config->blockDimX, config->blockDimY,
                config->blockDimZ, config->sharedMemBytes, config->hStream,
                params, cluster);
}

//===--- Memory -----------------------------------------------------------===//

static CUresult allocate(CUdeviceptr *ptr, size_t bytes, const char *call) {
  if (bytes == 0)
    return kInvalidValue;
  size_t used = 0;
  {
    std::lock_guard<std::mutex> lock(mutex);
    for (const auto &a : allocations)
      used += a.second;
  }
  if (used + bytes > kTotalMemory)
    return kOutOfMemory;
  void *p = std::calloc(1, bytes);
  if (!p)
    return kOutOfMemory;
  *ptr = reinterpret_cast<CUdeviceptr>(p);
  std::lock_guard<std::mutex> lock(mutex);
  allocations[*ptr] = bytes;
  trace("%s(%zu bytes)", call, bytes);
  return kSuccess;
}

static CUresult release(CUdeviceptr ptr, const char *call) {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = allocations.find(ptr);
  if (it == allocations.end())
    return kInvalidValue;
  trace("%s(%zu bytes)", call, it->second);
  std::free(reinterpret_cast<void *>(ptr));
  allocations.erase(it);
  return kSuccess;
}

CUresult cuMemAlloc_v2(CUdeviceptr *ptr, size_t bytes) {
  FAKE_ENTER("cuMemAlloc_v2");
  FAKE_NEED_CONTEXT();
  return allocate(ptr, bytes, "cuMemAlloc_v2");
}

CUresult cuMemAllocManaged(CUdeviceptr *ptr, size_t bytes, unsigned flags) {
  FAKE_ENTER("cuMemAllocManaged");
  FAKE_NEED_CONTEXT();
  if (flags != 1) // CU_MEM_ATTACH_GLOBAL
    return kInvalidValue;
  return allocate(ptr, bytes, "cuMemAllocManaged");
}

CUresult cuMemAllocAsync(CUdeviceptr *ptr, size_t bytes, Stream *) {
  FAKE_ENTER("cuMemAllocAsync");
  FAKE_NEED_CONTEXT();
  return allocate(ptr, bytes, "cuMemAllocAsync");
}

/// One default pool per process: its address is the handle.
static int defaultPool;

CUresult cuDeviceGetDefaultMemPool(void **pool, int device) {
  FAKE_ENTER("cuDeviceGetDefaultMemPool");
  if (!pool || device < 0 || device >= deviceCount())
    return kInvalidValue;
  *pool = &defaultPool;
  return kSuccess;
}

CUresult cuMemPoolSetAttribute(void *pool, int attribute, void *value) {
  FAKE_ENTER("cuMemPoolSetAttribute");
  if (pool != &defaultPool || !value)
    return kInvalidValue;
  if (attribute == 4) // CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, a cuuint64_t
    trace("cuMemPoolSetAttribute(release threshold %llu)",
          *static_cast<unsigned long long *>(value));
  return kSuccess;
}

CUresult cuMemFree_v2(CUdeviceptr ptr) {
  FAKE_ENTER("cuMemFree_v2");
  FAKE_NEED_CONTEXT();
  return release(ptr, "cuMemFree_v2");
}

CUresult cuMemFreeAsync(CUdeviceptr ptr, Stream *) {
  FAKE_ENTER("cuMemFreeAsync");
  FAKE_NEED_CONTEXT();
  return release(ptr, "cuMemFreeAsync");
}

CUresult cuMemGetInfo_v2(size_t *freeBytes, size_t *totalBytes) {
  FAKE_ENTER("cuMemGetInfo_v2");
  FAKE_NEED_CONTEXT();
  size_t used = 0;
  std::lock_guard<std::mutex> lock(mutex);
  for (const auto &a : allocations)
    used += a.second;
  *freeBytes = kTotalMemory - used;
  *totalBytes = kTotalMemory;
  return kSuccess;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes) {
  FAKE_ENTER("cuMemcpyHtoD_v2");
  FAKE_NEED_CONTEXT();
  if (!isAllocated(dst) || !isAllocated(dst + bytes - 1))
    return kInvalidValue;
  std::memmove(reinterpret_cast<void *>(dst), src, bytes);
  return kSuccess;
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes) {
  FAKE_ENTER("cuMemcpyDtoH_v2");
  FAKE_NEED_CONTEXT();
  if (!isAllocated(src) || !isAllocated(src + bytes - 1))
    return kInvalidValue;
  std::memmove(dst, reinterpret_cast<const void *>(src), bytes);
  return kSuccess;
}

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                       Stream *) {
  FAKE_ENTER("cuMemcpyAsync");
  FAKE_NEED_CONTEXT();
  trace("cuMemcpyAsync(%zu bytes, %s to %s)", bytes,
        isAllocated(src) ? "device" : "host",
        isAllocated(dst) ? "device" : "host");
  if (!dst || !src)
    return kInvalidValue;
  std::memmove(reinterpret_cast<void *>(dst),
               reinterpret_cast<const void *>(src), bytes);
  return kSuccess;
}

CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char value, size_t count) {
  FAKE_ENTER("cuMemsetD8_v2");
  FAKE_NEED_CONTEXT();
  return fill(dst, value, count);
}

CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t count,
                         Stream *) {
  FAKE_ENTER("cuMemsetD8Async");
  FAKE_NEED_CONTEXT();
  trace("cuMemsetD8Async(0x%02x x %zu)", value, count);
  return fill(dst, value, count);
}

CUresult cuMemsetD16Async(CUdeviceptr dst, unsigned short value, size_t count,
                          Stream *) {
  FAKE_ENTER("cuMemsetD16Async");
  FAKE_NEED_CONTEXT();
  trace("cuMemsetD16Async(0x%04x x %zu)", value, count);
  return fill(dst, value, count);
}

CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned value, size_t count,
                          Stream *) {
  FAKE_ENTER("cuMemsetD32Async");
  FAKE_NEED_CONTEXT();
  trace("cuMemsetD32Async(0x%08x x %zu)", value, count);
  return fill(dst, value, count);
}

CUresult cuMemHostRegister_v2(void *ptr, size_t bytes, unsigned flags) {
  FAKE_ENTER("cuMemHostRegister_v2");
  FAKE_NEED_CONTEXT();
  trace("cuMemHostRegister_v2(%zu bytes, flags %u)", bytes, flags);
  std::lock_guard<std::mutex> lock(mutex);
  return registered.insert(ptr).second ? kSuccess
                                       : kHostMemoryAlreadyRegistered;
}

CUresult cuMemHostUnregister(void *ptr) {
  FAKE_ENTER("cuMemHostUnregister");
  FAKE_NEED_CONTEXT();
  trace("cuMemHostUnregister");
  std::lock_guard<std::mutex> lock(mutex);
  return registered.erase(ptr) ? kSuccess : kHostMemoryNotRegistered;
}

//===--- Streams and events -----------------------------------------------===//

CUresult cuStreamCreate(Stream **stream, unsigned flags) {
  FAKE_ENTER("cuStreamCreate");
  FAKE_NEED_CONTEXT();
  trace("cuStreamCreate(flags %u)", flags);
  *stream = new Stream{flags};
  return kSuccess;
}

CUresult cuStreamDestroy_v2(Stream *stream) {
  FAKE_ENTER("cuStreamDestroy_v2");
  if (!stream)
    return kInvalidHandle;
  trace("cuStreamDestroy_v2");
  delete stream;
  return kSuccess;
}

CUresult cuStreamSynchronize(Stream *) {
  FAKE_ENTER("cuStreamSynchronize");
  FAKE_NEED_CONTEXT();
  trace("cuStreamSynchronize");
  return kSuccess;
}

CUresult cuStreamWaitEvent(Stream *, Event *event, unsigned) {
  FAKE_ENTER("cuStreamWaitEvent");
  FAKE_NEED_CONTEXT();
  trace("cuStreamWaitEvent");
  return event ? kSuccess : kInvalidHandle;
}

CUresult cuEventCreate(Event **event, unsigned flags) {
  FAKE_ENTER("cuEventCreate");
  FAKE_NEED_CONTEXT();
  trace("cuEventCreate(flags %u)", flags);
  *event = new Event{flags};
  return kSuccess;
}

CUresult cuEventDestroy_v2(Event *event) {
  FAKE_ENTER("cuEventDestroy_v2");
  if (!event)
    return kInvalidHandle;
  trace("cuEventDestroy_v2");
  delete event;
  return kSuccess;
}

CUresult cuEventRecord(Event *event, Stream *) {
  FAKE_ENTER("cuEventRecord");
  FAKE_NEED_CONTEXT();
  if (!event)
    return kInvalidHandle;
  trace("cuEventRecord");
  event->recorded = true;
  // Every record is 1.5 ms after the previous one: a fixed clock for tests.
  event->time = clockMs += 1.5f;
  return kSuccess;
}

CUresult cuEventSynchronize(Event *event) {
  FAKE_ENTER("cuEventSynchronize");
  trace("cuEventSynchronize");
  return event ? kSuccess : kInvalidHandle;
}

// Only the original name: the runtime falls back to it from _v2.
CUresult cuEventElapsedTime(float *ms, Event *start, Event *end) {
  FAKE_ENTER("cuEventElapsedTime");
  if (!start || !end)
    return kInvalidHandle;
  if ((start->flags | end->flags) & 0x2) // CU_EVENT_DISABLE_TIMING
    return kInvalidHandle;
  if (!start->recorded || !end->recorded)
    return kInvalidHandle;
  *ms = end->time - start->time;
  return kSuccess;
}

//===--- Tensor maps ------------------------------------------------------===//

CUresult cuTensorMapEncodeTiled(void *map, int dataType, unsigned rank,
                                void *address, const unsigned long long *dims,
                                const unsigned long long *strides,
                                const unsigned *box,
                                const unsigned *elementStrides, int interleave,
                                int swizzle, int l2Promotion, int oobFill) {
  FAKE_ENTER("cuTensorMapEncodeTiled");
  auto list = [](auto *values, unsigned n) {
    std::string s = "[";
    for (unsigned i = 0; i < n; ++i)
      s += (i ? ", " : "") + std::to_string(values[i]);
    return s + "]";
  };
  trace("cuTensorMapEncodeTiled(type %d, rank %u, dims %s, strides %s, box "
        "%s, element strides %s, interleave %d, swizzle %d, l2 %d, oob %d, "
        "address offset %lld)",
        dataType, rank, list(dims, rank).c_str(),
        list(strides, rank - 1).c_str(), list(box, rank).c_str(),
        list(elementStrides, rank).c_str(), interleave, swizzle, l2Promotion,
        oobFill,
        (long long)(reinterpret_cast<uintptr_t>(address) % 4096));
  if (reinterpret_cast<uintptr_t>(map) % 64 != 0 || rank < 1 || rank > 5)
    return kInvalidValue;
  std::memset(map, 0x5a, 128);
  return kSuccess;
}

} // extern "C"
