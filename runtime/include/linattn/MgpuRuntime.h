//===- MgpuRuntime.h - The mgpu* C ABI of MLIR's GPU host code ---*- C -*-===//
//
// MLIR lowers host-side GPU work to calls of mgpu* functions: gpu-to-llvm
// (streams, events, memory), the translation of gpu.launch_func and
// gpu.binary (module load, kernel lookup, launch) and nvgpu-to-nvvm (TMA
// descriptors). Upstream implements them in libmlir_cuda_runtime.so, which
// Debian does not ship and which links libcuda. This header declares the
// same symbols as LinAttn provides them, on linattn::CudaRuntime
// (linattn/CudaRuntime.h): compiled code links linattn_cuda_runtime (shared)
// or LinAttnCudaRuntime (static) instead, and needs no CUDA at link time.
//
// Signatures are the ones MLIR 22 emits: read off the declarations that
// `mlir-opt --gpu-to-llvm | mlir-translate --mlir-to-llvmir` and
// `--convert-nvgpu-to-nvvm` produce. Handles are `void *` (CUmodule,
// CUfunction, CUstream, CUevent; device memory is a device address).
//
// Device: the calling thread's default device (mgpuSetDefaultDevice; 0 if
// never set). Its process-wide CudaRuntime (CudaRuntime::getShared) is
// created on first use: the driver is opened, initialised and the device's
// primary context made current on the calling thread.
//
// Errors never end the process: a compiled library is loaded into someone
// else's (a Python interpreter, a server), and its GPU modules are loaded
// by global constructors, inside dlopen, before anyone could install
// anything. A failed mgpu function returns without effect (a null handle or
// pointer) and reports the complete message, by default as one line on
// stderr (the first failure on the thread since linattnCudaClearError: the
// cause; what fails after it is its consequence),
//
//   linattn-cuda-runtime: error: mgpuLaunchKernel: launching kernel
//   'chunk_fwd' (grid [4, 8, 1], block [128, 1, 1], 65536 bytes of dynamic
//   shared memory): cuLaunchKernel returned CUDA_ERROR_INVALID_VALUE
//   (invalid argument)
//
// (a missing driver reads "...: mgpuModuleLoad: no CUDA driver:
// libcuda.so.1 could not be loaded (...)"), or to the handler a runner
// installed (linattnCudaSetErrorHandler) instead. The first message on a
// thread is kept: linattnCudaGetFirstError() is the status a caller reads
// after loading a library and after each compiled call (non-null: the call
// failed and its results are not to be used). Within a call
// (linattnCudaBeginCall .. linattnCudaEndCall), once one step has failed
// the call's later device work (allocations, copies, launches) is skipped,
// so that no kernel runs on memory that was never allocated. A kernel whose
// module did not load is not launched: its lookup reports why.
//
//===----------------------------------------------------------------------===//

#ifndef LINATTN_MGPURUNTIME_H
#define LINATTN_MGPURUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define LINATTN_MGPU_EXPORT __attribute__((visibility("default")))
#else
#define LINATTN_MGPU_EXPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

//===--- Error reporting (LinAttn's own) --------------------------------===//

/// Called with the full message of a failed mgpu call; `userData` is what
/// was registered with the handler.
typedef void (*LinAttnCudaErrorHandler)(const char *message, void *userData);

/// Installs `handler` for the whole process (null restores the default:
/// print the first failure since the last clear as one line on stderr;
/// neither ever ends the process). Handlers may be called from any thread
/// that calls mgpu functions.
LINATTN_MGPU_EXPORT void
linattnCudaSetErrorHandler(LinAttnCudaErrorHandler handler, void *userData);

/// The first mgpu failure on the calling thread since the last clear, or
/// null: the status a caller reads after loading a library and after each
/// call, whichever handler is installed. Valid until linattnCudaClearError
/// on this thread.
LINATTN_MGPU_EXPORT const char *linattnCudaGetFirstError(void);
LINATTN_MGPU_EXPORT void linattnCudaClearError(void);

/// Reports a failed run-time check of compiled code (a shape that does not
/// match, `linattn-report-check-failures`) as a failed step: one line or
/// the handler, the status, and the rest of the running call skipped.
LINATTN_MGPU_EXPORT void linattnCudaCheckFailed(const char *message);

