#!/usr/bin/env bash
# The host-thread target alone (host feeder threads, no GPU strategy) while W GPU warps sweep its
# 32 CQ rings (--host-pollers W --host-poll sweep), a batch's buffers adjacent (one copy a batch):
# the calibration rows of nvme_ssd copy_op_ring_sweeper_ns (scripts/copy-ring-sweepers.py), as
# hw-controller-under-polls-h100-2026-11-26.json holds them for the H100. One machine instance;
# run from the repository root with HW=path/to/gpunvme-hw; RUNS rounds (default 3), W = 0, 66,
# 132, 264, 528, 1056 in each; tags u-w<W>-r<round>; packed into $OUT/target-runs-ID.tar.gz.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/target_runs_lib.sh"
target_runs_begin "${1:-}"
for r in $(seq 1 "${RUNS:-3}"); do
  for pollers in 0 66 132 264 528 1056; do
    one "u-w$pollers-r$r" --controller-only 8,32,64 --ios 32768 --target-threads 4 --host-pollers "$pollers" \
      --host-poll sweep --scatter-buffers 0 --seed "$r"
  done
  echo "round $r done at $(el)s"
done
target_runs_end
target_runs_pack
