// RUN: linattn-opt %s --convert-linattn-chunked-to-gpu -split-input-file -verify-diagnostics | FileCheck %s

// The dense segments of gated delta (bf16, K = V = 128, 16-chunk segments):
//
// linattn.segment_maps runs the state pass's kernel over K + V = 256
// columns, (K + V) / 32 = 8 blocks a (segment, head, sequence): the first
// K / 32 = 4 blocks carry A_s's columns from I with U = 0 (their U copies
// arrive as zeros: a copy size of 0), the others E_s's from zero with U's
// columns (v0 - K). It stores no chunk states and no new values, only each
// segment's end [B, NS, HV, K, K + V]. Sized for two blocks an SM (at most
// (232448 + 1024) / 2 - 1024 - 16 = 115696 bytes): two stages of 40192
// bytes (W 17408, K 17408, U 5120, gates 256), the 16 KiB exchange and
// six mbarriers (its two producer warps' copies), 96816 bytes; 192 threads.
//
// linattn.segment_entries: a block per 8 columns of a (head, sequence), 256
// threads (row, 4 columns each), C through 128 x 8 f32 of shared memory
// (4096 bytes) and A_s through two stages of 128 x 132 f32 (67584 bytes
// each): 139264 bytes. A loop over the segments copies A_{s+1} by cp.async,
// waits for A_s (one group pending), and takes K / 4 = 32 16-byte loads of
// A_s's row and 128 four-wide FMAs.
//
// The state pass entered from the entries loads its initial state at
// [b, segment, hv] and is sized for two blocks an SM too: its chunk states
// and new values leave from registers (no staged outputs), 96816 bytes.

// CHECK-LABEL: func.func @segments(
// CHECK:         %[[MAPS:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?x8x128x256xf32>
// CHECK:         %[[MSMEM:.*]] = arith.constant 96816 : i32
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %c8{{[_0-9]*}}, %{{.*}} = %c8{{[_0-9]*}}, %{{.*}} = %{{.*}}) threads(%{{.*}}) in (%{{.*}} = %c192{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}) dynamic_shared_memory_size %[[MSMEM]] {
// CHECK:           arith.cmpi ult, %{{.*}}, %c128
// CHECK:           scf.for
// CHECK-NOT:         stmatrix
// CHECK:           memref.store %{{.*}}, %[[MAPS]]
// CHECK:           } else {
// CHECK:             nvgpu.device_async_copy
// CHECK:           gpu.terminator
// CHECK:         %[[ENTRIES:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?x8x128x128xf32>
// CHECK:         %[[FINAL:.*]] = memref.alloc(%{{.*}}) : memref<?x8x128x128xf32>
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %c16{{[_0-9]*}}, %{{.*}} = %c8{{[_0-9]*}}, %{{.*}} = %{{.*}}) threads(%{{.*}}) in (%{{.*}} = %c256{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}, %{{.*}} = %c1{{[_0-9]*}}) dynamic_shared_memory_size %c139264_i32 {
// CHECK:           nvgpu.device_async_copy {{.*}} : memref<?x?x8x128x256xf32> to memref<128x132xf32, #gpu.address_space<workgroup>>
// CHECK:           scf.for
// CHECK:             vector.store %{{.*}}, %[[ENTRIES]]
// CHECK:             nvgpu.device_async_copy
// CHECK:             nvgpu.device_async_wait %{{.*}} {numGroups = 1 : i32}
// CHECK:             gpu.barrier
// CHECK-COUNT-32:    vector.load %{{.*}} : memref<128x132xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK:             gpu.barrier
// CHECK:           vector.store %{{.*}}, %[[FINAL]]
// CHECK:         %[[PSMEM:.*]] = arith.constant 96816 : i32
// CHECK:         gpu.launch blocks(%{{.*}}) in (%{{.*}} = %c4{{[_0-9]*}}, {{.*}} dynamic_shared_memory_size %[[PSMEM]] {
// CHECK:           memref.load %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<?x?x8x128x128xf32>
// CHECK-NOT:       stmatrix
// CHECK:           gpu.terminator
func.func @segments(%k: tensor<?x?x8x128xbf16>, %u: tensor<?x?x8x128xbf16>, %w: tensor<?x?x8x128xbf16>, %g: tensor<?x?x8xf32>, %s0: tensor<?x8x128x128xf32>) -> (tensor<?x?x8x128xbf16>, tensor<?x?x8x128x128xbf16>, tensor<?x8x128x128xf32>) {
  %m = linattn.segment_maps k(%k) u(%u) w(%w) gates(%g) {chunk_size = 64 : i64, segment_chunks = 16 : i64}
      : (tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8xf32>) -> tensor<?x?x8x128x256xf32>
  %e, %final = linattn.segment_entries maps(%m) state(%s0)
      : (tensor<?x?x8x128x256xf32>, tensor<?x8x128x128xf32>) -> (tensor<?x?x8x128x128xf32>, tensor<?x8x128x128xf32>)
  %d, %states, %ends = linattn.chunk_state_pass k(%k) u(%u) w(%w) gates(%g) state(%e) {chunk_size = 64 : i64, segment_chunks = 16 : i64}
      : (tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8x128xbf16>, tensor<?x?x8xf32>, tensor<?x?x8x128x128xf32>) -> (tensor<?x?x8x128xbf16>, tensor<?x?x8x128x128xbf16>, tensor<?x?x8x128x128xf32>)
  return %d, %states, %final : tensor<?x?x8x128xbf16>, tensor<?x?x8x128x128xbf16>, tensor<?x8x128x128xf32>
}


// -----

// Above K = 160 the entries' two stages of A_s do not fit a block's shared
// memory: refused by name.
func.func @entries_too_wide(%m: tensor<?x?x1x192x224xf32>, %s0: tensor<?x1x192x32xf32>) -> (tensor<?x?x1x192x32xf32>, tensor<?x1x192x32xf32>) {
  // expected-error @+1 {{GPU segment entries kernel needs 307200 bytes of shared memory, more than the 232432 a block may have}}
  %e, %final = linattn.segment_entries maps(%m) state(%s0)
      : (tensor<?x?x1x192x224xf32>, tensor<?x1x192x32xf32>) -> (tensor<?x?x1x192x32xf32>, tensor<?x1x192x32xf32>)
  return %e, %final : tensor<?x?x1x192x32xf32>, tensor<?x1x192x32xf32>
}
