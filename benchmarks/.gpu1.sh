set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 240 python -m pytest -p no:cacheprovider -n 8 -rf -m gpu tests/test_attention_gpu.py tests/test_dropout_gpu.py tests/test_layer_norm_backward_gpu.py tests/test_tma_gpu.py tests/test_profiler.py tests/test_tensor_descriptor.py tests/test_attention.py 2>&1 | tee $OUT/gpu_new.log | tail -25
timeout 100 python benchmarks/bench_tma_matmul.py 2>&1 | tee $OUT/tma.log | tail -12
timeout 200 python benchmarks/bench_attention.py --seq 1024 4096 2>&1 | tee $OUT/attn.log | tail -30
