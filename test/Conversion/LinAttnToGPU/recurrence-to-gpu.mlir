// RUN: linattn-opt %s --convert-linattn-recurrence-to-gpu | FileCheck %s

// The recurrent strategy on the GPU: blocks of 128 threads over (value
// columns, value head, batch index); lane tid holds keys 4 (tid % 4) + m
// of column tid / 4 of a set of 32 columns (here K = 16: four slots a
// column carried across the loops over t). Where V is above 32 (here 40) a
// thread holds one column of each of two sets, columns c and c + 32 of a
// 64-column block (eight slots; one block here), and the kernel asks
// linattn-gpu-occupancy-hints for 128 registers a thread (96 at one set,
// @one_set below); a column past V reads column V - 1 and writes nothing.
// The tokens' inputs are staged in shared memory eight at a time, once per
// block: q's and k's rows a warp each, normalised there (the L2 norm's sum
// over the row by a butterfly of five shuffles) and q times its scale, exp
// of the gate and beta a thread each, v's 64 columns of the block; each
// token's step then reads its keys from shared memory as 16-byte vectors
// once for both sets, and each set's sums over keys (u = k^T S, o = S^T q)
// end with xor-shuffles by 1 and 2. The first window's loads are issued
// ahead of the state's (the scalars, q's and k's rows, v's columns, then
// the state's eight slots; the norms after them), later windows are staged
// at the top of the loop, and T = 0 returns the initial state. Value head
// hv reads q/k head hv / 2 (HV = 4, H = 2). The register request sits on
// the dynamic shared memory, which outlining keeps.