/// The input check a library compiled with --check-inputs runs first in
/// each call (linattn-insert-input-checks): argument #`argIndex`, a memref
/// of `rank` whose ranked descriptor is at `descriptor` (MLIR's unranked
/// memref ABI) and whose elements are f32, f16, bf16 or f64 (the suffix),
/// is copied to the host, ordered on the call's stream, and its first
/// element that is not finite, a positive log gate or a beta outside
/// [0, 1] (`role`: the recurrence operand it is, or "") is reported as a
/// failed step ("check-inputs: argument #I (ROLE) element [..] = X: why",
/// linattn/InputCheck.h). The copy and the wait make a checked call
/// synchronous: the check is for finding bad inputs, not for production.
LINATTN_MGPU_EXPORT void linattnCudaCheckInputF32(int64_t argIndex,
                                                  int64_t rank,
                                                  void *descriptor,
                                                  const char *role);
LINATTN_MGPU_EXPORT void linattnCudaCheckInputF16(int64_t argIndex,
                                                  int64_t rank,
                                                  void *descriptor,
                                                  const char *role);
LINATTN_MGPU_EXPORT void linattnCudaCheckInputBF16(int64_t argIndex,
                                                   int64_t rank,
                                                   void *descriptor,
                                                   const char *role);
LINATTN_MGPU_EXPORT void linattnCudaCheckInputF64(int64_t argIndex,
                                                  int64_t rank,
                                                  void *descriptor,
                                                  const char *role);

/// Device memory the compiled code allocates (mgpuMemAlloc: a call's
/// results and intermediates) minus what it frees (mgpuMemFree), at its
/// most since the last reset: with a reset before one call, the call's
/// results plus the peak of its intermediates (a caller's cuMemFree of a
/// result is not seen; reset before the next measured call).
LINATTN_MGPU_EXPORT void linattnCudaResetAllocationPeak(void);
LINATTN_MGPU_EXPORT uint64_t linattnCudaGetAllocationPeak(void);

//===--- Calls (LinAttn's own) --------------------------------------------===//

/// A compiled spec function brackets its host code with these (the entry
/// points in linattn/Abi.h). Between them, on the calling thread, every
/// stream the host code asks for (mgpuStreamCreate) is `stream`, and
/// synchronising or destroying it does nothing: the call's allocations,
/// copies, launches and frees are all ordered on that one stream, and the
/// host never waits for the device (generated host code never reads device
/// memory). A call inside a call is reported.
LINATTN_MGPU_EXPORT void linattnCudaBeginCall(void *stream);
/// Ends the call; with `synchronize`, first waits for its stream (a kernel
/// fault is reported here, naming the last kernel launched).
LINATTN_MGPU_EXPORT void linattnCudaEndCall(bool synchronize);

//===--- Modules and kernels ---------------------------------------------===//

/// Loads a cubin or fatbinary (gpu.binary format=bin/fatbin);
/// `gpuBlobSize` is its size in bytes.
LINATTN_MGPU_EXPORT void *mgpuModuleLoad(void *data, size_t gpuBlobSize);
/// JIT-compiles NUL-terminated PTX (gpu.binary format=isa) at `optLevel`;
/// a failure's message carries the JIT log.
LINATTN_MGPU_EXPORT void *mgpuModuleLoadJIT(void *data, int optLevel);
LINATTN_MGPU_EXPORT void mgpuModuleUnload(void *module);
/// Looks a kernel up; its name is remembered for launch messages.
LINATTN_MGPU_EXPORT void *mgpuModuleGetFunction(void *module,
                                                const char *name);

/// Launches `function`. Dimensions are MLIR `index` values; one outside
/// 1..2^32-1 is reported, not truncated, but a grid with no blocks (a grid
/// dimension of 0: compiled code over B = 0 or T = 0, whose loops would
/// run no iteration) launches nothing and is no error, as the CPU lowering
/// runs such inputs. `smem` is the dynamic shared memory in bytes (the
/// kernel is opted in to it first, once per size).
/// `paramsCount` is the number of entries of `params`.
LINATTN_MGPU_EXPORT void
mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                 intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                 intptr_t blockZ, int32_t smem, void *stream, void **params,
                 void **extra, size_t paramsCount);

