//===- CudaDriver.h - The CUDA driver API, opened at run time ---*- C++ -*-===//
//
// Private to runtime/lib. The few CUDA driver types, constants and entry
// points the runtime uses, declared here instead of taken from cuda.h: the
// runtime must build where there is no CUDA toolkit, and must not link
// libcuda (a binary that needs libcuda.so.1 at load time cannot even say
// "no driver" on a machine without one). The driver is opened with dlopen
// on first use and each entry point is looked up with dlsym.
//
// Every value below is the one documented in the CUDA driver API reference
// (cuda.h of CUDA 12/13); the types are ABI-compatible with cuda.h's (the
// opaque handles use the same struct tags, so a CUmodule from cuda.h is a
// CudaModule here).
//
// Entry points are looked up by their versioned names (cuMemAlloc_v2, ...):
// cuda.h maps the plain names to those with macros, and the unversioned
// symbols the driver still exports are the legacy 32-bit ABI.
//
//===----------------------------------------------------------------------===//

#ifndef LINATTN_RUNTIME_CUDADRIVER_H
#define LINATTN_RUNTIME_CUDADRIVER_H

#include "linattn/CudaRuntime.h"

#include <cstddef>
#include <string>

namespace linattn::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = CUctx_st *;
using CUmodule = CUmod_st *;
using CUfunction = CUfunc_st *;
using CUstream = CUstream_st *;
using CUevent = CUevent_st *;
/// A stream-ordered memory pool (CUmemoryPool), opaque here.
using CUmemoryPool = struct CUmemPoolHandle_st *;
/// A CUDA graph and its instantiation.
using CUgraph = struct CUgraph_st *;
using CUgraphExec = CUgraphExec_st *;
/// CUstreamCaptureMode: other threads' unsafe calls are not checked.
constexpr int CU_STREAM_CAPTURE_MODE_RELAXED = 2;

// CUresult values the runtime treats specially (the rest are only named,
// through cuGetErrorName).
constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_INVALID_VALUE = 1;
constexpr CUresult CUDA_ERROR_STUB_LIBRARY = 34;
constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
constexpr CUresult CUDA_ERROR_INVALID_IMAGE = 200;
constexpr CUresult CUDA_ERROR_NO_BINARY_FOR_GPU = 209;
constexpr CUresult CUDA_ERROR_INVALID_PTX = 218;
constexpr CUresult CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222;
constexpr CUresult CUDA_ERROR_SYSTEM_DRIVER_MISMATCH = 803;

// CUdevice_attribute.
constexpr int CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1;
constexpr int CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13;
constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
constexpr int CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33;
constexpr int CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID = 34;
constexpr int CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE = 36;
constexpr int CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH = 37;
constexpr int CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38;
constexpr int CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID = 50;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr int CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81;
constexpr int CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97;
constexpr int CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 115;
constexpr int CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH = 120;

// CUfunction_attribute.
constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
constexpr int CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14;

// Flags.
constexpr unsigned CU_STREAM_NON_BLOCKING = 0x1;
constexpr unsigned CU_EVENT_DEFAULT = 0x0;
constexpr unsigned CU_EVENT_DISABLE_TIMING = 0x2;
constexpr unsigned CU_MEM_ATTACH_GLOBAL = 0x1;
/// CUmemPool_attribute: bytes a pool keeps reserved across synchronisations
/// (cuuint64_t).
constexpr int CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = 4;

// CUjit_option.
using CUjit_option = int;
constexpr CUjit_option CU_JIT_INFO_LOG_BUFFER = 3;
constexpr CUjit_option CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4;
constexpr CUjit_option CU_JIT_ERROR_LOG_BUFFER = 5;
constexpr CUjit_option CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;
constexpr CUjit_option CU_JIT_OPTIMIZATION_LEVEL = 7;

// cuLaunchKernelEx (CUDA 12.0+): thread block clusters. The layouts are
// cuda.h's CUlaunchAttribute (an id, padding to 8 bytes, a 64-byte value
// union) and CUlaunchConfig.
constexpr int CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4;
struct CUlaunchAttribute {
  int id;
  char pad[8 - sizeof(int)];
  union {
    char bytes[64];
    struct {
      unsigned x, y, z;
    } clusterDim;
  } value;
};
static_assert(sizeof(CUlaunchAttribute) == 72, "CUlaunchAttribute layout");
struct CUlaunchConfig {
  unsigned gridDimX, gridDimY, gridDimZ;
  unsigned blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute *attrs;
  unsigned numAttrs;
};

