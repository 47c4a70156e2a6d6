set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 200 python -m pytest -p no:cacheprovider -n 8 -rf -m gpu tests 2>&1 | tee $OUT/gpu_all.log | grep -E "FAILED|ERROR|passed|failed" | tail -30
timeout 240 python benchmarks/bench_attention.py --seq 1024 4096 16384 2>&1 | grep "|" | tee $OUT/attn.log
for t in 08_low_memory_dropout 09_layer_norm_backward; do timeout 60 python tutorials/$t.py > $OUT/tut_$t.log 2>&1; echo "$t rc=$?"; grep -A12 -E "low-memory-dropout:|layer-norm-backward:" $OUT/tut_$t.log | grep -v "tt\.\|scf\.\|arith\." | tail -12; done
timeout 60 python benchmarks/bench_tma_matmul.py 2>&1 | tail -3
