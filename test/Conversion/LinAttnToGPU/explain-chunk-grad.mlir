// RUN: linattn-opt %s --convert-linattn-chunked-to-gpu=explain=true -split-input-file -verify-diagnostics -o /dev/null

// convert-linattn-chunked-to-gpu{explain} on the backward's chunk_grad and
// qk_grad: which kernels (or loops, and why) take chunk_grad, and whether a
// qk_grad takes its dq and dk, said before anything is lowered.

// Gated DeltaNet at K = V = 128 with two value heads a q/k head: the WY
// kernel by 64-column slabs, then the key gradients by key block (two a
// chunk), each two blocks an SM; dq and dk per value head, summed by
// qk_grad.
func.func @grouped_heads(%q: tensor<?x?x2x128xbf16>, %k: tensor<?x?x2x128xbf16>, %v: tensor<?x?x4x128xbf16>, %beta: tensor<?x?x4xf32>, %g: tensor<?x?x4xf32>, %w: tensor<?x?x4x128xbf16>, %u: tensor<?x?x4x128xf32>, %d: tensor<?x?x4x128xf32>, %s: tensor<?x?x4x128x128xf32>, %do: tensor<?x?x4x128xbf16>, %dd: tensor<?x?x4x128xf32>, %hs: tensor<?x?x4x128x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x4x128xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) {
  // expected-remark @+1 {{linattn GPU kernels for linattn.chunk_grad: the WY kernel by slabs (8 warps, 97280 bytes of shared memory, 2 blocks an SM) and the key kernel by key block (8 warps, 93696 bytes of shared memory, 2 a chunk); dq, dk per value head in f32, for qk_grad}}
  %dqh, %dkh, %dv, %dg, %db = linattn.chunk_grad q(%q) k(%k) v(%v) beta(%beta) gates(%g) w(%w) u(%u) new_values(%d) states(%s) grad_output(%do) grad_new_values(%dd) grad_states(%hs) {chunk_size = 64 : i64, rank1_scale = 1.000000e+00 : f32, scale = 0.088388 : f32}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x4x128xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4x128xbf16>, tensor<?x?x4x128xf32>, tensor<?x?x4x128xf32>, tensor<?x?x4x128x128xf32>, tensor<?x?x4x128xbf16>, tensor<?x?x4x128xf32>, tensor<?x?x4x128x128xf32>)
      -> (tensor<?x?x4x128xf32>, tensor<?x?x4x128xf32>, tensor<?x?x4x128xbf16>) grad_gates tensor<?x?x4xf32> grad_beta tensor<?x?x4xf32>
  // expected-remark @+1 {{linattn GPU kernel for linattn.qk_grad: a warp per (b, t, h) row, the shares of its 2 value heads summed}}
  %dq = linattn.qk_grad %q grad(%dqh) : (tensor<?x?x2x128xbf16>, tensor<?x?x4x128xf32>) -> tensor<?x?x2x128xbf16>
  // expected-remark @+1 {{linattn GPU kernel for linattn.qk_grad: a warp per (b, t, h) row, the shares of its 2 value heads summed}}
  %dk = linattn.qk_grad %k grad(%dkh) : (tensor<?x?x2x128xbf16>, tensor<?x?x4x128xf32>) -> tensor<?x?x2x128xbf16>
  return %dq, %dk, %dv, %dg, %db : tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x4x128xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>
}

// -----

