#!/usr/bin/env python3
"""The measurements the GPU cost model is fitted to (issue 26, must-have 6):
the recurrent and the chunked kernels of a few specs, each forced, timed over
a grid of B and T on one GPU.

    bench/gpu/strategy_grid.py variants SPEC_DIR
        (MLIR machine) writes the grid's specs and prints one variant per
        line, "NAME SPEC --strategy=S" (bench/gpu/prepare.sh's input:
        LINATTN_VARIANTS="/usr/bin/python3 bench/gpu/strategy_grid.py variants")
    bench/gpu/strategy_grid.py run --libdir LIBS --runner linattn-gpu-run --out OUT.jsonl [--specs A,B]
            [--strategies chunked,auto] [--B 16,64] [--T 40,48]
        (GPU machine) one JSON line per (spec, B, T, strategy): the median ms
        of 20 CUDA-graph replays after 3 warm-ups, on check.py's random inputs

The specs are bench/gpu/model_shapes.py's (GRID_SPECS below); the fit is
bench/gpu/fit_cost_model.py's.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from model_shapes import SPECS, write_specs  # noqa: E402

# Gated DeltaNet as Qwen3-Next runs it (GVA, in-op L2 norm), at H = HV = 8
# with K = V = 128 and 64; kinds without the rank-1 term (scalar and
# per-key gates) and KDA (per-key gates and the rank-1 term); f32 inputs
# (split on the tensor cores) with and without the rank-1 term, with row
# and per-key gates (GLA, KDA: bench/NOTES.md f4), and head
# sizes the chunked path pads (48 -> 64, 80 -> 96).
GRID_SPECS = ("qwen3next", "gdn_h8", "gdn_k64_v64", "simple_gla_h8", "gla_h8", "kda_h8",
              "gdn_h8_f32", "simple_gla_h8_f32", "gdn_k48_v48", "gdn_k80_v80", "gla_h8_f32",
              "kda_h8_f32")
STRATEGIES = ("recurrent", "chunked")
# Also compiled (variants), timed only when asked (run --strategies): the
# default strategy, which dispatches between the two at run time.
AUTO = "auto"
BATCHES = (1, 16, 64, 256)
SEQ_LENS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 1024, 4096)
MAX_TOKENS = 32768       # B * T: keeps the inputs' files small
MAX_RECURRENT_T = 1024   # beyond, the recurrent kernel is 10-100x slower


def library(spec_id, strategy):
    return f"sg_{spec_id}_{strategy}"


def grid(specs=GRID_SPECS, batches=BATCHES, seq_lens=SEQ_LENS):
    for spec_id in specs:
        for B in batches:
            for T in seq_lens:
                if B * T <= MAX_TOKENS:
                    yield spec_id, B, T


def variants(spec_dir):
    paths = write_specs(spec_dir)
    for spec_id in GRID_SPECS:
        path = paths[spec_id]
        for strategy in STRATEGIES + (AUTO,):
            print(f"{library(spec_id, strategy)} {path} --strategy={strategy}")


def integers(text):
    """(1, 16) from "1,16"."""
    return tuple(int(x) for x in text.split(","))


def run(args):
    import torch
    from check import make_inputs, runner_command
    gen = torch.Generator(device="cuda")
    gen.manual_seed(args.seed)
    with open(args.out, "w") as out, tempfile.TemporaryDirectory() as work:
        for spec_id, B, T in grid(args.specs.split(",") if args.specs else GRID_SPECS,
                                  integers(args.B) if args.B else BATCHES,
                                  integers(args.T) if args.T else SEQ_LENS):
            s = SPECS[spec_id]
            ins = make_inputs(s["kind"], B, T, s["K"], s["V"], s["dtype"], False, gen,
                              unnormalised_qk=s["qk_l2norm"], H=s["H"], HV=s["HV"])
            for strategy in args.strategies.split(","):
                if strategy == "recurrent" and T > MAX_RECURRENT_T:
                    continue
                lib = os.path.join(args.libdir, library(spec_id, strategy) + ".so")
                cmd, _ = runner_command(args.runner, lib, s["family"], ins, work)
                report = os.path.join(work, "r.json")
                proc = subprocess.run(cmd + ["--bench", "20", "--warmup", "3", "--graph",
                                             "--json", report], capture_output=True, text=True)
                row = dict(spec=spec_id, B=B, T=T, strategy=strategy, **{
                    k: s[k] for k in ("kind", "H", "HV", "K", "V", "dtype", "qk_l2norm")})
                if proc.returncode == 0:
                    row["ms"] = json.load(open(report))["median_ms"]
                else:
                    row["error"] = proc.stderr[-300:]
                print(json.dumps(row), file=out, flush=True)
                print(spec_id, B, T, strategy, row.get("ms", row.get("error")), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("variants")
    v.add_argument("spec_dir")
    r = sub.add_parser("run")
    r.add_argument("--libdir", required=True)
    r.add_argument("--runner", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--specs", default="", help="comma-separated GRID_SPECS to run (default all)")
    r.add_argument("--strategies", default=",".join(STRATEGIES),
                   help="comma-separated strategies to run (default both; also auto)")
    r.add_argument("--B", default="", help="comma-separated batches (default the grid's)")
    r.add_argument("--T", default="", help="comma-separated lengths (default the grid's)")
    args = p.parse_args()
    if args.cmd == "variants":
        variants(args.spec_dir)
    else:
        run(args)


if __name__ == "__main__":
    main()
