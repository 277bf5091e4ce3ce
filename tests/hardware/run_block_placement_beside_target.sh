#!/usr/bin/env bash
# One machine instance (DIR=... OUT=... bash tests/hardware/run_block_placement_beside_target.sh ID;
# DIR holding block_placement_beside_target built with
# nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -I. and its source, OUT the folder for
# the results): tests/hardware/block_placement_beside_target.cu twice, with the instance record.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/target_runs_lib.sh"
id="${1:?instance id}"
d="${DIR:?set DIR to the folder holding the program and its source}"
bin=$d/block_placement_beside_target
{
echo "instance $id"
instance_record
echo "binary $bin $(md5sum < "$bin" | cut -c1-12)"
} > $OUT/instance.txt 2>&1
cat $OUT/instance.txt
if ! timeout 60 $bin $OUT/bpt-1.json > $OUT/bpt-1.log 2>&1; then
  echo "prebuilt binary failed: building here"; tail -3 $OUT/bpt-1.log
  nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -I. -o /tmp/bpt $d/block_placement_beside_target.cu && bin=/tmp/bpt
  echo "built_here 1" >> $OUT/instance.txt
  timeout 60 $bin $OUT/bpt-1.json > $OUT/bpt-1.log 2>&1
fi
echo "run 1 rc $? $(date -u +%H:%M:%S)"
timeout 60 $bin $OUT/bpt-2.json > $OUT/bpt-2.log 2>&1; echo "run 2 rc $? $(date -u +%H:%M:%S)"
echo "finished_utc $(date -u +%Y-%m-%dT%H:%M:%SZ)" >> $OUT/instance.txt
cat $OUT/bpt-1.log
