// RUN: linattn-opt %s -split-input-file -verify-diagnostics

func.func @exclusive_without_init(%x: tensor<7x3xf32>) {
  // expected-error @+1 {{an exclusive scan needs 'init' (its first output)}}
  %r:2 = linattn.scan dimension(0) exclusive ins(%x : tensor<7x3xf32>) {
  ^bb0(%a: tensor<3xf32>, %b: tensor<3xf32>):
    linattn.yield %a : tensor<3xf32>
  } -> tensor<7x3xf32>, tensor<3xf32>
  return
}

// -----

func.func @dimension_out_of_range(%x: tensor<7x3xf32>) {
  // expected-error @+1 {{input #0 has rank 2 but the scan dimension is 2}}
  %r:2 = linattn.scan dimension(2) ins(%x : tensor<7x3xf32>) {
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    linattn.yield %a : tensor<f32>
  } -> tensor<7x3xf32>, tensor<3xf32>
  return
}

// -----

func.func @inputs_disagree(%x: tensor<7x3xf32>, %y: tensor<6x3xf32>) {
  // expected-error @+1 {{input #1 has size 6 in dimension 0 but input #0 has 7 (inputs share the batch dimensions and the scan dimension)}}
  %r:4 = linattn.scan dimension(0) ins(%x, %y : tensor<7x3xf32>, tensor<6x3xf32>) {
  ^bb0(%a: tensor<3xf32>, %b: tensor<3xf32>, %c: tensor<3xf32>, %d: tensor<3xf32>):
    linattn.yield %a, %b : tensor<3xf32>, tensor<3xf32>
  } -> tensor<7x3xf32>, tensor<6x3xf32>, tensor<3xf32>, tensor<3xf32>
  return
}

// -----

func.func @init_type(%x: tensor<7x3xf32>, %init: tensor<4xf32>) {
  // expected-error @+1 {{init #0 must have type 'tensor<3xf32>' (input #0 without the scan dimension), got 'tensor<4xf32>'}}
  %r:2 = linattn.scan dimension(0) ins(%x : tensor<7x3xf32>) init(%init : tensor<4xf32>) {
  ^bb0(%a: tensor<3xf32>, %b: tensor<3xf32>):
    linattn.yield %a : tensor<3xf32>
  } -> tensor<7x3xf32>, tensor<3xf32>
  return
}

// -----

func.func @result_count(%x: tensor<7x3xf32>) {
  // expected-error @+1 {{has 1 results; expected 2 (the 1 scanned tensors, then the 1 carries out)}}
  %r = linattn.scan dimension(0) ins(%x : tensor<7x3xf32>) {
  ^bb0(%a: tensor<3xf32>, %b: tensor<3xf32>):
    linattn.yield %a : tensor<3xf32>
  } -> tensor<7x3xf32>
  return
}

// -----

func.func @carry_type(%x: tensor<7x3xf32>) {
  // expected-error @+1 {{result #1 (carry out #0) must have type 'tensor<3xf32>', got 'tensor<7x3xf32>'}}
  %r:2 = linattn.scan dimension(0) ins(%x : tensor<7x3xf32>) {
  ^bb0(%a: tensor<3xf32>, %b: tensor<3xf32>):
    linattn.yield %a : tensor<3xf32>
  } -> tensor<7x3xf32>, tensor<7x3xf32>
  return
}

// -----

func.func @combiner_arity(%x: tensor<7x3xf32>) {
  // expected-error @+1 {{combiner must take 2 arguments (the accumulated tuple, then the next one), got 1}}
  %r:2 = linattn.scan dimension(0) ins(%x : tensor<7x3xf32>) {
  ^bb0(%a: tensor<3xf32>):
    linattn.yield %a : tensor<3xf32>
  } -> tensor<7x3xf32>, tensor<3xf32>
  return
}

// -----

func.func @combiner_arg_type(%x: tensor<7x3xf32>) {
  // expected-error @+1 {{combiner argument #1 must be 'tensor<3xf32>' (the element of input #0), got 'tensor<7x3xf32>'}}
  %r:2 = linattn.scan dimension(0) ins(%x : tensor<7x3xf32>) {
  ^bb0(%a: tensor<3xf32>, %b: tensor<7x3xf32>):
    linattn.yield %a : tensor<3xf32>
  } -> tensor<7x3xf32>, tensor<3xf32>
  return
}

// -----

func.func @yield_type(%x: tensor<7x3xf32>) {
  %r:2 = linattn.scan dimension(0) ins(%x : tensor<7x3xf32>) {
  ^bb0(%a: tensor<3xf32>, %b: tensor<3xf32>):
    %c = tensor.empty() : tensor<4xf32>
    // expected-error @+1 {{value #0 must be 'tensor<3xf32>' (the element of input #0), got 'tensor<4xf32>'}}
    linattn.yield %c : tensor<4xf32>
  } -> tensor<7x3xf32>, tensor<3xf32>
  return
}
