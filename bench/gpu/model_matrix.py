#!/usr/bin/env python3
"""The model-shape matrix (issue 26): LinAttn beside fla on the shapes released
models run, timed in one lease, with both outputs checked against one fp64
reference.

    model_matrix.py --libdir LIBS --runner linattn-gpu-run --json OUT.json
        [--rows REGEX] [--seed N]

Runs on the GPU machine. The rows and specs are bench/gpu/model_shapes.py's
(libraries mm_<spec>.so from bench/gpu/prepare.sh with LINATTN_VARIANTS set to
it; strategy auto). For each row: fresh random inputs (check.py's make_inputs:
unit q and k, or rows of random length for {qk_l2norm} specs; logsigmoid
gates; sigmoid beta; a non-zero initial state), LinAttn's library run by
linattn-gpu-run (outputs, then 20 CUDA-graph replays after 3 warm-ups:
median ms), fla's forward op on the same values (bf16 q, k, v, or f32 for f32
specs; f32 gates, beta and state) in a worker process (a faulting Triton
kernel poisons only it; a new one takes the next row), timed from CUDA-graph
replays the same way, and both outputs' relative errors against the float64
loop of check.py. fla's op per kind is below; where fla has no grouped value
heads (simple_gla) q and k are expanded to HV heads before the timed call;
decode rows (T <= 8) time both fla's chunked and fused recurrent op and keep
the faster. Writes one JSON report and prints a table; ratio = fla ms /
LinAttn ms (> 1: LinAttn faster); each row also records the wall seconds
of its phases (`seconds`: the fp64 reference, LinAttn's runner, fla's
worker with its JIT). fla is carried in .carry/fla.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", ".carry"))
from model_shapes import ROWS, SPECS, library_name  # noqa: E402

DECODE_MAX_T = 8


def fla_ops(kind, T):
    """fla's forward ops for `kind` (names for the report); None: no counterpart."""
    chunked = {"gated_delta": "chunk_gated_delta_rule", "delta": "chunk_delta_rule",
               "scalar_gate": "chunk_simple_gla", "key_gate": "chunk_gla", "kda": "chunk_kda",
               "identity": "chunk_linear_attn", "constant_decay": "chunk_retention"}.get(kind)
    if chunked is None:
        return []
    ops = [chunked]
    if T <= DECODE_MAX_T and kind == "gated_delta":
        ops.append("fused_recurrent_gated_delta_rule")
    return ops


def fla_call(op, ins, spec, scale):
    """A closure running fla's `op` on `ins` (torch tensors on the GPU)."""
    import torch
    dt = torch.float32 if spec["dtype"] == "f32" else torch.bfloat16
    q, k, v = (ins[n].to(dt) for n in ("q", "k", "v"))
    s0 = ins["initial_state"].float().contiguous()
    g, beta = ins.get("gate"), ins.get("beta")
    l2 = spec["qk_l2norm"]
    rep = spec["HV"] // spec["H"]
    common = dict(scale=scale, initial_state=s0, output_final_state=True)
    if op == "chunk_gated_delta_rule":
        from fla.ops.gated_delta_rule import chunk_gated_delta_rule as f
        return lambda: f(q, k, v, g, beta, use_qk_l2norm_in_kernel=l2, **common)
    if op == "fused_recurrent_gated_delta_rule":
        from fla.ops.gated_delta_rule import fused_recurrent_gated_delta_rule as f
        return lambda: f(q, k, v, g=g, beta=beta, use_qk_l2norm_in_kernel=l2, **common)
    if op == "chunk_kda":
        from fla.ops.kda import chunk_kda as f
        return lambda: f(q, k, v, g, beta, use_qk_l2norm_in_kernel=l2, **common)
    if op == "chunk_delta_rule":
        from fla.ops.delta_rule import chunk_delta_rule as f
        return lambda: f(q, k, v, beta, use_qk_l2norm_in_kernel=l2, **common)
    if l2:
        raise SystemExit(f"{op}: no in-kernel L2 norm")
    if rep > 1:  # no grouped value heads in these ops: expanded before the call
        q, k = q.repeat_interleave(rep, dim=2), k.repeat_interleave(rep, dim=2)
    if op == "chunk_simple_gla":
        from fla.ops.simple_gla import chunk_simple_gla as f
        return lambda: f(q, k, v, g, **common)
    if op == "chunk_gla":
        from fla.ops.gla import chunk_gla as f
        return lambda: f(q, k, v, g, **common)
    if op == "chunk_linear_attn":
        from fla.ops.linear_attn import chunk_linear_attn as f
        return lambda: f(q, k, v, normalize=False, **common)
    if op == "chunk_retention":
        from fla.ops.retention import chunk_retention as f
        return lambda: f(q, k, v, **common)
    raise SystemExit(f"unknown fla op {op}")


