#!/usr/bin/env python3
"""Calls a compiled library in this process, on PyTorch tensors, for profilers.

Nsight Compute does not attach to linattn-gpu-run on the device machine
(it prints "Failed to connect to process" and waits; bench/NOTES.md c31)
but profiles a Python process whose CUDA context PyTorch made. This makes
the call linattn-gpu-run makes, on the benchmark's inputs (check.py's
make_inputs: B, H (8 unless _h<H>), K = V from the library's name; for a
model-shape library, mm_<spec id>.so, its spec's heads, head sizes and
type, as kernel_times.py takes them), through the library's C ABI
(runtime/include/linattn/Abi.h): _mlir_ciface_NAME_async on PyTorch's
current stream, --calls times, then checks that the outputs were written:
    ncu --clock-control none --launch-skip 3 --launch-count 3 --section ... \\
        python3 bench/gpu/call_in_process.py --lib L/simple_gla_bf16_128_chunked.so --T 16384
(skip the first call's kernels: its first launches load the modules).
With --backward KIND:H:HV:K:V it calls NAME_backward instead (NAME the
library's stem, a library of bench/gpu/bench_backward.py variants, bf16) on
bench_backward's inputs (q and k normalised, random dO and dS), through
examples/torch's Library.call.
"""
import argparse
import ctypes
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "torch"))
from check import INPUT_ORDER, make_inputs, parse_library  # noqa: E402
from kernel_times import model_shape_spec  # noqa: E402
from linattn_torch import descriptor, memref_type  # noqa: E402

TORCH_TYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}


def call_backward(args):
    from check import l2norm
    from linattn_torch import Library
    kind, *dims = args.backward.split(":")
    H, HV, K, V = (int(x) for x in dims)
    name = os.path.basename(args.lib)[:-len(".so")]
    gen = torch.Generator(device="cuda").manual_seed(args.T)
    ins = make_inputs(kind, args.B, args.T, K, V, "bf16", False, gen, False, H, HV)
    ins["q"], ins["k"] = l2norm(ins["q"]), l2norm(ins["k"])
    do = torch.randn(args.B, args.T, HV, V, generator=gen, device="cuda")
    ds = 0.1 * torch.randn(args.B, HV, K, V, generator=gen, device="cuda")
    lib = Library(os.path.abspath(args.lib))
    tensors = [ins[n] for n in INPUT_ORDER if n in ins] + [do, ds]
    for _ in range(args.calls):
        grads = lib.call(name + "_backward", tensors)
        torch.cuda.synchronize()
        if not all(torch.isfinite(g).all() for g in grads):
            print(f"{name}_backward: a gradient is not finite", file=sys.stderr)
            return 1
    print(f"{name}_backward B={args.B} T={args.T}: {args.calls} calls done")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--lib", required=True)
    p.add_argument("--T", type=int, default=16384)
    p.add_argument("--B", type=int, default=4)
    p.add_argument("--calls", type=int, default=2)
    p.add_argument("--backward", default="", metavar="KIND:H:HV:K:V",
                   help="call NAME_backward of a bench_backward library (NAME: the library's stem)")
    args = p.parse_args()
    if args.backward:
        return call_backward(args)
    stem = os.path.basename(args.lib)[:-len(".so")]
    spec = model_shape_spec(stem)
    gen = torch.Generator(device="cuda").manual_seed(args.T)
    if spec:
        name, dtype, HV, V = spec["family"], spec["dtype"], spec["HV"], spec["V"]
        ins = make_inputs(spec["kind"], args.B, args.T, spec["K"], V, dtype, False, gen,
                          spec["qk_l2norm"], spec["H"], HV)
    else:
        name, kind, dtype, K, _, qk_l2norm, H = parse_library(args.lib)
        HV, V = H, K
        ins = make_inputs(kind, args.B, args.T, K, K, dtype, False, gen, qk_l2norm, H)
    # q, k, v in the library's type; gates, betas and the state in f32.
    tensors = [ins[n].to(TORCH_TYPES[dtype] if n in ("q", "k", "v") else torch.float32).contiguous()
               for n in INPUT_ORDER if n in ins]
    descriptors = [descriptor(t) for t in tensors]
    # Results: o [B, T, HV, V] and the final state [B, HV, K, V].
    results_type = type("Results", (ctypes.Structure,), {"_fields_": [
        ("o", memref_type(4)), ("state", memref_type(4))]})
    lib = ctypes.CDLL(os.path.abspath(args.lib))
    fn = getattr(lib, f"_mlir_ciface_{name}_async")
    fn.restype = None
    cuda = ctypes.CDLL("libcuda.so.1")
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    for _ in range(args.calls):
        results = results_type()
        fn(ctypes.byref(results), stream, *[ctypes.byref(d) for d in descriptors])
        torch.cuda.synchronize()
        o_elems = 1
        for size in results.o.sizes:
            o_elems *= size
        ok = results.o.aligned is not None and o_elems == args.B * args.T * HV * V
        for r in (results.o, results.state):
            if r.allocated:
                cuda.cuMemFree_v2(ctypes.c_uint64(r.allocated))
        if not ok:
            print(f"{name}: the call returned no output of the expected size", file=sys.stderr)
            return 1
    print(f"{name} B={args.B} T={args.T}: {args.calls} calls done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
