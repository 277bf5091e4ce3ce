#!/usr/bin/env bash
# One machine instance (DIR=... OUT=... bash tests/hardware/run_shared_queue_reaping.sh ID; DIR
# holding shared_queue_reaping built with nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -I.
# from tests/hardware/shared_queue_reaping.cu, OUT the folder for the results):
# tests/hardware/shared_queue_reaping.cu three times, with the instance record and nvidia-smi clocks.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/target_runs_lib.sh"
id="${1:?instance id}"
d="${DIR:?set DIR to the folder holding the program}"
bin=$d/shared_queue_reaping
{
echo "instance $id"
instance_record
echo "binary $bin $(md5sum < "$bin" | cut -c1-12)"
} > $OUT/instance.txt 2>&1
cat $OUT/instance.txt
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv -lms 200 > $OUT/smi.csv 2>&1 &
smi=$!
if ! timeout 60 $bin $OUT/sqr-1.json > $OUT/sqr-1.log 2>&1; then
  echo "prebuilt binary failed: building here"; tail -3 $OUT/sqr-1.log
  nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -I. -o /tmp/sqr tests/hardware/shared_queue_reaping.cu && bin=/tmp/sqr
  echo "built_here 1" >> $OUT/instance.txt
  timeout 60 $bin $OUT/sqr-1.json > $OUT/sqr-1.log 2>&1
fi
echo "run 1 rc $? $(date -u +%H:%M:%S)"
for r in 2 3; do timeout 60 $bin $OUT/sqr-$r.json > $OUT/sqr-$r.log 2>&1; echo "run $r rc $? $(date -u +%H:%M:%S)"; done
kill $smi
echo "finished_utc $(date -u +%Y-%m-%dT%H:%M:%SZ)" >> $OUT/instance.txt
cat $OUT/sqr-1.log $OUT/sqr-2.log $OUT/sqr-3.log
