//===- linattn-mgpu-test.c - Call the mgpu* C ABI as compiled code does ---===//
//
//   linattn-mgpu-test SCENARIO
//
// Written in C, against linattn/MgpuRuntime.h alone, to keep that header C
// and to call the functions the way MLIR's generated host code does (void *
// handles, intptr_t dimensions, memref descriptors). the tests in test/Runtime
// run it without a driver and against the fake driver
// (runtime/test/FakeCudaDriver.cpp).
//
//===----------------------------------------------------------------------===//

#include "linattn/Abi.h"
#include "linattn/MgpuRuntime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Not const: mgpuModuleLoad takes `void *`, as MLIR declares it.
static char kImage[] = "FAKE-CUBIN fake_fill_i32 chunk_fwd";
static char kBadPtx[] = ".version 8.0\nsyntax error";

// A rank-2 memref descriptor, as MLIR lays it out (linattn/Abi.h).
typedef LinAttnMemRef2 MemRef2D;
// MLIR's descriptor of rank R: two pointers, the offset, R sizes, R strides.
_Static_assert(sizeof(LinAttnMemRef4) == 2 * sizeof(void *) + 9 * 8,
               "LinAttnMemRef4 layout");

static void printingHandler(const char *message, void *userData) {
  ++*(int *)userData;
  printf("handler: %s\n", message);
}

// The sequence gpu-to-llvm emits for alloc, copy in, memset, launch, copy
// out, free; prints the result.
static int pipeline(void) {
  void *module = mgpuModuleLoad(kImage, sizeof(kImage));
  void *function = mgpuModuleGetFunction(module, "fake_fill_i32");
  void *stream = mgpuStreamCreate();
  int host[8] = {0}, back[8] = {0};
  void *dst = mgpuMemAlloc(sizeof(host), stream, false);
  mgpuMemcpy(dst, host, sizeof(host), stream);
  mgpuMemset32(dst, 7u, 8, stream);
  int value = 40;
  long long count = 4;
  void *params[] = {&dst, &value, &count};
  mgpuLaunchKernel(function, 2, 1, 1, 64, 1, 1, 0, stream, params, NULL, 3);
  void *event = mgpuEventCreate();
  mgpuEventRecord(event, stream);
  void *other = mgpuStreamCreate();
  mgpuStreamWaitEvent(other, event);
  mgpuMemcpy(back, dst, sizeof(back), other);
  mgpuStreamSynchronize(other);
  mgpuEventSynchronize(event);
  printf("pipeline: %d %d %d %d %d %d %d %d\n", back[0], back[1], back[2],
         back[3], back[4], back[5], back[6], back[7]);
  mgpuEventDestroy(event);
  mgpuMemFree(dst, stream);
  void *shared = mgpuMemAlloc(64, stream, true);
  mgpuMemset16(shared, 0xabcd, 32, stream);
  mgpuMemFree(shared, stream);
  if (mgpuMemAlloc(0, stream, false) != NULL)
    printf("zero-byte allocation is not null\n");
  mgpuStreamDestroy(other);
  mgpuStreamDestroy(stream);
  mgpuModuleUnload(module);
  return 0;
}

// What a compiled function's host code does between linattnCudaBeginCall
// and linattnCudaEndCall: every stream it asks for is the call's, which it
// neither synchronises nor destroys; allocations and frees are ordered on
// it. First on a caller's stream (not waited for), then synchronously on the
// legacy default stream (waited for at the end), then a call inside a call.
static int status(void);

