#!/usr/bin/env python3
"""Checks that a compiled library refuses an argument whose data does not
start on a 16-byte boundary, by name, and stays usable (linattn/Abi.h;
linattn-insert-alignment-checks).

For every library in --libdir whose name matches --only (check.py's
naming, <family>[_l2norm][_h<H>]_<dtype>_<K>_<strategy>.so), and for each
of its arguments in turn: the call is made with that argument moved one
element past a 16-byte boundary (a view into a larger buffer; dense, so a
valid descriptor but for its start) and must fail with an error naming
the argument's role and "16-byte boundary"; then the same call with
aligned arguments must succeed with finite outputs (the context was not
left unusable by a misaligned load). Prints one line per case and a final
"N passed, N failed"; exits 1 if any failed.

    python3 bench/gpu/check_alignment.py --libdir /tmp/linattn-libs [--only REGEX]
"""
import argparse
import os
import re
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "torch"))
from check import INPUT_ORDER, make_inputs, parse_library  # noqa: E402
from linattn_torch import Library  # noqa: E402

TORCH_TYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}


def misaligned(t):
    """A dense copy of `t` starting one element past a 16-byte boundary."""
    flat = torch.empty(t.numel() + 16, dtype=t.dtype, device=t.device)
    start = (-(flat.data_ptr() // t.element_size()) % (16 // t.element_size())) + 1
    view = flat[start:start + t.numel()].view(t.shape)
    view.copy_(t)
    assert view.data_ptr() % 16 != 0
    return view


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--libdir", required=True)
    parser.add_argument("--only", default="")
    parser.add_argument("--B", type=int, default=2)
    parser.add_argument("--T", type=int, default=65)
    args = parser.parse_args()
    passed = failed = 0
    gen = torch.Generator(device="cuda")
    gen.manual_seed(7)
    for name in sorted(os.listdir(args.libdir)):
        if not name.endswith(".so") or not re.search(args.only, name):
            continue
        path = os.path.join(args.libdir, name)
        entry, kind, dtype, K, _strategy, _l2norm, H = parse_library(path)
        lib = Library(path)
        arg_types, _ = lib.signature(entry)
        ins = make_inputs(kind, args.B, args.T, K, K, dtype, False, gen, H=H)
        names = [n for n in INPUT_ORDER if n in ins]
        tensors = [ins[n].to(t).contiguous() for n, (t, _) in zip(names, arg_types)]
        for i, role in enumerate(names):
            shifted = list(tensors)
            shifted[i] = misaligned(tensors[i])
            try:
                lib.call(entry, shifted)
                why = "the call succeeded"
            except RuntimeError as error:
                text = str(error)
                why = "" if ("16-byte boundary" in text and f"({role})" in text) else text
            try:
                outs = lib.call(entry, tensors)
                torch.cuda.synchronize()
                if not all(torch.isfinite(o.float()).all() for o in outs):
                    why = why or "the aligned call after it returned non-finite outputs"
            except RuntimeError as error:
                why = why or f"the aligned call after it failed: {error}"
            ok = not why
            passed += ok
            failed += not ok
            print(f"{name:40s} {role:14s} {'OK' if ok else 'FAILED: ' + why}", flush=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
