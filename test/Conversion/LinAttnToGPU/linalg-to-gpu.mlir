// RUN: linattn-opt %s --convert-linattn-linalg-to-gpu --cse | FileCheck %s
// RUN: linattn-opt %s --convert-linattn-linalg-to-gpu --convert-linattn-to-gpu | FileCheck %s --check-prefix=KERNEL

// A host linalg op on buffers (the token scan's o_t = S_t^T q_t): its
// parallel dimensions (b, t, v) collapse into one, tiled by 256, the tiles
// mapped to blocks and their elements to threads (v varies fastest, so
// neighbouring threads read neighbouring S elements); the sum over k stays
// a sequential loop inside each thread. Then it is a kernel.

// CHECK-LABEL: func.func @contract
// CHECK:         %[[N:.*]] = arith.muli %{{.*}}, %c8 : index
// CHECK:         scf.parallel (%[[TILE:.*]]) = (%c0{{.*}}) to (%[[N]]) step (%[[STEP:.*]]) {
// CHECK:           scf.parallel (%[[LANE:.*]]) = (%c0{{.*}}) to (%[[STEP]]) step (%c1{{.*}}) {
// CHECK:             %[[FLAT:.*]] = arith.addi %[[LANE]], %[[TILE]] : index
// CHECK:             scf.if
// CHECK:               %[[V:.*]] = arith.remsi %[[FLAT]], %c8
// CHECK:               scf.for %[[K:[a-z0-9_]+]] = %c0{{.*}} to %c4
// CHECK:                 memref.load %arg0[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<?x?x4x8xf32>
// CHECK:                 arith.mulf
// CHECK:                 arith.addf
// CHECK:                 memref.store
// CHECK:           } {mapping = [#gpu.loop_dim_map<processor = thread_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}
// CHECK:         } {mapping = [#gpu.loop_dim_map<processor = block_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}

// KERNEL-LABEL: func.func @contract
// KERNEL:         gpu.launch blocks({{.*}}) threads({{.*}})
// KERNEL-NOT:     linalg.generic
#s = affine_map<(b, t, v, k) -> (b, t, k, v)>
#q = affine_map<(b, t, v, k) -> (b, t, k)>
#o = affine_map<(b, t, v, k) -> (b, t, v)>
func.func @contract(%S: memref<?x?x4x8xf32>, %q: memref<?x?x4xbf16>, %o: memref<?x?x8xf32>) {
  linalg.generic {indexing_maps = [#s, #q, #o], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%S, %q : memref<?x?x4x8xf32>, memref<?x?x4xbf16>) outs(%o : memref<?x?x8xf32>) {
  ^bb0(%x: f32, %y: bf16, %acc: f32):
    %w = arith.extf %y : bf16 to f32
    %p = arith.mulf %x, %w : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  return
}
