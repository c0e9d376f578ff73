#!/usr/bin/env python3
"""Fits the GPU cost model's constants (include/LinAttn/Transforms/
GPUCostModel.h) to the kernels' measured times (bench/gpu/strategy_grid.py's
JSON lines), and shows the fit against them.

    /usr/bin/python3 bench/gpu/fit_cost_model.py GRID.jsonl [--json FIT.json] [--table]
        [--check-cpp lib/Transforms/GPUCostModel.cpp]
        [--predict "kind=KIND dtype=DT B=.. T=.. H=.. HV=.. K=.. V=.. [qk_l2norm=1]"]

(--check-cpp: fails unless the constants compiled in are this fit's, to the
4 significant digits they are written with. --predict: the fit's estimates
for one call, with the constants rounded as they are compiled in, printed
as --linattn-explain prints GPUCostModel.cpp's: test/Transforms/
gpu-cost-model-fit.test compares the two, so that the formulas, padding
bytes included, are the same on both sides.)

The model (per call, seconds; docs/gpu-strategy.md derives it):

  recurrent  t = r0 + T * (max(r1 + r5 * n, r6 + r2 * B HV K V_b / SMs) + r4 * l2)
                 + r3 * 8 B HV K V
      one launch; per token the longer of a dependent step (r1, and r5 per
      multiply-add a thread chains into its sums: n = K / lanes a column x
      the columns it holds, recurrent_kernel::chainedKeysPerStep) and, with
      more state elements per SM, the step's throughput (r6 + r2 per
      element an SM steps; V_b is V rounded up to the kernel's blocks of
      columns, recurrent_kernel::columnsPerBlock, whose idle columns step
      too), and the norms of q and k where the spec says {qk_l2norm} (l2 =
      1); the f32 state read and written once (r3 per byte).
  chunked    t = c0 + c1 * B T (2 H K' + 2 HV V') e + c2 * 8 B HV K' V'
                 + c3 * ceil(T / 64) * ceil(B HV V' / 32 / SMs) * K' / 128
                   (or c4 * ceil(T / 64) * ceil(B HV V' / 64 / SMs) * K' / 128)
                 + p0 + p1 * (the padding copies' bytes)
      the launches; the streamed q, k, v, o and the intermediates they
      carry (per byte of e-byte inputs); the state; the state pass's chain
      of chunks, one 32-column block per SM (per chunk and wave), or one
      64-column block where the run-time forms take those (c4: V takes
      them and B HV V' is past one wave of 32-column blocks). K' and V'
      are the sizes the kernels run (K and V rounded up to 32: linattn-pad-
      head-dims); where they differ from K and V the padded copies of q, k,
      v, per-key gates and the states and the slices of o and the final
      state are read and written once each (p0 their launches, p1 per
      byte).

Each kernel family (recurrent and chunked, each with and without the delta
rule's rank-1 term, with row gates or per-key ones, 16-bit or f32 inputs)
gets its own constants, by least squares on the relative error (every row
weighs alike), constrained to be >= 0, on the rows without padding (r5
only where the family's rows have more than one n, else 0); p0 and
p1 are one pair for all, fitted next on the padded rows' chunked times less
their family's terms. Standard library and numpy only (/usr/bin/python3 here).
"""
import argparse
import json
import math
import sys

import numpy as np

SMS = 132
DELTA_KINDS = ("delta", "gated_delta", "negeig_delta", "kda")
KEY_GATE_KINDS = ("key_gate", "kda")


HEAD_DIM_MULTIPLE = 32   # chunked_kernels::kHeadDimMultiple (TargetInfo.h)
PADDING = "padding"      # the shared constant's name, a family of its own


