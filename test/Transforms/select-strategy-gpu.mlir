// RUN: linattn-opt %s -split-input-file --linattn-select-strategy=gpu-kernels=true | FileCheck %s
// RUN: linattn-opt %s -split-input-file --linattn-select-strategy='gpu-kernels=true explain=true' -o /dev/null 2>&1 | FileCheck %s --check-prefix=EXPLAIN
// What the GPU selection accepts compiles: linattn-to-nvvm's default
// strategy (auto) runs it, and every function gets its kernels.
// RUN: linattn-opt %s -split-input-file --linattn-to-nvvm=format=isa -o /dev/null
// The model's SM count must be positive here too.
// RUN: not linattn-opt %s -split-input-file --linattn-select-strategy='gpu-kernels=true sm-count=0' -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADSM
// BADSM: error: linattn-select-strategy: sm-count and assumed-batch must be positive, got 0 and 1

// On the GPU: chunked (C = 64) wherever its tensor-core kernels apply,
// but recurrent for the short T at which the fitted model
// (GPUCostModel.h) has the recurrent kernel faster (decode: one state
// read and write instead of the chunked kernels' launches); with a
// dynamic T the two are dispatched at run time. With a dynamic B too every
// B takes at least the shortest limit over B in {1, 4, 16, 64, 256}, and
// past it each range of batches [2^i, 2^(i+1)) up to 1024 its own limit
// where the model has the recurrent kernel under 0.85x the chunked time
// at both ends, chosen by a chain of selects on B from the last range down.
// Recurrent where the kernels do not apply.

// CHECK-LABEL: func.func @gated_delta_bf16
// CHECK:         %[[T:.*]] = tensor.dim %arg0, %c1
// Gated delta at H = 8, K = V = 128: 29 at B = 1-7 (the shortest over the
// planned batches), longer where the model has the recurrent kernel
// under 0.85x the chunked time: 35 at B = 8-15 down to 30 from B = 128.
// CHECK:         %[[B:.*]] = tensor.dim %arg0, %c0
// CHECK:         %[[B128:.*]] = arith.cmpi ult, %[[B]], %c128
// CHECK:         arith.select %[[B128]], %c31, %c30
// CHECK:         arith.cmpi ult, %[[B]], %c64
// CHECK:         arith.cmpi ult, %[[B]], %c32
// CHECK:         arith.cmpi ult, %[[B]], %c16
// CHECK:         %[[B8:.*]] = arith.cmpi ult, %[[B]], %c8
// CHECK:         %[[LIMIT:.*]] = arith.select %[[B8]], %c29, %{{.*}}
// CHECK:         %[[SHORT:.*]] = arith.cmpi ule, %[[T]], %[[LIMIT]]
// CHECK:         scf.if %[[SHORT]]
// CHECK:           linattn.recurrence gated_delta {{.*}} {linattn.seq_len_range = array<i64: 1, 35>, linattn.strategy = "recurrent"}
// CHECK:         } else {
// CHECK:           linattn.recurrence gated_delta {{.*}} {linattn.chunk_size = 64 : i64, linattn.seq_len_range = array<i64: 30, -1>, linattn.strategy = "chunked"}
// EXPLAIN: remark: linattn GPU strategy for gated_delta: T is dynamic: recurrent for T <= the limit of B below (decode; split-key kernel), else chunked C=64 (tensor-core kernels apply)
// EXPLAIN-NEXT: recurrent while the fitted model has it faster: up to T = 29 at B = 1-7, 35 at B = 8-15, 34 at B = 16-31, 32 at B = 32-63, 31 at B = 64-127, 30 at B >= 128 (B is dynamic: at least the limit B = 1 sets, the shortest over B in {1, 4, 16, 64, 256}; past it a range of B takes the recurrent kernel where the model has it under 0.85x the chunked time at both ends; compared at run time)
// EXPLAIN-NEXT: fitted model at B = 1, T = 29: recurrent {{ *}}{{[0-9.]+}} us = launch {{.*}} + 29 token steps x {{.*}} (recurrent_delta)
// EXPLAIN-NEXT: chunked {{ *}}{{[0-9.]+}} us = launches {{.*}} + 1 chunk steps x 1 wave(s) {{.*}} (chunked_delta)
// EXPLAIN-NEXT: fitted model at B = 1, T = 30: recurrent
// EXPLAIN-NEXT: chunked
// Its state pass, chosen at run time (linattn-narrow-state-blocks,
// linattn-widen-state-blocks): HV * V = 1024 state columns a sequence
// against 16 x 132 (narrow blocks) and 32 x 132 SMs (wide blocks).
// EXPLAIN-NEXT: state pass, chosen at run time: segment maps of 16 chunks (each segment's K x K map, then the state pass again from the segments' entering states) where B * HV * V <= 1056 (B <= 1) and T > 8192 tokens; 16-column state-pass blocks (two warps, twice the blocks) where B * HV * V <= 2112 (B <= 2), else 32-column blocks, and 64-column blocks (eight warps, half the blocks) where B * HV * V > 4224 (B >= 5)
func.func @gated_delta_bf16(%q: tensor<?x?x8x128xbf16>, %v: tensor<?x?x8x128xbf16>, %g: tensor<?x?x8xf32>, %b: tensor<?x?x8xf32>, %s0: tensor<?x8x128x128xf32>) -> (tensor<?x?x8x128xbf16>, tensor<?x8x128x128xf32>) {
  %o, %s = linattn.recurrence gated_delta q(%q) k(%q) v(%v) gate(%g) beta(%b) state(%s0)
      : (tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x8x128x128xf32>) -> (tensor<?x?x8x128xbf16>, tensor<?x8x128x128xf32>)
  return %o, %s : tensor<?x?x8x128xbf16>, tensor<?x8x128x128xf32>
}

