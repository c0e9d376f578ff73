// RUN: linattn-opt %s -split-input-file -verify-diagnostics
//
// Malformed chunked-state algorithm ops get a diagnostic naming the operand
// or attribute at fault.

// l2norm result must be f32 or the input's type
func.func @f(%x: tensor<4x8xbf16>) {
  // expected-error @+1 {{result must have the input's shape and element type f32 or the input's ('bf16'), got 'tensor<4x8xf16>'}}
  %r = linattn.l2norm %x : tensor<4x8xbf16> -> tensor<4x8xf16>
  return
}

// -----

// l2norm over a dynamic dimension
func.func @f(%x: tensor<4x?xf32>) {
  // expected-error @+1 {{the normalised (last) dimension must be static}}
  %r = linattn.l2norm %x : tensor<4x?xf32> -> tensor<4x?xf32>
  return
}

// -----

// rnorm of a row that is not [B, T, H, K]
func.func @f(%x: tensor<4x8xbf16>) {
  // expected-error @+1 {{input must be [B, T, H, K] with a static K, got 'tensor<4x8xbf16>'}}
  %r = linattn.rnorm %x : tensor<4x8xbf16> -> tensor<4xf32>
  return
}

// -----

// rnorm's result keeps the rows, in f32
func.func @f(%x: tensor<2x8x4x16xbf16>) {
  // expected-error @+1 {{result must be the input's rows [B, T, H] in f32, got 'tensor<2x8x4xbf16>' for 'tensor<2x8x4x16xbf16>'}}
  %r = linattn.rnorm %x : tensor<2x8x4x16xbf16> -> tensor<2x8x4xbf16>
  return
}

// -----

// k_rnorm of other rows than k's
func.func @f(%k: tensor<1x8x2x16xbf16>, %rk: tensor<1x8x4xf32>, %v: tensor<1x8x4x32xbf16>, %beta: tensor<1x8x4xf32>) {
  // expected-error @+1 {{dimension H of 'k_rnorm' (4) must equal H = 2 (from 'k')}}
  %w, %u = linattn.ut_transform k(%k) k_rnorm(%rk) v(%v) beta(%beta) {chunk_size = 16 : i64, rank1_scale = 1.0 : f32}
      : (tensor<1x8x2x16xbf16>, tensor<1x8x4xf32>, tensor<1x8x4x32xbf16>, tensor<1x8x4xf32>) -> (tensor<1x8x4x16xf32>, tensor<1x8x4x32xf32>)
  return
}

// -----

// k_rnorm on the WY form of the state pass (W and U carry it)
func.func @f(%k: tensor<1x8x2x16xbf16>, %rk: tensor<1x8x2xf32>, %u: tensor<1x8x2x32xf32>, %w: tensor<1x8x2x16xf32>, %s0: tensor<1x2x16x32xf32>) {
  // expected-error @+1 {{'k_rnorm' takes the rank-1 product form ('beta'); in the WY form 'w' and 'u' carry it (linattn.ut_transform's 'k_rnorm')}}
  %d, %states, %final = linattn.chunk_state_pass k(%k) k_rnorm(%rk) u(%u) w(%w) state(%s0) {chunk_size = 16 : i64}
      : (tensor<1x8x2x16xbf16>, tensor<1x8x2xf32>, tensor<1x8x2x32xf32>, tensor<1x8x2x16xf32>, tensor<1x2x16x32xf32>) -> (tensor<1x8x2x32xf32>, tensor<1x1x2x16x32xf32>, tensor<1x2x16x32xf32>)
  return
}

// -----

// k's row norms both given and formed by the op
func.func @f(%k: tensor<1x8x2x16xbf16>, %rk: tensor<1x8x2xf32>, %v: tensor<1x8x2x32xbf16>, %beta: tensor<1x8x2xf32>) {
  // expected-error @+1 {{takes either 'k_rnorm' or 'k_l2norm' (the op forms k's row norms itself), not both}}
  %w, %u = linattn.ut_transform k(%k) k_rnorm(%rk) v(%v) beta(%beta) {chunk_size = 16 : i64, k_l2norm, rank1_scale = 1.0 : f32}
      : (tensor<1x8x2x16xbf16>, tensor<1x8x2xf32>, tensor<1x8x2x32xbf16>, tensor<1x8x2xf32>) -> (tensor<1x8x2x16xf32>, tensor<1x8x2x32xf32>)
  return
}

// -----

// q's row norms both given and formed by the op
func.func @f(%q: tensor<1x8x2x16xbf16>, %rq: tensor<1x8x2xf32>, %k: tensor<1x8x2x16xbf16>, %d: tensor<1x8x2x32xf32>, %s: tensor<1x1x2x16x32xf32>) {
  // expected-error @+1 {{takes either 'q_rnorm' or 'q_l2norm' (the op forms q's row norms itself), not both}}
  %o = linattn.chunk_output q(%q) q_rnorm(%rq) k(%k) new_values(%d) states(%s) {chunk_size = 16 : i64, q_l2norm, scale = 0.25 : f32}
      : (tensor<1x8x2x16xbf16>, tensor<1x8x2xf32>, tensor<1x8x2x16xbf16>, tensor<1x8x2x32xf32>, tensor<1x1x2x16x32xf32>) -> tensor<1x8x2x32xbf16>
  return
}

