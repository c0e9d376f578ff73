#!/usr/bin/env bash
# NOTES b16's device command, kept as run. Its objects were prepared here
# with bench/results/chunk_grad_lo_parts_experiment.patch applied and built:
# for each variant v0..v8 of chunk_grad_lo_parts_experiment_h200.json
# ("rounded": R, joined as ",a,b,"), into .carry/lo/$v/round.txt the string
# and
#   LINATTN_EXP_ROUND=",a,b," build/bin/linattn-compile SPEC -o .carry/lo/$v/chk/NAME.o --backward
# for gated_deltanet_bf16_k128v128, deltanet_negeig_bf16, kda_bf16_k128v128
# (bench/gpu/check_backward.py variants) and .carry/lo/$v/bb/gated_deltanet_h8.o
# (bench/gpu/bench_backward.py variants); test/lib/linattn_ref.py to .carry/lo.
# Session 28, call 2: what each split operand's lo part buys in chunk_grad
# (LINATTN_EXP_ROUND experiment): gradients on the same inputs (one seed)
# per variant, then Gated DeltaNet's backward kernel times per variant.
cd "$(dirname "$0")/../.."  # the repository root (it ran as .carry/run6.sh)
R=$OUT/r; mkdir -p $R
start=$SECONDS
OBJECTS=.carry/lo/v0/chk OUT=$R/none timeout 120 bench/gpu/device.sh none > $R/none.txt 2>&1
rt=$(dirname "$(find /tmp/linattn-runtime -name 'liblinattn_cuda_runtime.so' | head -1)")
runner=$(find /tmp/linattn-runtime -name linattn-gpu-run -type f | head -1)
link() { mkdir -p $2; for o in $1/*.o; do c++ -shared -o $2/$(basename $o .o).so $o -L$rt -llinattn_cuda_runtime -Wl,-rpath,$rt -ldl; done; }
for v in v0 v1 v2 v3 v4 v5 v6 v7 v8; do link .carry/lo/$v/chk /tmp/lo/$v/chk; link .carry/lo/$v/bb /tmp/lo/$v/bb; done
echo "linked $((SECONDS-start)) s"
for v in v0 v1 v2 v3 v4 v5 v6 v7 v8; do
  timeout 60 python3 bench/gpu/check_backward.py check --libdir /tmp/lo/$v/chk --runner $runner --seed 12345 \
    --json $R/chk_${v}_T16384.json --only '^gated_deltanet_bf16_k128v128$' --T 16384 --B 1 --hard-T 16384 --memory-T 0 > $R/chk_${v}_T16384.log 2>&1
  timeout 60 python3 bench/gpu/check_backward.py check --libdir /tmp/lo/$v/chk --runner $runner --seed 12345 \
    --json $R/chk_${v}_T4096.json --T 1000,4096 --B 1 --hard-T 1000,4096 --memory-T 0 > $R/chk_${v}_T4096.log 2>&1
  echo "== $v $(cat .carry/lo/$v/round.txt) $((SECONDS-start)) s"; grep -E "T=" $R/chk_${v}_T16384.log $R/chk_${v}_T4096.log | sed 's/.*log://'
  [ $((SECONDS-start)) -gt 400 ] && break
done
for v in v0 v1 v2 v3 v4 v5 v6 v7 v8 v0; do
  [ $((SECONDS-start)) -gt 570 ] && break
  timeout 30 python3 bench/gpu/bench_backward.py run --libdir /tmp/lo/$v/bb --runner $runner --json $R/bb_${v}.json \
    --no-fla --kernel-times --errors-T 0 --rows '^gated_deltanet_h8 4 4096$' > $R/bb_${v}.log 2>&1
  python3 -c "
import json,sys
for l in open('$R/bb_${v}.log'):
    if l.startswith('{'):
        r=json.loads(l); print('$v', r['linattn_backward_ms'], ' '.join(k.split(':')[-1].strip().split()[0] for k in r['kernel_ms']))
"
done
cd $OUT && tar czf r.tgz r && rm -rf r
