// RUN: linattn-opt %s --convert-linattn-linalg-to-gpu --cse | FileCheck %s
// RUN: linattn-opt %s --convert-linattn-linalg-to-gpu --convert-linattn-to-gpu | FileCheck %s --check-prefix=KERNEL

// A host linalg op on buffers (the token scan's o_t = S_t^T q_t): its
// leading dimension b, followed by the dynamic t, goes on the grid's y (at
// most 65535 blocks, each walking b = y, y + 65535, ...); the other
// parallel dimensions (t, v) collapse into one, tiled by 256, the tiles
// mapped to blocks and their elements to threads (v varies fastest, so
// neighbouring threads read neighbouring S elements; t is the outermost of
// the collapsed, so recovering the indices divides by the constant 8
// only). Its body holds a loop (the sum over k, sequential inside each
// thread), so a thread takes one element. Then it is a kernel.

// CHECK-LABEL: func.func @contract
// CHECK-DAG:     %[[B:.*]] = memref.dim %arg0, %c0
// CHECK-DAG:     %[[T:.*]] = memref.dim %arg0, %c1
// CHECK:         arith.minui %{{.*}}, %c65535 : index
// CHECK:         %[[TILES:.*]] = arith.ceildivui %[[N:.*]], %c256 : index
// CHECK:         scf.parallel (%[[BY:.*]], %[[TILE:.*]]) = (%c0{{.*}}) to (%{{.*}}, %[[TILES]]) step
// CHECK:           scf.parallel (%{{.*}}, %[[LANE:.*]]) = (%c0{{.*}}) to (%c1, %c256) step
// CHECK:             %[[START:.*]] = arith.muli %[[TILE]], %c256
// CHECK:             %[[FLAT:.*]] = arith.addi %[[START]], %[[LANE]] : index
// CHECK:             scf.for %[[BATCH:[a-z0-9_]+]] = %[[BY]] to %{{.*}} step %c65535
// CHECK:               %[[IN:.*]] = arith.cmpi ult, %[[FLAT]], %[[N]]
// CHECK:               scf.if %[[IN]]
// CHECK-NOT:             arith.divsi %{{.*}}, %[[T]]
// CHECK:                 arith.remsi %[[FLAT]], %c8
// CHECK:                 arith.divsi %[[FLAT]], %c8
// CHECK:                 scf.for %[[K:[a-z0-9_]+]] = %c0{{.*}} to %c4
// CHECK:                   memref.load %arg0[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<?x?x4x8xf32>
// CHECK:                   arith.mulf
// CHECK:                   arith.addf
// CHECK:                   memref.store
// CHECK:           } {mapping = [#gpu.loop_dim_map<processor = sequential, map = (d0) -> (d0), bound = (d0) -> (d0)>, #gpu.loop_dim_map<processor = thread_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}
// CHECK:         } {mapping = [#gpu.loop_dim_map<processor = block_y, map = (d0) -> (d0), bound = (d0) -> (d0)>, #gpu.loop_dim_map<processor = block_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}

// A copy whose rows are not 16-byte pieces (3 x f32; loads, stores,
// arithmetic: a straight-line body): each thread
// takes eight elements 256 apart (tiles of 2048), all eight loads (at the
// element clamped into bounds) before the eight stores, each store kept
// to elements below the count. Here too the static 2 goes on the grid's y
// since the dimension after it is dynamic.

// CHECK-LABEL: func.func @copy
// CHECK:         %[[N:.*]] = arith.muli %{{.*}}, %c3 : index
// CHECK:         arith.ceildivui %[[N]], %c2048 : index
// CHECK:         scf.for
// CHECK:           %[[LAST:.*]] = arith.subi %[[N]], %c1
// CHECK:           %[[IN0:.*]] = arith.cmpi ult, %[[E0:.*]], %[[N]]
// CHECK:           %[[C0:.*]] = arith.minui %[[E0]], %[[LAST]]
// CHECK:           %[[X0:.*]] = memref.load %arg0
// CHECK:           %[[E1:.*]] = arith.addi %[[E0]], %c256
// CHECK:           %[[IN1:.*]] = arith.cmpi ult, %[[E1]], %[[N]]
// CHECK:           %[[X1:.*]] = memref.load %arg0
// CHECK-COUNT-6:   memref.load %arg0
// CHECK-NOT:       memref.load
// CHECK:           scf.if %[[IN0]] {
// CHECK-NEXT:        memref.store %[[X0]], %arg1
// CHECK-NEXT:      }
// CHECK-NEXT:      scf.if %[[IN1]] {
// CHECK-NEXT:        memref.store %[[X1]], %arg1
// CHECK-COUNT-6:   memref.store
// CHECK-NOT:       memref.store
// CHECK:         } {mapping = [#gpu.loop_dim_map<processor = block_y