// -----

// q_rnorm in another element type
func.func @f(%q: tensor<1x8x2x16xbf16>, %rq: tensor<1x8x2xbf16>, %k: tensor<1x8x2x16xbf16>, %d: tensor<1x8x2x32xf32>, %s: tensor<1x1x2x16x32xf32>) {
  // expected-error @+1 {{'q_rnorm' must have element type f32}}
  %o = linattn.chunk_output q(%q) q_rnorm(%rq) k(%k) new_values(%d) states(%s) {chunk_size = 16 : i64, scale = 0.25 : f32}
      : (tensor<1x8x2x16xbf16>, tensor<1x8x2xbf16>, tensor<1x8x2x16xbf16>, tensor<1x8x2x32xf32>, tensor<1x1x2x16x32xf32>) -> tensor<1x8x2x32xbf16>
  return
}

// -----

// chunk_cumsum of a rank-2 gate
func.func @f(%g: tensor<8x2xf32>) {
  // expected-error @+1 {{'gate' must be [B, T, HV] or [B, T, HV, K], got 'tensor<8x2xf32>'}}
  %r = linattn.chunk_cumsum %g {chunk_size = 16 : i64} : tensor<8x2xf32> -> tensor<8x2xf32>
  return
}

// -----

// chunk_cumsum with chunk_size 0
func.func @f(%g: tensor<1x8x2xf32>) {
  // expected-error @+1 {{attribute 'chunk_size' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %r = linattn.chunk_cumsum %g {chunk_size = 0 : i64} : tensor<1x8x2xf32> -> tensor<1x8x2xf32>
  return
}

// -----

// chunk_cumsum result shape
func.func @f(%g: tensor<1x8x2xf32>) {
  // expected-error @+1 {{dimension T of 'result' (9) must equal T = 8 (from 'gate')}}
  %r = linattn.chunk_cumsum %g {chunk_size = 4 : i64} : tensor<1x8x2xf32> -> tensor<1x9x2xf32>
  return
}

// -----

// ut_transform with per-key gates of another key dimension
func.func @f(%k: tensor<1x8x2x16xf32>, %v: tensor<1x8x2x4xf32>, %b: tensor<1x8x2xf32>, %g: tensor<1x8x2x8xf32>) {
  // expected-error @+1 {{'gates'}}
  %w, %u = linattn.ut_transform k(%k) v(%v) beta(%b) gates(%g) {chunk_size = 4 : i64, rank1_scale = 1.0 : f32} : (tensor<1x8x2x16xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2xf32>, tensor<1x8x2x8xf32>) -> (tensor<1x8x2x16xf32>, tensor<1x8x2x4xf32>)
  return
}

// -----

// ut_transform rank1_scale
func.func @f(%k: tensor<1x8x2x16xf32>, %v: tensor<1x8x2x4xf32>, %b: tensor<1x8x2xf32>) {
  // expected-error @+1 {{'rank1_scale' must be 1 (delta rule) or 2 (negative eigenvalues), got 3}}
  %w, %u = linattn.ut_transform k(%k) v(%v) beta(%b) {chunk_size = 4 : i64, rank1_scale = 3.0 : f32} : (tensor<1x8x2x16xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2xf32>) -> (tensor<1x8x2x16xf32>, tensor<1x8x2x4xf32>)
  return
}

// -----

// ut_transform W must be f32 or the keys' type
func.func @f(%k: tensor<1x8x2x16xbf16>, %v: tensor<1x8x2x4xbf16>, %b: tensor<1x8x2xf32>) {
  // expected-error @+1 {{'w' must have element type f32 or the keys' 'bf16', got 'f16'}}
  %w, %u = linattn.ut_transform k(%k) v(%v) beta(%b) {chunk_size = 4 : i64, rank1_scale = 1.0 : f32} : (tensor<1x8x2x16xbf16>, tensor<1x8x2x4xbf16>, tensor<1x8x2xf32>) -> (tensor<1x8x2x16xf16>, tensor<1x8x2x4xf32>)
  return
}

// -----

// ut_transform split W with three parts
func.func @f(%k: tensor<1x8x2x16xbf16>, %v: tensor<1x8x2x4xbf16>, %b: tensor<1x8x2xf32>) {
  // expected-error @+1 {{a split 'w' [B, T, HV, 2, K] holds two parts (hi, lo) in dimension 3, got 'tensor<1x8x2x3x16xbf16>'}}
  %w, %u = linattn.ut_transform k(%k) v(%v) beta(%b) {chunk_size = 4 : i64, rank1_scale = 2.0 : f32} : (tensor<1x8x2x16xbf16>, tensor<1x8x2x4xbf16>, tensor<1x8x2xf32>) -> (tensor<1x8x2x3x16xbf16>, tensor<1x8x2x4xf32>)
  return
}

// -----

// ut_transform split W in f32
func.func @f(%k: tensor<1x8x2x16xf32>, %v: tensor<1x8x2x4xf32>, %b: tensor<1x8x2xf32>) {
  // expected-error @+1 {{a split 'w' must have a 16-bit element type, got f32}}
  %w, %u = linattn.ut_transform k(%k) v(%v) beta(%b) {chunk_size = 4 : i64, rank1_scale = 2.0 : f32} : (tensor<1x8x2x16xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2xf32>) -> (tensor<1x8x2x2x16xf32>, tensor<1x8x2x4xf32>)
  return
}

