#!/usr/bin/env python3
"""Times the derived backward (linattn-compile --backward) beside fla's.

Two halves, one file:

  bench/gpu/bench_backward.py variants SPEC_DIR
      (on the MLIR machine, as bench/gpu/prepare.sh's LINATTN_VARIANTS)
      writes the specs of the issue's training shapes, bf16, K = V = 128,
      dynamic B and T: every family with H = HV = 8, Gated DeltaNet with
      {qk_l2norm} (fla: use_qk_l2norm_in_kernel), with 8 q/k and 16 value
      heads (and Gated DeltaNet compiled with
      --strategy=recurrent: the adjoint's loop, for comparison); and the
      shapes the tensor-core kernels do not reach (SPECS' last entries: KDA
      with {qk_l2norm}, K = V = 256, f32); prints
      `NAME SPEC --backward [OPTIONS]`.

  bench/gpu/bench_backward.py run --libdir D --runner R --json OUT [--rows REGEX] [--no-fla]
      (on the GPU machine, bench/gpu/device.sh bench-backward) for each row
      (family, B, T, H, HV): LinAttn's NAME_backward and its forward NAME,
      each from a CUDA graph (linattn-gpu-run --graph --bench; their sum is
      LinAttn's forward + backward), and fla's backward of the family's
      chunk function (chunk_gated_delta_rule, chunk_delta_rule,
      chunk_simple_gla, chunk_gla, chunk_kda, chunk_linear_attn,
      chunk_retention: torch.autograd.grad of the output and final state,
      CUDA events over repeated calls after a warm-up; fla's gated-backward
      guard on Hopper with Triton 3.4-3.7.0 is bypassed for timing only)
      and its forward + backward (one autograd pass; also replayed from a
      CUDA graph where fla's code captures, which drops the host's launch
      gaps that the events count: the ratio uses the graph's time where
      there is one). negeig has no fla counterpart. With
      --errors-T, rows of that T also report both backwards' gradient errors
      against torch.autograd through bench/gpu/check.py's float64 loop.
      With --kernel-times, each of LinAttn's kernels is also timed alone in
      one call (the runtime's LINATTN_KERNEL_TIMES).
"""

import argparse
import dataclasses
import json
import os
import re
import subprocess
import sys
import tempfile

@dataclasses.dataclass(frozen=True)
class Spec:
    """A benchmarked spec: the family's kind, q/k and value heads, the
    linattn-compile options, the inputs' type and the head sizes."""
    kind: str
    H: int
    HV: int
    options: str = ""
    dtype: str = "bf16"
    K: int = 128
    V: int = 128


SPECS = {
    "gated_deltanet_h8": Spec("gated_delta", 8, 8),
    # {qk_l2norm}: q and k normalised inside the op, as fla's Gated
    # DeltaNet layer calls it (use_qk_l2norm_in_kernel=True).
    "gated_deltanet_h8_l2norm": Spec("gated_delta", 8, 8),
    "gated_deltanet_h8_hv16": Spec("gated_delta", 8, 16),
    # Qwen3-Next's Gated DeltaNet layer: 16 q/k heads, 32 value heads,
    # {qk_l2norm}.
    "gated_deltanet_h16_hv32_l2norm": Spec("gated_delta", 16, 32),
    "deltanet_h8": Spec("delta", 8, 8),
    "deltanet_negeig_h8": Spec("negeig_delta", 8, 8),
    "simple_gla_h8": Spec("scalar_gate", 8, 8),
    "gla_h8": Spec("key_gate", 8, 8),
    "kda_h8": Spec("kda", 8, 8),
    "linear_attention_h8": Spec("identity", 8, 8),
    "retnet_h8": Spec("constant_decay", 8, 8),
    # The adjoint's reverse loop (the backward before the chunked form).
    "gated_deltanet_h8_loop": Spec("gated_delta", 8, 8, "--strategy=recurrent"),
    # KDA with the norm in the op (Kimi Linear's layer: its chunk_grad ran
    # as loops while the normalised keys were f32, on tensor cores since
    # the normalisation is factored, bench/NOTES.md fn1); head sizes above
    # 128 (fla's Gated DeltaNet default of 256), and f32 inputs (chunked by
    # default since bench/NOTES.md f5, where the rows were named
    # _f32_chunked; the adjoint's loop, the default before, beside it).
    "kda_h8_l2norm": Spec("kda", 8, 8),
    "gated_deltanet_h4_k256": Spec("gated_delta", 4, 4, K=256, V=256),
    # The same with {qk_l2norm}, and negeig (its W split), whose recomputed
    # state pass takes one input stage at 256 (bench/NOTES.md ws2).
    "gated_deltanet_h4_k256_l2norm": Spec("gated_delta", 4, 4, K=256, V=256),
    "deltanet_negeig_h4_k256": Spec("negeig_delta", 4, 4, K=256, V=256),
    "gated_deltanet_h8_f32": Spec("gated_delta", 8, 8, dtype="f32"),
    "gated_deltanet_h8_f32_loop": Spec("gated_delta", 8, 8, "--strategy=recurrent", dtype="f32"),
}
# Every family at the forward + backward shape (B 4, H 8, T 4096).
FAMILY_ROWS = [(name, 4, 4096) for name in (
    "simple_gla_h8", "gla_h8", "kda_h8", "linear_attention_h8", "retnet_h8",
    "deltanet_negeig_h8")]
