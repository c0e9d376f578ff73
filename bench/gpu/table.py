#!/usr/bin/env python3
"""Prints the markdown tables of bench/README.md from committed results:
    /usr/bin/python3 bench/gpu/table.py bench/results/gpu_bench_chunked.json \
        bench/results/gpu_check_recurrent.json bench/results/gpu_check_chunked.json
"""
import json
import sys

bench = json.load(open(sys.argv[1]))
c = bench["ceilings"]
print(f"Device: {bench['device']}; measured ceilings in the same run: copy "
      f"{c['copy_tb_per_s']} TB/s, bf16 matmul {c['bf16_matmul_tflop_per_s']} TFLOP/s.\n")
Ts = sorted({r["T"] for r in bench["linattn"]})
fams = list(dict.fromkeys(r["family"] for r in bench["linattn"]))
for strategy in dict.fromkeys(r.get("strategy", "recurrent") for r in bench["linattn"]):
    graph = any(r.get("graph") for r in bench["linattn"] if r.get("strategy") == strategy)
    how = ("each run a replay of the call captured in a CUDA graph" if graph
           else "each run a call enqueued on one stream")
    print(f"LinAttn, strategy {strategy}, B = 4, H = 8, K = V = 128, bf16: median ms "
          f"(CUDA events, 20 runs after 3 warm-ups; {how})\n")
    print("| family | " + " | ".join(f"T={t}" for t in Ts) + " |")
    print("|---" * (len(Ts) + 1) + "|")
    for f in fams:
        rows = [x for x in bench["linattn"]
                if x["family"] == f and x.get("strategy", "recurrent") == strategy]
        if not rows:
            continue
        cells = []
        for t in Ts:
            r = next((x for x in rows if x["T"] == t), {})
            cells.append(f"{r['median_ms']:.3f}" if "median_ms" in r else "n/a")
        print(f"| {f} | " + " | ".join(cells) + " |")
    print()
fla = [r for r in bench["fla"] if "median_ms_graph" in r]
if fla:
    fTs = sorted({r["T"] for r in fla})
    print("\nflash-linear-attention 0.5.2 in the same run, chunk forward, CUDA-graph "
          "replay, median ms\n")
    print("| op | " + " | ".join(f"T={t}" for t in fTs) + " |")
    print("|---" * (len(fTs) + 1) + "|")
    for op in dict.fromkeys(r["op"] for r in fla):
        cells = [next((f"{r['median_ms_graph']:.3f}" for r in fla if r["op"] == op and r["T"] == t), "")
                 for t in fTs]
        print(f"| {op} | " + " | ".join(cells) + " |")
for path in sys.argv[2:]:
    check = json.load(open(path))
    worst = {}
    for r in check["rows"]:
        key = r["lib"]
        worst[key] = max(worst.get(key, 0), r.get("rel_err_o", 1), r.get("rel_err_state", 1))
    print(f"\nGPU correctness ({check['device']}, {path.split('/')[-1]}): "
          f"{check['cases'] - check['failures']} passed, "
          f"{check['failures']} failed; worst relative error per library:\n")
    print("| library | worst rel. err (o, state) |")
    print("|---|---|")
    for k in sorted(worst):
        print(f"| {k} | {worst[k]:.2e} |")
