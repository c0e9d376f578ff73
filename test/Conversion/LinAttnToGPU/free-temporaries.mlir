// RUN: linattn-opt %s --convert-linattn-to-gpu -split-input-file -verify-diagnostics | FileCheck %s

// Host buffers the function does not return are freed after the last op
// of their block that uses them or a view of them (here the second kernel,
// through a subview); returned buffers belong to the caller.

// CHECK-LABEL: func.func @temporaries
// CHECK:         %[[TMP:.*]], %{{.*}} = gpu.alloc async
// CHECK:         %[[OUT:.*]], %{{.*}} = gpu.alloc async
// CHECK:         gpu.launch
// CHECK:         gpu.launch
// CHECK:           memref.load %{{.*}}[
// CHECK:           gpu.terminator
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[T:.*]] = gpu.wait async
// CHECK-NEXT:    %{{.*}} = gpu.dealloc async [%[[T]]] %[[TMP]] : memref<64xf32>
// CHECK-NOT:     gpu.dealloc
// CHECK:         return %[[OUT]]
func.func @temporaries(%a: memref<64xf32>) -> memref<64xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %tmp = memref.alloc() : memref<64xf32>
  %out = memref.alloc() : memref<64xf32>
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    %x = memref.load %a[%i] : memref<64xf32>
    memref.store %x, %tmp[%i] : memref<64xf32>
    scf.reduce
  } {mapping = [#gpu.loop_dim_map<processor = thread_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}
  %half = memref.subview %tmp[32] [32] [1] : memref<64xf32> to memref<32xf32, strided<[1], offset: 32>>
  scf.parallel (%i) = (%c0) to (%c32) step (%c1) {
    %x = memref.load %half[%i] : memref<32xf32, strided<[1], offset: 32>>
    memref.store %x, %out[%i] : memref<64xf32>
    scf.reduce
  } {mapping = [#gpu.loop_dim_map<processor = thread_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}
  return %out : memref<64xf32>
}

// -----

// A buffer yielded out of an scf.if (a choice made at run time, as
// linattn-segment-chunk-states makes) and returned by the function belongs
// to the caller, whichever branch made it: nothing is freed.

// CHECK-LABEL: func.func @yielded_returned
// CHECK-NOT:     gpu.dealloc
// CHECK:         return
func.func @yielded_returned(%c: i1) -> memref<64xf32> {
  %r = scf.if %c -> memref<64xf32> {
    %b = memref.alloc() : memref<64xf32>
    scf.yield %b : memref<64xf32>
  } else {
    %b = memref.alloc() : memref<64xf32>
    scf.yield %b : memref<64xf32>
  }
  return %r : memref<64xf32>
}

// -----

// Yielded out of an scf.if but not returned, each branch's own buffer (the
// if's result owns it, as linattn-pad-head-dims's copies of a dispatched
// recurrence's results leave it): the result is freed after its last use,
// whichever branch ran.
// CHECK-LABEL: func.func @yielded_not_returned
// CHECK:         %[[R:.*]] = scf.if
// CHECK:         gpu.launch
// CHECK:         %[[T:.*]] = gpu.wait async
// CHECK-NEXT:    %{{.*}} = gpu.dealloc async [%[[T]]] %[[R]] : memref<64xf32>
// CHECK-NOT:     gpu.dealloc
// CHECK:         return
func.func @yielded_not_returned(%c: i1, %out: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %r = scf.if %c -> memref<64xf32> {
    %b = memref.alloc() : memref<64xf32>
    scf.yield %b : memref<64xf32>
  } else {
    %b = memref.alloc() : memref<64xf32>
    scf.yield %b : memref<64xf32>
  }
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    %x = memref.load %r[%i] : memref<64xf32>
    memref.store %x, %out[%i] : memref<64xf32>
    scf.reduce
  } {mapping = [#gpu.loop_dim_map<processor = thread_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}
  return
}

// -----

// One buffer, allocated before an scf.if, yielded by both of its branches
// (a state pass's new values that are its padded input u, under the
// run-time choice of state-pass blocks): the result is that buffer
// whichever ran, one more view of it; the buffer is freed after the last
// use of either (the kernel reading the result).
// CHECK-LABEL: func.func @yielded_by_both_branches
// CHECK:         %[[U:.*]], %{{.*}} = gpu.alloc async
// CHECK:         %[[R:.*]] = scf.if
// CHECK:           scf.yield %[[U]]
// CHECK:           scf.yield %[[U]]
// CHECK-NOT:     gpu.dealloc
// CHECK:         gpu.launch
// CHECK:           memref.load %[[R]]
// CHECK:         %[[T:.*]] = gpu.wait async
// CHECK-NEXT:    %{{.*}} = gpu.dealloc async [%[[T]]] %[[U]] : memref<64xf32>
// CHECK-NOT:     gpu.dealloc
// CHECK:         return
func.func @yielded_by_both_branches(%c: i1, %a: memref<64xf32>, %out: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %u = memref.alloc() : memref<64xf32>
  memref.copy %a, %u : memref<64xf32> to memref<64xf32>
  %r = scf.if %c -> memref<64xf32> {
    scf.yield %u : memref<64xf32>
  } else {
    scf.yield %u : memref<64xf32>
  }
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    %x = memref.load %r[%i] : memref<64xf32>
    memref.store %x, %out[%i] : memref<64xf32>
    scf.reduce
  } {mapping = [#gpu.loop_dim_map<processor = thread_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}
  return
}

// -----

// The same through nested choices (wide blocks or not, then narrow or
// not): one branch yields the inner if's result, itself the buffer.
// CHECK-LABEL: func.func @yielded_through_nested_ifs
// CHECK:         %[[U:.*]], %{{.*}} = gpu.alloc async
// CHECK-NOT:     gpu.dealloc
// CHECK:         gpu.launch
// CHECK:         %[[T:.*]] = gpu.wait async
// CHECK-NEXT:    %{{.*}} = gpu.dealloc async [%[[T]]] %[[U]] : memref<64xf32>
// CHECK-NOT:     gpu.dealloc
// CHECK:         return
func.func @yielded_through_nested_ifs(%c: i1, %d: i1, %a: memref<64xf32>, %out: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %u = memref.alloc() : memref<64xf32>
  memref.copy %a, %u : memref<64xf32> to memref<64xf32>
  %r = scf.if %c -> memref<64xf32> {
    %inner = scf.if %d -> memref<64xf32> {
      scf.yield %u : memref<64xf32>
    } else {
      scf.yield %u : memref<64xf32>
    }
    scf.yield %inner : memref<64xf32>
  } else {
    scf.yield %u : memref<64xf32>
  }
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    %x = memref.load %r[%i] : memref<64xf32>
    memref.store %x, %out[%i] : memref<64xf32>
    scf.reduce
  } {mapping = [#gpu.loop_dim_map<processor = thread_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}
  return
}

// -----

// Yielded out of an scf.if but not returned, where the other branch yields
// a buffer it did not allocate (an argument): freeing the result could
// free the caller's buffer, so it is refused, not leaked.
func.func @yielded_beside_argument(%c: i1, %a: memref<64xf32>, %out: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %r = scf.if %c -> memref<64xf32> {
    %b = memref.alloc() : memref<64xf32>
    // expected-error @below {{'scf.yield' op passes a device buffer out of an scf.if that the function does not return and whose other branch yields a buffer it did not allocate: convert-linattn-to-gpu cannot tell whether to free it}}
    scf.yield %b : memref<64xf32>
  } else {
    scf.yield %a : memref<64xf32>
  }
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    %x = memref.load %r[%i] : memref<64xf32>
    memref.store %x, %out[%i] : memref<64xf32>
    scf.reduce
  } {mapping = [#gpu.loop_dim_map<processor = thread_x, map = (d0) -> (d0), bound = (d0) -> (d0)>]}
  return
}

// -----

// A buffer leaving its block through another region's yield (a loop's) is
// refused, not leaked.
func.func @loop_yielded(%n: index, %init: memref<64xf32>) -> memref<64xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> memref<64xf32> {
    %b = memref.alloc() : memref<64xf32>
    // expected-error @below {{'scf.yield' op passes a device buffer out of its region: convert-linattn-to-gpu frees only buffers that stay in the block that allocates them}}
    scf.yield %b : memref<64xf32>
  }
  return %r : memref<64xf32>
}

// -----

// An op that may return an alias of a device buffer without being a view
// (here a select between two buffers) is refused: when the alias is last
// used cannot be told.
func.func @aliased(%c: i1) -> memref<64xf32> {
  %a = memref.alloc() : memref<64xf32>
  %b = memref.alloc() : memref<64xf32>
  // expected-error @below {{'arith.select' op returns a buffer that may alias a device buffer: convert-linattn-to-gpu cannot tell when that buffer is last used}}
  %r = arith.select %c, %a, %b : memref<64xf32>
  return %r : memref<64xf32>
}

// -----

// A copy of a view onto the same view (what tensor.insert_slice of the
// slice it was computed in bufferizes to: linattn-pad-head-dims' copies
// into a padded buffer) is dropped; a copy between two different views of
// one buffer becomes a device copy.
// CHECK-LABEL: func.func @self_copy
// CHECK:         %[[BUF:.*]], %{{.*}} = gpu.alloc async
// CHECK-NOT:     gpu.memcpy
// CHECK:         %[[HEAD:.*]] = memref.subview %[[BUF]][0, 0] [%{{.*}}, 48]
// CHECK:         %[[TAIL:.*]] = memref.subview %[[BUF]][0, 16] [%{{.*}}, 48]
// CHECK:         gpu.memcpy async [%{{.*}}] %[[TAIL]], %[[HEAD]]
// CHECK-NOT:     gpu.memcpy
// CHECK:         return %[[BUF]]
func.func @self_copy(%n: index) -> memref<?x64xbf16> {
  %buf = memref.alloc(%n) : memref<?x64xbf16>
  %a = memref.subview %buf[0, 0] [%n, 48] [1, 1] : memref<?x64xbf16> to memref<?x48xbf16, strided<[64, 1]>>
  %b = memref.subview %buf[0, 0] [%n, 48] [1, 1] : memref<?x64xbf16> to memref<?x48xbf16, strided<[64, 1]>>
  memref.copy %a, %b : memref<?x48xbf16, strided<[64, 1]>> to memref<?x48xbf16, strided<[64, 1]>>
  %c = memref.subview %buf[0, 16] [%n, 48] [1, 1] : memref<?x64xbf16> to memref<?x48xbf16, strided<[64, 1], offset: 16>>
  memref.copy %a, %c : memref<?x48xbf16, strided<[64, 1]>> to memref<?x48xbf16, strided<[64, 1], offset: 16>>
  return %buf : memref<?x64xbf16>
}
