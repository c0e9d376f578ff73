#!/usr/bin/env python3
"""Runs Inputs/assoc.mlir on fresh random elements and checks that
(a . b) . c equals a . (b . c) to rounding (relative error <= 1e-6), and both
equal the fp64 composition. Usage: check_assoc.py LINATTN_RUN SPEC WORKDIR"""
import os
import subprocess
import sys

import numpy as np

runner, spec, workdir = sys.argv[1:4]
os.makedirs(workdir, exist_ok=True)
seed = int.from_bytes(os.urandom(4), "little")
rng = np.random.default_rng(seed)
failures = 0
for trial in range(5):
    g = -rng.uniform(0.0, 20.0, size=(1, 3, 4)).astype(np.float32)
    kv = (rng.standard_normal((1, 3, 4, 8, 8)) * 3).astype(np.float32)
    np.save(os.path.join(workdir, "g.npy"), g)
    np.save(os.path.join(workdir, "kv.npy"), kv)
    outs = [os.path.join(workdir, f"r{i}.npy") for i in range(4)]
    cmd = [runner, spec, "--input", os.path.join(workdir, "g.npy"),
           "--input", os.path.join(workdir, "kv.npy")]
    for o in outs:
        cmd += ["--output", o]
    subprocess.run(cmd, check=True)
    left_b, right_b, left_g, right_g = (np.load(o).astype(np.float64) for o in outs)
    g64, kv64 = g.astype(np.float64), kv.astype(np.float64)
    exact_b = kv64[0, 0]
    for t in (1, 2):
        exact_b = np.exp(g64[0, t])[:, None, None] * exact_b + kv64[0, t]
    def rel(x, y):
        return np.linalg.norm(x - y) / max(np.linalg.norm(y), 1e-30)
    errs = (rel(left_b, right_b), rel(left_g, right_g), rel(left_b[0], exact_b))
    ok = max(errs) <= 1e-6
    failures += not ok
    print(f"seed={seed} trial={trial} assoc_err_B={errs[0]:.1e} assoc_err_g={errs[1]:.1e} "
          f"err_vs_fp64={errs[2]:.1e} {'OK' if ok else 'FAIL'}")
sys.exit(1 if failures else 0)
