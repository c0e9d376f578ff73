#!/usr/bin/env python3
"""Times one flash-linear-attention forward op the way PEERS.md does.

    fla_time.py OP T[,T...] [--B N] [--H N] [--K N] [--V N] [--kernels [--backward] | --profile]
        (OP: gated_delta | delta | simple_gla | gla | kda | linear |
         gated_delta_recurrent)

B = 4, H = 8, K = V = 128 unless given, bf16, q and k L2-normalised,
g = logsigmoid(randn) (per key for gla and kda), beta = sigmoid(randn),
final state returned. For each T: warm up, capture the
op in a CUDA graph and time 20 replays with CUDA events; prints one JSON line
per T with the median ms. Runs one op per process (a faulting Triton kernel
poisons the CUDA context). fla is carried in .carry/fla and never committed.
With --kernels, prints instead the GPU time of each kernel of one warm call
(torch.profiler), to set against bench/gpu/kernel_times.py's numbers for
LinAttn's kernels; with --backward too, those of one backward (autograd
of o and the final state, the forward's graph kept; fla's gated-backward
guard on Hopper bypassed, as bench_backward.py does for timing), beside
bench_backward.py --kernel-times. With --profile, makes one warm call between
cudaProfilerStart and Stop, for Nsight Compute:
    ncu --profile-from-start off --kernel-name regex:fwd_kernel_h \
        --section SourceCounters ... -o R python3 fla_time.py gated_delta 4096 --profile
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", ".carry"))


def make(op, B, T, H=8, K=128, V=128, leaves=None):
    """The op's call on fresh inputs; with a list `leaves`, every input is
    made a leaf that requires its gradient and appended to it (those the op
    does not take get no gradient)."""
    torch.manual_seed(0)
    dev, dt = "cuda", torch.bfloat16
    q = torch.nn.functional.normalize(torch.randn(B, T, H, K, device=dev), dim=-1).to(dt)
    k = torch.nn.functional.normalize(torch.randn(B, T, H, K, device=dev), dim=-1).to(dt)
    v = torch.randn(B, T, H, V, device=dev, dtype=dt)
    s0 = torch.zeros(B, H, K, V, device=dev, dtype=torch.float32)
    g = torch.nn.functional.logsigmoid(torch.randn(B, T, H, device=dev, dtype=torch.float32))
    gk = torch.nn.functional.logsigmoid(torch.randn(B, T, H, K, device=dev, dtype=torch.float32))
    beta = torch.sigmoid(torch.randn(B, T, H, device=dev, dtype=torch.float32)).to(dt)
    if leaves is not None:
        for x in (q, k, v, s0, g, gk, beta):
            leaves.append(x.requires_grad_())
    if op == "gated_delta":
        from fla.ops.gated_delta_rule import chunk_gated_delta_rule as f
        return lambda: f(q, k, v, g, beta, initial_state=s0, output_final_state=True)
    if op == "gated_delta_recurrent":
        from fla.ops.gated_delta_rule import fused_recurrent_gated_delta_rule as f
        return lambda: f(q, k, v, g=g, beta=beta, initial_state=s0, output_final_state=True)
    if op == "delta":
        from fla.ops.delta_rule import chunk_delta_rule as f
        return lambda: f(q, k, v, beta, initial_state=s0, output_final_state=True)
    if op == "simple_gla":
        from fla.ops.simple_gla import chunk_simple_gla as f
        return lambda: f(q, k, v, g, initial_state=s0, output_final_state=True)
    if op == "linear":
        from fla.ops.linear_attn import chunk_linear_attn as f
        return lambda: f(q, k, v, initial_state=s0, output_final_state=True, normalize=False)
    if op == "gla":
        from fla.ops.gla import chunk_gla as f
        return lambda: f(q, k, v, gk, initial_state=s0, output_final_state=True)
    if op == "kda":
        from fla.ops.kda import chunk_kda as f
        return lambda: f(q, k, v, gk, beta, initial_state=s0, output_final_state=True)
    raise SystemExit(f"unknown op {op}")


def make_backward(op, B, T, H=8, K=128, V=128):
    """One backward of the op: the forward run once, its graph kept, and a
    call that takes the gradients of every input from fixed dL/do and dL/ds."""
    import fla.ops.common.chunk_o as chunk_o
    chunk_o.TRITON_ABOVE_3_7_1 = True  # the Hopper guard: timing only
    leaves = []
    fn = make(op, B, T, H, K, V, leaves)
    o, s = fn()
    do, ds = torch.randn_like(o), torch.randn_like(s)
    return lambda: torch.autograd.grad((o, s), leaves, (do, ds), retain_graph=True,
                                       allow_unused=True)


def time_graph(fn, reps=20):
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    for _ in range(3):
        graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        graph.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


def kernel_times(fn):
    """Per-kernel GPU time (ms) of one call after warm-up, in launch order."""
    from torch.profiler import ProfilerActivity, profile
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    events = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    return [(e.name, e.device_time / 1000.0) for e in events]


def option(name, default):
    """The integer after `name` on the command line, else `default`."""
    args = sys.argv[3:]
    return int(args[args.index(name) + 1]) if name in args else default


def main():
    op, Ts = sys.argv[1], [int(t) for t in sys.argv[2].split(",")]
    B, H = option("--B", 4), option("--H", 8)
    K, V = option("--K", 128), option("--V", 128)
    if "--profile" in sys.argv[3:]:
        fn = make(op, B, Ts[0], H, K, V)
        for _ in range(5):  # compiled, autotuned and warm
            fn()
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStart()
        fn()
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStop()
        return
    if "--kernels" in sys.argv[3:]:
        backward = "--backward" in sys.argv[3:]
        for T in Ts:
            fn = (make_backward if backward else make)(op, B, T, H, K, V)
            times = kernel_times(fn)
            what = "backward" if backward else "forward"
            print(f"fla {op} {what} B={B} H={H} K={K} V={V} T={T}: {sum(t for _, t in times):.3f} ms of kernel time")
            for name, ms in times:
                print(f"  {ms:8.3f} ms  {name[:90]}")
        return
    for T in Ts:
        try:
            ms = time_graph(make(op, B, T, H, K, V))
            print(json.dumps({"impl": "fla-0.5.2", "op": op, "B": B, "T": T, "H": H, "K": K,
                              "V": V, "median_ms_graph": round(ms, 4)}), flush=True)
        except Exception as e:  # report and go on to the next T
            print(json.dumps({"impl": "fla-0.5.2", "op": op, "T": T, "error": str(e)[:300]}),
                  flush=True)


if __name__ == "__main__":
    main()
