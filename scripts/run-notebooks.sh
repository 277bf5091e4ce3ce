#!/usr/bin/env bash
# Executes the notebooks and writes them back with their outputs, as they are
# committed. Run it after a change to the model or the notebooks: the notebook
# test (tests/python/test_notebooks.py) re-executes each one and fails when its
# text outputs differ from the committed ones.
#
#   scripts/run-notebooks.sh [BUILD_DIR] [NOTEBOOK...]
#
# BUILD_DIR (default build) holds the built Python module (target _gpunvme);
# without NOTEBOOK arguments every notebooks/*.ipynb is executed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
shift || true
build="$(cd "$build" && pwd)"
if [ ! -d "$build/python" ]; then
  echo "error: $build/python does not exist: build the _gpunvme target first" >&2
  exit 2
fi
# The interpreter the module was built for (Debian's python3 by default).
python="$(sed -n 's/^Python3_EXECUTABLE:[A-Z]*=//p' "$build/CMakeCache.txt")"
notebooks=("$@")
if [ ${#notebooks[@]} -eq 0 ]; then
  notebooks=("$root"/notebooks/*.ipynb)
fi
export PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}"
# The kernel's debugger warns about frozen modules on every start; not ours.
export PYDEVD_DISABLE_FILE_VALIDATION=1
"${python:-/usr/bin/python3}" - "$root" "${notebooks[@]}" <<'PY'
import os
import sys

import nbclient
import nbformat

source_dir = sys.argv.pop(1)
sys.path.insert(0, os.path.join(source_dir, "scripts"))
from notebook_outputs import normalise_outputs  # noqa: E402

for path in sys.argv[1:]:
    print(f"executing {path}", flush=True)
    nb = nbformat.read(path, as_version=4)
    # The same kernel and working folder as the notebook test; no timing metadata, so an
    # unchanged result rewrites an unchanged file.
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3", record_timing=False,
                                     resources={"metadata": {"path": os.path.dirname(
                                         os.path.abspath(path))}})
    client.execute()
    for cell in nb.cells:
        if cell.cell_type == "code":
            normalise_outputs(cell, source_dir)
    nbformat.write(nb, path)
PY
