#!/usr/bin/env python3
"""A kernel's PTX instructions counted phase by phase, a phase being the
code between two block barriers (bar.sync), by class (mma, ldmatrix,
shared and global loads and stores, cp.async, fp32 arithmetic, ex2, the
rest): where a kernel's issue goes before any profile.

    build/bin/linattn-opt SPEC --linattn-to-nvvm='format=isa max-unroll=256' \\
      | /usr/bin/python3 test/lib/extract_ptx.py \\
      | /usr/bin/python3 scripts/ptx_phases.py [--kernel N]

Reads extract_ptx.py's output (stdin or a path); --kernel picks the N-th
gpu.binary (from 0; default: every one). max-unroll=256 is
linattn-compile's default (without it the kernels' short loops stay
loops). Counts are static: a branch's
instructions count once whichever threads run them. With --live, each
barrier also gets the number of PTX virtual registers live across it (a
value defined before it and used after), by kind (%rd 64-bit, %r 32-bit,
%p predicates): what the PTX keeps for ptxas to allocate, not what ptxas
allocates. Standard library only.
"""
import argparse
import re
import sys

CLASSES = [("mma", "mma"), ("ldmatrix", "ldmatrix"), ("ld.shared", "lds"),
           ("st.shared", "sts"), ("ld.global", "ldg"), ("st.global", "stg"),
           ("cp.async", "cp.async"), ("ex2", "ex2")]
FP32 = re.compile(r"^(fma|add|sub|mul|neg)\.[\w.]*f32$")


def instruction_class(line):
    op = line.split()[0]
    for prefix, name in CLASSES:
        if op.startswith(prefix):
            return name
    return "fp32" if FP32.match(op) else "other"


REGISTER = re.compile(r"%(?:rd|r|rs|f|fd|p)\d+")


def live_across_barriers(lines):
    """Per bar.sync in `lines`, {register kind: count} of the virtual
    registers defined before it and used after it. A line's defined
    registers are its first operand (or the braced list an mma or a vector
    load writes); stores, branches and predicated lines define none."""
    defined, last_use, barriers = {}, {}, []
    for i, line in enumerate(lines):
        if line.startswith("bar.sync"):
            barriers.append(i)
        regs = REGISTER.findall(line)
        if not regs:
            continue
        op = line.split()[0]
        if line.startswith("@") or op.startswith(("st.", "bar", "cp.async", "stmatrix")):
            defs = []
        elif line.split()[1].startswith("{"):
            defs = REGISTER.findall(line[line.index("{"):line.index("}")])
        else:
            defs = regs[:1]
        for r in regs[len(defs):]:
            last_use[r] = i
        for r in defs:
            defined.setdefault(r, i)
    out = []
    for b in barriers:
        kinds = {}
        for r, d in defined.items():
            if d < b < last_use.get(r, -1):
                kind = re.match(r"%([a-z]+)", r).group(1)
                kinds[kind] = kinds.get(kind, 0) + 1
        out.append(kinds)
    return out


def instruction_lines(ptx):
    body = ptx[ptx.index("{", ptx.index(".entry")):]
    return [line for line in (raw.strip() for raw in body.splitlines())
            if line and not line.startswith((".reg", "//", "{", "}", "$L"))
            and not line.endswith(":")]


def phases(ptx):
    """Per phase, (instructions, {class: count})."""
    out, current = [], []
    for line in instruction_lines(ptx):
        current.append(line)
        if line.startswith("bar.sync"):
            out.append(current)
            current = []
    out.append(current)
    result = []
    for phase in out:
        counts = {}
        for line in phase:
            name = instruction_class(line)
            counts[name] = counts.get(name, 0) + 1
        result.append((len(phase), counts))
    return result


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("ptx", nargs="?", help="extract_ptx.py's output (default: stdin)")
    p.add_argument("--kernel", type=int, default=None)
    p.add_argument("--live", action="store_true",
                   help="also the virtual registers live across each barrier")
    args = p.parse_args()
    text = open(args.ptx).read() if args.ptx else sys.stdin.read()
    kernels = re.split(r"^// gpu\.binary @(\w+)\n", text, flags=re.M)[1:]
    if not kernels:
        sys.exit("ptx_phases.py: no '// gpu.binary @NAME' sections (extract_ptx.py's output)")
    if args.kernel is not None and not 0 <= args.kernel < len(kernels) // 2:
        sys.exit(f"ptx_phases.py: --kernel {args.kernel}, but the input has "
                 f"{len(kernels) // 2} kernels")
    for i in range(0, len(kernels), 2):
        if args.kernel is not None and i // 2 != args.kernel:
            continue
        name, ptx = kernels[i], kernels[i + 1]
        result = phases(ptx)
        live = live_across_barriers(instruction_lines(ptx)) if args.live else []
        print(f"kernel {i // 2} @{name}: {sum(n for n, _ in result)} instructions, "
              f"{len(result)} phases")
        for j, (n, counts) in enumerate(result):
            detail = ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda x: -x[1]))
            print(f"  phase {j:2d}: {n:5d}  ({detail})")
            if j < len(live):
                kinds = ", ".join(f"%{k} {v}" for k, v in sorted(live[j].items()))
                print(f"  barrier {j:2d}: {sum(live[j].values())} live ({kinds})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
