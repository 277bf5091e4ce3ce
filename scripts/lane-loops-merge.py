#!/usr/bin/env python3
"""Merges tests/hardware/lane_loops_and_turns.cu runs from device calls into one
measurement file (schema gpunvme.lane_loops_and_turns/1, as
configs/measurements/lane-loops-and-turns-*.json).

  lane-loops-merge.py OUT.json DOC GPU_PREFIX DIR[:ID[:REQUESTED]]...

Each DIR holds instance.txt (the call's record: started_utc, boot_id, the
nvidia-smi line with name, UUID, driver, bus id, clocks, ...), llt-N.json (the
program's runs) and smi.csv (clocks every 200 ms). `derived` holds the medians
over every run of every instance: the one-word figures per pattern, back-off
and warp count, and the queue_turns figures (ns per turn per queue).
"""
import csv
import json
import statistics
import sys
from pathlib import Path


def instance(d: Path, ident: str, requested: str) -> dict:
    rec = {"id": ident}
    for line in (d / "instance.txt").read_text().splitlines():
        key, _, value = line.partition(" ")
        if key in ("started_utc", "finished_utc", "boot_id", "hostname", "nproc"):
            rec[key] = value
        elif line.startswith("NVIDIA") or ", GPU-" in line:
            f = [x.strip() for x in line.split(",")]
            rec.update(gpu=f[0], gpu_uuid=f[1], driver=f[2], pci_bus_id=f[3],
                       sm_clock_max_mhz=int(f[4].split()[0]), memory_clock_max_mhz=int(f[5].split()[0]),
                       power_limit_w=float(f[6].split()[0]), persistence_mode=f[7], compute_mode=f[8])
    clocks = []
    with open(d / "smi.csv") as f:
        for row in csv.reader(f):
            try:
                clocks.append(int(row[1].split()[0]))
            except (IndexError, ValueError):
                pass
    busy = [c for c in clocks if c > 1000]
    if busy:
        rec["sm_clock_under_load_mhz_median"] = statistics.median(busy)
        rec["sm_clock_under_load_mhz_min"] = min(busy)
    rec["requested_kind"] = requested
    return rec


def main() -> None:
    out, doc, prefix = sys.argv[1], sys.argv[2], sys.argv[3]
    instances, runs = [], []
    for spec in sys.argv[4:]:
        parts = spec.split(":")
        d = Path(parts[0])
        rec = instance(d, prefix + parts[1], parts[2] if len(parts) > 2 else "")
        instances.append(rec)
        for f in sorted(d.glob("llt-*.json")):
            run = json.loads(f.read_text())
            run["instance"] = rec["id"]
            runs.append(run)
    one_word, queue, loops = {}, {}, {}
    for run in runs:
        for r in run.get("one_word", []):
            key = f"{r['pattern']} backoff {r['backoff_ns']}"
            one_word.setdefault(key, {}).setdefault(str(r["warps"]), []).append(r["ns_per_op"])
        for r in run.get("queue_turns", {}).get("rows", []):
            key = f"{r['pattern']} backoff {r['backoff_ns']}"
            queue.setdefault(key, {}).setdefault(str(r["warps"]), []).append(r["ns_per_turn"])
        for name, r in run.get("lane_loops", {}).get("figures", {}).items():
            if r["passes"]:
                loops.setdefault(name, []).append(r["ns_per_pass"])
    med = lambda table: {k: {w: round(statistics.median(v), 2) for w, v in by.items()} for k, by in table.items()}
    spread = lambda table: {k: {w: [min(v), max(v), len(v)] for w, v in by.items()} for k, by in table.items()}
    result = {
        "schema": "gpunvme.lane_loops_and_turns/1",
        "program": "tests/hardware/lane_loops_and_turns.cu",
        "device": runs[0]["device"],
        "instances": instances,
        "doc": doc,
        "derived": {
            "lane_loop_pass_ns": {k: round(statistics.median(v), 3) for k, v in loops.items()},
            "one_word_ns_per_op_median": med(one_word),
            "queue_turns_ns_per_turn_median": med(queue),
            "queue_turns_ns_per_turn_min_max_runs": spread(queue),
        },
        "runs": runs,
    }
    Path(out).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
