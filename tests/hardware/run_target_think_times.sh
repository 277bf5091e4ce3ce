#!/usr/bin/env bash
# Run from the repository root with HW=path/to/gpunvme-hw; packed into $OUT/target-runs-ID.tar.gz.
# One machine instance: is it the count of serving warps busy during a batch, or the
# run's mean count, that sets the batch time? k = 32, depth 32 (after depths 1 and 8 in the same
# process) with a feeder think time of 40 us, fixed (the feeders' rounds stay aligned, so about
# 32 warps are busy during each batch) or drawn uniformly from [0, 80] us (--feed-gap-random 1:
# the rounds drift apart, so about the run's mean count is busy during a batch), and 20 us alike;
# beside them the k sweep at k = 8, 16, 24, 32 as the reference, in rounds until DEADLINE_S.
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
log="$w/run.log"; man="$w/manifest.txt"
one() {
  local tag="$1"; shift
  local s=$(date +%s%3N)
  timeout 60 $hw --out "$w/$tag.json" "$@" >>"$log" 2>&1; local rc=$?
  echo "$tag $s $(date +%s%3N) $rc $*" >> "$man"
  [ $rc = 0 ] || echo "FAIL $tag rc=$rc"
}
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
kill $smi
echo "finished_utc $(date -u +%Y-%m-%dT%H:%M:%SZ)" >> "$w/instance.txt"
grep -c . "$man"; grep -iE 'error:|fail' "$log" | head -5
tar czf "$OUT/target-runs-$id.tar.gz" -C "${TMPDIR:-/tmp}" "target-runs-$id"
ls -la "$OUT"; echo "total $(el)s"
