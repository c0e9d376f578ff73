#!/usr/bin/env python3
"""The model-shape matrix's newest time per row, merged from several runs
(bench/README.md "Where it stands"):

    /usr/bin/python3 bench/gpu/where_it_stands.py [--check DOC.md] RUN.json[:REGEX] ...

RUN.json: reports of bench/gpu/model_matrix.py, oldest first; a later run's
row (same spec, B, T) replaces an earlier one's. With :REGEX only the rows
whose "spec B T" it matches are taken from that run (a row of a form not
kept left out). Prints the markdown table in the matrix's row order, each
row with the run it comes from (the file's name less model_matrix_), then
the rows with both times, their geometric mean of fla / LinAttn and the
rows where LinAttn is slower. With --check DOC.md it prints nothing of
that but whether DOC.md holds the same table and summary line (the lines
from the table's header to the summary), and fails if not
(test/Docs/where-it-stands.test keeps bench/README.md's so). Standard
library only.
"""
import json
import math
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def matrix_order():
    """(spec, B, T) -> position in bench/gpu/model_shapes.py's ROWS."""
    from model_shapes import ROWS
    return {(spec, B, T): i for i, (spec, B, T, _) in enumerate(ROWS)}


HEADER = "| spec | B | T | LinAttn ms | fla ms | fla/LinAttn | run |"


def table(runs):
    """The merged table's lines, header to summary."""
    newest = {}
    for arg in runs:
        path, _, regex = arg.partition(":")
        run = os.path.basename(path)[:-len(".json")].removeprefix("model_matrix_")
        for row in json.load(open(path))["rows"]:
            if "linattn_ms" not in row or (regex and not re.search(regex, f"{row['spec']} {row['B']} {row['T']}")):
                continue
            newest[(row["spec"], row["B"], row["T"])] = (row, run)
    order = matrix_order()
    keys = sorted(newest, key=lambda key: (order.get(key, len(order)), key))
    lines = [HEADER, "|---|---|---|---|---|---|---|"]
    ratios = []
    for key in keys:
        row, run = newest[key]
        fla = row.get("fla_ms")
        ratio = fla / row["linattn_ms"] if fla else None
        if ratio:
            ratios.append(ratio)
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {row['linattn_ms']:.3f} | "
                     f"{f'{fla:.3f}' if fla else '-'} | {f'{ratio:.2f}' if ratio else '-'} | {run} |")
    geomean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    lines += ["", f"{len(ratios)} rows with both times: geometric mean {geomean:.2f}; LinAttn slower in "
              f"{sum(r < 1 for r in ratios)}, by more than 10% in {sum(r < 1 / 1.1 for r in ratios)}."]
    return lines


def main():
    args = sys.argv[1:]
    doc = None
    if args[:1] == ["--check"]:
        doc, args = args[1], args[2:]
    if not args:
        sys.exit(__doc__)
    lines = table(args)
    if not doc:
        print("\n".join(lines))
        return 0
    text = open(doc).read().split("\n")
    at = text.index(HEADER) if HEADER in text else -1
    held = text[at:at + len(lines)] if at >= 0 else []
    if held == lines:
        print(f"{doc}: the table and its summary match ({len(lines) - 4} rows)")
        return 0
    print(f"{doc}: the table differs from the runs' merge; made:")
    for made, was in zip(lines, held + [""] * len(lines)):
        if made != was:
            print(f"  {made}\n    (the doc: {was})")
    return 1


if __name__ == "__main__":
    sys.exit(main())
