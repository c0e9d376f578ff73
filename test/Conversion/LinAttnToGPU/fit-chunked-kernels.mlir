// RUN: linattn-opt %s -split-input-file --linattn-fit-chunked-kernels | FileCheck %s
// RUN: linattn-opt %s -split-input-file --linattn-fit-chunked-kernels=explain=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=EXPLAIN
// linattn-to-nvvm's default strategy runs the pass after the selector, so
// every spec here compiles (the recurrent kernel takes what the chunked
// ones cannot).
// RUN: linattn-opt %s -split-input-file --linattn-to-nvvm=format=isa -o /dev/null
// Options it cannot try with are errors, not a silent recurrent choice.
// RUN: not linattn-opt %s --linattn-fit-chunked-kernels=chunk-size=0 2>&1 | FileCheck %s --check-prefix=BAD-CHUNK
// RUN: not linattn-opt %s --linattn-fit-chunked-kernels=chip=sm_75 2>&1 | FileCheck %s --check-prefix=BAD-CHIP
// BAD-CHUNK: error: linattn-fit-chunked-kernels: chunk-size must be positive, got 0
// BAD-CHIP: error: linattn-fit-chunked-kernels: chip 'sm_75' cannot run LinAttn's GPU code
//
// A chunked choice whose kernels would not fit a block's shared memory
// becomes recurrent; one whose kernels fit stays.

// A chunk the kernels do not take (128 tokens: the UT transform's are 64).
// CHECK-LABEL: func.func @negeig_chunk128
// CHECK: linattn.recurrence negeig_delta {{.*}} {linattn.strategy = "recurrent"}
// EXPLAIN: remark: linattn GPU strategy for negeig_delta: recurrent (the chunked kernels do not fit: 'linattn.ut_transform' op GPU chunked kernels take chunk_size = 64 (the UT transform), got 128)
func.func @negeig_chunk128(%q: tensor<?x?x2x64xbf16>, %v: tensor<?x?x2x64xbf16>, %b: tensor<?x?x2xf32>, %s0: tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x2x64x64xf32>) {
  %o, %s = linattn.recurrence negeig_delta q(%q) k(%q) v(%v) beta(%b) state(%s0) {linattn.chunk_size = 128 : i64, linattn.strategy = "chunked"}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2xf32>, tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x2x64x64xf32>)
  return %o, %s : tensor<?x?x2x64xbf16>, tensor<?x2x64x64xf32>
}

// -----

// negeig_delta's split W at K = V = 256 fits: its state pass in one input
// stage (110 KB a stage; two needed 235568 bytes), its copies in turn with
// the step that reads them.
// CHECK-LABEL: func.func @negeig_k256
// CHECK: linattn.recurrence negeig_delta {{.*}} {linattn.chunk_size = 64 : i64, linattn.strategy = "chunked"}
func.func @negeig_k256(%q: tensor<?x?x2x256xbf16>, %v: tensor<?x?x2x256xbf16>, %b: tensor<?x?x2xf32>, %s0: tensor<?x2x256x256xf32>) -> (tensor<?x?x2x256xbf16>, tensor<?x2x256x256xf32>) {
  %o, %s = linattn.recurrence negeig_delta q(%q) k(%q) v(%v) beta(%b) state(%s0) {linattn.chunk_size = 64 : i64, linattn.strategy = "chunked"}
      : (tensor<?x?x2x256xbf16>, tensor<?x?x2x256xbf16>, tensor<?x?x2x256xbf16>, tensor<?x?x2xf32>, tensor<?x2x256x256xf32>) -> (tensor<?x?x2x256xbf16>, tensor<?x2x256x256xf32>)
  return %o, %s : tensor<?x?x2x256xbf16>, tensor<?x2x256x256xf32>
}

// -----

