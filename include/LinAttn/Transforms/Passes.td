//===- Passes.td - LinAttn transformation passes -----------*- tablegen -*-===//

#ifndef LINATTN_TRANSFORMS_PASSES_TD
#define LINATTN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def LinAttnEmitCInterface
    : Pass<"linattn-emit-c-interface", "mlir::ModuleOp"> {
  let summary = "Mark public functions for the C calling interface";
  let description = [{
    Sets `llvm.emit_c_interface` on every public `func.func` definition so
    that `convert-func-to-llvm` also emits `_mlir_ciface_<name>`, which takes
    memrefs as pointers to descriptors. Host programs (and `linattn-run`)
    call compiled specs through it.
  }];
}

def LinAttnEmitSignatures
    : Pass<"linattn-emit-signatures", "mlir::ModuleOp"> {
  let summary = "Record each public function's signature in the object";
  let description = [{
    For every public `func.func` with shaped arguments and results, adds an
    external constant string `__linattn_signature_<name>`, e.g.

        gated_deltanet(bf16[?,?,8,128],bf16[?,?,8,128],bf16[?,?,8,128],f32[?,?,8],f32[?,?,8],f32[?,8,128,128])->(bf16[?,?,8,128],f32[?,8,128,128])

    so that a runner without MLIR (linattn-gpu-run) can check inputs against
    the compiled function and build its memref descriptors. Where the
    arguments carry `linattn.role` (linattn-record-argument-roles), it also
    records `__linattn_roles_<name>`, e.g. `q,k,v,gate,beta,initial_state`
    (empty between commas for an argument of no recurrence), for
    `linattn-gpu-run --check-inputs`.
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

def LinAttnRecordArgumentRoles : Pass<"linattn-record-argument-roles",
                                      "mlir::ModuleOp"> {
  let summary = "Name each function argument after the recurrence operand it is";
  let description = [{
    Sets `linattn.role = "gate"` (q, k, v, gate, beta, initial_state; and
    grad_output, grad_final_state for `linattn.recurrence_grad`) on every
    argument of a public function that a `linattn.recurrence` or its
    adjoint takes directly, before the recurrences are lowered away, so that the roles
    reach the compiled object (`linattn-emit-signatures`) and a runner can
    check inputs by what they are (a log gate must be <= 0, beta in
    [0, 1]).
  }];
}

def LinAttnEmitStreamEntries
    : Pass<"linattn-emit-stream-entries", "mlir::ModuleOp"> {
  let summary = "Give each public GPU function a synchronous and a stream entry";
  let description = [{
    For GPU host code (after `convert-linattn-to-gpu`). Every public
    function `@f` becomes private `@__linattn_body_f` (calls to `@f` follow
    it), and two public functions with the C interface call it:

    - `@f(args)`: runs the call on the legacy default stream and returns
      when it is done;
    - `@f_async(%stream: !llvm.ptr, args)`: enqueues the call on `%stream`
      (a `CUstream`) and returns at once; results are ready when the stream
      reaches that point.

    Each brackets the body with `linattnCudaBeginCall(stream)` and
    `linattnCudaEndCall(synchronize)` from LinAttn's CUDA runtime: between
    them every stream the host code asks for is the call's stream, so
    allocations (stream-ordered, from a pool), launches and frees all queue
    on it without a host synchronisation. `runtime/include/linattn/Abi.h`
    documents the resulting C ABI. Run it after kernel outlining so that
    kernels keep their function's name.

    The caller frees every result, so each must be a buffer the call made:
    a function that returns one of its arguments, one buffer twice, or a
    constant is an error naming the result (it compiled silently before,
    and the caller's free failed at run time).
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::LLVM::LLVMDialect"];
}

def LinAttnCheckGPULimits : Pass<"linattn-check-gpu-limits"> {
  let summary = "Reject recurrences the GPU code is not generated for";
  let description = [{
    The first pass of `linattn-to-nvvm`: a `linattn.recurrence` whose key
    dimension K exceeds `kMaxGPUKeyDim` (2048, TargetInfo.h) is an error
    naming the limit and why (the recurrent kernel, every strategy's
    fallback, unrolls over K: its compile time grows past 10 s beyond it),
    instead of a compile that runs for minutes. The CPU pipeline has no
    such limit.
  }];
}

def LinAttnInsertInputChecks
    : Pass<"linattn-insert-input-checks", "mlir::ModuleOp"> {
  let summary = "Check a compiled GPU function's inputs before it runs";
  let description = [{
    For GPU host code (after `convert-linattn-to-gpu`, before
    `linattn-emit-signatures` and `linattn-emit-stream-entries`): each
    public function first calls LinAttn's CUDA runtime on every memref
    argument of f32, f16, bf16 or f64 elements, with the recurrence operand
    it is (`linattn.role`, from `linattn-record-argument-roles`). The
    runtime copies the argument to the host and reports its first element
    that is not finite, a log gate above 0 or a beta outside [0, 1], with
    its index, as a failed step of the call (the rest of the call is
    skipped; `linattnCudaGetFirstError()` says why), instead of silent
    NaN. `linattn-to-nvvm{check-inputs=true}` and `linattn-compile
    --check-inputs` add it; a checked call copies its inputs and waits for
    them, so it is for finding bad inputs, not for production.

    ```mlir
    func.func @f(%beta: memref<?x?x8xf32> {linattn.role = "beta"}, ...) {
      %u = memref.cast %beta : memref<?x?x8xf32> to memref<*xf32>
      func.call @linattnCudaCheckInputF32(%c3, %u, %role)
          : (i64, memref<*xf32>, !llvm.ptr) -> ()
      ...
    ```
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::LLVM::LLVMDialect"];
}

def LinAttnFuseIndependentLaunches
    : Pass<"linattn-fuse-independent-launches", "mlir::func::FuncOp"> {
  let summary = "Fuse consecutive independent launches into one";
  let description = [{
    For GPU host code (after `convert-linattn-to-gpu`). Two `gpu.launch`
    ops one after the other in a block, with only pure ops, allocations and
    `gpu.wait` between them, become one launch when neither reads or writes
    what the other writes, both have the same constant block size, single-
    block bodies, no dynamic shared memory, no attributions, no async
    tokens, no cluster, and bodies that take their block ids and grid from
    the launch's arguments (not `gpu.block_id`, `gpu.grid_dim` or the
    cluster ids, which would read the fused grid's). The fused grid is flat: n1 = x1 y1 z1 blocks
    run the first body, the next n2 = x2 y2 z2 the second, each block
    recovering its launch's (x, y, z) from its index (x = i mod x1, y =
    (i / x1) mod y1, z = i / (x1 y1); no division where y = z = 1), and
    each body seeing its own grid size. A chain of such launches becomes
    one. What that takes back: a launch each and the tail of each small
    grid, as in the padding of head sizes (`linattn-pad-head-dims`: a fill
    of each slab and a copy of each input, nine launches at K = V = 48,
    become one) and the two l2norm kernels of `{qk_l2norm}`.

    Accesses are compared by the memref each body reads or writes from
    outside it, traced through view-like ops to its root: different
    allocations never overlap, nor an allocation and a function argument;
    views of one root overlap unless some dimension's static ranges (of a
    subview taken from the root) are disjoint; two function arguments, or
    any other roots (an `scf.if` result), may alias. An op whose effects
    are not known keeps its launch apart.

    ```mlir
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %x1, %gy = %y, %gz = %c1) ... {
      ... fill of %slab at (%bx, %by) ...
    }
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %x2, %gy = %y, %gz = %c1) ... {
      ... copy of %q into %leading at (%bx, %by) ...
    }
    // becomes
    %n1 = arith.muli %x1, %y : index
    %n2 = arith.muli %x2, %y : index
    %n = arith.addi %n1, %n2 : index
    gpu.launch blocks(%i, %_, %_) in (%gx = %n, %gy = %c1, %gz = %c1) ... {
      scf.if %i < %n1 { (%i mod %x1, %i / %x1): ... fill ... }
      scf.if %i >= %n1 { %j = %i - %n1, (%j mod %x2, %j / %x2): ... copy ... }
    }
    ```
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::scf::SCFDialect"];
}

def LinAttnInsertAlignmentChecks
    : Pass<"linattn-insert-alignment-checks", "mlir::ModuleOp"> {
  let summary = "Check that a GPU function's arguments start on 16-byte boundaries";
  let description = [{
    For GPU host code (after `convert-linattn-to-gpu`): each public function
    first asserts, for every memref argument, that its first element's
    address (aligned pointer plus offset times the element's bytes) is a
    multiple of 16. The kernels load their inputs 16 bytes an access
    (`cp.async`, `ld.global.v4`), and a misaligned one would stop the call
    with a CUDA error that leaves the context unusable; the assert, made a
    report by `linattn-report-check-failures`, names the argument (its
    `linattn.role`) and skips the call's device work instead. Every
    `linattn-to-nvvm` pipeline runs it; linattn/Abi.h states the rule.

    ```mlir
    %p = memref.extract_aligned_pointer_as_index %q : memref<?x?x8x48xbf16> -> index
    %base, %offset, %sizes:4, %strides:4 = memref.extract_strided_metadata %q
    %bytes = arith.muli %offset, %c2 : index
    %first = arith.addi %p, %bytes : index
    %rem = arith.remui %first, %c16 : index
    %ok = arith.cmpi eq, %rem, %c0 : index
    cf.assert %ok, "f: argument #0 (q) must start on a 16-byte boundary (...)"
    ```
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::cf::ControlFlowDialect",
                           "mlir::memref::MemRefDialect"];
}

def LinAttnReportCheckFailures
    : Pass<"linattn-report-check-failures", "mlir::ModuleOp"> {
  let summary = "Report a failed run-time check through the CUDA runtime";
  let description = [{
    For GPU host code (after `linattn-emit-stream-entries`), which runs in
    someone else's process: each `cf.assert` in a host function (the
    shape checks of `linattn-insert-shape-checks`), which would abort the
    process, becomes a call of `linattnCudaCheckFailed(message)` where its
    condition fails. The runtime reports the message as it reports a failed
    CUDA call (one line, or the installed handler; the status
    `linattnCudaGetFirstError()`), and the rest of the running call is
    skipped: no kernel runs on shapes that disagree.

    ```mlir
    // before
    cf.assert %same, "linattn.recurrence: dimension T of 'v' does not match 'q'"
    // after
    scf.if %failed {
      func.call @linattnCudaCheckFailed(%message) : (!llvm.ptr) -> ()
    }
    ```
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::scf::SCFDialect",
                           "mlir::LLVM::LLVMDialect"];
}

def LinAttnGpuOccupancyHints
    : Pass<"linattn-gpu-occupancy-hints", "mlir::ModuleOp"> {
  let summary = "Keep registers from capping the occupancy shared memory allows";
  let description = [{
    For outlined kernels launched with a constant dynamic shared memory
    size S and constant block size: N = min(floor(shared-memory-per-sm /
    (S + reserved-shared-memory-per-block)), max-threads-per-sm / threads)
    blocks fit on an SM; where N >= 2 the kernel gets `nvvm.minctasm = N`
    (PTX `.minnctapersm`), so ptxas keeps each thread within 65536 / (N *
    threads) registers. Without it the UT kernel used 155 registers and ran
    3 blocks per SM where its 52 KB of shared memory allows 4. N is kept
    to at most 65536 / (min-registers-per-thread * threads): a kernel with
    little shared memory (the output kernel at K = 32: 24 KB, 9 blocks, 56
    registers) would otherwise spill its accumulators. A kernel asks for a
    higher floor of its own with `linattn.min_registers_per_thread = R` on
    its `gpu.dynamic_shared_memory` op (gpu-kernel-outlining carries the
    body's ops into the gpu.func, not the gpu.launch's attributes): the
    recurrent kernel's 96, five blocks at 88 registers where six spill.
    Defaults are the H200's (sm_90: 228 KB of shared memory and 2048
    threads per SM, 1 KB reserved per block).
  }];
  let options = [
    Option<"sharedMemoryPerSM", "shared-memory-per-sm", "int64_t",
           /*default=*/"233472", "Shared memory per SM in bytes">,
    Option<"reservedSharedMemoryPerBlock", "reserved-shared-memory-per-block",
           "int64_t", /*default=*/"1024",
           "Shared memory the system reserves per block in bytes">,
    Option<"maxThreadsPerSM", "max-threads-per-sm", "int64_t",
           /*default=*/"2048", "Resident threads per SM">,
    Option<"minRegistersPerThread", "min-registers-per-thread", "int64_t",
           /*default=*/"80",
           "Registers a thread keeps at least (the hint never asks for "
           "fewer)">,
  ];
  let dependentDialects = ["mlir::NVVM::NVVMDialect"];
  let statistics = [
    Statistic<"numHinted", "num-hinted", "Kernels given nvvm.minctasm">,
  ];
}

def LinAttnGenerateBackward
    : Pass<"linattn-generate-backward", "mlir::ModuleOp"> {
  let summary = "Add NAME_backward, the gradient of each public spec function";
  let description = [{
    For every public `func.func @NAME(q, k, v, [gate], [beta], s0) -> (o, s)`
    whose body is one `linattn.recurrence` of its arguments returning the
    recurrence's two results, adds

        func.func @NAME_backward(q, k, v, [gate], [beta], s0, do, ds)
            -> (dq, dk, dv, [dgate], [dbeta], ds0)

    whose body is the adjoint `linattn.recurrence_grad` (same kind and
    attributes): `do` and `ds` are dL/do and dL/ds, and the results are the
    gradients with respect to each argument, in argument order, each in its
    argument's shape (q, k, v's element type for them; f32 for gates, beta
    and the state). Public functions without a recurrence are left alone;
    one with a recurrence in any other form, or whose `NAME_backward`
    exists already, is an error naming it.
  }];
}

def LinAttnRecurrenceGradToChunked
    : Pass<"linattn-recurrence-grad-to-chunked"> {
  let summary = "Rewrite linattn.recurrence_grad into the chunked backward";
  let description = [{
    The adjoint in chunked form: every `linattn.recurrence_grad` becomes
    the forward's chunk ops, recomputing what the backward needs in f32
    (nothing is saved by the forward call), then the backward's:

        [linattn.l2norm]                q, k      (with qk_l2norm)
        [linattn.chunk_cumsum]          G         (gated kinds; constant_decay
                                                   gets g = log(gamma))
        [linattn.ut_transform]          W, U      (delta kinds)
        linattn.chunk_state_pass        D (f32), S_n
        linattn.chunk_state_pass_grad   dD, H_n, d initial_state
        linattn.chunk_grad              dq, dk per value head, dv,
                                        [dgate], [dbeta]
        linattn.qk_grad                 dq, dk    (summed over value heads,
                                                   back through qk_l2norm)

    Where each q/k head has one value head (HV = H) and the op has no
    `qk_l2norm`, linattn.qk_grad would only round dq and dk to q's and
    k's type: chunk_grad returns them in that type instead, and there is
    no qk_grad (one f32 copy of each fewer in memory, and no pass over it).

    Only the state passes are sequential over the chunks (and parallel
    over the state's value columns); everything else is parallel over
    (b, hv, chunk). The memory beyond inputs and outputs is the chunk
    states and their gradients (2 ceil(T / chunk-size) K V floats per (b,
    hv), S_n in bf16 with narrow-states where the keys are bf16), the [B, T, HV, K or V] f32 tensors D, dD, W, U and (HV > H or
    qk_l2norm) the per-value-head dq, dk, and the scratch of the new ops'
    loop lowerings (chunk-wide pair matrices, C floats per token and value
    head each: docs/backward.md has the measured peak). The rewrite applies to every adjoint whose
    recorded strategy (if any) is chunked.

    With `forward-w-form` (the GPU pipeline), the recomputed W takes
    the form the forward's chunked pipeline gives it (rounded or split as
    `linattn-lower-rank1-to-wy` makes it), so that the forward's kernels
    compute it; the chunk states and new values stay f32 (the gradients
    multiply them), and the backward's own ops read W as it is stored.

    With `narrow-states` (the default), S_n is stored in bf16 where the
    keys are bf16 (f32 otherwise): chunk_grad's products take it without
    splitting it into hi + lo parts, and the state pass carries the state
    in f32, so the rounding does not accumulate over chunks. H_n stays
    f32 (rounding it too took dgate past 5e-3 at T = 1).
  }];
  let options = [
    Option<"chunkSize", "chunk-size", "int64_t", /*default=*/"64",
           "Tokens per chunk">,
    Option<"forwardWForm", "forward-w-form", "bool",
           /*default=*/"false",
           "Recompute W as the forward's chunked form stores it (16-bit "
           "or split where the input keys are 16-bit, normalised or not)">,
    Option<"narrowStates", "narrow-states", "bool", /*default=*/"true",
           "Store the chunk states S_n in bf16 where the keys are bf16 "
           "(the state pass carries them in f32)">,
  ];
  let dependentDialects = [
    "mlir::arith::ArithDialect",
    "mlir::tensor::TensorDialect",
  ];
  let statistics = [
    Statistic<"numRewritten", "num-rewritten",
              "Adjoints rewritten into the chunked backward">,
  ];
}

def LinAttnInsertShapeChecks : Pass<"linattn-insert-shape-checks"> {
  let summary = "Check at run time the dimensions a recurrence needs equal";
  let description = [{
    Before every `linattn.recurrence`, emits `cf.assert` for each pair of
    operand dimensions that the semantics needs equal but the types leave
    dynamic (e.g. T of v against T of q), with a message naming both
    operands. Whatever algorithm then computes the recurrence, a bad call
    stops with that message instead of reading out of bounds. The pipelines
    run it first.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::cf::ControlFlowDialect",
                           "mlir::tensor::TensorDialect"];
}

def LinAttnRecurrenceToScan
    : Pass<"linattn-recurrence-to-scan"> {
  let summary = "Rewrite diagonal-transition recurrences as a scan of affine maps";
  let description = [{
    For kinds whose transition is diagonal (identity, constant_decay,
    scalar_gate, key_gate), each token is the affine map
    `S -> diag(exp(g_t)) S + k_t v_t^T`; the pass emits the elements
    `(g_t, k_t v_t^T)` (linalg.generic), a `linattn.scan` over T whose
    combiner composes two maps in log space,

        (g1, B1) then (g2, B2)  =  (g1 + g2, exp(g2) B1 + B2),

    with carry-in `(0, S_0)`, so that the scanned B is the state S_t of
    every token, and the output contraction `o_t = scale S_t^T q_t`. The
    composed map of a delta rule is a dense K x K matrix: those kinds are
    left alone (use the chunked form), or rejected with `require-all`.
  }];
  let options = [
    Option<"requireAll", "require-all", "bool", /*default=*/"false",
           "Fail on a recurrence that has no token-scan form (delta rules)">,
  ];
  let dependentDialects = [
    "mlir::arith::ArithDialect",
    "mlir::linalg::LinalgDialect",
    "mlir::math::MathDialect",
    "mlir::tensor::TensorDialect",
  ];
  let statistics = [
    Statistic<"numRewritten", "num-rewritten",
              "Number of recurrences rewritten to a token scan">,
  ];
}

def LinAttnPadHeadDims : Pass<"linattn-pad-head-dims"> {
  let summary = "Pad a chunked recurrence's head sizes to the kernels' multiple";
  let description = [{
    The chunked GPU kernels take K and V in multiples of `multiple` (32: a
    state-pass block's value columns, a warp's keys in 16-key k-steps).
    A recurrence given to the chunked strategies (or to every one, without
    a recorded choice) whose K or V is a multiple of 16 but not of
    `multiple` is computed at the sizes rounded up: q, k, per-key gates, v
    and the initial state are copied into zero-padded tensors (each padded
    dimension's slab past the input a `linalg.fill` of zeros, the input a
    `linalg.copy` into the leading slice, each written in place through
    `tensor.extract_slice` / `tensor.insert_slice`), the recurrence runs on
    them with its scale made explicit (`1 / sqrt(K)` of the unpadded K
    unless given), and o and the final state are sliced back (a
    `linalg.copy` of the leading slice). Fills and copies of whole rows
    are what `convert-linattn-linalg-to-gpu` moves 16 bytes an access.
    The padding is exact: a zero key
    column leaves its state row at zero (its updates are `k_i d^T` and its
    log gate is 0), a zero value column its state column; `{qk_l2norm}`'s
    norms do not see zeros.

        %o, %s = linattn.recurrence gated_delta q(%q) ... : (tensor<?x?x8x80xbf16>, ...)
          -> q, k, v, s0 padded to 96, the recurrence at 96 with
             scale = 0.1118, o and s sliced to 80
  }];
  let options = [
    Option<"multiple", "multiple", "int64_t", /*default=*/"32",
           "The multiple K and V are rounded up to">,
  ];
  let dependentDialects = [
    "mlir::arith::ArithDialect",
    "mlir::bufferization::BufferizationDialect",
    "mlir::linalg::LinalgDialect",
    "mlir::tensor::TensorDialect",
  ];
  let statistics = [
    Statistic<"numPadded", "num-padded", "Number of recurrences padded">,
  ];
}

def LinAttnRecurrenceToChunked
    : Pass<"linattn-recurrence-to-chunked"> {
  let summary = "Rewrite linattn.recurrence into the chunkwise two-pass form";
  let description = [{
    Splits T into chunks of `chunk-size` tokens and rewrites every
    `linattn.recurrence` into algorithm ops:

        [linattn.l2norm]            q, k        (with qk_l2norm)
        [linattn.chunk_cumsum]      G           (gated kinds; constant_decay
                                                 gets g = log(gamma) per token)
        linattn.chunk_state_pass    D, S_n, S_T (delta kinds in rank-1
                                                 product form, with beta)
        linattn.chunk_output        o

    Delta kinds keep the chunk's product of rank-1 transitions unexpanded;
    `linattn-lower-rank1-to-wy` turns it into WY/UT form.

    The chunk states S_n and the new values D only feed the output (its
    inter-chunk term Q S_n and intra-chunk term P D), so with 16-bit keys
    they are stored in the keys' type: half the bytes the state pass
    writes and the output reads. Their rounding does not accumulate: the
    state carried from chunk to chunk and D stay fp32 inside the state
    pass, and D is rounded after the cancellation D = U - W S_n. The final
    state is f32. A recurrence the selector gave to the segment scan, or
    every one with `narrow-intermediates=false`, keeps both f32: the
    segment scan computes its new values from f32 chunk states.
  }];
  let options = [
    Option<"chunkSize", "chunk-size", "int64_t", /*default=*/"64",
           "Tokens per chunk">,
    Option<"narrowIntermediates", "narrow-intermediates", "bool",
           /*default=*/"true",
           "Store the chunk states and new values (read only by the output) "
           "in the keys' type when it is 16-bit">,
  ];
  let dependentDialects = [
    "mlir::arith::ArithDialect",
    "mlir::tensor::TensorDialect",
  ];
  let statistics = [
    Statistic<"numRewritten", "num-rewritten",
              "Number of recurrences rewritten to the chunked form">,
  ];
}

def LinAttnNarrowStateBlocks
    : Pass<"linattn-narrow-state-blocks"> {
  let summary = "Narrow state-pass blocks where few chains would leave SMs idle";
  let description = [{
    The GPU state pass runs B * HV chains, each over V / 32 blocks of four
    warps (32 value columns), one block an SM. Where B * HV * V is at most
    `max-state-columns` (16 x the SMs: the blocks fill under half of them,
    as for one long sequence), blocks of 16 columns and two warps run
    twice the chains side by side and each chunk's step is shorter; where
    the SMs are full they would take twice the waves (bench/NOTES.md e1,
    w1). B is known at run time, so each `linattn.chunk_state_pass` whose
    transitions are not scalars (a rank-1 term or per-key gates; the
    scalar ones take `linattn-segment-chunk-states`' segments instead),
    the backward's recomputed forward pass among them, is kept in both
    widths behind an `scf.if` on B * HV * V, the narrow one marked
    `linattn.state_columns = 16`, which the GPU conversion reads. The
    backward's reverse pass (`linattn.chunk_state_pass_grad`) keeps 32
    columns: its 16-column kernel, whose two warps each stage two of the
    chunk's four score tiles, is slower even for one long sequence.

        %r:3 = scf.if (B * HV * V <= 2112) {
          linattn.chunk_state_pass ... {linattn.state_columns = 16 : i64, ...}
        } else {
          linattn.chunk_state_pass ... (32 columns)
        }
  }];
  let options = [
    Option<"maxStateColumns", "max-state-columns", "int64_t", /*default=*/"2112",
           "Narrow blocks where B * HV * V is at most this (positive)">,
  ];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::scf::SCFDialect",
                           "mlir::tensor::TensorDialect"];
  let statistics = [
    Statistic<"numNarrowed", "num-narrowed",
              "State passes given both block widths">,
  ];
}

def LinAttnWidenStateBlocks
    : Pass<"linattn-widen-state-blocks"> {
  let summary = "Wide state-pass blocks where many chains would take several waves";
  let description = [{
    The GPU state pass runs B * HV chains, each over V / 32 blocks of four
    warps, one block an SM, each chunk's step a latency-bound chain. Where
    B * HV * V exceeds `max-state-columns` (32 x the SMs: the 32-column
    blocks take more than one wave, as for grouped value heads or larger
    batches), blocks of 64 columns and eight warps take half the waves,
    each step about 1.6x as long (bench/NOTES.md w3). B is known at run
    time, so each `linattn.chunk_state_pass` not yet given a width (nor
    segmented) whose V is a multiple of 64, or 224 (the last block half
    past V: TargetInfo.h's hasWideStateBlocks), is kept in both widths behind
    an `scf.if` on B * HV * V, the wide one marked `linattn.state_columns
    = 64`, which the GPU conversion reads (a request: where its shared
    memory does not fit, the kernel keeps 32 columns):

        %r:3 = scf.if (B * HV * V <= 4224) {
          linattn.chunk_state_pass ... (32 columns)
        } else {
          linattn.chunk_state_pass ... {linattn.state_columns = 64 : i64, ...}
        }
  }];
  let options = [
    Option<"maxStateColumns", "max-state-columns", "int64_t", /*default=*/"4224",
           "Wide blocks where B * HV * V is above this (positive)">,
  ];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::scf::SCFDialect",
                           "mlir::tensor::TensorDialect"];
  let statistics = [
    Statistic<"numWidened", "num-widened",
              "State passes given both block widths">,
  ];
}

def LinAttnSegmentChunkStates
    : Pass<"linattn-segment-chunk-states"> {
  let summary = "Cut the inter-chunk state pass into independent segments";
  let description = [{
    The state pass is sequential over the chunks of a sequence: B * HV
    chains of NC steps. Where every chunk's transition is a scalar (no
    rank-1 term; row gates or none: linear attention, RetNet, simple GLA)
    the chain is an associative scan with a cheap combine, so it can be cut:
    each run of `segment-chunks` chunks starts from zero (the first from the
    initial state), and what it lacks is a decayed copy of one carry per
    segment, C_{s+1} = exp(L_s) C_s + E_s over the segments' end states.

    Rewrites such a `linattn.chunk_state_pass` whose chunk states only feed
    `linattn.chunk_output` into the segmented state pass (`segment_chunks`),
    `linattn.segment_carries` (the carries and the final state) and outputs
    that add each chunk's decayed carry to its local state. The segments
    run in parallel: more independent chains for the GPU's SMs, the same
    bytes (the carries are one state per segment). State passes with a
    per-key gates and no rank-1 term, or whose chunk states have other
    users, are left as they are by the scalar segments.

    Dense transitions (the WY form's `I - W^T K` per chunk, per-key gates)
    compose into K x K maps instead: `linattn.segment_maps` makes each
    segment's map [A_s | E_s] (a state pass over K + V columns from [I |
    0]), `linattn.segment_entries` the state entering every segment
    (C_{s+1} = A_s C_s + E_s) and the final state, and the state pass runs
    again, every segment from its entering state, for the chunk states and
    new values the outputs read unchanged. That is about three state
    passes' work on NS times the chains. Forced (`max-state-columns=0`)
    every such pass is cut; at run time only the WY form's, where B * HV *
    V <= `max-dense-state-columns` and the sequence has more than
    kDenseSegmentMinChunks chunks (on the H200 Gated DeltaNet at B = 1, H
    = 8, T = 32768: 1.05 -> 0.96 ms of kernel time; at B = 2 and for GLA it
    lost, bench/NOTES.md s1).

    Segments pay only while the sequential chains leave the machine idle
    (on the H200, B * HV * V / 32 state-pass blocks against 132 SMs: 1.2-2x
    at B <= 2, slower at B = 4; bench/NOTES.md c27), and B is known at run
    time. With `max-state-columns=N` the pass keeps both forms behind an
    `scf.if`: the segmented one where B * HV * V <= N and the sequence has
    more than `segment-chunks` chunks, the original elsewhere (a state pass
    whose outputs read values defined after it is left alone then).

        linattn-opt spec.mlir --linattn-select-strategy='gpu-kernels=true' \
          --linattn-recurrence-to-chunked --linattn-segment-chunk-states='segment-chunks=64'
  }];
  let options = [
    Option<"segmentChunks", "segment-chunks", "int64_t", /*default=*/"64",
           "Chunks per segment (a positive number)">,
    Option<"maxStateColumns", "max-state-columns", "int64_t", /*default=*/"0",
           "Segment at run time, only where B * HV * V is at most this and "
           "T spans more than one segment (0: always segment)">,
    Option<"maxDenseStateColumns", "max-dense-state-columns", "int64_t",
           /*default=*/"0",
           "With max-state-columns: segment the WY form's state passes by "
           "segment maps at run time where B * HV * V is at most this and T "
           "has more than kDenseSegmentMinChunks chunks (0: never)">,
  ];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::scf::SCFDialect",
                           "mlir::tensor::TensorDialect"];
  let statistics = [
    Statistic<"numSegmented", "num-segmented",
              "State passes cut into segments">,
  ];
}

def LinAttnLowerRank1ToWY
    : Pass<"linattn-lower-rank1-to-wy"> {
  let summary = "Lower products of rank-1 transitions to WY/UT form";
  let description = [{
    Rewrites a `linattn.chunk_state_pass` in rank-1 product form (operand
    `beta`: the chunk's transitions `a_t (I - c_t k_t k_t^T)` applied one by
    one) into `linattn.ut_transform`, which computes

        A = (I + StrictLower(diag(c) K K^T * exp(G_i - G_j)))^-1
        W = A diag(c exp(G)) K,     U = A diag(beta) V,

    and a state pass in WY form (`D = U - W S_n`), where everything but the
    triangular solve is a matrix product. U is f32. For the delta rule
    (rank1_scale = 1) W takes the keys' element type (bf16 keys: half the
    bytes the state pass reads), rounded once from fp32: its error enters
    S along the chunk's keys, which the next transitions damp. The
    negative-eigenvalue rule's reflections preserve that error, and it
    would accumulate over chunks: there W stays f32, or with `split-w`
    is split into two parts of the keys' 16-bit type (hi + lo, [B, T, HV,
    2, K]; about 16 significant bits), which 16-bit tensor cores read
    as they are. `split-w` leaves f32 keys and state passes the selector
    gave to the segment scan (whose ops take W whole) an f32 W.
  }];
  let options = [
    Option<"splitW", "split-w", "bool", /*default=*/"false",
           "Split the negative-eigenvalue rule's W into hi and lo parts of "
           "the keys' 16-bit type (for a state pass that stays sequential)">,
  ];
  let statistics = [
    Statistic<"numRewritten", "num-rewritten",
              "Number of rank-1 state passes rewritten to WY form">,
  ];
}

def LinAttnFuseChunkCumsum : Pass<"linattn-fuse-chunk-cumsum"> {
  let summary = "Fold each chunk_cumsum into the kernel of its first reader";
  let description = [{
    Decides on the algorithm ops what a GPU kernel computes on the way, so
    that each op's lowering lowers exactly the op it is given:

    - A scalar `linattn.chunk_cumsum` whose first reader is a
      `linattn.ut_transform` (every other reader after it in its block)
      becomes that transform's `raw_gates`: the transform sums the gates
      itself and returns G as its third result, which the later readers
      take. No cumsum kernel runs (Gated DeltaNet: bench/NOTES.md c22).
    - A per-key `linattn.chunk_cumsum` read by a `linattn.chunk_state_pass`
      without `beta` or segments (GLA; KDA in WY form) takes that state
      pass's keys: it returns the keys decayed to their chunk's end and the
      chunks' total gates, and the state pass reads those (`decayed_keys`),
      so that its loop stages one row of gates per chunk and decays nothing
      (NOTES c38). The cumsum moves to just before the state pass where
      that is its first reader (GLA), else stays in place where the keys
      are defined before it (KDA, whose UT transform reads G first).

    The results are the same to rounding: the fused forms compute the same
    sums and products. `linattn-to-nvvm` runs this pass before
    `convert-linattn-chunked-to-gpu`.

    ```mlir
    // before
    %G = linattn.chunk_cumsum %g {chunk_size = 64 : i64} : ...
    %w, %u = linattn.ut_transform k(%k) v(%v) beta(%beta) gates(%G) ...
    // after
    %w, %u, %G = linattn.ut_transform k(%k) v(%v) beta(%beta) raw_gates(%g) ...
    ```
  }];
  let statistics = [
    Statistic<"numIntoUTTransform", "num-into-ut-transform",
              "Number of scalar cumsums folded into a UT transform">,
    Statistic<"numDecayingKeys", "num-decaying-keys",
              "Number of per-key cumsums that decay their state pass's keys">,
  ];
}

def LinAttnFuseChunkOutput : Pass<"linattn-fuse-chunk-output"> {
  let summary = "Fold a chunk output into the state pass whose states only it reads";
  let description = [{
    A `linattn.chunk_output` reads back every chunk state S_n and the new
    values D that its `linattn.chunk_state_pass` wrote, and nothing else
    reads them: at Qwen3-Next's layer (B 1, T 4096) that is ~200 of the
    forward's ~570 MB. Where the state pass's kernel can form the outputs
    itself (chunked_kernels::hasFusedOutputPass: WY form, row gates or
    none, 16-bit q, k, D and S_n of one type, 64-token chunks, one block
    width, unsegmented), the pair becomes one
    `linattn.chunk_state_pass_output` and neither S_n nor D is stored. The
    CPU loops lower the fused op as the pair (the same arithmetic).
    `linattn-to-nvvm` runs this pass after `linattn-fuse-row-norms`, just
    before the chunked ops become kernels.

    ```mlir
    // before
    %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) w(%w)
        gates(%G) state(%s0) {chunk_size = 64 : i64} : ...
    %o = linattn.chunk_output q(%q) k(%k) new_values(%d) states(%states)
        gates(%G) {chunk_size = 64 : i64, scale = 0.088 : f32} : ...
    // after
    %o, %final = linattn.chunk_state_pass_output q(%q) k(%k) u(%u) w(%w)
        gates(%G) state(%s0) {chunk_size = 64 : i64, scale = 0.088 : f32} : ...
    ```
  }];
  let statistics = [
    Statistic<"numFused", "num-fused",
              "Number of chunk outputs folded into their state passes">,
  ];
}

def LinAttnFuseRowNorms : Pass<"linattn-fuse-row-norms"> {
  let summary = "Fold qk_l2norm's row norms into the kernels that read the rows";
  let description = [{
    A `linattn.rnorm` of `qk_l2norm` factored (a delta kind's chunked
    forward) is read by ops that stage the same rows anyway: the UT
    transform reads k's rows of its chunk (`k_rnorm`), the output reads
    q's (`q_rnorm`). Where every reader of an rnorm is one of those and
    takes it for the rows it reads, each reader forms the norms itself
    (`k_l2norm`, `q_l2norm`) and the rnorm goes: no kernel reads q and k
    only to write [B, T, H] scales. The results are the same to rounding
    (the same fp32 sums of squares, in another order). An rnorm with any
    other reader (the backward's, read by the gradient ops too) stays.
    `linattn-to-nvvm` runs this pass just before the chunked ops become
    kernels.

    ```mlir
    // before
    %rk = linattn.rnorm %k : tensor<?x?x16x128xbf16> -> tensor<?x?x16xf32>
    %w, %u, %G = linattn.ut_transform k(%k) k_rnorm(%rk) v(%v) beta(%beta)
        raw_gates(%g) {chunk_size = 64 : i64, rank1_scale = 1.0 : f32} : ...
    // after
    %w, %u, %G = linattn.ut_transform k(%k) v(%v) beta(%beta) raw_gates(%g)
        {chunk_size = 64 : i64, k_l2norm, rank1_scale = 1.0 : f32} : ...
    ```
  }];
  let statistics = [
    Statistic<"numFolded", "num-folded",
              "Number of row norms formed in their readers' kernels">,
  ];
}

def LinAttnStatePassToScan
    : Pass<"linattn-state-pass-to-scan"> {
  let summary = "Replace the sequential inter-chunk state pass by a scan";
  let description = [{
    The segment scan. Rewrites a `linattn.chunk_state_pass` in WY form (or
    without a rank-1 term) into

        linattn.chunk_transitions   (M_n, B_n): S_{n+1} = M_n S_n + B_n
        linattn.scan exclusive      S_n for every chunk, from (I, S_0)
        linattn.chunk_new_values    D = U - W S_n

    so that no step waits on the previous chunk: every chunk's transition
    is computed in parallel, and the scan composes them associatively
    (dense `(M2 M1, M2 B1 + B2)` for delta rules, log-space decays
    otherwise), which a target may evaluate as a tree over segments of
    chunks. Rank-1 product state passes are left to
    `linattn-lower-rank1-to-wy`; recurrences whose recorded strategy is not
    `segment-scan`, and state passes whose keys a cumsum already decayed
    (`decayed_keys`), are left alone.
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect",
    "mlir::linalg::LinalgDialect",
    "mlir::math::MathDialect",
    "mlir::tensor::TensorDialect",
  ];
  let statistics = [
    Statistic<"numRewritten", "num-rewritten",
              "Number of state passes rewritten to a segment scan">,
  ];
}

def LinAttnSelectStrategy
    : Pass<"linattn-select-strategy"> {
  let summary = "Choose each recurrence's algorithm and chunk size by shape";
  let description = [{
    Ranks recurrent, token scan, chunked and segment-scan (chunk sizes 16, 32
    and 64) with the cost model of docs/algorithms.md, over B * HV, T, K, V,
    the transition kind and the target's SM count, and records the choice on
    each `linattn.recurrence` as `linattn.strategy` (and
    `linattn.chunk_size`). The algorithm passes then rewrite the recurrences
    that name them.

    When T is dynamic the choice is made for every T: the recurrence is
    cloned into an `scf.if` chain on `tensor.dim %q, 1`, one clone per range
    of T with its own strategy (`linattn.seq_len_range = [lo, hi]`, hi = -1
    for unbounded). A dynamic B is taken as `assumed-batch`.

    With `gpu-kernels`, the choice is among the algorithms that have GPU
    kernels, by a model fitted to their measured H200 times
    (GPUCostModel.h, docs/gpu-strategy.md): `chunked` with C = 64
    wherever its tensor-core kernels apply (bf16 or f16 q, k, v; K and V
    multiples of 32 up to 256: what `convert-linattn-chunked-to-gpu`
    checks of the ops, asked of the spec through TargetInfo.h), except for
    the short T at which the model has the recurrent kernel faster (at the
    spec's B; for a dynamic B at least the shortest such T over B in {1,
    4, 16, 64, 256}, and per range of batches [2^i, 2^(i+1)) up to 1024 a
    longer one where the model has the recurrent kernel under 0.85x the
    chunked time at both ends, chosen at run time by selects on B);
    `recurrent` elsewhere. With `explain`, the remark gives
    that limit and both paths' fitted times. This is what
    `linattn-to-nvvm`'s default `strategy=auto` runs.
  }];
  let options = [
    Option<"smCount", "sm-count", "int64_t", /*default=*/"::mlir::linattn::kHopperSMs",
           "Streaming multiprocessors of the target (H200: 132)">,
    Option<"assumedBatch", "assumed-batch", "int64_t", /*default=*/"1",
           "B used by the cost model when B is dynamic">,
    Option<"gpuKernels", "gpu-kernels", "bool", /*default=*/"false",
           "Choose among the algorithms with GPU kernels, by the model fitted "
           "to their measured H200 times (GPUCostModel.h), instead of by the "
           "CPU cost model">,
    Option<"explain", "explain", "bool", /*default=*/"false",
           "Report the candidates, their estimates and the choice as remarks">,
  ];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::scf::SCFDialect",
                           "mlir::tensor::TensorDialect"];
  let statistics = [
    Statistic<"numSelected", "num-selected", "Recurrences given a strategy">,
    Statistic<"numDispatched", "num-dispatched",
              "Recurrences dispatched on a dynamic T">,
  ];
}

def LinAttnExplain
    : Pass<"linattn-explain"> {
  let summary = "Report each recurrence's candidate algorithms and choice";
  let description = [{
    For every `linattn.recurrence`, emits a remark listing each candidate
    algorithm with its estimated time on the target and the terms of the
    estimate, and the strategy recorded by `linattn-select-strategy` (or the
    one it would choose). Run after `--linattn-select-strategy` to see why a
    strategy was chosen:

        linattn-opt examples/gated_deltanet.mlir --linattn-select-strategy --linattn-explain
  }];
  let options = [
    Option<"smCount", "sm-count", "int64_t", /*default=*/"::mlir::linattn::kHopperSMs",
           "Streaming multiprocessors of the target (H200: 132)">,
    Option<"assumedBatch", "assumed-batch", "int64_t", /*default=*/"1",
           "B used by the cost model when B is dynamic">,
  ];
}

#endif // LINATTN_TRANSFORMS_PASSES_TD