# The shapes outside the tensor-core kernels' reach, at sizes their loops
# finish in a few seconds.
FALLBACK_ROWS = [("kda_h8_l2norm", 4, 1024), ("gated_deltanet_h4_k256", 2, 1024),
                 ("gated_deltanet_h4_k256_l2norm", 2, 1024), ("deltanet_negeig_h4_k256", 2, 1024),
                 ("gated_deltanet_h8_f32", 4, 1024), ("gated_deltanet_h8_f32_loop", 4, 1024)]
ROWS = ([(name, B, T) for name in ("gated_deltanet_h8", "deltanet_h8")
         for B, T in ((4, 1024), (4, 4096), (4, 16384))]
        + [("gated_deltanet_h8_l2norm", 4, T) for T in (1024, 4096, 16384)]
        + [("gated_deltanet_h16_hv32_l2norm", B, T) for B, T in ((1, 4096), (2, 8192))]
        + [("kda_h8_l2norm", 4, 4096)]
        + [("gated_deltanet_h8_hv16", 1, 32768), ("gated_deltanet_h8_loop", 4, 1024)]
        + FAMILY_ROWS + FALLBACK_ROWS)


def is_l2norm(name):
    return name.endswith("_l2norm")


def torch_dtype(dtype):
    import torch
    return {"bf16": torch.bfloat16, "f32": torch.float32}[dtype]


def variants(spec_dir):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "test", "lib"))
    import linattn_ref as ref
    os.makedirs(spec_dir, exist_ok=True)
    for name, spec in SPECS.items():
        path = os.path.join(spec_dir, name + ".mlir")
        decay = ref.retnet_decay(spec.HV) if spec.kind == "constant_decay" else None
        ref.write_spec(path, spec.kind, name, spec.dtype, 1, 1, spec.H, spec.HV, spec.K, spec.V,
                       decay=decay, qk_l2norm=is_l2norm(name))
        print(name, path, "--backward", spec.options)


def fla_backward(kind, ins, do, ds, scale, qk_l2norm=False, dtype="bf16"):
    """(names, backward, forward + backward, forward) over fla's chunk
    function on `ins` in `dtype`: `names` the inputs whose gradients the
    closures return, in order. With qk_l2norm, fla normalises q and k in its
    kernels (use_qk_l2norm_in_kernel: Gated DeltaNet and KDA)."""
    import torch
    import fla.ops.common.chunk_o as chunk_o
    chunk_o.TRITON_ABOVE_3_7_1 = True  # the Hopper guard: timing only
    bf = torch_dtype(dtype)
    q, k, v = (ins[n].to(bf).requires_grad_() for n in ("q", "k", "v"))
    s0 = ins["initial_state"].float().contiguous().requires_grad_()
    names = ["q", "k", "v"]
    leaves = [q, k, v]
    for n in ("gate", "beta"):
        if n in ins:
            names.append(n)
            leaves.append(ins[n].float().requires_grad_())
    names.append("initial_state")
    leaves.append(s0)
    g = leaves[names.index("gate")] if "gate" in names else None
    beta = leaves[names.index("beta")] if "beta" in names else None
    common = dict(scale=scale, initial_state=s0, output_final_state=True)
    if kind == "gated_delta":
        from fla.ops.gated_delta_rule import chunk_gated_delta_rule as f
        run = lambda: f(q, k, v, g, beta, use_qk_l2norm_in_kernel=qk_l2norm, **common)
    elif kind == "delta":
        from fla.ops.delta_rule import chunk_delta_rule as f
        run = lambda: f(q, k, v, beta, **common)
    elif kind == "kda":
        from fla.ops.kda import chunk_kda as f
        run = lambda: f(q, k, v, g, beta, use_qk_l2norm_in_kernel=qk_l2norm, **common)
    elif kind == "scalar_gate":
        from fla.ops.simple_gla import chunk_simple_gla as f
        run = lambda: f(q, k, v, g, **common)
    elif kind == "key_gate":
        from fla.ops.gla import chunk_gla as f
        run = lambda: f(q, k, v, g, **common)
    elif kind == "identity":
        from fla.ops.linear_attn import chunk_linear_attn as f
        run = lambda: f(q, k, v, normalize=False, **common)
    elif kind == "constant_decay":  # fla's fixed gammas 1 - 2^(-5 - h), as the spec's
        from fla.ops.retention import chunk_retention as f
        run = lambda: f(q, k, v, **common)
    else:
        raise SystemExit(f"{kind}: no fla counterpart")
    if qk_l2norm and kind not in ("gated_delta", "kda"):
        raise SystemExit(f"{kind}: fla's in-kernel l2 norm not wired here")
    rep = v.shape[2] // q.shape[2]
    if rep > 1 and kind != "gated_delta":
        raise SystemExit("fla's delta rule backward with HV > H faulted here: not timed")
    o, s = run()
    dob = do.to(bf)

    def backward():
        return torch.autograd.grad((o, s), leaves, (dob, ds), retain_graph=True)

    def forward_backward():
        o2, s2 = run()
        return torch.autograd.grad((o2, s2), leaves, (dob, ds))
    return names, backward, forward_backward, run