// Gated DeltaNet at K = V = 192 fits (its state pass in two stages).
// CHECK-LABEL: func.func @gated_delta_k192
// CHECK: linattn.recurrence gated_delta {{.*}} {linattn.chunk_size = 64 : i64, linattn.strategy = "chunked"}
// EXPLAIN-NOT: remark
func.func @gated_delta_k192(%q: tensor<?x?x2x192xbf16>, %v: tensor<?x?x2x192xbf16>, %g: tensor<?x?x2xf32>, %b: tensor<?x?x2xf32>, %s0: tensor<?x2x192x192xf32>) -> (tensor<?x?x2x192xbf16>, tensor<?x2x192x192xf32>) {
  %o, %s = linattn.recurrence gated_delta q(%q) k(%q) v(%v) gate(%g) beta(%b) state(%s0) {linattn.chunk_size = 64 : i64, linattn.strategy = "chunked"}
      : (tensor<?x?x2x192xbf16>, tensor<?x?x2x192xbf16>, tensor<?x?x2x192xbf16>, tensor<?x?x2xf32>, tensor<?x?x2xf32>, tensor<?x2x192x192xf32>) -> (tensor<?x?x2x192xbf16>, tensor<?x2x192x192xf32>)
  return %o, %s : tensor<?x?x2x192xbf16>, tensor<?x2x192x192xf32>
}

// -----

// {qk_l2norm} Gated DeltaNet at K = V = 256 fits: the normalised q and k
// are bf16 like the inputs (f32 ones made the state pass stage f32 keys,
// 240-307 KB, and it fell back to recurrent).
// CHECK-LABEL: func.func @gated_delta_l2norm_k256
// CHECK: linattn.recurrence gated_delta {{.*}} {linattn.chunk_size = 64 : i64, linattn.strategy = "chunked", qk_l2norm}
// EXPLAIN-NOT: remark
func.func @gated_delta_l2norm_k256(%q: tensor<?x?x2x256xbf16>, %v: tensor<?x?x2x256xbf16>, %g: tensor<?x?x2xf32>, %b: tensor<?x?x2xf32>, %s0: tensor<?x2x256x256xf32>) -> (tensor<?x?x2x256xbf16>, tensor<?x2x256x256xf32>) {
  %o, %s = linattn.recurrence gated_delta q(%q) k(%q) v(%v) gate(%g) beta(%b) state(%s0) {linattn.chunk_size = 64 : i64, linattn.strategy = "chunked", qk_l2norm}
      : (tensor<?x?x2x256xbf16>, tensor<?x?x2x256xbf16>, tensor<?x?x2x256xbf16>, tensor<?x?x2xf32>, tensor<?x?x2xf32>, tensor<?x2x256x256xf32>) -> (tensor<?x?x2x256xbf16>, tensor<?x2x256x256xf32>)
  return %o, %s : tensor<?x?x2x256xbf16>, tensor<?x2x256x256xf32>
}

// -----

// The backward: chunked (the forward's kernels recompute W, U, D and the
// chunk states) wherever those kernels fit, recorded on the adjoint; the
// remark says which of its own ops the tensor-core kernels take, and
// chunk_grad's blocks: eight warps (two column halves) wherever their
// staged tiles divide among 256 threads (per-key gates: K a multiple of
// 64 for the WY kernel's pair sums, 32 keys a half).
// CHECK-LABEL: func.func @gated_delta_backward
// CHECK: linattn.recurrence_grad gated_delta {{.*}} {linattn.strategy = "chunked"}
// EXPLAIN: remark: linattn GPU strategy for the backward of gated_delta: chunked C=64 (reverse chunk pass: tensor-core kernel; chunk_grad: the WY kernel by slabs (8 warps, 97280 bytes of shared memory, 2 blocks an SM) and the key kernel by key block (8 warps, 84480 bytes of shared memory, 1 a chunk); qk_grad: a warp per (b, t, h) row, the shares of its 2 value heads summed)
func.func @gated_delta_backward(%q: tensor<?x?x2x64xbf16>, %v: tensor<?x?x4x64xbf16>, %g: tensor<?x?x4xf32>,
    %b: tensor<?x?x4xf32>, %s0: tensor<?x4x64x64xf32>, %do: tensor<?x?x4x64xbf16>, %ds: tensor<?x4x64x64xf32>)
    -> (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x4x64x64xf32>) {
  %dq, %dk, %dv, %dg, %db, %ds0 = linattn.recurrence_grad gated_delta q(%q) k(%q) v(%v) gate(%g) beta(%b) state(%s0)
      grad_output(%do) grad_final_state(%ds)
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x4x64x64xf32>, tensor<?x?x4x64xbf16>, tensor<?x4x64x64xf32>)
      -> (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x4x64x64xf32>)
  return %dq, %dk, %dv, %dg, %db, %ds0 : tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x4x64x64xf32>
}

