// RUN: linattn-opt %s -split-input-file -verify-diagnostics
//
// Every malformed op of the chunked backward gets a diagnostic naming the
// operand, result or attribute at fault.

func.func @state_pass_grad_scale(%q: tensor<1x8x1x8xf32>, %k: tensor<1x8x1x8xf32>,
    %do: tensor<1x8x1x4xf32>, %ds: tensor<1x1x8x4xf32>) {
  // expected-error @+1 {{'scale' must be finite and positive, got 0}}
  %dd, %hs, %ds0 = linattn.chunk_state_pass_grad q(%q) k(%k) grad_output(%do) grad_final_state(%ds)
      {chunk_size = 8 : i64, scale = 0.0 : f32}
      : (tensor<1x8x1x8xf32>, tensor<1x8x1x8xf32>, tensor<1x8x1x4xf32>, tensor<1x1x8x4xf32>)
      -> (tensor<1x8x1x4xf32>, tensor<1x1x1x8x4xf32>, tensor<1x1x8x4xf32>)
  return
}

// -----

func.func @state_pass_grad_chunks(%q: tensor<1x9x1x8xf32>, %k: tensor<1x9x1x8xf32>,
    %do: tensor<1x9x1x4xf32>, %ds: tensor<1x1x8x4xf32>) {
  // expected-error @+1 {{the number of chunks NC = 1 must be ceil(T / chunk_size) = 2 for T = 9 and chunk_size = 8}}
  %dd, %hs, %ds0 = linattn.chunk_state_pass_grad q(%q) k(%k) grad_output(%do) grad_final_state(%ds)
      {chunk_size = 8 : i64, scale = 1.0 : f32}
      : (tensor<1x9x1x8xf32>, tensor<1x9x1x8xf32>, tensor<1x9x1x4xf32>, tensor<1x1x8x4xf32>)
      -> (tensor<1x9x1x4xf32>, tensor<1x1x1x8x4xf32>, tensor<1x1x8x4xf32>)
  return
}

// -----

func.func @state_pass_grad_narrow(%q: tensor<1x8x1x8xf32>, %k: tensor<1x8x1x8xf32>,
    %do: tensor<1x8x1x4xf32>, %ds: tensor<1x1x8x4xf32>) {
  // expected-error @+1 {{'grad_new_values' must have element type f32, got 'bf16'}}
  %dd, %hs, %ds0 = linattn.chunk_state_pass_grad q(%q) k(%k) grad_output(%do) grad_final_state(%ds)
      {chunk_size = 8 : i64, scale = 1.0 : f32}
      : (tensor<1x8x1x8xf32>, tensor<1x8x1x8xf32>, tensor<1x8x1x4xf32>, tensor<1x1x8x4xf32>)
      -> (tensor<1x8x1x4xbf16>, tensor<1x1x1x8x4xf32>, tensor<1x1x8x4xf32>)
  return
}

// -----

func.func @chunk_grad_partial_wy(%q: tensor<1x8x1x8xf32>, %k: tensor<1x8x1x8xf32>, %v: tensor<1x8x1x4xf32>,
    %beta: tensor<1x8x1xf32>, %d: tensor<1x8x1x4xf32>, %s: tensor<1x1x1x8x4xf32>, %do: tensor<1x8x1x4xf32>,
    %dd: tensor<1x8x1x4xf32>, %hs: tensor<1x1x1x8x4xf32>) {
  // expected-error @+1 {{the WY form needs 'beta', 'w', 'u' and 'rank1_scale' together}}
  %dq, %dk, %dv, %db = linattn.chunk_grad q(%q) k(%k) v(%v) beta(%beta) new_values(%d) states(%s)
      grad_output(%do) grad_new_values(%dd) grad_states(%hs) {chunk_size = 8 : i64, scale = 1.0 : f32}
      : (tensor<1x8x1x8xf32>, tensor<1x8x1x8xf32>, tensor<1x8x1x4xf32>, tensor<1x8x1xf32>, tensor<1x8x1x4xf32>,
         tensor<1x1x1x8x4xf32>, tensor<1x8x1x4xf32>, tensor<1x8x1x4xf32>, tensor<1x1x1x8x4xf32>)
      -> (tensor<1x8x1x8xf32>, tensor<1x8x1x8xf32>, tensor<1x8x1x4xf32>) grad_beta tensor<1x8x1xf32>
  return
}

// -----

