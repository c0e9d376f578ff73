// RUN: linattn-opt %s --convert-linattn-chunked-to-gpu | FileCheck %s

// linattn.l2norm on the GPU: x / sqrt(sum(x^2) + eps) per row (b, t, h),
// the rows' keys in 16-byte vectors. K = 128 bf16: a lane loads 8 keys, a
// row takes 16 lanes, a warp 2 rows at a time and 2 such groups (two loads
// in flight a lane), a block of 128 threads 16 consecutive rows of T * H.
// Each group's sum of squares goes round its 16 lanes by 4 xor shuffles;
// rows past T * H are read clamped and their stores skipped; the
// normalised rows are stored as f32 vectors.

// CHECK-LABEL: func.func @norm(
// CHECK:         %[[IN:.*]] = bufferization.to_buffer
// CHECK:         %[[OUT:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?x2x128xf32>
// CHECK:         %[[ROWS:.*]] = arith.muli %{{.*}}, %c2{{[_0-9]*}} : index
// CHECK:         %[[BLOCKS:.*]] = arith.ceildivui %[[ROWS]], %c16{{[_0-9]*}} : index
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %[[BLOCKS]], {{.*}}) threads(%{{.*}}) in (%{{.*}} = %c128{{[_0-9]*}}, {{.*}}) {
// CHECK-COUNT-2:   vector.load %[[IN]]{{.*}} {alignment = 16 : i64} : memref<?x?x2x128xbf16>, vector<8xbf16>
// CHECK-NOT:       vector.load
// CHECK:           gpu.shuffle  xor %{{.*}}, %c8_i32
// CHECK:           gpu.shuffle  xor %{{.*}}, %c4_i32
// CHECK:           gpu.shuffle  xor %{{.*}}, %c2_i32
// CHECK:           gpu.shuffle  xor %{{.*}}, %c1_i32
// CHECK:           math.sqrt
// CHECK:           gpu.shuffle  xor %{{.*}}, %c8_i32
// CHECK:           math.sqrt
// CHECK-NOT:       gpu.shuffle
// CHECK:           scf.if
// CHECK-NEXT:        vector.store %{{.*}}, %[[OUT]]{{.*}} : memref<?x?x2x128xf32>, vector<8xf32>
// CHECK:           scf.if
// CHECK-NEXT:        vector.store %{{.*}}, %[[OUT]]
// CHECK-NOT:       vector.store
// CHECK:           gpu.terminator
func.func @norm(%q: tensor<?x?x2x128xbf16>) -> tensor<?x?x2x128xf32> {
  %y = linattn.l2norm %q : tensor<?x?x2x128xbf16> -> tensor<?x?x2x128xf32>
  return %y : tensor<?x?x2x128xf32>
}

// K = 40 f32: 10 vectors of 4 keys on 16 lanes; lanes past the 10th read
// a clamped vector, select zero and skip their stores.
// CHECK-LABEL: func.func @partial_row(
// CHECK:         gpu.launch
// CHECK:           %[[IN_ROW:.*]] = arith.cmpi ult, %{{.*}}, %c10{{[_0-9]*}} : index
// CHECK:           arith.minui %{{.*}}, %c9{{[_0-9]*}} : index
// CHECK:           vector.load {{.*}} : memref<?x?x2x40xf32>, vector<4xf32>
// CHECK:           arith.select %{{.*}}, %{{.*}}, %{{.*}} : vector<4xf32>
// CHECK:           math.sqrt
// CHECK:           scf.if
// CHECK-NEXT:        vector.store {{.*}} : memref<?x?x2x40xf32>, vector<4xf32>
func.func @partial_row(%q: tensor<?x?x2x40xf32>) -> tensor<?x?x2x40xf32> {
  %y = linattn.l2norm %q : tensor<?x?x2x40xf32> -> tensor<?x?x2x40xf32>
  return %y : tensor<?x?x2x40xf32>
}

// K = 256 bf16 normalised to bf16 (the chunked forward's copies): 32
// vectors of 8 keys, a row a warp's 32 lanes (lane l's 16 bytes its keys
// 8 l .. 8 l + 7), two rows a warp in turn: 8 rows a block.
// CHECK-LABEL: func.func @wide_row(
// CHECK:         %[[BLOCKS:.*]] = arith.ceildivui %{{.*}}, %c8{{[_0-9]*}} : index
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %[[BLOCKS]], {{.*}})
// CHECK:           vector.load {{.*}} : memref<?x?x2x256xbf16>, vector<8xbf16>
// CHECK:           gpu.shuffle  xor %{{.*}}, %c16_i32
// CHECK:           arith.truncf %{{.*}} : vector<8xf32> to vector<8xbf16>
// CHECK:           vector.store {{.*}} : memref<?x?x2x256xbf16>, vector<8xbf16>
func.func @wide_row(%q: tensor<?x?x2x256xbf16>) -> tensor<?x?x2x256xbf16> {
  %y = linattn.l2norm %q : tensor<?x?x2x256xbf16> -> tensor<?x?x2x256xbf16>
  return %y : tensor<?x?x2x256xbf16>
}

// linattn.rnorm: the same rows and sums, only the factor stored: a row's
// first lane writes 1 / sqrt(sum(x^2) + eps) to [B, T, H] f32, nothing of
// the row itself.
// CHECK-LABEL: func.func @reciprocal_norms(
// CHECK:         %[[IN:.*]] = bufferization.to_buffer
// CHECK:         %[[OUT:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?x2xf32>
// CHECK:         gpu.launch
// CHECK-COUNT-2:   vector.load %[[IN]]{{.*}} : memref<?x?x2x128xbf16>, vector<8xbf16>
// CHECK:           math.sqrt
// CHECK:           math.sqrt
// CHECK-NOT:       vector.store
// CHECK:           scf.if
// CHECK-NEXT:        memref.store %{{.*}}, %[[OUT]][{{.*}}] : memref<?x?x2xf32>
// CHECK:           scf.if
// CHECK-NEXT:        memref.store %{{.*}}, %[[OUT]][{{.*}}] : memref<?x?x2xf32>
// CHECK-NOT:       memref.store
// CHECK:           gpu.terminator
func.func @reciprocal_norms(%q: tensor<?x?x2x128xbf16>) -> tensor<?x?x2xf32> {
  %r = linattn.rnorm %q : tensor<?x?x2x128xbf16> -> tensor<?x?x2xf32>
  return %r : tensor<?x?x2xf32>
}
