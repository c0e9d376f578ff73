// RUN: linattn-opt %s -split-input-file -verify-diagnostics
//
// Every malformed linattn.recurrence gets a diagnostic that names the
// operand or attribute at fault and what was expected.

// q_rank
func.func @q_rank(%q: tensor<4x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x8xf32>, %state: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{'q' must be a rank-4 tensor [B, T, H, K], got 'tensor<4x2x16xf32>'}}
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%state)
      : (tensor<4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// k_rank
func.func @k_rank(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16x1xf32>, %v: tensor<1x4x2x8xf32>, %state: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{'k' must be a rank-4 tensor [B, T, H, K]}}
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%state)
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16x1xf32>, tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// v_rank
func.func @v_rank(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<4x2x8xf32>, %state: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{'v' must be a rank-4 tensor [B, T, HV, V]}}
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%state)
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<4x2x8xf32>, tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// state_rank
func.func @state_rank(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x8xf32>, %state: tensor<2x16x8xf32>) {
  // expected-error @+1 {{'initial_state' must be a rank-4 tensor [B, HV, K, V]}}
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%state)
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x8xf32>, tensor<2x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// q_elem_int
func.func @q_elem_int(%q: tensor<1x4x2x16xi32>, %k: tensor<1x4x2x16xi32>, %v: tensor<1x4x2x8xi32>, %state: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{'q' element type must be bf16, f16 or f32, got 'i32'}}
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%state)
      : (tensor<1x4x2x16xi32>, tensor<1x4x2x16xi32>, tensor<1x4x2x8xi32>, tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xi32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// q_elem_f64
func.func @q_elem_f64(%q: tensor<1x4x2x16xf64>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x8xf32>, %state: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{'q' element type must be bf16, f16 or f32, got 'f64'}}
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%state)
      : (tensor<1x4x2x16xf64>, tensor<1x4x2x16xf32>, tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// k_elem_mismatch
func.func @k_elem_mismatch(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xbf16>, %v: tensor<1x4x2x8xf32>, %state: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{'k' element type 'bf16' must match the element type of 'q' ('f32')}}
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%state)
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xbf16>, tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// v_elem_mismatch
func.func @v_elem_mismatch(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x8xf16>, %state: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{'v' element type 'f16' must match the element type of 'q' ('f32')}}
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%state)
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x8xf16>, tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// state_elem
func.func @state_elem(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x8xf32>, %state: tensor<1x2x16x8xbf16>) {
  // expected-error @+1 {{'initial_state' must have element type f32 (the state is kept in fp32), got 'bf16'}}
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%state)
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x8xf32>, tensor<1x2x16x8xbf16>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// dynamic_H
func.func @dynamic_H(%q: tensor<1x4x?x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x8xf32>, %state: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{dimension H of 'q' must be static (only B and T may be dynamic)}}
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%state)
      : (tensor<1x4x?x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// dynamic_K
func.func @dynamic_K(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x?xf32>, %v: tensor<1x4x2x8xf32>, %state: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{dimension K of 'k' must be static (only B and T may be dynamic)}}
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%state)
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x?xf32>, tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// dynamic_HV
func.func @dynamic_HV(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x?x8xf32>, %state: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{dimension HV of 'v' must be static}}
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%state)
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x?x8xf32>, tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// dynamic_V
func.func @dynamic_V(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x?xf32>, %state: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{dimension V of 'v' must be static}}
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%state)
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x?xf32>, tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// dynamic_state_K
func.func @dynamic_state_K(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x8xf32>, %state: tensor<1x2x?x8xf32>) {
  // expected-error @+1 {{dimension K of 'initial_state' must be static (only B may be dynamic)}}
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%state)
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x8xf32>, tensor<1x2x?x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// hv_not_multiple
func.func @hv_not_multiple(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x3x8xf32>, %state: tensor<1x3x16x8xf32>) {
  // expected-error @+1 {{the number of value heads HV = 3 must be a multiple of the number of query/key heads H = 2}}
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%state)
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x3x8xf32>, tensor<1x3x16x8xf32>) -> (tensor<1x4x3x8xf32>, tensor<1x3x16x8xf32>)
  return
}

// -----

