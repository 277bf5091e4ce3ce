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
    if len(argv) < 6:
        print(__doc__, file=sys.stderr)
        return 2
    tag, out, doc, kind = argv[1:5]
    dirs = [pathlib.Path(d) for d in argv[5:]]
    instances, runs = [], []
    for d in dirs:
        rec = instance_record(d / "instance.txt", kind)
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
