// RUN: linattn-opt %s --convert-linattn-chunked-to-gpu -split-input-file | FileCheck %s
// RUN: linattn-opt %s --convert-linattn-chunked-to-gpu -split-input-file | FileCheck %s --check-prefix=MMA

// linattn.chunk_state_pass_grad, the backward's reverse chunk pass: one
// gpu.launch, the forward state pass's mirror image. Blocks (V / 32, HV, B)
// of 128 threads carry H^T (16 value columns x 64 keys per warp) through a
// loop over the chunks from the last; nothing but the inputs is read and
// the three f32 results written.
//
// Shared memory (gated delta, bf16, K = V = 128, 2 q/k and 4 value heads):
// three stages of q, k and W (64 x (128 + 8) x 2 = 17408 each), the block's
// dO columns (64 x (32 + 8) x 2 = 5120) and the row gates (256): 3 x 57600
// = 172800; the scores' hi and lo parts (2 x 64 x 72 x 2 = 18432); the
// key parts' exchange (16384): 207616.
// CHECK-LABEL: func.func @wy_form(
// CHECK:         %[[DD:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?x4x128xf32>
// CHECK:         %[[HS:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?x4x128x128xf32>
// CHECK:         %[[DS0:.*]] = memref.alloc(%{{.*}}) : memref<?x4x128x128xf32>
// CHECK:         %[[SMEM:.*]] = arith.constant 207616 : i32
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %c4{{[_0-9]*}}, %{{.*}} = %c4{{[_0-9]*}}, %{{.*}} = %{{.*}}) threads(%{{.*}}) in (%{{.*}} = %c128{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}) dynamic_shared_memory_size %[[SMEM]] {
// q and k of the value head's q/k head, W of the value head, dO's block
// columns and the gates, by cp.async.
// CHECK:           nvgpu.device_async_copy {{.*}} : memref<?x?x2x128xbf16> to memref<64x136xbf16, #gpu.address_space<workgroup>>
// CHECK:           nvgpu.device_async_copy {{.*}} : memref<?x?x2x128xbf16> to memref<64x136xbf16, #gpu.address_space<workgroup>>
// CHECK:           nvgpu.device_async_copy {{.*}} : memref<?x?x4x128xbf16> to memref<64x136xbf16, #gpu.address_space<workgroup>>
// CHECK:           nvgpu.device_async_copy {{.*}} : memref<?x?x4x128xbf16> to memref<64x40xbf16, #gpu.address_space<workgroup>>
// CHECK:           nvgpu.device_async_copy {{.*}} : memref<?x?x4xf32> to memref<64x1xf32, #gpu.address_space<workgroup>>
// The chunk loop: H leaves as grad_chunk_states[n] first, the scores go to
// shared memory by stmatrix (hi, lo), dD leaves f32.
// CHECK:           scf.for
// CHECK:             gpu.barrier
// CHECK:             memref.store %{{.*}}, %[[HS]][%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<?x?x4x128x128xf32>
// CHECK:             nvvm.stmatrix
// CHECK:             gpu.barrier
// CHECK:             gpu.barrier
// CHECK:             memref.store %{{.*}}, %[[DD]][%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<?x?x4x128xf32>
// CHECK:           memref.store %{{.*}}, %[[DS0]][%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<?x4x128x128xf32>
// CHECK-NOT:     linattn.chunk_state_pass_grad
//
// Per chunk and warp, 288 products: the scores K Q^T (8 column tiles x 8
// k-steps), H^T Kd^T (H split: 2 x 4 k-steps x 8 row tiles), dO^T A over
// the key part's half of the tokens (A split: 2 x 2 x 8), then the update's
// dO'^T Q and -dD^T W (each split: 2 x 4 x 8).
// MMA-LABEL: func.func @wy_form(
// MMA-COUNT-288: nvvm.mma.sync
// MMA-NOT:       nvvm.mma.sync
// MMA-LABEL: func.func @wy_form_narrow(
func.func @wy_form(%q: tensor<?x?x2x128xbf16>, %k: tensor<?x?x2x128xbf16>, %w: tensor<?x?x4x128xbf16>, %g: tensor<?x?x4xf32>, %do: tensor<?x?x4x128xbf16>, %ds: tensor<?x4x128x128xf32>) -> (tensor<?x?x4x128xf32>, tensor<?x?x4x128x128xf32>, tensor<?x4x128x128xf32>) {
  %dd, %hs, %ds0 = linattn.chunk_state_pass_grad q(%q) k(%k) w(%w) gates(%g) grad_output(%do) grad_final_state(%ds) {chunk_size = 64 : i64, scale = 0.125 : f32}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x4x128xbf16>, tensor<?x?x4xf32>, tensor<?x?x4x128xbf16>, tensor<?x4x128x128xf32>)
      -> (tensor<?x?x4x128xf32>, tensor<?x?x4x128x128xf32>, tensor<?x4x128x128xf32>)
  return %dd, %hs, %ds0 : tensor<?x?x4x128xf32>, tensor<?x?x4x128x128xf32>, tensor<?x4x128x128xf32>
}

