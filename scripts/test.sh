#!/usr/bin/env bash
# Builds and runs every test: the release build and its Python tests (module,
# notebooks, distributed sweeps, latency budgets), then the AddressSanitizer +
# UndefinedBehaviorSanitizer build, then the ThreadSanitizer build of the
# real-concurrency tests (host threads against the software NVMe target).
# Both CTest runs include the soak test (tests/soak: random valid
# configurations through every result invariant; 600 in the release build,
# 96 in the sanitizer build; GPUNVME_SOAK_CONFIGS sets another count).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export LSAN_OPTIONS="suppressions=$root/tests/lsan.supp"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# The Python tests' optional packages (nbclient, distributed, ...) are
# required here: a missing one fails the run instead of skipping its tests.
export GPUNVME_REQUIRE_ALL=1

echo "== release build and tests"
"$root/scripts/build.sh" release
ctest --test-dir "$root/build" --output-on-failure -j "$(nproc)"

echo "== Python module, notebooks, distributed sweeps and latency budgets (pytest)"
# The interpreter the module was built for (Debian's python3 by default).
python="$(sed -n 's/^Python3_EXECUTABLE:[A-Z]*=//p' "$root/build/CMakeCache.txt")"
PYTHONPATH="$root/build/python" "${python:-/usr/bin/python3}" -m pytest -q "$root/tests/python"

echo "== sanitizer build and tests (ASan + UBSan)"
"$root/scripts/build.sh" sanitize
ctest --test-dir "$root/build-sanitize" --output-on-failure -j "$(nproc)"

echo "== ThreadSanitizer build and the real-concurrency tests"
"$root/scripts/build.sh" tsan
ctest --test-dir "$root/build-tsan" --output-on-failure
