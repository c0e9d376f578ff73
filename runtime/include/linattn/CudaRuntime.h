//===- CudaRuntime.h - Load and launch CUDA kernels -------------*- C++ -*-===//
//
// A small C++ layer over the CUDA driver API: pick a device, load a cubin
// (or PTX) module, launch its kernels, move memory, order and time work with
// streams and events. No MLIR dependency, and no CUDA dependency at build
// time either: the driver is opened with dlopen on first use, so the library
// builds and links on machines without CUDA, and on a machine without a
// driver or a GPU it reports that instead of failing to load or crashing.
//
// Errors. Nothing throws or aborts; every call returns a CudaStatus. A
// failure carries one message naming what was being done, the driver call
// and the CUresult's name and description, e.g.
//
//   launching kernel 'chunk_fwd' (grid [4, 8, 1], block [128, 1, 1], 65536
//   bytes of dynamic shared memory): cuLaunchKernel returned
//   CUDA_ERROR_INVALID_VALUE (invalid argument)
//
// and a kind, so that callers can tell "this machine has no driver / no GPU"
// (tests skip, tools exit 2) from a real error. Kernel faults surface at the
// next synchronisation; those messages name the last kernel launched.
//
// Driver lookup: "libcuda.so.1" through the dynamic loader, or the file named
// by the environment variable LINATTN_CUDA_DRIVER. Tests point that at a fake
// driver (runtime/test/FakeCudaDriver.cpp) to exercise every error path on
// machines without a GPU.
//
// Contexts: a CudaRuntime works in its device's primary context, the one the
// CUDA runtime API (and so PyTorch, Triton, ...) uses too, which it makes
// current on the calling thread as needed. Handles (modules, functions,
// streams, events, device pointers) are the driver's own and interoperate
// with code that uses cuda.h: the opaque types share cuda.h's struct tags.
//
// The mgpu* C ABI that MLIR's gpu-to-llvm host code calls is built on this
// class: see linattn/MgpuRuntime.h.
//
//===----------------------------------------------------------------------===//

#ifndef LINATTN_CUDARUNTIME_H
#define LINATTN_CUDARUNTIME_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

// The driver's opaque handle types, with cuda.h's tags (CUmodule is
// `struct CUmod_st *` there too).
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
struct CUevent_st;
struct CUgraphExec_st;

namespace linattn {

namespace cuda {
struct DriverApi;
} // namespace cuda

using CudaModule = CUmod_st *;
using CudaFunction = CUfunc_st *;
/// Null is the legacy default stream.
using CudaStream = CUstream_st *;
using CudaEvent = CUevent_st *;
/// An instantiated CUDA graph (CUgraphExec).
using CudaGraphExec = CUgraphExec_st *;
/// A device address (CUdeviceptr).
using CudaDevicePtr = unsigned long long;

/// What kind of failure a CudaStatus reports.
enum class CudaErrorKind {
  None,
  /// libcuda.so.1 (or $LINATTN_CUDA_DRIVER) could not be loaded or is not a
  /// usable CUDA driver.
  NoDriver,
  /// The driver is there but sees no device (cuInit returned
  /// CUDA_ERROR_NO_DEVICE, or cuDeviceGetCount returned 0).
  NoDevice,
  /// A driver call failed; cudaResult() is its CUresult.
  Driver,
  /// The request itself is wrong (null handle, a grid dimension that does
  /// not fit, a device ordinal out of range); no driver call was made.
  InvalidArgument,
};

/// The outcome of a runtime call: success, or a kind and a message.
class [[nodiscard]] CudaStatus {
public:
  CudaStatus() = default;
  static CudaStatus success() { return CudaStatus(); }
  static CudaStatus error(CudaErrorKind kind, std::string message,
                          int cudaResult = 0);

