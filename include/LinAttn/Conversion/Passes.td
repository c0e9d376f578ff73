//===- Passes.td - LinAttn conversion passes ---------------*- tablegen -*-===//

#ifndef LINATTN_CONVERSION_PASSES_TD
#define LINATTN_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertLinAttnToLoops
    : Pass<"convert-linattn-to-loops"> {
  let summary = "Lower linattn.recurrence to its sequential loop (the oracle)";
  let description = [{
    Rewrites every `linattn.recurrence` into the loop that defines its
    semantics: for each sequence b and value head hv, for t = 1..T,

        S = M_t S + b_t k_t v_t^T,     o_t = scale * S^T q_t

    on memrefs (`bufferization.to_buffer` of the operands, fresh buffers for
    the results wrapped by `bufferization.to_tensor`), with `scf.for` loops
    and fp32 arithmetic, parallel over the independent state columns
    (b, hv, j), each column carried across a sequential loop over t.
    Run-time shape checks are `linattn-insert-shape-checks`'s job. This is
    the reference every other algorithm is proved against.

    Every `linattn.recurrence_grad` becomes its reverse loop, parallel over
    (b, hv): a forward pass checkpoints the state every ceil(sqrt(T))
    tokens, then each segment is recomputed from its checkpoint and stepped
    back token by token (the op's documentation states the equations).
    The algorithm ops (`linattn.l2norm`, the chunked-state ops, scans)
    become their loops too.
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect",
    "mlir::bufferization::BufferizationDialect",
    "mlir::math::MathDialect",
    "mlir::memref::MemRefDialect",
    "mlir::scf::SCFDialect",
    "mlir::tensor::TensorDialect",
    "mlir::vector::VectorDialect",
  ];
  let statistics = [
    Statistic<"numLowered", "num-lowered",
              "Number of linattn.recurrence ops lowered to loops">,
  ];
}

def LinAttnFitChunkedKernels
    : Pass<"linattn-fit-chunked-kernels", "mlir::ModuleOp"> {
  let summary = "Keep the chunked strategy only where its GPU kernels fit";
  let description = [{
    For every `linattn.recurrence` whose recorded strategy is `chunked`
    (`linattn-select-strategy{gpu-kernels=true}`), tries its chunked form
    and kernels on a copy (the pipelines' chunked forms, then
    `linattn-fuse-chunk-cumsum`, `linattn-fuse-row-norms` and
    `convert-linattn-chunked-to-gpu` for
    `chip`) and, where a kernel cannot be made, records `recurrent`
    instead. What the kernels take is decided by the conversion alone, so
    the choice and the conversion cannot disagree: at K or V above 128 a
    kernel's tiles can outgrow a block's shared memory (the state pass of
    `negeig_delta`'s split W at 256). With `explain`, each change is a
    remark naming the kernel and why. `linattn-to-nvvm`'s default strategy
    runs it after the selector.
  }];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90a\"",
           "The CUDA chip the kernels are for">,
    Option<"chunkSize", "chunk-size", "int64_t", /*default=*/"64",
           "Tokens per chunk of the chunked form">,
    Option<"explain", "explain", "bool", /*default=*/"false",
           "Remark on every recurrence whose chunked kernels do not fit">,
    Option<"narrowStates", "narrow-states", "bool", /*default=*/"true",
           "The backward's trial takes linattn-recurrence-grad-to-chunked's "
           "narrow-states as the pipeline does">,
  ];
  let dependentDialects = [
    "mlir::arith::ArithDialect",
    "mlir::bufferization::BufferizationDialect",
    "mlir::cf::ControlFlowDialect",
    "mlir::func::FuncDialect",
    "mlir::gpu::GPUDialect",
    "mlir::linalg::LinalgDialect",
    "mlir::math::MathDialect",
    "mlir::memref::MemRefDialect",
    "mlir::nvgpu::NVGPUDialect",
    "mlir::NVVM::NVVMDialect",
    "mlir::scf::SCFDialect",
    "mlir::tensor::TensorDialect",
    "mlir::vector::VectorDialect",
  ];
  let statistics = [
    Statistic<"numTried", "num-tried", "Chunked choices tried">,
    Statistic<"numRefitted", "num-refitted",
              "Chunked choices made recurrent (kernels do not fit)">,
  ];
}

def ConvertLinAttnChunkedToGPU : Pass<"convert-linattn-chunked-to-gpu"> {
  let summary = "Chunked-state algorithm ops to tensor-core GPU kernels";
  let description = [{
    Rewrites the chunked-state ops (`linattn.l2norm`, `chunk_cumsum`,
    `ut_transform`, `chunk_state_pass` in WY or rank-1-free form,
    `chunk_output`) into `gpu.launch` kernels on memrefs
    (`bufferization.to_buffer` of the operands, fresh buffers for the
    results), before bufferization. The matrix products of a chunk run on
    tensor cores as `nvvm.mma.sync` m16n8k16 with bf16/f16 operands staged
    in shared memory and fp32 accumulation; fp32 operands (T, D, P, the
    carried state, and W or chunk states when f32) are split in two 16-bit parts, `x ~= hi + lo`, and multiplied as
    `hi*hi + hi*lo + lo*hi`, which keeps the chunked algorithm within 5e-3
    of an fp64 reference on hard inputs (nearly parallel keys, beta ~ 1)
    where plain bf16 operands do not. An f32 spec's q, k and v are split
    the same way (bf16 parts; within 1e-4 of fp64; not beside per-key
    gates, an error). The f32 result of `linattn.l2norm` (qk_l2norm) is
    rounded to its input's 16-bit type:

    - `ut_transform`, one block per (chunk, value head, sequence):
      `A = K K^T` on tensor cores, `L = StrictLower(diag(c) A * exp(G_i -
      G_j))`, `T = (I + L)^-1` in fp32 by 16-row blocks (each warp
      inverts a diagonal block, then the block rows below), then
      `W = (T diag(c exp(G))) K` and `U = (T diag(beta)) V`, staged
      through shared memory and written as 16-byte row pieces.
    - `chunk_state_pass`, one block per (32 state columns, value head,
      sequence): each warp carries `S^T` for 16 columns and half the keys
      in its accumulators across a sequential loop over chunks (the mma C
      layout is the next product's A layout, so the state never goes
      through shared memory): `D = U - W S` (the two key halves' partial
      products summed through shared memory; a 16-bit W goes to the
      tensor cores as it is), `S' = exp(G_C) S + K^T D'`
      with `D' = diag(exp(G_C - G)) D`; chunk n + 2's inputs come in by
      `cp.async` (three stages; without W, or with gates and a 16-bit W
      and keys, four) while chunk n is computed. 16-bit chunk states and
      new values leave by `stmatrix` through shared memory; without W the
      new values are `u` itself. Two producer warps issue every copy in
      and out (mbarriers per stage: full as their copies land, empty as
      the compute warps have read it), the compute warps none; the wide
      64-column blocks (eight compute warps) take them only with a 16-bit
      W rounded once, row gates or none and K <= 128, and otherwise issue
      their own.
    - `chunk_output`, one block per (chunk x 64 columns, value head,
      sequence): `O = scale (diag(exp(G)) Q S + P D)` with `P =
      Mask(Q K^T * exp(G_i - G_j))` kept in registers as the A operand
      (16-bit chunk states and new values go to the tensor cores as they
      are; their tiles arrive by `cp.async`, O leaves by `stmatrix`).

    Per-key gates (`key_gate`, GLA; G is [B, T, HV, K]) cannot decay rows
    of D: the keys are decayed instead, `K' = K exp(G_C - G)`. A state
    pass with `decayed_keys` stages K' and G_C's row as a `chunk_cumsum`
    with `keys` wrote them (no decay pass in its loop); one without decays
    its staged keys in place. The state is decayed per key. The output
    kernel takes both 64-column tiles of
    a chunk where V is 128 (two units of four warps sharing Q, K, K' and
    the gates, unit 1's row blocks mirrored), factors each 16-row column
    block's decay around the block's last row, `(q exp(G_i - G_L)) (k
    exp(G_L - G_j))^T` (both factors <= 1 below the diagonal), and a warp
    computes its diagonal block elementwise in fp32 where its gates spread
    by more than e^64 there. A warp loops over the column blocks up to its
    own, adding each block's `P_b D_b` to O as soon as its scores are
    formed.

    `chunk_cumsum` of scalar gates runs a warp per (chunk, head), a
    shuffle scan over the chunk's 64 gates; per-key gates a thread per
    key (with `keys`, it also writes K' and G_C). A `ut_transform` with
    `raw_gates` sums the gates itself (warp 0) and writes G for the later
    readers.

    Each op is lowered by its own pattern, exactly as given: what a kernel
    fuses is decided before, on the IR, by `linattn-fuse-chunk-cumsum` and
    `linattn-fuse-row-norms`.

    `stmatrix` needs sm_90: for an older `chip` the kernels store their
    results from the accumulators directly.

    Chunks are 64 tokens, or 128 for the kinds without a rank-1 term and
    with row gates (linear attention, RetNet, simple GLA): their state pass
    walks two 64-row steps per chunk and stores one state, their output
    kernel runs eight warps over the 128 rows. K and V are multiples of 32
    up to 256 (TargetInfo.h: kHeadDimMultiple, kMaxHeadDim); a kernel
    whose tiles outgrow a block's shared memory (above 128) is an error
    naming the bytes. An op outside that envelope (f32
    operands, other chunk sizes, 128-token chunks of the WY form or of
    per-key gates) is an error naming the op and the limit.
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect",
    "mlir::bufferization::BufferizationDialect",
    "mlir::gpu::GPUDialect",
    "mlir::LLVM::LLVMDialect",
    "mlir::math::MathDialect",
    "mlir::memref::MemRefDialect",
    "mlir::nvgpu::NVGPUDialect",
    "mlir::NVVM::NVVMDialect",
    "mlir::scf::SCFDialect",
    "mlir::vector::VectorDialect",
  ];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90a\"",
           "The target GPU (sm_XY[a]): from sm_90 on, results leave through "
           "shared memory by stmatrix">,
    Option<"explain", "explain", "bool", /*default=*/"false",
           "Remark on each kernel it plans: the UT transform's (pieces, "
           "splits, shared memory), each state pass's (forward, segment "
           "maps, the backward's reverse pass: blocks, warps, stages, D' "
           "rounded or split, staged outputs, shared memory, and why it has "
           "no producer warps where it has none), the output's (blocks "
           "a chunk, column tile and why, units, splits, shared memory), "
           "and the backward's chunk_grad (its kernels and their blocks, or "
           "loops and why; whether a qk_grad takes its dq and dk) and "
           "qk_grad">,
  ];
  let statistics = [
    Statistic<"numKernels", "num-kernels", "Chunked ops made GPU kernels">,
  ];
}

def ConvertLinAttnRecurrenceToGPU : Pass<"convert-linattn-recurrence-to-gpu"> {
  let summary = "linattn.recurrence to a GPU kernel, each state column split over four lanes";
  let description = [{
    The recurrent strategy on a GPU (decode, and shapes the tensor-core
    kernels do not take). Rewrites every `linattn.recurrence` whose K is a
    multiple of 4 and at most 256 into a `gpu.launch` on memrefs, before
    bufferization: one block of 128 threads per (32 value columns, value
    head, batch index); the four lanes of a column each hold a quarter
    of its keys, consecutive ones, in registers for the whole sequence
    (read per token, as are q's, in 16-byte loads), and the sums over keys
    (`u = k^T S`, `o = S^T q`, the in-op L2 norms) finish with two
    xor-shuffles. The defining loop per token, in fp32 (`a` the decay, `c`
    the rank-1 scale times beta, `b` beta or 1; the per-key decay first for
    `kda`):

        u_j = sum_i k_i S_ij
        S_ij <- a_i (S_ij - c k_i u_j) + b k_i v_j
        o_j  = scale sum_i S_ij q_i

    The state is read once and written once per call. A recurrence it does
    not take is left to `convert-linattn-to-loops` (one thread per column).
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect",
    "mlir::bufferization::BufferizationDialect",
    "mlir::gpu::GPUDialect",
    "mlir::math::MathDialect",
    "mlir::memref::MemRefDialect",
    "mlir::scf::SCFDialect",
    "mlir::vector::VectorDialect",
  ];
  let statistics = [
    Statistic<"numKernels", "num-kernels", "Recurrences made split-key kernels">,
  ];
}

def ConvertLinAttnScanToGPU : Pass<"convert-linattn-scan-to-gpu"> {
  let summary = "linattn.scan to a GPU kernel, one thread per independent position";
  let description = [{
    Rewrites every `linattn.scan` into a `gpu.launch` on memrefs
    (`bufferization.to_buffer` of the operands, fresh buffers for the
    results), before bufferization. The combiner's element dimensions fall
    into classes of indices that are always equal (an elementwise op's
    operands and result, the operand dimensions one `linalg.generic` loop
    indexes, a carry and its yield):

    - a class without a reduction is a thread coordinate: one thread per
      (batch index, coordinates), 256 threads per block;
    - the other classes are held: each thread keeps its slice of every
      carry along them in registers (a vector of static size, at most
      `max-held` elements) and evaluates the combiner's ops on it, summing
      reductions in order.

    Each thread walks the scan dimension in order (reversed for `reverse`),
    reading the next element from memory where an op needs it and writing
    the scanned results and carries of its position. A carry whose results
    are unused and that no used carry reads is not computed. The token
    scans of the diagonal-transition kinds are fully parallel (the state
    (h, i, j) meets only (h, i, j)); the segment scan's `M S + B` with a
    K x K transition holds a state column of K values per thread.

    A combiner op other than elementwise arith/math, `linalg.fill`,
    `linalg.generic` with projected-permutation maps, `tensor.empty` and
    splat constants, a held dimension of dynamic size, or a slice larger
    than `max-held` is an error naming it.
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect",
    "mlir::bufferization::BufferizationDialect",
    "mlir::gpu::GPUDialect",
    "mlir::memref::MemRefDialect",
    "mlir::scf::SCFDialect",
    "mlir::vector::VectorDialect",
  ];
  let options = [
    Option<"maxHeld", "max-held", "int64_t", /*default=*/"256",
           "Most elements of one value a thread holds along the dimensions "
           "the combiner sums over">,
  ];
  let statistics = [
    Statistic<"numKernels", "num-kernels", "Scans made GPU kernels">,
  ];
}

def ConvertLinAttnLinalgToGPU : Pass<"convert-linattn-linalg-to-gpu"> {
  let summary = "Host linalg ops on buffers to GPU-mapped parallel loops";
  let description = [{
    Runs on bufferized IR, before `convert-linattn-to-gpu`. Every linalg op
    on buffers outside a kernel (what the scan forms leave: the outer
    products a token scan folds, the contraction `o_t = S_t^T q_t`,
    fills, casts, a `tensor.generate`'s `linalg.map`) becomes upstream's
    `scf.parallel` nest over its parallel dimensions (reductions stay
    sequential inside it), collapsed into one dimension and tiled by 256,
    the tiles mapped to blocks and their elements to threads: one thread
    per output element, or eight of a body of loads, stores and arithmetic
    (256 apart, loads first). A `linalg.copy` or `linalg.fill` of whole
    rows (unit innermost stride, a static row size in 16-byte multiples,
    rows on 16-byte boundaries) moves 16 bytes an access instead:
    `vector.load` / `vector.store` of the rows' pieces, eight a thread.
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect",
    "mlir::gpu::GPUDialect",
    "mlir::scf::SCFDialect",
    "mlir::vector::VectorDialect",
  ];
  let statistics = [
    Statistic<"numMapped", "num-mapped", "Linalg ops mapped to GPU loops">,
  ];
}

def ConvertLinAttnToGPU : Pass<"convert-linattn-to-gpu", "mlir::ModuleOp"> {
  let summary = "Turn lowered LinAttn algorithms into GPU kernels on device buffers";
  let description = [{
    Runs on bufferized IR whose parallel loops carry a GPU mapping
    (`gpu-map-parallel-loops` right after `convert-linattn-to-loops`):

    - mapped `scf.parallel` nests become `gpu.launch` (for the recurrence:
      blocks over (B, HV), threads over the V state columns);
    - a host global a kernel reads (a bufferized constant tensor) is
      copied into a device buffer, which the kernel reads instead;
    - host buffers become device buffers: `memref.alloc` / `dealloc` /
      `copy` outside kernels become `gpu.alloc` / `gpu.dealloc` /
      `gpu.memcpy` (the function's memref arguments are device pointers);
    - every host buffer the function does not return is freed after the
      last op of its block that uses it or a view of it (upstream's
      ownership-based deallocation refuses kernels whose barriers and async
      copies declare no memory effects); one leaving its block through a
      region's yield, or reaching an op that may alias it without being a
      view, is an error;
    - any other host access to a buffer (a load, a store or a linalg op
      outside a kernel) is an error naming the op: that algorithm has no
      GPU mapping yet.
  }];
  let options = [
    Option<"maxUnroll", "max-unroll", "int64_t", /*default=*/"256",
           "Fully unroll innermost constant loops of at most this many trips "
           "inside kernels (0: none), so state columns live in registers">,
  ];
  let dependentDialects = [
    "mlir::gpu::GPUDialect",
    "mlir::memref::MemRefDialect",
  ];
  let statistics = [
    Statistic<"numKernels", "num-kernels", "Parallel loop nests made kernels">,
    Statistic<"numDeviceBuffers", "num-device-buffers",
              "Host buffers moved to the device">,
  ];
}

#endif // LINATTN_CONVERSION_PASSES_TD