// missing_gate
func.func @missing_gate(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x8xf32>, %state: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{kind 'scalar_gate' requires a 'gate' operand (log-space gate)}}
  %o, %s = linattn.recurrence scalar_gate q(%q) k(%k) v(%v) state(%state)
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// extra_gate
func.func @extra_gate(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x8xf32>, %gate: tensor<1x4x2xf32>, %state: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{kind 'identity' takes no 'gate' operand}}
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) gate(%gate) state(%state)
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2xf32>, tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// missing_beta
func.func @missing_beta(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x8xf32>, %gate: tensor<1x4x2xf32>, %state: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{kind 'gated_delta' requires a 'beta' operand [B, T, HV]}}
  %o, %s = linattn.recurrence gated_delta q(%q) k(%k) v(%v) gate(%gate) state(%state)
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2xf32>, tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// extra_beta
func.func @extra_beta(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x8xf32>, %gate: tensor<1x4x2x16xf32>, %beta: tensor<1x4x2xf32>, %state: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{kind 'key_gate' takes no 'beta' operand}}
  %o, %s = linattn.recurrence key_gate q(%q) k(%k) v(%v) gate(%gate) beta(%beta) state(%state)
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2xf32>, tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// missing_gate_gated_delta
func.func @missing_gate_gated_delta(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x8xf32>, %beta: tensor<1x4x2xf32>, %state: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{kind 'gated_delta' requires a 'gate' operand}}
  %o, %s = linattn.recurrence gated_delta q(%q) k(%k) v(%v) beta(%beta) state(%state)
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2xf32>, tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// scalar_gate_given_key_gate
func.func @scalar_gate_given_key_gate(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x8xf32>, %gate: tensor<1x4x2x16xf32>, %state: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{kind 'scalar_gate' takes a scalar gate [B, T, HV] of rank 3, got 'tensor<1x4x2x16xf32>'}}
  %o, %s = linattn.recurrence scalar_gate q(%q) k(%k) v(%v) gate(%gate) state(%state)
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2x16xf32>, tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// key_gate_given_scalar_gate
func.func @key_gate_given_scalar_gate(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x8xf32>, %gate: tensor<1x4x2xf32>, %state: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{kind 'key_gate' takes a per-key gate [B, T, HV, K] of rank 4, got 'tensor<1x4x2xf32>'}}
  %o, %s = linattn.recurrence key_gate q(%q) k(%k) v(%v) gate(%gate) state(%state)
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2xf32>, tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// gate_elem
func.func @gate_elem(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x8xf32>, %gate: tensor<1x4x2xi8>, %state: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{'gate' element type must be bf16, f16 or f32, got 'i8'}}
  %o, %s = linattn.recurrence scalar_gate q(%q) k(%k) v(%v) gate(%gate) state(%state)
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2xi8>, tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// beta_rank
func.func @beta_rank(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x8xf32>, %beta: tensor<1x4x2x1xf32>, %state: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{'beta' must be a rank-3 tensor [B, T, HV], got 'tensor<1x4x2x1xf32>'}}
  %o, %s = linattn.recurrence delta q(%q) k(%k) v(%v) beta(%beta) state(%state)
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2x1xf32>, tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// beta_elem
func.func @beta_elem(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x8xf32>, %beta: tensor<1x4x2xf64>, %state: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{'beta' element type must be bf16, f16 or f32, got 'f64'}}
  %o, %s = linattn.recurrence delta q(%q) k(%k) v(%v) beta(%beta) state(%state)
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2xf64>, tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// k_H_mismatch
func.func @k_H_mismatch(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x1x16xf32>, %v: tensor<1x4x2x8xf32>, %state: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{dimension H of 'k' (1) must equal H = 2 (dimension H of 'q')}}
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%state)
      : (tensor<1x4x2x16xf32>, tensor<1x4x1x16xf32>, tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// v_T_mismatch
func.func @v_T_mismatch(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x5x2x8xf32>, %state: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{dimension T of 'v' (5) must equal T = 4 (dimension T of 'q')}}
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%state)
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x5x2x8xf32>, tensor<1x2x16x8xf32>) -> (tensor<1x5x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// v_B_mismatch
func.func @v_B_mismatch(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<3x4x2x8xf32>, %state: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{dimension B of 'v' (3) must equal B = 1 (dimension B of 'q')}}
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%state)
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<3x4x2x8xf32>, tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// state_K_mismatch
func.func @state_K_mismatch(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x8xf32>, %state: tensor<1x2x8x8xf32>) {
  // expected-error @+1 {{dimension K of 'initial_state' (8) must equal K = 16 (dimension K of 'q')}}
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%state)
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x8xf32>, tensor<1x2x8x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// state_V_mismatch
func.func @state_V_mismatch(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x8xf32>, %state: tensor<1x2x16x4xf32>) {
  // expected-error @+1 {{dimension V of 'initial_state' (4) must equal V = 8 (dimension V of 'v')}}
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%state)
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x8xf32>, tensor<1x2x16x4xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// state_HV_mismatch
func.func @state_HV_mismatch(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x8xf32>, %state: tensor<1x4x16x8xf32>) {
  // expected-error @+1 {{dimension HV of 'initial_state' (4) must equal HV = 2 (dimension HV of 'v')}}
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%state)
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x8xf32>, tensor<1x4x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// gate_T_mismatch
func.func @gate_T_mismatch(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x8xf32>, %gate: tensor<1x3x2xf32>, %state: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{dimension T of 'gate' (3) must equal T = 4 (dimension T of 'q')}}
  %o, %s = linattn.recurrence scalar_gate q(%q) k(%k) v(%v) gate(%gate) state(%state)
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x8xf32>, tensor<1x3x2xf32>, tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// gate_HV_mismatch
func.func @gate_HV_mismatch(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x8xf32>, %gate: tensor<1x4x4xf32>, %state: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{dimension HV of 'gate' (4) must equal HV = 2 (dimension HV of 'v')}}
  %o, %s = linattn.recurrence scalar_gate q(%q) k(%k) v(%v) gate(%gate) state(%state)
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x8xf32>, tensor<1x4x4xf32>, tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// key_gate_K_mismatch
func.func @key_gate_K_mismatch(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x8xf32>, %gate: tensor<1x4x2x8xf32>, %state: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{dimension K of 'gate' (8) must equal K = 16 (dimension K of 'q')}}
  %o, %s = linattn.recurrence key_gate q(%q) k(%k) v(%v) gate(%gate) state(%state)
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// beta_B_mismatch
func.func @beta_B_mismatch(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x8xf32>, %beta: tensor<2x4x2xf32>, %state: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{dimension B of 'beta' (2) must equal B = 1 (dimension B of 'q')}}
  %o, %s = linattn.recurrence delta q(%q) k(%k) v(%v) beta(%beta) state(%state)
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x8xf32>, tensor<2x4x2xf32>, tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// output_type
func.func @output_type(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x8xf32>, %state: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{result 'output' must be [B, T, HV, V] in v's element type = tensor<1x4x2x8xf32>, got 'tensor<1x4x2x8xbf16>'}}
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%state)
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xbf16>, tensor<1x2x16x8xf32>)
  return
}

