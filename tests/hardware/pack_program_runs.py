#!/usr/bin/env python3
"""Packs the runs of one microbenchmark on several machine instances into one
measurement file (schema: the runs' own, NAME/V becoming NAME.runs/V).

  pack_program_runs.py TAG OUT.json DOC REQUESTED_KIND DIR [DIR ...]

Each DIR is one instance's $OUT of a run_*.sh that uses target_runs_lib.sh:
its instance.txt (the record that library writes) and TAG-N.json, the
program's output of run N (bpt for run_block_placement_beside_target.sh, ops
for run_gpu_ops_under_host_polls.sh). The runs are kept whole, in instance
then run order, each naming its instance."""
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from pack_feeder_packing import instance_record  # noqa: E402  (the instances' records alike)


def record(folder: pathlib.Path, requested_kind: str) -> dict:
    """The instance's record, named as its instance.txt's first line names it."""
    first = (folder / "instance.txt").read_text().splitlines()[0]
    key, _, ident = first.partition(" ")
    if key != "instance" or not ident:
        raise SystemExit(f"{folder / 'instance.txt'}: expected 'instance ID' first, found {first!r}")
    return instance_record(folder, ident, requested_kind, binary_key="binary")


def main(argv: list) -> int:
    if len(argv) < 6:
        print(__doc__, file=sys.stderr)
        return 2
    tag, out, doc, kind = argv[1:5]
    dirs = [pathlib.Path(d) for d in argv[5:]]
    instances, runs = [], []
    for d in dirs:
        rec = record(d, kind)
        instances.append(rec)
        for run_file in sorted(d.glob(f"{tag}-*.json")):
            run = json.loads(run_file.read_text())
            run["run_file"] = run_file.name
            run["instance"] = rec["id"]
            runs.append(run)
    if not runs:
        print(f"no {tag}-*.json in {', '.join(map(str, dirs))}", file=sys.stderr)
        return 2
    first = runs[0]
    name, _, version = first["schema"].rpartition("/")
    packed = {"schema": f"{name}.runs/{version}",
              "program": first["program"], "device": first["device"],
              "date": instances[0]["started_utc"][:10], "instances": instances, "doc": doc,
              "runs": runs}
    pathlib.Path(out).write_text(json.dumps(packed, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