/// A launch with thread block clusters (gpu.launch_func ... clusters in;
/// sm_90+, cuLaunchKernelEx).
LINATTN_MGPU_EXPORT void
mgpuLaunchClusterKernel(void *function, intptr_t clusterX, intptr_t clusterY,
                        intptr_t clusterZ, intptr_t gridX, intptr_t gridY,
                        intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                        intptr_t blockZ, int32_t smem, void *stream,
                        void **params, void **extra);

//===--- Streams and events ----------------------------------------------===//

/// A CU_STREAM_NON_BLOCKING stream; within a call, the call's stream.
LINATTN_MGPU_EXPORT void *mgpuStreamCreate(void);
LINATTN_MGPU_EXPORT void mgpuStreamDestroy(void *stream);
/// Kernel faults surface here; the message names the last kernel launched.
LINATTN_MGPU_EXPORT void mgpuStreamSynchronize(void *stream);
LINATTN_MGPU_EXPORT void mgpuStreamWaitEvent(void *stream, void *event);
/// A CU_EVENT_DISABLE_TIMING event (for ordering only).
LINATTN_MGPU_EXPORT void *mgpuEventCreate(void);
LINATTN_MGPU_EXPORT void mgpuEventDestroy(void *event);
LINATTN_MGPU_EXPORT void mgpuEventSynchronize(void *event);
LINATTN_MGPU_EXPORT void mgpuEventRecord(void *event, void *stream);

//===--- Memory ----------------------------------------------------------===//

/// Device memory ordered on `stream` (cuMemAllocAsync from the device's
/// default pool, whose release threshold is raised so that freed memory is
/// kept for the next call); synchronous cuMemAlloc when there is no stream
/// and no call; managed memory (synchronous) when `isHostShared`
/// (gpu.alloc host_shared). Zero bytes gives null.
LINATTN_MGPU_EXPORT void *mgpuMemAlloc(uint64_t sizeBytes, void *stream,
                                       bool isHostShared);
/// Frees what mgpuMemAlloc returned: in the order of `stream`
/// (cuMemFreeAsync) if it was allocated so, else at once (cuMemFree).
LINATTN_MGPU_EXPORT void mgpuMemFree(void *ptr, void *stream);
/// A copy in any direction (unified addressing), ordered on `stream`.
LINATTN_MGPU_EXPORT void mgpuMemcpy(void *dst, void *src, size_t sizeBytes,
                                    void *stream);
/// Sets `count` 32-bit (16-bit) elements, ordered on `stream`.
LINATTN_MGPU_EXPORT void mgpuMemset32(void *dst, unsigned int value,
                                      size_t count, void *stream);
LINATTN_MGPU_EXPORT void mgpuMemset16(void *dst, unsigned short value,
                                      size_t count, void *stream);

/// Page-locks host memory (gpu.host_register). The MemRef forms take a
/// ranked memref descriptor {allocated, aligned, offset, sizes[rank],
/// strides[rank]} and register the span its elements cover.
LINATTN_MGPU_EXPORT void mgpuMemHostRegister(void *ptr, uint64_t sizeBytes);
LINATTN_MGPU_EXPORT void mgpuMemHostUnregister(void *ptr);
LINATTN_MGPU_EXPORT void mgpuMemHostRegisterMemRef(int64_t rank,
                                                   void *descriptor,
                                                   int64_t elementSizeBytes);
LINATTN_MGPU_EXPORT void
mgpuMemHostUnregisterMemRef(int64_t rank, void *descriptor,
                            int64_t elementSizeBytes);

//===--- Devices and tensor maps -----------------------------------------===//

/// Selects the device for later mgpu calls of the calling thread.
LINATTN_MGPU_EXPORT void mgpuSetDefaultDevice(int32_t device);

/// nvgpu.tma.create.descriptor: encodes a tiled TMA descriptor for the
/// ranked memref `descriptor` (rank 1-5, unit innermost stride) with box
/// `boxDims` (rank entries, outermost first) and the CUtensorMap* enum
/// values given, copies it to device memory and returns that device address
/// (kernels take it as a pointer). The copy lives until the process exits.
LINATTN_MGPU_EXPORT void *
mgpuTensorMapEncodeTiledMemref(int64_t tensorRank, void *descriptor,
                               int64_t tensorDataType, int64_t interleave,
                               int64_t swizzle, int64_t l2Promotion,
                               int64_t oobFill, int64_t *boxDims);

#ifdef __cplusplus
} // extern "C"
#endif

#endif // LINATTN_MGPURUNTIME_H