// One value head a q/k head without qk_l2norm: chunk_grad returns dq and
// dk in bf16 itself (no qk_grad). DeltaNet, no gates.
func.func @one_value_head(%q: tensor<?x?x2x128xbf16>, %k: tensor<?x?x2x128xbf16>, %v: tensor<?x?x2x128xbf16>, %beta: tensor<?x?x2xf32>, %w: tensor<?x?x2x128xbf16>, %u: tensor<?x?x2x128xf32>, %d: tensor<?x?x2x128xf32>, %s: tensor<?x?x2x128x128xf32>, %do: tensor<?x?x2x128xbf16>, %dd: tensor<?x?x2x128xf32>, %hs: tensor<?x?x2x128x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2xf32>) {
  // expected-remark @+1 {{linattn GPU kernels for linattn.chunk_grad: the WY kernel by slabs (8 warps, 97024 bytes of shared memory, 2 blocks an SM) and the key kernel by key block (8 warps, 83200 bytes of shared memory, 2 a chunk); dq, dk: chunk_grad's own (one value head a q/k head, no qk_l2norm: no qk_grad)}}
  %dq, %dk, %dv, %db = linattn.chunk_grad q(%q) k(%k) v(%v) beta(%beta) w(%w) u(%u) new_values(%d) states(%s) grad_output(%do) grad_new_values(%dd) grad_states(%hs) {chunk_size = 64 : i64, rank1_scale = 1.000000e+00 : f32, scale = 0.088388 : f32}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2xf32>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xf32>, tensor<?x?x2x128xf32>, tensor<?x?x2x128x128xf32>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xf32>, tensor<?x?x2x128x128xf32>)
      -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>) grad_beta tensor<?x?x2xf32>
  return %dq, %dk, %dv, %db : tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2xf32>
}

// K = 96: not a multiple of the slab and key-block kernels' 64 columns,
// so the WY share takes the chunk's whole rows and the key gradients the
// kernel with a block per chunk (key blocks of 32 in a loop), and
// --explain says why.
func.func @k96(%q: tensor<?x?x2x96xbf16>, %k: tensor<?x?x2x96xbf16>, %v: tensor<?x?x2x96xbf16>, %beta: tensor<?x?x2xf32>, %w: tensor<?x?x2x96xbf16>, %u: tensor<?x?x2x96xf32>, %d: tensor<?x?x2x96xf32>, %s: tensor<?x?x2x96x96xf32>, %do: tensor<?x?x2x96xbf16>, %dd: tensor<?x?x2x96xf32>, %hs: tensor<?x?x2x96x96xf32>) -> (tensor<?x?x2x96xbf16>, tensor<?x?x2x96xbf16>, tensor<?x?x2x96xbf16>, tensor<?x?x2xf32>) {
  // expected-remark @+1 {{linattn GPU kernels for linattn.chunk_grad: the WY kernel (4 warps, 162560 bytes of shared memory; not by slabs: it takes K and V multiples of 64 up to 256) and the key kernel (4 warps, 129280 bytes of shared memory; not by key block: it takes K and V multiples of 64 up to 256); dq, dk: chunk_grad's own (one value head a q/k head, no qk_l2norm: no qk_grad)}}
  %dq, %dk, %dv, %db = linattn.chunk_grad q(%q) k(%k) v(%v) beta(%beta) w(%w) u(%u) new_values(%d) states(%s) grad_output(%do) grad_new_values(%dd) grad_states(%hs) {chunk_size = 64 : i64, rank1_scale = 1.000000e+00 : f32, scale = 0.088388 : f32}
      : (tensor<?x?x2x96xbf16>, tensor<?x?x2x96xbf16>, tensor<?x?x2x96xbf16>, tensor<?x?x2xf32>, tensor<?x?x2x96xbf16>, tensor<?x?x2x96xf32>, tensor<?x?x2x96xf32>, tensor<?x?x2x96x96xf32>, tensor<?x?x2x96xbf16>, tensor<?x?x2x96xf32>, tensor<?x?x2x96x96xf32>)
      -> (tensor<?x?x2x96xbf16>, tensor<?x?x2x96xbf16>, tensor<?x?x2x96xbf16>) grad_beta tensor<?x?x2xf32>
  return %dq, %dk, %dv, %db : tensor<?x?x2x96xbf16>, tensor<?x?x2x96xbf16>, tensor<?x?x2x96xbf16>, tensor<?x?x2xf32>
}

// -----

