// LinAttn in stock mlir-opt (Debian's, linked to libMLIR.so): one plugin for
// both --load-dialect-plugin and --load-pass-plugin.
//
// Plugin passes are reachable through --pass-pipeline only: mlir-opt builds
// its `--<pass-name>` flags before it loads pass plugins
// (llvm/llvm-project#78020), so `--linattn-to-cpu` works in linattn-opt but
// not here.

// RUN: %mlir_opt --load-dialect-plugin=%linattn_plugin --load-pass-plugin=%linattn_plugin \
// RUN:   %examples/deltanet.mlir --pass-pipeline='builtin.module(linattn-to-cpu)' \
// RUN:   | FileCheck %s --check-prefix=CPU
// RUN: %mlir_opt --load-dialect-plugin=%linattn_plugin --load-pass-plugin=%linattn_plugin \
// RUN:   %examples/deltanet.mlir --pass-pipeline='builtin.module(func.func(convert-linattn-to-loops))' \
// RUN:   | FileCheck %s --check-prefix=LOOPS
// RUN: %mlir_opt --load-dialect-plugin=%linattn_plugin %s | FileCheck %s --check-prefix=ROUNDTRIP
// RUN: %mlir_opt --load-dialect-plugin=%linattn_plugin --show-dialects | FileCheck %s --check-prefix=DIALECTS
// RUN: %mlir_opt --load-pass-plugin=%linattn_plugin --help | FileCheck %s --check-prefix=HELP

// The plugin shares the host's MLIR: it needs libMLIR.so and defines none of
// MLIR's own symbols (a static copy would bring a second MLIRContext,
// registries and TypeIDs).
// RUN: llvm-readelf -d %linattn_plugin | FileCheck %s --check-prefix=NEEDED
// RUN: llvm-nm -D --defined-only %linattn_plugin | FileCheck %s --check-prefix=EXPORTS
// RUN: llvm-nm -D --defined-only %linattn_plugin | not grep -E '_ZN4mlir11MLIRContext(C|D)[12]'

// CPU-NOT:     linattn.recurrence {{[a-z]}}
// CPU-LABEL:   llvm.func @deltanet(
// CPU:         llvm.call @malloc
// CPU-LABEL:   llvm.func @_mlir_ciface_deltanet(
// CPU-NOT:     {{tensor\.|memref\.|scf\.|arith\.|bufferization\.}}

// LOOPS-LABEL: func.func @deltanet(
// LOOPS-NOT:   linattn.recurrence {{[a-z]}}
// LOOPS:       scf.for
// LOOPS:       bufferization.to_tensor

// ROUNDTRIP-LABEL: func.func @linear_attention(
// ROUNDTRIP:       linattn.recurrence identity q(%{{.*}}) k(%{{.*}}) v(%{{.*}}) state(%{{.*}})

// DIALECTS: linattn

// HELP: --convert-linattn-to-loops
// HELP: --linattn-to-cpu

// NEEDED: (NEEDED) Shared library: [libMLIR.so

// EXPORTS-DAG: mlirGetDialectPluginInfo
// EXPORTS-DAG: mlirGetPassPluginInfo

func.func @linear_attention(%q: tensor<?x?x2x16xbf16>, %k: tensor<?x?x2x16xbf16>,
    %v: tensor<?x?x2x32xbf16>, %s0: tensor<?x2x16x32xf32>)
    -> (tensor<?x?x2x32xbf16>, tensor<?x2x16x32xf32>) {
  %o, %s = linattn.recurrence identity q(%q) k(%k) v(%v) state(%s0)
      : (tensor<?x?x2x16xbf16>, tensor<?x?x2x16xbf16>, tensor<?x?x2x32xbf16>,
         tensor<?x2x16x32xf32>) -> (tensor<?x?x2x32xbf16>, tensor<?x2x16x32xf32>)
  return %o, %s : tensor<?x?x2x32xbf16>, tensor<?x2x16x32xf32>
}
