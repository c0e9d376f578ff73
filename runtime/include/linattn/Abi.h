//===- Abi.h - The C ABI of a library built by linattn-compile ---*- C -*-===//
//
// `linattn-compile SPEC.mlir -o lib.so` builds a shared library that needs
// only libc and a CUDA driver (LinAttn's CUDA runtime and the kernels'
// cubins are inside it). For every public function NAME of the spec it
// exports:
//
//   void _mlir_ciface_NAME(void *results, LinAttnMemRefR *arg0, ...);
//   void _mlir_ciface_NAME_async(void *results, CUstream stream,
//                                LinAttnMemRefR *arg0, ...);
//   const char __linattn_signature_NAME[];
//
// Arguments, in the spec's order, are pointers to memref descriptors (the
// structs below, R the tensor's rank) whose `aligned` pointer is DEVICE
// memory; `allocated` may equal it. The descriptor gives the dimensions
// (`sizes`, outermost first, e.g. q [B, T, H, K]) and element strides,
// which must be row-major dense (strides[R-1] = 1, strides[i] = sizes[i+1] *
// strides[i+1]), and whose first element (`aligned` + `offset` elements)
// must sit on a 16-byte boundary: the kernels load 16 bytes an access. A
// call given one that does not fails by name (the argument and its role)
// before any device work. Inputs are read, never written or kept.
//
// `results` points to the result descriptors, one after the other in the
// spec's order (a struct of LinAttnMemRefR members, one per result), which
// the call fills in. Their memory is allocated by the call, in the order of
// its stream, from the device's default memory pool (cuMemAllocAsync): the
// caller owns it and frees `allocated` with cuMemFreeAsync on a stream
// ordered after the call (or cuMemFree once that stream has completed).
//
// Streams:
//   - _mlir_ciface_NAME_async enqueues everything (allocations of
//     intermediates and results, kernels, frees of the intermediates) on
//     `stream` and returns without waiting: results are ready when `stream`
//     gets there. The call never synchronises with the host, so it can be
//     captured into a CUDA graph.
//   - _mlir_ciface_NAME is the same call on the legacy default stream
//     (null), waited for before it returns.
//   A thread runs one call at a time; threads may call concurrently.
//
// The signature string records the element types and static dimensions,
// e.g. for examples/gated_deltanet.mlir
//
//   gated_deltanet(bf16[?,?,8,128],bf16[?,?,8,128],bf16[?,?,8,128],f32[?,?,8],
//                  f32[?,?,8],f32[?,8,128,128])->(bf16[?,?,8,128],f32[?,8,128,128])
//
// with `?` for a dimension given at run time; bf16 and f16 elements are 16-bit
// (uint16_t), f32 is float. linattn-gpu-run reads it to check inputs.
//
// Errors: dimensions that disagree at run time (T of v against T of q)
// are a failed step like any other (linattn-report-check-failures: one
// line naming both, the status set, the call's device work skipped). A
// failing CUDA call
// (no driver or device, a module the GPU cannot run, out of memory, a
// launch the driver rejects) never ends the process: it prints one line
// (the call, the CUDA error, the kernel and its launch shape), or passes
// it to an error handler (linattnCudaSetErrorHandler in
// linattn/MgpuRuntime.h, also exported by the library), and the rest of
// the call is skipped; linattnCudaGetFirstError() is the status to read
// after loading the library and after each call. See that header.
//
//===----------------------------------------------------------------------===//

#ifndef LINATTN_ABI_H
#define LINATTN_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// MLIR's ranked memref descriptor of rank R, as the C interface passes it.
#define LINATTN_DEFINE_MEMREF(R)                                             \
  typedef struct LinAttnMemRef##R {                                          \
    void *allocated;                                                         \
    void *aligned;                                                           \
    int64_t offset;                                                          \
    int64_t sizes[R];                                                        \
    int64_t strides[R];                                                      \
  } LinAttnMemRef##R;

LINATTN_DEFINE_MEMREF(1)
LINATTN_DEFINE_MEMREF(2)
LINATTN_DEFINE_MEMREF(3)
LINATTN_DEFINE_MEMREF(4)
LINATTN_DEFINE_MEMREF(5)

#undef LINATTN_DEFINE_MEMREF

/// `CUstream` as cuda.h declares it, for callers that do not include it.
typedef struct CUstream_st *LinAttnCUstream;

/// A spec function's entry points as the library exports them, e.g. for
/// examples/gated_deltanet.mlir (rank-4 q, k, v, initial state; rank-3
/// gate and beta; results o and the final state):
///
///   struct GatedDeltaNetResults { LinAttnMemRef4 o, state; };
///   void _mlir_ciface_gated_deltanet_async(
///       struct GatedDeltaNetResults *results, LinAttnCUstream stream,
///       LinAttnMemRef4 *q, LinAttnMemRef4 *k, LinAttnMemRef4 *v,
///       LinAttnMemRef3 *g, LinAttnMemRef3 *beta, LinAttnMemRef4 *s0);
///
/// Declare them with the spec's types; this header does not, since they
/// differ per spec.

#ifdef __cplusplus
} // extern "C"
#endif

#endif // LINATTN_ABI_H
