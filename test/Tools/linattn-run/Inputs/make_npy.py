#!/usr/bin/env python3
"""Write (possibly broken) .npy files for the linattn-run tests.

    make_npy.py OUT.npy:D0,D1,... [OUT2.npy:SHAPE ...] [options]

writes a random array of each shape (float32 unless --dtype).  Options apply
to every file:

    --dtype T        numpy dtype T (float16, float64, int32, ...)
    --truncate N     then drop the last N bytes of the file
    --not-npy        write a text file instead (bad magic)
    --fortran        save a Fortran-order array
    --claim-shape S  write a valid header claiming shape S (e.g. huge) but
                     only the data of the real shape
"""

import argparse
import os

import numpy as np

p = argparse.ArgumentParser()
p.add_argument("files", nargs="+", metavar="OUT.npy:SHAPE")
p.add_argument("--dtype", default="float32")
p.add_argument("--truncate", type=int, default=0)
p.add_argument("--not-npy", action="store_true")
p.add_argument("--fortran", action="store_true")
p.add_argument("--claim-shape", default=None)
p.add_argument("--seed", type=int, default=0)
a = p.parse_args()


def shape_of(s):
    return tuple(int(d) for d in s.split(",") if d)


rng = np.random.default_rng(a.seed)
for spec in a.files:
    out, _, shape = spec.rpartition(":") if ":" in spec else (spec, "", "")
    if a.not_npy:
        with open(out, "w") as f:
            f.write("this is not a numpy file\n")
        continue
    x = rng.standard_normal(shape_of(shape)).astype(a.dtype)
    if a.fortran:
        x = np.asfortranarray(x)
    if a.claim_shape is not None:
        claimed = shape_of(a.claim_shape)
        header = "{'descr': '%s', 'fortran_order': False, 'shape': %r, }" % (x.dtype.str, claimed)
        header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
        with open(out, "wb") as f:
            f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode())
            f.write(np.ascontiguousarray(x).tobytes())
    else:
        np.save(out, x)
    if a.truncate:
        size = os.path.getsize(out)
        with open(out, "r+b") as f:
            f.truncate(max(size - a.truncate, 0))