// cuTensorMapEncodeTiled (CUDA 12.0+): the 128-byte, 64-byte aligned TMA
// descriptor; the enum arguments are passed as their int values.
struct alignas(128) CUtensorMap {
  unsigned long long opaque[16];
};

/// The entry points, as function pointers. Required ones are non-null once
/// the driver is loaded; optional ones (newer drivers only) may be null.
/// X(member, symbol, signature)
#define LINATTN_CUDA_REQUIRED_ENTRY_POINTS(X)                                 \
  X(cuInit, "cuInit", CUresult(unsigned))                                     \
  X(cuDriverGetVersion, "cuDriverGetVersion", CUresult(int *))                \
  X(cuGetErrorName, "cuGetErrorName", CUresult(CUresult, const char **))      \
  X(cuGetErrorString, "cuGetErrorString", CUresult(CUresult, const char **))  \
  X(cuDeviceGetCount, "cuDeviceGetCount", CUresult(int *))                    \
  X(cuDeviceGet, "cuDeviceGet", CUresult(CUdevice *, int))                    \
  X(cuDeviceGetName, "cuDeviceGetName", CUresult(char *, int, CUdevice))      \
  X(cuDeviceGetAttribute, "cuDeviceGetAttribute",                             \
    CUresult(int *, int, CUdevice))                                           \
  X(cuDeviceTotalMem, "cuDeviceTotalMem_v2", CUresult(size_t *, CUdevice))    \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain",                     \
    CUresult(CUcontext *, CUdevice))                                          \
  X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2",                \
    CUresult(CUdevice))                                                       \
  X(cuCtxSetCurrent, "cuCtxSetCurrent", CUresult(CUcontext))                  \
  X(cuCtxSynchronize, "cuCtxSynchronize", CUresult())                         \
  X(cuModuleLoadData, "cuModuleLoadData", CUresult(CUmodule *, const void *)) \
  X(cuModuleLoadDataEx, "cuModuleLoadDataEx",                                 \
    CUresult(CUmodule *, const void *, unsigned, CUjit_option *, void **))    \
  X(cuModuleUnload, "cuModuleUnload", CUresult(CUmodule))                     \
  X(cuModuleGetFunction, "cuModuleGetFunction",                               \
    CUresult(CUfunction *, CUmodule, const char *))                           \
  X(cuFuncSetAttribute, "cuFuncSetAttribute",                                 \
    CUresult(CUfunction, int, int))                                           \
  X(cuLaunchKernel, "cuLaunchKernel",                                         \
    CUresult(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,    \
             unsigned, unsigned, CUstream, void **, void **))                 \
  X(cuMemAlloc, "cuMemAlloc_v2", CUresult(CUdeviceptr *, size_t))             \
  X(cuMemAllocManaged, "cuMemAllocManaged",                                   \
    CUresult(CUdeviceptr *, size_t, unsigned))                                \
  X(cuMemFree, "cuMemFree_v2", CUresult(CUdeviceptr))                         \
  X(cuMemGetInfo, "cuMemGetInfo_v2", CUresult(size_t *, size_t *))           \
  X(cuMemcpyHtoD, "cuMemcpyHtoD_v2",                                          \
    CUresult(CUdeviceptr, const void *, size_t))                              \
  X(cuMemcpyDtoH, "cuMemcpyDtoH_v2", CUresult(void *, CUdeviceptr, size_t))   \
  X(cuMemcpyAsync, "cuMemcpyAsync",                                           \
    CUresult(CUdeviceptr, CUdeviceptr, size_t, CUstream))                     \
  X(cuMemsetD8, "cuMemsetD8_v2", CUresult(CUdeviceptr, unsigned char, size_t)) \
  X(cuMemsetD8Async, "cuMemsetD8Async",                                       \
    CUresult(CUdeviceptr, unsigned char, size_t, CUstream))                   \
  X(cuMemsetD16Async, "cuMemsetD16Async",                                     \
    CUresult(CUdeviceptr, unsigned short, size_t, CUstream))                  \
  X(cuMemsetD32Async, "cuMemsetD32Async",                                     \
    CUresult(CUdeviceptr, unsigned, size_t, CUstream))                        \
  X(cuMemHostRegister, "cuMemHostRegister_v2",                                \
    CUresult(void *, size_t, unsigned))                                       \
  X(cuMemHostUnregister, "cuMemHostUnregister", CUresult(void *))             \
  X(cuStreamCreate, "cuStreamCreate", CUresult(CUstream *, unsigned))         \
  X(cuStreamDestroy, "cuStreamDestroy_v2", CUresult(CUstream))                \
  X(cuStreamSynchronize, "cuStreamSynchronize", CUresult(CUstream))           \
  X(cuStreamWaitEvent, "cuStreamWaitEvent",                                   \
    CUresult(CUstream, CUevent, unsigned))                                    \
  X(cuEventCreate, "cuEventCreate", CUresult(CUevent *, unsigned))            \
  X(cuEventDestroy, "cuEventDestroy_v2", CUresult(CUevent))                   \
  X(cuEventRecord, "cuEventRecord", CUresult(CUevent, CUstream))              \
  X(cuEventSynchronize, "cuEventSynchronize", CUresult(CUevent))

