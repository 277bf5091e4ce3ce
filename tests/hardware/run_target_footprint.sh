#!/usr/bin/env bash
# Run from the repository root with HW=path/to/gpunvme-hw; packed into $OUT/target-runs-ID.tar.gz.
# Footprint against concurrency, one machine instance: depth 32 after depths 1 and 8 in the same
# process, the namespace image's size (--file-mib: 16 MiB fits the L2, 256 the default, 4096
# far beyond it) and the buffers' footprint (--entries: queues x entries x 4 KiB) varied at
# k = 1 and k = 32 busy serving warps, and k = 1 with the I/O count of k = 32; rounds until
# DEADLINE_S. Tags: f-<k>-<entries>-<file MiB>-<ios>-r<round>.
set -uo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/target_runs_lib.sh"
target_runs_begin "${1:-}"
cases=("32 256 256 65536" "32 256 16 65536" "32 64 256 65536" "32 64 16 65536"
       "1 256 256 8192" "1 256 4096 8192" "1 64 16 8192" "1 8192 256 65536" "1 256 256 65536"
       "1 2048 16 65536" "1 2048 256 65536" "1 8192 16 65536")
for r in $(seq 1 ${ROUNDS:-12}); do
  [ "$(el)" -gt "${DEADLINE_S:-150}" ] && { echo "deadline before round $r at $(el)s"; break; }
  mapfile -t order < <(rotated $r "${cases[@]}")
  for c in "${order[@]}"; do
    set -- $c
    one "f-$1-$2-$3-$4-r$r" --target gpu --controller-only 1,8,32 --queues $1 --entries $2 --file-mib $3 --ios $4 --timeout-s 20 --seed $r
  done
  echo "round $r done at $(el)s"
done
target_runs_end
target_runs_pack
