#!/usr/bin/env bash
# Run from the repository root with HW=path/to/gpunvme-hw; packed into $OUT/target-runs-ID.tar.gz.
# One machine instance: does bam_ticket's wait beyond the target's batch time (15.9 us per round at
# 8 warps, 1.2 us at 1 warp on the H200, hw-gpu-target-perrole-h200-2026-11-28) come from its warps
# sharing one SM (8 warps in one 256-thread block) or from the queues being busy at once? The
# GPU-resident target (8 SMs, 32 serving warps), per-role kernels, bam_ticket and warp_batch (whose
# wait does not grow) at 1, 8 and 32 warps with 256-thread blocks (8 warps to a block, as the
# committed runs) and with 32-thread blocks (one warp to a block, so on separate SMs), untraced, in
# rounds until DEADLINE_S, the block size's order alternating by round; a controller-only run at
# k = 8 and 32, depth 32, every other round as the reference of the target's batch; then one
# op-profile run (--trace 3) per block size. SIZES="32 64 128 256" and STRATEGIES=... WARPS=...
# widen it (the block sizes' order rotates by round); the defaults are the runs of instance h200-p.
# TRACES="3 2" adds per-stage runs (--trace 2: each stage's mean time, seeds 1..TRACE_SEEDS) per
# block size after the op-profile runs; ROUNDS=0 runs those alone. BACKOFFS="0 500 2000" repeats
# the strategy runs with each --poll-backoff-ns (a waiting warp's __nanosleep between polls; tags
# gain -bN where N is not 0).
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/target_runs_lib.sh"
target_runs_begin "${1:-}"
for r in $(seq 1 ${ROUNDS:-12}); do
  [ "$(el)" -gt "${DEADLINE_S:-150}" ] && { echo "deadline before round $r at $(el)s"; break; }
  for tpb in $(rotated $r ${SIZES:-256 32}); do
    for b in ${BACKOFFS:-0}; do
      tag="s-tpb$tpb-r$r"
      [ "$b" = 0 ] || tag="s-tpb$tpb-b$b-r$r"
      one "$tag" --target gpu --kernel per-role --strategies ${STRATEGIES:-bam_ticket,warp_batch} --warps ${WARPS:-1,8,32} \
        --threads-per-block $tpb --ios 65536 --timeout-s 30 --trace 0 --seed $r --poll-backoff-ns $b
    done
  done
  if [ $((r % 2)) = 1 ]; then
    for k in 8 32; do
      one "g-k$k-r$r" --target gpu --controller-only 32 --queues $k --entries 256 --ios 65536 --timeout-s 20 --seed $r
    done
  fi
  echo "round $r done at $(el)s"
done
for trace in ${TRACES:-3}; do
  for tpb in ${SIZES:-256 32}; do
    for seed in $(seq 1 ${TRACE_SEEDS:-1}); do
      tag="p-tpb$tpb"
      [ "$trace" = 3 ] || tag="t$trace-tpb$tpb-s$seed"
      [ "$trace" = 3 ] && [ "$seed" -gt 1 ] && continue
      one "$tag" --target gpu --kernel per-role --strategies ${STRATEGIES:-bam_ticket,warp_batch} --warps ${WARPS:-1,8,32} \
        --threads-per-block $tpb --ios 65536 --timeout-s 30 --trace $trace --seed $seed
    done
  done
done
target_runs_end
target_runs_pack