/// Entry points of newer drivers; null where the driver lacks them.
#define LINATTN_CUDA_OPTIONAL_ENTRY_POINTS(X)                                 \
  X(cuMemAllocAsync, "cuMemAllocAsync",                                       \
    CUresult(CUdeviceptr *, size_t, CUstream))                                \
  X(cuMemFreeAsync, "cuMemFreeAsync", CUresult(CUdeviceptr, CUstream))        \
  X(cuDeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool",                   \
    CUresult(CUmemoryPool *, CUdevice))                                       \
  X(cuMemPoolSetAttribute, "cuMemPoolSetAttribute",                           \
    CUresult(CUmemoryPool, int, void *))                                      \
  X(cuLaunchKernelEx, "cuLaunchKernelEx",                                     \
    CUresult(const CUlaunchConfig *, CUfunction, void **, void **))           \
  X(cuStreamBeginCapture, "cuStreamBeginCapture_v2",                         \
    CUresult(CUstream, int))                                                  \
  X(cuStreamEndCapture, "cuStreamEndCapture", CUresult(CUstream, CUgraph *))  \
  X(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags",               \
    CUresult(CUgraphExec *, CUgraph, unsigned long long))                     \
  X(cuGraphLaunch, "cuGraphLaunch", CUresult(CUgraphExec, CUstream))          \
  X(cuGraphExecDestroy, "cuGraphExecDestroy", CUresult(CUgraphExec))          \
  X(cuGraphDestroy, "cuGraphDestroy", CUresult(CUgraph))                      \
  X(cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled",                         \
    CUresult(CUtensorMap *, int, unsigned, void *, const unsigned long long *, \
             const unsigned long long *, const unsigned *, const unsigned *,  \
             int, int, int, int))

template <typename Signature> using EntryPoint = Signature *;

struct DriverApi {
#define LINATTN_CUDA_MEMBER(member, symbol, signature)                        \
  EntryPoint<signature> member = nullptr;
  LINATTN_CUDA_REQUIRED_ENTRY_POINTS(LINATTN_CUDA_MEMBER)
  LINATTN_CUDA_OPTIONAL_ENTRY_POINTS(LINATTN_CUDA_MEMBER)
#undef LINATTN_CUDA_MEMBER
  /// cuEventElapsedTime_v2 (CUDA 12.8+, what cuda.h 13 calls
  /// cuEventElapsedTime), else the original cuEventElapsedTime.
  CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent) = nullptr;

  /// What was dlopen'ed: "libcuda.so.1" or $LINATTN_CUDA_DRIVER.
  std::string path;
};

/// Opens the driver and calls cuInit(0), once per process; later calls
/// return the same outcome. On failure `api` is null and the status says
/// why: no driver (dlopen failed, or the library lacks an entry point), no
/// device (cuInit returned CUDA_ERROR_NO_DEVICE), or the cuInit error.
CudaStatus initDriver(const DriverApi *&api);

/// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)", or, for a value the driver
/// cannot name, "CUDA error 12345".
std::string describeResult(const DriverApi &api, CUresult result);

/// The status of a failed driver call: "<context>: <call> returned
/// <describeResult>"; success when result is CUDA_SUCCESS.
CudaStatus checkResult(const DriverApi &api, CUresult result,
                       const char *call, const std::string &context);

} // namespace linattn::cuda

#endif // LINATTN_RUNTIME_CUDADRIVER_H
