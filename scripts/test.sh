#!/usr/bin/env bash
# Builds and runs every test: the release build and its Python tests (module,
# notebooks, distributed sweeps, latency budgets), then the AddressSanitizer +
# UndefinedBehaviorSanitizer build, then the ThreadSanitizer build of the
# real-concurrency tests (host threads against the software NVMe target).
# Both CTest runs include the soak test (tests/soak: random valid
# configurations through every result invariant; 600 in the release build,
# 96 in the sanitizer build; GPUNVME_SOAK_CONFIGS sets another count).
#
# The next flavour builds in the background while the tests before it run,
# and the Python tests (one core) run beside the sanitizer CTest run, so both
# cores stay busy (CI has 2). A background job's output is printed when it
# ends; a build that fails stops the run there.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export LSAN_OPTIONS="suppressions=$root/tests/lsan.supp"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# The Python tests' optional packages (nbclient, distributed, ...) are
# required here: a missing one fails the run instead of skipping its tests.
export GPUNVME_REQUIRE_ALL=1

# Background jobs, each in a process group of its own (setsid), so that an
# early exit stops them too.
logs="$(mktemp -d)"
declare -A build_pid=()
start_build() {  # FLAVOUR: scripts/build.sh FLAVOUR in the background
  setsid "$root/scripts/build.sh" "$1" >"$logs/$1.log" 2>&1 &
  build_pid[$1]=$!
}
finish_build() {  # FLAVOUR: waits for its build and prints its output
  local status=0
  wait "${build_pid[$1]}" || status=$?
  unset "build_pid[$1]"
  cat "$logs/$1.log"
  return "$status"
}
stop_builds() {
  local pid
  for pid in "${build_pid[@]}"; do kill -- "-$pid" 2>/dev/null || true; done
  rm -rf "$logs"
}
trap stop_builds EXIT
trap 'exit 130' INT TERM

echo "== release build and tests"
"$root/scripts/build.sh" release
start_build sanitize
ctest --test-dir "$root/build" --output-on-failure -j "$(nproc)"

echo "== sanitizer build (ASan + UBSan)"
finish_build sanitize
start_build tsan

# The Python tests use one core, so they run beside the sanitizer CTest run;
# their output is printed when they end.
echo "== Python module, notebooks, distributed sweeps and latency budgets (pytest, in the background)"
# The interpreter the module was built for (Debian's python3 by default).
python="$(sed -n 's/^Python3_EXECUTABLE:[A-Z]*=//p' "$root/build/CMakeCache.txt")"
PYTHONPATH="$root/build/python" setsid "${python:-/usr/bin/python3}" -m pytest -q \
  "$root/tests/python" >"$logs/pytest.log" 2>&1 &
pytest_pid=$!
build_pid[pytest]=$pytest_pid

echo "== sanitizer tests (ASan + UBSan)"
ctest --test-dir "$root/build-sanitize" --output-on-failure -j "$(nproc)"

echo "== Python tests' output"
pytest_status=0
wait "$pytest_pid" || pytest_status=$?
unset "build_pid[pytest]"
cat "$logs/pytest.log"
if [ "$pytest_status" -ne 0 ]; then exit "$pytest_status"; fi

echo "== ThreadSanitizer build and the real-concurrency tests"
finish_build tsan
ctest --test-dir "$root/build-tsan" --output-on-failure
