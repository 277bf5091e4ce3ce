#!/usr/bin/env bash
# One machine instance (DIR=... OUT=... bash tests/hardware/run_queue_turns.sh ID; DIR holding the
# program built with nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -I.
# and its source, OUT the folder for the results): tests/hardware/lane_loops_and_turns.cu three times
# (its queue_turns section: all_threads' lane turns on queues shared by the
# 8 warps of an SM), with the instance record and nvidia-smi clocks.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/target_runs_lib.sh"
id="${1:?instance id}"
d="${DIR:?set DIR to the folder holding the program and its source}"
bin=$d/lane_loops_and_turns
{
echo "instance $id"
instance_record
which nvcc; nvcc --version 2>/dev/null | tail -1
} > $OUT/instance.txt 2>&1
cat $OUT/instance.txt
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv -lms 200 > $OUT/smi.csv 2>&1 &
smi=$!
if ! $bin --help >/dev/null 2>&1 && [ $? = 127 ]; then echo "prebuilt binary does not start"; fi
if ! timeout 200 $bin $OUT/llt-1.json > $OUT/llt-1.log 2>&1; then
  echo "prebuilt binary failed: building here"; tail -3 $OUT/llt-1.log
  nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -I. -o /tmp/llt $d/lane_loops_and_turns.cu && bin=/tmp/llt
  echo "built_here 1" >> $OUT/instance.txt
  timeout 200 $bin $OUT/llt-1.json > $OUT/llt-1.log 2>&1
fi
echo "run 1 done $(date -u +%H:%M:%S)"
for r in 2 3; do timeout 150 $bin $OUT/llt-$r.json > $OUT/llt-$r.log 2>&1; echo "run $r rc $? $(date -u +%H:%M:%S)"; done
kill $smi
echo "finished_utc $(date -u +%Y-%m-%dT%H:%M:%SZ)" >> $OUT/instance.txt
grep -E "queue_lane|lane_ticket_turns" $OUT/llt-1.log
grep queue_lane $OUT/llt-2.log $OUT/llt-3.log | grep "backoff   0"
