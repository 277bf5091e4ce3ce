#!/usr/bin/env bash
# Run from the repository root with HW=path/to/gpunvme-hw; packed into $OUT/target-runs-ID.tar.gz.
# One machine instance: a calibration with no strategy in it for bam_ticket's wait when several
# of its warps share an SM. The GPU-resident target (8 SMs, 32 serving warps) and its
# controller-only feeder, one warp per queue at depth 32 (a full batch a round, as bam_ticket's
# 32 lanes submit), packed 1, 2, 4 and 8 warps to a block (--feed-warps-per-block), each waiting
# for its round either with bam_ticket's completion code (--feed-wait cq_scan: CID = SQ slot,
# CqScan's predicate own_cqe_waiting per waiting lane, then scan_cq, whose lock winner moves the
# CQ head and rings its doorbell) or, as the control, with each lane polling its own CQ slot
# (own_slot). Each case reports the target's mean batch time and the feeders' round time, and
# their difference, the wait beyond the batch. Untraced, in rounds until DEADLINE_S; each round
# runs every queue count in QUEUES (default "8 32": 8 and 32 feeder warps), the packings' order
# rotating and the two waits' order alternating by round; --seed is the round. Then, per queue
# count, PROFILES (default 3) op-profile runs of the cq_scan wait (--trace 3: the feeder warps'
# time by platform call, as the strategy cases' op profiles; run files p-k*-s*.json).
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/target_runs_lib.sh"
target_runs_begin "${1:-}"
for r in $(seq 1 ${ROUNDS:-10}); do
  [ "$(el)" -gt "${DEADLINE_S:-240}" ] && { echo "deadline before round $r at $(el)s"; break; }
  order=$(rotated $r ${PACKINGS:-1 2 4 8} | paste -sd,)
  waits="cq_scan,own_slot"
  [ $((r % 2)) = 0 ] && waits="own_slot,cq_scan"
  for k in ${QUEUES:-8 32}; do
    one "f-k$k-r$r" --target gpu --controller-only 32 --queues $k --entries 256 \
      --ios $(( k * ${IOS_PER_QUEUE:-8192} )) --timeout-s 20 --seed $r \
      --feed-warps-per-block $order --feed-wait $waits
  done
  echo "round $r done at $(el)s"
done
for k in ${QUEUES:-8 32}; do
  for seed in $(seq 1 ${PROFILES:-3}); do
    one "p-k$k-s$seed" --target gpu --controller-only 32 --queues $k --entries 256 \
      --ios $(( k * ${IOS_PER_QUEUE:-8192} )) --timeout-s 20 --seed $seed --trace 3 \
      --feed-warps-per-block 1,2,4,8 --feed-wait cq_scan
  done
done
target_runs_end
target_runs_pack
