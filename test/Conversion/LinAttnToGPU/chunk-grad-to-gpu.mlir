// RUN: linattn-opt %s --convert-linattn-chunked-to-gpu -split-input-file | FileCheck %s
// RUN: linattn-opt %s --convert-linattn-chunked-to-gpu -split-input-file | FileCheck %s --check-prefix=MMA

// linattn.chunk_grad: two tensor-core kernels per (chunk, value head,
// sequence), no loops: the WY factors' share (P, [Y Z] = (I + L)^-T [dW
// dD], F = c dL, dv, dbeta), then dq, dk and the gates' gradient, which
// read P, F and Y where the first leaves them.
//
// The WY kernel by 64-column slabs (WYSlabGradKernel.cpp; bf16, K = V =
// 64): two slabs of split tiles (dD; S, W or U: 4 x 9216, under which the
// inverse's T and L f32 lie, 2 x 64 x 68 x 4), a key slab of K for P and
// then dW, Y and Z split (2 x 9216), T split (2 x 9216), P f32 (64 x 65 x
// 4 = 16640), the inverse's scratch and over it, once the inverse is
// done, dbeta's three row terms by quad and column half (6144), gates, c
// and beta (3 x 256): 97280 at any K and V, eight warps (the inverse by
// the first four), two blocks an SM.
//
// The key gradients by key block (KeyBlockGradKernel.cpp), eight warps
// (each 16 rows and half the columns), a block per (chunk x key block of
// 64, value head, sequence): a slab of V's tiles (dO, D split, S split, H
// split: 7 x 9216 = 64512; the pairs' dP~ and L split and M, 4 x 9216 +
// 16640, over them once the slabs are done), the key block's q and k (2 x
// 9216), gates 256, the rows' f64 terms by quad and column half 2 x 4096,
// <S, H>'s partials 2048, c 256: 93696, two blocks an SM. Its row terms
// leave f64 per (token, value head, key block), and a warp per chunk sums
// them into dgate.
// CHECK-LABEL: func.func @gated_delta(
// CHECK-NOT:     scf.parallel
// CHECK:         arith.constant 97280 : i32
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %{{.*}}, %{{.*}} = %c4{{[_0-9]*}}, %{{.*}} = %{{.*}}) threads(%{{.*}}) in (%{{.*}} = %c256{{[_0-9]*}}
// The inverse by the first four warps, their barriers named for 128 threads.
// CHECK:           nvvm.barrier id = %{{.*}} number_of_threads = %c128_i32
// CHECK:         memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?x4x1xf64>
// CHECK:         arith.constant 93696 : i32
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %{{.*}}, %{{.*}} = %c4{{[_0-9]*}}, %{{.*}} = %{{.*}}) threads(%{{.*}}) in (%{{.*}} = %c256{{[_0-9]*}}
// The slabs of V: a run-time loop carrying dP, dO S^T and D H^T (3 x 16
// per thread) and <S, H>'s partial.
// CHECK:           %{{.*}}:49 = scf.for {{.*}} to %c1{{[_0-9]*}} step %{{.*}} iter_args({{.*}}) -> ({{.*}}, f32, f64)
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %{{.*}}, %{{.*}} = %c4{{[_0-9]*}}, %{{.*}} = %{{.*}}) threads(%{{.*}}) in (%{{.*}} = %c32{{[_0-9]*}}
// CHECK-NOT:     scf.parallel
// CHECK-NOT:     linattn.chunk_grad
//
// The WY kernel, 240 products a warp of eight (16 rows, 32 columns of
// each 64-column product; each slab loop's body once): K K^T (4 tiles x 4
// k-steps = 16), dD S^T (both split: 48), T^T dW (48), Y W^T (Y split:
// 32), T^T dD (48), Z U^T (48). The
// key-block kernel, 256 a warp (16 rows x 32 keys): per slab (its loop's
// body, emitted once) dO D^T (D split: 32), dO S^T (32), D H^T (both
// split: 48); then Q K^T (16), dP~ K (32), dP~^T Q (32), L K and L^T K
// (L = F * E strictly lower: 2 x 32).
// MMA-LABEL: func.func @gated_delta(
// MMA-COUNT-240: nvvm.mma.sync
// MMA-NOT:       nvvm.mma.sync
// MMA:           gpu.launch
// MMA-COUNT-256: nvvm.mma.sync
// MMA-NOT:       nvvm.mma.sync
func.func @gated_delta(%q: tensor<?x?x2x64xbf16>, %k: tensor<?x?x2x64xbf16>, %v: tensor<?x?x4x64xbf16>, %beta: tensor<?x?x4xf32>, %g: tensor<?x?x4xf32>, %w: tensor<?x?x4x64xbf16>, %u: tensor<?x?x4x64xf32>, %d: tensor<?x?x4x64xf32>, %s: tensor<?x?x4x64x64xf32>, %do: tensor<?x?x4x64xbf16>, %dd: tensor<?x?x4x64xf32>, %hs: tensor<?x?x4x64x64xf32>) -> (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) {
  %dq, %dk, %dv, %dg, %db = linattn.chunk_grad q(%q) k(%k) v(%v) beta(%beta) gates(%g) w(%w) u(%u) new_values(%d) states(%s) grad_output(%do) grad_new_values(%dd) grad_states(%hs) {chunk_size = 64 : i64, rank1_scale = 1.000000e+00 : f32, scale = 0.125 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4x64xbf16>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64x64xf32>, tensor<?x?x4x64xbf16>, tensor<?x?x4x64xf32>, tensor<?x?x4x64x64xf32>)
      -> (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xbf16>) grad_gates tensor<?x?x4xf32> grad_beta tensor<?x?x4xf32>
  return %dq, %dk, %dv, %dg, %db : tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>
}

// -----

// S_n stored bf16 (linattn-recurrence-grad-to-chunked's narrow-states):
// both kernels copy it in by cp.async as it is, with no lo tile. The WY
// kernel takes dD S^T in two products (32, from 48: 224 a warp); the
// key-block kernel dO S^T in one (16: 240 a warp), and its slab tiles
// shrink to dO, D split, S, H split (6 x 9216 = 55296): 84480 bytes.
// CHECK-LABEL: func.func @narrow_states(
// CHECK:         arith.constant 97280 : i32
// CHECK:         gpu.launch
// CHECK:           nvgpu.device_async_copy {{.*}} : memref<?x?x4x64x64xbf16> to memref<64x72xbf16, #gpu.address_space<workgroup>>
// CHECK:         arith.constant 84480 : i32
// CHECK:         gpu.launch
// CHECK:           nvgpu.device_async_copy {{.*}} : memref<?x?x4x64x64xbf16> to memref<64x72xbf16, #gpu.address_space<workgroup>>
// CHECK-NOT:     vector.load {{.*}} : memref<?x?x4x64x64xbf16>
// CHECK:         gpu.launch
// CHECK-NOT:     scf.parallel
// MMA-LABEL: func.func @narrow_states(
// MMA-COUNT-224: nvvm.mma.sync
// MMA-NOT:       nvvm.mma.sync
// MMA:           gpu.launch
// MMA-COUNT-240: nvvm.mma.sync
// MMA-NOT:       nvvm.mma.sync
func.func @narrow_states(%q: tensor<?x?x2x64xbf16>, %k: tensor<?x?x2x64xbf16>, %v: tensor<?x?x4x64xbf16>, %beta: tensor<?x?x4xf32>, %g: tensor<?x?x4xf32>, %w: tensor<?x?x4x64xbf16>, %u: tensor<?x?x4x64xf32>, %d: tensor<?x?x4x64xf32>, %s: tensor<?x?x4x64x64xbf16>, %do: tensor<?x?x4x64xbf16>, %dd: tensor<?x?x4x64xf32>, %hs: tensor<?x?x4x64x64xf32>) -> (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) {
  %dq, %dk, %dv, %dg, %db = linattn.chunk_grad q(%q) k(%k) v(%v) beta(%beta) gates(%g) w(%w) u(%u) new_values(%d) states(%s) grad_output(%do) grad_new_values(%dd) grad_states(%hs) {chunk_size = 64 : i64, rank1_scale = 1.000000e+00 : f32, scale = 0.125 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4x64xbf16>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4x64xf32>, tensor<?x?x4x64x64xf32>)
      -> (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xbf16>) grad_gates tensor<?x?x4xf32> grad_beta tensor<?x?x4xf32>
  return %dq, %dk, %dv, %dg, %db : tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>
}

// -----

// A split W (negeig's, [B, T, HV, 2, K]: the UT transform's hi and lo
// parts): the slab kernel copies both parts of a key slab by cp.async
// into the slab tiles S's leave (no more bytes than gated_delta's 97280)
// and Y W^T takes three products (48, gated_delta's 32: 256 a warp); no
// loops.
// CHECK-LABEL: func.func @split_w(
// CHECK-NOT:     scf.parallel
// CHECK:         arith.constant 97280 : i32
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %{{.*}}, %{{.*}} = %c4{{[_0-9]*}}, %{{.*}} = %{{.*}}) threads(%{{.*}}) in (%{{.*}} = %c256{{[_0-9]*}}
// CHECK-COUNT-2:   nvgpu.device_async_copy {{.*}} : memref<?x?x4x2x64xbf16> to memref<64x72xbf16, #gpu.address_space<workgroup>>
// CHECK:         arith.constant 93696 : i32
// CHECK:         gpu.launch
// CHECK-NOT:     scf.parallel
// CHECK-NOT:     linattn.chunk_grad
// MMA-LABEL: func.func @split_w(
// MMA-COUNT-256: nvvm.mma.sync
// MMA-NOT:       nvvm.mma.sync
// MMA:           gpu.launch
func.func @split_w(%q: tensor<?x?x2x64xbf16>, %k: tensor<?x?x2x64xbf16>, %v: tensor<?x?x4x64xbf16>, %beta: tensor<?x?x4xf32>, %g: tensor<?x?x4xf32>, %w: tensor<?x?x4x2x64xbf16>, %u: tensor<?x?x4x64xf32>, %d: tensor<?x?x4x64xf32>, %s: tensor<?x?x4x64x64xf32>, %do: tensor<?x?x4x64xbf16>, %dd: tensor<?x?x4x64xf32>, %hs: tensor<?x?x4x64x64xf32>) -> (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) {
  %dq, %dk, %dv, %dg, %db = linattn.chunk_grad q(%q) k(%k) v(%v) beta(%beta) gates(%g) w(%w) u(%u) new_values(%d) states(%s) grad_output(%do) grad_new_values(%dd) grad_states(%hs) {chunk_size = 64 : i64, rank1_scale = 2.000000e+00 : f32, scale = 0.125 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4x2x64xbf16>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64x64xf32>, tensor<?x?x4x64xbf16>, tensor<?x?x4x64xf32>, tensor<?x?x4x64x64xf32>)
      -> (tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xbf16>) grad_gates tensor<?x?x4xf32> grad_beta tensor<?x?x4xf32>
  return %dq, %dk, %dv, %dg, %db : tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>
}

// -----

// Per-key gates (GLA, no WY factors): dv = dD by the loops' nest, then
// the key kernel in its per-key form. Shared memory at K = V = 64 (one key
// block of 64): the 11 split or 16-bit tiles of the row-gate kernel but L
// (9 x 9216), the landing tile (16384), the per-key gates [64][68] f32
// (17408), K' and Q'' (2 x 9216), the block's dL/dG and k * dkState (2 x
// 16384), <S_r, H_r> (256): 168192. 272 products a warp of eight in the
// code, half of the 544 that four warps took: dO
// D^T (64), dO S^T (64), dP~ K' over the four 16-token blocks (A split:
// 64), D H^T (96), dP~^T Q'' (64), and for each block the warp's own
// factored form under a branch (both split: 8 x 3, for dq and dk: 192);
// the own block's elementwise form has none.
// CHECK-LABEL: func.func @per_key_gates(
// CHECK:         scf.parallel
// CHECK:         arith.constant 168192 : i32
// CHECK:         gpu.launch
// CHECK:           nvgpu.device_async_copy {{.*}} : memref<?x?x2x64xf32> to memref<64x68xf32, #gpu.address_space<workgroup>>
// CHECK-NOT:     linattn.chunk_grad
// MMA-LABEL:     func.func @per_key_gates(
// MMA:           gpu.launch
// MMA-COUNT-272: nvvm.mma.sync
// MMA-NOT:       nvvm.mma.sync
func.func @per_key_gates(%q: tensor<?x?x2x64xbf16>, %k: tensor<?x?x2x64xbf16>, %v: tensor<?x?x2x64xbf16>, %g: tensor<?x?x2x64xf32>, %d: tensor<?x?x2x64xf32>, %s: tensor<?x?x2x64x64xf32>, %do: tensor<?x?x2x64xbf16>, %dd: tensor<?x?x2x64xf32>, %hs: tensor<?x?x2x64x64xf32>) -> (tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>) {
  %dq, %dk, %dv, %dg = linattn.chunk_grad q(%q) k(%k) v(%v) gates(%g) new_values(%d) states(%s) grad_output(%do) grad_new_values(%dd) grad_states(%hs) {chunk_size = 64 : i64, scale = 0.125 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64x64xf32>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>, tensor<?x?x2x64x64xf32>)
      -> (tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xbf16>) grad_gates tensor<?x?x2x64xf32>
  return %dq, %dk, %dv, %dg : tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>
}

// -----

// DeltaNet at K = V = 128 (no gates): the WY kernel's slab loops (P's
// over the key slabs, the key slabs' around dW's over the value slabs,
// the value slabs') run two trips each, their products emitted once; the
// key-block kernel's grid has two blocks a chunk (ceil(T / 64) x 2) and
// its loop over the slabs of V two trips. The WY kernel's shared memory
// is gated_delta's without the gates' 256: 97024. The key-block kernel's, as
// at K = V = 64 (its tiles are a key block's and a slab's) without gates
// (no M, row terms or partials: no sum kernel): 64512 + 2 x 9216 + c 256
// = 83200, eight warps. One value head a q/k head (H = HV = 2): chunk_grad returns dq
// and dk in bf16, rounded by the key kernel as it stores each
// accumulator pair.
// MMA-LABEL: func.func @delta_k128(
// CHECK-LABEL: func.func @delta_k128(
// CHECK:         arith.constant 97024 : i32
// CHECK:         gpu.launch
// CHECK:           scf.for %{{.*}} = %{{.*}} to %c2{{[_0-9]*}} step
// CHECK:         %[[CHUNKS:.*]] = arith.ceildivui
// CHECK:         %[[BLOCKS:.*]] = arith.muli %[[CHUNKS]], %c2
// CHECK:         arith.constant 83200 : i32
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %[[BLOCKS]],
// CHECK:           %{{.*}}:48 = scf.for {{.*}} to %c2{{[_0-9]*}} step %{{.*}} iter_args({{.*}}) -> ({{.*}}, f32)
// CHECK:             vector.store %{{.*}} : memref<?x?x2x128xbf16>, vector<2xbf16>
// CHECK-NOT:     gpu.launch
// CHECK-NOT:     linattn.chunk_grad
func.func @delta_k128(%q: tensor<?x?x2x128xbf16>, %k: tensor<?x?x2x128xbf16>, %v: tensor<?x?x2x128xbf16>, %beta: tensor<?x?x2xf32>, %w: tensor<?x?x2x128xbf16>, %u: tensor<?x?x2x128xf32>, %d: tensor<?x?x2x128xf32>, %s: tensor<?x?x2x128x128xf32>, %do: tensor<?x?x2x128xbf16>, %dd: tensor<?x?x2x128xf32>, %hs: tensor<?x?x2x128x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2xf32>) {
  %dq, %dk, %dv, %db = linattn.chunk_grad q(%q) k(%k) v(%v) beta(%beta) w(%w) u(%u) new_values(%d) states(%s) grad_output(%do) grad_new_values(%dd) grad_states(%hs) {chunk_size = 64 : i64, rank1_scale = 1.000000e+00 : f32, scale = 0.088388 : f32}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2xf32>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xf32>, tensor<?x?x2x128xf32>, tensor<?x?x2x128x128xf32>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xf32>, tensor<?x?x2x128x128xf32>)
      -> (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>) grad_beta tensor<?x?x2xf32>
  return %dq, %dk, %dv, %db : tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2xf32>
}

