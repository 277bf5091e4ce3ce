#!/usr/bin/env bash
# The host-thread software target's validation set on one machine instance:
# its calibration runs and the strategy cases they predict, as
# hw-strategies-perrole-h100-2026-11-28 and hw-controller-h100-2026-11-28 hold
# them for the H100. Run from the repository root with HW=path/to/gpunvme-hw
# and DIR=folder holding host_polls_under_copies and warp_host_access (built on
# the workstation with nvcc); packed into $OUT/target-runs-ID.tar.gz.
#
# First the GPU microbenchmarks of the host path that the GPU profile's
# host-poll figures come from (MICRO=0 skips them): host_polls_under_copies
# (warps polling rings in pinned host memory while host threads copy) and
# warp_host_access (one warp's host accesses, with and without other warps
# polling host memory). Then rounds until DEADLINE_S: each round runs the six
# strategies untraced at 1, 8, 32, 132 and 528 warps (one process each, the
# order rotated by round; tags s-<strategy>-r<round>), then the controller-only
# calibration runs at 1, 2 and 4 target threads (host feeder threads, no
# strategy; tags c-t<threads>-r<round>). The first round also takes one op
# profile per strategy (--trace 3; tags p-<strategy>) unless PROFILE=0.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/target_runs_lib.sh"
target_runs_begin "${1:-}"
micro="${DIR:?set DIR to the folder holding host_polls_under_copies and warp_host_access}"
if [ "${MICRO:-1}" != 0 ]; then
  timeout 300 "$micro/host_polls_under_copies" "$w/host-polls-under-copies.json" \
    >"$w/host-polls-under-copies.log" 2>&1
  echo "host_polls_under_copies rc $? at $(el)s"
  timeout 120 "$micro/warp_host_access" "$w/warp-host-access.json" >"$w/warp-host-access.log" 2>&1
  echo "warp_host_access rc $? at $(el)s"
fi
strategies=(all_threads bam_ticket warp_batch warp_batch+polling_warps per_warp_queue io_agents)
for r in $(seq 1 "${ROUNDS:-20}"); do
  [ "$(el)" -gt "${DEADLINE_S:-420}" ] && { echo "deadline before round $r at $(el)s"; break; }
  mapfile -t order < <(rotated "$r" "${strategies[@]}")
  for s in "${order[@]}"; do
    one "s-${s/+/-}-r$r" --strategies "$s" --warps 1,8,32,132,528 --ios 65536 --target-threads 4 \
      --trace 0 --seed "$r"
  done
  for t in 1 2 4; do
    one "c-t$t-r$r" --controller-only 1,2,4,8,16,32,64 --ios 65536 --target-threads "$t" --seed "$r"
  done
  if [ "$r" = 1 ] && [ "${PROFILE:-1}" != 0 ]; then
    for s in "${strategies[@]}"; do
      one "p-${s/+/-}" --strategies "$s" --warps 1,8,32,132,528 --ios 65536 --target-threads 4 \
        --trace 3 --seed 1
    done
  fi
  echo "round $r done at $(el)s"
done
target_runs_end
target_runs_pack
