#!/usr/bin/env python3
"""auto's chunked path beside the forced chunked one (bench/NOTES.md g3):

    /usr/bin/python3 bench/gpu/auto_vs_forced.py bench/results/auto_chunked_grid_h200.jsonl \\
        [--opt build/bin/linattn-opt]

The JSON lines are strategy_grid.py run's with --strategies chunked,auto.
A row's auto call ran chunked where T is above the spec's recurrent limit
(linattn-select-strategy's explanation, dynamic B); for those rows, per B,
the geometric mean and range of auto's time over the forced chunked one.
"""
import argparse
import collections
import json
import math
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from model_shapes import write_specs  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("rows")
    p.add_argument("--opt", default="build/bin/linattn-opt")
    args = p.parse_args()
    times = collections.defaultdict(dict)
    for line in open(args.rows):
        r = json.loads(line)
        if "ms" in r:
            times[(r["spec"], r["B"], r["T"])][r["strategy"]] = r["ms"]
    ratios = collections.defaultdict(list)
    with tempfile.TemporaryDirectory() as d:
        paths = write_specs(d)
        limits = {}
        for spec in sorted({s for s, _, _ in times}):
            out = subprocess.run([args.opt, paths[spec], "--linattn-select-strategy=gpu-kernels=true explain=true",
                                  "-o", os.devnull], capture_output=True, text=True).stderr
            m = re.search(r"recurrent for T <= (\d+)", out)
            if not m:
                sys.exit(f"no recurrent limit in the explanation of {spec}:\n{out}")
            limits[spec] = int(m.group(1))
    for (spec, B, T), ms in sorted(times.items()):
        if T > limits[spec] and {"auto", "chunked"} <= ms.keys():
            ratios[B].append((ms["auto"] / ms["chunked"], spec, T))
    for B, rs in sorted(ratios.items()):
        values = [r for r, _, _ in rs]
        geo = math.exp(sum(map(math.log, values)) / len(values))
        lo, hi = min(rs), max(rs)
        print(f"B {B:4d}: auto / forced chunked geometric mean {geo:.3f} over {len(rs)} rows, "
              f"{lo[0]:.3f} ({lo[1]} T {lo[2]}) to {hi[0]:.3f} ({hi[1]} T {hi[2]})")


if __name__ == "__main__":
    main()