func.func @chunk_grad_gates_result(%q: tensor<1x8x1x8xf32>, %k: tensor<1x8x1x8xf32>, %v: tensor<1x8x1x4xf32>,
    %g: tensor<1x8x1xf32>, %d: tensor<1x8x1x4xf32>, %s: tensor<1x1x1x8x4xf32>, %do: tensor<1x8x1x4xf32>,
    %dd: tensor<1x8x1x4xf32>, %hs: tensor<1x1x1x8x4xf32>) {
  // expected-error @+1 {{'grad_gates' must have the gates' type 'tensor<1x8x1xf32>', got 'tensor<1x8x1x8xf32>'}}
  %dq, %dk, %dv, %dg = linattn.chunk_grad q(%q) k(%k) v(%v) gates(%g) new_values(%d) states(%s)
      grad_output(%do) grad_new_values(%dd) grad_states(%hs) {chunk_size = 8 : i64, scale = 1.0 : f32}
      : (tensor<1x8x1x8xf32>, tensor<1x8x1x8xf32>, tensor<1x8x1x4xf32>, tensor<1x8x1xf32>, tensor<1x8x1x4xf32>,
         tensor<1x1x1x8x4xf32>, tensor<1x8x1x4xf32>, tensor<1x8x1x4xf32>, tensor<1x1x1x8x4xf32>)
      -> (tensor<1x8x1x8xf32>, tensor<1x8x1x8xf32>, tensor<1x8x1x4xf32>) grad_gates tensor<1x8x1x8xf32>
  return
}

// -----

func.func @chunk_grad_heads(%q: tensor<1x8x2x8xf32>, %k: tensor<1x8x2x8xf32>, %v: tensor<1x8x3x4xf32>,
    %d: tensor<1x8x3x4xf32>, %s: tensor<1x1x3x8x4xf32>, %do: tensor<1x8x3x4xf32>,
    %dd: tensor<1x8x3x4xf32>, %hs: tensor<1x1x3x8x4xf32>) {
  // expected-error @+1 {{the number of value heads HV = 3 must be a multiple of the number of query/key heads H = 2}}
  %dq, %dk, %dv = linattn.chunk_grad q(%q) k(%k) v(%v) new_values(%d) states(%s)
      grad_output(%do) grad_new_values(%dd) grad_states(%hs) {chunk_size = 8 : i64, scale = 1.0 : f32}
      : (tensor<1x8x2x8xf32>, tensor<1x8x2x8xf32>, tensor<1x8x3x4xf32>, tensor<1x8x3x4xf32>,
         tensor<1x1x3x8x4xf32>, tensor<1x8x3x4xf32>, tensor<1x8x3x4xf32>, tensor<1x1x3x8x4xf32>)
      -> (tensor<1x8x3x8xf32>, tensor<1x8x3x8xf32>, tensor<1x8x3x4xf32>)
  return
}

// -----

// dq and dk in q's type only where each q/k head has one value head.
func.func @chunk_grad_narrow_dq_shared_heads(%q: tensor<1x8x1x8xbf16>, %k: tensor<1x8x1x8xbf16>, %v: tensor<1x8x2x4xbf16>,
    %d: tensor<1x8x2x4xf32>, %s: tensor<1x1x2x8x4xf32>, %do: tensor<1x8x2x4xbf16>,
    %dd: tensor<1x8x2x4xf32>, %hs: tensor<1x1x2x8x4xf32>) {
  // expected-error @+1 {{'grad_q' is per value head in f32 where HV = 2 != H = 1 (linattn.qk_grad sums it), got 'bf16'}}
  %dq, %dk, %dv = linattn.chunk_grad q(%q) k(%k) v(%v) new_values(%d) states(%s)
      grad_output(%do) grad_new_values(%dd) grad_states(%hs) {chunk_size = 8 : i64, scale = 1.0 : f32}
      : (tensor<1x8x1x8xbf16>, tensor<1x8x1x8xbf16>, tensor<1x8x2x4xbf16>, tensor<1x8x2x4xf32>,
         tensor<1x1x2x8x4xf32>, tensor<1x8x2x4xbf16>, tensor<1x8x2x4xf32>, tensor<1x1x2x8x4xf32>)
      -> (tensor<1x8x2x8xbf16>, tensor<1x8x2x8xf32>, tensor<1x8x2x4xbf16>)
  return
}

// -----

func.func @chunk_grad_dk_type(%q: tensor<1x8x1x8xbf16>, %k: tensor<1x8x1x8xbf16>, %v: tensor<1x8x1x4xbf16>,
    %d: tensor<1x8x1x4xf32>, %s: tensor<1x1x1x8x4xf32>, %do: tensor<1x8x1x4xbf16>,
    %dd: tensor<1x8x1x4xf32>, %hs: tensor<1x1x1x8x4xf32>) {
  // expected-error @+1 {{'grad_k' must be f32 or the element type of 'k' ('bf16'), got 'f16'}}
  %dq, %dk, %dv = linattn.chunk_grad q(%q) k(%k) v(%v) new_values(%d) states(%s)
      grad_output(%do) grad_new_values(%dd) grad_states(%hs) {chunk_size = 8 : i64, scale = 1.0 : f32}
      : (tensor<1x8x1x8xbf16>, tensor<1x8x1x8xbf16>, tensor<1x8x1x4xbf16>, tensor<1x8x1x4xf32>,
         tensor<1x1x1x8x4xf32>, tensor<1x8x1x4xbf16>, tensor<1x8x1x4xf32>, tensor<1x1x1x8x4xf32>)
      -> (tensor<1x8x1x8xbf16>, tensor<1x8x1x8xf16>, tensor<1x8x1x4xbf16>)
  return
}

