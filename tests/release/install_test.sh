#!/usr/bin/env bash
# The install: `cmake --install BUILD --prefix TMP`, then the installed program
# and Python package are used from an unrelated folder with the source and
# build trees out of sight: they must find their data under TMP/share/gpunvme.
# Usage: install_test.sh BUILD_DIR [python] ("python": the module is built,
# test the installed package too)
set -euo pipefail
build=$1
with_python=${2:-}
# Debian's interpreter, the one the module is built for (CMakeLists.txt).
python=/usr/bin/python3
[ -x "$python" ] || python=python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
elsewhere=$work/elsewhere
mkdir -p "$elsewhere"

fail() { echo "FAIL: $*"; exit 1; }

cmake --install "$build" --prefix "$prefix" >"$work/install.log" || {
  cat "$work/install.log"; fail "cmake --install"; }
[ -x "$prefix/bin/gpunvme" ] || fail "no bin/gpunvme"
for f in configs/topologies/default.json scenarios/randread-4k.json \
         scenarios/budgets/randread-4k.json; do
  [ -f "$prefix/share/gpunvme/$f" ] || fail "share/gpunvme/$f not installed"
done
[ -f "$prefix/share/doc/gpunvme/LICENSE" ] || fail "LICENSE not installed"

cd "$elsewhere"
env -u GPUNVME_DATA_DIR "$prefix/bin/gpunvme" --version | grep -q '^gpunvme ' || fail "--version"
env -u GPUNVME_DATA_DIR "$prefix/bin/gpunvme" run --set scenario.ios=200 --out result.json \
  >run.txt || { cat run.txt; fail "installed gpunvme run"; }
grep -q '200 I/Os' run.txt || { cat run.txt; fail "run summary"; }
python3 - "$prefix" <<'PY' || fail "result of the installed run"
import json, sys
result = json.load(open("result.json"))
assert result["gpunvme"]["version"], result.get("gpunvme")
# The default topology and scenario came from the prefix.
assert result["config"]["scenario"]["name"] == "randread-4k", result["config"]["scenario"]
PY
env -u GPUNVME_DATA_DIR "$prefix/bin/gpunvme" check >check.txt || fail "installed gpunvme check"
grep -q "^ok: $prefix/share/gpunvme/configs/topologies/default.json and " check.txt || {
  cat check.txt; fail "check did not use the installed defaults"; }

# Without the data: exit 2, and the error names where it looked.
mv "$prefix/share/gpunvme" "$prefix/share/moved"
set +e
env -u GPUNVME_DATA_DIR "$prefix/bin/gpunvme" check >missing.txt 2>&1
code=$?
set -e
[ $code -eq 2 ] || { cat missing.txt; fail "missing data: exit $code, expected 2"; }
grep -q "searched $prefix/bin/share/gpunvme, $prefix/share/gpunvme," missing.txt || {
  cat missing.txt; fail "missing data: the searched folders are not named"; }
# GPUNVME_DATA_DIR names data moved elsewhere.
GPUNVME_DATA_DIR=$prefix/share/moved "$prefix/bin/gpunvme" check >/dev/null ||
  fail "GPUNVME_DATA_DIR"
mv "$prefix/share/moved" "$prefix/share/gpunvme"

if [ -n "$with_python" ]; then
  module=$(find "$prefix" -name '_gpunvme*.so' | head -n 1)
  [ -n "$module" ] || fail "the Python module is not installed"
  [ -f "$(dirname "$module")/gpunvme/__init__.py" ] || fail "the package is not beside the module"
  env -u GPUNVME_DATA_DIR PYTHONPATH="$(dirname "$module")" "$python" - "$prefix" <<'PY' ||
import os, sys
import gpunvme
prefix = sys.argv[1]
assert gpunvme.__file__.startswith(prefix), gpunvme.__file__
assert gpunvme.data_dir() == os.path.join(prefix, "share", "gpunvme"), gpunvme.data_dir()
assert gpunvme.__version__ == gpunvme.build_info()["version"]
result = gpunvme.run(gpunvme.load_config(overrides={"scenario.ios": 200}))
assert result["summary"]["ios"] == 200 and result["gpunvme"] == gpunvme.build_info()
PY
    fail "the installed Python package"
fi
echo "install: $prefix runs from another folder (program${with_python:+ and Python package})"