// -----

// CHECK-LABEL: func.func @decode_f16
// CHECK: linattn.recurrence scalar_gate {{.*}} {linattn.strategy = "recurrent"}
// EXPLAIN: remark: linattn GPU strategy for scalar_gate: recurrent (split-key kernel) (tensor-core kernels apply)
func.func @decode_f16(%q: tensor<2x1x4x64xf16>, %v: tensor<2x1x4x128xf16>, %g: tensor<2x1x4xf32>, %s0: tensor<2x4x64x128xf32>) -> (tensor<2x1x4x128xf16>, tensor<2x4x64x128xf32>) {
  %o, %s = linattn.recurrence scalar_gate q(%q) k(%q) v(%v) gate(%g) state(%s0)
      : (tensor<2x1x4x64xf16>, tensor<2x1x4x64xf16>, tensor<2x1x4x128xf16>, tensor<2x1x4xf32>, tensor<2x4x64x128xf32>) -> (tensor<2x1x4x128xf16>, tensor<2x4x64x128xf32>)
  return %o, %s : tensor<2x1x4x128xf16>, tensor<2x4x64x128xf32>
}

// -----

// f32 inputs take the chunked kernels too (split into bf16 hi + lo).
// CHECK-LABEL: func.func @delta_f32
// CHECK: linattn.recurrence delta {{.*}} {linattn.seq_len_range = array<i64: 1, [[F32LIMIT:[0-9]+]]>, linattn.strategy = "recurrent"}
// CHECK: linattn.recurrence delta {{.*}} {linattn.chunk_size = 64 : i64, linattn.seq_len_range = array<i64: {{[0-9]+}}, -1>, linattn.strategy = "chunked"}
// EXPLAIN: remark: linattn GPU strategy for delta: T is dynamic: recurrent for T <= the limit of B below (decode; split-key kernel), else chunked C=64 (tensor-core kernels apply)
// Both paths' estimates are the f32 families' (fitted on f32 rows).
// EXPLAIN: (recurrent_delta_f32)
// EXPLAIN-NEXT: (chunked_delta_f32)
func.func @delta_f32(%q: tensor<?x?x2x64xf32>, %v: tensor<?x?x2x64xf32>, %b: tensor<?x?x2xf32>, %s0: tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xf32>, tensor<?x2x64x64xf32>) {
  %o, %s = linattn.recurrence delta q(%q) k(%q) v(%v) beta(%b) state(%s0)
      : (tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2xf32>, tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xf32>, tensor<?x2x64x64xf32>)
  return %o, %s : tensor<?x?x2x64xf32>, tensor<?x2x64x64xf32>
}

// -----

