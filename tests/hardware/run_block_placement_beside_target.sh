#!/usr/bin/env bash
# One machine instance (DIR=... OUT=... bash tests/hardware/run_block_placement_beside_target.sh ID;
# DIR holding block_placement_beside_target built with
# nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -I. and its source, OUT the folder for
# the results): tests/hardware/block_placement_beside_target.cu twice, with the instance record.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/target_runs_lib.sh"
program_runs_begin "${1:-}" block_placement_beside_target
cat $OUT/instance.txt
for r in 1 2; do program_run bpt $r 60; done
program_runs_end
cat $OUT/bpt-1.log
