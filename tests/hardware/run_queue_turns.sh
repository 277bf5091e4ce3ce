#!/usr/bin/env bash
# One machine instance (DIR=... OUT=... bash tests/hardware/run_queue_turns.sh ID; DIR holding the
# program built with nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -I.
# and its source, OUT the folder for the results): tests/hardware/lane_loops_and_turns.cu three times
# (its queue_turns section: all_threads' lane turns on queues shared by the
# 8 warps of an SM), with the instance record and nvidia-smi clocks.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/target_runs_lib.sh"
program_runs_begin "${1:-}" lane_loops_and_turns
{ which nvcc; nvcc --version 2>/dev/null | tail -1; } >> $OUT/instance.txt 2>&1
cat $OUT/instance.txt
clock_log_start
program_run llt 1 200
for r in 2 3; do program_run llt $r 150; done
program_runs_end
grep -E "queue_lane|lane_ticket_turns" $OUT/llt-1.log
grep queue_lane $OUT/llt-2.log $OUT/llt-3.log | grep "backoff   0"