// -----

// Narrow blocks (linattn.state_columns = 16; linattn-narrow-state-blocks
// does not ask them of a reverse pass, slower: bench/NOTES.md w2): one
// column group over two warps (64 threads), V / 16 = 8 blocks a head. The stages hold the block's 16 dO
// columns (64 x (16 + 8) x 2 = 3072): 3 x (3 x 17408 + 3072 + 256) =
// 166656; scores 18432; the exchange of two warps 8192: 193280. Each warp
// stages two of the four 16-row score tiles (bench/NOTES.md w1 found the
// kernel wrong from T = 64 when it staged one): 16 stmatrix (hi, lo) and
// 64 products more, 352.
// CHECK-LABEL: func.func @wy_form_narrow(
// CHECK:         %[[NSMEM:.*]] = arith.constant 193280 : i32
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %c8{{[_0-9]*}}, %{{.*}} = %c4{{[_0-9]*}}, %{{.*}} = %{{.*}}) threads(%{{.*}}) in (%{{.*}} = %c64{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}) dynamic_shared_memory_size %[[NSMEM]] {
// CHECK-COUNT-16:    nvvm.stmatrix
// CHECK-NOT:         nvvm.stmatrix
// CHECK:         return
// MMA-COUNT-352: nvvm.mma.sync
// MMA-NOT:       nvvm.mma.sync
// MMA-LABEL: func.func @no_w_no_gates(
func.func @wy_form_narrow(%q: tensor<?x?x2x128xbf16>, %k: tensor<?x?x2x128xbf16>, %w: tensor<?x?x4x128xbf16>, %g: tensor<?x?x4xf32>, %do: tensor<?x?x4x128xbf16>, %ds: tensor<?x4x128x128xf32>) -> (tensor<?x?x4x128xf32>, tensor<?x?x4x128x128xf32>, tensor<?x4x128x128xf32>) {
  %dd, %hs, %ds0 = linattn.chunk_state_pass_grad q(%q) k(%k) w(%w) gates(%g) grad_output(%do) grad_final_state(%ds) {chunk_size = 64 : i64, scale = 0.125 : f32, linattn.state_columns = 16 : i64}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x4x128xbf16>, tensor<?x?x4xf32>, tensor<?x?x4x128xbf16>, tensor<?x4x128x128xf32>)
      -> (tensor<?x?x4x128xf32>, tensor<?x?x4x128x128xf32>, tensor<?x4x128x128xf32>)
  return %dd, %hs, %ds0 : tensor<?x?x4x128xf32>, tensor<?x?x4x128x128xf32>, tensor<?x4x128x128xf32>
}

// -----