// -----

// f32 q and k (qk_l2norm's normalised keys) beside 16-bit dO and W: both
// kernels stage them split (hi + lo) through registers. The WY kernel's
// key slab takes its lo part in the tiles dW's lo part takes later (no
// more bytes: 97280); the key-block kernel's gains the lo parts of its key
// block's q and k (2 x 9216): 93696 + 18432 = 112128, still two blocks an
// SM.
// CHECK-LABEL: func.func @gated_delta_f32_keys(
// CHECK:         arith.constant 97280 : i32
// CHECK:         gpu.launch
// CHECK:         arith.constant 112128 : i32
// CHECK:         gpu.launch
// CHECK:           scf.for {{.*}} to %c2{{[_0-9]*}} step %{{.*}} iter_args(
// CHECK-NOT:     scf.parallel
// CHECK-NOT:     linattn.chunk_grad
//
// The WY kernel, 272 products a warp of eight: K K^T with both split
// (4 tiles x 4 k-steps x 3 = 48, 16 at 16-bit keys), the rest as
// gated_delta's (each slab loop's body once). The key-block kernel, 352 a
// warp of eight: the slab's 112 as at
// 16-bit keys, then with both operands split Q K^T (48), dP~ K (48),
// dP~^T Q (48), L K and L^T K (2 x 48).
// MMA-LABEL: func.func @gated_delta_f32_keys(
// MMA-COUNT-272:  nvvm.mma.sync
// MMA-NOT:       nvvm.mma.sync
// MMA:            gpu.launch
// MMA-COUNT-352:  nvvm.mma.sync
// MMA-NOT:        nvvm.mma.sync
func.func @gated_delta_f32_keys(%q: tensor<?x?x2x128xf32>, %k: tensor<?x?x2x128xf32>, %v: tensor<?x?x2x128xbf16>, %beta: tensor<?x?x2xf32>, %g: tensor<?x?x2xf32>, %w: tensor<?x?x2x128xbf16>, %u: tensor<?x?x2x128xf32>, %d: tensor<?x?x2x128xf32>, %s: tensor<?x?x2x128x128xf32>, %do: tensor<?x?x2x128xbf16>, %dd: tensor<?x?x2x128xf32>, %hs: tensor<?x?x2x128x128xf32>) -> (tensor<?x?x2x128xf32>, tensor<?x?x2x128xf32>, tensor<?x?x2x128xbf16>, tensor<?x?x2xf32>, tensor<?x?x2xf32>) {
  %dq, %dk, %dv, %dg, %db = linattn.chunk_grad q(%q) k(%k) v(%v) beta(%beta) gates(%g) w(%w) u(%u) new_values(%d) states(%s) grad_output(%do) grad_new_values(%dd) grad_states(%hs) {chunk_size = 64 : i64, rank1_scale = 1.000000e+00 : f32, scale = 0.088388 : f32}
      : (tensor<?x?x2x128xf32>, tensor<?x?x2x128xf32>, tensor<?x?x2x128xbf16>, tensor<?x?x2xf32>, tensor<?x?x2xf32>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xf32>, tensor<?x?x2x128xf32>, tensor<?x?x2x128x128xf32>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xf32>, tensor<?x?x2x128x128xf32>)
      -> (tensor<?x?x2x128xf32>, tensor<?x?x2x128xf32>, tensor<?x?x2x128xbf16>) grad_gates tensor<?x?x2xf32> grad_beta tensor<?x?x2xf32>
  return %dq, %dk, %dv, %dg, %db : tensor<?x?x2x128xf32>, tensor<?x?x2x128xf32>, tensor<?x?x2x128xbf16>, tensor<?x?x2xf32>, tensor<?x?x2xf32>
}