// -----

// negeig's backward: its W leaves the UT transform split (hi and lo
// parts), which the reverse pass and the WY kernel stage both (bench/NOTES.md
// b18, b19; the slab kernel in its slab tiles): every op of the backward
// on tensor cores.
// CHECK-LABEL: func.func @negeig_backward
// CHECK: linattn.recurrence_grad negeig_delta {{.*}} {linattn.strategy = "chunked"}
// EXPLAIN: remark: linattn GPU strategy for the backward of negeig_delta: chunked C=64 (reverse chunk pass: tensor-core kernel; chunk_grad: the WY kernel by slabs (8 warps, {{[0-9]+}} bytes of shared memory, 2 blocks an SM) and the key kernel by key block (8 warps, {{[0-9]+}} bytes of shared memory, {{[0-9]+}} a chunk); qk_grad: a warp per (b, t, h) row, the shares of its 2 value heads summed)
func.func @negeig_backward(%q: tensor<?x?x2x64xbf16>, %v: tensor<?x?x4x64xbf16>,
    %b: tensor<?x?x4xf32>, %s0: tensor<?x4x64x64xf32>, %do: tensor<?x?x4x64xbf16>, %ds: tensor<?x4x64x64xf32>)
    -> (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4xf32>, tensor<?x4x64x64xf32>) {
  %dq, %dk, %dv, %db, %ds0 = linattn.recurrence_grad negeig_delta q(%q) k(%q) v(%v) beta(%b) state(%s0)
      grad_output(%do) grad_final_state(%ds)
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4xf32>, tensor<?x4x64x64xf32>, tensor<?x?x4x64xbf16>, tensor<?x4x64x64xf32>)
      -> (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4xf32>, tensor<?x4x64x64xf32>)
  return %dq, %dk, %dv, %db, %ds0 : tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4xf32>, tensor<?x4x64x64xf32>
}

// -----

// f32 inputs: the forward's chunked kernels take them (split), the
// backward's take 16-bit operands only, so the chunked backward runs its
// reverse pass and chunk_grad as loops (still ~200x the adjoint's loop:
// bench/NOTES.md f5).
// CHECK-LABEL: func.func @delta_backward_f32
// CHECK: linattn.recurrence_grad delta {{.*}} {linattn.strategy = "chunked"}
// EXPLAIN: remark: linattn GPU strategy for the backward of delta: chunked C=64 (reverse chunk pass: loops (its operands are f32, not 16-bit (f32 inputs)); chunk_grad: loops (the key kernel: its operands are f32, not 16-bit (f32 inputs)); dq, dk: chunk_grad's own (one value head a q/k head, no qk_l2norm: no qk_grad))
func.func @delta_backward_f32(%q: tensor<?x?x2x32xf32>, %v: tensor<?x?x2x32xf32>,
    %b: tensor<?x?x2xf32>, %s0: tensor<?x2x32x32xf32>, %do: tensor<?x?x2x32xf32>, %ds: tensor<?x2x32x32xf32>)
    -> (tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>, tensor<?x?x2xf32>, tensor<?x2x32x32xf32>) {
  %dq, %dk, %dv, %db, %ds0 = linattn.recurrence_grad delta q(%q) k(%q) v(%v) beta(%b) state(%s0)
      grad_output(%do) grad_final_state(%ds)
      : (tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>, tensor<?x?x2xf32>, tensor<?x2x32x32xf32>, tensor<?x?x2x32xf32>, tensor<?x2x32x32xf32>)
      -> (tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>, tensor<?x?x2xf32>, tensor<?x2x32x32xf32>)
  return %dq, %dk, %dv, %db, %ds0 : tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>, tensor<?x?x2xf32>, tensor<?x2x32x32xf32>
}

// -----