// Without W (no rank-1 term) and without gates (linear attention), K = V =
// 64: three stages of q and k (64 x 72 x 2 = 9216 each) and dO (5120),
// 23552 each, 70656; scores 18432; exchange 16384: 105472. Per chunk 128
// products (K Q^T 8 x 4, H^T Kd^T 2 x 2 x 8, dO^T A 2 x 2 x 8, dO'^T Q
// 2 x 4 x 4), none with W.
// CHECK-LABEL: func.func @no_w_no_gates(
// CHECK:         arith.constant 105472 : i32
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %c2{{[_0-9]*}}, %{{.*}} = %c2{{[_0-9]*}}, %{{.*}} = %{{.*}})
// CHECK-NOT:     linattn.chunk_state_pass_grad
// MMA-COUNT-128: nvvm.mma.sync
// MMA-NOT:       nvvm.mma.sync
func.func @no_w_no_gates(%q: tensor<?x?x2x64xbf16>, %k: tensor<?x?x2x64xbf16>, %do: tensor<?x?x2x64xbf16>, %ds: tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xf32>, tensor<?x?x2x64x64xf32>, tensor<?x2x64x64xf32>) {
  %dd, %hs, %ds0 = linattn.chunk_state_pass_grad q(%q) k(%k) grad_output(%do) grad_final_state(%ds) {chunk_size = 64 : i64, scale = 0.125 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x2x64x64xf32>)
      -> (tensor<?x?x2x64xf32>, tensor<?x?x2x64x64xf32>, tensor<?x2x64x64xf32>)
  return %dd, %hs, %ds0 : tensor<?x?x2x64xf32>, tensor<?x?x2x64x64xf32>, tensor<?x2x64x64xf32>
}

// -----

// Per-key gates (GLA), K = V = 64, 16-bit keys: first the kernel of dD's
// share through the output, X = scale (Q K^T * M)^T dO, in parallel over
// chunks (q, k and K': 3 x 9216, dO over q's once the scores are out; the
// gates [64][64 + 4] f32, 17408; the scores split, 18432: 63488; per warp
// 72 products: the per-key
// scores' one block in the loop (2 x 4), P^T dO (P split: 2 x 4 x 8));
// then the pass, which stages X's block columns f32 ([64][32 + 4], 9216)
// beside q, k, dO and the gates: three stages of 50176, the exchange
// (16384): 166912, and forms no scores: per chunk and warp 64 products,
// H^T Kd^T (H split: 2 x 2 x 8) and dO'^T Qg (dO' split: 2 x 4 x 4). K
// and Q are decayed in place (Kd, Qg) before dD's products.
// CHECK-LABEL: func.func @per_key_gates(
// CHECK:         arith.constant 63488 : i32
// CHECK:         gpu.launch
// CHECK:           nvgpu.device_async_copy {{.*}} : memref<?x?x2x64xf32> to memref<64x68xf32, #gpu.address_space<workgroup>>
// CHECK:           scf.for
// CHECK:             nvvm.stmatrix
// CHECK:         arith.constant 166912 : i32
// CHECK:         gpu.launch
// CHECK:           nvgpu.device_async_copy {{.*}} : memref<?x?x2x64xf32> to memref<64x36xf32, #gpu.address_space<workgroup>>
// CHECK-NOT:       nvvm.stmatrix
// CHECK-NOT:     linattn.chunk_state_pass_grad
// MMA-LABEL:     func.func @per_key_gates(
// MMA-COUNT-72:  nvvm.mma.sync
// MMA:           gpu.launch
// MMA-COUNT-64:  nvvm.mma.sync
// MMA-NOT:       nvvm.mma.sync
func.func @per_key_gates(%q: tensor<?x?x2x64xbf16>, %k: tensor<?x?x2x64xbf16>, %g: tensor<?x?x2x64xf32>, %do: tensor<?x?x2x64xbf16>, %ds: tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xf32>, tensor<?x?x2x64x64xf32>, tensor<?x2x64x64xf32>) {
  %dd, %hs, %ds0 = linattn.chunk_state_pass_grad q(%q) k(%k) gates(%g) grad_output(%do) grad_final_state(%ds) {chunk_size = 64 : i64, scale = 0.125 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x64xf32>, tensor<?x?x2x64xbf16>, tensor<?x2x64x64xf32>)
      -> (tensor<?x?x2x64xf32>, tensor<?x?x2x64x64xf32>, tensor<?x2x64x64xf32>)
  return %dd, %hs, %ds0 : tensor<?x?x2x64xf32>, tensor<?x?x2x64x64xf32>, tensor<?x2x64x64xf32>
}

// -----

