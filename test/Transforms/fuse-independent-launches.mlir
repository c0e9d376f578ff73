// RUN: linattn-opt %s --split-input-file --linattn-fuse-independent-launches | FileCheck %s

// The padding of one input: a fill of the slab past K and a copy of the
// input into the leading slice of the same allocation (disjoint along the
// last dimension), then an independent copy of a second input: one launch
// over a flat grid of x1 y + x2 y + x3 y blocks (the first launch's, then
// the second's, then the third's), each body under its block range, its
// (x, y) recovered from the flat index.

// CHECK-LABEL: func.func @pad(
// CHECK-SAME:      %[[Q:[^:]+]]: memref<?x48xbf16>, %[[K:[^:]+]]: memref<?x48xbf16>, %[[X1:[^:]+]]: index, %[[X2:[^:]+]]: index, %[[X3:[^:]+]]: index, %[[Y:[^:]+]]: index)
// CHECK:         %[[A:.*]] = memref.alloc
// CHECK:         %[[SLAB:.*]] = memref.subview %[[A]][0, 48]
// CHECK:         %[[LEAD:.*]] = memref.subview %[[A]][0, 0]
// CHECK:         %[[N1:.*]] = arith.muli %[[X1]], %[[Y]] : index
// CHECK:         %[[N2:.*]] = arith.muli %[[X2]], %[[Y]] : index
// CHECK:         %[[N12:.*]] = arith.addi %[[N1]], %[[N2]] : index
// CHECK:         %[[B:.*]] = memref.alloc
// CHECK:         %[[N3:.*]] = arith.muli %[[X3]], %[[Y]] : index
// CHECK:         %[[N:.*]] = arith.addi %[[N12]], %[[N3]] : index
// CHECK:         %[[ONE:.*]] = arith.constant 1 : index
// CHECK:         gpu.launch blocks(%[[I:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[N]], %{{.*}} = %[[ONE]], %{{.*}} = %[[ONE]]) threads(%[[TX:[^,]*]],
// CHECK:           arith.cmpi ult, %[[I]], %[[N12]] : index
// CHECK:           scf.if
// CHECK:             arith.cmpi ult, %[[I]], %[[N1]] : index
// CHECK:             scf.if
// CHECK-NEXT:          arith.remui %[[I]], %[[X1]] : index
// CHECK-NEXT:          %[[Y1:.*]] = arith.divui %[[I]], %[[X1]] : index
// CHECK-NEXT:          memref.store %{{.*}}, %[[SLAB]][%[[Y1]], %[[TX]]]
// CHECK-NEXT:        }
// CHECK-NEXT:        arith.cmpi uge, %[[I]], %[[N1]] : index
// CHECK-NEXT:        scf.if
// CHECK-NEXT:          %[[J:.*]] = arith.subi %[[I]], %[[N1]] : index
// CHECK-NEXT:          %[[X:.*]] = arith.remui %[[J]], %[[X2]] : index
// CHECK-NEXT:          %[[Y2:.*]] = arith.divui %[[J]], %[[X2]] : index
// CHECK-NEXT:          %[[E:.*]] = memref.load %[[Q]][%[[Y2]], %[[X]]]
// CHECK-NEXT:          memref.store %[[E]], %[[LEAD]][%[[Y2]], %[[X]]]
// CHECK:           arith.cmpi uge, %[[I]], %[[N12]] : index
// CHECK-NEXT:      scf.if
// CHECK-NEXT:        %[[J3:.*]] = arith.subi %[[I]], %[[N12]] : index
// CHECK-NEXT:        %[[X3I:.*]] = arith.remui %[[J3]], %[[X3]] : index
// CHECK-NEXT:        %[[Y3:.*]] = arith.divui %[[J3]], %[[X3]] : index
// CHECK-NEXT:        %[[F:.*]] = memref.load %[[K]][%[[Y3]], %[[X3I]]]
// CHECK-NEXT:        memref.store %[[F]], %[[B]][%[[Y3]], %[[X3I]]]
// CHECK:           gpu.terminator
// CHECK-NOT:     gpu.launch
// CHECK:         return
func.func @pad(%q: memref<?x48xbf16>, %k: memref<?x48xbf16>,
               %x1: index, %x2: index, %x3: index, %y: index)
    -> (memref<?x64xbf16>, memref<?x48xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %zero = arith.constant 0.0 : bf16
  %rows = memref.dim %q, %c0 : memref<?x48xbf16>
  %a = memref.alloc(%rows) : memref<?x64xbf16>
  %slab = memref.subview %a[0, 48] [%rows, 16] [1, 1]
      : memref<?x64xbf16> to memref<?x16xbf16, strided<[64, 1], offset: 48>>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %x1, %gy = %y, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
    memref.store %zero, %slab[%by, %tx] : memref<?x16xbf16, strided<[64, 1], offset: 48>>
    gpu.terminator
  }
  %lead = memref.subview %a[0, 0] [%rows, 48] [1, 1]
      : memref<?x64xbf16> to memref<?x48xbf16, strided<[64, 1]>>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %x2, %gy = %y, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
    %e = memref.load %q[%by, %bx] : memref<?x48xbf16>
    memref.store %e, %lead[%by, %bx] : memref<?x48xbf16, strided<[64, 1]>>
    gpu.terminator
  }
  %b = memref.alloc(%rows) : memref<?x48xbf16>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %x3, %gy = %y, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
    %e = memref.load %k[%by, %bx] : memref<?x48xbf16>
    memref.store %e, %b[%by, %bx] : memref<?x48xbf16>
    gpu.terminator
  }
  return %a, %b : memref<?x64xbf16>, memref<?x48xbf16>
}