def kernel_dim(size):
    """The head size the chunked kernels run `size` at (paddedHeadDim)."""
    return -(-size // HEAD_DIM_MULTIPLE) * HEAD_DIM_MULTIPLE


RECURRENT_BLOCK_THREADS = 128  # recurrent_kernel::kBlockThreads (TargetInfo.h)


def recurrent_lanes(K):
    """recurrent_kernel::lanesPerColumn: 4, 8 where K is above 128 and a
    multiple of 8."""
    return 8 if K > 128 and K % 8 == 0 else 4


def column_sets(K, V):
    """recurrent_kernel::columnSets: two where V is above one set of
    128 / lanes columns."""
    return 2 if V > RECURRENT_BLOCK_THREADS // recurrent_lanes(K) else 1


def chained_keys_per_step(K, V):
    """recurrent_kernel::chainedKeysPerStep: a thread's keys of a column
    times the columns it holds."""
    return K // recurrent_lanes(K) * column_sets(K, V)


def block_columns(K, V):
    """V rounded up to the recurrent kernel's blocks of
    recurrent_kernel::columnsPerBlock columns."""
    per_block = RECURRENT_BLOCK_THREADS // recurrent_lanes(K) * column_sets(K, V)
    return -(-V // per_block) * per_block


STATE_COLUMNS = 32        # chunked_kernels::kStateColumns (TargetInfo.h)
WIDE_STATE_COLUMNS = 64   # chunked_kernels::kWideStateColumns


def wide_state_blocks(B, HV, V):
    """Whether the chunked state pass runs its 64-column blocks, as the
    run-time choice of linattn-widen-state-blocks makes it: V takes them
    (chunked_kernels::hasWideStateBlocks) and B * HV * V is past one wave
    of 32-column blocks (manyChainsStateColumns)."""
    takes = V % WIDE_STATE_COLUMNS == 0 or (V % STATE_COLUMNS == 0 and V >= 7 * STATE_COLUMNS)
    return takes and B * HV * V > STATE_COLUMNS * SMS


def family_of(row):
    return row["strategy"] + ("_delta" if row["kind"] in DELTA_KINDS else "") + (
        "_keygates" if row["kind"] in KEY_GATE_KINDS else "") + (
        "_f32" if row["dtype"] == "f32" else "")


def padding_bytes(row):
    """Bytes the chunked path's padding copies read and write (0 unpadded):
    q and k, per-key gates (f32) and v to the kernels' sizes, o back, the
    initial and final states (f32) both ways."""
    B, T, H, HV, K, V = (row[k] for k in ("B", "T", "H", "HV", "K", "V"))
    Kp, Vp = kernel_dim(K), kernel_dim(V)
    if (Kp, Vp) == (K, V):
        return 0
    e = 4 if row["dtype"] == "f32" else 2
    total = 2 * B * HV * (K * V + Kp * Vp) * 4
    if Kp != K:
        total += 2 * B * T * H * (K + Kp) * e
        if row["kind"] in KEY_GATE_KINDS:
            total += B * T * HV * (K + Kp) * 4
    if Vp != V:
        total += 2 * B * T * HV * (V + Vp) * e
    return total


def features(row):
    """The model's terms for one measured row, and the family it belongs to
    (the padding bytes are apart: padding_bytes)."""
    B, T, H, HV, K, V = (row[k] for k in ("B", "T", "H", "HV", "K", "V"))
    e = 4 if row["dtype"] == "f32" else 2
    family = family_of(row)
    if row["strategy"] == "recurrent":
        return family, [1.0, T, T * B * HV * K * block_columns(K, V) / SMS, 8 * B * HV * K * V,
                        T * bool(row["qk_l2norm"]), T * chained_keys_per_step(K, V)]
    K, V = kernel_dim(K), kernel_dim(V)
    chain = math.ceil(T / 64) * K / 128
    if wide_state_blocks(B, HV, V):
        narrow, wide = 0.0, chain * math.ceil(B * HV * math.ceil(V / WIDE_STATE_COLUMNS) / SMS)
    else:
        narrow, wide = chain * math.ceil(B * HV * math.ceil(V / STATE_COLUMNS) / SMS), 0.0
    return family, [1.0, B * T * (2 * H * K + 2 * HV * V) * e, 8 * B * HV * K * V,
                    narrow, wide]


RECURRENT_TERMS = ("launch", "token step", "token step per state element / SM", "state byte",
                   "token step's in-kernel L2 norm", "token step per chained key",
                   "token step at throughput")
CHUNKED_TERMS = ("launches", "streamed byte", "state byte", "chunk step per wave",
                 "chunk step per wave of 64-column blocks")
PADDING_TERMS = ("padding copies' launches", "padding copies' byte")


def nnls(A, b, iters=200):
    """min |A x - b| with x >= 0: least squares on the free set, dropping
    the most negative coefficient until none is (the columns here are few)."""
    free = list(range(A.shape[1]))
    for _ in range(iters):
        x = np.zeros(A.shape[1])
        sol, *_ = np.linalg.lstsq(A[:, free], b, rcond=None)
        x[free] = sol
        if (sol >= 0).all():
            return x
        free.pop(int(np.argmin(sol)))
    return x


def solve(items):
    """nnls on the relative error of [(features, seconds)]."""
    A = np.array([f for f, _ in items])
    t = np.array([t for _, t in items])
    # Relative error: each row divided by its time. Columns scaled to unit
    # size first so that the solve is well conditioned.
    scale = np.abs(A).max(axis=0)
    scale[scale == 0] = 1
    return nnls(A / scale / t[:, None], np.ones(len(t))) / scale


def recurrent_branch_terms(f, latency):
    """A recurrent row's terms [r0 .. r6] under one branch of the token
    step's max: the dependent step (r1, r5) or the throughput (r6, r2)."""
    one, T, TX, state, Tl2, Tn = f
    if latency:
        return [one, T, 0.0, state, Tl2, Tn, 0.0]
    return [one, 0.0, TX, state, Tl2, 0.0, T]


def recurrent_seconds(c, f):
    """r0 + T (max(r1 + r5 n, r6 + r2 X) + r4 l2) + r3 state."""
    one, T, TX, state, Tl2, Tn = f
    return (c[0] * one + c[3] * state + c[4] * Tl2 +
            max(c[1] * T + c[5] * Tn, c[6] * T + c[2] * TX))


def fit_recurrent(items, batches):
    """The recurrent family's constants: each row is on one branch of the
    max; starting from B = 1's rows on the dependent step and the rest on
    the throughput, the rows are fitted, put on the branch the fit has
    longer, and fitted again until no row moves. The chained keys' share
    of the dependent step is known only where the family's rows vary them
    (the delta rule's K = 48, 64, 80, 128); elsewhere the step stays one
    constant (r5 = 0), not a split that nothing measured."""
    varies = len({f[5] / f[1] for f, _ in items}) > 1
    latency = [B == 1 for B in batches]
    for _ in range(50):
        A = [recurrent_branch_terms(f, on) for (f, _), on in zip(items, latency)]
        if not varies:
            for a in A:
                a[5] = 0.0
        c = solve(list(zip(A, [t for _, t in items]))).tolist()
        moved = [c[1] * f[1] + c[5] * f[5] >= c[6] * f[1] + c[2] * f[2] for f, _ in items]
        if moved == latency:
            break
        latency = moved
    return c


def fit(rows):
    groups, batches = {}, {}
    for r in rows:
        if r["strategy"] == "chunked" and padding_bytes(r):
            continue
        family, f = features(r)
        groups.setdefault(family, []).append((f, r["ms"] * 1e-3))
        batches.setdefault(family, []).append(r["B"])
    constants = {}
    for family, items in groups.items():
        if family.startswith("recurrent"):
            constants[family] = fit_recurrent(items, batches[family])
        else:
            constants[family] = solve(items).tolist()
    # The padding copies' launches and bytes: what the padded rows' chunked
    # times have beyond their family's terms at the kernels' sizes.
    padded = []
    for r in rows:
        copied = padding_bytes(r) if r["strategy"] == "chunked" else 0
        if copied:
            family, f = features(r)
            t = r["ms"] * 1e-3
            padded.append((copied, t - float(np.dot(constants[family], f)), t))
    if padded:
        # Relative to the row's whole time, as the families are fitted.
        A = np.array([[1.0 / t, copied / t] for copied, _, t in padded])
        b = np.array([rest / t for _, rest, t in padded])
        scale = np.abs(A).max(axis=0)
        constants[PADDING] = (nnls(A / scale, b) / scale).tolist()
    return constants


def padding_seconds(constants, row):
    """The padding copies' term of a chunked call (0 unpadded)."""
    bytes_ = padding_bytes(row)
    if not bytes_:
        return 0.0
    launches, per_byte = constants.get(PADDING, [0.0, 0.0])
    return launches + per_byte * bytes_


def predict(constants, row):
    family, f = features(row)
    if row["strategy"] == "recurrent":
        return recurrent_seconds(constants[family], f)
    seconds = float(np.dot(constants[family], f))
    if row["strategy"] == "chunked":
        seconds += padding_seconds(constants, row)
    return seconds


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("grid")
    p.add_argument("--json")
    p.add_argument("--table", action="store_true", help="print every row")
    p.add_argument("--check-cpp", help="GPUCostModel.cpp whose tables must hold this fit")
    p.add_argument("--print-cpp", action="store_true",
                   help="print the fit as GPUCostModel.cpp's tables")
    p.add_argument("--predict", metavar="ROW",
                   help="print the estimates for one call ('kind=... dtype=... B=... ...')")
    args = p.parse_args()
    rows = [json.loads(l) for l in open(args.grid) if l.strip()]
    rows = [r for r in rows if "ms" in r]
    constants = fit(rows)
    if args.predict:
        return print_prediction(constants, args.predict)
    report = {"constants": {}, "rows": [], "crossovers": []}
    for family, x in constants.items():
        terms = (RECURRENT_TERMS if family.startswith("recurrent") else
                 PADDING_TERMS if family == PADDING else CHUNKED_TERMS)
        report["constants"][family] = dict(zip(terms, x))
        print(f"{family}: " + ", ".join(f"{n} {v:.4g}" for n, v in zip(terms, x)))
    errs = {}
    for r in rows:
        pred = predict(constants, r) * 1e3
        rel = pred / r["ms"] - 1
        family = family_of(r) + (" padded" if r["strategy"] == "chunked" and padding_bytes(r)
                                 else "")
        errs.setdefault(family, []).append(abs(rel))
        report["rows"].append(dict(spec=r["spec"], B=r["B"], T=r["T"], strategy=r["strategy"],
                                   measured_ms=r["ms"], model_ms=round(pred, 5)))
        if args.table:
            print(f"{r['spec']:14s} B={r['B']:4d} T={r['T']:5d} {r['strategy']:9s} "
                  f"measured {r['ms']:8.4f} ms  model {pred:8.4f} ms  {100 * rel:+6.1f}%")
    for family, e in errs.items():
        e = np.array(e)
        print(f"{family}: {len(e)} rows, |model / measured - 1| median {np.median(e):.1%}, "
              f"90th percentile {np.percentile(e, 90):.1%}, max {e.max():.1%}")
    # Where recurrent stops being faster: measured and as the model says.
    by = {}
    for r in rows:
        by.setdefault((r["spec"], r["B"]), {}).setdefault(r["T"], {})[r["strategy"]] = r
    for (spec, B), ts in sorted(by.items()):
        both = sorted(T for T, s in ts.items() if len(s) == 2)
        if not both:
            continue
        measured = max([T for T in both if ts[T]["recurrent"]["ms"] < ts[T]["chunked"]["ms"]],
                       default=0)
        model = max([T for T in both if predict(constants, ts[T]["recurrent"])
                     < predict(constants, ts[T]["chunked"])], default=0)
        report["crossovers"].append(dict(spec=spec, B=B, last_recurrent_T_measured=measured,
                                         last_recurrent_T_model=model))
        print(f"{spec:14s} B={B:4d}: recurrent faster up to T = {measured} measured, "
              f"{model} by the model (T measured: {both})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    if args.print_cpp:
        print_cpp(constants, len(rows))
    if args.check_cpp:
        return check_cpp(args.check_cpp, constants)


def format_seconds(seconds):
    """As SelectStrategy.cpp's formatSeconds (without its padding)."""
    return f"{seconds * 1e3:.3f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.1f} us"


def print_prediction(constants, spec):
    """Both strategies' estimates for one call, from the constants as
    GPUCostModel.cpp holds them (4 significant digits)."""
    row = {"qk_l2norm": 0}
    for item in spec.split():
        key, value = item.split("=")
        row[key] = value if key in ("kind", "dtype") else int(value)
    compiled = {family: [float(f"{v:.4g}") for v in x] for family, x in constants.items()}
    estimates = {s: predict(compiled, dict(row, strategy=s)) for s in ("recurrent", "chunked")}
    bytes_ = padding_bytes(row)
    padding = padding_seconds(compiled, row)
    print(f"model at B = {row['B']}, T = {row['T']}: recurrent "
          f"{format_seconds(estimates['recurrent'])}, chunked "
          f"{format_seconds(estimates['chunked'])}, padding {padding * 1e6:.1f} us "
          f"({bytes_} bytes)")
    return 0


def print_cpp(constants, calls):
    """The tables between GPUCostModel.cpp's FITTED CONSTANTS markers."""
    def row(family, x):
        return f'    {{"{family}", ' + ", ".join(f"{v:.4g}" for v in x) + "},"
    print(f"// from the H200 grid ({calls} calls)")
    print("constexpr RecurrentFit kRecurrentFits[] = {")
    for family, x in constants.items():
        if family.startswith("recurrent"):
            print(row(family, x))
    print("};\nconstexpr ChunkedFit kChunkedFits[] = {")
    for family, x in constants.items():
        if family.startswith("chunked"):
            print(row(family, x))
    print("};")
    print("constexpr PaddingFit kPaddingFit = " + row(PADDING, constants.get(PADDING, [0.0, 0.0]))
          .strip().rstrip(",") + ";")


def check_cpp(path, constants):
    """Compares the tables between GPUCostModel.cpp's FITTED CONSTANTS
    markers with the fit: rows {"family", c0, c1, ...}."""
    import re
    text = open(path).read()
    block = text[text.index("BEGIN FITTED CONSTANTS"):text.index("END FITTED CONSTANTS")]
    compiled = {m.group(1): [float(x) for x in m.group(2).split(",")]
                for m in re.finditer(r'\{"(\w+)",\s*([^}]*)\}', block)}
    bad = []
    for family, x in constants.items():
        got = compiled.get(family)
        want = [float(f"{v:.4g}") for v in x]
        if got is None or len(got) != len(want) or any(
                abs(g - w) > 1e-9 * abs(w) + 1e-30 for g, w in zip(got, want)):
            bad.append(f"{family}: compiled {got}, fitted {want}")
    for family in compiled.keys() - constants.keys():
        bad.append(f"{family}: compiled but not fitted")
    for line in bad:
        print(f"{path}: {line}")
    print(f"{path}: {len(constants) - len(bad)} of {len(constants)} families match the fit")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