// CHECK-LABEL: func.func @gdn(
// CHECK:         %[[OUT:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?x4x40xbf16>
// CHECK:         %[[STATE:.*]] = memref.alloc(%{{.*}}) : memref<?x4x16x40xf32>
// CHECK:         gpu.launch blocks(%{{.*}}, %[[HV:.*]], %[[B:.*]]) in (%{{.*}} = %c1{{[_0-9]*}}, %{{.*}} = %c4{{[_0-9]*}}, %{{.*}} = %{{.*}}) threads(%[[TID:[^,]*]], {{.*}}) in (%{{.*}} = %c128{{[_0-9]*}}, {{.*}}) dynamic_shared_memory_size %c3136_i32 {
// CHECK:           gpu.dynamic_shared_memory {linattn.min_registers_per_thread = 128 : i64}
// CHECK:           arith.divui %[[HV]], %c2
// CHECK:           arith.remui %[[TID]], %c4
// CHECK:           arith.divui %[[TID]], %c4
// CHECK-COUNT-2:     arith.select %{{.*}}, %{{.*}}, %c39
// CHECK:           %[[Q:.*]] = memref.view {{.*}} to memref<8x16xf32, #gpu.address_space<workgroup>>
// CHECK:           %[[K:.*]] = memref.view {{.*}} to memref<8x16xf32, #gpu.address_space<workgroup>>
// CHECK:           %[[DECAY:.*]] = memref.view {{.*}} to memref<8xf32, #gpu.address_space<workgroup>>
// CHECK:           %[[BETA:.*]] = memref.view {{.*}} to memref<8xf32, #gpu.address_space<workgroup>>
// CHECK:           %[[V:.*]] = memref.view {{.*}} to memref<8x64xf32, #gpu.address_space<workgroup>>
// CHECK:           scf.if %{{.*}} {
// CHECK-COUNT-2:     memref.load {{.*}} : memref<?x?x4xf32>
// CHECK-COUNT-4:     memref.load {{.*}} : memref<?x?x2x16xbf16>
// CHECK-COUNT-4:     memref.load {{.*}} : memref<?x?x4x40xbf16>
// CHECK-COUNT-8:     memref.load {{.*}} : memref<?x4x16x40xf32>
// CHECK-COUNT-5:     gpu.shuffle  xor
// CHECK:             math.sqrt
// CHECK:             memref.store %{{.*}}, %[[Q]]
// CHECK:             memref.store %{{.*}}, %[[K]]
// CHECK:             memref.store %{{.*}}, %[[V]]
// CHECK:             math.exp
// CHECK:             memref.store %{{.*}}, %[[DECAY]]
// CHECK:             memref.store %{{.*}}, %[[BETA]]
// CHECK:             gpu.barrier
// CHECK:             scf.for %{{.*}} = {{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32) {
// CHECK:               scf.if
// CHECK:                 memref.load {{.*}} : memref<?x?x2x16xbf16>
// CHECK:                 gpu.barrier
// CHECK:               scf.for %[[ROW:.*]] = {{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32) {
// CHECK:                 vector.load %[[K]][%[[ROW]], %{{.*}}] {alignment = 16 : i64} : memref<8x16xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK:                 vector.load %[[Q]][%[[ROW]], %{{.*}}] {alignment = 16 : i64} : memref<8x16xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK:                 memref.load %[[DECAY]][%[[ROW]]]
// CHECK:                 memref.load %[[BETA]][%[[ROW]]]
// CHECK:                 memref.load %[[V]][%[[ROW]], %{{.*}}]
// CHECK:                 gpu.shuffle  xor %{{.*}}, %c1_i32
// CHECK:                 gpu.shuffle  xor %{{.*}}, %c2_i32
// CHECK-NOT:             gpu.shuffle
// CHECK-COUNT-4:         math.fma
// CHECK:                 gpu.shuffle  xor %{{.*}}, %c1_i32
// CHECK:                 gpu.shuffle  xor %{{.*}}, %c2_i32
// CHECK:                 scf.if
// CHECK:                   memref.store %{{.*}}, %[[OUT]]
// CHECK-NOT:             vector.load
// CHECK:                 memref.load %[[V]][%[[ROW]], %{{.*}}]
// CHECK:                 gpu.shuffle  xor %{{.*}}, %c1_i32
// CHECK:                 gpu.shuffle  xor %{{.*}}, %c2_i32
// CHECK-NOT:             gpu.shuffle
// CHECK-COUNT-4:         math.fma
// CHECK:                 gpu.shuffle  xor %{{.*}}, %c1_i32
// CHECK:                 gpu.shuffle  xor %{{.*}}, %c2_i32
// CHECK:                 scf.if
// CHECK:                   memref.store %{{.*}}, %[[OUT]]
// CHECK:               gpu.barrier
// CHECK:             scf.if
// CHECK-COUNT-4:       memref.store %{{.*}}, %[[STATE]]
// CHECK:             scf.if
// CHECK-COUNT-4:       memref.store %{{.*}}, %[[STATE]]
// CHECK:           } else {
// CHECK-COUNT-8:     memref.load {{.*}} : memref<?x4x16x40xf32>
// CHECK:             scf.if
// CHECK-COUNT-4:       memref.store %{{.*}}, %[[STATE]]
// CHECK:             scf.if
// CHECK-COUNT-4:       memref.store %{{.*}}, %[[STATE]]
// CHECK:           gpu.terminator
func.func @gdn(%q: tensor<?x?x2x16xbf16>, %k: tensor<?x?x2x16xbf16>, %v: tensor<?x?x4x40xbf16>, %g: tensor<?x?x4xf32>, %beta: tensor<?x?x4xf32>, %s0: tensor<?x4x16x40xf32>) -> (tensor<?x?x4x40xbf16>, tensor<?x4x16x40xf32>) {
  %o, %s = linattn.recurrence gated_delta q(%q) k(%k) v(%v) gate(%g) beta(%beta) state(%s0) {qk_l2norm}
      : (tensor<?x?x2x16xbf16>, tensor<?x?x2x16xbf16>, tensor<?x?x4x40xbf16>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x4x16x40xf32>) -> (tensor<?x?x4x40xbf16>, tensor<?x4x16x40xf32>)
  return %o, %s : tensor<?x?x4x40xbf16>, tensor<?x4x16x40xf32>
}

