//===- CudaRuntime.cpp - Load and launch CUDA kernels ---------------------===//
//
// Each method makes the device's primary context current (once per thread),
// calls the driver and turns a failure into a message with the call, the
// CUresult and what was being done. The launch path stays cheap: one lock,
// one hash lookup, no strings unless it fails.
//
//===----------------------------------------------------------------------===//

#include "linattn/CudaRuntime.h"

#include "CudaDriver.h"

#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace linattn {

using namespace cuda;

namespace {

std::atomic<uint64_t> nextRuntimeId{1};

/// The id of the runtime whose context this thread last made current; ids
/// are never reused, unlike context handles.
thread_local uint64_t currentRuntimeId = 0;

std::string formatDims(const CudaDim3 &d) {
  return "[" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " +
         std::to_string(d.z) + "]";
}

std::string formatPointer(const void *p) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%p", p);
  return buffer;
}

std::string formatDevicePointer(CudaDevicePtr p) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "0x%llx", p);
  return buffer;
}

std::string formatStream(CudaStream stream) {
  return stream ? "stream " + formatPointer(stream) : "the default stream";
}

bool isOne(const CudaDim3 &d) { return d.x == 1 && d.y == 1 && d.z == 1; }

bool fitsDriver(const CudaDim3 &d) {
  for (int64_t v : {d.x, d.y, d.z})
    if (v < 1 || v > int64_t(UINT32_MAX))
      return false;
  return true;
}

/// What an image looks like, for messages: the driver accepts all three
/// through cuModuleLoadData.
const char *imageKind(const void *image, size_t size) {
  const auto *bytes = static_cast<const unsigned char *>(image);
  if (size < 4)
    return "GPU module";
  if (std::memcmp(bytes, "\x7f" "ELF", 4) == 0)
    return "cubin";
  // The fatbinary header's magic, 0xBA55ED50, little-endian.
  if (std::memcmp(bytes, "\x50\xed\x55\xba", 4) == 0)
    return "fatbinary";
  if (bytes[0] == '/' || bytes[0] == '.' || bytes[0] == '\n' ||
      bytes[0] == ' ' || bytes[0] == '\t')
    return "PTX";
  return "GPU module";
}

/// A kernel that faulted poisons the context: whatever driver call comes
/// next returns the fault, so the message should name the kernel.
/// CUDA_ERROR_ILLEGAL_ADDRESS (700), _LAUNCH_TIMEOUT (702), _ASSERT (710),
/// _HARDWARE_STACK_ERROR (714) to _LAUNCH_FAILED (719).
bool isKernelFault(CUresult result) {
  return result == 700 || result == 702 || result == 710 ||
         (result >= 714 && result <= 719);
}

} // namespace

std::string CudaDeviceInfo::smArch() const {
  return "sm_" + std::to_string(computeCapabilityMajor) +
         std::to_string(computeCapabilityMinor);
}

std::string describeLaunch(const CudaLaunchConfig &config) {
  std::string s = "grid " + formatDims(config.grid) + ", block " +
                  formatDims(config.block) + ", " +
                  std::to_string(config.sharedMemBytes) +
                  " bytes of dynamic shared memory";
  if (!isOne(config.cluster))
    s += ", cluster " + formatDims(config.cluster);
  return s;
}

//===----------------------------------------------------------------------===//
// Creation
//===----------------------------------------------------------------------===//

CudaStatus CudaRuntime::getDeviceCount(int &count) {
  count = 0;
  const DriverApi *api = nullptr;
  CudaStatus status = initDriver(api);
  if (!status.ok())
    return status;
  return checkResult(*api, api->cuDeviceGetCount(&count), "cuDeviceGetCount",
                     "counting CUDA devices");
}

CudaStatus CudaRuntime::getDriverVersion(int &version) {
  version = 0;
  const DriverApi *api = nullptr;
  CudaStatus status = initDriver(api);
  if (!status.ok())
    return status;
  return checkResult(*api, api->cuDriverGetVersion(&version),
                     "cuDriverGetVersion", "querying the CUDA driver version");
}

std::string CudaRuntime::driverPath() {
  const DriverApi *api = nullptr;
  (void)initDriver(api);
  return api ? api->path : std::string();
}