// Nor for negeig, whose reflections carry the split's error past 1e-4.
// CHECK-LABEL: func.func @negeig_f32
// CHECK: linattn.recurrence negeig_delta {{.*}} {linattn.strategy = "recurrent"}
// EXPLAIN: remark: linattn GPU strategy for negeig_delta: recurrent ({{.*}}) (no chunked kernels: f32 inputs of a kind whose transitions reflect ('negeig_delta'): the split operands' error accumulates past 1e-4)
func.func @negeig_f32(%q: tensor<?x?x2x64xf32>, %v: tensor<?x?x2x64xf32>, %b: tensor<?x?x2xf32>, %s0: tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xf32>, tensor<?x2x64x64xf32>) {
  %o, %s = linattn.recurrence negeig_delta q(%q) k(%q) v(%v) beta(%b) state(%s0)
      : (tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2xf32>, tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xf32>, tensor<?x2x64x64xf32>)
  return %o, %s : tensor<?x?x2x64xf32>, tensor<?x2x64x64xf32>
}

// -----

// With per-key gates f32 inputs take the split kernels up to K = 128.
// CHECK-LABEL: func.func @gla_f32
// CHECK: linattn.recurrence key_gate {{.*}} {linattn.chunk_size = 64 : i64, linattn.seq_len_range = array<i64: {{[0-9]+}}, -1>, linattn.strategy = "chunked"}
// EXPLAIN: remark: linattn GPU strategy for key_gate: T is dynamic: recurrent for T <= the limit of B below (decode; split-key kernel), else chunked C=64 (tensor-core kernels apply)
func.func @gla_f32(%q: tensor<?x?x2x64xf32>, %v: tensor<?x?x2x64xf32>, %g: tensor<?x?x2x64xf32>, %s0: tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xf32>, tensor<?x2x64x64xf32>) {
  %o, %s = linattn.recurrence key_gate q(%q) k(%q) v(%v) gate(%g) state(%s0)
      : (tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xf32>, tensor<?x2x64x64xf32>)
  return %o, %s : tensor<?x?x2x64xf32>, tensor<?x2x64x64xf32>
}

// -----

// Above it, the recurrent kernel, and --linattn-explain says why.
// CHECK-LABEL: func.func @gla_f32_k160
// CHECK: linattn.recurrence key_gate {{.*}} {linattn.strategy = "recurrent"}
// EXPLAIN: remark: linattn GPU strategy for key_gate: recurrent ({{.*}}) (no chunked kernels: GPU chunked kernels take f32 inputs with per-key gates up to K = 128 (their split tiles' shared memory), got K = 160)
func.func @gla_f32_k160(%q: tensor<?x?x2x160xf32>, %v: tensor<?x?x2x160xf32>, %g: tensor<?x?x2x160xf32>, %s0: tensor<?x2x160x160xf32>) -> (tensor<?x?x2x160xf32>, tensor<?x2x160x160xf32>) {
  %o, %s = linattn.recurrence key_gate q(%q) k(%q) v(%v) gate(%g) state(%s0)
      : (tensor<?x?x2x160xf32>, tensor<?x?x2x160xf32>, tensor<?x?x2x160xf32>, tensor<?x?x2x160xf32>, tensor<?x2x160x160xf32>) -> (tensor<?x?x2x160xf32>, tensor<?x2x160x160xf32>)
  return %o, %s : tensor<?x?x2x160xf32>, tensor<?x2x160x160xf32>
}

// -----

// K = 48, a multiple of 16: chunked, at K = 64 (linattn-pad-head-dims).
// CHECK-LABEL: func.func @identity_k48
// CHECK: linattn.recurrence identity {{.*}} {linattn.chunk_size = 64 : i64, linattn.seq_len_range = array<i64: {{[0-9]+}}, -1>, linattn.strategy = "chunked"}
// EXPLAIN: remark: linattn GPU strategy for identity: T is dynamic: recurrent for T <= the limit of B below (decode; split-key kernel), else chunked C=64 (tensor-core kernels apply)
// EXPLAIN-NEXT:  chunked at K = 64, V = 64 (zero-padded from 48, 64: linattn-pad-head-dims)
// The chunked estimate is at the padded sizes, with the copies' share.
// EXPLAIN: chunked {{.*}} + padding to K = 64, V = 64 {{[0-9.]+}} us (chunked)
// A scalar transition's state pass runs in segments where few chains
// would leave SMs idle (linattn-segment-chunk-states), at the padded V.
// EXPLAIN: state pass, chosen at run time: segments of 16 chunks (the state pass parallel over T) where B * HV * V <= 2112 (B <= 16) and T > 1024 tokens, else one pass over the chunks, and 64-column blocks (eight warps, half the blocks) where B * HV * V > 4224 (B >= 34)
func.func @identity_k48(%q: tensor<?x?x2x48xbf16>, %v: tensor<?x?x2x64xbf16>, %s0: tensor<?x2x48x64xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x2x48x64xf32>) {
  %o, %s = linattn.recurrence identity q(%q) k(%q) v(%v) state(%s0)
      : (tensor<?x?x2x48xbf16>, tensor<?x?x2x48xbf16>, tensor<?x?x2x64xbf16>, tensor<?x2x48x64xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x2x48x64xf32>)
  return %o, %s : tensor<?x?x2x64xbf16>, tensor<?x2x48x64xf32>
}

