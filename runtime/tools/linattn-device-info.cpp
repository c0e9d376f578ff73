//===- linattn-device-info.cpp - What CUDA device is here? ----------------===//
//
//   linattn-device-info [--device N | --all] [--arch]
//
// Prints the CUDA driver version and, for one device (default 0) or all of
// them, its name, compute capability, SM count, memory and limits, as
// "key: value" lines. --arch prints only the device's "sm_XY" (for scripts
// that pick a compilation target). MLIR-free, like the rest of runtime/.
//
// Exit status: 0; 2 where CUDA is unavailable (no driver, no device), with
// the reason on stderr; 1 for any other error.
//
//===----------------------------------------------------------------------===//

#include "linattn/CudaRuntime.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

using namespace linattn;

namespace {

int fail(const CudaStatus &status) {
  std::fprintf(stderr, "linattn-device-info: error: %s\n",
               status.message().c_str());
  return status.isUnavailable() ? 2 : 1;
}

int usage() {
  std::fprintf(stderr,
               "usage: linattn-device-info [--device N | --all] [--arch]\n");
  return 1;
}

void printDevice(const CudaRuntime &runtime) {
  const CudaDeviceInfo &info = runtime.info();
  std::printf("device %d: %s\n", info.ordinal, info.name.c_str());
  std::printf("  compute capability: %d.%d (%s)\n",
              info.computeCapabilityMajor, info.computeCapabilityMinor,
              info.smArch().c_str());
  std::printf("  multiprocessors: %d\n", info.multiprocessorCount);
  std::printf("  global memory: %zu MiB\n", info.totalMemoryBytes >> 20);
  std::printf("  shared memory per block (opt-in): %d bytes\n",
              info.maxSharedMemoryPerBlockOptin);
  std::printf("  shared memory per multiprocessor: %d bytes\n",
              info.maxSharedMemoryPerMultiprocessor);
  std::printf("  L2 cache: %d KiB\n", info.l2CacheBytes >> 10);
  std::printf("  max threads per block: %d\n", info.maxThreadsPerBlock);
  std::printf("  clocks: SM %d MHz, memory %d MHz, %d-bit bus\n",
              info.clockRateKHz / 1000, info.memoryClockRateKHz / 1000,
              info.memoryBusWidthBits);
  std::printf("  PCI: %04x:%02x:%02x\n", info.pciDomain, info.pciBus,
              info.pciDevice);
  std::printf("  thread block clusters: %s\n",
              info.clusterLaunch ? "yes" : "no");
  std::printf("  memory pools: %s\n", info.memoryPools ? "yes" : "no");
}

} // namespace

int main(int argc, char **argv) {
  int device = 0;
  bool all = false, archOnly = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--all")) {
      all = true;
    } else if (!std::strcmp(argv[i], "--arch")) {
      archOnly = true;
    } else if (!std::strcmp(argv[i], "--device") && i + 1 < argc) {
      char *end = nullptr;
      device = static_cast<int>(std::strtol(argv[++i], &end, 10));
      if (*end)
        return usage();
    } else {
      return usage();
    }
  }
  if (all && archOnly)
    return usage();

  int count = 0;
  if (CudaStatus status = CudaRuntime::getDeviceCount(count); !status.ok())
    return fail(status);
  if (count == 0)
    return fail(CudaStatus::error(
        CudaErrorKind::NoDevice, "no CUDA device: cuDeviceGetCount returned 0"));

  int first = all ? 0 : device, last = all ? count - 1 : device;
  for (int d = first; d <= last; ++d) {
    std::unique_ptr<CudaRuntime> runtime;
    if (CudaStatus status = CudaRuntime::create(d, runtime); !status.ok())
      return fail(status);
    if (archOnly) {
      std::printf("%s\n", runtime->info().smArch().c_str());
      return 0;
    }
    if (d == first) {
      int version = runtime->info().driverVersion;
      std::printf("CUDA driver: %d.%d (%s), %d device%s\n", version / 1000,
                  (version % 1000) / 10, CudaRuntime::driverPath().c_str(),
                  count, count == 1 ? "" : "s");
    }
    printDevice(*runtime);
  }
  return 0;
}
