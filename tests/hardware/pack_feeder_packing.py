#!/usr/bin/env python3
"""Packs run_target_feeder_packing.sh's runs (one folder per machine instance, as its tar holds)
into one dated measurement file: the instances' records, every case as gpunvme-hw wrote it (with
its instance, run file and command; op-profile runs, p-*.json, carry op_profile), and per untraced case (queues, warps to a block, wait) the median and
interquartile range of the feeders' round, the target's batch and the wait beyond the batch.

  pack_feeder_packing.py OUT.json.gz DOC COMMANDS_JSON ID=DIR[:KIND] ...
"""
import gzip
import json
import statistics
import sys
from pathlib import Path


def instance_record(folder: Path, ident: str, kind: str, binary_key: str = "hw") -> dict:
    """The machine instance's record from the folder's instance.txt (target_runs_lib.sh's), and
    from its smi.csv where the runs sampled nvidia-smi; the program's path and checksum under
    binary_key and binary_key + "_md5_12"."""
    rec = {"id": ident}
    for line in (folder / "instance.txt").read_text().splitlines():
        key, _, value = line.partition(" ")
        if key in ("started_utc", "finished_utc", "boot_id", "hostname", "nproc", "cpu"):
            rec[key] = value
        elif key == "clocks_now":
            rec["clocks_at_start"] = value
        elif key == "binary":
            path, md5 = value.rsplit(" ", 1)
            rec[binary_key], rec[binary_key + "_md5_12"] = path, md5
        elif key == "built_here":
            rec["built_here"] = True
        elif line.startswith("NVIDIA"):
            f = [x.strip() for x in line.split(",")]
            rec.update(gpu=f[0], gpu_uuid=f[1], driver=f[2], pci_bus_id=f[3],
                       sm_clock_max_mhz=int(f[4].split()[0]), memory_clock_max_mhz=int(f[5].split()[0]),
                       power_limit_w=float(f[6].split()[0]), persistence_mode=f[7], compute_mode=f[8])
    if (folder / "smi.csv").exists():
        clocks = []
        for line in (folder / "smi.csv").read_text().splitlines()[1:]:
            parts = [x.strip() for x in line.split(",")]
            if len(parts) > 1 and parts[1].endswith("MHz"):
                clocks.append(int(parts[1].split()[0]))
        busy = [c for c in clocks if c > 1000]
        rec["sm_clock_nvidia_smi_mhz_samples"] = len(clocks)
        if busy:
            rec["sm_clock_under_load_mhz_median"] = statistics.median(busy)
            rec["sm_clock_under_load_mhz_min"] = min(busy)
    rec["requested_kind"] = kind
    return rec


def quartiles(values):
    v = sorted(values)
    q = statistics.quantiles(v, n=4, method="inclusive") if len(v) > 1 else [v[0]] * 3
    return {"runs": len(v), "median": q[1], "q1": q[0], "q3": q[2], "min": v[0], "max": v[-1]}


def main() -> None:
    out, doc, commands = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    instances, cases, device, program = [], [], None, None
    for spec in sys.argv[4:]:
        ident, _, rest = spec.partition("=")
        folder, _, kind = rest.partition(":")
        folder = Path(folder)
        instances.append(instance_record(folder, ident, kind or "nvidia-h200"))
        manifest = {}
        for line in (folder / "manifest.txt").read_text().splitlines():
            tag, _start, _end, rc, *args = line.split(" ")
            manifest[tag] = (int(rc), " ".join(args))
        for path in sorted(folder.glob("f-*.json")) + sorted(folder.glob("p-*.json")):
            run = json.loads(path.read_text())
            device = device or run.get("device")
            program = program or run.get("program")
            rc, args = manifest[path.stem]
            for c in run["cases"]:
                c.update(instance=ident, run_file=path.name, exit_status=rc, command=args)
                cases.append(c)
    summary = {}
    for c in cases:
        if "op_profile" in c:
            continue  # traced: by_case summarises the untraced runs
        key = f"{c['instance']}/queues_{c['queues']}/warps_per_block_{c['feed_warps_per_block']}/{c['feed_wait']}"
        summary.setdefault(key, []).append(c)
    table = {}
    for key, cs in sorted(summary.items()):
        table[key] = {
            "feeder_warps_most_on_one_sm": sorted({c["feeder_warps_most_on_one_sm"] for c in cs}),
            "feeders_on_target_sms": sorted({c["feeders_on_target_sms"] for c in cs}),
            "failed_runs": sum(1 for c in cs if c["errors"] or c["data_mismatches"] or c["timed_out_warps"]),
            "iops": quartiles([c["iops"] for c in cs]),
            "round_ns": quartiles([c["round_ns_mean"] for c in cs]),
            "target_batch_ns": quartiles([c["target_batch_ns_mean"] for c in cs]),
            "wait_beyond_batch_ns": quartiles([c["wait_beyond_batch_ns_mean"] for c in cs]),
        }
    result = {"schema": "gpunvme.hw/1", "date": "2026-11-28", "device": device, "program": program,
              "instances": instances, "commands": commands, "doc": doc, "by_case": table,
              "cases": cases}
    with gzip.open(out, "wt") as f:
        json.dump(result, f, indent=0)
    for key, row in table.items():
        print(f"{key:55s} runs {row['iops']['runs']:2d}  round {row['round_ns']['median']:8.0f}  "
              f"batch {row['target_batch_ns']['median']:8.0f}  beyond {row['wait_beyond_batch_ns']['median']:8.0f} "
              f"[{row['wait_beyond_batch_ns']['q1']:.0f}, {row['wait_beyond_batch_ns']['q3']:.0f}]  "
              f"most/SM {row['feeder_warps_most_on_one_sm']}  failed {row['failed_runs']}")


if __name__ == "__main__":
    main()
