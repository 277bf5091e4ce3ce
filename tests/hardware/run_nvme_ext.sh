#!/usr/bin/env bash
# The proposed NVMe extensions against the GPU-resident target, for a lent
# GPU machine (the runs of configs/measurements/hw-gpu-target-ext-*.json):
# REPEATS (5) controller-only runs (1 to 32 commands per queue, the
# calibration set of their prediction), then warp_batch and each extension
# option the target offers (+cqe_at_slot, +cid_bitmap, +thread_wide,
# +shadow_polled and two combinations), one process per strategy and run:
# TRACES (one traced run, --trace 1, then six untraced), at 1 to 528 warps;
# then warp_batch+warp_doorbell, which the target refuses (exit 1 expected).
# TARGET_ARGS is passed to every run (e.g. "--gpu-target-sms 16
# --gpu-target-warps 128").
#
#   tests/hardware/run_nvme_ext.sh OUTDIR [BIN]
#
# BIN is the gpunvme-hw program (default build/gpunvme-hw). Writes
# OUTDIR/controller-rR.json, OUTDIR/NNN-<strategy>-t<trace>.json,
# OUTDIR/refused-warp_batch-warp_doorbell.json and OUTDIR/run.log.
set -uo pipefail
out="${1:?usage: run_nvme_ext.sh OUTDIR [BIN]}"
bin="${2:-build/gpunvme-hw}"
mkdir -p "$out"
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current \
    --format=csv 2>&1
  nproc
  cat /proc/sys/kernel/random/boot_id
  status=0
  for r in $(seq "${REPEATS:-5}"); do
    # shellcheck disable=SC2086
    timeout 120 "$bin" --target gpu ${TARGET_ARGS:-} --out "$out/controller-r$r.json" \
      --controller-only 1,2,4,8,16,32 --ios 65536 || status=1
  done
  n=0
  for s in warp_batch warp_batch+cqe_at_slot warp_batch+cid_bitmap warp_batch+thread_wide \
    warp_batch+shadow_polled warp_batch+cqe_at_slot+shadow_polled \
    warp_batch+cqe_at_slot+thread_wide+shadow_polled; do
    for t in ${TRACES:-1 0 0 0 0 0 0}; do
      n=$((n + 1))
      # shellcheck disable=SC2086
      timeout 60 "$bin" --target gpu ${TARGET_ARGS:-} \
        --out "$out/$(printf %03d $n)-${s//+/-}-t$t.json" --strategies "$s" \
        --warps "${WARPS:-1,8,32,132,528}" --ios "${IOS:-65536}" --timeout-s 15 --trace "$t" ||
        status=1
    done
  done
  echo "== warp doorbells (the target refuses them)"
  # shellcheck disable=SC2086
  timeout 60 "$bin" --target gpu ${TARGET_ARGS:-} --out "$out/refused-warp_batch-warp_doorbell.json" \
    --strategies warp_batch+warp_doorbell --warps 1 --ios 4096 --timeout-s 10
  echo "exit $? (1: refused)"
  date -u
  exit $status
} 2>&1 | tee "$out/run.log"