  bool ok() const { return kind_ == CudaErrorKind::None; }
  CudaErrorKind kind() const { return kind_; }
  /// True for NoDriver and NoDevice: this machine cannot run CUDA at all.
  bool isUnavailable() const {
    return kind_ == CudaErrorKind::NoDriver ||
           kind_ == CudaErrorKind::NoDevice;
  }
  /// The CUresult of the failed driver call (0 when not a driver error).
  int cudaResult() const { return cudaResult_; }
  /// Empty on success. One line, except that JIT compilation failures
  /// append the JIT's log on the following lines.
  const std::string &message() const { return message_; }

private:
  CudaErrorKind kind_ = CudaErrorKind::None;
  int cudaResult_ = 0;
  std::string message_;
};

/// "no-driver", "no-device", "driver", "invalid-argument" ("ok" for None).
const char *toString(CudaErrorKind kind);

/// What create() learns about the device, once.
struct CudaDeviceInfo {
  int ordinal = 0;
  std::string name;
  int computeCapabilityMajor = 0;
  int computeCapabilityMinor = 0;
  int multiprocessorCount = 0;
  size_t totalMemoryBytes = 0;
  int maxThreadsPerBlock = 0;
  /// The most shared memory one block may use after opting in (the limit for
  /// static + dynamic shared memory of a kernel).
  int maxSharedMemoryPerBlockOptin = 0;
  int maxSharedMemoryPerMultiprocessor = 0;
  int l2CacheBytes = 0;
  int clockRateKHz = 0;
  int memoryClockRateKHz = 0;
  int memoryBusWidthBits = 0;
  int pciDomain = 0, pciBus = 0, pciDevice = 0;
  bool clusterLaunch = false;
  bool memoryPools = false;
  /// cuDriverGetVersion: 1000 * major + 10 * minor (12080 is 12.8).
  int driverVersion = 0;

  /// "sm_90" for compute capability 9.0.
  std::string smArch() const;
};

/// Grid, block or cluster dimensions. 64-bit so that a value that does not
/// fit the driver's unsigned int is reported rather than truncated (MLIR's
/// index is 64-bit).
struct CudaDim3 {
  int64_t x = 1, y = 1, z = 1;
};

/// How to launch a kernel.
struct CudaLaunchConfig {
  CudaDim3 grid;
  CudaDim3 block;
  /// Dynamic shared memory per block, in bytes. The runtime sets the
  /// kernel's CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES first (needed
  /// above 48 KiB minus its static shared memory), once per kernel and size.
  uint32_t sharedMemBytes = 0;
  CudaStream stream = nullptr;
  /// Thread block cluster dimensions (sm_90+, cuLaunchKernelEx); all 1 for
  /// an ordinary launch.
  CudaDim3 cluster;
};

/// "grid [4, 8, 1], block [128, 1, 1], 65536 bytes of dynamic shared
/// memory" (and ", cluster [2, 1, 1]" when clustered): how launch messages
/// describe a launch.
std::string describeLaunch(const CudaLaunchConfig &config);

/// One device's primary context and what runs in it. Not copyable; obtain
/// one with create() (owned) or getShared() (process-wide, what the mgpu C
/// ABI uses). Safe to use from several threads.
class CudaRuntime {
public:
  /// Opens the driver (once per process), initialises it and retains the
  /// primary context of device `ordinal`.
  static CudaStatus create(int ordinal, std::unique_ptr<CudaRuntime> &out);
  /// The process-wide runtime of device `ordinal`, created on first use and
  /// never destroyed (handles may outlive any owner). The mgpu* functions
  /// use these, so a runner that calls getShared() shares their kernel names
  /// and context.
  static CudaStatus getShared(int ordinal, CudaRuntime *&out);

  /// The number of devices the driver sees (opens and initialises it).
  static CudaStatus getDeviceCount(int &count);
  /// cuDriverGetVersion (opens and initialises the driver).
  static CudaStatus getDriverVersion(int &version);
  /// The library the driver was loaded from ("libcuda.so.1" unless
  /// LINATTN_CUDA_DRIVER says otherwise); empty before it was loaded.
  static std::string driverPath();

  ~CudaRuntime();
  CudaRuntime(const CudaRuntime &) = delete;
  CudaRuntime &operator=(const CudaRuntime &) = delete;

