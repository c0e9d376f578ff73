// RUN: linattn-opt %s -split-input-file -verify-diagnostics
//
// Every malformed linattn.recurrence_grad gets a diagnostic naming the
// operand or result at fault. The forward spec's own checks (ranks, kinds,
// shared dimensions) are those of linattn.recurrence (invalid.mlir); here,
// what the adjoint adds.

func.func @grad_output_type(%q: tensor<1x4x2x8xbf16>, %k: tensor<1x4x2x8xbf16>, %v: tensor<1x4x2x8xbf16>,
    %s0: tensor<1x2x8x8xf32>, %do: tensor<1x4x2x8xf32>, %ds: tensor<1x2x8x8xf32>) {
  // expected-error @+1 {{'grad_output' must be a rank-4 tensor [B, T, HV, V] in v's element type ('bf16'), got 'tensor<1x4x2x8xf32>'}}
  %dq, %dk, %dv, %ds0 = linattn.recurrence_grad identity q(%q) k(%k) v(%v) state(%s0) grad_output(%do) grad_final_state(%ds)
      : (tensor<1x4x2x8xbf16>, tensor<1x4x2x8xbf16>, tensor<1x4x2x8xbf16>, tensor<1x2x8x8xf32>, tensor<1x4x2x8xf32>, tensor<1x2x8x8xf32>)
      -> (tensor<1x4x2x8xbf16>, tensor<1x4x2x8xbf16>, tensor<1x4x2x8xbf16>, tensor<1x2x8x8xf32>)
  return
}

// -----

func.func @grad_state_type(%q: tensor<1x4x2x8xf32>, %k: tensor<1x4x2x8xf32>, %v: tensor<1x4x2x8xf32>,
    %s0: tensor<1x2x8x8xf32>, %do: tensor<1x4x2x8xf32>, %ds: tensor<2x8x8xf32>) {
  // expected-error @+1 {{'grad_final_state' must be a rank-4 tensor [B, HV, K, V] of f32, got 'tensor<2x8x8xf32>'}}
  %dq, %dk, %dv, %ds0 = linattn.recurrence_grad identity q(%q) k(%k) v(%v) state(%s0) grad_output(%do) grad_final_state(%ds)
      : (tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x2x8x8xf32>, tensor<1x4x2x8xf32>, tensor<2x8x8xf32>)
      -> (tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x2x8x8xf32>)
  return
}

// -----

func.func @grad_output_seq_len(%q: tensor<1x4x2x8xf32>, %k: tensor<1x4x2x8xf32>, %v: tensor<1x4x2x8xf32>,
    %s0: tensor<1x2x8x8xf32>, %do: tensor<1x5x2x8xf32>, %ds: tensor<1x2x8x8xf32>) {
  // expected-error @+1 {{dimension T of 'grad_output' (5) must equal T = 4 (dimension T of 'v')}}
  %dq, %dk, %dv, %ds0 = linattn.recurrence_grad identity q(%q) k(%k) v(%v) state(%s0) grad_output(%do) grad_final_state(%ds)
      : (tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x2x8x8xf32>, tensor<1x5x2x8xf32>, tensor<1x2x8x8xf32>)
      -> (tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x2x8x8xf32>)
  return
}

// -----

func.func @grad_state_value_dim(%q: tensor<1x4x2x8xf32>, %k: tensor<1x4x2x8xf32>, %v: tensor<1x4x2x8xf32>,
    %s0: tensor<1x2x8x8xf32>, %do: tensor<1x4x2x8xf32>, %ds: tensor<1x2x8x4xf32>) {
  // expected-error @+1 {{dimension V of 'grad_final_state' (4) must equal V = 8 (dimension V of 'initial_state')}}
  %dq, %dk, %dv, %ds0 = linattn.recurrence_grad identity q(%q) k(%k) v(%v) state(%s0) grad_output(%do) grad_final_state(%ds)
      : (tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x2x8x8xf32>, tensor<1x4x2x8xf32>, tensor<1x2x8x4xf32>)
      -> (tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x2x8x4xf32>)
  return
}

// -----

func.func @gradient_count(%q: tensor<1x4x2x8xf32>, %k: tensor<1x4x2x8xf32>, %v: tensor<1x4x2x8xf32>,
    %beta: tensor<1x4x2xf32>, %s0: tensor<1x2x8x8xf32>, %do: tensor<1x4x2x8xf32>, %ds: tensor<1x2x8x8xf32>) {
  // expected-error @+1 {{must return 5 gradients (one per operand of the forward recurrence: q, k, v, beta, initial_state), got 4}}
  %dq, %dk, %dv, %ds0 = linattn.recurrence_grad delta q(%q) k(%k) v(%v) beta(%beta) state(%s0) grad_output(%do) grad_final_state(%ds)
      : (tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2xf32>, tensor<1x2x8x8xf32>, tensor<1x4x2x8xf32>, tensor<1x2x8x8xf32>)
      -> (tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x2x8x8xf32>)
  return
}

// -----

func.func @gate_gradient_type(%q: tensor<1x4x2x8xf32>, %k: tensor<1x4x2x8xf32>, %v: tensor<1x4x2x8xf32>,
    %g: tensor<1x4x2xbf16>, %s0: tensor<1x2x8x8xf32>, %do: tensor<1x4x2x8xf32>, %ds: tensor<1x2x8x8xf32>) {
  // expected-error @+1 {{result 'dgate' must be the shape of 'gate' in f32 = tensor<1x4x2xf32>, got 'tensor<1x4x2xbf16>'}}
  %dq, %dk, %dv, %dg, %ds0 = linattn.recurrence_grad scalar_gate q(%q) k(%k) v(%v) gate(%g) state(%s0) grad_output(%do) grad_final_state(%ds)
      : (tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2xbf16>, tensor<1x2x8x8xf32>, tensor<1x4x2x8xf32>, tensor<1x2x8x8xf32>)
      -> (tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2xbf16>, tensor<1x2x8x8xf32>)
  return
}

// -----

func.func @spec_checks_apply(%q: tensor<1x4x2x8xf32>, %k: tensor<1x4x2x8xf32>, %v: tensor<1x4x2x8xf32>,
    %s0: tensor<1x2x8x8xf32>, %do: tensor<1x4x2x8xf32>, %ds: tensor<1x2x8x8xf32>) {
  // expected-error @+1 {{kind 'delta' requires a 'beta' operand [B, T, HV]}}
  %dq, %dk, %dv, %ds0 = linattn.recurrence_grad delta q(%q) k(%k) v(%v) state(%s0) grad_output(%do) grad_final_state(%ds)
      : (tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x2x8x8xf32>, tensor<1x4x2x8xf32>, tensor<1x2x8x8xf32>)
      -> (tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x4x2x8xf32>, tensor<1x2x8x8xf32>)
  return
}
