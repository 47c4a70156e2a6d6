set -uo pipefail
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 200 python -m pytest -p no:cacheprovider -n 8 -rf -m gpu tests/test_tma_gpu.py tests/test_tensor_descriptor.py 2>&1 | tee $OUT/gpu_tma.log | tail -25
timeout 150 python benchmarks/bench_tma_matmul.py 2>&1 | tee $OUT/tma.log | tail -12