// -----

// output_shape
func.func @output_shape(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x8xf32>, %state: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{result 'output' must be [B, T, HV, V] in v's element type}}
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%state)
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>) -> (tensor<1x4x2x9xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// final_state_type
func.func @final_state_type(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x8xf32>, %state: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{result 'final_state' must be [B, HV, K, V] in f32 = tensor<1x2x16x8xf32>, got 'tensor<1x2x16x8xf16>'}}
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%state)
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf16>)
  return
}

// -----

// scale_negative
func.func @scale_negative(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x8xf32>, %state: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{'scale' must be finite and positive, got -1}}
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%state) {scale = -1.0 : f32}
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// scale_zero
func.func @scale_zero(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x8xf32>, %state: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{'scale' must be finite and positive, got 0}}
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%state) {scale = 0.0 : f32}
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// decay_missing
func.func @decay_missing(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x8xf32>, %state: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{kind 'constant_decay' requires a 'decay' attribute: array<f32: gamma per value head>}}
  %o, %s = linattn.recurrence constant_decay q(%q) k(%k) v(%v) state(%state)
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// decay_extra
func.func @decay_extra(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x8xf32>, %gate: tensor<1x4x2xf32>, %state: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{'decay' is only allowed with kind 'constant_decay', not 'scalar_gate'}}
  %o, %s = linattn.recurrence scalar_gate q(%q) k(%k) v(%v) gate(%gate) state(%state) {decay = array<f32: 0.9>}
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2xf32>, tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// decay_length
func.func @decay_length(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x8xf32>, %state: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{'decay' must hold one gamma per value head (HV = 2) or a single shared gamma, got 3 values}}
  %o, %s = linattn.recurrence constant_decay q(%q) k(%k) v(%v) state(%state) {decay = array<f32: 0.9, 0.9, 0.9>}
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// decay_above_one
func.func @decay_above_one(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x8xf32>, %state: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{'decay' values must lie in (0, 1], got 1.500000e+00 at index 1}}
  %o, %s = linattn.recurrence constant_decay q(%q) k(%k) v(%v) state(%state) {decay = array<f32: 0.9, 1.5>}
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// decay_zero
func.func @decay_zero(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x8xf32>, %state: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{'decay' values must lie in (0, 1], got 0.000000e+00 at index 0}}
  %o, %s = linattn.recurrence constant_decay q(%q) k(%k) v(%v) state(%state) {decay = array<f32: 0.0>}
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// A misspelt kind is a parse error that lists the valid kinds.
func.func @unknown_kind(%q: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x8xf32>, %s0: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{unknown transition kind 'gated_dleta'; expected one of identity, constant_decay, scalar_gate, key_gate, delta, gated_delta, negeig_delta}}
  %o, %s = linattn.recurrence gated_dleta q(%q) k(%q) v(%v) state(%s0)
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// Unranked operands are rejected by the operand constraints.
func.func @unranked_q(%q: tensor<*xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x8xf32>, %s0: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of any type values, but got 'tensor<*xf32>'}}
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%s0)
      : (tensor<*xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// kda_without_beta
func.func @kda_without_beta(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x8xf32>, %gate: tensor<1x4x2x16xf32>, %state: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{kind 'kda' requires a 'beta' operand}}
  %o, %s = linattn.recurrence kda q(%q) k(%k) v(%v) gate(%gate) state(%state)
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2x16xf32>, tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// kda_given_scalar_gate
func.func @kda_given_scalar_gate(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x8xf32>, %gate: tensor<1x4x2xf32>, %beta: tensor<1x4x2xf32>, %state: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{kind 'kda' takes a per-key gate [B, T, HV, K] of rank 4, got 'tensor<1x4x2xf32>'}}
  %o, %s = linattn.recurrence kda q(%q) k(%k) v(%v) gate(%gate) beta(%beta) state(%state)
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2xf32>, tensor<1x4x2xf32>, tensor<1x2x16x8xf32>) -> (tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// dynamic_result_heads
func.func @dynamic_result_heads(%q: tensor<1x4x2x16xf32>, %k: tensor<1x4x2x16xf32>, %v: tensor<1x4x2x8xf32>, %state: tensor<1x2x16x8xf32>) {
  // expected-error @+1 {{result 'output' must have static head counts and head dims (only B and T may be dynamic, as in the operands: they size the kernels' tiles), got 'tensor<?x?x?x?xf32>'}}
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%state)
      : (tensor<1x4x2x16xf32>, tensor<1x4x2x16xf32>, tensor<1x4x2x8xf32>, tensor<1x2x16x8xf32>) -> (tensor<?x?x?x?xf32>, tensor<1x2x16x8xf32>)
  return
}

