// RUN: linattn-opt %s --convert-linattn-chunked-to-gpu | FileCheck %s
// RUN: linattn-opt %s --convert-linattn-chunked-to-gpu --gpu-lower-to-nvvm-pipeline="cubin-format=isa cubin-chip=sm_90a cubin-features=+ptx80" \
// RUN:   | %python %testlib/extract_ptx.py | FileCheck %s --check-prefix=PTX

// f16 operands: NVVM takes f16 fragments as vector<2xf16> (bf16 ones as i32).

// CHECK-LABEL: func.func @output_f16
// CHECK:         gpu.launch
// CHECK:           nvvm.mma.sync {{.*}} : (vector<2xf16>, vector<2xf16>, f32)
// CHECK:           gpu.terminator
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
func.func @output_f16(%q: tensor<?x?x2x64xf16>, %d: tensor<?x?x2x64xf32>, %states: tensor<?x?x2x64x64xf32>) -> tensor<?x?x2x64xf16> {
  %o = linattn.chunk_output q(%q) k(%q) new_values(%d) states(%states) {chunk_size = 64 : i64, scale = 0.125 : f32}
      : (tensor<?x?x2x64xf16>, tensor<?x?x2x64xf16>, tensor<?x?x2x64xf32>, tensor<?x?x2x64x64xf32>) -> tensor<?x?x2x64xf16>
  return %o : tensor<?x?x2x64xf16>
}
