// RUN: linattn-opt %s -split-input-file --linattn-fit-chunked-kernels | FileCheck %s
// RUN: linattn-opt %s -split-input-file --linattn-fit-chunked-kernels=explain=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=EXPLAIN
// linattn-to-nvvm's default strategy runs the pass after the selector, so
// every spec here compiles (the recurrent kernel takes what the chunked
// ones cannot).
// RUN: linattn-opt %s -split-input-file --linattn-to-nvvm=format=isa -o /dev/null
// Options it cannot try with are errors, not a silent recurrent choice.
// RUN: not linattn-opt %s --linattn-fit-chunked-kernels=chunk-size=0 2>&1 | FileCheck %s --check-prefix=BAD-CHUNK
// RUN: not linattn-opt %s --linattn-fit-chunked-kernels=chip=sm_75 2>&1 | FileCheck %s --check-prefix=BAD-CHIP
// BAD-CHUNK: error: linattn-fit-chunked-kernels: chunk-size must be positive, got 0
// BAD-CHIP: error: linattn-fit-chunked-kernels: chip 'sm_75' cannot run LinAttn's GPU code
//
// A chunked choice whose kernels would not fit a block's shared memory
// becomes recurrent; one whose kernels fit stays.

// negeig_delta's split W at K = V = 256: the state pass does not fit.
// CHECK-LABEL: func.func @negeig_k256
// CHECK: linattn.recurrence negeig_delta {{.*}} {linattn.strategy = "recurrent"}
// EXPLAIN: remark: linattn GPU strategy for negeig_delta: recurrent (the chunked kernels do not fit: 'linattn.chunk_state_pass' op GPU state pass needs {{[0-9]+}} bytes of shared memory, more than the 232448 a block may have)
func.func @negeig_k256(%q: tensor<?x?x2x256xbf16>, %v: tensor<?x?x2x256xbf16>, %b: tensor<?x?x2xf32>, %s0: tensor<?x2x256x256xf32>) -> (tensor<?x?x2x256xbf16>, tensor<?x2x256x256xf32>) {
  %o, %s = linattn.recurrence negeig_delta q(%q) k(%q) v(%v) beta(%b) state(%s0) {linattn.chunk_size = 64 : i64, linattn.strategy = "chunked"}
      : (tensor<?x?x2x256xbf16>, tensor<?x?x2x256xbf16>, tensor<?x?x2x256xbf16>, tensor<?x?x2xf32>, tensor<?x2x256x256xf32>) -> (tensor<?x?x2x256xbf16>, tensor<?x2x256x256xf32>)
  return %o, %s : tensor<?x?x2x256xbf16>, tensor<?x2x256x256xf32>
}

// -----

// Gated DeltaNet at K = V = 192 fits (its state pass in two stages).
// CHECK-LABEL: func.func @gated_delta_k192
// CHECK: linattn.recurrence gated_delta {{.*}} {linattn.chunk_size = 64 : i64, linattn.strategy = "chunked"}
// EXPLAIN-NOT: remark
func.func @gated_delta_k192(%q: tensor<?x?x2x192xbf16>, %v: tensor<?x?x2x192xbf16>, %g: tensor<?x?x2xf32>, %b: tensor<?x?x2xf32>, %s0: tensor<?x2x192x192xf32>) -> (tensor<?x?x2x192xbf16>, tensor<?x2x192x192xf32>) {
  %o, %s = linattn.recurrence gated_delta q(%q) k(%q) v(%v) gate(%g) beta(%b) state(%s0) {linattn.chunk_size = 64 : i64, linattn.strategy = "chunked"}
      : (tensor<?x?x2x192xbf16>, tensor<?x?x2x192xbf16>, tensor<?x?x2x192xbf16>, tensor<?x?x2xf32>, tensor<?x?x2xf32>, tensor<?x2x192x192xf32>) -> (tensor<?x?x2x192xbf16>, tensor<?x2x192x192xf32>)
  return %o, %s : tensor<?x?x2x192xbf16>, tensor<?x2x192x192xf32>
}