// V no wider than one set (32 columns): one column a thread, 96 registers.
// CHECK-LABEL: func.func @one_set(
// CHECK:         gpu.launch blocks(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c1{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}, %{{.*}} = %{{.*}}) threads
// CHECK:           gpu.dynamic_shared_memory {linattn.min_registers_per_thread = 96 : i64}
// CHECK:           memref.view {{.*}} to memref<8x32xf32, #gpu.address_space<workgroup>>
// CHECK:           scf.for %{{.*}} = {{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32) {
func.func @one_set(%q: tensor<?x?x1x16xf32>, %k: tensor<?x?x1x16xf32>, %v: tensor<?x?x1x32xf32>, %s0: tensor<?x1x16x32xf32>) -> (tensor<?x?x1x32xf32>, tensor<?x1x16x32xf32>) {
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%s0)
      : (tensor<?x?x1x16xf32>, tensor<?x?x1x16xf32>, tensor<?x?x1x32xf32>, tensor<?x1x16x32xf32>) -> (tensor<?x?x1x32xf32>, tensor<?x1x16x32xf32>)
  return %o, %s : tensor<?x?x1x32xf32>, tensor<?x1x16x32xf32>
}

// A K the lanes cannot split evenly is left to convert-linattn-to-loops.
// CHECK-LABEL: func.func @odd_keys(
// CHECK-NOT:     gpu.launch
// CHECK:         linattn.recurrence
func.func @odd_keys(%q: tensor<?x?x1x6xf32>, %k: tensor<?x?x1x6xf32>, %v: tensor<?x?x1x8xf32>, %s0: tensor<?x1x6x8xf32>) -> (tensor<?x?x1x8xf32>, tensor<?x1x6x8xf32>) {
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%s0)
      : (tensor<?x?x1x6xf32>, tensor<?x?x1x6xf32>, tensor<?x?x1x8xf32>, tensor<?x1x6x8xf32>) -> (tensor<?x?x1x8xf32>, tensor<?x1x6x8xf32>)
  return %o, %s : tensor<?x?x1x8xf32>, tensor<?x1x6x8xf32>
}

// Above K = 128 eight lanes share a column (32 keys each here, K = 256): 16
// columns a set, two sets (32 columns) a block, and the sums over a
// column's lanes take three shuffles.
// CHECK-LABEL: func.func @wide_keys(
// CHECK:         gpu.launch blocks(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c2{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}, %{{.*}} = %{{.*}}) threads
// CHECK:           arith.remui %{{.*}}, %c8
// CHECK:           memref.view {{.*}} to memref<8x288xf32, #gpu.address_space<workgroup>>
// CHECK:           scf.for
// CHECK:             scf.for
// CHECK-COUNT-8:       vector.load {{.*}} : memref<8x288xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK:               gpu.shuffle  xor %{{.*}}, %c1_i32
// CHECK:               gpu.shuffle  xor %{{.*}}, %c2_i32
// CHECK:               gpu.shuffle  xor %{{.*}}, %c4_i32
func.func @wide_keys(%q: tensor<?x?x1x256xbf16>, %k: tensor<?x?x1x256xbf16>, %v: tensor<?x?x1x64xbf16>, %beta: tensor<?x?x1xf32>, %s0: tensor<?x1x256x64xf32>) -> (tensor<?x?x1x64xbf16>, tensor<?x1x256x64xf32>) {
  %o, %s = linattn.recurrence delta q(%q) k(%k) v(%v) beta(%beta) state(%s0)
      : (tensor<?x?x1x256xbf16>, tensor<?x?x1x256xbf16>, tensor<?x?x1x64xbf16>, tensor<?x?x1xf32>, tensor<?x1x256x64xf32>) -> (tensor<?x?x1x64xbf16>, tensor<?x1x256x64xf32>)
  return %o, %s : tensor<?x?x1x64xbf16>, tensor<?x1x256x64xf32>
}
