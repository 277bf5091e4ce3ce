"""`gpunvme describe --json-schema` against the files it describes.

Usage: check_json_schema.py GPUNVME SOURCE_DIR

Checks, with python3-jsonschema's draft 2020-12 validator (an implementation of
the standard independent of the schema's generator):
- the schema is a valid draft 2020-12 schema;
- every shipped topology and scenario validates, against the schema for either
  file and against the one of its own kind;
- the fields the README documents have the types and ranges it gives;
- known-bad files fail at one place, the JSON path written here by hand, which
  is also the path `gpunvme check` (the loader, separate code) reports.
"""

import copy
import glob
import json
import os
import subprocess
import sys
import tempfile

import jsonschema

PROGRAM, SOURCE = sys.argv[1], sys.argv[2]
failures = []


def fail(message):
    failures.append(message)
    print("FAIL:", message)


def schema(*kind):
    text = subprocess.run([PROGRAM, "describe", *kind, "--json-schema"], check=True,
                          capture_output=True, text=True).stdout
    document = json.loads(text)
    jsonschema.Draft202012Validator.check_schema(document)
    return jsonschema.Draft202012Validator(document)


def dollar_path(error):
    """The error's place as the loader writes it: $.nodes[3].mqes."""
    parts = list(error.absolute_path)
    if error.validator == "additionalProperties":
        known = error.schema.get("properties", {})
        parts.append(sorted(k for k in error.instance if k not in known)[0])
    text = "$"
    for part in parts:
        text += "[%d]" % part if isinstance(part, int) else "." + part
    return text


either, topology_only, scenario_only = schema(), schema("topology"), schema("scenario")

# The shipped files.
shipped = {
    "topology": sorted(glob.glob(os.path.join(SOURCE, "configs", "topologies", "*.json"))),
    "scenario": sorted(glob.glob(os.path.join(SOURCE, "scenarios", "*.json"))),
}
if len(shipped["topology"]) < 5 or len(shipped["scenario"]) < 10:
    fail("too few shipped files found under %s: %s" % (SOURCE, shipped))
for kind, files in shipped.items():
    own = topology_only if kind == "topology" else scenario_only
    for file in files:
        with open(file) as f:
            document = json.load(f)
        for name, validator in (("either", either), (kind, own)):
            errors = list(validator.iter_errors(document))
            if errors:
                fail("%s (schema %s): %s at %s" % (file, name, errors[0].message[:120],
                                                   dollar_path(errors[0])))

# The README's figures: link gen 1-6, width 1/2/4/8/16, both integers.
link = either.schema["$defs"]["link"]["properties"]
if link["gen"].get("type") != "integer" or (link["gen"].get("minimum"),
                                            link["gen"].get("maximum")) != (1, 6):
    fail("link gen: %s" % link["gen"])
if link["width"].get("enum") != [1, 2, 4, 8, 16]:
    fail("link width: %s" % link["width"])
if either.schema["$defs"]["link"].get("required") != ["from", "to"]:
    fail("a link needs from and to")

# Known-bad files: each is a shipped file with one mistake and the path it is at.
with open(os.path.join(SOURCE, "configs", "topologies", "default.json")) as f:
    TOPOLOGY = json.load(f)
with open(os.path.join(SOURCE, "scenarios", "kv-cache-gpu.json")) as f:
    KV_SCENARIO = json.load(f)
with open(os.path.join(SOURCE, "scenarios", "randread-4k.json")) as f:
    SCENARIO = json.load(f)
ssd = [i for i, n in enumerate(TOPOLOGY["nodes"]) if n["kind"] == "nvme_ssd"][0]


def changed(document, change):
    out = copy.deepcopy(document)
    change(out)
    return out


BAD = [
    ("link width 3", "topology", changed(TOPOLOGY, lambda d: d["links"][0].update(width=3)),
     "$.links[0].width"),
    ("link gen 7", "topology", changed(TOPOLOGY, lambda d: d["links"][0].update(gen=7)),
     "$.links[0].gen"),
    ("misspelt SSD field", "topology",
     changed(TOPOLOGY, lambda d: d["nodes"][ssd].update(mqess=1024)),
     "$.nodes[%d].mqess" % ssd),
    ("SSD field given as text", "topology",
     changed(TOPOLOGY, lambda d: d["nodes"][ssd].update(mqes="many")), "$.nodes[%d].mqes" % ssd),
    ("unknown node kind", "topology",
     changed(TOPOLOGY, lambda d: d["nodes"][ssd].update(kind="nvme_sdd")),
     "$.nodes[%d].kind" % ssd),
    ("unknown top-level key", "topology", changed(TOPOLOGY, lambda d: d.update(mpss=256)),
     "$.mpss"),
    ("misspelt scenario field", "scenario", changed(SCENARIO, lambda d: d.update(iodepht=4)),
     "$.iodepht"),
    ("enum value", "scenario", changed(SCENARIO, lambda d: d.update(path="gpu")), "$.path"),
    ("a microbenchmark field in a kv_cache scenario", "scenario",
     changed(KV_SCENARIO, lambda d: d.update(rw="randread")), "$.rw"),
    ("an SSD named twice", "scenario",
     changed(SCENARIO, lambda d: d.update(ssds=["ssd0", "ssd0"])), "$.ssds"),
]

with tempfile.TemporaryDirectory() as folder:
    for name, kind, document, expected in BAD:
        for label, validator in (("either", either), (kind, scenario_only if kind == "scenario"
                                                       else topology_only)):
            errors = list(validator.iter_errors(document))
            paths = sorted({dollar_path(e) for e in errors})
            if paths != [expected]:
                fail("%s (schema %s): expected one error at %s, got %s" % (
                    name, label, expected, [(dollar_path(e), e.message[:80]) for e in errors]))
        # The loader reports the same place.
        path = os.path.join(folder, "bad.json")
        with open(path, "w") as f:
            json.dump(document, f)
        option = "--topology" if kind == "topology" else "--scenario"
        extra = [] if kind == "topology" else [
            "--topology", os.path.join(SOURCE, "configs", "topologies", "default.json")]
        checked = subprocess.run([PROGRAM, "check", option, path, *extra], capture_output=True,
                                 text=True)
        reported = "error: %s: %s" % (path, expected)
        if checked.returncode != 2 or not checked.stderr.startswith(reported):
            fail("%s: gpunvme check said (exit %d) %r, expected it to start %r" % (
                name, checked.returncode, checked.stderr.strip(), reported))

# Neither a topology nor a scenario: a component kind is refused.
refused = subprocess.run([PROGRAM, "describe", "gpu", "--json-schema"], capture_output=True,
                         text=True)
if refused.returncode != 2 or "expected topology, scenario" not in refused.stderr:
    fail("describe gpu --json-schema: exit %d, %r" % (refused.returncode, refused.stderr))

if failures:
    print("%d failures" % len(failures))
    sys.exit(1)
print("json schema: %d shipped files valid, %d known-bad files refused at their path" % (
    sum(len(v) for v in shipped.values()), len(BAD)))
