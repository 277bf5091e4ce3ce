#!/usr/bin/env bash
# Run from the repository root with HW=path/to/gpunvme-hw; packed into $OUT/target-runs-ID.tar.gz.
# Footprint against concurrency, one machine instance: depth 32 after depths 1 and 8 in the same
# process, the namespace image's size (--file-mib: 16 MiB fits the L2, 256 the default, 4096
# far beyond it) and the buffers' footprint (--entries: queues x entries x 4 KiB) varied at
# k = 1 and k = 32 busy serving warps, and k = 1 with the I/O count of k = 32; rounds until
# DEADLINE_S. Tags: f-<k>-<entries>-<file MiB>-<ios>-r<round>.
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
cases=("32 256 256 65536" "32 256 16 65536" "32 64 256 65536" "32 64 16 65536"
       "1 256 256 8192" "1 256 4096 8192" "1 64 16 8192" "1 8192 256 65536" "1 256 256 65536"
       "1 2048 16 65536" "1 2048 256 65536" "1 8192 16 65536")
for r in $(seq 1 ${ROUNDS:-12}); do
  [ "$(el)" -gt "${DEADLINE_S:-150}" ] && { echo "deadline before round $r at $(el)s"; break; }
  n=${#cases[@]}
  for i in $(seq 0 $((n - 1))); do
    set -- ${cases[$(( (i + r - 1) % n ))]}
    one "f-$1-$2-$3-$4-r$r" --target gpu --controller-only 1,8,32 --queues $1 --entries $2 --file-mib $3 --ios $4 --timeout-s 20 --seed $r
  done
  echo "round $r done at $(el)s"
done
kill $smi
echo "finished_utc $(date -u +%Y-%m-%dT%H:%M:%SZ)" >> "$w/instance.txt"
grep -c . "$man"; grep -iE 'error:|fail' "$log" | head -5
tar czf "$OUT/target-runs-$id.tar.gz" -C "${TMPDIR:-/tmp}" "target-runs-$id"
ls -la "$OUT"; echo "total $(el)s"
