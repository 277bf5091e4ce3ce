#!/usr/bin/env bash
# Fuzzes one of the simulator's inputs with libFuzzer, ASan and UBSan.
#
#   scripts/fuzz.sh TARGET [SECONDS] [JOBS]
#
# TARGET: config (topology/scenario JSON -> resolve_config), set (--set
# assignments, one per line), sweep (sweep specs), graph (.mtx / edge-list
# files), budget (budget files) or sim (tiny simulations of configurations
# drawn from the input, every result invariant checked). SECONDS (default 60)
# bounds the run, JOBS (default 1) fuzzing processes run side by side.
#
# Builds build-fuzz/ with clang++-14 (GPUNVME_FUZZ=ON) when needed. The
# fuzzer starts from the shipped files of the input's kind, the seeds in
# tests/fuzz/seeds/TARGET and the committed corpus tests/fuzz/corpus/TARGET,
# and keeps going after a finding (fork mode); findings land in
# build-fuzz/findings/TARGET/ (crash-*, leak-*, oom-*, timeout-*), each to be
# replayed with `build-fuzz/tests/fuzz/fuzz_TARGET FILE`. At the end the
# committed corpus is replaced by the minimised union of it and what this run
# found (-merge=1). The executions, coverage and findings are printed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target="${1:-}"
seconds="${2:-60}"
jobs="${3:-1}"
case "$target" in
  config | set | sweep | graph | budget | sim) ;;
  *) echo "usage: $0 config|set|sweep|graph|budget|sim [SECONDS] [JOBS]" >&2; exit 2 ;;
esac

# clang-14 with libFuzzer and its sanitizer runtimes, beside the usual packages.
"$root/scripts/install-deps.sh" clang-14 libclang-rt-14-dev

build="$root/build-fuzz"
if [ ! -f "$build/build.ninja" ]; then
  launcher=()
  if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++-14 -DGPUNVME_FUZZ=ON \
        -DGPUNVME_TESTS=OFF -DGPUNVME_PYTHON=OFF -DGPUNVME_HARDWARE=OFF \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" \
        "${launcher[@]}" >/dev/null
fi
cmake --build "$build" -j "$(nproc)" --target "fuzz_$target"

fuzzer="$build/tests/fuzz/fuzz_$target"
corpus="$root/tests/fuzz/corpus/$target"
work="$build/corpus/$target"
findings="$build/findings/$target"
mkdir -p "$corpus" "$work" "$findings"

# Seeds: the shipped files of this kind of input, and the hand-written ones.
seeds=()
case "$target" in
  config) seeds=("$root"/configs/topologies/*.json "$root"/scenarios/*.json) ;;
  sweep) seeds=("$root"/scenarios/sweeps/*.json) ;;
  budget) seeds=("$root"/scenarios/budgets/*.json) ;;
esac
if [ -d "$root/tests/fuzz/seeds/$target" ]; then seeds+=("$root/tests/fuzz/seeds/$target"/*); fi
for s in "${seeds[@]}"; do cp "$s" "$work/seed-$(basename "$s")"; done

export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=0"
export LSAN_OPTIONS="suppressions=$root/tests/lsan.supp"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# Inputs showing a known defect (invalid UTF-8, number overflow, std::stoul
# on a huge index) are kept there, one per class and size, and fuzzing goes on.
export GPUNVME_FUZZ_KNOWN_DIR="$findings/known"
mkdir -p "$GPUNVME_FUZZ_KNOWN_DIR"
export TMPDIR="$build/tmp"
mkdir -p "$TMPDIR"
timeout=10
rss=2048
leaks=1
# The simulation target's leaks are left to the sanitizer build's soak test:
# after SystemC's coroutines have run, LeakSanitizer misreads the stack and
# reports libFuzzer's own driver objects.
if [ "$target" = sim ]; then timeout=60; rss=4096; leaks=0; export ASAN_OPTIONS="detect_leaks=0"; fi

log="$build/fuzz-$target.log"
# Fork mode keeps fuzzing after a crash, leak, OOM or timeout (-ignore_*),
# so one known defect does not end the run.
"$fuzzer" -fork="$jobs" -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1 \
  -max_total_time="$seconds" -timeout="$timeout" -rss_limit_mb="$rss" -max_len=65536 -detect_leaks="$leaks" \
  -artifact_prefix="$findings/" "$work" "$corpus" 2>&1 | tee "$log" | grep -E '^#[0-9]+:' | tail -n 3 || true

# The committed corpus: the minimised union of the old one and this run's.
merged="$build/merged/$target"
rm -rf "$merged"
mkdir -p "$merged"
"$fuzzer" -merge=1 -timeout="$timeout" -rss_limit_mb="$rss" "$merged" "$corpus" "$work" \
  >"$build/merge-$target.log" 2>&1 || true
if [ -n "$(ls -A "$merged")" ]; then
  rm -f "$corpus"/*
  cp "$merged"/* "$corpus"/
fi

# libFuzzer's last status line holds the executions of the whole run.
last="$(grep -E '^#[0-9]+:' "$log" | tail -n 1 || true)"
echo "fuzz_$target: ${last:-no status line; see $log}"
echo "corpus: $(ls "$corpus" | wc -l) files in tests/fuzz/corpus/$target"
echo "findings: $(find "$findings" -maxdepth 1 -type f | wc -l) files in $findings"
echo "known defects seen: $(ls "$findings/known" | sed 's/-[0-9]*-[0-9]*$//' | sort | uniq -c | tr '\n' ' ')"
