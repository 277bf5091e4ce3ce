#!/usr/bin/env bash
# Every hardware measurement in one call, for a lent GPU machine: the GPU
# microbenchmarks (gpu_microbench.cu, host_read_under_copies.cu,
# host_polls_under_copies.cu,
# warp_host_access.cu, block_placement.cu, warp_collectives.cu,
# gpu_wqe_posting.cu, submission_costs.cu) and the
# per-strategy runs of the hardware backend (gpunvme-hw), one process per
# strategy and run so that a strategy that hangs cannot take the others with
# it. Each strategy runs once with per-I/O stage records (--trace 1), once
# in stage-means mode (--trace 2), once with an op profile (--trace 3: the
# warps' time by kind of platform call) and REPEATS (5) times without
# records (--trace 0): gpunvme validate compares the median of those.
# Then the calibration set of gpunvme validate's prediction: REPEATS
# controller-only runs (gpunvme-hw --controller-only: host feeder threads,
# no strategy) at 1, 2 and 4 target threads, 1 to 64 commands per queue.
# MICROBENCH=0 skips the microbenchmarks, CONTROLLER=0 the controller-only
# runs. IOS (default 65,536: 16 I/Os per thread at 132 warps; fewer
# measure start-up, see the README) sets the I/Os per case.
#
#   tests/hardware/run_hw.sh OUTDIR [BINDIR]
#
# BINDIR holds the programs (built here when absent, with nvcc from the
# repository root). Writes OUTDIR/microbench.json,
# OUTDIR/host-read-under-copies.json, OUTDIR/warp-host-access.json,
# OUTDIR/block-placement.json, OUTDIR/gpu-wqe-posting.json,
# OUTDIR/submission-costs.json,
# OUTDIR/NNN-<strategy>-t<trace>.json, OUTDIR/controller-t<threads>-r<run>.json
# (merge their cases for gpunvme validate --measured, or pass them all) and
# OUTDIR/run.log.
set -uo pipefail
out="${1:?usage: run_hw.sh OUTDIR [BINDIR]}"
bin="${2:-build-gpu}"
mkdir -p "$out" "$bin"
arch="${GPUNVME_CUDA_ARCH:-90}"
gencode="-gencode=arch=compute_${arch},code=sm_${arch}"
if [ ! -x "$bin/gpunvme-hw" ]; then
  nvcc -O3 -std=c++17 "$gencode" -I. -o "$bin/gpunvme-hw" sim/frontend/hardware/gpunvme_hw.cu \
    sim/frontend/hardware/soft_controller.cpp sim/frontend/hardware/nvme_target.cpp \
    sim/frontend/hardware/gpu_target.cu -lpthread || exit 1
fi
if [ "${MICROBENCH:-1}" != 0 ] && [ ! -x "$bin/host_read_under_copies" ]; then
  nvcc -O3 -std=c++17 "$gencode" -o "$bin/host_read_under_copies" \
    tests/hardware/host_read_under_copies.cu -lpthread || exit 1
fi
if [ "${MICROBENCH:-1}" != 0 ] && [ ! -x "$bin/host_polls_under_copies" ]; then
  nvcc -O3 -std=c++17 "$gencode" -o "$bin/host_polls_under_copies" \
    tests/hardware/host_polls_under_copies.cu -lpthread || exit 1
fi
if [ "${MICROBENCH:-1}" != 0 ] && [ ! -x "$bin/warp_host_access" ]; then
  nvcc -O3 -std=c++17 "$gencode" -o "$bin/warp_host_access" tests/hardware/warp_host_access.cu || exit 1
fi
if [ "${MICROBENCH:-1}" != 0 ] && [ ! -x "$bin/warp_collectives" ]; then
  nvcc -O3 -std=c++17 "$gencode" -I. -o "$bin/warp_collectives" tests/hardware/warp_collectives.cu || exit 1
fi
if [ "${MICROBENCH:-1}" != 0 ] && [ ! -x "$bin/gpu_wqe_posting" ]; then
  nvcc -O3 -std=c++17 "$gencode" -I. -o "$bin/gpu_wqe_posting" tests/hardware/gpu_wqe_posting.cu \
    -lpthread || exit 1
fi
if [ "${MICROBENCH:-1}" != 0 ] && [ ! -x "$bin/submission_costs" ]; then
  nvcc -O3 -std=c++17 "$gencode" -I. -o "$bin/submission_costs" tests/hardware/submission_costs.cu ||
    exit 1
fi
if [ "${MICROBENCH:-1}" != 0 ] && [ ! -x "$bin/block_placement" ]; then
  nvcc -O3 -std=c++17 "$gencode" -o "$bin/block_placement" tests/hardware/block_placement.cu || exit 1
fi
if [ "${MICROBENCH:-1}" != 0 ] && [ ! -x "$bin/gpu_microbench" ]; then
  nvcc -O3 -std=c++17 "$gencode" -o "$bin/gpu_microbench" tests/hardware/gpu_microbench.cu || exit 1
fi
{
  nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current \
    --format=csv 2>&1
  nproc
  status=0
  runs="1 2 3"
  for _ in $(seq "${REPEATS:-5}"); do runs="$runs 0"; done
  n=0
  for s in ${STRATEGIES:-all_threads bam_ticket warp_batch warp_batch+polling_warps per_warp_queue io_agents}; do
    for t in $runs; do
      n=$((n + 1))
      timeout 300 "$bin/gpunvme-hw" --out "$out/$(printf %03d $n)-${s/+/-}-t$t.json" \
        --strategies "$s" --warps "${WARPS:-1,8,32,132,528}" --ios "${IOS:-65536}" \
        --timeout-s 30 --target-threads "${TARGET_THREADS:-4}" --trace "$t" || status=1
    done
  done
  if [ "${CONTROLLER:-1}" != 0 ]; then
    for r in $(seq "${REPEATS:-5}"); do
      for t in 1 2 4; do
        timeout 120 "$bin/gpunvme-hw" --out "$out/controller-t$t-r$r.json" \
          --controller-only 1,2,4,8,16,32,64 --ios "${IOS:-65536}" --target-threads "$t" || status=1
      done
    done
  fi
  if [ "${MICROBENCH:-1}" != 0 ]; then
    "$bin/gpu_microbench" "$out/microbench.json" || status=1
    "$bin/host_read_under_copies" "$out/host-read-under-copies.json" || status=1
    "$bin/host_polls_under_copies" "$out/host-polls-under-copies.json" || status=1
    "$bin/warp_host_access" "$out/warp-host-access.json" || status=1
    "$bin/block_placement" "$out/block-placement.json" || status=1
    "$bin/warp_collectives" "$out/warp-collectives.json" || status=1
    "$bin/gpu_wqe_posting" "$out/gpu-wqe-posting.json" || status=1
    "$bin/submission_costs" "$out/submission-costs.json" || status=1
  fi
  exit $status
} 2>&1 | tee "$out/run.log"
