#!/usr/bin/env python3
"""Ratios of measured times between strategy-grid rows (bench/gpu/
strategy_grid.py run's JSON lines), grouped, as bench/NOTES.md quotes them:

    /usr/bin/python3 bench/gpu/compare_rows.py NEW.jsonl --against OLD.jsonl \\
        [--strategy chunked] [--by B|spec|T|long] [--B 256] [--spec gdn_h8]
        NEW's time over OLD's for each (spec, B, T) of the strategy both have
    /usr/bin/python3 bench/gpu/compare_rows.py ROWS.jsonl --pair chunked/single \\
        [--by B|spec|T|long] [--B ...] [--spec ...]
        one strategy's time over the other's in the same file

Per group: the rows, the geometric mean and the range of the ratio (--by
long: T below 1024 against T >= 1024), over the rows of --B and --spec
where given. Standard library only.
"""
import argparse
import collections
import json
import math


def load(path):
    times = {}
    for line in open(path):
        r = json.loads(line)
        if "ms" in r:
            times[(r["spec"], r["B"], r["T"], r["strategy"])] = r["ms"]
    return times


def group_of(by, spec, B, T):
    return {"B": B, "spec": spec, "T": T, "long": "T >= 1024" if T >= 1024 else "T < 1024"}[by]


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("rows")
    p.add_argument("--against", help="the rows to divide by (same strategy)")
    p.add_argument("--strategy", default="chunked", help="with --against: the strategy compared")
    p.add_argument("--pair", help="NUM/DEN: two strategies of ROWS")
    p.add_argument("--by", default="B", choices=("B", "spec", "T", "long"))
    p.add_argument("--B", type=int, help="only the rows of this batch")
    p.add_argument("--spec", help="only the rows of this spec")
    args = p.parse_args()
    if bool(args.against) == bool(args.pair):
        p.error("give one of --against and --pair")
    rows = {k: ms for k, ms in load(args.rows).items()
            if (args.B is None or k[1] == args.B) and (args.spec is None or k[0] == args.spec)}
    ratios = collections.defaultdict(list)
    if args.against:
        old = load(args.against)
        for (spec, B, T, strategy), ms in rows.items():
            if strategy == args.strategy and (spec, B, T, strategy) in old:
                ratios[group_of(args.by, spec, B, T)].append(ms / old[(spec, B, T, strategy)])
    else:
        num, den = args.pair.split("/")
        for (spec, B, T, strategy), ms in rows.items():
            if strategy == num and (spec, B, T, den) in rows:
                ratios[group_of(args.by, spec, B, T)].append(ms / rows[(spec, B, T, den)])
    if not ratios:
        raise SystemExit("no rows in common")
    for group, values in sorted(ratios.items()):
        geo = math.exp(sum(map(math.log, values)) / len(values))
        print(f"{args.by} {group}: {len(values)} rows, geometric mean {geo:.3f}, "
              f"range {min(values):.3f}-{max(values):.3f}")


if __name__ == "__main__":
    main()
