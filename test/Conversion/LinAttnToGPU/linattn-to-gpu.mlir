// RUN: linattn-opt %s --pass-pipeline='builtin.module(func.func(convert-linattn-to-loops,gpu-map-parallel-loops),one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map},convert-linattn-to-gpu)' | FileCheck %s

// The recurrent loop nest becomes one kernel: blocks over (B, HV, V / 32),
// 32 threads over the columns of a tile; the result buffers are device
// allocations (async form, each waited for), and the loops over K inside
// the kernel are unrolled so that the state column stays in registers.

// CHECK-LABEL: func.func @deltanet
// CHECK-SAME:    (%[[Q:.*]]: memref<?x?x2x16xbf16>
// CHECK:         %[[T0:.*]] = gpu.wait async
// CHECK:         %[[O:.*]], %[[T1:.*]] = gpu.alloc async [%[[T0]]] (%{{.*}}, %{{.*}}) : memref<?x?x2x64xbf16>
// CHECK:         gpu.wait [%[[T1]]]
// CHECK:         %[[S:.*]], %{{.*}} = gpu.alloc async [%{{.*}}] (%{{.*}}) : memref<?x2x16x64xf32>
// CHECK:         gpu.launch blocks(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %{{.*}}, %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}})
// Unrolled: the column is built by 16 inserts, no loop (the positions fold
// to constants in the canonicalisation that follows).
// CHECK-COUNT-16:  vector.insert %{{.*}}, %{{.*}} [%{{.*}}] : f32 into vector<16xf32>
// CHECK:           scf.for
// CHECK:           gpu.terminator
// CHECK-NOT:     memref.alloc
// CHECK:         return %[[O]], %[[S]]
func.func @deltanet(%q: tensor<?x?x2x16xbf16>, %v: tensor<?x?x2x64xbf16>, %beta: tensor<?x?x2xf32>, %s0: tensor<?x2x16x64xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x2x16x64xf32>) {
  %o, %s = linattn.recurrence delta q(%q) k(%q) v(%v) beta(%beta) state(%s0)
      : (tensor<?x?x2x16xbf16>, tensor<?x?x2x16xbf16>, tensor<?x?x2x64xbf16>, tensor<?x?x2xf32>, tensor<?x2x16x64xf32>) -> (tensor<?x?x2x64xbf16>, tensor<?x2x16x64xf32>)
  return %o, %s : tensor<?x?x2x64xbf16>, tensor<?x2x16x64xf32>
}