// -----

// K = 40 is no multiple of 16: recurrent.
// CHECK-LABEL: func.func @identity_k40
// CHECK: linattn.recurrence identity {{.*}} {linattn.strategy = "recurrent"}
// EXPLAIN: remark: linattn GPU strategy for identity: recurrent (split-key kernel) (no chunked kernels: GPU chunked kernels need K = a multiple of 16 from 32 up to 256, got 40)
func.func @identity_k40(%q: tensor<?x?x2x40xbf16>, %v: tensor<?x?x2x64xbf16>, %s0: tensor<?x2x40x64xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x2x40x64xf32>) {
  %o, %s = linattn.recurrence identity q(%q) k(%q) v(%v) state(%s0)
      : (tensor<?x?x2x40xbf16>, tensor<?x?x2x40xbf16>, tensor<?x?x2x64xbf16>, tensor<?x2x40x64xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x2x40x64xf32>)
  return %o, %s : tensor<?x?x2x64xbf16>, tensor<?x2x40x64xf32>
}

// -----

// Per-key gates (GLA) have chunked kernels too, faster from fewer tokens
// than the delta rules' (the per-key decays cost the recurrent kernel a
// load and an exp per key and token; at H = 8, K = V = 128 measured level
// at T = 32, B = 16: 0.026 ms each, bench/results/gpu_strategy_grid_h200.jsonl).
// CHECK-LABEL: func.func @gla
// Its limit grows with B from 23 to 37 (at B = 128-255).
// CHECK: linattn.recurrence key_gate {{.*}} {linattn.seq_len_range = array<i64: 1, 37>, linattn.strategy = "recurrent"}
// CHECK: linattn.recurrence key_gate {{.*}} {linattn.chunk_size = 64 : i64, linattn.seq_len_range = array<i64: 24, -1>, linattn.strategy = "chunked"}
// EXPLAIN: remark: linattn GPU strategy for key_gate: T is dynamic: recurrent for T <= the limit of B below (decode; split-key kernel), else chunked C=64 (tensor-core kernels apply)
// EXPLAIN-NEXT: up to T = 23 at B = 1-63, 26 at B = 64-127,
// EXPLAIN: (recurrent_keygates)
// EXPLAIN: (chunked_keygates)
func.func @gla(%q: tensor<?x?x2x64xbf16>, %v: tensor<?x?x2x64xbf16>, %g: tensor<?x?x2x64xf32>, %s0: tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x2x64x64xf32>) {
  %o, %s = linattn.recurrence key_gate q(%q) k(%q) v(%v) gate(%g) state(%s0)
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>, tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x2x64x64xf32>)
  return %o, %s : tensor<?x?x2x64xbf16>, tensor<?x2x64x64xf32>
}

// -----

// A K the four lanes of a column cannot share evenly: the loop lowering's
// kernel, one thread per column.
// CHECK-LABEL: func.func @identity_k6
// CHECK: linattn.recurrence identity {{.*}} {linattn.strategy = "recurrent"}
// EXPLAIN: remark: linattn GPU strategy for identity: recurrent (one thread per column: K = 6 is not a multiple of 4) (no chunked kernels: {{.*}})
func.func @identity_k6(%q: tensor<?x?x1x6xf32>, %v: tensor<?x?x1x8xf32>, %s0: tensor<?x1x6x8xf32>) -> (tensor<?x?x1x8xf32>, tensor<?x1x6x8xf32>) {
  %o, %s = linattn.recurrence identity q(%q) k(%q) v(%v) state(%s0)
      : (tensor<?x?x1x6xf32>, tensor<?x?x1x6xf32>, tensor<?x?x1x8xf32>, tensor<?x1x6x8xf32>) -> (tensor<?x?x1x8xf32>, tensor<?x1x6x8xf32>)
  return %o, %s : tensor<?x?x1x8xf32>, tensor<?x1x6x8xf32>
}

