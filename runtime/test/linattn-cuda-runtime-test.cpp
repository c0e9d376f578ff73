//===- linattn-cuda-runtime-test.cpp - Drive CudaRuntime from lit ---------===//
//
//   linattn-cuda-runtime-test SCENARIO [ARGS]
//
// Runs one scenario of the C++ runtime API (linattn/CudaRuntime.h) and
// prints what happened; test/Runtime/*.test run it against the fake driver
// (runtime/test/FakeCudaDriver.cpp) or no driver at all. A failed step
// prints "error [KIND]: MESSAGE" and exits 1 (2 when CUDA is unavailable),
// like a tool would.
//
//===----------------------------------------------------------------------===//

#include "linattn/CudaRuntime.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace linattn;

namespace {

void check(const CudaStatus &status) {
  if (status.ok())
    return;
  std::printf("error [%s]: %s\n", toString(status.kind()),
              status.message().c_str());
  std::exit(status.isUnavailable() ? 2 : 1);
}

std::unique_ptr<CudaRuntime> createRuntime(int device = 0) {
  std::unique_ptr<CudaRuntime> runtime;
  check(CudaRuntime::create(device, runtime));
  return runtime;
}

const char kImage[] = "FAKE-CUBIN fake_fill_i32 chunk_fwd";

/// Loads kImage and launches `kernel` with `config`, the fake fill kernel's
/// parameters (dst, value, count) for any kernel.
int launchScenario(const char *kernel, const CudaLaunchConfig &config) {
  auto rt = createRuntime();
  CudaModule module;
  check(rt->loadModule(kImage, sizeof(kImage), module));
  CudaFunction function;
  check(rt->getFunction(module, kernel, function));
  CudaDevicePtr dst;
  int value = 100;
  long long count = 8;
  check(rt->alloc(count * sizeof(int), dst));
  void *params[] = {&dst, &value, &count};
  check(rt->launch(function, config, params));
  check(rt->synchronizeStream(config.stream));
  std::vector<int> host(count);
  check(rt->copyToHost(host.data(), dst, count * sizeof(int)));
  std::printf("launched '%s' (%s): %d %d ... %d\n",
              rt->functionName(function).c_str(),
              describeLaunch(config).c_str(), host[0], host[1], host[7]);
  check(rt->free(dst));
  check(rt->unloadModule(module));
  return 0;
}

int64_t arg(char **argv, int i) { return std::strtoll(argv[i], nullptr, 0); }

} // namespace

