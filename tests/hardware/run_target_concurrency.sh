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
id="${1:?instance id}"
hw="${HW:?set HW to the gpunvme-hw program}"
OUT="${OUT:-.}"
w="${TMPDIR:-/tmp}/target-runs-$id"; mkdir -p "$w"
t0=$(date +%s)
el() { echo $(( $(date +%s) - t0 )); }
{
echo "started_utc $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "boot_id $(cat /proc/sys/kernel/random/boot_id)"
echo "hostname $(hostname)"; echo "nproc $(nproc)"
echo "cpu $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
nvidia-smi --query-gpu=name,uuid,driver_version,pci.bus_id,clocks.max.sm,clocks.max.memory,power.limit,persistence_mode,compute_mode --format=csv,noheader
echo "clocks_now $(nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader)"
echo "binary $hw $(md5sum < $hw | cut -c1-12)"
} > "$w/instance.txt" 2>&1
cat "$w/instance.txt"
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv -lms 200 > "$w/smi.csv" 2>&1 &
smi=$!
gap=0; $hw --help 2>&1 | grep -q feed-gap-ns && gap=1
psleep=0; $hw --help 2>&1 | grep -q feed-poll-sleep-ns && psleep=1
log="$w/run.log"; man="$w/manifest.txt"
# tag, then the arguments; the manifest keeps start and end (ms since epoch) and rc
one() {
  local tag="$1"; shift
  local s=$(date +%s%3N)
  timeout 60 $hw --out "$w/$tag.json" "$@" >>"$log" 2>&1; local rc=$?
  echo "$tag $s $(date +%s%3N) $rc $*" >> "$man"
  [ $rc = 0 ] || echo "FAIL $tag rc=$rc"
}
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
kill $smi
echo "finished_utc $(date -u +%Y-%m-%dT%H:%M:%SZ)" >> "$w/instance.txt"
grep -c . "$man"; grep -iE 'error:|fail' "$log" | head -5
grep 'controller_only' "$log" | head -12
tar czf "$OUT/target-runs-$id.tar.gz" -C "${TMPDIR:-/tmp}" "target-runs-$id"
ls -la "$OUT"; echo "total $(el)s"
