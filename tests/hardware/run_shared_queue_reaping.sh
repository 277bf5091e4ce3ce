#!/usr/bin/env bash
# One machine instance (DIR=... OUT=... bash tests/hardware/run_shared_queue_reaping.sh ID; DIR
# holding shared_queue_reaping built with nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -I.
# from tests/hardware/shared_queue_reaping.cu, OUT the folder for the results):
# tests/hardware/shared_queue_reaping.cu three times, with the instance record and nvidia-smi clocks.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/target_runs_lib.sh"
program_runs_begin "${1:-}" shared_queue_reaping tests/hardware/shared_queue_reaping.cu
cat $OUT/instance.txt
clock_log_start
for r in 1 2 3; do program_run sqr $r 60; done
program_runs_end
cat $OUT/sqr-1.log $OUT/sqr-2.log $OUT/sqr-3.log