static int call(void) {
  void *module = mgpuModuleLoad(kImage, sizeof(kImage));
  void *function = mgpuModuleGetFunction(module, "fake_fill_i32");
  void *caller = mgpuStreamCreate();
  for (int synchronous = 0; synchronous < 2; ++synchronous) {
    printf("call: %s\n", synchronous ? "synchronous" : "on the caller's stream");
    linattnCudaBeginCall(synchronous ? NULL : caller);
    void *stream = mgpuStreamCreate();
    if (stream != (synchronous ? NULL : caller))
      printf("the call's host code got another stream\n");
    void *dst = mgpuMemAlloc(32, stream, false);
    mgpuStreamSynchronize(stream);
    mgpuStreamDestroy(stream);
    int value = 40;
    long long count = 4;
    void *params[] = {&dst, &value, &count};
    stream = mgpuStreamCreate();
    mgpuLaunchKernel(function, 1, 1, 1, 8, 1, 1, 0, stream, params, NULL, 3);
    mgpuStreamSynchronize(stream);
    mgpuStreamDestroy(stream);
    stream = mgpuStreamCreate();
    mgpuMemFree(dst, stream);
    mgpuStreamSynchronize(stream);
    mgpuStreamDestroy(stream);
    linattnCudaEndCall(synchronous);
  }
  mgpuStreamDestroy(caller);
  printf("call: nested\n");
  linattnCudaBeginCall(NULL);
  linattnCudaBeginCall(NULL);
  return status();
}

/// What a runner does after compiled code: the status of the steps so far
/// (linattnCudaGetFirstError), on stdout, and 1 if one failed.
static int status(void) {
  const char *first = linattnCudaGetFirstError();
  printf("carried on: %s\n", first ? "an error was reported" : "no error");
  return first ? 1 : 0;
}

