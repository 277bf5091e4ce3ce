"""The build's version and commit, everywhere a result leaves the program.

Usage: check_version.py GPUNVME SOURCE_DIR

The expected version is read from project(gpunvme VERSION ...) in
CMakeLists.txt and the expected commit from git itself (`git describe --always
--dirty`, "unknown" outside a git checkout); the program must report both in
--version, the result JSON, the trace's metadata, and every sweep row (JSON
line and CSV columns).
"""

import csv
import json
import os
import re
import subprocess
import sys
import tempfile

PROGRAM, SOURCE = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
failures = []


def fail(message):
    failures.append(message)
    print("FAIL:", message)


with open(os.path.join(SOURCE, "CMakeLists.txt")) as f:
    VERSION = re.search(r"project\(gpunvme VERSION ([0-9.]+)", f.read()).group(1)


def git(*args):
    done = subprocess.run(["git", "-C", SOURCE, *args], capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


top = git("rev-parse", "--show-toplevel")
if top is not None and os.path.realpath(top) == os.path.realpath(SOURCE):
    EXPECTED_COMMIT = git("describe", "--always", "--dirty")
else:
    EXPECTED_COMMIT = "unknown"


def same_commit(reported):
    # The tree may have been edited since the build: "-dirty" is not compared.
    return reported.removesuffix("-dirty") == EXPECTED_COMMIT.removesuffix("-dirty")


def check_block(block, where):
    if not isinstance(block, dict) or set(block) != {"version", "commit"}:
        fail("%s: the gpunvme block is %r" % (where, block))
        return
    if block["version"] != VERSION:
        fail("%s: version %r, CMakeLists.txt says %r" % (where, block["version"], VERSION))
    if not same_commit(block["commit"]):
        fail("%s: commit %r, git says %r" % (where, block["commit"], EXPECTED_COMMIT))


# The build-time script alone: a folder that is not the top of a git checkout
# (none at all, or a subfolder of this one) records "unknown", not a failure
# and not the enclosing checkout's commit.
with tempfile.TemporaryDirectory() as folder:
    for source, expected in ((folder, "unknown"), (os.path.join(SOURCE, "tests"), "unknown"),
                             (SOURCE, EXPECTED_COMMIT)):
        header = os.path.join(folder, "commit.h")
        subprocess.run(["cmake", "-DSOURCE_DIR=" + source, "-DOUTPUT=" + header, "-P",
                        os.path.join(SOURCE, "cmake", "build_commit.cmake")], check=True)
        with open(header) as f:
            written = re.search(r'#define GPUNVME_COMMIT "([^"]*)"', f.read()).group(1)
        if written != expected:
            fail("build_commit.cmake on %s wrote %r, expected %r" % (source, written, expected))
        os.remove(header)

shown = subprocess.run([PROGRAM, "--version"], capture_output=True, text=True)
match = re.fullmatch(r"gpunvme (\S+) \(commit (\S+)\)\n", shown.stdout)
if shown.returncode != 0 or not match:
    fail("--version: exit %d, %r" % (shown.returncode, shown.stdout))
else:
    check_block({"version": match.group(1), "commit": match.group(2)}, "--version")

with tempfile.TemporaryDirectory() as folder:
    result, trace = os.path.join(folder, "result.json"), os.path.join(folder, "trace.json")
    subprocess.run([PROGRAM, "run", "--set", "scenario.ios=200", "--out", result, "--trace",
                    trace], check=True, capture_output=True, cwd=folder)
    with open(result) as f:
        check_block(json.load(f).get("gpunvme"), "result JSON")
    with open(trace) as f:
        check_block(json.load(f)["otherData"].get("gpunvme"), "trace otherData")

    spec = os.path.join(folder, "spec.json")
    with open(spec, "w") as f:
        json.dump({"topology": os.path.join(SOURCE, "configs/topologies/default.json"),
                   "scenario": os.path.join(SOURCE, "scenarios/randread-4k.json"),
                   "set": ["scenario.ios=200"], "sweep": {"scenario.queues": [2, 4]}}, f)
    subprocess.run([PROGRAM, "sweep", spec, "--jobs", "1"], check=True, capture_output=True,
                   cwd=folder)
    with open(os.path.join(folder, "spec.jsonl")) as f:
        rows = [json.loads(line) for line in f]
    if len(rows) != 2:
        fail("sweep: %d rows, expected 2" % len(rows))
    for row in rows:
        check_block(row.get("gpunvme"), "sweep row %s" % row.get("key"))
    with open(os.path.join(folder, "spec.csv")) as f:
        table = list(csv.DictReader(f))
    for row in table:
        check_block({"version": row.get("gpunvme.version"), "commit": row.get("gpunvme.commit")},
                    "sweep CSV row %s" % row.get("key"))

if failures:
    print("%d failures" % len(failures))
    sys.exit(1)
print("version %s, commit %s: in --version, the result, the trace and the sweep rows" % (
    VERSION, EXPECTED_COMMIT))
