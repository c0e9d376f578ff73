// RUN: linattn-opt %s -split-input-file --convert-linattn-scan-to-gpu --cse | FileCheck %s

// The op description's scan (scalar decay per head): every element position
// (h, i, j) only meets itself, so all of them are thread coordinates, 2 x 4 x
// 16 x 32 = 4096 threads in blocks of 256, each carrying one f32 across
// the 8 scan steps and reading the next element where the combiner needs
// it. The decay carry's results are unused and no used carry reads it: it
// is not computed (one mulf, the decay times the state).

// CHECK-LABEL: func.func @scalar_decay
// CHECK-DAG:     %[[M:.*]] = bufferization.to_buffer %arg0 read_only
// CHECK-DAG:     %[[KV:.*]] = bufferization.to_buffer %arg1 read_only
// CHECK-DAG:     %[[S0:.*]] = bufferization.to_buffer %arg3 read_only
// CHECK-DAG:     %[[OUT:.*]] = memref.alloc() : memref<2x8x4x16x32xf32>
// CHECK-DAG:     %[[CARRY:.*]] = memref.alloc() : memref<2x4x16x32xf32>
// CHECK-NOT:     memref.alloc
// CHECK:         gpu.launch blocks({{.*}}) threads({{.*}}) in (%{{.*}} = %c256,
// CHECK:           %[[J:.*]] = arith.remui %{{.*}}, %c32
// CHECK:           %[[I:.*]] = arith.remui %{{.*}}, %c16
// CHECK:           %[[H:.*]] = arith.remui %{{.*}}, %c4
// CHECK:           %[[B:.*]] = arith.remui %{{.*}}, %c2
// CHECK:           %[[INIT:.*]] = memref.load %[[S0]][%[[B]], %[[H]], %[[I]], %[[J]]]
// CHECK:           %[[FINAL:.*]] = scf.for %[[T:[a-z0-9_]+]] = %c0 to %c8 step %c1 iter_args(%[[ACC:.*]] = %[[INIT]]) -> (f32) {
// CHECK-DAG:         %[[M2:.*]] = memref.load %[[M]][%[[B]], %[[T]], %[[H]]]
// CHECK-DAG:         %[[B2:.*]] = memref.load %[[KV]][%[[B]], %[[T]], %[[H]], %[[I]], %[[J]]]
// CHECK:             %[[P:.*]] = arith.mulf %[[M2]], %[[ACC]] : f32
// CHECK-NEXT:        %[[R:.*]] = arith.addf %[[P]], %[[B2]] : f32
// CHECK-NEXT:        memref.store %[[R]], %[[OUT]][%[[B]], %[[T]], %[[H]], %[[I]], %[[J]]]
// CHECK-NEXT:        scf.yield %[[R]] : f32
// CHECK:           memref.store %[[FINAL]], %[[CARRY]][%[[B]], %[[H]], %[[I]], %[[J]]]
// CHECK:         bufferization.to_tensor %[[OUT]]
// CHECK:         bufferization.to_tensor %[[CARRY]]
#h = affine_map<(h, i, j) -> (h)>
#id3 = affine_map<(h, i, j) -> (h, i, j)>
func.func @scalar_decay(%m: tensor<2x8x4xf32>, %kv: tensor<2x8x4x16x32xf32>, %one: tensor<2x4xf32>, %s0: tensor<2x4x16x32xf32>) -> (tensor<2x8x4x16x32xf32>, tensor<2x4x16x32xf32>) {
  %S:2, %carry:2 = linattn.scan dimension(1)
      ins(%m, %kv : tensor<2x8x4xf32>, tensor<2x8x4x16x32xf32>)
      init(%one, %s0 : tensor<2x4xf32>, tensor<2x4x16x32xf32>) {
  ^bb0(%m1: tensor<4xf32>, %b1: tensor<4x16x32xf32>, %m2: tensor<4xf32>, %b2: tensor<4x16x32xf32>):
    %mm = arith.mulf %m2, %m1 : tensor<4xf32>
    %e = tensor.empty() : tensor<4x16x32xf32>
    %b = linalg.generic {indexing_maps = [#h, #id3, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
        ins(%m2, %b1, %b2 : tensor<4xf32>, tensor<4x16x32xf32>, tensor<4x16x32xf32>) outs(%e : tensor<4x16x32xf32>) {
    ^bb0(%a: f32, %x: f32, %y: f32, %o: f32):
      %p = arith.mulf %a, %x : f32
      %r = arith.addf %p, %y : f32
      linalg.yield %r : f32
    } -> tensor<4x16x32xf32>
    linattn.yield %mm, %b : tensor<4xf32>, tensor<4x16x32xf32>
  } -> tensor<2x8x4xf32>, tensor<2x8x4x16x32xf32>, tensor<2x4xf32>, tensor<2x4x16x32xf32>
  return %S#1, %carry#1 : tensor<2x8x4x16x32xf32>, tensor<2x4x16x32xf32>
}

// -----

// A segment scan's dense transition, exclusive: (M1, B1) then (M2, B2) =
// (M2 M1, M2 B1 + B2) per head. Only the states B are used, and B' reads
// M2 (the next element) but not the carried M: the M chain is not computed.
// B's row index meets the sum over k, so it is held: each thread (b, h, c)
// keeps a column of 4 values in a vector, stores it before folding
// (exclusive), starts B' from B2's column and reads M2 from memory.

// CHECK-LABEL: func.func @dense_affine
// CHECK:         gpu.launch
// CHECK:           %[[COL:.*]] = arith.remui %{{.*}}, %c8
// CHECK:           %[[HEAD:.*]] = arith.remui %{{.*}}, %c2
// CHECK:           %[[SEQ:.*]] = arith.remui %{{.*}}, %dim
// CHECK:           %[[INIT:.*]] = scf.for {{.*}} -> (vector<4xf32>)
// CHECK:           scf.for %[[N:[a-z0-9_]+]] = %c0 to %c3 step %c1 iter_args(%[[ACC:.*]] = %[[INIT]]) -> (vector<4xf32>) {
// CHECK:             scf.for %[[R0:[a-z0-9_]+]] = %c0 to %c4
// CHECK-NEXT:          %[[X:.*]] = vector.extract %[[ACC]][%[[R0]]]
// CHECK-NEXT:          memref.store %[[X]], %{{.*}}[%[[SEQ]], %[[N]], %[[HEAD]], %[[R0]], %[[COL]]]
// CHECK:             memref.load %{{.*}}[%[[SEQ]], %[[N]], %[[HEAD]], %{{.*}}, %[[COL]]] : memref<?x3x2x4x8xf32>
// CHECK:             scf.for %[[R:[a-z0-9_]+]] = %c0 to %c4
// CHECK:               scf.for %[[K:[a-z0-9_]+]] = %c0 to %c4
// CHECK:                 memref.load %{{.*}}[%[[SEQ]], %[[N]], %[[HEAD]], %[[R]], %[[K]]] : memref<?x3x2x4x4xf32>
// CHECK:                 vector.extract %[[ACC]][%[[K]]]
// CHECK:                 arith.mulf
// CHECK:                 arith.addf
// CHECK:                 vector.insert %{{.*}} [%[[R]]]
// CHECK-NOT:       memref<?x2x4x4xf32>
// CHECK:           gpu.terminator
#hrk = affine_map<(h, r, c, k) -> (h, r, k)>
#hkc = affine_map<(h, r, c, k) -> (h, k, c)>
#hrc = affine_map<(h, r, c, k) -> (h, r, c)>
func.func @dense_affine(%m: tensor<?x3x2x4x4xf32>, %off: tensor<?x3x2x4x8xf32>, %m0: tensor<?x2x4x4xf32>, %s0: tensor<?x2x4x8xf32>) -> (tensor<?x3x2x4x8xf32>, tensor<?x2x4x8xf32>) {
  %r:4 = linattn.scan dimension(1) exclusive
      ins(%m, %off : tensor<?x3x2x4x4xf32>, tensor<?x3x2x4x8xf32>)
      init(%m0, %s0 : tensor<?x2x4x4xf32>, tensor<?x2x4x8xf32>) {
  ^bb0(%m1: tensor<2x4x4xf32>, %b1: tensor<2x4x8xf32>, %m2: tensor<2x4x4xf32>, %b2: tensor<2x4x8xf32>):
    %z = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<2x4x4xf32>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %mm = linalg.generic {indexing_maps = [#hrk, #hkc, #hrc], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
        ins(%m2, %m1 : tensor<2x4x4xf32>, tensor<2x4x4xf32>) outs(%f : tensor<2x4x4xf32>) {
    ^bb0(%a: f32, %x: f32, %o: f32):
      %p = arith.mulf %a, %x : f32
      %s = arith.addf %o, %p : f32
      linalg.yield %s : f32
    } -> tensor<2x4x4xf32>
    %b = linalg.generic {indexing_maps = [#hrk, #hkc, #hrc], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
        ins(%m2, %b1 : tensor<2x4x4xf32>, tensor<2x4x8xf32>) outs(%b2 : tensor<2x4x8xf32>) {
    ^bb0(%a: f32, %x: f32, %o: f32):
      %p = arith.mulf %a, %x : f32
      %s = arith.addf %o, %p : f32
      linalg.yield %s : f32
    } -> tensor<2x4x8xf32>
    linattn.yield %mm, %b : tensor<2x4x4xf32>, tensor<2x4x8xf32>
  } -> tensor<?x3x2x4x4xf32>, tensor<?x3x2x4x8xf32>, tensor<?x2x4x4xf32>, tensor<?x2x4x8xf32>
  return %r#1, %r#3 : tensor<?x3x2x4x8xf32>, tensor<?x2x4x8xf32>
}

// -----

// Inclusive, without init, reversed: the first step (the last index) takes
// the element as it is.

// CHECK-LABEL: func.func @reverse_sum
// CHECK:         gpu.launch
// CHECK:           scf.for %[[S:[a-z0-9_]+]] = %c0 to %[[LEN:.*]] step %c1 iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32) {
// CHECK:             %[[LAST:.*]] = arith.subi %[[LEN]], %c1
// CHECK-NEXT:        %[[T:.*]] = arith.subi %[[LAST]], %[[S]]
// CHECK-NEXT:        %[[FIRST:.*]] = arith.cmpi eq, %[[S]], %c0
// CHECK-NEXT:        %[[R:.*]] = scf.if %[[FIRST]] -> (f32) {
// CHECK-NEXT:          %[[X:.*]] = memref.load %{{.*}}[%{{.*}}, %[[T]], %{{.*}}]
// CHECK-NEXT:          scf.yield %[[X]]
// CHECK-NEXT:        } else {
// CHECK-NEXT:          %[[Y:.*]] = memref.load %{{.*}}[%{{.*}}, %[[T]], %{{.*}}]
// CHECK-NEXT:          %[[SUM:.*]] = arith.addf %[[ACC]], %[[Y]]
// CHECK-NEXT:          scf.yield %[[SUM]]
// CHECK:             memref.store %[[R]], %{{.*}}[%{{.*}}, %[[T]], %{{.*}}]
func.func @reverse_sum(%x: tensor<4x?x8xf32>) -> (tensor<4x?x8xf32>, tensor<4x8xf32>) {
  %r:2 = linattn.scan dimension(1) reverse ins(%x : tensor<4x?x8xf32>) {
  ^bb0(%a: tensor<8xf32>, %b: tensor<8xf32>):
    %s = arith.addf %a, %b : tensor<8xf32>
    linattn.yield %s : tensor<8xf32>
  } -> tensor<4x?x8xf32>, tensor<4x8xf32>
  return %r#0, %r#1 : tensor<4x?x8xf32>, tensor<4x8xf32>
}

// -----

// Nothing reads the scan: it goes, and no kernel is made.

// CHECK-LABEL: func.func @unused
// CHECK-NOT:     gpu.launch
// CHECK-NOT:     linattn.scan
func.func @unused(%x: tensor<4x5x8xf32>) {
  %r:2 = linattn.scan dimension(1) ins(%x : tensor<4x5x8xf32>) {
  ^bb0(%a: tensor<8xf32>, %b: tensor<8xf32>):
    %s = arith.addf %a, %b : tensor<8xf32>
    linattn.yield %s : tensor<8xf32>
  } -> tensor<4x5x8xf32>, tensor<4x8xf32>
  return
}
