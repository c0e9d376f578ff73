#!/usr/bin/env python3
"""What the GPU dispatch's per-batch T limit gains over one limit for every
B, replayed on the measured strategy grid (no GPU needed):

    /usr/bin/python3 bench/gpu/dispatch_gain.py bench/results/gpu_strategy_grid_h200.jsonl \\
        [--opt build/bin/linattn-opt]

For each grid spec with a dynamic B, linattn-select-strategy's explanation
gives its recurrent T limit per range of B ("up to T = 33 at B = 1, 36 at
B = 2-3, ..."). A call runs recurrent at T <= the limit of its B's range;
a single limit safe at every B (the shortest of them, as the dispatch took
before the limits were per batch) runs recurrent at T <= that one. Printed:
each measured (spec, B, T) where the two rules choose differently, the
measured times of both choices, and their geometric mean ratio; then, over
every measured call, the per-batch rule's time over the faster path's; with
--auto-against, the file's auto rows against fixed limits per spec.
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

RANGE = re.compile(r"(\d+) at B (?:= (\d+)(?:-(\d+))?|>= (\d+)|= any)")


def limits_of(opt, spec_path):
    """[(first B, last B or None, limit)] from the strategy's explanation."""
    out = subprocess.run([opt, spec_path, "--linattn-select-strategy=gpu-kernels=true explain=true",
                          "-o", os.devnull], capture_output=True, text=True).stderr
    line = re.search(r"up to T = (.*?)(?: \(B is dynamic|\n|$)", out)
    if not line:
        sys.exit(f"no recurrent limit in the explanation of {spec_path}:\n{out}")
    ranges = []
    for m in RANGE.finditer(line.group(1)):
        limit, first, last, atLeast = m.groups()
        if atLeast:
            ranges.append((int(atLeast), None, int(limit)))
        elif first:
            ranges.append((int(first), int(last or first), int(limit)))
        else:
            ranges.append((1, None, int(limit)))
    return ranges


def limit_at(ranges, batch):
    for first, last, limit in ranges:
        if batch >= first and (last is None or batch <= last):
            return limit
    sys.exit(f"B = {batch} in no range of {ranges}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("grid", help="the strategy grid's JSON lines (bench/gpu/strategy_grid.py run)")
    p.add_argument("--opt", default="build/bin/linattn-opt")
    p.add_argument("--auto-against", metavar="SPEC=T,...",
                   help="also compare the file's auto rows with the path one fixed limit per spec "
                        "would take (e.g. an earlier model's limits)")
    args = p.parse_args()
    times = collections.defaultdict(dict)
    for line in open(args.grid):
        r = json.loads(line)
        times[(r["spec"], r["B"], r["T"])][r["strategy"]] = r["ms"]
    with tempfile.TemporaryDirectory() as d:
        paths = write_specs(d)
        ratios, lines, over_best, worst = [], [], [], []
        for spec in sorted({s for s, _, _ in times}):
            ranges = limits_of(args.opt, paths[spec])
            single = min(limit for _, _, limit in ranges)
            print(f"{spec}: limits {ranges}, one limit {single}")
            for (s, B, T), ms in sorted(times.items()):
                if s != spec or len(ms) < 2:
                    continue
                if "recurrent" not in ms or "chunked" not in ms:
                    continue
                by_batch = "recurrent" if T <= limit_at(ranges, B) else "chunked"
                one = "recurrent" if T <= single else "chunked"
                best = min(ms["recurrent"], ms["chunked"])
                over_best.append(ms[by_batch] / best)
                worst.append((ms[by_batch] / best, spec, B, T))
                if by_batch == one:
                    continue
                ratio = ms[one] / ms[by_batch]
                ratios.append(ratio)
                lines.append(f"  {spec:18s} B {B:4d} T {T:5d}: per batch {by_batch:9s} {ms[by_batch]:.4f} ms, "
                             f"one limit {one:9s} {ms[one]:.4f} ms, one / per batch {ratio:.3f}")
    print("\n".join(lines))
    if ratios:
        geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
        print(f"{len(ratios)} measured calls choose differently: one limit / per batch "
              f"geometric mean {geo:.3f}, range {min(ratios):.3f}-{max(ratios):.3f}, "
              f"faster in {sum(r > 1 for r in ratios)}, slower in {sum(r < 1 for r in ratios)}")
    else:
        print("no measured call chooses differently")
    measured_auto = [ms["auto"] / min(ms["recurrent"], ms["chunked"]) for ms in times.values()
                     if {"auto", "recurrent", "chunked"} <= ms.keys()]
    if measured_auto:
        geo = math.exp(sum(map(math.log, measured_auto)) / len(measured_auto))
        print(f"the file's own auto rows (the library it timed) over the faster path, "
              f"{len(measured_auto)} calls: geometric mean {geo:.4f}, largest {max(measured_auto):.3f}")
    if args.auto_against:
        fixed = {k: int(v) for k, v in (item.split("=") for item in args.auto_against.split(","))}
        gains = []
        for (spec, B, T), ms in sorted(times.items()):
            if spec not in fixed or not {"auto", "recurrent", "chunked"} <= ms.keys():
                continue
            then = ms["recurrent"] if T <= fixed[spec] else ms["chunked"]
            # Only where the two runs took different paths (their times differ
            # by more than the replays' spread).
            if abs(then / ms["auto"] - 1) > 0.03:
                gains.append(then / ms["auto"])
        if gains:
            geo = math.exp(sum(map(math.log, gains)) / len(gains))
            print(f"auto against the fixed limits, {len(gains)} calls on another path: "
                  f"fixed / auto geometric mean {geo:.3f}, range {min(gains):.3f}-{max(gains):.3f}, "
                  f"slower in {sum(g < 1 for g in gains)}")
    if over_best:
        geo = math.exp(sum(map(math.log, over_best)) / len(over_best))
        print(f"per batch over the faster path, {len(over_best)} calls: geometric mean {geo:.4f}; "
              "largest " + ", ".join(f"{r:.3f} ({s} B {B} T {T})"
                                     for r, s, B, T in sorted(worst)[-3:]))


if __name__ == "__main__":
    main()
