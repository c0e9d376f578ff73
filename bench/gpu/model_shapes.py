#!/usr/bin/env python3
"""The model-shape matrix of issue 26: the shapes released models run, one home
for the script that compiles their specs (here, on the MLIR machine) and the
one that times and checks them beside fla (bench/gpu/model_matrix.py, on the
GPU machine).

    bench/gpu/model_shapes.py variants SPEC_DIR
        writes one spec per SPECS entry and prints one variant per line,
        "NAME SPEC [linattn-compile options]" (bench/gpu/prepare.sh's input:
        LINATTN_VARIANTS=bench/gpu/model_shapes.py bench/gpu/prepare.sh DIR)
    bench/gpu/model_shapes.py rows
        prints the rows, one per line

Every spec is compiled with the default strategy (auto: what a user gets);
B and T are dynamic, so one library serves all of a spec's rows.
Standard library only: this runs under /usr/bin/python3 here and under the
GPU machine's python3.
"""
import os
import sys

# Spec id -> what the spec is. kind: the transition kind; family: the
# examples/ name it is written as; H: q/k heads, HV: value heads; dtype of
# q, k, v, o; qk_l2norm: q and k normalised in the op.
SPECS = {
    # Qwen3-Next's Gated DeltaNet layer (16 q/k heads, 32 value heads).
    "qwen3next": dict(kind="gated_delta", family="gated_deltanet", H=16, HV=32, K=128, V=128,
                      dtype="bf16", qk_l2norm=True),
    "gdn_h16_hv64": dict(kind="gated_delta", family="gated_deltanet", H=16, HV=64, K=128,
                         V=128, dtype="bf16", qk_l2norm=False),
    "gdn_h8": dict(kind="gated_delta", family="gated_deltanet", H=8, HV=8, K=128, V=128,
                   dtype="bf16", qk_l2norm=False),
    "gdn_h4_k256": dict(kind="gated_delta", family="gated_deltanet", H=4, HV=4, K=256, V=256,
                        dtype="bf16", qk_l2norm=False),
    "gdn_h8_f32": dict(kind="gated_delta", family="gated_deltanet", H=8, HV=8, K=128, V=128,
                       dtype="f32", qk_l2norm=False),
    "simple_gla_h8_f32": dict(kind="scalar_gate", family="simple_gla", H=8, HV=8, K=128,
                              V=128, dtype="f32", qk_l2norm=False),
    "gla_h8_f32": dict(kind="key_gate", family="gla", H=8, HV=8, K=128, V=128, dtype="f32",
                       qk_l2norm=False),
    "kda_h8_f32": dict(kind="kda", family="kda", H=8, HV=8, K=128, V=128, dtype="f32",
                       qk_l2norm=False),
    # Mamba-2 2.7B's SSD layer: one shared B/C (k/q) head, 80 value heads,
    # d_state 128, head dim 64; a scalar decay per head and token.
    "mamba2": dict(kind="scalar_gate", family="simple_gla", H=1, HV=80, K=128, V=64,
                   dtype="bf16", qk_l2norm=False),
}
# Head sizes; 48 and 80 (multiples of 16, not of 32) run zero-padded to 64
# and 96 (linattn-pad-head-dims).
for _k, _v in [(32, 32), (64, 64), (96, 96), (160, 160), (192, 192), (224, 224), (128, 64),
               (64, 128), (128, 256), (256, 128), (48, 48), (80, 80)]:
    SPECS[f"gdn_k{_k}_v{_v}"] = dict(kind="gated_delta", family="gated_deltanet", H=8, HV=8,
                                     K=_k, V=_v, dtype="bf16", qk_l2norm=False)
# Every family at its fla counterpart, H = HV = 8, K = V = 128.
for _family, _kind in [("linear_attention", "identity"), ("retnet", "constant_decay"),
                       ("simple_gla", "scalar_gate"), ("gla", "key_gate"), ("deltanet", "delta"),
                       ("deltanet_negeig", "negeig_delta"), ("kda", "kda")]:
    SPECS[f"{_family}_h8"] = dict(kind=_kind, family=_family, H=8, HV=8, K=128, V=128,
                                  dtype="bf16", qk_l2norm=False)

# The rows: (spec id, B, T, what the row stands for).
ROWS = []
for _T in (1024, 4096, 16384, 65536):
    ROWS.append(("qwen3next", 1, _T, "Qwen3-Next prefill"))
ROWS.append(("qwen3next", 8, 2048, "Qwen3-Next prefill"))
for _B in (1, 16, 64, 256):
    for _T in (1, 2, 4, 8):
        ROWS.append(("qwen3next", _B, _T, "Qwen3-Next decode / speculative verify"))
ROWS += [
    ("gdn_h16_hv64", 1, 8192, "GVA 16/64 (FlashInfer's figure)"),
    ("gdn_h8", 1, 32768, "one long sequence"),
    ("gdn_h8", 4, 16384, "the tuned shape, long"),
    ("gdn_h8", 4, 4096, "the tuned shape"),
    ("gdn_h4_k256", 2, 4096, "head size 256"),
    ("gdn_h8_f32", 4, 4096, "f32 inputs"),
    ("simple_gla_h8_f32", 4, 4096, "f32 inputs"),
    ("gla_h8_f32", 4, 4096, "f32 inputs"),
    ("kda_h8_f32", 4, 4096, "f32 inputs"),
    ("mamba2", 1, 8192, "Mamba-2 2.7B prefill"),
    ("mamba2", 8, 2048, "Mamba-2 2.7B prefill"),
]
for _spec in SPECS:
    if _spec.startswith("gdn_k"):
        ROWS.append((_spec, 4, 4096, "head sizes"))
for _spec in SPECS:
    if _spec.endswith("_h8") and _spec != "gdn_h8":
        ROWS.append((_spec, 4, 4096, "family at its fla counterpart"))


def library_name(spec_id):
    return f"mm_{spec_id}"


def write_specs(spec_dir):
    """Writes one spec per SPECS entry; returns {spec id: path}."""
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "..", "test", "lib"))
    import linattn_ref as ref  # numpy: /usr/bin/python3
    os.makedirs(spec_dir, exist_ok=True)
    paths = {}
    for spec_id, s in SPECS.items():
        path = os.path.join(spec_dir, library_name(spec_id) + ".mlir")
        decay = ref.retnet_decay(s["HV"]) if s["kind"] == "constant_decay" else None
        ref.write_spec(path, s["kind"], s["family"], s["dtype"], 1, 1, s["H"], s["HV"], s["K"],
                       s["V"], qk_l2norm=s["qk_l2norm"], decay=decay)
        paths[spec_id] = path
    return paths


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "variants":
        for spec_id, path in write_specs(sys.argv[2]).items():
            print(f"{library_name(spec_id)} {path}")
    elif len(sys.argv) == 2 and sys.argv[1] == "rows":
        for row in ROWS:
            print(*row)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
