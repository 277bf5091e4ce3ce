#!/usr/bin/env bash
# Builds and runs every test: the release build, then the AddressSanitizer +
# UndefinedBehaviorSanitizer build.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export LSAN_OPTIONS="suppressions=$root/tests/lsan.supp"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

echo "== release build and tests"
"$root/scripts/build.sh" release
ctest --test-dir "$root/build" --output-on-failure -j "$(nproc)"

echo "== sanitizer build and tests (ASan + UBSan)"
"$root/scripts/build.sh" sanitize
ctest --test-dir "$root/build-sanitize" --output-on-failure -j "$(nproc)"