// -----

// state pass split W in another type than the keys'
func.func @f(%k: tensor<1x8x2x16xbf16>, %u: tensor<1x8x2x4xf32>, %w: tensor<1x8x2x2x16xf16>, %s0: tensor<1x2x16x4xf32>) {
  // expected-error @+1 {{a split 'w' must have the keys' 16-bit element type, got 'f16' with 'bf16' keys}}
  %d, %s, %f = linattn.chunk_state_pass k(%k) u(%u) w(%w) state(%s0) {chunk_size = 4 : i64} : (tensor<1x8x2x16xbf16>, tensor<1x8x2x4xf32>, tensor<1x8x2x2x16xf16>, tensor<1x2x16x4xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x2x2x16x4xf32>, tensor<1x2x16x4xf32>)
  return
}

// -----

// state pass split W whose K disagrees with the keys'
func.func @f(%k: tensor<1x8x2x16xbf16>, %u: tensor<1x8x2x4xf32>, %w: tensor<1x8x2x2x8xbf16>, %s0: tensor<1x2x16x4xf32>) {
  // expected-error @+1 {{dimension K of 'w' (8) must equal K = 16 (from 'k')}}
  %d, %s, %f = linattn.chunk_state_pass k(%k) u(%u) w(%w) state(%s0) {chunk_size = 4 : i64} : (tensor<1x8x2x16xbf16>, tensor<1x8x2x4xf32>, tensor<1x8x2x2x8xbf16>, tensor<1x2x16x4xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x2x2x16x4xf32>, tensor<1x2x16x4xf32>)
  return
}

// -----

// chunk_transitions takes W whole
func.func @f(%k: tensor<1x8x2x16xbf16>, %u: tensor<1x8x2x4xf32>, %w: tensor<1x8x2x2x16xbf16>) {
  // expected-error @+1 {{'w' must be a rank-4 tensor [B, T, HV, K], got 'tensor<1x8x2x2x16xbf16>'}}
  %m, %b = linattn.chunk_transitions k(%k) u(%u) w(%w) {chunk_size = 4 : i64} : (tensor<1x8x2x16xbf16>, tensor<1x8x2x4xf32>, tensor<1x8x2x2x16xbf16>) -> (tensor<1x2x2x16x16xf32>, tensor<1x2x2x16x4xf32>)
  return
}

// -----

// ut_transform beta T mismatch
func.func @f(%k: tensor<1x8x2x16xf32>, %v: tensor<1x8x2x4xf32>, %b: tensor<1x7x2xf32>) {
  // expected-error @+1 {{dimension T of 'beta' (7) must equal T = 8 (from 'k')}}
  %w, %u = linattn.ut_transform k(%k) v(%v) beta(%b) {chunk_size = 4 : i64, rank1_scale = 1.0 : f32} : (tensor<1x8x2x16xf32>, tensor<1x8x2x4xf32>, tensor<1x7x2xf32>) -> (tensor<1x8x2x16xf32>, tensor<1x8x2x4xf32>)
  return
}

// -----

// ut_transform HV not a multiple of H
func.func @f(%k: tensor<1x8x2x16xf32>, %v: tensor<1x8x3x4xf32>, %b: tensor<1x8x3xf32>) {
  // expected-error @+1 {{the number of value heads HV = 3 must be a multiple of the number of query/key heads H = 2}}
  %w, %u = linattn.ut_transform k(%k) v(%v) beta(%b) {chunk_size = 4 : i64, rank1_scale = 1.0 : f32} : (tensor<1x8x2x16xf32>, tensor<1x8x3x4xf32>, tensor<1x8x3xf32>) -> (tensor<1x8x3x16xf32>, tensor<1x8x3x4xf32>)
  return
}

// -----

// state pass with both w and beta
func.func @f(%k: tensor<1x8x2x16xf32>, %v: tensor<1x8x2x4xf32>, %w: tensor<1x8x2x16xf32>, %b: tensor<1x8x2xf32>, %s0: tensor<1x2x16x4xf32>) {
  // expected-error @+1 {{takes either 'w' (WY form) or 'beta' (rank-1 product form), not both}}
  %d, %s, %f = linattn.chunk_state_pass k(%k) u(%v) w(%w) beta(%b) state(%s0) {chunk_size = 4 : i64, rank1_scale = 1.0 : f32} : (tensor<1x8x2x16xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2xf32>, tensor<1x2x16x4xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x2x2x16x4xf32>, tensor<1x2x16x4xf32>)
  return
}

// -----

// state pass rank-1 form without rank1_scale
func.func @f(%k: tensor<1x8x2x16xf32>, %v: tensor<1x8x2x4xf32>, %b: tensor<1x8x2xf32>, %s0: tensor<1x2x16x4xf32>) {
  // expected-error @+1 {{the rank-1 product form (with 'beta') requires 'rank1_scale'}}
  %d, %s, %f = linattn.chunk_state_pass k(%k) u(%v) beta(%b) state(%s0) {chunk_size = 4 : i64} : (tensor<1x8x2x16xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2xf32>, tensor<1x2x16x4xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x2x2x16x4xf32>, tensor<1x2x16x4xf32>)
  return
}

// -----