CudaStatus CudaRuntime::create(int ordinal, std::unique_ptr<CudaRuntime> &out) {
  out.reset();
  int count = 0;
  CudaStatus status = getDeviceCount(count);
  if (!status.ok())
    return status;
  if (count == 0)
    return CudaStatus::error(CudaErrorKind::NoDevice,
                             "no CUDA device: cuDeviceGetCount returned 0");
  if (ordinal < 0 || ordinal >= count)
    return CudaStatus::error(CudaErrorKind::InvalidArgument,
                             "no CUDA device " + std::to_string(ordinal) +
                                 ": the driver sees " + std::to_string(count) +
                                 (count == 1 ? " device (0)"
                                             : " devices (0 to " +
                                                   std::to_string(count - 1) +
                                                   ")"));

  const DriverApi *api = nullptr;
  (void)initDriver(api);
  std::unique_ptr<CudaRuntime> runtime(new CudaRuntime());
  runtime->api_ = api;
  CudaDeviceInfo &info = runtime->info_;
  info.ordinal = ordinal;
  std::string device = "CUDA device " + std::to_string(ordinal);

  if (!(status = checkResult(*api, api->cuDeviceGet(&runtime->device_, ordinal),
                             "cuDeviceGet", "getting " + device))
           .ok())
    return status;
  CUdevice dev = runtime->device_;

  char name[256] = {0};
  if (!(status = checkResult(*api,
                             api->cuDeviceGetName(name, sizeof(name) - 1, dev),
                             "cuDeviceGetName", "naming " + device))
           .ok())
    return status;
  info.name = name;

  int clusterLaunch = 0, memoryPools = 0;
  const struct {
    int attribute;
    int *value;
    const char *what;
  } attributes[] = {
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
       &info.computeCapabilityMajor, "COMPUTE_CAPABILITY_MAJOR"},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
       &info.computeCapabilityMinor, "COMPUTE_CAPABILITY_MINOR"},
      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &info.multiprocessorCount,
       "MULTIPROCESSOR_COUNT"},
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &info.maxThreadsPerBlock,
       "MAX_THREADS_PER_BLOCK"},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
       &info.maxSharedMemoryPerBlockOptin, "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
       &info.maxSharedMemoryPerMultiprocessor,
       "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR"},
      {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, &info.l2CacheBytes, "L2_CACHE_SIZE"},
      {CU_DEVICE_ATTRIBUTE_CLOCK_RATE, &info.clockRateKHz, "CLOCK_RATE"},
      {CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, &info.memoryClockRateKHz,
       "MEMORY_CLOCK_RATE"},
      {CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, &info.memoryBusWidthBits,
       "GLOBAL_MEMORY_BUS_WIDTH"},
      {CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, &info.pciDomain, "PCI_DOMAIN_ID"},
      {CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, &info.pciBus, "PCI_BUS_ID"},
      {CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, &info.pciDevice, "PCI_DEVICE_ID"},
      {CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, &clusterLaunch, "CLUSTER_LAUNCH"},
      {CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, &memoryPools,
       "MEMORY_POOLS_SUPPORTED"},
  };
  for (const auto &a : attributes) {
    if (!(status = checkResult(
              *api, api->cuDeviceGetAttribute(a.value, a.attribute, dev),
              "cuDeviceGetAttribute",
              "querying CU_DEVICE_ATTRIBUTE_" + std::string(a.what) + " of " +
                  device + " (" + info.name + ")"))
             .ok())
      return status;
  }
  info.clusterLaunch = clusterLaunch != 0;
  info.memoryPools = memoryPools != 0;

  if (!(status = checkResult(*api,
                             api->cuDeviceTotalMem(&info.totalMemoryBytes, dev),
                             "cuDeviceTotalMem_v2",
                             "querying the memory of " + device))
           .ok())
    return status;
  if (!(status = checkResult(*api, api->cuDriverGetVersion(&info.driverVersion),
                             "cuDriverGetVersion",
                             "querying the CUDA driver version"))
           .ok())
    return status;
  if (!(status = checkResult(
            *api, api->cuDevicePrimaryCtxRetain(&runtime->context_, dev),
            "cuDevicePrimaryCtxRetain",
            "retaining the primary context of " + device + " (" + info.name +
                ")"))
           .ok())
    return status;

  runtime->id_ = nextRuntimeId++;
  out = std::move(runtime);
  return CudaStatus::success();
}

CudaStatus CudaRuntime::getShared(int ordinal, CudaRuntime *&out) {
  // Never destroyed, like the runtimes: compiled code calls mgpu functions
  // from global destructors.
  static std::mutex &mutex = *new std::mutex;
  static auto &runtimes = *new std::unordered_map<int, CudaRuntime *>;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = runtimes.find(ordinal);
  if (it != runtimes.end()) {
    out = it->second;
    return CudaStatus::success();
  }
  out = nullptr;
  std::unique_ptr<CudaRuntime> runtime;
  CudaStatus status = create(ordinal, runtime);
  if (!status.ok())
    return status;
  // Deliberately leaked: modules, streams and memory the compiled code still
  // holds at exit belong to this context.
  out = runtimes[ordinal] = runtime.release();
  return CudaStatus::success();
}

CudaRuntime::~CudaRuntime() {
  if (!context_)
    return;
  if (currentRuntimeId == id_)
    currentRuntimeId = 0;
  (void)api_->cuDevicePrimaryCtxRelease(device_);
}

