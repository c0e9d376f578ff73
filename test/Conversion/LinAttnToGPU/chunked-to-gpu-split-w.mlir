// RUN: linattn-opt %s --linattn-recurrence-to-chunked --linattn-lower-rank1-to-wy=split-w=true --convert-linattn-chunked-to-gpu | FileCheck %s
// RUN: linattn-opt %s --linattn-recurrence-to-chunked --linattn-lower-rank1-to-wy=split-w=true --convert-linattn-chunked-to-gpu | FileCheck %s --check-prefix=COUNT
// RUN: linattn-opt %s --linattn-recurrence-to-chunked --linattn-lower-rank1-to-wy=split-w=true --convert-linattn-chunked-to-gpu | FileCheck %s --check-prefix=LDM

// DeltaNet with negative eigenvalues, W split (linattn-lower-rank1-to-wy
// {split-w=true}): the UT kernel writes W as two bf16 parts, hi = W rounded
// and lo = (W - hi) rounded, each through its staging tile (C (K + 8) 2 =
// 17408 bytes, in the 18432 of R); the state pass stages W's rows as 2K
// bf16 (hi, then lo) and reads both by ldmatrix, where an f32 W was loaded
// element pair by element pair and split on the sequential path.
// State pass shared memory, K = V = 128, chunk C = 64: three stages of W
// (C (2K + 8) 2 = 33792), K (C (K + 8) 2 = 17408) and U columns (C (32 + 4)
// 4 = 9216): 3 * 60416 = 181248; the exchange 16384; the staged chunk
// states and new values, two buffers of K (32 + 8) 2 + C (32 + 8) 2: 30720.
// In all 228352 (of the 232448 a block may have).

// CHECK-LABEL: func.func @negeig(
// 1. UT: W [B, T, HV, 2, K] in bf16, U f32.
// CHECK:         %[[W:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?x2x2x128xbf16>
// CHECK:         memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?x2x128xf32>
// CHECK:         gpu.launch {{.*}} dynamic_shared_memory_size %c56832_i32
// The hi part, then the lo part, copied out in 16-byte rows.
// CHECK:           vector.store %{{.*}}, %[[W]][%{{.*}}, %{{.*}}, %{{.*}}, %c0{{[_0-9]*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x?x2x2x128xbf16>, vector<8xbf16>
// CHECK:           arith.truncf %{{.*}} : f32 to bf16
// CHECK:           arith.extf %{{.*}} : bf16 to f32
// CHECK:           arith.subf
// CHECK:           vector.store %{{.*}}, %[[W]][%{{.*}}, %{{.*}}, %{{.*}}, %c1{{[_0-9]*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x?x2x2x128xbf16>, vector<8xbf16>
// CHECK:           gpu.terminator
// 2. State pass: W's staged rows are 2K bf16 wide, by cp.async from both
//    parts; per warp and chunk, 32 ldmatrix of W (16 hi, 16 lo) and 64
//    products for D = U - W S (S^T rounded once, against W's hi and lo),
//    then 64 for the update (D split against exact K): 128.
// CHECK:         gpu.launch {{.*}} dynamic_shared_memory_size %c228352_i32
// CHECK:           nvgpu.device_async_copy %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}], %{{.*}}[%{{.*}}, %{{.*}}], 8, %{{.*}} {bypassL1} : memref<?x?x2x2x128xbf16> to memref<64x264xbf16, #gpu.address_space<workgroup>>
// CHECK:           scf.for
// CHECK-COUNT-2:     nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = false} : memref<64x264xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
// CHECK-COUNT-4:     nvvm.mma.sync
// CHECK-NOT:         memref.load {{.*}} memref<64x264xbf16
// CHECK:           gpu.terminator

// LDM:           gpu.launch {{.*}} dynamic_shared_memory_size %c228352_i32
// LDM-COUNT-32:    nvgpu.ldmatrix %{{.*}} : memref<64x264xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
// LDM-NOT:         nvgpu.ldmatrix %{{.*}} : memref<64x264xbf16
// LDM:             gpu.terminator
// COUNT:         gpu.launch {{.*}} dynamic_shared_memory_size %c228352_i32
// COUNT-COUNT-128: nvvm.mma.sync
// COUNT-NOT:       nvvm.mma.sync
// COUNT:           gpu.terminator
func.func @negeig(%q: tensor<?x?x2x128xbf16>, %k: tensor<?x?x2x128xbf16>, %v: tensor<?x?x2x128xbf16>, %beta: tensor<?x?x2xf32>, %s0: tensor<?x2x128x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x2x128x128xf32>) {
  %o, %s = linattn.recurrence negeig_delta q(%q) k(%k) v(%v) beta(%beta) state(%s0)
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x2xf32>, tensor<?x2x128x128xf32>) -> (tensor<?x?x2x128xbf16>, tensor<?x2x128x128xf32>)
  return %o, %s : tensor<?x?x2x128xbf16>, tensor<?x2x128x128xf32>
}