  const CudaDeviceInfo &info() const { return info_; }
  const std::string &deviceName() const { return info_.name; }
  int smCount() const { return info_.multiprocessorCount; }
  int ordinal() const { return info_.ordinal; }

  /// Makes the primary context current on the calling thread. Every method
  /// does this when needed, tracking per thread what it set; call it after
  /// code outside this runtime switched the thread to another context.
  CudaStatus makeCurrent() const;
  /// cuCtxSynchronize: waits for all work on the device.
  CudaStatus synchronize() const;

  //===--- Modules and kernels -------------------------------------------===//

  /// Loads a cubin, fatbinary or NUL-terminated PTX image (cuModuleLoadData).
  /// `size` is only used in messages (the image formats carry their size).
  CudaStatus loadModule(const void *image, size_t size, CudaModule &out);
  /// Loads a NUL-terminated PTX image, JIT-compiled at `optLevel` (0-4);
  /// a failure's message carries the JIT error log.
  CudaStatus loadModuleJIT(const void *image, int optLevel, CudaModule &out);
  CudaStatus unloadModule(CudaModule module);
  /// Looks up a kernel; the runtime remembers its name for launch messages.
  CudaStatus getFunction(CudaModule module, const char *name,
                         CudaFunction &out);
  /// The name getFunction() found `function` under, or "<unknown kernel>".
  std::string functionName(CudaFunction function) const;

  /// Launches `function` (cuLaunchKernel, or cuLaunchKernelEx for a
  /// cluster). `args` holds one pointer per kernel parameter, to its value.
  CudaStatus launch(CudaFunction function, const CudaLaunchConfig &config,
                    void **args, void **extra = nullptr);

  //===--- Memory --------------------------------------------------------===//

  /// cuMemAlloc; zero bytes gives a null pointer and no driver call.
  CudaStatus alloc(size_t bytes, CudaDevicePtr &out);
  /// cuMemAllocManaged (memory the host can address too).
  CudaStatus allocManaged(size_t bytes, CudaDevicePtr &out);
  /// Stream-ordered allocation (cuMemAllocAsync, CUDA 11.2+ drivers with
  /// memory pools); reports an error where the driver has none. The first
  /// one raises the device's default pool's release threshold to the
  /// maximum, so that freed memory stays in the pool for the next call
  /// instead of going back to the driver at every synchronisation.
  CudaStatus allocAsync(size_t bytes, CudaStream stream, CudaDevicePtr &out);
  /// cuMemFree; null is a no-op.
  CudaStatus free(CudaDevicePtr ptr);
  CudaStatus freeAsync(CudaDevicePtr ptr, CudaStream stream);
  /// cuMemGetInfo.
  CudaStatus memoryInfo(size_t &freeBytes, size_t &totalBytes) const;

  /// Synchronous copies (cuMemcpyHtoD / cuMemcpyDtoH).
  CudaStatus copyToDevice(CudaDevicePtr dst, const void *src, size_t bytes);
  CudaStatus copyToHost(void *dst, CudaDevicePtr src, size_t bytes);
  /// A copy in any direction, ordered on `stream` (cuMemcpyAsync; unified
  /// addressing tells host from device pointers).
  CudaStatus copyAsync(void *dst, const void *src, size_t bytes,
                       CudaStream stream);
  /// Sets `bytes` bytes (cuMemsetD8, synchronous).
  CudaStatus memset8(CudaDevicePtr dst, uint8_t value, size_t bytes);
  /// Sets `bytes` bytes, ordered on `stream` (cuMemsetD8Async).
  CudaStatus memset8Async(CudaDevicePtr dst, uint8_t value, size_t bytes,
                          CudaStream stream);
  /// Sets `count` 16- or 32-bit elements, ordered on `stream`.
  CudaStatus memset16Async(CudaDevicePtr dst, uint16_t value, size_t count,
                           CudaStream stream);
  CudaStatus memset32Async(CudaDevicePtr dst, uint32_t value, size_t count,
                           CudaStream stream);
  /// Page-locks host memory for the device (cuMemHostRegister).
  CudaStatus hostRegister(void *ptr, size_t bytes);
  CudaStatus hostUnregister(void *ptr);