// f32 with negeig's transitions keeps the adjoint's loop: its chunked
// backward missed f32's 1e-4 on hard inputs (bench/NOTES.md f5).
// CHECK-LABEL: func.func @negeig_backward_f32
// CHECK: linattn.recurrence_grad negeig_delta {{.*}} {linattn.strategy = "recurrent"}
// EXPLAIN: remark: linattn GPU strategy for the backward of negeig_delta: recurrent (f32 inputs with negeig's transitions: its chunked backward missed f32's 1e-4 on hard inputs)
func.func @negeig_backward_f32(%q: tensor<?x?x2x32xf32>, %v: tensor<?x?x2x32xf32>,
    %b: tensor<?x?x2xf32>, %s0: tensor<?x2x32x32xf32>, %do: tensor<?x?x2x32xf32>, %ds: tensor<?x2x32x32xf32>)
    -> (tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>, tensor<?x?x2xf32>, tensor<?x2x32x32xf32>) {
  %dq, %dk, %dv, %db, %ds0 = linattn.recurrence_grad negeig_delta q(%q) k(%q) v(%v) beta(%b) state(%s0)
      grad_output(%do) grad_final_state(%ds)
      : (tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>, tensor<?x?x2xf32>, tensor<?x2x32x32xf32>, tensor<?x?x2x32xf32>, tensor<?x2x32x32xf32>)
      -> (tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>, tensor<?x?x2xf32>, tensor<?x2x32x32xf32>)
  return %dq, %dk, %dv, %db, %ds0 : tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>, tensor<?x?x2x32xf32>, tensor<?x?x2xf32>, tensor<?x2x32x32xf32>
}

// -----

// DeltaNet's training shape (bf16, K = V = 128, no gates): the backward's
// kernels take it, so it is chunked. The trial reads any failure of the
// chunked lowering, a kernel whose IR does not verify included, as "does
// not fit": this case turns such a slip into a test failure instead of a
// silent adjoint's loop.
// CHECK-LABEL: func.func @delta_backward_k128
// CHECK: linattn.recurrence_grad delta {{.*}} {linattn.strategy = "chunked"}
// EXPLAIN: remark: linattn GPU strategy for the backward of delta: chunked C=64 (reverse chunk pass: tensor-core kernel; chunk_grad: the WY kernel by slabs (8 warps, 97024 bytes of shared memory, 2 blocks an SM) and the key kernel by key block (8 warps, 73984 bytes of shared memory, 2 a chunk); dq, dk: chunk_grad's own (one value head a q/k head, no qk_l2norm: no qk_grad))
func.func @delta_backward_k128(%q: tensor<?x?x8x128xbf16>, %v: tensor<?x?x8x128xbf16>,
    %b: tensor<?x?x8xf32>, %s0: tensor<?x8x128x128xf32>, %do: tensor<?x?x8x128xbf16>, %ds: tensor<?x8x128x128xf32>)
    -> (tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8xf32>, tensor<?x8x128x128xf32>) {
  %dq, %dk, %dv, %db, %ds0 = linattn.recurrence_grad delta q(%q) k(%q) v(%v) beta(%b) state(%s0)
      grad_output(%do) grad_final_state(%ds)
      : (tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8xf32>, tensor<?x8x128x128xf32>, tensor<?x?x8x128xbf16>, tensor<?x8x128x128xf32>)
      -> (tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8xf32>, tensor<?x8x128x128xf32>)
  return %dq, %dk, %dv, %db, %ds0 : tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8xf32>, tensor<?x8x128x128xf32>
}

// -----

// Per-key gates (GLA): the forward's kernels fit, so chunked; the
// backward's reverse pass and chunk_grad's key gradients are kernels
// (KDA's chunk_grad: the WY and key kernels, below).
// CHECK-LABEL: func.func @gla_backward
// CHECK: linattn.recurrence_grad key_gate {{.*}} {linattn.strategy = "chunked"}
// EXPLAIN: remark: linattn GPU strategy for the backward of key_gate: chunked C=64 (reverse chunk pass: tensor-core kernel, after the kernel of its per-key scores' share; chunk_grad: the key kernel (8 warps, 168192 bytes of shared memory; not by key block: its gates are per key); dq, dk: chunk_grad's own (one value head a q/k head, no qk_l2norm: no qk_grad))
func.func @gla_backward(%q: tensor<?x?x2x64xbf16>, %v: tensor<?x?x2x64xbf16>, %g: tensor<?x?x2x64xf32>,
    %s0: tensor<?x2x64x64xf32>, %do: tensor<?x?x2x64xbf16>, %ds: tensor<?x2x64x64xf32>)
    -> (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>, tensor<?x2x64x64xf32>) {
  %dq, %dk, %dv, %dg, %ds0 = linattn.recurrence_grad key_gate q(%q) k(%q) v(%v) gate(%g) state(%s0)
      grad_output(%do) grad_final_state(%ds)
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>, tensor<?x2x64x64xf32>, tensor<?x?x2x64xbf16>, tensor<?x2x64x64xf32>)
      -> (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>, tensor<?x2x64x64xf32>)
  return %dq, %dk, %dv, %dg, %ds0 : tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>, tensor<?x2x64x64xf32>
}

