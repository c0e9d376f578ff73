// RUN: linattn-opt %s -split-input-file --linattn-select-strategy | FileCheck %s
// RUN: linattn-opt %s -split-input-file --linattn-select-strategy='sm-count=132 explain=true' -o /dev/null 2>&1 | FileCheck %s --check-prefix=EXPLAIN

// Decode (T = 1): one token step beats any chunk set-up.

// CHECK-LABEL: func.func @decode
// CHECK: linattn.recurrence gated_delta {{.*}} {linattn.strategy = "recurrent"}
// EXPLAIN: remark: linattn strategy for gated_delta: B = 4, HV = 8 (B*HV = 32 lanes), T = 1, K = 128, V = 128, 132 SMs
// EXPLAIN:   recurrent {{.*}}<- fastest
// EXPLAIN:   scan {{.*}}n/a  not applicable: a delta rule's composed transition is a dense K x K matrix
// EXPLAIN:   chosen: recurrent
func.func @decode(%q: tensor<4x1x8x128xbf16>, %v: tensor<4x1x8x128xbf16>, %g: tensor<4x1x8xf32>, %b: tensor<4x1x8xf32>, %s0: tensor<4x8x128x128xf32>) -> (tensor<4x1x8x128xbf16>, tensor<4x8x128x128xf32>) {
  %o, %s = linattn.recurrence gated_delta q(%q) k(%q) v(%v) gate(%g) beta(%b) state(%s0)
      : (tensor<4x1x8x128xbf16>, tensor<4x1x8x128xbf16>, tensor<4x1x8x128xbf16>, tensor<4x1x8xf32>, tensor<4x1x8xf32>, tensor<4x8x128x128xf32>) -> (tensor<4x1x8x128xbf16>, tensor<4x8x128x128xf32>)
  return %o, %s : tensor<4x1x8x128xbf16>, tensor<4x8x128x128xf32>
}

// -----

// A delta rule over many sequence-heads at T = 512: the chunked form (the
// state pass already fills the SMs, so no segment scan).

// CHECK-LABEL: func.func @delta_prefill
// CHECK: linattn.recurrence delta {{.*}} {linattn.chunk_size = 64 : i64, linattn.strategy = "chunked"}
// EXPLAIN: remark: linattn strategy for delta: B = 16, HV = 8 (B*HV = 128 lanes), T = 512
// EXPLAIN:   segment-scan C=64 S=1 {{.*}}n/a  not useful: the state pass already fills the SMs (1 segment)
// EXPLAIN:   chosen: chunked C=64
func.func @delta_prefill(%q: tensor<16x512x8x128xbf16>, %v: tensor<16x512x8x128xbf16>, %b: tensor<16x512x8xf32>, %s0: tensor<16x8x128x128xf32>) -> (tensor<16x512x8x128xbf16>, tensor<16x8x128x128xf32>) {
  %o, %s = linattn.recurrence delta q(%q) k(%q) v(%v) beta(%b) state(%s0)
      : (tensor<16x512x8x128xbf16>, tensor<16x512x8x128xbf16>, tensor<16x512x8x128xbf16>, tensor<16x512x8xf32>, tensor<16x8x128x128xf32>) -> (tensor<16x512x8x128xbf16>, tensor<16x8x128x128xf32>)
  return %o, %s : tensor<16x512x8x128xbf16>, tensor<16x8x128x128xf32>
}

// -----

// Few sequence-heads (B*HV = 2) against 132 SMs with a long T: split the
// chunks into segments and scan their transitions.

// CHECK-LABEL: func.func @long_context
// CHECK: linattn.recurrence gated_delta {{.*}} {linattn.chunk_size = {{16|32|64}} : i64, linattn.strategy = "segment-scan"}
// EXPLAIN: remark: linattn strategy for gated_delta: B = 1, HV = 2 (B*HV = 2 lanes), T = 16384
// EXPLAIN:   chosen: segment-scan
func.func @long_context(%q: tensor<1x16384x2x128xbf16>, %v: tensor<1x16384x2x128xbf16>, %g: tensor<1x16384x2xf32>, %b: tensor<1x16384x2xf32>, %s0: tensor<1x2x128x128xf32>) -> (tensor<1x16384x2x128xbf16>, tensor<1x2x128x128xf32>) {
  %o, %s = linattn.recurrence gated_delta q(%q) k(%q) v(%v) gate(%g) beta(%b) state(%s0)
      : (tensor<1x16384x2x128xbf16>, tensor<1x16384x2x128xbf16>, tensor<1x16384x2x128xbf16>, tensor<1x16384x2xf32>, tensor<1x16384x2xf32>, tensor<1x2x128x128xf32>) -> (tensor<1x16384x2x128xbf16>, tensor<1x2x128x128xf32>)
  return %o, %s : tensor<1x16384x2x128xbf16>, tensor<1x2x128x128xf32>
}

// -----

// Dynamic T: a run-time dispatch on tensor.dim %q, 1, one clone per range
// of T, each clone naming its strategy and range.

// CHECK-LABEL: func.func @dynamic_seq_len
// CHECK:         %[[T:.*]] = tensor.dim %arg0, %c1
// CHECK:         %[[SHORT:.*]] = arith.cmpi ule, %[[T]], %{{.*}} : index
// CHECK:         scf.if %[[SHORT]] -> (tensor<16x?x8x64xbf16>, tensor<16x8x64x64xf32>) {
// CHECK:           linattn.recurrence delta {{.*}}linattn.seq_len_range = array<i64: 1, {{[0-9]+}}>, linattn.strategy = "recurrent"
// CHECK:         } else {
// CHECK:           linattn.recurrence delta {{.*}}linattn.strategy = "chunked"
// CHECK:         linattn.seq_len_range = array<i64: {{[0-9]+}}, -1>
// EXPLAIN: remark: linattn strategy for delta: B = 16, HV = 8 (B*HV = 128 lanes), T = ?, K = 64, V = 64, 132 SMs
// EXPLAIN:   T is dynamic: run-time dispatch on T
// EXPLAIN:     T in [1, {{[0-9]+}}]: recurrent
func.func @dynamic_seq_len(%q: tensor<16x?x8x64xbf16>, %v: tensor<16x?x8x64xbf16>, %b: tensor<16x?x8xf32>, %s0: tensor<16x8x64x64xf32>) -> (tensor<16x?x8x64xbf16>, tensor<16x8x64x64xf32>) {
  %o, %s = linattn.recurrence delta q(%q) k(%q) v(%v) beta(%b) state(%s0)
      : (tensor<16x?x8x64xbf16>, tensor<16x?x8x64xbf16>, tensor<16x?x8x64xbf16>, tensor<16x?x8xf32>, tensor<16x8x64x64xf32>) -> (tensor<16x?x8x64xbf16>, tensor<16x8x64x64xf32>)
  return %o, %s : tensor<16x?x8x64xbf16>, tensor<16x8x64x64xf32>
}