// -----

// A body that reads its grid size sees its own: the second's gridDim.x is
// its launch's x2, not the fused grid's. One-dimensional grids need no
// division: a block's x is its flat index less the blocks before.

// CHECK-LABEL: func.func @grid_size(
// CHECK-SAME:      %{{[^:]+}}: memref<?xf32>, %{{[^:]+}}: memref<?xf32>, %[[X1:[^:]+]]: index, %[[X2:[^:]+]]: index)
// CHECK:         gpu.launch blocks(%[[I:[^,]*]],
// CHECK:           scf.if
// CHECK-NEXT:        memref.store %[[X1]]
// CHECK:           scf.if
// CHECK-NEXT:        arith.subi %[[I]], %[[X1]] : index
// CHECK-NEXT:        memref.store %[[X2]]
func.func @grid_size(%a: memref<?xf32>, %b: memref<?xf32>, %x1: index, %x2: index) {
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %ma = memref.alloc() : memref<4xindex>
  %mb = memref.alloc() : memref<4xindex>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %x1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    memref.store %gx, %ma[%tx] : memref<4xindex>
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %x2, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    memref.store %gx, %mb[%tx] : memref<4xindex>
    gpu.terminator
  }
  return
}

// -----

// What keeps launches apart: a read of what the one before wrote (the
// same allocation, ranges not disjoint); a write to a function argument
// where the other reads another (they may alias); different block sizes;
// dynamic shared memory; a call between them; a body reading its block id
// from the hardware (gpu.block_id: it would see the fused grid's).

// CHECK-LABEL: func.func @apart(
// CHECK-COUNT-7: gpu.launch
// CHECK-NOT:     gpu.launch
// CHECK:         return
func.func @apart(%in: memref<?xf32>, %out: memref<?xf32>, %x: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c1024 = arith.constant 1024 : i32
  %t = memref.alloc() : memref<256xf32>
  %lo = memref.subview %t[0] [128] [1] : memref<256xf32> to memref<128xf32, strided<[1]>>
  %mid = memref.subview %t[64] [128] [1] : memref<256xf32> to memref<128xf32, strided<[1], offset: 64>>
  // Writes t[0, 128).
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %x, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %e = memref.load %in[%tx] : memref<?xf32>
    memref.store %e, %lo[%tx] : memref<128xf32, strided<[1]>>
    gpu.terminator
  }
  // Reads t[64, 192): overlaps; writes the argument %out.
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %x, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %e = memref.load %mid[%tx] : memref<128xf32, strided<[1], offset: 64>>
    memref.store %e, %out[%tx] : memref<?xf32>
    gpu.terminator
  }
  // Reads the argument %in, which may be %out.
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %x, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %e = memref.load %in[%tx] : memref<?xf32>
    memref.store %e, %t[%tx] : memref<256xf32>
    gpu.terminator
  }
  // Another block size (and no conflict with the one before... but t).
  %u = memref.alloc() : memref<256xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %x, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %e = arith.constant 1.0 : f32
    memref.store %e, %u[%tx] : memref<256xf32>
    gpu.terminator
  }
  %v = memref.alloc() : memref<256xf32>
  // Dynamic shared memory.
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %x, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1)
             dynamic_shared_memory_size %c1024 {
    %e = arith.constant 2.0 : f32
    memref.store %e, %v[%tx] : memref<256xf32>
    gpu.terminator
  }
  func.call @side_effect() : () -> ()
  %w = memref.alloc() : memref<256xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %x, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %e = arith.constant 3.0 : f32
    memref.store %e, %w[%tx] : memref<256xf32>
    gpu.terminator
  }
  %z = memref.alloc() : memref<256xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %x, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %e = arith.constant 4.0 : f32
    %b = gpu.block_id x
    memref.store %e, %z[%b] : memref<256xf32>
    gpu.terminator
  }
  return
}
func.func private @side_effect()

// -----

// Roots are found through any view (here a collapse_shape) and only
// allocations are known apart: the launch writing %t through a view and
// the one reading %t stay apart; so do the one writing %u and the one
// reading a buffer an scf.if chose (which may be %u).

// CHECK-LABEL: func.func @views(
// CHECK-COUNT-3: gpu.launch
// CHECK-NOT:     gpu.launch
// CHECK:         return
func.func @views(%x: index, %c: i1, %out: memref<?xf32>) {
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %one = arith.constant 1.0 : f32
  %t = memref.alloc() : memref<8x8xf32>
  %u = memref.alloc() : memref<64xf32>
  %flat = memref.collapse_shape %t [[0, 1]] : memref<8x8xf32> into memref<64xf32>
  %chosen = scf.if %c -> memref<64xf32> {
    scf.yield %u : memref<64xf32>
  } else {
    %w = memref.alloc() : memref<64xf32>
    scf.yield %w : memref<64xf32>
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %x, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    memref.store %one, %flat[%tx] : memref<64xf32>
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %x, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %e = memref.load %t[%tx, %tx] : memref<8x8xf32>
    memref.store %e, %u[%tx] : memref<64xf32>
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %x, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %e = memref.load %chosen[%tx] : memref<64xf32>
    memref.store %e, %out[%tx] : memref<?xf32>
    gpu.terminator
  }
  return
}
