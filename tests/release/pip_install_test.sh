#!/usr/bin/env bash
# pyproject.toml: `pip install --no-build-isolation --no-deps .` into a fresh
# virtual environment (with the system's packages, Debian's setuptools among
# them; nothing is downloaded), reusing BUILD_DIR for the extension; then the
# package is imported and run from another folder, finding its data in the
# environment's share/gpunvme.
# Usage: pip_install_test.sh BUILD_DIR SOURCE_DIR MODULE_BUILT (1 or 0; 0:
# skipped, exit 77, where the build has no Python module)
set -euo pipefail
if [ "${3:-1}" = 0 ]; then
  echo "skipped: this build has no Python module (python3-dev and pybind11-dev)"
  exit 77
fi
build=$(cd "$1" && pwd)
source=$(cd "$2" && pwd)
python=/usr/bin/python3
[ -x "$python" ] || python=python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fail() { echo "FAIL: $*"; exit 1; }

"$python" -m venv --system-site-packages "$work/venv" || fail "python3 -m venv"
(cd "$source" && PIP_NO_INDEX=1 GPUNVME_CMAKE_BUILD_DIR=$build \
  "$work/venv/bin/pip" install --no-build-isolation --no-deps . >"$work/pip.log" 2>&1) || {
  cat "$work/pip.log"; fail "pip install"; }
mkdir "$work/elsewhere"
cd "$work/elsewhere"
env -u GPUNVME_DATA_DIR -u PYTHONPATH "$work/venv/bin/python" - "$work/venv" "$source" <<'PY' ||
import os, re, sys
import gpunvme
venv, source = sys.argv[1], sys.argv[2]
assert gpunvme.__file__.startswith(venv), gpunvme.__file__
assert gpunvme.data_dir() == os.path.join(venv, "share", "gpunvme"), gpunvme.data_dir()
with open(os.path.join(source, "CMakeLists.txt")) as f:
    version = re.search(r"project\(gpunvme VERSION ([0-9.]+)", f.read()).group(1)
assert gpunvme.__version__ == version, (gpunvme.__version__, version)
from importlib.metadata import version as installed_version
assert installed_version("gpunvme") == version
result = gpunvme.run(gpunvme.load_config(overrides={"scenario.ios": 200}))
assert result["summary"]["ios"] == 200
assert gpunvme.budgets.files(), "no shipped budgets in the environment"
PY
  fail "the pip-installed package"
echo "pip: gpunvme installed into a virtual environment runs from another folder"
