#!/usr/bin/env python3
"""Summarises Nsight Compute's per-instruction source page, kernel by kernel.

Input: `ncu --import R.ncu-rep --page source --csv --print-source sass`
(SourceCounters collected; kernel_times.py --ncu --ncu-report runs both).
For each kernel: warp instructions executed and stall samples by opcode,
the stall reasons' shares, and the instructions with the most samples:
    ncu_source_summary.py source.csv[.gz] [TOP=25]
(how NOTES c31 found the state pass's element-wise loads and exp wrappers).
With --per-step N instead: the opcodes of the instructions executed exactly
N times, i.e. a loop body's instructions once a step when N is the blocks x
warps x steps that run it (the state pass's compute warps at B 4, H 8, T
4096: 128 x 4 x 64 = 32768), side by side for several reports:
    ncu_source_summary.py --per-step 32768 a.csv.gz b.csv.gz
"""
import collections
import csv
import gzip
import sys

SAMPLES = "Warp Stall Sampling (All Samples)"
EXECUTED = "Instructions Executed"


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def kernels(rows):
    """(name, header, rows as dicts) per kernel: each starts with a
    "Kernel Name" row, then its column header."""
    i = 0
    while i < len(rows):
        if rows[i] and rows[i][0] == "Kernel Name":
            name, header = rows[i][1], rows[i + 1]
            body = []
            i += 2
            while i < len(rows) and not (rows[i] and rows[i][0] == "Kernel Name"):
                if len(rows[i]) == len(header):
                    body.append(dict(zip(header, rows[i])))
                i += 1
            yield name, header, body
        else:
            i += 1


def opcode(source):
    """SASS opcode without modifiers or predicate: "@!P2 FMUL R1, ..." -> FMUL."""
    words = source.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0].split(".")[0] if words else "?"


def read_rows(path):
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        return list(csv.reader(f))


def per_step(executions, paths):
    """Static instructions executed exactly `executions` times, by opcode,
    one column per report (its first kernel)."""
    counts = []
    for path in paths:
        _, _, body = next(kernels(read_rows(path)))
        counts.append(collections.Counter(opcode(b["Source"]) for b in body
                                          if number(b[EXECUTED]) == executions))
    ops = sorted(set().union(*counts), key=lambda op: (-counts[0][op], op))
    print("opcode       " + " ".join(f"{i:>8d}" for i in range(len(paths))))
    for op in ops:
        print(f"{op:12s} " + " ".join(f"{c[op]:8d}" for c in counts))
    print(f"{'total':12s} " + " ".join(f"{sum(c.values()):8d}" for c in counts))
    for i, path in enumerate(paths):
        print(f"{i}: {path}")


def main():
    if sys.argv[1] == "--per-step":
        return per_step(int(sys.argv[2]), sys.argv[3:])
    rows = read_rows(sys.argv[1])
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 25
    for k, (name, header, body) in enumerate(kernels(rows)):
        stalls = [h for h in header if h.startswith("stall_") and "Not Issued" not in h]
        samples = max(sum(number(b[SAMPLES]) for b in body), 1)
        executed = max(sum(number(b[EXECUTED]) for b in body), 1)
        print(f"=== kernel {k} {name}: {len(body)} SASS lines, {samples:.0f} samples, "
              f"{executed:.0f} warp instructions executed")
        ops, op_samples = collections.Counter(), collections.Counter()
        for b in body:
            ops[opcode(b["Source"])] += number(b[EXECUTED])
            op_samples[opcode(b["Source"])] += number(b[SAMPLES])
        print("  opcode     executed (share)  samples (share)")
        for op, n in ops.most_common(22):
            print(f"   {op:10s} {n:12.0f} {n / executed:6.1%}  {op_samples[op] / samples:6.1%}")
        reasons = collections.Counter()
        for b in body:
            for s in stalls:
                reasons[s] += number(b[s])
        print("  stalls:", ", ".join(f"{s[len('stall_'):]} {v / samples:.1%}"
                                     for s, v in reasons.most_common(8)))
        print("  instructions with the most samples (share, main reason, executed, SASS):")
        for b in sorted(body, key=lambda b: -number(b[SAMPLES]))[:top]:
            reason = max(stalls, key=lambda h: number(b[h]))[len("stall_"):]
            print(f"   {number(b[SAMPLES]) / samples:6.2%} {reason:12s} {number(b[EXECUTED]):9.0f}  "
                  f"{b['Source'][:90]}")


if __name__ == "__main__":
    main()