// state pass rank1_scale without beta
func.func @f(%k: tensor<1x8x2x16xf32>, %v: tensor<1x8x2x4xf32>, %s0: tensor<1x2x16x4xf32>) {
  // expected-error @+1 {{'rank1_scale' is only meaningful with 'beta'}}
  %d, %s, %f = linattn.chunk_state_pass k(%k) u(%v) state(%s0) {chunk_size = 4 : i64, rank1_scale = 1.0 : f32} : (tensor<1x8x2x16xf32>, tensor<1x8x2x4xf32>, tensor<1x2x16x4xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x2x2x16x4xf32>, tensor<1x2x16x4xf32>)
  return
}

// -----

// state pass chunk count
func.func @f(%k: tensor<1x8x2x16xf32>, %v: tensor<1x8x2x4xf32>, %s0: tensor<1x2x16x4xf32>) {
  // expected-error @+1 {{the number of chunks NC = 2 must be ceil(T / chunk_size) = 3 for T = 8 and chunk_size = 3}}
  %d, %s, %f = linattn.chunk_state_pass k(%k) u(%v) state(%s0) {chunk_size = 3 : i64} : (tensor<1x8x2x16xf32>, tensor<1x8x2x4xf32>, tensor<1x2x16x4xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x2x2x16x4xf32>, tensor<1x2x16x4xf32>)
  return
}

// -----

// state pass per-key gate in WY form (kda), with per-key gates of the
// wrong key dimension
func.func @f(%k: tensor<1x8x2x16xf32>, %v: tensor<1x8x2x4xf32>, %w: tensor<1x8x2x16xf32>, %g: tensor<1x8x2x8xf32>, %s0: tensor<1x2x16x4xf32>) {
  // expected-error @+1 {{'gates'}}
  %d, %s, %f = linattn.chunk_state_pass k(%k) u(%v) w(%w) gates(%g) state(%s0) {chunk_size = 4 : i64} : (tensor<1x8x2x16xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x8xf32>, tensor<1x2x16x4xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x2x2x16x4xf32>, tensor<1x2x16x4xf32>)
  return
}

// -----

// state pass state K mismatch
func.func @f(%k: tensor<1x8x2x16xf32>, %v: tensor<1x8x2x4xf32>, %s0: tensor<1x2x8x4xf32>) {
  // expected-error @+1 {{dimension K of 'initial_state' (8) must equal K = 16 (from 'k')}}
  %d, %s, %f = linattn.chunk_state_pass k(%k) u(%v) state(%s0) {chunk_size = 4 : i64} : (tensor<1x8x2x16xf32>, tensor<1x8x2x4xf32>, tensor<1x2x8x4xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x2x2x16x4xf32>, tensor<1x2x16x4xf32>)
  return
}

// -----

// state pass dynamic K
func.func @f(%k: tensor<1x8x2x?xf32>, %v: tensor<1x8x2x4xf32>, %s0: tensor<1x2x16x4xf32>) {
  // expected-error @+1 {{dimension K of 'k' must be static (only B, T and NC may be dynamic)}}
  %d, %s, %f = linattn.chunk_state_pass k(%k) u(%v) state(%s0) {chunk_size = 4 : i64} : (tensor<1x8x2x?xf32>, tensor<1x8x2x4xf32>, tensor<1x2x16x4xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x2x2x16x4xf32>, tensor<1x2x16x4xf32>)
  return
}

// -----