// -----

// overflowing_size
func.func @overflowing_size(%q: tensor<?x?x1x4611686018427387904xf32>, %k: tensor<?x?x1x4611686018427387904xf32>, %v: tensor<?x?x1x2xf32>, %state: tensor<?x1x4611686018427387904x2xf32>) {
  // expected-error @+1 {{'q' of type 'tensor<?x?x1x4611686018427387904xf32>' has more than 2^60 elements: its size overflows the generated code's 64-bit sizes}}
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%state)
      : (tensor<?x?x1x4611686018427387904xf32>, tensor<?x?x1x4611686018427387904xf32>, tensor<?x?x1x2xf32>, tensor<?x1x4611686018427387904x2xf32>) -> (tensor<?x?x1x2xf32>, tensor<?x1x4611686018427387904x2xf32>)
  return
}

// -----

// too_long
func.func @too_long(%q: tensor<1x2147483648x1x4xf32>, %k: tensor<1x2147483648x1x4xf32>, %v: tensor<1x2147483648x1x4xf32>, %state: tensor<1x1x4x4xf32>) {
  // expected-error @+1 {{T = 2147483648 is too long: the kernels take sequences of at most 2^31 - 1 tokens}}
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%state)
      : (tensor<1x2147483648x1x4xf32>, tensor<1x2147483648x1x4xf32>, tensor<1x2147483648x1x4xf32>, tensor<1x1x4x4xf32>) -> (tensor<1x2147483648x1x4xf32>, tensor<1x1x4x4xf32>)
  return
}