int main(int argc, char **argv) {
  // Unbuffered: the tests interleave this output with the fake driver's
  // trace on stderr.
  setvbuf(stdout, NULL, _IONBF, 0);
  const char *scenario = argc > 1 ? argv[1] : "";

  // stream-create: the first call compiled code makes. Without a driver it
  // reports one line and returns a null stream; the program carries on.
  if (!strcmp(scenario, "stream-create")) {
    void *stream = mgpuStreamCreate();
    printf("stream created: %s\n", stream ? "yes" : "null");
    mgpuStreamDestroy(stream);
    return status();
  }

  if (!strcmp(scenario, "pipeline"))
    return pipeline();

  // launch-fail: a launch the (fake) driver rejects; with
  // LINATTN_FAKE_CUDA_FAIL=cuLaunchKernel=701 and big shared memory.
  if (!strcmp(scenario, "launch-fail")) {
    void *module = mgpuModuleLoad(kImage, sizeof(kImage));
    void *function = mgpuModuleGetFunction(module, "chunk_fwd");
    void *stream = mgpuStreamCreate();
    mgpuLaunchKernel(function, 4, 8, 2, 128, 1, 1, 65536, stream, NULL, NULL,
                     0);
    return status();
  }

  // bad-dims: an index value the driver's unsigned int cannot hold.
  if (!strcmp(scenario, "bad-dims")) {
    void *module = mgpuModuleLoad(kImage, sizeof(kImage));
    void *function = mgpuModuleGetFunction(module, "chunk_fwd");
    mgpuLaunchKernel(function, (intptr_t)1 << 32, 1, 1, 0, 1, 1, 0, NULL, NULL,
                     NULL, 0);
    return status();
  }

  // empty-grid: launches over grids with a dimension of 0 (B or T = 0 in
  // compiled code) do nothing and report nothing; the launch after them runs.
  if (!strcmp(scenario, "empty-grid")) {
    void *module = mgpuModuleLoad(kImage, sizeof(kImage));
    void *function = mgpuModuleGetFunction(module, "chunk_fwd");
    mgpuLaunchKernel(function, 0, 8, 1, 128, 1, 1, 65536, NULL, NULL, NULL, 0);
    mgpuLaunchKernel(function, 4, 8, 0, 128, 1, 1, 0, NULL, NULL, NULL, 0);
    mgpuLaunchClusterKernel(function, 2, 1, 1, 0, 1, 1, 128, 1, 1, 0, NULL,
                            NULL, NULL);
    mgpuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL, 0);
    printf("empty grids done\n");
    return status();
  }

  // missing-kernel: a name the module does not have.
  if (!strcmp(scenario, "missing-kernel")) {
    void *module = mgpuModuleLoad(kImage, sizeof(kImage));
    mgpuModuleGetFunction(module, "chunk_bwd");
    return status();
  }

  // jit-error: mgpuModuleLoadJIT of PTX that does not compile.
  if (!strcmp(scenario, "jit-error")) {
    mgpuModuleLoadJIT(kBadPtx, 2);
    return status();
  }

  // handler: with a handler installed, failures are reported to it and
  // execution continues; the first error stays available.
  if (!strcmp(scenario, "handler")) {
    int calls = 0;
    linattnCudaSetErrorHandler(printingHandler, &calls);
    void *stream = mgpuStreamCreate();
    void *memory = mgpuMemAlloc(16, stream, false);
    printf("continued: stream %s, memory %s, %d handler calls\n",
           stream ? "set" : "null", memory ? "set" : "null", calls);
    const char *first = linattnCudaGetFirstError();
    printf("first error: %s\n", first ? first : "none");
    linattnCudaClearError();
    printf("after clear: %s\n",
           linattnCudaGetFirstError() ? "error" : "none");
    return 0;
  }

  // cluster: a clustered launch, with more than 8 blocks per cluster.
  if (!strcmp(scenario, "cluster")) {
    void *module = mgpuModuleLoad(kImage, sizeof(kImage));
    void *function = mgpuModuleGetFunction(module, "chunk_fwd");
    mgpuLaunchClusterKernel(function, 2, 1, 1, 8, 4, 1, 128, 1, 1, 0, NULL,
                            NULL, NULL);
    mgpuLaunchClusterKernel(function, 16, 1, 1, 32, 1, 1, 128, 1, 1, 100000,
                            NULL, NULL, NULL);
    printf("cluster launches done\n");
    return 0;
  }

  // tensor-map: nvgpu.tma.create.descriptor of a 64x128 bf16 memref view at
  // element offset 8 (16 bytes), box 32x64, swizzle 128B.
  if (!strcmp(scenario, "tensor-map")) {
    void *data = aligned_alloc(4096, 4096 * 8);
    MemRef2D d = {data, data, 8, {64, 128}, {128, 1}};
    int64_t box[2] = {32, 64};
    void *map = mgpuTensorMapEncodeTiledMemref(2, &d, 9, 0, 3, 0, 0, box);
    printf("tensor map in device memory: %s\n", map ? "yes" : "null");
    MemRef2D strided = {data, data, 0, {64, 128}, {256, 2}};
    mgpuTensorMapEncodeTiledMemref(2, &strided, 9, 0, 3, 0, 0, box);
    return status();
  }

  // host-register: gpu.host_register / host_unregister of a memref.
  if (!strcmp(scenario, "host-register")) {
    float *data = malloc(sizeof(float) * 64 * 32);
    MemRef2D d = {data, data, 4, {16, 8}, {32, 1}};
    mgpuMemHostRegisterMemRef(2, &d, sizeof(float));
    mgpuMemHostUnregisterMemRef(2, &d, sizeof(float));
    printf("registered and unregistered\n");
    mgpuMemHostUnregister(data);
    return status();
  }

  if (!strcmp(scenario, "call"))
    return call();

  // device: mgpuSetDefaultDevice to a device that does not exist.
  if (!strcmp(scenario, "device")) {
    mgpuSetDefaultDevice(3);
    mgpuStreamCreate();
    return status();
  }

  fprintf(stderr, "usage: linattn-mgpu-test stream-create | pipeline | "
                  "launch-fail | bad-dims | empty-grid | missing-kernel | jit-error | "
                  "handler | cluster | tensor-map | host-register | call | "
                  "device\n");
  return 3;
}