// -----

// A static B: the limit at that B. Gated DeltaNet at B = 256 and T = 64:
// chunked (measured 0.388 against the recurrent kernel's 0.515 ms,
// bench/results/gpu_strategy_grid_h200.jsonl; at T = 32 the recurrent
// kernel's 0.278 against 0.369, so the paths cross between); at T = 8
// recurrent (0.102 against 0.335).
// CHECK-LABEL: func.func @gated_delta_b256_t64
// CHECK: linattn.recurrence gated_delta {{.*}} {linattn.chunk_size = 64 : i64, linattn.strategy = "chunked"}
// EXPLAIN: remark: linattn GPU strategy for gated_delta: chunked C=64 (tensor-core kernels apply)
// EXPLAIN-NEXT: recurrent while the fitted model has it faster: up to T = {{(3[3-9]|[45][0-9]|6[0-3])}} at B = 256{{$}}
// EXPLAIN-NEXT: fitted model at B = 256, T = 64: recurrent
func.func @gated_delta_b256_t64(%q: tensor<256x64x8x128xbf16>, %v: tensor<256x64x8x128xbf16>, %g: tensor<256x64x8xf32>, %b: tensor<256x64x8xf32>, %s0: tensor<256x8x128x128xf32>) -> (tensor<256x64x8x128xbf16>, tensor<256x8x128x128xf32>) {
  %o, %s = linattn.recurrence gated_delta q(%q) k(%q) v(%v) gate(%g) beta(%b) state(%s0)
      : (tensor<256x64x8x128xbf16>, tensor<256x64x8x128xbf16>, tensor<256x64x8x128xbf16>, tensor<256x64x8xf32>, tensor<256x64x8xf32>, tensor<256x8x128x128xf32>) -> (tensor<256x64x8x128xbf16>, tensor<256x8x128x128xf32>)
  return %o, %s : tensor<256x64x8x128xbf16>, tensor<256x8x128x128xf32>
}

// -----

// CHECK-LABEL: func.func @gated_delta_b256_t8
// CHECK: linattn.recurrence gated_delta {{.*}} {linattn.strategy = "recurrent"}
func.func @gated_delta_b256_t8(%q: tensor<256x8x8x128xbf16>, %v: tensor<256x8x8x128xbf16>, %g: tensor<256x8x8xf32>, %b: tensor<256x8x8xf32>, %s0: tensor<256x8x128x128xf32>) -> (tensor<256x8x8x128xbf16>, tensor<256x8x128x128xf32>) {
  %o, %s = linattn.recurrence gated_delta q(%q) k(%q) v(%v) gate(%g) beta(%b) state(%s0)
      : (tensor<256x8x8x128xbf16>, tensor<256x8x8x128xbf16>, tensor<256x8x8x128xbf16>, tensor<256x8x8xf32>, tensor<256x8x8xf32>, tensor<256x8x128x128xf32>) -> (tensor<256x8x8x128xbf16>, tensor<256x8x128x128xf32>)
  return %o, %s : tensor<256x8x8x128xbf16>, tensor<256x8x128x128xf32>
}

// -----

// Simple GLA: its chunked kernels (no UT transform) win from about 25
// tokens (measured at B = 256: T = 16 0.192 against the recurrent kernel's
// 0.137 ms, T = 32 0.198 against 0.223).
// CHECK-LABEL: func.func @simple_gla_decode
// CHECK: linattn.recurrence scalar_gate {{.*}} {linattn.seq_len_range = array<i64: 1, 23>, linattn.strategy = "recurrent"}
// CHECK: linattn.recurrence scalar_gate {{.*}} {linattn.chunk_size = 64 : i64, linattn.seq_len_range = array<i64: 24, -1>, linattn.strategy = "chunked"}
func.func @simple_gla_decode(%q: tensor<?x?x8x128xbf16>, %v: tensor<?x?x8x128xbf16>, %g: tensor<?x?x8xf32>, %s0: tensor<?x8x128x128xf32>) -> (tensor<?x?x8x128xbf16>, tensor<?x8x128x128xf32>) {
  %o, %s = linattn.recurrence scalar_gate q(%q) k(%q) v(%v) gate(%g) state(%s0)
      : (tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8xf32>, tensor<?x8x128x128xf32>) -> (tensor<?x?x8x128xbf16>, tensor<?x8x128x128xf32>)
  return %o, %s : tensor<?x?x8x128xbf16>, tensor<?x8x128x128xf32>
}