CudaStatus CudaRuntime::makeCurrent() const {
  CudaStatus status = checkResult(
      *api_, api_->cuCtxSetCurrent(context_), "cuCtxSetCurrent",
      "making the primary context of CUDA device " +
          std::to_string(info_.ordinal) + " current");
  if (status.ok())
    currentRuntimeId = id_;
  return status;
}

CudaStatus CudaRuntime::ensureCurrent() const {
  if (currentRuntimeId == id_)
    return CudaStatus::success();
  return makeCurrent();
}

std::string CudaRuntime::lastLaunchNote() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!lastFunction_)
    return "; no kernel was launched through this runtime";
  auto it = functions_.find(lastFunction_);
  std::string name = it == functions_.end() || it->second.name.empty()
                         ? "<unknown kernel>"
                         : it->second.name;
  return "; the last kernel launched was '" + name + "' (" +
         describeLaunch(lastConfig_) + ")";
}

/// The status of a failed call made by a method: kernel faults, which the
/// driver reports at a later call, also name the last kernel launched.
#define LINATTN_CHECK(call, expr, context)                                     \
  do {                                                                         \
    CUresult result_ = (expr);                                                 \
    if (result_ != CUDA_SUCCESS) {                                             \
      CudaStatus status_ = checkResult(*api_, result_, call, context);         \
      if (isKernelFault(result_))                                              \
        status_ = CudaStatus::error(status_.kind(),                            \
                                    status_.message() + lastLaunchNote(),      \
                                    result_);                                  \
      return status_;                                                          \
    }                                                                          \
  } while (false)

#define LINATTN_ENSURE_CURRENT()                                               \
  do {                                                                         \
    CudaStatus current_ = ensureCurrent();                                     \
    if (!current_.ok())                                                        \
      return current_;                                                         \
  } while (false)

CudaStatus CudaRuntime::synchronize() const {
  LINATTN_ENSURE_CURRENT();
  LINATTN_CHECK("cuCtxSynchronize", api_->cuCtxSynchronize(),
                "synchronizing CUDA device " + std::to_string(info_.ordinal));
  return CudaStatus::success();
}

//===----------------------------------------------------------------------===//
// Modules and kernels
//===----------------------------------------------------------------------===//

CudaStatus CudaRuntime::loadModule(const void *image, size_t size,
                                   CudaModule &out) {
  out = nullptr;
  if (!image)
    return CudaStatus::error(CudaErrorKind::InvalidArgument,
                             "loading a GPU module: the image is null");
  LINATTN_ENSURE_CURRENT();
  CUresult result = api_->cuModuleLoadData(&out, image);
  if (result == CUDA_SUCCESS)
    return CudaStatus::success();
  out = nullptr;
  std::string context = "loading a " + std::to_string(size) + "-byte " +
                        imageKind(image, size) + " on CUDA device " +
                        std::to_string(info_.ordinal) + " (" + info_.name +
                        ")";
  CudaStatus status = checkResult(*api_, result, "cuModuleLoadData", context);
  if (result == CUDA_ERROR_NO_BINARY_FOR_GPU ||
      result == CUDA_ERROR_INVALID_IMAGE || result == CUDA_ERROR_INVALID_PTX ||
      result == CUDA_ERROR_UNSUPPORTED_PTX_VERSION)
    return CudaStatus::error(status.kind(),
                             status.message() + "; the device is " +
                                 info_.smArch() +
                                 ": was the module compiled for it?",
                             result);
  return status;
}

CudaStatus CudaRuntime::loadModuleJIT(const void *image, int optLevel,
                                      CudaModule &out) {
  out = nullptr;
  if (!image)
    return CudaStatus::error(CudaErrorKind::InvalidArgument,
                             "JIT-compiling a PTX module: the image is null");
  LINATTN_ENSURE_CURRENT();
  char errorLog[8192] = {0};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_OPTIMIZATION_LEVEL};
  // Option values are passed in pointer-sized slots, integers by value.
  void *values[] = {errorLog, reinterpret_cast<void *>(sizeof(errorLog) - 1),
                    reinterpret_cast<void *>(static_cast<intptr_t>(optLevel))};
  CUresult result =
      api_->cuModuleLoadDataEx(&out, image, 3, options, values);
  if (result == CUDA_SUCCESS)
    return CudaStatus::success();
  out = nullptr;
  CudaStatus status = checkResult(
      *api_, result, "cuModuleLoadDataEx",
      "JIT-compiling a PTX module at -O" + std::to_string(optLevel) +
          " for CUDA device " + std::to_string(info_.ordinal) + " (" +
          info_.name + ", " + info_.smArch() + ")");
  std::string log = errorLog;
  while (!log.empty() && (log.back() == '\n' || log.back() == ' '))
    log.pop_back();
  if (log.empty())
    return status;
  return CudaStatus::error(status.kind(),
                           status.message() + "; JIT log:\n" + log, result);
}

