// RUN: linattn-opt %s --linattn-emit-stream-entries -split-input-file -verify-diagnostics | FileCheck %s

// A public function's code moves to a private body (calls to it follow);
// two C-interface entries bracket the body with the runtime's call
// functions: @f on the legacy default stream (null), waited for at the
// end; @f_async on the stream it is given, not waited for.

// CHECK-LABEL: func.func @f(%{{.*}}: memref<?xf32>) -> memref<?xf32> attributes {llvm.emit_c_interface} {
// CHECK-NEXT:    %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT:    call @linattnCudaBeginCall(%[[NULL]]) : (!llvm.ptr) -> ()
// CHECK-NEXT:    %[[R:.*]] = call @__linattn_body_f(%{{.*}}) : (memref<?xf32>) -> memref<?xf32>
// CHECK-NEXT:    %[[TRUE:.*]] = arith.constant true
// CHECK-NEXT:    call @linattnCudaEndCall(%[[TRUE]]) : (i1) -> ()
// CHECK-NEXT:    return %[[R]]
// CHECK:       func.func @f_async(%[[S:.*]]: !llvm.ptr, %[[A:.*]]: memref<?xf32>) -> memref<?xf32> attributes {llvm.emit_c_interface} {
// CHECK-NEXT:    call @linattnCudaBeginCall(%[[S]]) : (!llvm.ptr) -> ()
// CHECK-NEXT:    %[[R:.*]] = call @__linattn_body_f(%[[A]])
// CHECK-NEXT:    %[[FALSE:.*]] = arith.constant false
// CHECK-NEXT:    call @linattnCudaEndCall(%[[FALSE]]) : (i1) -> ()
// CHECK-NEXT:    return %[[R]]
// CHECK-LABEL: func.func private @__linattn_body_f(
// CHECK-NOT:     llvm.emit_c_interface
// CHECK:         return
// The call to @f in @g's code goes to @f's body (not through an entry,
// which would begin a call inside a call).
// CHECK-LABEL: func.func private @__linattn_body_g(
// CHECK-NEXT:    call @__linattn_body_f(
// CHECK-DAG:   func.func private @linattnCudaBeginCall(!llvm.ptr)
// CHECK-DAG:   func.func private @linattnCudaEndCall(i1)
func.func @f(%a: memref<?xf32>) -> memref<?xf32> attributes {llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %n = memref.dim %a, %c0 : memref<?xf32>
  %r = memref.alloc(%n) : memref<?xf32>
  return %r : memref<?xf32>
}
func.func @g(%a: memref<?xf32>) -> memref<?xf32> {
  %r = call @f(%a) : (memref<?xf32>) -> memref<?xf32>
  return %r : memref<?xf32>
}

// -----

// The entry names must be free.
// expected-error @below {{'func.func' op needs the symbol 'h_async' for its entry points, but the module already defines it}}
func.func @h(%n: index) -> memref<?xf32> {
  %r = memref.alloc(%n) : memref<?xf32>
  return %r : memref<?xf32>
}
func.func private @h_async(%a: memref<?xf32>) -> memref<?xf32>

// -----

// The runtime's entry points may not be taken by something else.
func.func @k(%n: index) -> memref<?xf32> {
  %r = memref.alloc(%n) : memref<?xf32>
  return %r : memref<?xf32>
}
// expected-error @below {{'func.func' op defines 'linattnCudaEndCall', which LinAttn's CUDA runtime provides as '(i1) -> ()'}}
func.func private @linattnCudaEndCall(i32)

// -----

// The caller frees every result: a function may not return its argument,
// one buffer twice, or a constant.

// expected-error @+1 {{'func.func' op result #0 is its argument #0: a compiled GPU function's results are new device buffers its caller frees (linattn/Abi.h); return results of linattn ops}}
func.func @identity(%a: memref<?xf32>) -> memref<?xf32> {
  return %a : memref<?xf32>
}

// -----

func.func @twice(%n: index) -> (memref<?xf32>, memref<?xf32>) {
  %r = memref.alloc(%n) : memref<?xf32>
  // expected-error @-2 {{result #1 is also result #0}}
  return %r, %r : memref<?xf32>, memref<?xf32>
}

// -----

memref.global "private" constant @table : memref<2xf32> = dense<[1.0, 2.0]>
// expected-error @+1 {{result #0 is a constant}}
func.func @constant() -> memref<2xf32> {
  %t = memref.get_global @table : memref<2xf32>
  return %t : memref<2xf32>
}
