// RUN: linattn-opt %s --convert-linattn-chunked-to-gpu=explain=true -split-input-file -verify-diagnostics -o /dev/null
// RUN: linattn-opt %s --convert-linattn-chunked-to-gpu -split-input-file | FileCheck %s
// RUN: linattn-opt %s --convert-linattn-chunked-to-gpu="chip=sm_80 explain=true" -split-input-file --mlir-print-op-on-diagnostic=false -o /dev/null 2>&1 | FileCheck %s --check-prefix=SM80

// linattn.chunk_state_pass_output: one kernel, the state pass's block with
// four output warps after its compute and producer warps (320 threads),
// which form the outputs from the staged S_n and D_n (neither stored: no
// chunk-state buffer, no output kernel). On sm_80 (no stmatrix, so nothing
// is staged) the op becomes the pass and the output kernel again, and the
// remark says why.

// CHECK-LABEL: func.func @gated_delta
// CHECK:         %[[THREADS:.*]] = arith.constant 320 : index
// CHECK:         gpu.launch {{.*}} threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %[[THREADS]]
// CHECK-SAME:    dynamic_shared_memory_size
// CHECK-NOT:     gpu.launch
// CHECK:         return
// SM80: remark: linattn GPU kernel for linattn.chunk_state_pass_output: none ({{.*}}GPU state pass with the outputs in it needs 16-bit chunk states and new values staged by stmatrix (sm_90)); the state pass and a separate output kernel run
// SM80: remark: linattn GPU kernel for linattn.chunk_state_pass: 4 blocks of 32 state columns
// SM80: remark: linattn GPU kernel for linattn.chunk_output:
func.func @gated_delta(%q: tensor<?x?x2x128xbf16>, %k: tensor<?x?x2x128xbf16>, %u: tensor<?x?x4x128xf32>, %w: tensor<?x?x4x128xbf16>, %g: tensor<?x?x4xf32>, %s0: tensor<?x4x128x128xf32>) -> (tensor<?x?x4x128xbf16>, tensor<?x4x128x128xf32>) {
  // expected-remark @+1 {{linattn GPU kernel for linattn.chunk_state_pass_output: 4 blocks of 32 state columns a value head and sequence, 4 compute warps and 2 producer warps issuing the copies, 320 threads; 3 input stages; the update takes D' rounded once; chunk states and new values staged in shared memory for 4 output warps, which form each chunk's output (neither stored), q's row norms from their Q rows; 214872 bytes of shared memory, sized for 1 block an SM}}
  %o, %final = linattn.chunk_state_pass_output q(%q) k(%k) u(%u) w(%w) gates(%g) state(%s0) {chunk_size = 64 : i64, q_l2norm, scale = 0.088 : f32}
      : (tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x?x4x128xf32>, tensor<?x?x4x128xbf16>, tensor<?x?x4xf32>, tensor<?x4x128x128xf32>) -> (tensor<?x?x4x128xbf16>, tensor<?x4x128x128xf32>)
  return %o, %final : tensor<?x?x4x128xbf16>, tensor<?x4x128x128xf32>
}
