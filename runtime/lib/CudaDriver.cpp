//===- CudaDriver.cpp - Open the CUDA driver at run time ------------------===//
//
// dlopen("libcuda.so.1") (or $LINATTN_CUDA_DRIVER), dlsym every entry point
// the runtime uses, cuInit(0): once per process, outcome cached. The handle
// is never closed: driver threads may outlive static destructors.
//
//===----------------------------------------------------------------------===//

#include "CudaDriver.h"

#include <cstdlib>
#include <dlfcn.h>
#include <mutex>

namespace linattn {

CudaStatus CudaStatus::error(CudaErrorKind kind, std::string message,
                             int cudaResult) {
  CudaStatus status;
  status.kind_ = kind;
  status.cudaResult_ = cudaResult;
  status.message_ = std::move(message);
  return status;
}

const char *toString(CudaErrorKind kind) {
  switch (kind) {
  case CudaErrorKind::None:
    return "ok";
  case CudaErrorKind::NoDriver:
    return "no-driver";
  case CudaErrorKind::NoDevice:
    return "no-device";
  case CudaErrorKind::Driver:
    return "driver";
  case CudaErrorKind::InvalidArgument:
    return "invalid-argument";
  }
  return "unknown";
}

namespace cuda {

namespace {

/// The driver's path and the environment variable it came from, for
/// messages: "libcuda.so.1" or "/x/libcuda.so.1 (LINATTN_CUDA_DRIVER)".
struct DriverLocation {
  std::string path;
  std::string shown;
};

DriverLocation locateDriver() {
  const char *override = std::getenv("LINATTN_CUDA_DRIVER");
  if (override && *override)
    return {override, std::string(override) + " (LINATTN_CUDA_DRIVER)"};
  return {"libcuda.so.1", "libcuda.so.1"};
}

template <typename Fn> bool resolve(void *handle, const char *symbol, Fn *&fn) {
  fn = reinterpret_cast<Fn *>(dlsym(handle, symbol));
  return fn != nullptr;
}

/// Loads and initialises the driver; the outcome is cached by initDriver.
CudaStatus loadAndInit(DriverApi &api) {
  DriverLocation where = locateDriver();
  api.path = where.path;
  // RTLD_LOCAL: the driver's symbols stay out of the global namespace, so a
  // later dlopen of the real libcuda by someone else does not collide.
  void *handle = dlopen(where.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    return CudaStatus::error(CudaErrorKind::NoDriver,
                             "no CUDA driver: " + where.shown +
                                 " could not be loaded (" +
                                 (why ? why : "unknown dlopen error") + ")");
  }

  std::string missing;
#define LINATTN_CUDA_RESOLVE_REQUIRED(member, symbol, signature)               \
  if (!resolve(handle, symbol, api.member) && missing.empty())                 \
    missing = symbol;
  LINATTN_CUDA_REQUIRED_ENTRY_POINTS(LINATTN_CUDA_RESOLVE_REQUIRED)
#undef LINATTN_CUDA_RESOLVE_REQUIRED
#define LINATTN_CUDA_RESOLVE_OPTIONAL(member, symbol, signature)               \
  resolve(handle, symbol, api.member);
  LINATTN_CUDA_OPTIONAL_ENTRY_POINTS(LINATTN_CUDA_RESOLVE_OPTIONAL)
#undef LINATTN_CUDA_RESOLVE_OPTIONAL
  if (!resolve(handle, "cuEventElapsedTime_v2", api.cuEventElapsedTime) &&
      !resolve(handle, "cuEventElapsedTime", api.cuEventElapsedTime) &&
      missing.empty())
    missing = "cuEventElapsedTime";
  if (!missing.empty()) {
    // Not a driver at all (a wrong LINATTN_CUDA_DRIVER), or one older than
    // CUDA 11: both mean there is nothing to run on.
    return CudaStatus::error(CudaErrorKind::NoDriver,
                             "no usable CUDA driver: " + where.shown +
                                 " has no " + missing +
                                 " (not a CUDA driver, or one older than "
                                 "CUDA 11)");
  }

  CUresult result = api.cuInit(0);
  if (result == CUDA_ERROR_NO_DEVICE)
    return CudaStatus::error(CudaErrorKind::NoDevice,
                             "no CUDA device: cuInit returned " +
                                 describeResult(api, result),
                             result);
  // The toolkit's link-time stub (lib64/stubs/libcuda.so) found first, or a
  // user-space driver that does not match the kernel module: either way
  // there is no working driver.
  if (result == CUDA_ERROR_STUB_LIBRARY ||
      result == CUDA_ERROR_SYSTEM_DRIVER_MISMATCH)
    return CudaStatus::error(CudaErrorKind::NoDriver,
                             "no usable CUDA driver: cuInit of " +
                                 where.shown + " returned " +
                                 describeResult(api, result),
                             result);
  return checkResult(api, result, "cuInit",
                     "initialising the CUDA driver " + where.shown);
}

} // namespace

CudaStatus initDriver(const DriverApi *&api) {
  // Never destroyed: MLIR's generated code unloads its modules from global
  // destructors, which may run after function-local statics are gone.
  static DriverApi &driver = *new DriverApi;
  static CudaStatus &status = *new CudaStatus;
  static std::once_flag once;
  std::call_once(once, [] { status = loadAndInit(driver); });
  api = status.ok() ? &driver : nullptr;
  return status;
}

std::string describeResult(const DriverApi &api, CUresult result) {
  const char *name = nullptr;
  const char *text = nullptr;
  if (api.cuGetErrorName(result, &name) != CUDA_SUCCESS || !name)
    return "CUDA error " + std::to_string(result);
  std::string described = name;
  if (api.cuGetErrorString(result, &text) == CUDA_SUCCESS && text)
    described += std::string(" (") + text + ")";
  return described;
}

CudaStatus checkResult(const DriverApi &api, CUresult result,
                       const char *call, const std::string &context) {
  if (result == CUDA_SUCCESS)
    return CudaStatus::success();
  return CudaStatus::error(CudaErrorKind::Driver,
                           context + ": " + call + " returned " +
                               describeResult(api, result),
                           result);
}

} // namespace cuda
} // namespace linattn