int main(int argc, char **argv) {
  // Unbuffered: the tests interleave this output with the fake driver's
  // trace on stderr.
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  std::string scenario = argc > 1 ? argv[1] : "";

  // create [DEVICE]: open the driver, pick a device, print what it is.
  if (scenario == "create") {
    auto rt = createRuntime(argc > 2 ? std::atoi(argv[2]) : 0);
    const CudaDeviceInfo &info = rt->info();
    std::printf("device %d: %s, %s, %d SMs, %zu MiB, driver %d, from %s\n",
                info.ordinal, rt->deviceName().c_str(), info.smArch().c_str(),
                rt->smCount(), info.totalMemoryBytes >> 20,
                info.driverVersion, CudaRuntime::driverPath().c_str());
    return 0;
  }

  // memory: every allocation, copy and memset entry point, checked.
  if (scenario == "memory") {
    auto rt = createRuntime();
    const size_t n = 1024;
    std::vector<unsigned> host(n), back(n);
    for (size_t i = 0; i < n; ++i)
      host[i] = static_cast<unsigned>(i * 3);
    CudaDevicePtr a, b, m, zero;
    check(rt->alloc(0, zero));
    check(rt->alloc(n * 4, a));
    check(rt->allocAsync(n * 4, nullptr, b));
    check(rt->allocManaged(64, m));
    check(rt->copyToDevice(a, host.data(), n * 4));
    CudaStream stream;
    check(rt->createStream(stream));
    check(rt->copyAsync(reinterpret_cast<void *>(b),
                        reinterpret_cast<void *>(a), n * 4, stream));
    check(rt->memset32Async(b, 0xdeadbeef, 2, stream));
    check(rt->memset16Async(b + 8, 0x1234, 2, stream));
    check(rt->memset8(b + 12, 0x7f, 4));
    check(rt->synchronizeStream(stream));
    check(rt->copyToHost(back.data(), b, n * 4));
    size_t freeBytes, totalBytes;
    check(rt->memoryInfo(freeBytes, totalBytes));
    bool ok = zero == 0 && back[0] == 0xdeadbeef && back[1] == 0xdeadbeef &&
              back[2] == 0x12341234 && back[3] == 0x7f7f7f7f;
    for (size_t i = 4; i < n; ++i)
      ok = ok && back[i] == host[i];
    std::printf("memory: %s, %zu of %zu bytes in use\n",
                ok ? "ok" : "MISMATCH", totalBytes - freeBytes, totalBytes);
    check(rt->freeAsync(b, stream));
    check(rt->free(a));
    check(rt->free(m));
    check(rt->free(0));
    check(rt->destroyStream(stream));
    return ok ? 0 : 1;
  }

  // launch KERNEL GX GY GZ BX BY BZ SMEM [CX CY CZ]
  if (scenario == "launch" && (argc == 10 || argc == 13)) {
    CudaLaunchConfig config;
    config.grid = {arg(argv, 3), arg(argv, 4), arg(argv, 5)};
    config.block = {arg(argv, 6), arg(argv, 7), arg(argv, 8)};
    config.sharedMemBytes = static_cast<uint32_t>(arg(argv, 9));
    if (argc == 13)
      config.cluster = {arg(argv, 10), arg(argv, 11), arg(argv, 12)};
    return launchScenario(argv[2], config);
  }

  // sync-fault: a launch that succeeds, then a failing synchronisation
  // (LINATTN_FAKE_CUDA_FAIL=cuStreamSynchronize=700): the message names the
  // kernel.
  if (scenario == "sync-fault") {
    auto rt = createRuntime();
    CudaModule module;
    check(rt->loadModule(kImage, sizeof(kImage), module));
    CudaFunction function;
    check(rt->getFunction(module, "chunk_fwd", function));
    CudaLaunchConfig config;
    config.grid = {4, 8, 1};
    config.block = {128, 1, 1};
    config.sharedMemBytes = 1024;
    check(rt->launch(function, config, nullptr));
    check(rt->synchronizeStream(nullptr));
    return 0;
  }

  // load elf|ptx|garbage|jit-error|jit|missing-kernel
  if (scenario == "load" && argc == 3) {
    auto rt = createRuntime();
    std::string kind = argv[2];
    CudaModule module;
    if (kind == "elf") {
      const char elf[] = "\x7f" "ELF\x02\x01\x01";
      check(rt->loadModule(elf, 4096, module));
    } else if (kind == "garbage") {
      check(rt->loadModule("not a module", 12, module));
    } else if (kind == "jit-error") {
      check(rt->loadModuleJIT("//\n.version 8.0\nsyntax error", 3, module));
    } else if (kind == "jit") {
      check(rt->loadModuleJIT("FAKE-CUBIN chunk_fwd", 4, module));
    } else if (kind == "missing-kernel") {
      check(rt->loadModule(kImage, sizeof(kImage), module));
      CudaFunction function;
      check(rt->getFunction(module, "chunk_bwd", function));
    } else {
      return 3;
    }
    std::printf("loaded\n");
    return 0;
  }

  // events: timing events around a launch.
  if (scenario == "events") {
    auto rt = createRuntime();
    CudaEvent start, end, untimed;
    check(rt->createEvent(start));
    check(rt->createEvent(end));
    check(rt->createEvent(untimed, /*timing=*/false));
    check(rt->recordEvent(start, nullptr));
    check(rt->recordEvent(end, nullptr));
    check(rt->synchronizeEvent(end));
    float ms;
    check(rt->elapsedMs(start, end, ms));
    std::printf("elapsed: %.2f ms\n", ms);
    check(rt->recordEvent(untimed, nullptr));
    check(rt->elapsedMs(start, untimed, ms));
    return 0;
  }

  // graph: capturing a graph where the driver has none (the fake driver
  // has no graph entry points) is an error, and nothing is enqueued.
  if (scenario == "graph") {
    auto rt = createRuntime();
    CudaGraphExec graph;
    bool enqueued = false;
    CudaStatus status =
        rt->captureGraph(nullptr, [&] { enqueued = true; }, graph);
    std::printf("enqueued: %s\n", enqueued ? "yes" : "no");
    std::printf("%s\n", rt->launchGraph(nullptr, nullptr).message().c_str());
    check(status);
    return 0;
  }

  // tensor-map-misaligned: the alignment check before the driver call.
  if (scenario == "tensor-map-misaligned") {
    auto rt = createRuntime();
    alignas(128) unsigned char map[256];
    uint64_t dims[2] = {128, 64}, strides[1] = {256};
    uint32_t box[2] = {64, 64}, elementStrides[2] = {1, 1};
    check(rt->encodeTensorMapTiled(map + 8, 9, 2, map, dims, strides, box,
                                   elementStrides, 0, 3, 0, 0));
    return 0;
  }

  // primary-context: two runtimes of one device, destroyed in turn; the
  // second must still work after the first released its reference.
  if (scenario == "primary-context") {
    auto first = createRuntime();
    auto second = createRuntime();
    CudaDevicePtr p;
    check(first->alloc(16, p));
    first.reset();
    check(second->free(p));
    CudaRuntime *shared;
    check(CudaRuntime::getShared(0, shared));
    CudaRuntime *again;
    check(CudaRuntime::getShared(0, again));
    std::printf("shared runtime %s\n", shared == again ? "reused" : "NEW");
    return 0;
  }

  // count: the number of devices.
  if (scenario == "count") {
    int count;
    check(CudaRuntime::getDeviceCount(count));
    std::printf("%d\n", count);
    return 0;
  }

  std::fprintf(stderr, "usage: linattn-cuda-runtime-test create [DEVICE] | "
                       "memory | launch KERNEL GX GY GZ BX BY BZ SMEM [CX CY "
                       "CZ] | sync-fault | load KIND | events | "
                       "graph | tensor-map-misaligned | primary-context | "
                       "count\n");
  return 3;
}