CudaStatus CudaRuntime::unloadModule(CudaModule module) {
  if (!module)
    return CudaStatus::error(CudaErrorKind::InvalidArgument,
                             "unloading a GPU module: the module is null");
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = functions_.begin(); it != functions_.end();)
      it = it->second.module == module ? functions_.erase(it) : std::next(it);
  }
  LINATTN_ENSURE_CURRENT();
  LINATTN_CHECK("cuModuleUnload", api_->cuModuleUnload(module),
                "unloading GPU module " + formatPointer(module));
  return CudaStatus::success();
}

CudaStatus CudaRuntime::getFunction(CudaModule module, const char *name,
                                    CudaFunction &out) {
  out = nullptr;
  std::string context = "looking up kernel '" +
                        std::string(name ? name : "<null>") +
                        "' in GPU module " + formatPointer(module);
  if (!module || !name)
    return CudaStatus::error(CudaErrorKind::InvalidArgument,
                             context + ": the " +
                                 (module ? "name" : "module") + " is null");
  LINATTN_ENSURE_CURRENT();
  LINATTN_CHECK("cuModuleGetFunction",
                api_->cuModuleGetFunction(&out, module, name), context);
  std::lock_guard<std::mutex> lock(mutex_);
  FunctionRecord &record = functions_[out];
  record.name = name;
  record.module = module;
  return CudaStatus::success();
}

std::string CudaRuntime::functionName(CudaFunction function) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = functions_.find(function);
  if (it == functions_.end() || it->second.name.empty())
    return "<unknown kernel>";
  return it->second.name;
}

