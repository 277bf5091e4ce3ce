#!/usr/bin/env bash
# Run from the repository root with HW=path/to/gpunvme-hw; packed into $OUT/target-runs-ID.tar.gz.
# One machine instance: is it the count of serving warps busy during a batch, or the
# run's mean count, that sets the batch time? k = 32, depth 32 (after depths 1 and 8 in the same
# process) with a feeder think time of 40 us, fixed (the feeders' rounds stay aligned, so about
# 32 warps are busy during each batch) or drawn uniformly from [0, 80] us (--feed-gap-random 1:
# the rounds drift apart, so about the run's mean count is busy during a batch), and 20 us alike;
# beside them the k sweep at k = 8, 16, 24, 32 as the reference, in rounds until DEADLINE_S.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/target_runs_lib.sh"
target_runs_begin "${1:-}"
ios_for() { local n=$(( 2048 * $1 )); [ $n -lt 8192 ] && n=8192; echo $n; }
for r in $(seq 1 ${ROUNDS:-20}); do
  [ "$(el)" -gt "${DEADLINE_S:-200}" ] && { echo "deadline before round $r at $(el)s"; break; }
  if [ $((r % 2)) = 1 ]; then depths=1,8,32; else depths=32,8,1; fi
  ks=(8 16 24 32)
  for i in 0 1 2 3; do
    k=${ks[$(( (i + r - 1) % 4 ))]}
    one "g-k$k-r$r" --target gpu --controller-only $depths --queues $k --entries 256 --ios $(ios_for $k) --timeout-s 20 --seed $r
  done
  for v in "40000 0" "40000 1" "20000 0" "20000 1"; do
    set -- $v
    one "$([ $2 = 1 ] && echo r || echo t)-g$1-r$r" --target gpu --feed-gap-ns $1 --feed-gap-random $2 --controller-only 1,8,32 --queues 32 --entries 256 --ios 65536 --timeout-s 20 --seed $r
  done
  echo "round $r done at $(el)s"
done
target_runs_end
target_runs_pack