// A copy of whole rows (the padding of K = 48 into a [B, T, 8, 64]
// buffer's leading columns): unit innermost stride, 48 bf16 = six 16-byte
// pieces, every row on a 16-byte boundary (strides 512 and 64 elements).
// The loop runs over the pieces, each a vector load and store of 8 bf16
// aligned to 16 bytes at column 8 j, eight pieces a thread (loads first).

// CHECK-LABEL: func.func @copy_rows
// CHECK:         arith.ceildivui %{{.*}}, %c2048 : index
// CHECK:         scf.for
// CHECK:           %[[J:.*]] = arith.remsi %{{.*}}, %c6 : index
// CHECK:           %[[COL:.*]] = arith.muli %[[J]], %c8 : index
// CHECK:           %[[P0:.*]] = vector.load %arg0[%{{.*}}, %{{.*}}, %{{.*}}, %[[COL]]] {alignment = 16 : i64} : memref<?x?x8x48xbf16>, vector<8xbf16>
// CHECK-COUNT-7:   vector.load %arg0
// CHECK-NOT:       vector.load
// CHECK:           scf.if
// CHECK-NEXT:        vector.store %[[P0]], %arg1[%{{.*}}, %{{.*}}, %{{.*}}, %[[COL]]] {alignment = 16 : i64} : memref<?x?x8x48xbf16, strided<[?, 512, 64, 1]>>, vector<8xbf16>
// CHECK-COUNT-7:   vector.store
// CHECK:         } {mapping = [#gpu.loop_dim_map<processor = block_y

// A fill of whole rows: a broadcast stored 16 bytes at a time.

// CHECK-LABEL: func.func @fill_rows
// CHECK:           %[[Z:.*]] = vector.broadcast %{{.*}} : f32 to vector<4xf32>
// CHECK:           vector.store %[[Z]], %arg0[{{.*}}] {alignment = 16 : i64} : memref<?x4x80x80xf32>, vector<4xf32>

// Rows that do not start on 16-byte boundaries keep the element loops:
// an offset of 4 bf16 (8 bytes), rows of 8 f32 with a row stride of 10.

// CHECK-LABEL: func.func @unaligned_rows
// CHECK-NOT:     vector.
// CHECK:         memref.load
// CHECK-NOT:     vector.
// CHECK:         memref.load
// CHECK-NOT:     vector.
// CHECK:       return

// A static first loop before static ones collapses with them (every
// divisor a constant).

// CHECK-LABEL: func.func @static_shape
// CHECK-NOT:     block_y
// CHECK:         } {mapping = [#gpu.loop_dim_map<processor = block_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}

// KERNEL-LABEL: func.func @contract
// KERNEL:         %[[Y:.*]] = arith.minui %{{.*}}, %c65535
// KERNEL:         gpu.launch blocks({{.*}}) in ({{.*}} = %{{.*}}, {{.*}} = %{{[a-z0-9_]+}}, {{.*}} = %c1{{.*}}) threads({{.*}})
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

func.func @copy(%x: memref<2x?x3xf32>, %y: memref<2x?x3xf32>) {
  linalg.copy ins(%x : memref<2x?x3xf32>) outs(%y : memref<2x?x3xf32>)
  return
}

func.func @copy_rows(%x: memref<?x?x8x48xbf16>, %y: memref<?x?x8x48xbf16, strided<[?, 512, 64, 1]>>) {
  linalg.copy ins(%x : memref<?x?x8x48xbf16>) outs(%y : memref<?x?x8x48xbf16, strided<[?, 512, 64, 1]>>)
  return
}

func.func @fill_rows(%s: memref<?x4x80x80xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%s : memref<?x4x80x80xf32>)
  return
}

func.func @unaligned_rows(%x: memref<?x8xbf16, strided<[8, 1], offset: 4>>, %y: memref<?x8xbf16>,
                          %a: memref<?x8xf32, strided<[10, 1]>>, %b: memref<?x8xf32>) {
  linalg.copy ins(%x : memref<?x8xbf16, strided<[8, 1], offset: 4>>) outs(%y : memref<?x8xbf16>)
  linalg.copy ins(%a : memref<?x8xf32, strided<[10, 1]>>) outs(%b : memref<?x8xf32>)
  return
}

func.func @static_shape(%x: memref<?x3x4xf32>, %y: memref<?x3x4xf32>) {
  linalg.copy ins(%x : memref<?x3x4xf32>) outs(%y : memref<?x3x4xf32>)
  return
}
