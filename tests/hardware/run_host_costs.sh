#!/bin/bash
# Builds and runs the host software-cost measurements on a GPU machine:
# host_software_costs.cu (GPU->CPU->GPU round trip, cudaMemcpyAsync launch and
# synchronisation, pread) and cufile_costs.cu (libcufile per call, in
# compatibility mode over a file on the local disk). Results go to $OUT
# (env.txt, rt.jsonl, cufile.jsonl, logs); configs/measurements/
# host-software-costs-<device>-<date>.json is assembled from them.
set -u
OUT=${OUT:-/tmp/host-costs}
mkdir -p "$OUT"
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${WORK:-$HERE}  # a directory on the local disk for the test files
{
  echo "date: $(date -u +%FT%TZ)"; echo "hostname: $(hostname)"; uname -r
  nvidia-smi --query-gpu=name,uuid,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv
  nvcc --version | tail -2
  lscpu | grep -E 'Model name|^CPU\(s\)|MHz'; df -h "$WORK" | tail -1; mount | grep ' / '
} > "$OUT/env.txt" 2>&1
# libcufile ships with the CUDA toolkit (targets/<arch>/lib) or the
# nvidia-cufile wheel.
LIB=$(dirname "$(find /usr/local/cuda*/ -name 'libcufile.so*' 2>/dev/null | head -1)")
INC=$(dirname "$(find /usr/local/cuda*/ -name cufile.h 2>/dev/null | head -1)")
echo "cufile include $INC lib $LIB" >> "$OUT/env.txt"
[ -e "$LIB/libcufile.so" ] || ln -sf "$(ls "$LIB"/libcufile.so.* | head -1)" /tmp/libcufile.so
nvcc -O2 -arch=sm_90 -std=c++17 -o /tmp/host_software_costs "$HERE/host_software_costs.cu" \
  > "$OUT/build.txt" 2>&1
nvcc -O2 -arch=sm_90 -std=c++17 -I"$INC" -o /tmp/cufile_costs "$HERE/cufile_costs.cu" \
  -L"$LIB" -L/tmp -lcufile -Xlinker -rpath="$LIB" >> "$OUT/build.txt" 2>&1
timeout 240 /tmp/host_software_costs "$WORK" > "$OUT/rt.jsonl" 2> "$OUT/rt.err"
echo "host_software_costs rc $?" >> "$OUT/env.txt"
# libcufile looks up the file system of the file's block device through udev
# (ID_FS_USAGE); a VM without udev (Firecracker) needs the database entry
# written by hand, else cuFileHandleRegister fails with 5027.
DISK=${DISK:-/dev/vda}
if [ -b "$DISK" ] && [ ! -d /run/udev/data ] || [ -b "$DISK" ] && [ -z "$(ls /run/udev/data 2>/dev/null)" ]; then
  MM=$(printf '%d:%d' 0x"$(stat -c %t "$DISK")" 0x"$(stat -c %T "$DISK")")
  mkdir -p /run/udev/data
  printf 'E:ID_FS_USAGE=filesystem\nE:ID_FS_TYPE=ext4\n' > "/run/udev/data/b$MM"
  echo "udev entry b$MM written" >> "$OUT/env.txt"
fi
export CUFILE_FORCE_COMPAT_MODE=true CUFILE_LOGGING_LEVEL=ERROR CUFILE_LOGFILE_PATH=$OUT/cufile.log
timeout 200 /tmp/cufile_costs "$WORK" 1 > "$OUT/cufile.jsonl" 2> "$OUT/cufile.err"
echo "cufile_costs rc $?" >> "$OUT/env.txt"
cat "$OUT/rt.jsonl" "$OUT/cufile.jsonl"
