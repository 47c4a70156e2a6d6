set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 330 python -m pytest -p no:cacheprovider -n 8 -q -rf -m gpu tests 2>&1 | tee $OUT/gpu_all.log | grep -E "FAILED|ERROR|passed|failed" | tail -30
for t in 07_fused_attention 08_low_memory_dropout 09_layer_norm_backward; do timeout 90 python tutorials/$t.py > $OUT/tut_$t.log 2>&1; echo "$t rc=$?"; grep -iE "error|GB/s|TFLOP|\|" $OUT/tut_$t.log | grep -v "^ *%\|tt\.\|scf\.\|arith\." | tail -14; done
timeout 150 python benchmarks/bench_attention.py --seq 1024 4096 2>&1 | grep "|" | tee $OUT/attn.log