// Per-key gates with W (KDA) and f32 keys at K = V = 128: a stage (q, k
// and their lo parts, W, dO and the [64][132] f32 gates: 125952 bytes) does
// not fit twice, so the kernel runs one: each step waits for the previous
// one to leave it, copies its chunk in and waits for the copies; then the
// scores (18432) and K' split in the exchange (34816): 179200 bytes. (16-bit
// keys there: two stages of 91136, the scores and K' in the exchange:
// 218112.)
// CHECK-LABEL: func.func @per_key_split_keys_k128(
// CHECK:         %[[SMEM:.*]] = arith.constant 179200 : i32
// CHECK:         gpu.launch {{.*}} dynamic_shared_memory_size %[[SMEM]] {
// CHECK:           scf.for
// CHECK:             gpu.barrier
// CHECK:             %[[GROUP:.*]] = nvgpu.device_async_create_group
// CHECK-NEXT:        nvgpu.device_async_wait %[[GROUP]] {numGroups = 0 : i32}
// CHECK-NEXT:        gpu.barrier
// MMA-LABEL:     func.func @per_key_split_keys_k128(
func.func @per_key_split_keys_k128(%q: tensor<?x?x2x128xf32>, %k: tensor<?x?x2x128xf32>, %w: tensor<?x?x2x128xbf16>, %g: tensor<?x?x2x128xf32>, %do: tensor<?x?x2x128xbf16>, %ds: tensor<?x2x128x128xf32>) -> (tensor<?x?x2x128xf32>, tensor<?x?x2x128x128xf32>, tensor<?x2x128x128xf32>) {
  %dd, %hs, %ds0 = linattn.chunk_state_pass_grad q(%q) k(%k) w(%w) gates(%g) grad_output(%do) grad_final_state(%ds) {chunk_size = 64 : i64, scale = 0.125 : f32}
      : (tensor<?x?x2x128xf32>, tensor<?x?x2x128xf32>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xf32>, tensor<?x?x2x128xbf16>, tensor<?x2x128x128xf32>)
      -> (tensor<?x?x2x128xf32>, tensor<?x?x2x128x128xf32>, tensor<?x2x128x128xf32>)
  return %dd, %hs, %ds0 : tensor<?x?x2x128xf32>, tensor<?x?x2x128x128xf32>, tensor<?x2x128x128xf32>
}

// -----

// f32 q and k (qk_l2norm's normalised keys) beside a 16-bit dO: staged
// split, hi + lo, through registers. Shared memory at K = V = 64: three
// stages of q, k and their lo parts (4 x 64 x 72 x 2 = 36864), dO's columns
// (5120) and the row gates (256), the scores (18432) and the exchange
// (16384): 161536 bytes. 224 products a warp and chunk: K Q^T with both
// split (3 x 32), H^T Kd^T and dO'^T Q with split keys (3 x 16 each, was
// 2 x 16), dO^T A as before (32).
// CHECK-LABEL: func.func @f32_keys(
// CHECK:         arith.constant 161536 : i32
// CHECK:         gpu.launch
// CHECK-NOT:     linattn.chunk_state_pass_grad
// MMA-LABEL:     func.func @f32_keys(
// MMA-COUNT-224: nvvm.mma.sync
// MMA-NOT:       nvvm.mma.sync
func.func @f32_keys(%q: tensor<?x?x2x64xf32>, %k: tensor<?x?x2x64xf32>, %g: tensor<?x?x2xf32>, %do: tensor<?x?x2x64xbf16>, %ds: tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xf32>, tensor<?x?x2x64x64xf32>, tensor<?x2x64x64xf32>) {
  %dd, %hs, %ds0 = linattn.chunk_state_pass_grad q(%q) k(%k) gates(%g) grad_output(%do) grad_final_state(%ds) {chunk_size = 64 : i64, scale = 0.125 : f32}
      : (tensor<?x?x2x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2xf32>, tensor<?x?x2x64xbf16>, tensor<?x2x64x64xf32>)
      -> (tensor<?x?x2x64xf32>, tensor<?x?x2x64x64xf32>, tensor<?x2x64x64xf32>)
  return %dd, %hs, %ds0 : tensor<?x?x2x64xf32>, tensor<?x?x2x64x64xf32>, tensor<?x2x64x64xf32>
}

// -----

