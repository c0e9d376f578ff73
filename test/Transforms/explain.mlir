// The command a user runs to learn which algorithm was chosen and why.
// RUN: linattn-opt %examples/gated_deltanet.mlir --linattn-select-strategy --linattn-explain -o /dev/null 2>&1 | FileCheck %s
// Without a recorded choice, explain says what the selector would pick.
// RUN: linattn-opt %s --linattn-explain -o /dev/null 2>&1 | FileCheck %s --check-prefix=UNSELECTED
// RUN: not linattn-opt %s --linattn-select-strategy=sm-count=0 -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADOPT

// CHECK: remark: linattn strategy for gated_delta: B = ? (assumed 1), HV = 8 (B*HV = 8 lanes), T = {{[0-9]+}} in [1, {{[0-9]+}}] of the run-time dispatch
// CHECK:   recurrent {{.*}} token steps x {{.*}} wave(s) of 32 blocks
// CHECK:   chunked C=64 {{.*}}max(memory {{.*}}, tensor cores {{.*}}) + {{[0-9]+}} chunk steps
// CHECK:   chosen: recurrent
// CHECK: remark: {{.*}}[897, inf] of the run-time dispatch
// CHECK:   segment-scan C=64 S={{[0-9]+}} {{.*}}-segment combine
// CHECK:   chosen: segment-scan C=64

// UNSELECTED: remark: linattn strategy for scalar_gate: B = 2, HV = 4 (B*HV = 8 lanes), T = 4096, K = 64, V = 64, 132 SMs
// UNSELECTED:   scan {{.*}}materialises N T K V states
// UNSELECTED:   would choose: {{.*}} (no strategy recorded; run --linattn-select-strategy)
// BADOPT: error: linattn-select-strategy: sm-count and assumed-batch must be positive, got 0 and 1
func.func @simple_gla(%q: tensor<2x4096x4x64xf32>, %v: tensor<2x4096x4x64xf32>, %g: tensor<2x4096x4xf32>, %s0: tensor<2x4x64x64xf32>) -> (tensor<2x4096x4x64xf32>, tensor<2x4x64x64xf32>) {
  %o, %s = linattn.recurrence scalar_gate q(%q) k(%q) v(%v) gate(%g) state(%s0)
      : (tensor<2x4096x4x64xf32>, tensor<2x4096x4x64xf32>, tensor<2x4096x4x64xf32>, tensor<2x4096x4xf32>, tensor<2x4x64x64xf32>) -> (tensor<2x4096x4x64xf32>, tensor<2x4x64x64xf32>)
  return %o, %s : tensor<2x4096x4x64xf32>, tensor<2x4x64x64xf32>
}