// -----

func.func @chunk_grad_rank1_scale(%q: tensor<1x8x1x8xf32>, %k: tensor<1x8x1x8xf32>, %v: tensor<1x8x1x4xf32>,
    %beta: tensor<1x8x1xf32>, %w: tensor<1x8x1x8xf32>, %u: tensor<1x8x1x4xf32>, %d: tensor<1x8x1x4xf32>,
    %s: tensor<1x1x1x8x4xf32>, %do: tensor<1x8x1x4xf32>, %dd: tensor<1x8x1x4xf32>, %hs: tensor<1x1x1x8x4xf32>) {
  // expected-error @+1 {{'rank1_scale' must be 1 (delta rule) or 2 (negative eigenvalues), got 3}}
  %dq, %dk, %dv, %db = linattn.chunk_grad q(%q) k(%k) v(%v) beta(%beta) w(%w) u(%u) new_values(%d) states(%s)
      grad_output(%do) grad_new_values(%dd) grad_states(%hs) {chunk_size = 8 : i64, scale = 1.0 : f32, rank1_scale = 3.0 : f32}
      : (tensor<1x8x1x8xf32>, tensor<1x8x1x8xf32>, tensor<1x8x1x4xf32>, tensor<1x8x1xf32>, tensor<1x8x1x8xf32>,
         tensor<1x8x1x4xf32>, tensor<1x8x1x4xf32>, tensor<1x1x1x8x4xf32>, tensor<1x8x1x4xf32>, tensor<1x8x1x4xf32>,
         tensor<1x1x1x8x4xf32>)
      -> (tensor<1x8x1x8xf32>, tensor<1x8x1x8xf32>, tensor<1x8x1x4xf32>) grad_beta tensor<1x8x1xf32>
  return
}

// -----

func.func @qk_grad_result(%q: tensor<1x8x2x8xbf16>, %g: tensor<1x8x4x8xf32>) {
  // expected-error @+1 {{result must have the input's shape [B, T, H, K] and a float element type, got 'tensor<1x8x4x8xbf16>'}}
  %dq = linattn.qk_grad %q grad(%g) : (tensor<1x8x2x8xbf16>, tensor<1x8x4x8xf32>) -> tensor<1x8x4x8xbf16>
  return
}

// -----

func.func @qk_grad_type(%q: tensor<1x8x2x8xbf16>, %g: tensor<1x8x4x8xbf16>) {
  // expected-error @+1 {{'grad' must have element type f32, got 'bf16'}}
  %dq = linattn.qk_grad %q grad(%g) : (tensor<1x8x2x8xbf16>, tensor<1x8x4x8xbf16>) -> tensor<1x8x2x8xbf16>
  return
}

// -----

// The factored form's norms come in pairs, with the WY form.
func.func @chunk_grad_one_rnorm(%q: tensor<1x8x1x8xf32>, %rq: tensor<1x8x1xf32>, %k: tensor<1x8x1x8xf32>, %v: tensor<1x8x2x4xf32>,
    %d: tensor<1x8x2x4xf32>, %s: tensor<1x1x2x8x4xf32>, %do: tensor<1x8x2x4xf32>,
    %dd: tensor<1x8x2x4xf32>, %hs: tensor<1x1x2x8x4xf32>) {
  // expected-error @+1 {{'q_rnorm' and 'k_rnorm' (qk_l2norm factored) come together, with the WY form}}
  %dq, %dk, %dv = linattn.chunk_grad q(%q) q_rnorm(%rq) k(%k) v(%v) new_values(%d) states(%s) grad_output(%do)
      grad_new_values(%dd) grad_states(%hs) {chunk_size = 8 : i64, scale = 1.0 : f32}
      : (tensor<1x8x1x8xf32>, tensor<1x8x1xf32>, tensor<1x8x1x8xf32>, tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x1x2x8x4xf32>,
         tensor<1x8x2x4xf32>, tensor<1x8x2x4xf32>, tensor<1x1x2x8x4xf32>)
      -> (tensor<1x8x2x8xf32>, tensor<1x8x2x8xf32>, tensor<1x8x2x4xf32>)
  return
}

// -----

// qk_grad's factored form is a form of qk_l2norm.
func.func @qk_grad_factored_alone(%q: tensor<?x?x2x64xbf16>, %g: tensor<?x?x8x64xf32>) -> tensor<?x?x2x64xbf16> {
  // expected-error @+1 {{'factored' is a form of 'qk_l2norm' (the normalisation's gradient) and needs it}}
  %dq = linattn.qk_grad %q grad(%g) {factored} : (tensor<?x?x2x64xbf16>, tensor<?x?x8x64xf32>) -> tensor<?x?x2x64xbf16>
  return %dq : tensor<?x?x2x64xbf16>
}