// -----

// KDA (per-key gates with WY factors): chunk_grad on both kernels, the WY
// kernel reducing its factors to dk's and dL/dG's shares.
// CHECK-LABEL: func.func @kda_backward
// CHECK: linattn.recurrence_grad kda {{.*}} {linattn.strategy = "chunked"}
// EXPLAIN: remark: linattn GPU strategy for the backward of kda: chunked C=64 (reverse chunk pass: tensor-core kernel, after the kernel of its per-key scores' share; chunk_grad: the WY kernel (8 warps, 150272 bytes of shared memory; not by slabs: its gates are per key) and the key kernel (8 warps, 168192 bytes of shared memory; not by key block: its gates are per key); dq, dk: chunk_grad's own (one value head a q/k head, no qk_l2norm: no qk_grad))
func.func @kda_backward(%q: tensor<?x?x2x64xbf16>, %v: tensor<?x?x2x64xbf16>, %g: tensor<?x?x2x64xf32>,
    %b: tensor<?x?x2xf32>, %s0: tensor<?x2x64x64xf32>, %do: tensor<?x?x2x64xbf16>, %ds: tensor<?x2x64x64xf32>)
    -> (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>, tensor<?x?x2xf32>, tensor<?x2x64x64xf32>) {
  %dq, %dk, %dv, %dg, %db, %ds0 = linattn.recurrence_grad kda q(%q) k(%q) v(%v) gate(%g) beta(%b) state(%s0)
      grad_output(%do) grad_final_state(%ds)
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>, tensor<?x?x2xf32>, tensor<?x2x64x64xf32>, tensor<?x?x2x64xbf16>, tensor<?x2x64x64xf32>)
      -> (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>, tensor<?x?x2xf32>, tensor<?x2x64x64xf32>)
  return %dq, %dk, %dv, %dg, %db, %ds0 : tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>, tensor<?x?x2xf32>, tensor<?x2x64x64xf32>
}

// -----

// KDA with {qk_l2norm}: the normalisation factored, the keys stay bf16, so
// both chunk_grad kernels take them as they take KDA's without it, in the
// same bytes (the WY kernel reads r from global memory with beta), and
// qk_grad adds the norms' share.
// CHECK-LABEL: func.func @kda_l2norm_backward
// EXPLAIN: remark: linattn GPU strategy for the backward of kda: chunked C=64 (reverse chunk pass: tensor-core kernel, after the kernel of its per-key scores' share; chunk_grad: the WY kernel (8 warps, 150272 bytes of shared memory; not by slabs: its gates are per key) and the key kernel (8 warps, 168192 bytes of shared memory; not by key block: its gates are per key); qk_grad: a warp per (b, t, h) row, back through qk_l2norm factored (the norms' share added))
func.func @kda_l2norm_backward(%q: tensor<?x?x2x64xbf16>, %v: tensor<?x?x2x64xbf16>, %g: tensor<?x?x2x64xf32>,
    %b: tensor<?x?x2xf32>, %s0: tensor<?x2x64x64xf32>, %do: tensor<?x?x2x64xbf16>, %ds: tensor<?x2x64x64xf32>)
    -> (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>, tensor<?x?x2xf32>, tensor<?x2x64x64xf32>) {
  %dq, %dk, %dv, %dg, %db, %ds0 = linattn.recurrence_grad kda q(%q) k(%q) v(%v) gate(%g) beta(%b) state(%s0)
      grad_output(%do) grad_final_state(%ds) {qk_l2norm}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>, tensor<?x?x2xf32>, tensor<?x2x64x64xf32>, tensor<?x?x2x64xbf16>, tensor<?x2x64x64xf32>)
      -> (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>, tensor<?x?x2xf32>, tensor<?x2x64x64xf32>)
  return %dq, %dk, %dv, %dg, %db, %ds0 : tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>, tensor<?x?x2xf32>, tensor<?x2x64x64xf32>
}