// Per-key gates with f32 keys (qk_l2norm's, GLA): the key kernel does not
// take them, so chunk_grad keeps its loops; qk_grad goes back through the
// norm.
func.func @loops(%qn: tensor<?x?x2x64xf32>, %kn: tensor<?x?x2x64xf32>, %q: tensor<?x?x2x64xbf16>, %k: tensor<?x?x2x64xbf16>, %v: tensor<?x?x2x64xbf16>, %g: tensor<?x?x2x64xf32>, %d: tensor<?x?x2x64xbf16>, %s: tensor<?x?x2x64x64xf32>, %do: tensor<?x?x2x64xbf16>, %dd: tensor<?x?x2x64xf32>, %hs: tensor<?x?x2x64x64xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>) {
  // expected-remark @+1 {{linattn GPU kernels for linattn.chunk_grad: loops (the key kernel: its gates are per key, its keys f32; by key block: its gates are per key); dq, dk per value head in f32, for qk_grad}}
  %dqh, %dkh, %dv, %dg = linattn.chunk_grad q(%qn) k(%kn) v(%v) gates(%g) new_values(%d) states(%s) grad_output(%do) grad_new_values(%dd) grad_states(%hs) {chunk_size = 64 : i64, scale = 0.125 : f32}
      : (tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64x64xf32>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>, tensor<?x?x2x64x64xf32>)
      -> (tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xbf16>) grad_gates tensor<?x?x2x64xf32>
  // expected-remark @+1 {{linattn GPU kernel for linattn.qk_grad: a warp per (b, t, h) row, back through qk_l2norm}}
  %dq = linattn.qk_grad %q grad(%dqh) {qk_l2norm} : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>) -> tensor<?x?x2x64xbf16>
  // expected-remark @+1 {{linattn GPU kernel for linattn.qk_grad: a warp per (b, t, h) row, back through qk_l2norm}}
  %dk = linattn.qk_grad %k grad(%dkh) {qk_l2norm} : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>) -> tensor<?x?x2x64xbf16>
  return %dq, %dk, %dv, %dg : tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>
}

// -----

// An f32 spec (forced chunked: the default keeps the adjoint's loop): the
// backward's kernels hold dO as 16-bit tiles, so chunk_grad keeps its loops
// and says why (this once failed inside the key kernel's lowering).
func.func @f32_operands(%q: tensor<?x?x2x64xf32>, %k: tensor<?x?x2x64xf32>, %v: tensor<?x?x2x64xf32>, %beta: tensor<?x?x2xf32>, %g: tensor<?x?x2xf32>, %w: tensor<?x?x2x64xf32>, %u: tensor<?x?x2x64xf32>, %d: tensor<?x?x2x64xf32>, %s: tensor<?x?x2x64x64xf32>, %do: tensor<?x?x2x64xf32>, %dd: tensor<?x?x2x64xf32>, %hs: tensor<?x?x2x64x64xf32>) -> (tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2xf32>, tensor<?x?x2xf32>) {
  // expected-remark @+1 {{linattn GPU kernels for linattn.chunk_grad: loops (the key kernel: its operands are f32, not 16-bit (f32 inputs)); dq, dk: chunk_grad's own (one value head a q/k head, no qk_l2norm: no qk_grad)}}
  %dq, %dk, %dv, %dg, %db = linattn.chunk_grad q(%q) k(%k) v(%v) beta(%beta) gates(%g) w(%w) u(%u) new_values(%d) states(%s) grad_output(%do) grad_new_values(%dd) grad_states(%hs) {chunk_size = 64 : i64, rank1_scale = 1.000000e+00 : f32, scale = 0.125 : f32}
      : (tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2xf32>, tensor<?x?x2xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64x64xf32>)
      -> (tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>) grad_gates tensor<?x?x2xf32> grad_beta tensor<?x?x2xf32>
  return %dq, %dk, %dv, %dg, %db : tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2xf32>, tensor<?x?x2xf32>
}

// -----

