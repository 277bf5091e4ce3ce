#!/usr/bin/env bash
# One machine instance (run from the repository root, HW=path/to/gpunvme-hw):
# controller-only runs of the GPU-resident target with k = 1..32 active queues
# (k busy serving warps), depths 1, 8, 32, in rounds (k order rotated, depth
# order reversed every other round); per round also the one-warp-per-SM
# variant (--gpu-target-sms 32) at k = 1, 4, 8, 32 and sleeping feeders
# (--feed-poll-sleep-ns 2000) at k = 1, 32 (odd rounds), and feeder think times
# 0, 20, 40 us at k = 32 (even rounds), each with depths VDEPTHS (default
# 1,8,32), the feeder options where the program has them; rounds start until
# DEADLINE_S. Then the host-thread target at 4 threads, k = 1, 2, 4, 32, depth
# 32, until HOST_DEADLINE_S; then stage-traced strategy runs (TRACE=1).
# nvidia-smi logs clocks every 200 ms throughout. Packed into
# $OUT/target-runs-ID.tar.gz. The committed files
# (configs/measurements/hw-gpu-target-concurrency-*) keep the fields
# scripts/target-concurrency.py reads.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/target_runs_lib.sh"
target_runs_begin "${1:-}"
gap=0; $hw --help 2>&1 | grep -q feed-gap-ns && gap=1
psleep=0; $hw --help 2>&1 | grep -q feed-poll-sleep-ns && psleep=1
ios_for() { local n=$(( 2048 * $1 )); [ $n -lt 8192 ] && n=8192; echo $n; }
ks=(1 2 4 8 16 32)
# The variants' depths: 1,8,32 (depth 32 after two cases in the same process, as the k sweep's
# odd rounds) or 32 alone.
VDEPTHS="${VDEPTHS:-1,8,32}"
for r in $(seq 1 ${ROUNDS:-60}); do
  [ "$(el)" -gt "${DEADLINE_S:-300}" ] && { echo "deadline before round $r at $(el)s"; break; }
  if [ $((r % 2)) = 1 ]; then depths=1,8,32; else depths=32,8,1; fi
  for i in 0 1 2 3 4 5; do
    k=${ks[$(( (i + r - 1) % 6 ))]}
    one "g-k$k-r$r" --target gpu --controller-only $depths --queues $k --entries 256 --ios $(ios_for $k) --timeout-s 20 --seed $r
    if [ $((r % 2)) = 1 ] && { [ $k = 1 ] || [ $k = 4 ] || [ $k = 8 ] || [ $k = 32 ]; }; then
      one "m-k$k-r$r" --target gpu --gpu-target-sms 32 --controller-only $VDEPTHS --queues $k --entries 256 --ios $(ios_for $k) --timeout-s 20 --seed $r
    fi
    if [ $((r % 2)) = 1 ] && [ $psleep = 1 ] && { [ $k = 1 ] || [ $k = 32 ]; }; then
      one "p-k$k-r$r" --target gpu --feed-poll-sleep-ns 2000 --controller-only $VDEPTHS --queues $k --entries 256 --ios $(ios_for $k) --timeout-s 20 --seed $r
    fi
    if [ $((r % 2)) = 0 ] && [ $gap = 1 ] && [ $k = 32 ]; then
      for ns in 0 20000 40000; do
        one "t-g$ns-r$r" --target gpu --feed-gap-ns $ns --controller-only $VDEPTHS --queues 32 --entries 256 --ios 65536 --timeout-s 20 --seed $r
      done
    fi
  done
  echo "round $r done at $(el)s"
done
tar czf "$OUT/target-runs-$id.tar.gz" -C "${TMPDIR:-/tmp}" "target-runs-$id"
for r in $(seq 1 ${HOST_ROUNDS:-20}); do
  [ "$(el)" -gt "${HOST_DEADLINE_S:-360}" ] && { echo "host deadline before round $r at $(el)s"; break; }
  for k in 1 2 4 32; do
    one "h-k$k-r$r" --target host --target-threads 4 --controller-only 32 --queues $k --ios $(ios_for $k) --seed $r
  done
  echo "host round $r done at $(el)s"
done
if [ "${TRACE:-0}" = 1 ]; then
  for s in bam_ticket warp_batch; do
    for tr in 1 2; do
      one "s-${s}-tr$tr" --target gpu --strategies $s --warps 1,8 --ios 65536 --timeout-s 30 --trace $tr --seed 1
    done
  done
fi
target_runs_end
grep 'controller_only' "$log" | head -12
target_runs_pack
