#!/usr/bin/env python3
"""auto's chunked path beside the forced chunked one (bench/NOTES.md g3):

    /usr/bin/python3 bench/gpu/auto_vs_forced.py bench/results/auto_chunked_grid_h200.jsonl \\
        [--opt build/bin/linattn-opt] [--limits SPEC=T,...]

The JSON lines are strategy_grid.py run's with --strategies chunked,auto.
A row's auto call ran chunked where T is above the spec's recurrent limit
at its B (linattn-select-strategy's explanation, dynamic B, read by
dispatch_gain.py's limits_of), or above --limits, the single limit per spec
of the build that timed the rows (auto_vs_forced_chunked_h200.txt: session
42's, bench/NOTES.md g3); for those rows, per B,
the geometric mean and range of auto's time over the forced chunked one.
"""
import argparse
import collections
import json
import math
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from dispatch_gain import limit_at, limits_of  # noqa: E402
from model_shapes import write_specs  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("rows")
    p.add_argument("--opt", default="build/bin/linattn-opt")
    p.add_argument("--limits", metavar="SPEC=T,...",
                   help="the recurrent limits of the library that was timed, instead of this build's")
    args = p.parse_args()
    times = collections.defaultdict(dict)
    for line in open(args.rows):
        r = json.loads(line)
        if "ms" in r:
            times[(r["spec"], r["B"], r["T"])][r["strategy"]] = r["ms"]
    ratios = collections.defaultdict(list)
    if args.limits:
        limits = {k: [(1, None, int(v))] for k, v in (x.split("=") for x in args.limits.split(","))}
    else:
        with tempfile.TemporaryDirectory() as d:
            paths = write_specs(d)
            limits = {spec: limits_of(args.opt, paths[spec]) for spec in {s for s, _, _ in times}}
    for (spec, B, T), ms in sorted(times.items()):
        if T > limit_at(limits[spec], B) and {"auto", "chunked"} <= ms.keys():
            ratios[B].append((ms["auto"] / ms["chunked"], spec, T))
    for B, rs in sorted(ratios.items()):
        values = [r for r, _, _ in rs]
        geo = math.exp(sum(map(math.log, values)) / len(values))
        lo, hi = min(rs), max(rs)
        print(f"B {B:4d}: auto / forced chunked geometric mean {geo:.3f} over {len(rs)} rows, "
              f"{lo[0]:.3f} ({lo[1]} T {lo[2]}) to {hi[0]:.3f} ({hi[1]} T {hi[2]})")


if __name__ == "__main__":
    main()
