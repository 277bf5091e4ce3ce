"""Shared fixtures: the built module (PYTHONPATH=<build>/python) and the CLI beside it."""

import importlib
import os
import subprocess

import pytest

import _gpunvme
import gpunvme

# Processes started by the tests (notebook kernels in notebooks/, Dask workers, sweep
# workers) find the module through PYTHONPATH, whatever their working folder.
os.environ["PYTHONPATH"] = os.pathsep.join(
    [os.path.dirname(os.path.abspath(_gpunvme.__file__)),
     os.path.dirname(os.path.dirname(os.path.abspath(gpunvme.__file__)))]
    + [os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
# The kernel's debugger warns about frozen modules on every start; not ours.
os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")

BUILD_DIR = os.path.dirname(os.path.dirname(os.path.abspath(_gpunvme.__file__)))
SOURCE_DIR = gpunvme.source_dir()

# Small runs: the Python suite, notebooks included, stays within a few minutes
# on two cores.
SMALL_IOS = 800


def require(module):
    """Imports an optional test dependency (nbformat, nbclient, distributed).

    Where it is missing the tests that need it are skipped, unless
    GPUNVME_REQUIRE_ALL=1 (scripts/test.sh sets it, as CI runs): there a
    missing package fails the run instead of quietly skipping what it tests.
    """
    if os.environ.get("GPUNVME_REQUIRE_ALL") == "1":
        try:
            return importlib.import_module(module)
        except ImportError as e:
            pytest.fail("GPUNVME_REQUIRE_ALL=1 and the required package %r is missing: %s"
                        % (module, e), pytrace=False)
    return pytest.importorskip(module)


@pytest.fixture(scope="session")
def cli():
    """Runs the gpunvme program of the same build: cli(*args) -> CompletedProcess."""
    program = os.environ.get("GPUNVME_CLI", os.path.join(BUILD_DIR, "gpunvme"))
    if not os.path.exists(program):
        pytest.skip("no gpunvme program beside the module (%s)" % program)

    def invoke(*args, cwd=None):
        return subprocess.run([program, *args], capture_output=True, text=True, cwd=cwd,
                              timeout=120)

    return invoke


@pytest.fixture
def small_config():
    """The shipped default configuration, shrunk to a fraction of a second."""
    return gpunvme.load_config(overrides={"scenario.ios": SMALL_IOS})
