// Combiners the GPU mapping of linattn.scan cannot evaluate are errors that
// name the problem.
// RUN: linattn-opt %s -split-input-file --convert-linattn-scan-to-gpu=max-held=8 -verify-diagnostics

#hrk = affine_map<(h, r, c, k) -> (h, r, k)>
#hkc = affine_map<(h, r, c, k) -> (h, k, c)>
#hrc = affine_map<(h, r, c, k) -> (h, r, c)>
// The composed transition M2 M1 is returned, so it is computed: a thread
// holds all of M (4 x 4 = 16 elements), which max-held=8 refuses.
func.func @held_too_large(%m: tensor<1x3x2x4x4xf32>, %m0: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  // expected-error @+1 {{has no GPU mapping: a thread would hold 16 elements of a 'tensor<2x4x4xf32>' (more than 8), the dimensions its combiner sums over}}
  %r:2 = linattn.scan dimension(1) ins(%m : tensor<1x3x2x4x4xf32>) init(%m0 : tensor<1x2x4x4xf32>) {
  ^bb0(%m1: tensor<2x4x4xf32>, %m2: tensor<2x4x4xf32>):
    %z = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<2x4x4xf32>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %mm = linalg.generic {indexing_maps = [#hrk, #hkc, #hrc], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
        ins(%m2, %m1 : tensor<2x4x4xf32>, tensor<2x4x4xf32>) outs(%f : tensor<2x4x4xf32>) {
    ^bb0(%a: f32, %x: f32, %o: f32):
      %p = arith.mulf %a, %x : f32
      %s = arith.addf %o, %p : f32
      linalg.yield %s : f32
    } -> tensor<2x4x4xf32>
    linattn.yield %mm : tensor<2x4x4xf32>
  } -> tensor<1x3x2x4x4xf32>, tensor<1x2x4x4xf32>
  return %r#1 : tensor<1x2x4x4xf32>
}

// -----

func.func @unsupported_op(%x: tensor<2x5x8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{has no GPU mapping: its combiner's 'tensor.insert' is neither elementwise, linalg.fill nor linalg.generic}}
  %r:2 = linattn.scan dimension(1) ins(%x : tensor<2x5x8xf32>) {
  ^bb0(%a: tensor<8xf32>, %b: tensor<8xf32>):
    %c0 = arith.constant 0 : index
    %v = arith.constant 1.0 : f32
    // expected-note @+1 {{this op}}
    %s = tensor.insert %v into %b[%c0] : tensor<8xf32>
    linattn.yield %s : tensor<8xf32>
  } -> tensor<2x5x8xf32>, tensor<2x8xf32>
  return %r#1 : tensor<2x8xf32>
}

// -----

func.func @dense_constant(%x: tensor<2x5x2xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{has no GPU mapping: its combiner's 'arith.constant' is a tensor constant that is not a splat}}
  %r:2 = linattn.scan dimension(1) ins(%x : tensor<2x5x2xf32>) {
  ^bb0(%a: tensor<2xf32>, %b: tensor<2xf32>):
    // expected-note @+1 {{this op}}
    %w = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>
    %p = arith.mulf %a, %w : tensor<2xf32>
    %s = arith.addf %p, %b : tensor<2xf32>
    linattn.yield %s : tensor<2xf32>
  } -> tensor<2x5x2xf32>, tensor<2x2xf32>
  return %r#1 : tensor<2x2xf32>
}

// -----

#ik = affine_map<(i, k) -> (i, k)>
#k = affine_map<(i, k) -> (k)>
#i = affine_map<(i, k) -> (i)>
// The sum runs over the element's dynamic dimension: a thread would have
// to hold a vector of unknown size.
func.func @dynamic_held(%m: tensor<2x5x?x?xf32>, %x: tensor<2x5x?xf32>, %m0: tensor<2x?x?xf32>, %x0: tensor<2x?xf32>) -> tensor<2x?xf32> {
  // expected-error @+1 {{has no GPU mapping: its combiner sums over dimension 0 of a 'tensor<?xf32>', whose size is dynamic (a thread holds such a dimension in registers)}}
  %r:4 = linattn.scan dimension(1) ins(%m, %x : tensor<2x5x?x?xf32>, tensor<2x5x?xf32>) init(%m0, %x0 : tensor<2x?x?xf32>, tensor<2x?xf32>) {
  ^bb0(%m1: tensor<?x?xf32>, %x1: tensor<?xf32>, %m2: tensor<?x?xf32>, %x2: tensor<?xf32>):
    %y = linalg.generic {indexing_maps = [#ik, #k, #i], iterator_types = ["parallel", "reduction"]}
        ins(%m2, %x1 : tensor<?x?xf32>, tensor<?xf32>) outs(%x2 : tensor<?xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %o, %p : f32
      linalg.yield %s : f32
    } -> tensor<?xf32>
    linattn.yield %m2, %y : tensor<?x?xf32>, tensor<?xf32>
  } -> tensor<2x5x?x?xf32>, tensor<2x5x?xf32>, tensor<2x?x?xf32>, tensor<2x?xf32>
  return %r#3 : tensor<2x?xf32>
}
