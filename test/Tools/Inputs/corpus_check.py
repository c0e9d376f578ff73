#!/usr/bin/env python3
"""Robustness corpus for linattn-opt and linattn-run: broken example specs.

For every examples/*.mlir this writes broken variants to WORKDIR and runs

    linattn-opt VARIANT
    linattn-run VARIANT --input ... --output o.npy --output s.npy

(the inputs are valid tiny .npy files for that example: B=1, T=2).  Variants:

  * the intact file (control: both tools must succeed);
  * truncations of the code (everything after the leading comment block) at
    every ~7% of its length; a truncated spec is incomplete, so each must be
    rejected by both tools, allowing up to 10% slack per tool;
  * truncations inside the leading comment, and an empty file: what is left
    is an empty module, which linattn-opt accepts and linattn-run must
    reject (no public function);
  * hand-broken variants that must be rejected by both tools: the kind name
    misspelled, the state(...) group missing, an unbalanced parenthesis, an
    unknown element type, random byte garbage in the op, binary garbage,
    invalid UTF-8, a NUL byte inside the kind name, a `)` too many, and the
    return missing.

For every run: the process must not die of a signal (returncode >= 0, and
not 134 / 139 from a shell-reported abort / segfault), and a non-zero exit
must come with a diagnostic containing 'error' on stderr.  Prints one line
per violation and a summary; exits 1 on any violation.
"""

import argparse
import concurrent.futures
import os
import random
import re
import subprocess
import sys
import time

import numpy as np

TRUNC_STEP = 0.07
MIN_REJECT = 0.90


def code_start(text):
    """Offset of the first line that is neither blank nor a // comment."""
    pos = 0
    for line in text.splitlines(keepends=True):
        s = line.strip()
        if s and not s.startswith("//"):
            return pos
        pos += len(line)
    return len(text)


def make_inputs(text, workdir, stem):
    """Valid tiny inputs (B=1, T=2) for the public function's arguments."""
    m = re.search(r"func\.func\s+@\w+\s*\((.*?)\)\s*->", text, re.S)
    types = re.findall(r"%\w+\s*:\s*tensor<([^>]*)>", m.group(1))
    paths = []
    rng = np.random.default_rng(0)
    for i, ty in enumerate(types):
        dims = ty.split("x")[:-1]
        # The examples are [B, T, ...] (q, k, v, gate, beta) or [B, HV, K, V] (state).
        shape, dyn = [], iter((1, 2))
        for d in dims:
            shape.append(next(dyn) if d == "?" else int(d))
        x = 0.1 * rng.standard_normal(shape)
        if re.search(r"gate\(%" + re.escape(re.findall(r"%(\w+)\s*:", m.group(1))[i]) + r"\)", text):
            x = -np.abs(x)  # log-space gate
        p = os.path.join(workdir, f"{stem}.in{i}.npy")
        np.save(p, x.astype(np.float32))
        paths.append(p)
    return paths


def variants(name, data):
    """(label, bytes, kind) with kind in 'valid', 'trunc', 'comment', 'broken'."""
    text = data.decode()
    out = [("intact", data, "valid")]
    start = code_start(text)
    n_code = len(data) - start
    k = 1
    while k * TRUNC_STEP < 0.999:
        cut = start + int(n_code * k * TRUNC_STEP)
        out.append((f"trunc{int(round(k * TRUNC_STEP * 100)):02d}%", data[:cut], "trunc"))
        k += 1
    for frac in (0.3, 0.7):
        cut = int(start * frac)
        out.append((f"comment-trunc{int(frac * 100)}%", data[:cut], "comment"))

    op = re.search(r"linattn\.recurrence\s+(\w+)", text)
    kind = op.group(1)
    broken = {
        "misspelled-kind": text.replace(f"linattn.recurrence {kind}", f"linattn.recurrence {kind[:-1]}x", 1),
        "missing-state": re.sub(r"\s*state\(%\w+\)", "", text, count=1),
        "unbalanced-paren": text.replace("q(%q)", "q(%q", 1),
        "extra-paren": text.replace("k(%k)", "k(%k))", 1),
        "bad-element-type": text.replace("bf16>", "bf17>", 1),
        "missing-return": re.sub(r"\n\s*return [^\n]*", "", text, count=1),
    }
    out += [(label, t.encode(), "broken") for label, t in broken.items()]
    rnd = random.Random(name)
    g = bytearray(data)
    at = op.start()
    for i in range(at, min(at + 200, len(g)), 7):
        g[i] = rnd.randrange(256)
    out.append(("byte-garbage", bytes(g), "broken"))
    out.append(("binary-garbage", bytes(rnd.randrange(256) for _ in range(2048)), "broken"))
    out.append(("invalid-utf8", data[:op.start()] + b"\xff\xfe\xc3(" + data[op.start():], "broken"))
    # A NUL between tokens is whitespace to the MLIR lexer: put it inside the kind name.
    out.append(("nul-in-kind", data[:op.end() - 2] + b"\0" + data[op.end() - 2:], "broken"))
    out.append(("empty", b"", "comment"))
    return out