def fla_worker():
    """Reads jobs (JSON lines: inputs .pt, reference .pt, spec id, op) from
    stdin; prints one JSON result per job."""
    import torch
    from check import rel_err
    from fla_time import time_graph
    for line in sys.stdin:
        job = json.loads(line)
        spec = SPECS[job["spec"]]
        result = {"op": job["op"]}
        try:
            ins = {n: x.cuda() for n, x in torch.load(job["inputs"]).items()}
            ref = {n: x.cuda().double() for n, x in torch.load(job["reference"]).items()}
            fn = fla_call(job["op"], ins, spec, spec["K"] ** -0.5)
            o, s = fn()
            torch.cuda.synchronize()
            result.update(rel_err_o=rel_err(o.double(), ref["o"]),
                          rel_err_state=rel_err(s.double(), ref["s"]))
            result["median_ms_graph"] = round(time_graph(fn), 4)
        except Exception as e:  # report and take the next job
            result["error"] = f"{type(e).__name__}: {str(e)[:300]}"
        print(json.dumps(result), flush=True)


class FlaWorker:
    """The worker process, restarted after a fault."""

    def __init__(self):
        self.proc = None

    def run(self, job):
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen([sys.executable, __file__, "--fla-worker"],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL, text=True)
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if line:
            return json.loads(line)
        self.proc = None  # it died on this job; the next job starts a new one
        return {"op": job["op"], "error": "the fla worker process died (a fault)"}


def state_bytes(spec, B):
    return 2 * 4 * B * spec["HV"] * spec["K"] * spec["V"]


def io_bytes(spec, B, T):
    """Bytes a call must move: q, k, v, o in the spec's type; f32 gates, beta,
    initial and final state."""
    es = 4 if spec["dtype"] == "f32" else 2
    H, HV, K, V = spec["H"], spec["HV"], spec["K"], spec["V"]
    n = es * B * T * (2 * H * K + 2 * HV * V) + state_bytes(spec, B)
    if spec["kind"] in ("scalar_gate", "gated_delta"):
        n += 4 * B * T * HV
    if spec["kind"] in ("key_gate", "kda"):
        n += 4 * B * T * HV * K
    if spec["kind"] in ("delta", "gated_delta", "negeig_delta", "kda"):
        n += 4 * B * T * HV
    return n


def write_report(path, device, seed, copy_tbs, mm_tflops, rows):
    """The JSON report of the rows so far (written after every row, so that a
    run cut short keeps what it measured)."""
    import math
    ratios = [r["ratio_fla_over_linattn"] for r in rows if "ratio_fla_over_linattn" in r]
    geomean = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else None
    report = {"device": device, "seed": seed,
              "ceilings": {"copy_tb_per_s": copy_tbs, "bf16_matmul_tflop_per_s": mm_tflops},
              "geomean_fla_over_linattn": geomean, "rows_with_both": len(ratios),
              "rows_slower_than_fla": sum(r < 1 for r in ratios), "rows": rows}
    with open(path, "w") as f:
        json.dump(report, f, indent=1)
    return report


