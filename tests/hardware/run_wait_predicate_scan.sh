#!/usr/bin/env bash
# One machine instance (DIR=... OUT=... [HW=...] bash tests/hardware/run_wait_predicate_scan.sh ID;
# DIR holding wait_predicate_scan built with
# nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -I. and its source, OUT the folder
# for the results): tests/hardware/wait_predicate_scan.cu three times, with the instance record
# and nvidia-smi clocks. With HW naming a gpunvme-hw program, also all_threads against the
# GPU-resident target at 132 and 528 warps, five seeds each, as the validation runs make it
# (32 queues of 256 entries) and at 528 warps with 1,024 entries a queue (no lane waits for a
# slot) and with 66 queues of 256 (one block a queue): hw-<tag>-s<seed>.json.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/target_runs_lib.sh"
program_runs_begin "${1:-}" wait_predicate_scan
[ -n "${HW:-}" ] && echo "hw $HW $(md5sum < "$HW" | cut -c1-12)" >> $OUT/instance.txt
cat $OUT/instance.txt
clock_log_start
for r in 1 2 3; do program_run wps $r 120; done
if [ -n "${HW:-}" ]; then
  w=/tmp/hw-$id; mkdir -p $w
  for s in 1 2 3 4 5; do
    for c in "base132 --warps 132 --queues 32 --entries 256" "base528 --warps 528 --queues 32 --entries 256" \
             "entries1024 --warps 528 --queues 32 --entries 1024" "queues66 --warps 528 --queues 66 --entries 256"; do
      set -- $c; tag=$1; shift
      timeout 60 $HW --out $w/hw-$tag-s$s.json --target gpu --strategies all_threads "$@" --ios 65536 \
        --timeout-s 30 --kernel per-role --trace 0 --seed $s > $w/hw-$tag-s$s.log 2>&1
      echo "hw $tag seed $s rc $? $(date -u +%H:%M:%S)"
    done
  done
  tar czf $OUT/hw-$id.tar.gz -C /tmp hw-$id
fi
program_runs_end
grep -h "" $OUT/wps-1.log
grep -h "lanes: " $OUT/wps-2.log $OUT/wps-3.log