def run(cmd, timeout):
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "", ""
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--linattn-opt", required=True)
    ap.add_argument("--linattn-run", required=True)
    ap.add_argument("--examples", required=True, help="directory of example .mlir files")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--jobs", type=int, default=min(4, os.cpu_count() or 1))
    ap.add_argument("--timeout", type=float, default=60.0)
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    t0 = time.monotonic()

    tasks = []  # (example, label, kind, tool, cmd)
    files = sorted(f for f in os.listdir(args.examples) if f.endswith(".mlir"))
    if not files:
        print(f"corpus: error: no .mlir files in {args.examples}")
        return 1
    for f in files:
        stem = f[:-5]
        data = open(os.path.join(args.examples, f), "rb").read()
        inputs = make_inputs(data.decode(), args.workdir, stem)
        for label, body, kind in variants(stem, data):
            path = os.path.join(args.workdir, f"{stem}.{label}.mlir")
            with open(path, "wb") as fh:
                fh.write(body)
            tasks.append((f, label, kind, "linattn-opt", [args.linattn_opt, path]))
            cmd = [args.linattn_run, path]
            for i in inputs:
                cmd += ["--input", i]
            cmd += ["--output", path + ".o.npy", "--output", path + ".s.npy"]
            tasks.append((f, label, kind, "linattn-run", cmd))

    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(lambda t: run(t[4], args.timeout), tasks))

    violations = []
    stats = {}  # (tool, kind) -> [rejected, total]
    for (f, label, kind, tool, cmd), (rc, out, err) in zip(tasks, results):
        where = f"{f} [{label}] {tool}"
        st = stats.setdefault((tool, kind), [0, 0])
        st[1] += 1
        if rc is None:
            violations.append(f"{where}: timed out after {args.timeout:.0f} s")
            continue
        if rc < 0 or rc in (134, 139):
            first = next((l for l in err.splitlines() if l.strip()), "")
            violations.append(f"{where}: killed by a signal (returncode {rc}): {first}")
            continue
        if rc != 0:
            st[0] += 1
            if "error" not in err:
                violations.append(f"{where}: exit {rc} without an 'error' diagnostic on stderr: "
                                  f"{err.strip()[:200]!r}")
        want_reject = kind in ("broken", "trunc") or (kind == "comment" and tool == "linattn-run")
        if kind == "valid" and rc != 0:
            violations.append(f"{where}: the intact example failed (exit {rc}): {err.strip()[:300]}")
        if kind in ("broken", "comment") and want_reject and rc == 0:
            violations.append(f"{where}: accepted a broken spec")
        if kind == "comment" and tool == "linattn-opt" and rc != 0:
            violations.append(f"{where}: rejected a comment-only (empty) module: {err.strip()[:200]}")

    for tool in ("linattn-opt", "linattn-run"):
        rej, tot = stats.get((tool, "trunc"), [0, 0])
        if tot and rej / tot < MIN_REJECT:
            violations.append(f"{tool}: rejected only {rej}/{tot} truncated specs (< {MIN_REJECT:.0%})")

    for v in violations:
        print("VIOLATION: " + v)
    summary = ", ".join(f"{tool} {kind} {s[0]}/{s[1]} rejected" for (tool, kind), s in sorted(stats.items()))
    print(f"corpus: {len(files)} examples, {len(tasks)} runs, {len(violations)} violations "
          f"({time.monotonic() - t0:.1f} s): {summary}")
    if violations:
        print("corpus: FAIL")
        return 1
    print("corpus: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
