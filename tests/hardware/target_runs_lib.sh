# Sourced by the run_target_*.sh scripts (one machine instance each, run from
# the repository root with HW=path/to/gpunvme-hw): what every such run
# records and how it runs and packs its cases.
#
# target_runs_begin ID: the instance record (boot id, host, CPU, GPU, driver,
# clocks, the program's checksum) in $w/instance.txt, nvidia-smi's clocks every
# 200 ms in $w/smi.csv, and the functions el (seconds since the start) and
# one TAG ARGS... (a case of the program into $w/TAG.json; the manifest keeps
# its start and end, ms since epoch, and its exit status).
# target_runs_end: stops the clock log and packs $w into
# $OUT/target-runs-ID.tar.gz.
# rotated R WORD...: the order of rotating cases in round R (below).
# instance_record: the machine instance's record on stdout (start time, boot
# id, host, CPU, GPU with its UUID and driver, clocks now), as every run
# script writes it into its instance.txt.
instance_record() {
  echo "started_utc $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "boot_id $(cat /proc/sys/kernel/random/boot_id)"
  echo "hostname $(hostname)"; echo "nproc $(nproc)"
  echo "cpu $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
  nvidia-smi --query-gpu=name,uuid,driver_version,pci.bus_id,clocks.max.sm,clocks.max.memory,power.limit,persistence_mode,compute_mode --format=csv,noheader
  echo "clocks_now $(nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader)"
}
target_runs_begin() {
  id="${1:?instance id}"
  hw="${HW:?set HW to the gpunvme-hw program}"
  OUT="${OUT:-.}"
  w="${TMPDIR:-/tmp}/target-runs-$id"
  mkdir -p "$w"
  t0=$(date +%s)
  {
    instance_record
    echo "binary $hw $(md5sum < "$hw" | cut -c1-12)"
  } > "$w/instance.txt" 2>&1
  cat "$w/instance.txt"
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv -lms 200 > "$w/smi.csv" 2>&1 &
  smi=$!
  log="$w/run.log"; man="$w/manifest.txt"
}
el() { echo $(( $(date +%s) - t0 )); }
# rotated R WORD...: the words one a line, from the ((R - 1) mod count)th on and
# then those before it: round R's order of cases that rotate from round to
# round, so that no case always runs first.
rotated() {
  local r="$1"; shift
  local words=("$@") n=$#
  for i in $(seq 0 $((n - 1))); do echo "${words[$(( (i + r - 1) % n ))]}"; done
}
one() {
  local tag="$1"; shift
  local s=$(date +%s%3N)
  timeout 60 $hw --out "$w/$tag.json" "$@" >>"$log" 2>&1; local rc=$?
  echo "$tag $s $(date +%s%3N) $rc $*" >> "$man"
  [ $rc = 0 ] || echo "FAIL $tag rc=$rc"
}
target_runs_end() {
  kill $smi
  echo "finished_utc $(date -u +%Y-%m-%dT%H:%M:%SZ)" >> "$w/instance.txt"
  grep -c . "$man"; grep -iE 'error:|fail' "$log" | head -5
}
target_runs_pack() {
  tar czf "$OUT/target-runs-$id.tar.gz" -C "${TMPDIR:-/tmp}" "target-runs-$id"
  ls -la "$OUT"; echo "total $(el)s"
}

# The runs of one microbenchmark program on one machine instance, as the
# run_<program>.sh scripts make them (DIR holds the program, built on the
# workstation with nvcc, and its source; OUT is the folder for the results).
# program_runs_begin ID PROGRAM [SOURCE]: the instance record, with the
# program's checksum, in $OUT/instance.txt; bin is $DIR/PROGRAM, src its
# source (default $DIR/PROGRAM.cu).
# clock_log_start: nvidia-smi's clocks every 200 ms in $OUT/smi.csv until
# program_runs_end.
# program_run TAG RUN TIMEOUT: one run into $OUT/TAG-RUN.json (its output in
# TAG-RUN.log), its exit status echoed. If the first run fails, the program is
# built here from its source (the instance record says so) and run again.
# program_runs_end: stops the clock log and stamps the finish.
program_runs_begin() {
  id="${1:?instance id}"
  local dir="${DIR:?set DIR to the folder holding the program and its source}"
  bin=$dir/$2
  src="${3:-$dir/$2.cu}"
  {
    echo "instance $id"
    instance_record
    echo "binary $bin $(md5sum < "$bin" | cut -c1-12)"
  } > $OUT/instance.txt 2>&1
}
clock_log_start() {
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv -lms 200 > $OUT/smi.csv 2>&1 &
  smi=$!
}
program_run() {
  local tag="$1" run="$2" limit="$3"
  timeout $limit $bin $OUT/$tag-$run.json > $OUT/$tag-$run.log 2>&1
  local rc=$?
  if [ $rc != 0 ] && [ "$run" = 1 ]; then
    echo "prebuilt binary failed: building here"; tail -3 $OUT/$tag-$run.log
    nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -I. -o /tmp/$tag $src && bin=/tmp/$tag
    echo "built_here 1" >> $OUT/instance.txt
    timeout $limit $bin $OUT/$tag-$run.json > $OUT/$tag-$run.log 2>&1
    rc=$?
  fi
  echo "run $run rc $rc $(date -u +%H:%M:%S)"
}
program_runs_end() {
  [ -n "${smi:-}" ] && kill $smi
  echo "finished_utc $(date -u +%Y-%m-%dT%H:%M:%SZ)" >> $OUT/instance.txt
}
