#!/usr/bin/env bash
# One machine instance (DIR=... OUT=... bash tests/hardware/run_shared_queue_turns.sh ID; DIR
# holding shared_queue_turns built with nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -I.
# and its source, OUT the folder for the results): tests/hardware/shared_queue_turns.cu three
# times, with the instance record and nvidia-smi clocks.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/target_runs_lib.sh"
program_runs_begin "${1:-}" shared_queue_turns
cat $OUT/instance.txt
clock_log_start
for r in 1 2 3; do program_run sqt $r 120; done
program_runs_end
cat $OUT/sqt-1.log $OUT/sqt-2.log $OUT/sqt-3.log
