#!/usr/bin/env bash
# Re-makes the four per-role predictions with the load-dependent batch time
# (validate --busy-scale, busy count = the processors at work):
#   configs/measurements/validate-h100-2026-11-28-host-perrole-load.json   (host-thread target, H100)
#   configs/measurements/validate-h200-2026-11-29-host-perrole-load.json   (host-thread target, H200)
#   configs/measurements/validate-gpu-target-perrole-h100-2026-11-27-load.json (GPU-resident target, H100)
#   configs/measurements/validate-gpu-target-perrole-h200-2026-11-28-load.json (GPU-resident target, H200)
# each with its .svg. Calibration from controller-only runs only; nothing is
# fitted per case. One gpunvme validate process per report, all warp counts,
# at most JOBS (default 2) at once, under nice.
#
# With FOOTPRINT=1 the GPU-resident target's two reports are made with the
# footprint term as well (validate --footprint-scale) under the names
# ...-footprint.json/.svg beside the -load ones; the host-thread target has
# no footprint runs, so its reports are not made then.
#
# Usage: [FOOTPRINT=1] scripts/remake-perrole-reports.sh [BUILD_DIR] [host|h200host|h100|h200 ...]
# (default build, every report). Run it after a model change to the GPU or
# the controller, then the tests of tests/validate hold the simulator to the
# new reports.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
which=("$@")
footprint=${FOOTPRINT:-0}
if [ ${#which[@]} -eq 0 ]; then
  if [ "$footprint" = 1 ]; then which=(h100 h200); else which=(host h200host h100 h200); fi
fi
jobs=${JOBS:-2}
suffix=load
extra=()
if [ "$footprint" = 1 ]; then
  suffix=footprint
  extra=(--footprint-scale)
fi
failed=0
m=configs/measurements
gpunvme="$build/gpunvme"

run() {
  local name=$1
  shift
  local start status=0
  start=$(date +%s)
  # validate exits 1 when a prediction is outside the tolerance (the report
  # is still written) and 2 on bad input (no report).
  nice "$gpunvme" validate "$@" --busy-scale --busy-count at-work "${extra[@]}" \
    --out "$m/$name.json" --plot "$m/$name.svg" >"/tmp/remake-$name.log" 2>&1 || status=$?
  echo "$name: exit $status, $(($(date +%s) - start)) s of wall time (log /tmp/remake-$name.log)"
  [ "$status" -le 1 ]
}

for report in "${which[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || failed=1; done
  case $report in
    host)
      if [ "$footprint" = 1 ]; then
        echo "host: the host-thread target has no footprint runs; no -footprint report" >&2
        exit 2
      fi
      run validate-h100-2026-11-28-host-perrole-load \
        --measured $m/hw-strategies-perrole-h100-2026-11-28.json \
        --measured $m/hw-controller-h100-2026-11-28.json \
        --measured $m/hw-gpu-target-concurrency-h100-2026-11-28.json \
        --measured $m/lane-loop-fit-h100-2026-11-24-per-strategy-kernels.json &
      ;;
    h200host)
      if [ "$footprint" = 1 ]; then
        echo "h200host: the host-thread target has no footprint runs; no -footprint report" >&2
        exit 2
      fi
      # The target's copies under sweeping warps, calibrated on the H200's own
      # controller-under-polls runs (scripts/copy-ring-sweepers.py on
      # hw-host-target-h200-2026-11-29-under-polls.json); the topology's figure
      # is the H100's.
      run validate-h200-2026-11-29-host-perrole-load \
        --set topology.nodes.ssd0.copy_op_ring_sweeper_ns=18316.0 \
        --measured $m/hw-host-target-h200-2026-11-29-strategies.json \
        --measured $m/hw-host-target-h200-2026-11-29-controller.json \
        --measured $m/hw-gpu-target-concurrency-h200-2026-11-28.json \
        --measured $m/lane-loop-fit-h100-2026-11-24-per-strategy-kernels.json &
      ;;
    h100)
      run validate-gpu-target-perrole-h100-2026-11-27-$suffix \
        --measured $m/hw-gpu-target-perrole-h100-2026-11-27.json \
        --measured $m/hw-gpu-target-controller-h100-2026-11-27-perrole.json \
        --measured $m/hw-gpu-target-concurrency-h100-2026-11-28.json \
        --measured $m/lane-loop-fit-h100-2026-11-24-per-strategy-kernels.json &
      ;;
    h200)
      run validate-gpu-target-perrole-h200-2026-11-28-$suffix \
        --measured $m/hw-gpu-target-perrole-h200-2026-11-28.json \
        --measured $m/hw-gpu-target-controller-h200-2026-11-28-perrole.json \
        --measured $m/hw-gpu-target-concurrency-h200-2026-11-28.json \
        --measured $m/lane-loop-fit-h100-2026-11-24-per-strategy-kernels.json &
      ;;
    *)
      echo "unknown report '$report': expected host, h200host, h100 or h200" >&2
      exit 2
      ;;
  esac
done
while [ "$(jobs -rp | wc -l)" -gt 0 ]; do wait -n || failed=1; done
exit $failed