  //===--- Streams and events --------------------------------------------===//

  /// A stream that does not synchronise with the legacy default stream
  /// (CU_STREAM_NON_BLOCKING) unless `nonBlocking` is false.
  CudaStatus createStream(CudaStream &out, bool nonBlocking = true);
  CudaStatus destroyStream(CudaStream stream);
  /// Waits for `stream`; a kernel fault surfaces here, and the message names
  /// the last kernel launched.
  CudaStatus synchronizeStream(CudaStream stream) const;
  /// Makes later work on `stream` wait for `event`.
  CudaStatus streamWaitEvent(CudaStream stream, CudaEvent event);
  /// An event; `timing` false gives the cheaper CU_EVENT_DISABLE_TIMING.
  CudaStatus createEvent(CudaEvent &out, bool timing = true);
  CudaStatus destroyEvent(CudaEvent event);
  CudaStatus recordEvent(CudaEvent event, CudaStream stream);
  CudaStatus synchronizeEvent(CudaEvent event) const;
  /// Milliseconds between two recorded, completed timing events.
  CudaStatus elapsedMs(CudaEvent start, CudaEvent end, float &ms) const;

  //===--- Graphs --------------------------------------------------------===//

  /// Records what `enqueue` puts on `stream` into a CUDA graph and
  /// instantiates it (cuStreamBeginCapture in relaxed mode,
  /// cuStreamEndCapture, cuGraphInstantiateWithFlags): replayed by
  /// launchGraph, as a model's forward pass is. `enqueue` must only
  /// enqueue (no host synchronisation); an error names the step that
  /// failed, and a driver without graphs is an error saying so.
  CudaStatus captureGraph(CudaStream stream,
                          const std::function<void()> &enqueue,
                          CudaGraphExec &out);
  CudaStatus launchGraph(CudaGraphExec graph, CudaStream stream);
  CudaStatus destroyGraph(CudaGraphExec graph);

  //===--- Hopper tensor memory access -----------------------------------===//

  /// cuTensorMapEncodeTiled into `tensorMap` (128 bytes, 64-byte aligned).
  /// Dimensions innermost first; `globalStridesBytes` has rank - 1 entries
  /// (strides of dimensions 1..rank-1). The enum arguments take their
  /// CUtensorMap* values.
  CudaStatus encodeTensorMapTiled(void *tensorMap, int dataType,
                                  unsigned rank, void *globalAddress,
                                  const uint64_t *globalDims,
                                  const uint64_t *globalStridesBytes,
                                  const uint32_t *boxDims,
                                  const uint32_t *elementStrides,
                                  int interleave, int swizzle,
                                  int l2Promotion, int oobFill);

private:
  CudaRuntime() = default;

  /// makeCurrent() unless this thread already has it current.
  CudaStatus ensureCurrent() const;
  /// The message prefix for synchronisation failures: names the last kernel
  /// launched.
  std::string lastLaunchNote() const;

  struct FunctionRecord {
    std::string name;
    CudaModule module = nullptr;
    /// What CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES was set to; 0
    /// until a launch asks for dynamic shared memory. (The driver's default,
    /// 48 KiB minus the kernel's static shared memory, is not known here.)
    uint32_t dynamicSharedLimit = 0;
    bool nonPortableClusters = false;
  };

  const cuda::DriverApi *api_ = nullptr;
  CUctx_st *context_ = nullptr;
  int device_ = 0;
  /// Distinguishes this runtime from earlier ones whose context handle may
  /// have been reused, in the per-thread "current" cache.
  uint64_t id_ = 0;
  CudaDeviceInfo info_;

  mutable std::mutex mutex_;
  /// Set once the default pool's release threshold was raised (or found
  /// unsupported).
  std::once_flag poolConfigured_;
  std::unordered_map<CudaFunction, FunctionRecord> functions_;
  /// The last successful launch, for messages about later kernel faults.
  CudaFunction lastFunction_ = nullptr;
  CudaLaunchConfig lastConfig_;
};

} // namespace linattn

#endif // LINATTN_CUDARUNTIME_H