def time_events(fn, reps=10):
    import torch
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    return sorted(times)[len(times) // 2]


def run(args):
    import numpy as np
    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".carry"))
    import check as fwd

    gen = torch.Generator(device="cuda").manual_seed(0)
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for name, B, T in ROWS:
            if args.rows and not re.search(args.rows, f"{name} {B} {T}"):
                continue
            spec = SPECS[name]
            kind, H, HV, K, V, dtype = spec.kind, spec.H, spec.HV, spec.K, spec.V, spec.dtype
            qk_l2norm = is_l2norm(name)
            ins = fwd.make_inputs(kind, B, T, K, V, dtype, False, gen, qk_l2norm, H, HV)
            if not qk_l2norm:
                # q, k normalised by the caller, as the fla functions' users do.
                ins["q"], ins["k"] = fwd.l2norm(ins["q"]), fwd.l2norm(ins["k"])
            rounded = lambda x: x.to(torch_dtype(dtype)).float()  # noqa: E731
            ins["q"], ins["k"] = rounded(ins["q"]), rounded(ins["k"])
            do = rounded(torch.randn(B, T, HV, V, generator=gen, device="cuda"))
            ds = 0.1 * torch.randn(B, HV, K, V, generator=gen, device="cuda")
            names = [n for n in fwd.INPUT_ORDER if n in ins]
            lib = os.path.join(args.libdir, name + ".so")
            call = [args.runner, lib, "--entry", name + "_backward"]
            for n, x in [(n, ins[n]) for n in names] + [("do", do), ("ds", ds)]:
                path = os.path.join(work, n + ".npy")
                np.save(path, x.cpu().numpy().astype(np.float32))
                call += ["--input", path]
            outs = [os.path.join(work, "d" + n + ".npy") for n in names]
            for o in outs:
                call += ["--output", o]
            cmd = call + ["--graph", "--bench", "10", "--warmup", "2",
                          "--json", os.path.join(work, "t.json")]
            # The forward alone, on the same inputs (its outputs dropped).
            fwd_cmd = [args.runner, lib, "--entry", name]
            for n in names:
                fwd_cmd += ["--input", os.path.join(work, n + ".npy")]
            fwd_cmd += ["--output", os.path.join(work, "o.npy"),
                        "--output", os.path.join(work, "s.npy"),
                        "--graph", "--bench", "10", "--warmup", "2",
                        "--json", os.path.join(work, "f.json")]
            row = {"spec": name, "kind": kind, "dtype": dtype, "B": B, "T": T, "H": H, "HV": HV,
                   "K": K, "V": V}
            if args.kernel_times:
                # Each launch timed alone (the runtime's LINATTN_KERNEL_TIMES:
                # "kernel NAME grid ... block ...: MS ms"), in the last of three
                # calls (the one that writes the outputs, a warm-up, the timed
                # one: the first call's kernels run cold, as kernel_times.py says).
                timed = subprocess.run(call + ["--bench", "1", "--warmup", "1"],
                                       capture_output=True, text=True, timeout=600,
                                       env=dict(os.environ, LINATTN_KERNEL_TIMES="1"))
                lines = [line for line in timed.stderr.splitlines() if line.startswith("kernel ")]
                row["kernel_ms"] = lines[-(len(lines) // 3):] if len(lines) % 3 == 0 else lines
            for command, report, key, error in (
                    (cmd, "t.json", "linattn_backward_ms", "linattn_error"),
                    (fwd_cmd, "f.json", "linattn_forward_ms", "linattn_forward_error")):
                proc = subprocess.run(command, capture_output=True, text=True, timeout=600)
                if proc.returncode != 0:
                    row[error] = (proc.stderr or proc.stdout)[-300:]
                    continue
                with open(os.path.join(work, report)) as f:
                    timing = json.load(f)
                row[key] = timing.get("median_ms", timing.get("ms"))
            if "linattn_backward_ms" in row and "linattn_forward_ms" in row:
                row["linattn_forward_backward_ms"] = round(
                    row["linattn_forward_ms"] + row["linattn_backward_ms"], 4)
            scale = K ** -0.5
            try:
                if args.no_fla:
                    raise RuntimeError("not timed (--no-fla)")
                fla_names, bwd, fwd_bwd, fla_forward = fla_backward(kind, ins, do, ds, scale, qk_l2norm, dtype)
                row["fla_backward_ms"] = round(time_events(bwd), 4)
                row["fla_forward_backward_ms"] = round(time_events(fwd_bwd), 4)
                # Events around Python calls count the host's launch gaps
                # too; the forward + backward replayed from a CUDA graph
                # (as LinAttn's are) does not.
                try:
                    from fla_time import time_graph
                    row["fla_forward_backward_graph_ms"] = round(time_graph(fwd_bwd, reps=10), 4)
                    # Its forward alone (autograd recording, as in training):
                    # the backward's share is the difference.
                    row["fla_forward_graph_ms"] = round(time_graph(fla_forward, reps=10), 4)
                    row["fla_backward_graph_ms"] = round(
                        row["fla_forward_backward_graph_ms"] - row["fla_forward_graph_ms"], 4)
                except Exception as exc:  # not capturable: the events' time stands
                    row["fla_graph_error"] = str(exc)[:300]
            except (Exception, SystemExit) as exc:  # no counterpart, or a fault: reported
                row["fla_error"] = str(exc)[-300:]
            if args.errors_T and T == args.errors_T and "linattn_error" not in row:
                d = {n: ins[n].double().requires_grad_() for n in names}
                gammas = fwd.retnet_gammas(HV) if kind == "constant_decay" else None
                q, k = d["q"], d["k"]
                if qk_l2norm:
                    q, k = fwd.l2norm(q), fwd.l2norm(k)
                o, s = fwd.reference(kind, q, k, d["v"], d.get("gate"), d.get("beta"),
                                     d["initial_state"], scale, gammas)
                loss = (o * do.double()).sum() + (s * ds.double()).sum()
                ref = torch.autograd.grad(loss, [d[n] for n in names])
                row["linattn_rel_err"] = {
                    n: fwd.rel_err(torch.from_numpy(np.load(p)).cuda().double(), r)
                    for n, p, r in zip(names, outs, ref)}
                if "fla_error" not in row:
                    got = dict(zip(fla_names, bwd()))
                    row["fla_rel_err"] = {n: fwd.rel_err(got[n].double(), r)
                                          for n, r in zip(names, ref)}
            fla_b = row.get("fla_backward_graph_ms", row.get("fla_backward_ms"))
            if "linattn_backward_ms" in row and fla_b:
                row["fla_over_linattn"] = round(fla_b / row["linattn_backward_ms"], 3)
            fla_fb = row.get("fla_forward_backward_graph_ms", row.get("fla_forward_backward_ms"))
            if "linattn_forward_backward_ms" in row and fla_fb:
                row["fla_over_linattn_forward_backward"] = round(
                    fla_fb / row["linattn_forward_backward_ms"], 3)
            rows.append(row)
            print(json.dumps(row), flush=True)
            # The report so far after every row: a run cut by its caller's
            # time limit keeps the rows it finished.
            write_report(args.json, torch.cuda.get_device_name(0), rows)
    write_report(args.json, torch.cuda.get_device_name(0), rows)
    return 0


def write_report(path, device, rows):
    with open(path, "w") as f:
        json.dump({"device": device, "rows": rows}, f, indent=1)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("variants")
    v.add_argument("spec_dir")
    r = sub.add_parser("run")
    r.add_argument("--libdir", required=True)
    r.add_argument("--runner", required=True)
    r.add_argument("--json", required=True)
    r.add_argument("--rows", default="")
    r.add_argument("--errors-T", type=int, default=1024)
    r.add_argument("--no-fla", action="store_true",
                   help="LinAttn alone (a before / after of one change in one lease)")
    r.add_argument("--kernel-times", action="store_true",
                   help="also each kernel's time in one call (LINATTN_KERNEL_TIMES)")
    args = p.parse_args()
    if args.cmd == "variants":
        variants(args.spec_dir)
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