// Row gates without WY factors (simple GLA, Mamba-2): the key gradients
// by key block at four warps, which were faster than eight for this form
// (bench/NOTES.md kb1); no WY kernel, dv from the loops' nest.
func.func @row_gates_no_beta(%q: tensor<?x?x2x128xbf16>, %k: tensor<?x?x2x128xbf16>, %v: tensor<?x?x2x128xbf16>, %g: tensor<?x?x2xf32>, %d: tensor<?x?x2x128xf32>, %s: tensor<?x?x2x128x128xf32>, %do: tensor<?x?x2x128xbf16>, %dd: tensor<?x?x2x128xf32>, %hs: tensor<?x?x2x128x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2xf32>) {
  // expected-remark @+1 {{linattn GPU kernels for linattn.chunk_grad: the key kernel by key block (4 warps, 88320 bytes of shared memory, 2 a chunk); dq, dk: chunk_grad's own (one value head a q/k head, no qk_l2norm: no qk_grad)}}
  %dq, %dk, %dv, %dg = linattn.chunk_grad q(%q) k(%k) v(%v) gates(%g) new_values(%d) states(%s) grad_output(%do) grad_new_values(%dd) grad_states(%hs) {chunk_size = 64 : i64, scale = 0.088388 : f32}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2xf32>, tensor<?x?x2x128xf32>, tensor<?x?x2x128x128xf32>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xf32>, tensor<?x?x2x128x128xf32>)
      -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>) grad_gates tensor<?x?x2xf32>
  return %dq, %dk, %dv, %dg : tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2xf32>
}

// -----

// Heads above 128 (negeig's split W at K = 128, V = 256), where the WY
// share's whole rows would need 310016 bytes: its 64-column slabs, the
// split W's two parts in the slab tiles, two blocks an SM; the key
// gradients by key block.
func.func @wide_values(%q: tensor<?x?x2x128xbf16>, %k: tensor<?x?x2x128xbf16>, %v: tensor<?x?x4x256xbf16>, %beta: tensor<?x?x4xf32>, %w: tensor<?x?x4x2x128xbf16>, %u: tensor<?x?x4x256xf32>, %d: tensor<?x?x4x256xf32>, %s: tensor<?x?x4x128x256xf32>, %do: tensor<?x?x4x256xbf16>, %dd: tensor<?x?x4x256xf32>, %hs: tensor<?x?x4x128x256xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x4x256xbf16>, tensor<?x?x4xf32>) {
  // expected-remark @+1 {{linattn GPU kernels for linattn.chunk_grad: the WY kernel by slabs (8 warps, 97024 bytes of shared memory, 2 blocks an SM) and the key kernel by key block (8 warps, 83200 bytes of shared memory, 2 a chunk); dq, dk per value head in f32, for qk_grad}}
  %dqh, %dkh, %dv, %db = linattn.chunk_grad q(%q) k(%k) v(%v) beta(%beta) w(%w) u(%u) new_values(%d) states(%s) grad_output(%do) grad_new_values(%dd) grad_states(%hs) {chunk_size = 64 : i64, rank1_scale = 2.000000e+00 : f32, scale = 0.088388 : f32}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x4x256xbf16>, tensor<?x?x4xf32>, tensor<?x?x4x2x128xbf16>, tensor<?x?x4x256xf32>, tensor<?x?x4x256xf32>, tensor<?x?x4x128x256xf32>, tensor<?x?x4x256xbf16>, tensor<?x?x4x256xf32>, tensor<?x?x4x128x256xf32>)
      -> (tensor<?x?x4x128xf32>, tensor<?x?x4x128xf32>, tensor<?x?x4x256xbf16>) grad_beta tensor<?x?x4xf32>
  // expected-remark @+1 {{linattn GPU kernel for linattn.qk_grad: a warp per (b, t, h) row, the shares of its 2 value heads summed}}
  %dq = linattn.qk_grad %q grad(%dqh) : (tensor<?x?x2x128xbf16>, tensor<?x?x4x128xf32>) -> tensor<?x?x2x128xbf16>
  // expected-remark @+1 {{linattn GPU kernel for linattn.qk_grad: a warp per (b, t, h) row, the shares of its 2 value heads summed}}
  %dk = linattn.qk_grad %k grad(%dkh) : (tensor<?x?x2x128xbf16>, tensor<?x?x4x128xf32>) -> tensor<?x?x2x128xbf16>
  return %dq, %dk, %dv, %db : tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x4x256xbf16>, tensor<?x?x4xf32>
}
