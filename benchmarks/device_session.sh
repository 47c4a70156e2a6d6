#!/usr/bin/env bash
# One batch on a lent GPU machine: the GPU tests, then the benchmarks against Triton and PyTorch.
# Usage (from the repository root): bash benchmarks/device_session.sh [tests|bench|matmul|all] [pytest args...]
#        bash benchmarks/device_session.sh triton DIR SECONDS NAME...   (Triton's tutorials in DIR, tile and Triton)
# Logs and JSON go to $OUT (or ./.device_out); the short tables are printed last.
set -uo pipefail
out="${OUT:-.device_out}"
mkdir -p "$out"
what="${1:-all}"
shift || true
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$out/device.txt"
if [[ "$what" == tests || "$what" == all ]]; then
    timeout 360 python -m pytest -q -p no:cacheprovider --maxfail=40 -rf "$@" -m gpu tests 2>&1 | tee "$out/gpu_tests.log" | tail -40
    timeout 120 python -m pytest -q -p no:cacheprovider -rf tests/test_tutorials.py 2>&1 | tee "$out/tutorials.log" | tail -8
fi
if [[ "$what" == matmul || "$what" == all ]]; then
    timeout 300 python benchmarks/bench_matmul.py --json "$out/matmul.json" 2>&1 | tee "$out/matmul.log" | tail -15
fi
if [[ "$what" == triton ]]; then
    dir="$1" seconds="$2"
    shift 2
    mkdir -p /tmp/tutorial_logs
    python benchmarks/run_triton_tutorials.py "$dir" --timeout "$seconds" --only "$@" --logs /tmp/tutorial_logs \
        --out "$out/triton_tutorials_$(echo "$@" | tr ' ' '_').md"
    tar czf "$out/tutorial_logs_$(echo "$@" | tr ' ' '_').tgz" -C /tmp tutorial_logs
fi
if [[ "$what" == bench || "$what" == all ]]; then
    timeout 150 python benchmarks/bench_runtime.py --json "$out/runtime.json" 2>&1 | tee "$out/runtime.log" | tail -14
    timeout 300 python benchmarks/bench_bandwidth.py --json "$out/bandwidth.json" 2>&1 | tee "$out/bandwidth.log" | tail -15
fi