def main():
    if sys.argv[1:] == ["--fla-worker"]:
        return fla_worker()
    import numpy as np
    import torch
    from bench import ceilings
    from check import l2norm, make_inputs, reference, rel_err, retnet_gammas, runner_command
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--libdir", required=True)
    p.add_argument("--runner", required=True)
    p.add_argument("--json", required=True)
    p.add_argument("--rows", default="", help="only rows whose 'spec B T' matches this regex")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--no-fla", action="store_true")
    args = p.parse_args()
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    copy_tbs, mm_tflops = ceilings()
    print(f"ceilings: copy {copy_tbs} TB/s, bf16 matmul {mm_tflops} TFLOP/s; seed {seed}",
          flush=True)
    worker = FlaWorker()
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for i, (spec_id, B, T, what) in enumerate(ROWS):
            if args.rows and not re.search(args.rows, f"{spec_id} {B} {T}"):
                continue
            spec = SPECS[spec_id]
            kind, H, HV, K, V = spec["kind"], spec["H"], spec["HV"], spec["K"], spec["V"]
            row = {"spec": spec_id, "what": what, "kind": kind, "B": B, "T": T, "H": H, "HV": HV,
                   "K": K, "V": V, "dtype": spec["dtype"], "qk_l2norm": spec["qk_l2norm"],
                   "bytes": io_bytes(spec, B, T)}
            # Where a row's seconds go (the fp64 reference loop, LinAttn's
            # runner, fla's worker with its JIT), so that a call's rows can be
            # planned: row["seconds"].
            started = time.monotonic()
            seconds = row["seconds"] = {}
            gen = torch.Generator(device="cuda").manual_seed(seed + i)
            ins = make_inputs(kind, B, T, K, V, spec["dtype"], False, gen, spec["qk_l2norm"],
                              H=H, HV=HV)
            d = {n: x.double() for n, x in ins.items()}
            if spec["qk_l2norm"]:
                d["q"], d["k"] = l2norm(d["q"]), l2norm(d["k"])
            gammas = retnet_gammas(HV) if kind == "constant_decay" else None
            ro, rs = reference(kind, d["q"], d["k"], d["v"], d.get("gate"), d.get("beta"),
                               d["initial_state"], K ** -0.5, gammas)
            del d
            seconds["reference"] = round(time.monotonic() - started, 1)
            lib = os.path.join(args.libdir, library_name(spec_id) + ".so")
            cmd, outs = runner_command(args.runner, lib, spec["family"], ins, work)
            res_json = os.path.join(work, "bench.json")
            proc = subprocess.run(cmd + ["--bench", "20", "--warmup", "3", "--graph",
                                         "--bytes", str(row["bytes"]), "--json", res_json],
                                  capture_output=True, text=True, timeout=900)
            if proc.returncode != 0:
                row["linattn_error"] = proc.stderr.strip()[-300:]
            else:
                o = torch.from_numpy(np.load(outs[0])).cuda().double()
                s = torch.from_numpy(np.load(outs[1])).cuda().double()
                bench = json.load(open(res_json))
                row.update(linattn_ms=bench["median_ms"], linattn_tb_per_s=bench["tb_per_s"],
                           linattn_rel_err_o=rel_err(o, ro), linattn_rel_err_state=rel_err(s, rs))
                del o, s
            seconds["linattn"] = round(time.monotonic() - started - sum(seconds.values()), 1)
            row["floor_ms"] = row["bytes"] / (copy_tbs * 1e12) * 1e3
            if T <= DECODE_MAX_T and "linattn_ms" in row:
                # State bytes read + written over the time, against the copy.
                row["linattn_state_bw_fraction"] = (
                    state_bytes(spec, B) / (row["linattn_ms"] * 1e-3) / (copy_tbs * 1e12))
            ops = [] if args.no_fla else fla_ops(kind, T)
            if ops:
                inputs_pt = os.path.join(work, "inputs.pt")
                ref_pt = os.path.join(work, "ref.pt")
                narrow = torch.float32 if spec["dtype"] == "f32" else torch.bfloat16
                torch.save({n: (x.to(narrow) if n in ("q", "k", "v") else x).cpu()
                            for n, x in ins.items()}, inputs_pt)
                torch.save({"o": ro.float().cpu(), "s": rs.float().cpu()}, ref_pt)
                row["fla"] = [worker.run({"inputs": inputs_pt, "reference": ref_pt,
                                          "spec": spec_id, "op": op}) for op in ops]
                seconds["fla"] = round(time.monotonic() - started - sum(seconds.values()), 1)
                timed = [r for r in row["fla"] if "median_ms_graph" in r]
                if timed:
                    best = min(timed, key=lambda r: r["median_ms_graph"])
                    row.update(fla_op=best["op"], fla_ms=best["median_ms_graph"],
                               fla_rel_err_o=best["rel_err_o"],
                               fla_rel_err_state=best["rel_err_state"])
            if "linattn_ms" in row and "fla_ms" in row:
                row["ratio_fla_over_linattn"] = row["fla_ms"] / row["linattn_ms"]
            del ro, rs, ins
            torch.cuda.empty_cache()
            rows.append(row)
            write_report(args.json, torch.cuda.get_device_name(0), seed, copy_tbs, mm_tflops, rows)
            fmt = lambda key, f: (format(row[key], f) if key in row else "-")  # noqa: E731
            print(f"{spec_id:18s} B={B:3d} T={T:5d}  linattn {fmt('linattn_ms', '8.3f')} ms "
                  f"(err o {fmt('linattn_rel_err_o', '.1e')} s {fmt('linattn_rel_err_state', '.1e')})"
                  f"  fla {fmt('fla_ms', '8.3f')} ms (err o {fmt('fla_rel_err_o', '.1e')})"
                  f"  fla/linattn {fmt('ratio_fla_over_linattn', '.2f')}"
                  f"  ({', '.join(f'{k} {v:.0f} s' for k, v in seconds.items())})"
                  + (f"  LINATTN ERROR {row['linattn_error'][:150]}" if "linattn_error" in row
                     else "")
                  + "".join(f"  fla {r['op']} ERROR {r['error'][:120]}"
                            for r in row.get("fla", []) if "error" in r), flush=True)
    report = write_report(args.json, torch.cuda.get_device_name(0), seed, copy_tbs, mm_tflops,
                          rows)
    geomean = report["geomean_fla_over_linattn"]
    print(f"{report['rows_with_both']} rows with both times; geometric mean fla/linattn "
          f"{geomean if geomean is None else round(geomean, 3)}; "
          f"{report['rows_slower_than_fla']} rows where LinAttn is slower")
    return 0


if __name__ == "__main__":
    sys.exit(main())
