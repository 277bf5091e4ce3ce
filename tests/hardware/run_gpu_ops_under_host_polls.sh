#!/usr/bin/env bash
# One machine instance (DIR=... OUT=... bash tests/hardware/run_gpu_ops_under_host_polls.sh ID;
# DIR holding gpu_ops_under_host_polls built with
# nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -I. -Itests/hardware and its source,
# OUT the folder for the results): tests/hardware/gpu_ops_under_host_polls.cu three times, with
# the instance record.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/target_runs_lib.sh"
program_runs_begin "${1:-}" gpu_ops_under_host_polls
cat $OUT/instance.txt
for r in 1 2 3; do program_run ops $r 120; done
program_runs_end
cat $OUT/ops-1.log