CudaStatus CudaRuntime::launch(CudaFunction function,
                               const CudaLaunchConfig &config, void **args,
                               void **extra) {
  auto where = [&] {
    return "launching kernel '" + functionName(function) + "' (" +
           describeLaunch(config) + ")";
  };
  if (!function)
    return CudaStatus::error(CudaErrorKind::InvalidArgument,
                             where() + ": the kernel handle is null");
  if (!fitsDriver(config.grid) || !fitsDriver(config.block) ||
      !fitsDriver(config.cluster))
    return CudaStatus::error(CudaErrorKind::InvalidArgument,
                             where() + ": every grid, block and cluster "
                                       "dimension must be between 1 and " +
                                 std::to_string(UINT32_MAX));
  bool clustered = !isOne(config.cluster);

  uint32_t dynamicSharedLimit;
  bool nonPortableClusters;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const FunctionRecord &record = functions_[function];
    dynamicSharedLimit = record.dynamicSharedLimit;
    nonPortableClusters = record.nonPortableClusters;
  }

  LINATTN_ENSURE_CURRENT();
  if (config.sharedMemBytes > dynamicSharedLimit) {
    CUresult result = api_->cuFuncSetAttribute(
        function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
        static_cast<int>(config.sharedMemBytes));
    if (result != CUDA_SUCCESS) {
      CudaStatus status = checkResult(
          *api_, result,
          "cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)",
          where());
      return CudaStatus::error(
          status.kind(),
          status.message() + "; " + info_.name + " allows at most " +
              std::to_string(info_.maxSharedMemoryPerBlockOptin) +
              " bytes of shared memory per block, static included",
          result);
    }
    std::lock_guard<std::mutex> lock(mutex_);
    functions_[function].dynamicSharedLimit = config.sharedMemBytes;
  }

  CUresult result;
  const char *call;
  if (clustered) {
    call = "cuLaunchKernelEx";
    if (!api_->cuLaunchKernelEx)
      return CudaStatus::error(CudaErrorKind::Driver,
                               where() + ": this CUDA driver has no "
                                         "cuLaunchKernelEx (thread block "
                                         "clusters need CUDA 12.0+)");
    // More than 8 blocks per cluster is "non-portable" and must be allowed
    // per kernel first (sm_90 supports 16).
    if (config.cluster.x * config.cluster.y * config.cluster.z > 8 &&
        !nonPortableClusters) {
      LINATTN_CHECK(
          "cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_"
          "ALLOWED)",
          api_->cuFuncSetAttribute(
              function, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
          where());
      std::lock_guard<std::mutex> lock(mutex_);
      functions_[function].nonPortableClusters = true;
    }
    CUlaunchAttribute attribute;
    std::memset(&attribute, 0, sizeof(attribute));
    attribute.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attribute.value.clusterDim.x = static_cast<unsigned>(config.cluster.x);
    attribute.value.clusterDim.y = static_cast<unsigned>(config.cluster.y);
    attribute.value.clusterDim.z = static_cast<unsigned>(config.cluster.z);
    CUlaunchConfig launchConfig;
    std::memset(&launchConfig, 0, sizeof(launchConfig));
    launchConfig.gridDimX = static_cast<unsigned>(config.grid.x);
    launchConfig.gridDimY = static_cast<unsigned>(config.grid.y);
    launchConfig.gridDimZ = static_cast<unsigned>(config.grid.z);
    launchConfig.blockDimX = static_cast<unsigned>(config.block.x);
    launchConfig.blockDimY = static_cast<unsigned>(config.block.y);
    launchConfig.blockDimZ = static_cast<unsigned>(config.block.z);
    launchConfig.sharedMemBytes = config.sharedMemBytes;
    launchConfig.hStream = config.stream;
    launchConfig.attrs = &attribute;
    launchConfig.numAttrs = 1;
    result = api_->cuLaunchKernelEx(&launchConfig, function, args, extra);
  } else {
    call = "cuLaunchKernel";
    result = api_->cuLaunchKernel(
        function, static_cast<unsigned>(config.grid.x),
        static_cast<unsigned>(config.grid.y),
        static_cast<unsigned>(config.grid.z),
        static_cast<unsigned>(config.block.x),
        static_cast<unsigned>(config.block.y),
        static_cast<unsigned>(config.block.z), config.sharedMemBytes,
        config.stream, args, extra);
  }
  if (result != CUDA_SUCCESS) {
    // A fault of an earlier kernel can surface here too.
    CudaStatus status = checkResult(*api_, result, call, where());
    if (isKernelFault(result))
      return CudaStatus::error(status.kind(),
                               status.message() + lastLaunchNote(), result);
    return status;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  lastFunction_ = function;
  lastConfig_ = config;
  return CudaStatus::success();
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

CudaStatus CudaRuntime::alloc(size_t bytes, CudaDevicePtr &out) {
  out = 0;
  if (bytes == 0)
    return CudaStatus::success();
  LINATTN_ENSURE_CURRENT();
  LINATTN_CHECK("cuMemAlloc_v2", api_->cuMemAlloc(&out, bytes),
                "allocating " + std::to_string(bytes) +
                    " bytes on CUDA device " + std::to_string(info_.ordinal) +
                    " (" + info_.name + ")");
  return CudaStatus::success();
}

CudaStatus CudaRuntime::allocManaged(size_t bytes, CudaDevicePtr &out) {
  out = 0;
  if (bytes == 0)
    return CudaStatus::success();
  LINATTN_ENSURE_CURRENT();
  LINATTN_CHECK("cuMemAllocManaged",
                api_->cuMemAllocManaged(&out, bytes, CU_MEM_ATTACH_GLOBAL),
                "allocating " + std::to_string(bytes) +
                    " bytes of managed memory on CUDA device " +
                    std::to_string(info_.ordinal));
  return CudaStatus::success();
}

CudaStatus CudaRuntime::allocAsync(size_t bytes, CudaStream stream,
                                   CudaDevicePtr &out) {
  out = 0;
  if (bytes == 0)
    return CudaStatus::success();
  std::string context = "allocating " + std::to_string(bytes) +
                        " bytes on " + formatStream(stream);
  if (!api_->cuMemAllocAsync)
    return CudaStatus::error(CudaErrorKind::Driver,
                             context + ": this CUDA driver has no "
                                       "cuMemAllocAsync (CUDA 11.2+)");
  LINATTN_ENSURE_CURRENT();
  // Without a threshold the pool hands its free memory back to the driver
  // at every synchronisation, and each call pays for fresh allocations
  // again (the chunk states are hundreds of MB). A driver without the pool
  // entry points still allocates; it only keeps less in reserve, so a
  // failure here is not an error.
  std::call_once(poolConfigured_, [&] {
    cuda::CUmemoryPool pool = nullptr;
    if (api_->cuDeviceGetDefaultMemPool && api_->cuMemPoolSetAttribute &&
        api_->cuDeviceGetDefaultMemPool(&pool, device_) == CUDA_SUCCESS) {
      unsigned long long keepAll = ~0ull;
      (void)api_->cuMemPoolSetAttribute(
          pool, cuda::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keepAll);
    }
  });
  LINATTN_CHECK("cuMemAllocAsync", api_->cuMemAllocAsync(&out, bytes, stream),
                context);
  return CudaStatus::success();
}

CudaStatus CudaRuntime::free(CudaDevicePtr ptr) {
  if (!ptr)
    return CudaStatus::success();
  LINATTN_ENSURE_CURRENT();
  LINATTN_CHECK("cuMemFree_v2", api_->cuMemFree(ptr),
                "freeing device memory at " + formatDevicePointer(ptr));
  return CudaStatus::success();
}

CudaStatus CudaRuntime::freeAsync(CudaDevicePtr ptr, CudaStream stream) {
  if (!ptr)
    return CudaStatus::success();
  std::string context = "freeing device memory at " + formatDevicePointer(ptr) +
                        " on " + formatStream(stream);
  if (!api_->cuMemFreeAsync)
    return CudaStatus::error(CudaErrorKind::Driver,
                             context + ": this CUDA driver has no "
                                       "cuMemFreeAsync (CUDA 11.2+)");
  LINATTN_ENSURE_CURRENT();
  LINATTN_CHECK("cuMemFreeAsync", api_->cuMemFreeAsync(ptr, stream), context);
  return CudaStatus::success();
}

CudaStatus CudaRuntime::memoryInfo(size_t &freeBytes,
                                   size_t &totalBytes) const {
  freeBytes = totalBytes = 0;
  LINATTN_ENSURE_CURRENT();
  LINATTN_CHECK("cuMemGetInfo_v2", api_->cuMemGetInfo(&freeBytes, &totalBytes),
                "querying free memory of CUDA device " +
                    std::to_string(info_.ordinal));
  return CudaStatus::success();
}

CudaStatus CudaRuntime::copyToDevice(CudaDevicePtr dst, const void *src,
                                     size_t bytes) {
  if (bytes == 0)
    return CudaStatus::success();
  LINATTN_ENSURE_CURRENT();
  LINATTN_CHECK("cuMemcpyHtoD_v2", api_->cuMemcpyHtoD(dst, src, bytes),
                "copying " + std::to_string(bytes) + " bytes from host " +
                    formatPointer(src) + " to device " +
                    formatDevicePointer(dst));
  return CudaStatus::success();
}

CudaStatus CudaRuntime::copyToHost(void *dst, CudaDevicePtr src,
                                   size_t bytes) {
  if (bytes == 0)
    return CudaStatus::success();
  LINATTN_ENSURE_CURRENT();
  LINATTN_CHECK("cuMemcpyDtoH_v2", api_->cuMemcpyDtoH(dst, src, bytes),
                "copying " + std::to_string(bytes) + " bytes from device " +
                    formatDevicePointer(src) + " to host " +
                    formatPointer(dst));
  return CudaStatus::success();
}

CudaStatus CudaRuntime::copyAsync(void *dst, const void *src, size_t bytes,
                                  CudaStream stream) {
  if (bytes == 0)
    return CudaStatus::success();
  LINATTN_ENSURE_CURRENT();
  LINATTN_CHECK("cuMemcpyAsync",
                api_->cuMemcpyAsync(reinterpret_cast<CudaDevicePtr>(dst),
                                    reinterpret_cast<CudaDevicePtr>(src),
                                    bytes, stream),
                "copying " + std::to_string(bytes) + " bytes from " +
                    formatPointer(src) + " to " + formatPointer(dst) + " on " +
                    formatStream(stream));
  return CudaStatus::success();
}

CudaStatus CudaRuntime::memset8(CudaDevicePtr dst, uint8_t value,
                                size_t bytes) {
  if (bytes == 0)
    return CudaStatus::success();
  LINATTN_ENSURE_CURRENT();
  LINATTN_CHECK("cuMemsetD8_v2", api_->cuMemsetD8(dst, value, bytes),
                "setting " + std::to_string(bytes) + " bytes at " +
                    formatDevicePointer(dst));
  return CudaStatus::success();
}

CudaStatus CudaRuntime::memset8Async(CudaDevicePtr dst, uint8_t value,
                                     size_t bytes, CudaStream stream) {
  if (bytes == 0)
    return CudaStatus::success();
  LINATTN_ENSURE_CURRENT();
  LINATTN_CHECK("cuMemsetD8Async",
                api_->cuMemsetD8Async(dst, value, bytes, stream),
                "setting " + std::to_string(bytes) + " bytes at " +
                    formatDevicePointer(dst) + " on " + formatStream(stream));
  return CudaStatus::success();
}

CudaStatus CudaRuntime::memset16Async(CudaDevicePtr dst, uint16_t value,
                                      size_t count, CudaStream stream) {
  if (count == 0)
    return CudaStatus::success();
  LINATTN_ENSURE_CURRENT();
  LINATTN_CHECK("cuMemsetD16Async",
                api_->cuMemsetD16Async(dst, value, count, stream),
                "setting " + std::to_string(count) + " 16-bit values at " +
                    formatDevicePointer(dst) + " on " + formatStream(stream));
  return CudaStatus::success();
}

CudaStatus CudaRuntime::memset32Async(CudaDevicePtr dst, uint32_t value,
                                      size_t count, CudaStream stream) {
  if (count == 0)
    return CudaStatus::success();
  LINATTN_ENSURE_CURRENT();
  LINATTN_CHECK("cuMemsetD32Async",
                api_->cuMemsetD32Async(dst, value, count, stream),
                "setting " + std::to_string(count) + " 32-bit values at " +
                    formatDevicePointer(dst) + " on " + formatStream(stream));
  return CudaStatus::success();
}

CudaStatus CudaRuntime::hostRegister(void *ptr, size_t bytes) {
  if (bytes == 0)
    return CudaStatus::success();
  LINATTN_ENSURE_CURRENT();
  LINATTN_CHECK("cuMemHostRegister_v2", api_->cuMemHostRegister(ptr, bytes, 0),
                "page-locking " + std::to_string(bytes) +
                    " bytes of host memory at " + formatPointer(ptr));
  return CudaStatus::success();
}

CudaStatus CudaRuntime::hostUnregister(void *ptr) {
  LINATTN_ENSURE_CURRENT();
  LINATTN_CHECK("cuMemHostUnregister", api_->cuMemHostUnregister(ptr),
                "unregistering host memory at " + formatPointer(ptr));
  return CudaStatus::success();
}

//===----------------------------------------------------------------------===//
// Streams and events
//===----------------------------------------------------------------------===//

CudaStatus CudaRuntime::createStream(CudaStream &out, bool nonBlocking) {
  out = nullptr;
  LINATTN_ENSURE_CURRENT();
  LINATTN_CHECK("cuStreamCreate",
                api_->cuStreamCreate(&out, nonBlocking ? CU_STREAM_NON_BLOCKING
                                                       : 0u),
                "creating a stream on CUDA device " +
                    std::to_string(info_.ordinal));
  return CudaStatus::success();
}

CudaStatus CudaRuntime::destroyStream(CudaStream stream) {
  if (!stream)
    return CudaStatus::error(CudaErrorKind::InvalidArgument,
                             "destroying a stream: the default stream cannot "
                             "be destroyed");
  LINATTN_ENSURE_CURRENT();
  LINATTN_CHECK("cuStreamDestroy_v2", api_->cuStreamDestroy(stream),
                "destroying " + formatStream(stream));
  return CudaStatus::success();
}

CudaStatus CudaRuntime::synchronizeStream(CudaStream stream) const {
  LINATTN_ENSURE_CURRENT();
  LINATTN_CHECK("cuStreamSynchronize", api_->cuStreamSynchronize(stream),
                "synchronizing " + formatStream(stream));
  return CudaStatus::success();
}

CudaStatus CudaRuntime::streamWaitEvent(CudaStream stream, CudaEvent event) {
  LINATTN_ENSURE_CURRENT();
  LINATTN_CHECK("cuStreamWaitEvent", api_->cuStreamWaitEvent(stream, event, 0),
                "making " + formatStream(stream) + " wait for event " +
                    formatPointer(event));
  return CudaStatus::success();
}

CudaStatus CudaRuntime::createEvent(CudaEvent &out, bool timing) {
  out = nullptr;
  LINATTN_ENSURE_CURRENT();
  LINATTN_CHECK("cuEventCreate",
                api_->cuEventCreate(&out, timing ? CU_EVENT_DEFAULT
                                                 : CU_EVENT_DISABLE_TIMING),
                "creating an event on CUDA device " +
                    std::to_string(info_.ordinal));
  return CudaStatus::success();
}

CudaStatus CudaRuntime::destroyEvent(CudaEvent event) {
  LINATTN_ENSURE_CURRENT();
  LINATTN_CHECK("cuEventDestroy_v2", api_->cuEventDestroy(event),
                "destroying event " + formatPointer(event));
  return CudaStatus::success();
}

CudaStatus CudaRuntime::recordEvent(CudaEvent event, CudaStream stream) {
  LINATTN_ENSURE_CURRENT();
  LINATTN_CHECK("cuEventRecord", api_->cuEventRecord(event, stream),
                "recording event " + formatPointer(event) + " on " +
                    formatStream(stream));
  return CudaStatus::success();
}

CudaStatus CudaRuntime::synchronizeEvent(CudaEvent event) const {
  LINATTN_ENSURE_CURRENT();
  LINATTN_CHECK("cuEventSynchronize", api_->cuEventSynchronize(event),
                "waiting for event " + formatPointer(event));
  return CudaStatus::success();
}

CudaStatus CudaRuntime::elapsedMs(CudaEvent start, CudaEvent end,
                                  float &ms) const {
  ms = 0;
  LINATTN_ENSURE_CURRENT();
  LINATTN_CHECK("cuEventElapsedTime",
                api_->cuEventElapsedTime(&ms, start, end),
                "timing events " + formatPointer(start) + " to " +
                    formatPointer(end));
  return CudaStatus::success();
}

//===----------------------------------------------------------------------===//
// Graphs
//===----------------------------------------------------------------------===//

namespace {
/// Whether the driver has every graph entry point the runtime uses.
bool hasGraphs(const cuda::DriverApi &api) {
  return api.cuStreamBeginCapture && api.cuStreamEndCapture &&
         api.cuGraphInstantiateWithFlags && api.cuGraphLaunch &&
         api.cuGraphExecDestroy && api.cuGraphDestroy;
}

CudaStatus noGraphs(const std::string &what) {
  return CudaStatus::error(CudaErrorKind::Driver,
                           what + ": this CUDA driver has no CUDA graphs "
                                  "(cuStreamBeginCapture_v2 and "
                                  "cuGraphInstantiateWithFlags, CUDA 11.4+)");
}
} // namespace

CudaStatus CudaRuntime::captureGraph(CudaStream stream,
                                     const std::function<void()> &enqueue,
                                     CudaGraphExec &out) {
  out = nullptr;
  LINATTN_ENSURE_CURRENT();
  if (!hasGraphs(*api_))
    return noGraphs("capturing a graph on " + formatStream(stream));
  LINATTN_CHECK("cuStreamBeginCapture",
                api_->cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_RELAXED),
                "capturing a graph on " + formatStream(stream));
  enqueue();
  // Capture ends even when the enqueued work failed to enqueue, so that
  // the stream is usable again; that failure is then what ending reports.
  CUgraph graph = nullptr;
  LINATTN_CHECK("cuStreamEndCapture", api_->cuStreamEndCapture(stream, &graph),
                "ending the capture on " + formatStream(stream));
  CUresult instantiated = api_->cuGraphInstantiateWithFlags(&out, graph, 0);
  api_->cuGraphDestroy(graph);
  LINATTN_CHECK("cuGraphInstantiateWithFlags", instantiated,
                "instantiating the graph captured on " + formatStream(stream));
  return CudaStatus::success();
}

CudaStatus CudaRuntime::launchGraph(CudaGraphExec graph, CudaStream stream) {
  LINATTN_ENSURE_CURRENT();
  if (!hasGraphs(*api_))
    return noGraphs("launching graph " + formatPointer(graph));
  LINATTN_CHECK("cuGraphLaunch", api_->cuGraphLaunch(graph, stream),
                "launching graph " + formatPointer(graph) + " on " +
                    formatStream(stream));
  return CudaStatus::success();
}

CudaStatus CudaRuntime::destroyGraph(CudaGraphExec graph) {
  LINATTN_ENSURE_CURRENT();
  if (!hasGraphs(*api_))
    return noGraphs("destroying graph " + formatPointer(graph));
  LINATTN_CHECK("cuGraphExecDestroy", api_->cuGraphExecDestroy(graph),
                "destroying graph " + formatPointer(graph));
  return CudaStatus::success();
}

//===----------------------------------------------------------------------===//
// Tensor maps
//===----------------------------------------------------------------------===//

CudaStatus CudaRuntime::encodeTensorMapTiled(
    void *tensorMap, int dataType, unsigned rank, void *globalAddress,
    const uint64_t *globalDims, const uint64_t *globalStridesBytes,
    const uint32_t *boxDims, const uint32_t *elementStrides, int interleave,
    int swizzle, int l2Promotion, int oobFill) {
  auto list = [&](auto *values, unsigned n) {
    std::string s = "[";
    for (unsigned i = 0; i < n; ++i)
      s += (i ? ", " : "") + std::to_string(values[i]);
    return s + "]";
  };
  auto where = [&] {
    return "encoding a rank-" + std::to_string(rank) +
           " tiled tensor map of " + formatPointer(globalAddress) +
           " (data type " + std::to_string(dataType) + ", dims " +
           list(globalDims, rank) + ", byte strides " +
           list(globalStridesBytes, rank ? rank - 1 : 0) + ", box " +
           list(boxDims, rank) + ", swizzle " + std::to_string(swizzle) + ")";
  };
  if (rank < 1 || rank > 5)
    return CudaStatus::error(CudaErrorKind::InvalidArgument,
                             "encoding a tiled tensor map: rank " +
                                 std::to_string(rank) +
                                 " is not between 1 and 5");
  if (reinterpret_cast<uintptr_t>(tensorMap) % 64 != 0)
    return CudaStatus::error(CudaErrorKind::InvalidArgument,
                             where() + ": the tensor map " +
                                 formatPointer(tensorMap) +
                                 " is not 64-byte aligned");
  if (!api_->cuTensorMapEncodeTiled)
    return CudaStatus::error(CudaErrorKind::Driver,
                             where() + ": this CUDA driver has no "
                                       "cuTensorMapEncodeTiled (CUDA 12.0+)");
  static_assert(sizeof(unsigned long long) == sizeof(uint64_t), "cuuint64_t");
  LINATTN_CHECK(
      "cuTensorMapEncodeTiled",
      api_->cuTensorMapEncodeTiled(
          static_cast<CUtensorMap *>(tensorMap), dataType, rank, globalAddress,
          reinterpret_cast<const unsigned long long *>(globalDims),
          reinterpret_cast<const unsigned long long *>(globalStridesBytes),
          boxDims, elementStrides, interleave, swizzle, l2Promotion, oobFill),
      where());
  return CudaStatus::success();
}

} // namespace linattn