// A split W (negeig's, [B, T, HV, 2, K]: the UT transform's hi and lo
// parts), K = V = 64, no gates: each stage holds both parts (q, k, W hi, W
// lo: 4 x 9216, dO 5120: 41984), three stages 125952; scores 18432;
// exchange 16384: 160768. Per chunk no_w_no_gates' 128 products and -dD^T
// W with both operands split (3 x 4 x 4 = 48): 176.
// CHECK-LABEL: func.func @split_w(
// CHECK:         arith.constant 160768 : i32
// CHECK:         gpu.launch
// CHECK-COUNT-2:   nvgpu.device_async_copy {{.*}} : memref<?x?x2x2x64xbf16> to memref<64x72xbf16, #gpu.address_space<workgroup>>
// CHECK-NOT:     linattn.chunk_state_pass_grad
// MMA-LABEL:     func.func @split_w(
// MMA-COUNT-176: nvvm.mma.sync
// MMA-NOT:       nvvm.mma.sync
func.func @split_w(%q: tensor<?x?x2x64xbf16>, %k: tensor<?x?x2x64xbf16>, %w: tensor<?x?x2x2x64xbf16>, %do: tensor<?x?x2x64xbf16>, %ds: tensor<?x2x64x64xf32>) -> (tensor<?x?x2x64xf32>, tensor<?x?x2x64x64xf32>, tensor<?x2x64x64xf32>) {
  %dd, %hs, %ds0 = linattn.chunk_state_pass_grad q(%q) k(%k) w(%w) grad_output(%do) grad_final_state(%ds) {chunk_size = 64 : i64, scale = 0.125 : f32}
      : (tensor<?x?x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2x2x64xbf16>, tensor<?x?x2x64xbf16>, tensor<?x2x64x64xf32>)
      -> (tensor<?x?x2x64xf32>, tensor<?x?x2x64x64xf32>, tensor<?x2x64x64xf32>)
  return %dd, %hs, %ds0 : tensor<?x?x2x64xf32>, tensor<?x?x2x64x64xf32>, tensor<?x2x64x64xf32>
}

// -----

// qk_l2norm factored (q_rnorm s): each stage takes the chunk's s too, a
// 4-byte cp.async a row from the q/k head's [B, T, H] f32 (three stages:
// 207616 + 3 x 256 bytes), for the scores' columns and dO's rows; q and
// k are the bf16 inputs as they come.
// CHECK-LABEL: func.func @factored_l2norm(
// MMA-LABEL:   func.func @factored_l2norm(
// CHECK-SAME:      %{{[^:]+}}: tensor<?x?x2x128xbf16>, %[[RQ:[^:]+]]: tensor<?x?x2xf32>
// CHECK:         %[[RQB:.*]] = bufferization.to_buffer %[[RQ]] read_only
// CHECK:         %[[SMEM:.*]] = arith.constant 208384 : i32
// CHECK:         gpu.launch {{.*}} dynamic_shared_memory_size %[[SMEM]] {
// CHECK-COUNT-2:   nvgpu.device_async_copy %[[RQB]][{{.*}}], %{{.*}}, 1, %{{.*}} : memref<?x?x2xf32> to memref<64x1xf32, #gpu.address_space<workgroup>>
// CHECK:           scf.for
// CHECK:             nvgpu.device_async_copy %[[RQB]][
func.func @factored_l2norm(%q: tensor<?x?x2x128xbf16>, %rq: tensor<?x?x2xf32>, %k: tensor<?x?x2x128xbf16>, %w: tensor<?x?x4x128xbf16>,
    %g: tensor<?x?x4xf32>, %do: tensor<?x?x4x128xbf16>, %ds: tensor<?x4x128x128xf32>) -> (tensor<?x?x4x128xf32>, tensor<?x?x4x128x128xf32>, tensor<?x4x128x128xf32>) {
  %dd, %hs, %ds0 = linattn.chunk_state_pass_grad q(%q) q_rnorm(%rq) k(%k) w(%w) gates(%g) grad_output(%do) grad_final_state(%ds)
      {chunk_size = 64 : i64, scale = 0.125 : f32}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2xf32>, tensor<?x?x2x128xbf16>, tensor<?x?x4x128xbf16>, tensor<?x?x4xf32>, tensor<?x?x4x128xbf16>, tensor<?x4x128x128xf32>)
      -> (tensor<?x?x4x128xf32>, tensor<?x?x4x128x128xf32>, tensor<?x4x128x128xf32>)
  return %dd, %hs, %ds0 : tensor<?x?x4x128xf32>, tensor<?x?x4x128x128xf32>, tensor<?x4x128x128xf32>
}
