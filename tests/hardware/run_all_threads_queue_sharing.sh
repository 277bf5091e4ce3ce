#!/usr/bin/env bash
# Run from the repository root with HW=path/to/gpunvme-hw; packed into $OUT/target-runs-ID.tar.gz.
# One machine instance: all_threads against the GPU-resident target (8 SMs, 32 serving warps)
# with every compute block on ONE queue (--queues 1), 1, 2 or 4 blocks of 8 warps (one SM each),
# 4 blocks on a queue of 1,024 entries (no lane waits for an SQ slot) and 4 blocks whose waiting
# warps sleep 1 us between polls (--poll-backoff-ns 1000): the counterpart, with
# the target's data copies, of tests/hardware/shared_queue_reaping.cu's share1/2/4 cases. These
# are strategy runs: checks of a diagnosis, never calibration. 8,192 I/Os per case (8 rounds of
# 32 reads per warp at 32 warps), untraced, seeds 1-5 with the cases' order rotating, then one
# op-profile run (--trace 3) per case.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/target_runs_lib.sh"
target_runs_begin "${1:-}"
cases=("b1 --warps 8" "b2 --warps 16" "b4 --warps 32" "b4e1024 --warps 32 --entries 1024"
       "b4bo1000 --warps 32 --poll-backoff-ns 1000")
n=${#cases[@]}
for r in 1 2 3 4 5; do
  for i in $(seq 0 $((n - 1))); do
    c=(${cases[$(( (i + r - 1) % n ))]})
    tag=${c[0]}; unset 'c[0]'
    one "$tag-r$r" --target gpu --kernel per-role --strategies all_threads --queues 1 --entries 256 \
      --ios 8192 --trace 0 --seed $r --timeout-s 20 "${c[@]}"
  done
  echo "round $r done at $(el)s"
done
for i in $(seq 0 $((n - 1))); do
  c=(${cases[$i]})
  tag=${c[0]}; unset 'c[0]'
  one "$tag-prof" --target gpu --kernel per-role --strategies all_threads --queues 1 --entries 256 \
    --ios 8192 --trace 3 --seed 1 --timeout-s 20 "${c[@]}"
done
target_runs_end
target_runs_pack