// -----

// Grouped value heads whose HV * V alone passes 16 x 132 (Qwen3-Next:
// 32 x 128): never narrow; 64-column blocks from B = 2 (B * HV * V >
// 32 x 132).
// CHECK-LABEL: func.func @gated_delta_hv32
// EXPLAIN: remark: linattn GPU strategy for gated_delta: T is dynamic
// EXPLAIN: state pass: 32-column blocks at B <= 1 (HV * V = 4096 > 2112), and 64-column blocks (eight warps, half the blocks) where B * HV * V > 4224 (B >= 2)
func.func @gated_delta_hv32(%q: tensor<?x?x16x128xbf16>, %v: tensor<?x?x32x128xbf16>, %g: tensor<?x?x32xf32>, %b: tensor<?x?x32xf32>, %s0: tensor<?x32x128x128xf32>) -> (tensor<?x?x32x128xbf16>, tensor<?x32x128x128xf32>) {
  %o, %s = linattn.recurrence gated_delta q(%q) k(%q) v(%v) gate(%g) beta(%b) state(%s0)
      : (tensor<?x?x16x128xbf16>, tensor<?x?x16x128xbf16>, tensor<?x?x32x128xbf16>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x32x128x128xf32>) -> (tensor<?x?x32x128xbf16>, tensor<?x32x128x128xf32>)
  return %o, %s : tensor<?x?x32x128xbf16>, tensor<?x32x128x128xf32>
}

// -----

// HV * V past both limits (64 x 128 = 8192 > 32 x 132): wide blocks at
// every B.
// CHECK-LABEL: func.func @gated_delta_hv64
// EXPLAIN: remark: linattn GPU strategy for gated_delta: T is dynamic
// EXPLAIN: state pass: 64-column blocks (eight warps, half the blocks) at every B (HV * V = 8192 > 2112)
func.func @gated_delta_hv64(%q: tensor<?x?x16x128xbf16>, %v: tensor<?x?x64x128xbf16>, %g: tensor<?x?x64xf32>, %b: tensor<?x?x64xf32>, %s0: tensor<?x64x128x128xf32>) -> (tensor<?x?x64x128xbf16>, tensor<?x64x128x128xf32>) {
  %o, %s = linattn.recurrence gated_delta q(%q) k(%q) v(%v) gate(%g) beta(%b) state(%s0)
      : (tensor<?x?x16x128xbf16>, tensor<?x?x16x128xbf16>, tensor<?x?x64x128xbf16>, tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<?x64x128x128xf32>) -> (tensor<?x?x64x128xbf16>, tensor<?x64x128x128xf32>)
  return %o, %s : tensor<?x?x64x128xbf16>, tensor<?x64x128x128xf32>
}

// -----

// HV * V past the few-chains limit with V = 96 (not a multiple of 64: no
// wide blocks): 32-column blocks at every B.
// CHECK-LABEL: func.func @gated_delta_v96
// EXPLAIN: remark: linattn GPU strategy for gated_delta: T is dynamic
// EXPLAIN: state pass: 32-column blocks at every B (HV * V = 3072 > 2112)
func.func @gated_delta_v96(%q: tensor<?x?x16x128xbf16>, %v: tensor<?x?x32x96xbf16>, %g: tensor<?x?x32xf32>, %b: tensor<?x?x32xf32>, %s0: tensor<?x32x128x96xf32>) -> (tensor<?x?x32x96xbf16>, tensor<?x32x128x96xf32>) {
  %o, %s = linattn.recurrence gated_delta q(%q) k(%q) v(%v) gate(%g) beta(%b) state(%s0)
      : (tensor<?x?x16x128xbf16>, tensor<?x?x16x128xbf16>, tensor<?x?x32x96xbf16>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x32x128x96xf32>) -> (tensor<?x?x32x96xbf16>, tensor<?x32x128x96xf32>)
  return %o, %s : tensor<?x?x32x96xbf16>, tensor<?x32x128x96xf32>
}