// -----

// Per-key gates with WY factors (KDA): the WY kernel computes P under
// per-key gates (PerKeyScores.h, K' over T's tile) and goes on to reduce
// F and Y to dk's and dL/dG's shares, which the key kernel (its per-key
// form, as GLA's) adds; no P or F leaves for it. The WY kernel's shared
// memory at K = V = 64, eight warps as the row-gate kernel: its layout
// but the row gates (133120 - 256 = 132864), plus G [64][68] f32
// (17408): 150272 (F split, K' and K'' for the shares go over W's to P's
// tiles, dead by then). The key kernel's is GLA's: 168192.
// CHECK-LABEL: func.func @kda(
// CHECK:         arith.constant 150272 : i32
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %{{.*}}, %{{.*}} = %c2{{[_0-9]*}}, %{{.*}} = %{{.*}}) threads(%{{.*}}) in (%{{.*}} = %c256{{[_0-9]*}}
// CHECK:           nvgpu.device_async_copy {{.*}} : memref<?x?x2x64xf32> to memref<64x68xf32, #gpu.address_space<workgroup>>
// CHECK:         arith.constant 168192 : i32
// CHECK:         gpu.launch
// CHECK-NOT:     scf.parallel
// CHECK-NOT:     linattn.chunk_grad
//
// The WY kernel, 392 products a warp of eight: dD S^T (48), K K^T's
// factored 16-key blocks (K' unsplit, a loop over every other column
// block: 4 k-steps x 2 = 8), T^T dW and T^T dD (48 each), Y W^T (32), Z
// U^T (48), half the columns of what four warps took; then per pass (32
// keys of each column half) F's row and column sums over the four
// 16-token blocks (A split: 2 x 32) and the warp's own block factored
// (both split: 2 x 48), as at four warps. The key kernel's 272 are GLA's.
// MMA-LABEL: func.func @kda(
// MMA-COUNT-392: nvvm.mma.sync
// MMA-NOT:       nvvm.mma.sync
// MMA:           gpu.launch
// MMA-COUNT-272: nvvm.mma.sync
// MMA-NOT:       nvvm.mma.sync
func.func @kda(%q: tensor<?x?x2x64xbf16>, %k: tensor<?x?x2x64xbf16>, %v: tensor<?x?x2x64xbf16>, %beta: tensor<?x?x2xf32>, %g: tensor<?x?x2x64xf32>, %w: tensor<?x?x2x64xbf16>, %u: tensor<?x?x2x64xf32>, %d: tensor<?x?x2x64xf32>, %s: tensor<?x?x2x64x64xf32>, %do: tensor<?x?x2x64xbf16>, %dd: tensor<?x?x2x64xf32>, %hs: tensor<?x?x2x64x64xf32>) -> (tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>, tensor<?x?x2xf32>) {
  %dq, %dk, %dv, %dg, %db = linattn.chunk_grad q(%q) k(%k) v(%v) beta(%beta) gates(%g) w(%w) u(%u) new_values(%d) states(%s) grad_output(%do) grad_new_values(%dd) grad_states(%hs) {chunk_size = 64 : i64, rank1_scale = 1.000000e+00 : f32, scale = 0.125 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64x64xf32>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>, tensor<?x?x2x64x64xf32>)
      -> (tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xbf16>) grad_gates tensor<?x?x2x64xf32> grad_beta tensor<?x?x2xf32>
  return %dq, %dk, %dv, %dg, %db : tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>, tensor<?x?x2xf32>
}

// -----

// Heads above 128 (K = V = 256): the WY share by 64-column slabs
// (WYSlabGradKernel.cpp), whose whole rows would need 358400 bytes. Two
// slabs of split tiles (dD; S, W or U: 4 x 9216, under which the
// inverse's T and L lie, 2 x 17408), a key slab of K for P and then dW,
// Y and Z split (2 x 9216), T split (2 x 9216), P f32 (16640), the row
// terms over the inverse's scratch (6144), gates, c and beta (3 x 256):
// 97280 at any K and V, two blocks an SM. Run-time loops over the slabs:
// P's over the key slabs (16 accumulators a thread), the key slabs'
// (dL's 16 and Y . k's two row partials) around dW's over the value
// slabs (16), the value slabs' (dL and Z . v's). Each loop's body once:
// 240 products a warp (K K^T 16, dD S^T 48, T^T dW 48, Y W^T 32, T^T dD
// 48, Z U^T 48), then the key-block kernel's 256.
// CHECK-LABEL: func.func @gated_delta_k256(
// CHECK-NOT:     scf.parallel
// CHECK:         arith.constant 97280 : i32
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %{{.*}}, %{{.*}} = %c4{{[_0-9]*}}, %{{.*}} = %{{.*}}) threads(%{{.*}}) in (%{{.*}} = %c256{{[_0-9]*}}
// CHECK:           %{{.*}}:16 = scf.for {{.*}} to %c4{{[_0-9]*}} step %{{.*}} iter_args(
// CHECK:           %{{.*}}:18 = scf.for {{.*}} to %c4{{[_0-9]*}} step %{{.*}} iter_args(
// CHECK:             %{{.*}}:16 = scf.for {{.*}} to %c4{{[_0-9]*}} step %{{.*}} iter_args(
// CHECK:           %{{.*}}:18 = scf.for {{.*}} to %c4{{[_0-9]*}} step %{{.*}} iter_args(
// CHECK:         arith.constant 93696 : i32
// CHECK-NOT:     scf.parallel
// CHECK-NOT:     linattn.chunk_grad
// MMA-LABEL: func.func @gated_delta_k256(
// MMA-COUNT-240: nvvm.mma.sync
// MMA-NOT:       nvvm.mma.sync
// MMA:           gpu.launch
// MMA-COUNT-256: nvvm.mma.sync
// MMA-NOT:       nvvm.mma.sync
func.func @gated_delta_k256(%q: tensor<?x?x2x256xbf16>, %k: tensor<?x?x2x256xbf16>, %v: tensor<?x?x4x256xbf16>, %beta: tensor<?x?x4xf32>, %g: tensor<?x?x4xf32>, %w: tensor<?x?x4x256xbf16>, %u: tensor<?x?x4x256xf32>, %d: tensor<?x?x4x256xf32>, %s: tensor<?x?x4x256x256xf32>, %do: tensor<?x?x4x256xbf16>, %dd: tensor<?x?x4x256xf32>, %hs: tensor<?x?x4x256x256xf32>) -> (tensor<?x?x4x256xf32>, tensor<?x?x4x256xf32>, tensor<?x?x4x256xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) {
  %dq, %dk, %dv, %dg, %db = linattn.chunk_grad q(%q) k(%k) v(%v) beta(%beta) gates(%g) w(%w) u(%u) new_values(%d) states(%s) grad_output(%do) grad_new_values(%dd) grad_states(%hs) {chunk_size = 64 : i64, rank1_scale = 1.000000e+00 : f32, scale = 0.0625 : f32}
      : (tensor<?x?x2x256xbf16>, tensor<?x?x2x256xbf16>, tensor<?x?x4x256xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4x256xbf16>, tensor<?x?x4x256xf32>, tensor<?x?x4x256xf32>, tensor<?x?x4x256x256xf32>, tensor<?x?x4x256xbf16>, tensor<?x?x4x256xf32>, tensor<?x?x4x256x256xf32>)
      -> (tensor<?x?x4x256xf32>, tensor<?x?x4x256xf32>, tensor<?x?x4x256xbf16>) grad_gates tensor<?x?x4xf32> grad_beta tensor<?x?x4xf32>
  return %dq, %dk, %dv, %dg, %db : tensor<?x?x4x256xf32>, tensor<?x?x4x256xf32>, tensor<?x?x4x256xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>
}

// -----

// K = 96 (not a multiple of the slab and key-block kernels' 64 columns):
// the WY share holds the chunk's whole rows (WYGradKernel.cpp: k, W, dW
// split and U, dD split, 64 x 104 and 64 x 72 16-bit tiles, with S's key
// blocks of 32, T, L and P: 149504 bytes, eight warps, one block an SM),
// the key gradients a block per chunk (KeyGradKernel.cpp, 135936); no
// loops. 264 products a warp in the WY kernel, 160 in the key kernel.
// CHECK-LABEL: func.func @gated_delta_k96(
// CHECK-NOT:     scf.parallel
// CHECK:         arith.constant 149504 : i32
// CHECK:         gpu.launch
// CHECK:         arith.constant 135936 : i32
// CHECK:         gpu.launch
// CHECK-NOT:     scf.parallel
// CHECK-NOT:     linattn.chunk_grad
// MMA-LABEL: func.func @gated_delta_k96(
// MMA-COUNT-264: nvvm.mma.sync
// MMA-NOT:       nvvm.mma.sync
// MMA:           gpu.launch
// MMA-COUNT-160: nvvm.mma.sync
// MMA-NOT:       nvvm.mma.sync
func.func @gated_delta_k96(%q: tensor<?x?x2x96xbf16>, %k: tensor<?x?x2x96xbf16>, %v: tensor<?x?x4x64xbf16>, %beta: tensor<?x?x4xf32>, %g: tensor<?x?x4xf32>, %w: tensor<?x?x4x96xbf16>, %u: tensor<?x?x4x64xf32>, %d: tensor<?x?x4x64xf32>, %s: tensor<?x?x4x96x64xf32>, %do: tensor<?x?x4x64xbf16>, %dd: tensor<?x?x4x64xf32>, %hs: tensor<?x?x4x96x64xf32>) -> (tensor<?x?x4x96xf32>, tensor<?x?x4x96xf32>, tensor<?x?x4x64xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) {
  %dq, %dk, %dv, %dg, %db = linattn.chunk_grad q(%q) k(%k) v(%v) beta(%beta) gates(%g) w(%w) u(%u) new_values(%d) states(%s) grad_output(%do) grad_new_values(%dd) grad_states(%hs) {chunk_size = 64 : i64, rank1_scale = 1.000000e+00 : f32, scale = 0.102 : f32}
      : (tensor<?x?x2x96xbf16>, tensor<?x?x2x96xbf16>, tensor<?x?x4x64xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4x96xbf16>, tensor<?x?x4x64xf32>, tensor<?x?x4x64xf32>, tensor<?x?x4x96x64xf32>, tensor<?x?x4x64xbf16>, tensor<?x?x4x64xf32>, tensor<?x?x4x96x64xf32>)
      -> (tensor<?x?x4x96xf32>, tensor<?x?x4x96xf32>, tensor<?x?x4x64xbf16>) grad_gates tensor<?x?x4xf32> grad_beta tensor<?x?x4xf32>
  return %dq, %dk, %dv, %dg, %db : tensor<?x?x4x96xf32>, tensor<?x?x4x96xf32>, tensor<?x?x4x64xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>
}

// -----

// qk_l2norm factored (q_rnorm s, k_rnorm r), Gated DeltaNet at K = V = 128
// with two value heads a q/k head: both kernels in the bytes the plain
// kind takes (the WY kernel reads r from global memory where it forms b =
// beta r and c = beta r^2 and where dbeta takes r^2 and r; the key kernel
// r for c, and s for the two rows of dO a thread's products take), the
// keys bf16 as they come.
// CHECK-LABEL: func.func @factored_l2norm(
// MMA-LABEL:   func.func @factored_l2norm(
// CHECK-SAME:      %{{[^:]+}}: tensor<?x?x2x128xbf16>, %[[RQ:[^:]+]]: tensor<?x?x2xf32>, %{{[^:]+}}: tensor<?x?x2x128xbf16>, %[[RK:[^:]+]]: tensor<?x?x2xf32>
// CHECK-DAG:     %[[RQB:.*]] = bufferization.to_buffer %[[RQ]] read_only
// CHECK-DAG:     %[[RKB:.*]] = bufferization.to_buffer %[[RK]] read_only
// CHECK:         %[[WYSMEM:.*]] = arith.constant 97280 : i32
// CHECK:         gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c256{{[_0-9]*}}, {{.*}} dynamic_shared_memory_size %[[WYSMEM]] {
// CHECK-NOT:       memref.load %[[RQB]]
// CHECK:           memref.load %[[RKB]]
// CHECK-NOT:       memref.load %[[RQB]]
// CHECK:           memref.load %[[RKB]]
// CHECK-NOT:       memref.load %[[RQB]]
// CHECK:         %[[KEYSMEM:.*]] = arith.constant 93696 : i32
// CHECK:         gpu.launch {{.*}} dynamic_shared_memory_size %[[KEYSMEM]] {
// CHECK:           memref.load %[[RKB]]
// CHECK:           memref.load %[[RQB]]
// CHECK:           memref.load %[[RQB]]
// CHECK-NOT:       memref.load %[[RKB]]
// CHECK-NOT:       memref.load %[[RQB]]
// CHECK:         gpu.launch
func.func @factored_l2norm(%q: tensor<?x?x2x128xbf16>, %rq: tensor<?x?x2xf32>, %k: tensor<?x?x2x128xbf16>,
    %rk: tensor<?x?x2xf32>, %v: tensor<?x?x4x128xbf16>, %beta: tensor<?x?x4xf32>, %g: tensor<?x?x4xf32>,
    %w: tensor<?x?x4x128xbf16>, %u: tensor<?x?x4x128xf32>, %d: tensor<?x?x4x128xf32>, %s: tensor<?x?x4x128x128xf32>,
    %do: tensor<?x?x4x128xbf16>, %dd: tensor<?x?x4x128xf32>, %hs: tensor<?x?x4x128x128xf32>)
    -> (tensor<?x?x4x128xf32>, tensor<?x?x4x128xf32>, tensor<?x?x4x128xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) {
  %dq, %dk, %dv, %dg, %db = linattn.chunk_grad q(%q) q_rnorm(%rq) k(%k) k_rnorm(%rk) v(%v) beta(%beta) gates(%g) w(%w) u(%u)
      new_values(%d) states(%s) grad_output(%do) grad_new_values(%dd) grad_states(%hs)
      {chunk_size = 64 : i64, scale = 0.125 : f32, rank1_scale = 1.0 : f32}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2xf32>, tensor<?x?x2x128xbf16>, tensor<?x?x2xf32>, tensor<?x?x4x128xbf16>,
         tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4x128xbf16>, tensor<?x?x4x128xf32>, tensor<?x?x4x128xf32>,
         tensor<?x?x4x128x128xf32>, tensor<?x?x4x128xbf16>, tensor<?x?x4x128xf32>, tensor<?x?x4x128x128xf32>)
      -> (tensor<?x?x4x128xf32>, tensor<?x?x4x128xf32>, tensor<?x?x4x128xbf16>) grad_gates tensor<?x?x4xf32> grad_beta tensor<?x?x4xf32>
  return %dq, %dk, %dv, %dg, %db : tensor<?x?x4x128xf32>, tensor<?x?x4x128xf32>, tensor<?x?x4x128xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>
}