// output scale
func.func @f(%k: tensor<1x8x2x16xf32>, %v: tensor<1x8x2x4xf32>, %s: tensor<1x2x2x16x4xf32>) {
  // expected-error @+1 {{'scale' must be finite and positive, got -1}}
  %o = linattn.chunk_output q(%k) k(%k) new_values(%v) states(%s) {chunk_size = 4 : i64, scale = -1.0 : f32} : (tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x4xf32>, tensor<1x2x2x16x4xf32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

// output new values must be bf16, f16 or f32
func.func @f(%k: tensor<1x8x2x16xf32>, %v: tensor<1x8x2x4xf64>, %s: tensor<1x2x2x16x4xf32>) {
  // expected-error @+1 {{'new_values' element type must be bf16, f16 or f32, got 'f64'}}
  %o = linattn.chunk_output q(%k) k(%k) new_values(%v) states(%s) {chunk_size = 4 : i64, scale = 1.0 : f32} : (tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x4xf64>, tensor<1x2x2x16x4xf32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

// output states rank
func.func @f(%k: tensor<1x8x2x16xf32>, %v: tensor<1x8x2x4xf32>, %s: tensor<1x2x16x4xf32>) {
  // expected-error @+1 {{'chunk_states' must be a rank-5 tensor [B, NC, HV, K, V]}}
  %o = linattn.chunk_output q(%k) k(%k) new_values(%v) states(%s) {chunk_size = 4 : i64, scale = 1.0 : f32} : (tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x4xf32>, tensor<1x2x16x4xf32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

// chunk_transitions in WY form returns dense K x K maps
func.func @f(%k: tensor<1x8x2x16xf32>, %u: tensor<1x8x2x4xf32>, %w: tensor<1x8x2x16xf32>) {
  // expected-error @+1 {{'transitions' must be a rank-5 tensor [B, NC, HV, K, K], got 'tensor<1x2x2xf32>'}}
  %m, %b = linattn.chunk_transitions k(%k) u(%u) w(%w) {chunk_size = 4 : i64} : (tensor<1x8x2x16xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x16xf32>) -> (tensor<1x2x2xf32>, tensor<1x2x2x16x4xf32>)
  return
}

// -----

// chunk_transitions without w returns log decays
func.func @f(%k: tensor<1x8x2x16xf32>, %u: tensor<1x8x2x4xf32>, %g: tensor<1x8x2xf32>) {
  // expected-error @+1 {{without 'w' the transitions are log decays [B, NC, HV], got 'tensor<1x2x2x16x16xf32>'}}
  %m, %b = linattn.chunk_transitions k(%k) u(%u) gates(%g) {chunk_size = 4 : i64} : (tensor<1x8x2x16xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2xf32>) -> (tensor<1x2x2x16x16xf32>, tensor<1x2x2x16x4xf32>)
  return
}

// -----

// chunk_transitions offsets shape
func.func @f(%k: tensor<1x8x2x16xf32>, %u: tensor<1x8x2x4xf32>) {
  // expected-error @+1 {{dimension V of 'offsets' (8) must equal V = 4 (from 'u')}}
  %m, %b = linattn.chunk_transitions k(%k) u(%u) {chunk_size = 4 : i64} : (tensor<1x8x2x16xf32>, tensor<1x8x2x4xf32>) -> (tensor<1x2x2xf32>, tensor<1x2x2x16x8xf32>)
  return
}

// -----

// chunk_new_values chunk count
func.func @f(%u: tensor<1x8x2x4xf32>, %s: tensor<1x3x2x16x4xf32>) {
  // expected-error @+1 {{the number of chunks NC = 3 must be ceil(T / chunk_size) = 2 for T = 8 and chunk_size = 4}}
  %d = linattn.chunk_new_values u(%u) states(%s) {chunk_size = 4 : i64} : (tensor<1x8x2x4xf32>, tensor<1x3x2x16x4xf32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

// chunk_new_values w must be a float type
func.func @f(%u: tensor<1x8x2x4xf32>, %w: tensor<1x8x2x16xf64>, %s: tensor<1x2x2x16x4xf32>) {
  // expected-error @+1 {{'w' element type must be bf16, f16 or f32, got 'f64'}}
  %d = linattn.chunk_new_values u(%u) w(%w) states(%s) {chunk_size = 4 : i64} : (tensor<1x8x2x4xf32>, tensor<1x8x2x16xf64>, tensor<1x2x2x16x4xf32>) -> tensor<1x8x2x4xf32>
  return
}

// -----

// segments of a state pass with a rank-1 term
func.func @f(%k: tensor<?x?x1x16xf32>, %u: tensor<?x?x1x16xf32>, %w: tensor<?x?x1x16xf32>, %s0: tensor<?x1x16x16xf32>) {
  // expected-error @+1 {{'segment_chunks' needs transitions that are scalars: the rank-1 term makes them matrices}}
  %d, %states, %ends = linattn.chunk_state_pass k(%k) u(%u) w(%w) state(%s0) {chunk_size = 16 : i64, segment_chunks = 2 : i64}
      : (tensor<?x?x1x16xf32>, tensor<?x?x1x16xf32>, tensor<?x?x1x16xf32>, tensor<?x1x16x16xf32>) -> (tensor<?x?x1x16xf32>, tensor<?x?x1x16x16xf32>, tensor<?x?x1x16x16xf32>)
  return
}

// -----

// a [B, NS, HV, K, V] initial state without segments
func.func @f(%k: tensor<?x?x1x16xf32>, %u: tensor<?x?x1x16xf32>, %w: tensor<?x?x1x16xf32>, %s0: tensor<?x?x1x16x16xf32>) {
  // expected-error @+1 {{a [B, NS, HV, K, V] 'initial_state' (every segment's entering state) needs 'segment_chunks'}}
  %d, %states, %final = linattn.chunk_state_pass k(%k) u(%u) w(%w) state(%s0) {chunk_size = 16 : i64}
      : (tensor<?x?x1x16xf32>, tensor<?x?x1x16xf32>, tensor<?x?x1x16xf32>, tensor<?x?x1x16x16xf32>) -> (tensor<?x?x1x16xf32>, tensor<?x?x1x16x16xf32>, tensor<?x1x16x16xf32>)
  return
}

// -----

// segments entered from their own states in the rank-1 product form
func.func @f(%k: tensor<?x?x1x16xf32>, %u: tensor<?x?x1x16xf32>, %b: tensor<?x?x1xf32>, %s0: tensor<?x?x1x16x16xf32>) {
  // expected-error @+1 {{segments entered from their own states take the WY form, not 'beta': run linattn-lower-rank1-to-wy first}}
  %d, %states, %ends = linattn.chunk_state_pass k(%k) u(%u) beta(%b) state(%s0) {chunk_size = 16 : i64, rank1_scale = 1.0 : f32, segment_chunks = 2 : i64}
      : (tensor<?x?x1x16xf32>, tensor<?x?x1x16xf32>, tensor<?x?x1xf32>, tensor<?x?x1x16x16xf32>) -> (tensor<?x?x1x16xf32>, tensor<?x?x1x16x16xf32>, tensor<?x?x1x16x16xf32>)
  return
}

// -----

// segment maps without K + V columns
func.func @f(%k: tensor<?x?x1x16xbf16>, %u: tensor<?x?x1x32xbf16>, %w: tensor<?x?x1x16xbf16>) {
  // expected-error @+1 {{'maps' must have K + V = 48 columns ([A_s | E_s]), got 32}}
  %m = linattn.segment_maps k(%k) u(%u) w(%w) {chunk_size = 64 : i64, segment_chunks = 4 : i64}
      : (tensor<?x?x1x16xbf16>, tensor<?x?x1x32xbf16>, tensor<?x?x1x16xbf16>) -> tensor<?x?x1x16x32xf32>
  return
}

// -----

// segment maps not in f32
func.func @f(%k: tensor<?x?x1x16xbf16>, %u: tensor<?x?x1x16xbf16>, %w: tensor<?x?x1x16xbf16>) {
  // expected-error @+1 {{'maps' must have element type f32, got 'bf16'}}
  %m = linattn.segment_maps k(%k) u(%u) w(%w) {chunk_size = 64 : i64, segment_chunks = 4 : i64}
      : (tensor<?x?x1x16xbf16>, tensor<?x?x1x16xbf16>, tensor<?x?x1x16xbf16>) -> tensor<?x?x1x16x32xbf16>
  return
}

// -----

// the wrong number of segment maps for a static T
func.func @f(%k: tensor<1x100x1x16xf32>, %u: tensor<1x100x1x16xf32>, %w: tensor<1x100x1x16xf32>) {
  // expected-error @+1 {{the number of segments NS = 2 must be max(1, ceil(ceil(T / chunk_size) / segment_chunks)) = 4 for T = 100, chunk_size = 16 and segment_chunks = 2}}
  %m = linattn.segment_maps k(%k) u(%u) w(%w) {chunk_size = 16 : i64, segment_chunks = 2 : i64}
      : (tensor<1x100x1x16xf32>, tensor<1x100x1x16xf32>, tensor<1x100x1x16xf32>) -> tensor<1x2x1x16x32xf32>
  return
}

// -----

// decayed keys without chunk totals
func.func @f(%k: tensor<?x?x1x16xbf16>, %u: tensor<?x?x1x16xbf16>, %g: tensor<?x?x1xf32>) {
  // expected-error @+1 {{'decayed_keys' needs the chunks' total per-key gates [B, NC, HV, K] as 'gates'}}
  %m = linattn.segment_maps k(%k) u(%u) gates(%g) {chunk_size = 64 : i64, segment_chunks = 4 : i64, decayed_keys}
      : (tensor<?x?x1x16xbf16>, tensor<?x?x1x16xbf16>, tensor<?x?x1xf32>) -> tensor<?x?x1x16x32xf32>
  return
}

// -----

// segment entries whose state disagrees with the maps
func.func @f(%m: tensor<?x?x2x16x32xf32>, %s0: tensor<?x2x16x8xf32>) {
  // expected-error @+1 {{'maps' must have K + V = 24 columns ([A_s | E_s]), got 32}}
  %e, %final = linattn.segment_entries maps(%m) state(%s0)
      : (tensor<?x?x2x16x32xf32>, tensor<?x2x16x8xf32>) -> (tensor<?x?x2x16x8xf32>, tensor<?x2x16x8xf32>)
  return
}

// -----

// segment entries not [B, NS, HV, K, V]
func.func @f(%m: tensor<?x?x2x16x32xf32>, %s0: tensor<?x2x16x16xf32>) {
  // expected-error @+1 {{'entries' must be a rank-5 tensor [B, NS, HV, K, V]}}
  %e, %final = linattn.segment_entries maps(%m) state(%s0)
      : (tensor<?x?x2x16x32xf32>, tensor<?x2x16x16xf32>) -> (tensor<?x2x16x16xf32>, tensor<?x2x16x16xf32>)
  return
}

// -----

// a segmented state pass whose ends are not [B, NS, HV, K, V]
func.func @f(%k: tensor<?x?x1x16xf32>, %u: tensor<?x?x1x16xf32>, %s0: tensor<?x1x16x16xf32>) {
  // expected-error @+1 {{'final_state' must be a rank-5 tensor [B, NS, HV, K, V]}}
  %d, %states, %ends = linattn.chunk_state_pass k(%k) u(%u) state(%s0) {chunk_size = 16 : i64, segment_chunks = 2 : i64}
      : (tensor<?x?x1x16xf32>, tensor<?x?x1x16xf32>, tensor<?x1x16x16xf32>) -> (tensor<?x?x1x16xf32>, tensor<?x?x1x16x16xf32>, tensor<?x1x16x16xf32>)
  return
}

// -----

// the wrong number of segments for a static T
func.func @f(%k: tensor<1x100x1x16xf32>, %u: tensor<1x100x1x16xf32>, %s0: tensor<1x1x16x16xf32>) {
  // expected-error @+1 {{the number of segments NS = 3 must be max(1, ceil(ceil(T / chunk_size) / segment_chunks)) = 4 for T = 100, chunk_size = 16 and segment_chunks = 2}}
  %d, %states, %ends = linattn.chunk_state_pass k(%k) u(%u) state(%s0) {chunk_size = 16 : i64, segment_chunks = 2 : i64}
      : (tensor<1x100x1x16xf32>, tensor<1x100x1x16xf32>, tensor<1x1x16x16xf32>) -> (tensor<1x100x1x16xf32>, tensor<1x7x1x16x16xf32>, tensor<1x3x1x16x16xf32>)
  return
}

// -----

// segment_carries of per-key gates
func.func @f(%ends: tensor<?x?x1x16x16xf32>, %g: tensor<?x?x1x16xf32>) {
  // expected-error @+1 {{'gates' must be scalar per head [B, T, HV] here}}
  %c, %final = linattn.segment_carries ends(%ends) gates(%g) {chunk_size = 16 : i64, segment_chunks = 2 : i64}
      : (tensor<?x?x1x16x16xf32>, tensor<?x?x1x16xf32>) -> (tensor<?x?x1x16x16xf32>, tensor<?x1x16x16xf32>)
  return
}

// -----

// carries without segment_chunks
func.func @f(%q: tensor<?x?x1x16xf32>, %d: tensor<?x?x1x16xf32>, %states: tensor<?x?x1x16x16xf32>, %c: tensor<?x?x1x16x16xf32>) {
  // expected-error @+1 {{'carries' and 'segment_chunks' come together: segment-local chunk states need both}}
  %o = linattn.chunk_output q(%q) k(%q) new_values(%d) states(%states) carries(%c) {chunk_size = 16 : i64, scale = 0.25 : f32}
      : (tensor<?x?x1x16xf32>, tensor<?x?x1x16xf32>, tensor<?x?x1x16xf32>, tensor<?x?x1x16x16xf32>, tensor<?x?x1x16x16xf32>) -> tensor<?x?x1x16xf32>
  return
}

// -----

// ut_transform with both cumulative and raw gates
func.func @f(%k: tensor<1x8x2x16xf32>, %v: tensor<1x8x2x4xf32>, %b: tensor<1x8x2xf32>, %g: tensor<1x8x2xf32>) {
  // expected-error @+1 {{takes either 'gates' (cumulative) or 'raw_gates' (summed by the op), not both}}
  %w, %u, %G = linattn.ut_transform k(%k) v(%v) beta(%b) gates(%g) raw_gates(%g) {chunk_size = 4 : i64, rank1_scale = 1.0 : f32} : (tensor<1x8x2x16xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2xf32>, tensor<1x8x2xf32>, tensor<1x8x2xf32>) -> (tensor<1x8x2x16xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2xf32>)
  return
}

// -----

// ut_transform with raw gates but no cumulative-gates result
func.func @f(%k: tensor<1x8x2x16xf32>, %v: tensor<1x8x2x4xf32>, %b: tensor<1x8x2xf32>, %g: tensor<1x8x2xf32>) {
  // expected-error @+1 {{returns 'cumulative_gates' exactly when it takes 'raw_gates'}}
  %w, %u = linattn.ut_transform k(%k) v(%v) beta(%b) raw_gates(%g) {chunk_size = 4 : i64, rank1_scale = 1.0 : f32} : (tensor<1x8x2x16xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2xf32>, tensor<1x8x2xf32>) -> (tensor<1x8x2x16xf32>, tensor<1x8x2x4xf32>)
  return
}

// -----

// ut_transform whose cumulative gates are not f32
func.func @f(%k: tensor<1x8x2x16xf32>, %v: tensor<1x8x2x4xf32>, %b: tensor<1x8x2xf32>, %g: tensor<1x8x2xf32>) {
  // expected-error @+1 {{'cumulative_gates' must have element type f32, got 'bf16'}}
  %w, %u, %G = linattn.ut_transform k(%k) v(%v) beta(%b) raw_gates(%g) {chunk_size = 4 : i64, rank1_scale = 1.0 : f32} : (tensor<1x8x2x16xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2xf32>, tensor<1x8x2xf32>) -> (tensor<1x8x2x16xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2xbf16>)
  return
}

// -----

// chunk_cumsum decaying keys by scalar gates
func.func @f(%g: tensor<1x8x2xf32>, %k: tensor<1x8x2x16xf32>) {
  // expected-error @+1 {{'keys' are decayed by per-key gates [B, T, HV, K], got 'gate' 'tensor<1x8x2xf32>'}}
  %G, %kd, %gc = linattn.chunk_cumsum %g keys(%k : tensor<1x8x2x16xf32>) {chunk_size = 4 : i64} : tensor<1x8x2xf32> -> tensor<1x8x2xf32>, tensor<1x8x2x16xf32>, tensor<1x2x2x16xf32>
  return
}

// -----

// chunk_cumsum with keys whose totals have the wrong chunk count
func.func @f(%g: tensor<1x8x2x16xf32>, %k: tensor<1x8x1x16xbf16>) {
  // expected-error @+1 {{the number of chunks NC = 3 must be ceil(T / chunk_size) = 2 for T = 8 and chunk_size = 4}}
  %G, %kd, %gc = linattn.chunk_cumsum %g keys(%k : tensor<1x8x1x16xbf16>) {chunk_size = 4 : i64} : tensor<1x8x2x16xf32> -> tensor<1x8x2x16xf32>, tensor<1x8x2x16xbf16>, tensor<1x3x2x16xf32>
  return
}

// -----

// chunk_cumsum whose decayed keys change the keys' type
func.func @f(%g: tensor<1x8x2x16xf32>, %k: tensor<1x8x1x16xbf16>) {
  // expected-error @+1 {{'decayed_keys' must have the keys' element type 'bf16', got 'f32'}}
  %G, %kd, %gc = linattn.chunk_cumsum %g keys(%k : tensor<1x8x1x16xbf16>) {chunk_size = 4 : i64} : tensor<1x8x2x16xf32> -> tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x2x2x16xf32>
  return
}

// -----

// a state pass with decayed keys whose gates are per token, not per chunk
func.func @f(%k: tensor<1x8x2x16xbf16>, %u: tensor<1x8x2x4xf32>, %g: tensor<1x8x2x16xf32>, %s0: tensor<1x2x16x4xf32>) {
  // expected-error @+1 {{dimension NC of 'chunk_states' (2) must equal NC = 8 (from 'gates')}}
  %d, %s, %f = linattn.chunk_state_pass k(%k) u(%u) gates(%g) state(%s0) {chunk_size = 4 : i64, decayed_keys} : (tensor<1x8x2x16xbf16>, tensor<1x8x2x4xf32>, tensor<1x8x2x16xf32>, tensor<1x2x16x4xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x2x2x16x4xf32>, tensor<1x2x16x4xf32>)
  return
}

// -----

// a state pass with decayed keys and scalar gates
func.func @f(%k: tensor<1x8x2x16xbf16>, %u: tensor<1x8x2x4xf32>, %g: tensor<1x2x2xf32>, %s0: tensor<1x2x16x4xf32>) {
  // expected-error @+1 {{'decayed_keys' needs the chunks' total per-key gates [B, NC, HV, K] as 'gates'}}
  %d, %s, %f = linattn.chunk_state_pass k(%k) u(%u) gates(%g) state(%s0) {chunk_size = 4 : i64, decayed_keys} : (tensor<1x8x2x16xbf16>, tensor<1x8x2x4xf32>, tensor<1x2x2xf32>, tensor<1x2x16x4xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x2x2x16x4xf32>, tensor<1x2x16x4xf32>)
  return
}

// -----

// a state pass with decayed keys and segments
func.func @f(%k: tensor<1x8x2x16xbf16>, %u: tensor<1x8x2x4xf32>, %g: tensor<1x2x2x16xf32>, %s0: tensor<1x2x16x4xf32>) {
  // expected-error @+1 {{'decayed_keys' takes neither 'beta' nor 'segment_chunks'}}
  %d, %s, %f = linattn.chunk_state_pass k(%k) u(%u) gates(%g) state(%s0) {chunk_size = 4 : i64, decayed_keys, segment_chunks = 1 : i64} : (tensor<1x8x2x16xbf16>, tensor<1x8x2x4xf32>, tensor<1x2x2x16xf32>, tensor<1x2x16x4xf32>) -> (tensor<1x8x2x4xf32>, tensor<1x2x2x16x4xf32>, tensor<1x2x2x16x4xf32>)
  return
}

// -----

// The state pass with the outputs in it takes row gates or none.
func.func @f(%q: tensor<1x8x2x16xbf16>, %u: tensor<1x8x2x32xf32>, %g: tensor<1x8x2x16xf32>, %s: tensor<1x2x16x32xf32>) {
  // expected-error @+1 {{'gates' must be scalar per head [B, T, HV] here, got 'tensor<1x8x2x16xf32>'}}
  %o, %f = linattn.chunk_state_pass_output q(%q) k(%q) u(%u) gates(%g) state(%s) {chunk_size = 64 : i64, scale = 0.25 : f32}
      : (tensor<1x8x2x16xbf16>, tensor<1x8x2x16xbf16>, tensor<1x8x2x32xf32>, tensor<1x8x2x16xf32>, tensor<1x2x16x32xf32>) -> (tensor<1x8x2x32xbf16>, tensor<1x2x16x32xf32>)
  return
}

// -----

// Its output has the values' layout.
func.func @f(%q: tensor<1x8x2x16xbf16>, %u: tensor<1x8x2x32xf32>, %s: tensor<1x2x16x32xf32>) {
  // expected-error @+1 {{dimension V of 'output' (16) must equal V = 32 (from 'u')}}
  %o, %f = linattn.chunk_state_pass_output q(%q) k(%q) u(%u) state(%s) {chunk_size = 64 : i64, scale = 0.25 : f32}
      : (tensor<1x8x2x16xbf16>, tensor<1x8x2x16xbf16>, tensor<1x8x2x32xf32>, tensor<1x2x16x32xf32>) -> (tensor<1x8x2x16xbf16>, tensor<1x2x16x32xf32>)
  return
}

// -----

// and a positive scale.
func.func @f(%q: tensor<1x8x2x16xbf16>, %u: tensor<1x8x2x32xf32>, %s: tensor<1x2x16x32xf32>) {
  // expected-error @+1 {{'scale' must be finite and positive, got 0}}
  %o, %f = linattn.chunk_state_pass_output q(%q) k(%q) u(%u) state(%s) {chunk_size = 64 : i64, scale = 0.0 : f32}
      : (tensor<1x8x2x16xbf16>, tensor<1x8x2x16xbf16>, tensor<1x8x2x32xf32>, tensor<1x2x16x32xf32>) -> (tensor<1x8x2x32xbf16>, tensor<1x2x16x32xf32>)
  return
}
