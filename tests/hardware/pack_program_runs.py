#!/usr/bin/env python3
"""Packs block_placement_beside_target runs of several machine instances into
one measurement file (schema gpunvme.block_placement_beside_target.runs/1).

  pack_block_placement.py OUT.json DOC REQUESTED_KIND DIR [DIR ...]

Each DIR is one instance's $OUT of run_block_placement_beside_target.sh: its
instance.txt (the record target_runs_lib.sh writes) and bpt-N.json. The runs
are kept whole, in instance then run order, each naming its instance."""
import json
import pathlib
import sys


def instance_record(path: pathlib.Path, requested_kind: str) -> dict:
    rec = {}
    for line in path.read_text().splitlines():
        key, _, value = line.partition(" ")
        if key in ("instance", "started_utc", "boot_id", "hostname", "nproc", "cpu", "finished_utc"):
            rec["id" if key == "instance" else key] = value
        elif key == "binary":
            binary, md5 = value.split()
            rec["binary"], rec["binary_md5_12"] = binary, md5
        elif key == "clocks_now":
            rec["clocks_at_start"] = value
        elif key.startswith("NVIDIA"):
            # nvidia-smi's line: name, uuid, driver, bus id, SM clock, memory clock,
            # power limit, persistence, compute mode.
            f = [x.strip() for x in line.split(",")]
            rec.update(gpu=f[0], gpu_uuid=f[1], driver=f[2], pci_bus_id=f[3],
                       sm_clock_max_mhz=int(f[4].split()[0]),
                       memory_clock_max_mhz=int(f[5].split()[0]),
                       power_limit_w=float(f[6].split()[0]), persistence_mode=f[7],
                       compute_mode=f[8])
        elif key == "built_here":
            rec["built_here"] = True
    rec["requested_kind"] = requested_kind
    return rec


def main(argv: list) -> int:
    if len(argv) < 5:
        print(__doc__, file=sys.stderr)
        return 2
    out, doc, kind, dirs = argv[1], argv[2], argv[3], [pathlib.Path(d) for d in argv[4:]]
    instances, runs = [], []
    for d in dirs:
        rec = instance_record(d / "instance.txt", kind)
        instances.append(rec)
        for run_file in sorted(d.glob("bpt-*.json")):
            run = json.loads(run_file.read_text())
            run["run_file"] = run_file.name
            run["instance"] = rec["id"]
            runs.append(run)
    if not runs:
        print(f"no bpt-*.json in {', '.join(map(str, dirs))}", file=sys.stderr)
        return 2
    first = runs[0]
    packed = {"schema": "gpunvme.block_placement_beside_target.runs/1",
              "program": first["program"], "device": first["device"],
              "date": instances[0]["started_utc"][:10], "instances": instances, "doc": doc,
              "runs": runs}
    pathlib.Path(out).write_text(json.dumps(packed, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
