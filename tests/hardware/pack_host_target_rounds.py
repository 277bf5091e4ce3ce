#!/usr/bin/env python3
"""Packs run_host_target_rounds.sh's runs (one folder per machine instance, as its tar holds) into
the dated measurement files gpunvme validate reads for the host-thread target:

  PREFIX-strategies.json.gz  every strategy case (s-*: untraced; p-*: op profiles), schema gpunvme.hw/1
  PREFIX-controller.json     every controller-only case (c-t<threads>-r<round>), the calibration set
  PREFIX-host-polls.json     host_polls_under_copies' rows, per instance
  PREFIX-warp-host-access.json  warp_host_access' figures, per instance
  PREFIX-under-polls.json    run_controller_under_polls.sh's cases (u-w<W>-r<round>): the target alone
                             while W GPU warps sweep its CQ rings, the calibration rows of
                             copy_op_ring_sweeper_ns (scripts/copy-ring-sweepers.py)

Each case keeps what gpunvme-hw wrote, with its instance, run file, seed, exit status and command.
A file is written where the folders hold its runs.

  pack_host_target_rounds.py PREFIX DATE DOC ID=DIR[:KIND] ...

PREFIX is a path and file-name stem, e.g. configs/measurements/hw-host-target-h200-2026-11-29.
"""
import gzip
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pack_feeder_packing import instance_record  # noqa: E402  (the instances' records alike)


def runs_of(folder: Path, prefix: str, ident: str):
    manifest = {}
    for line in (folder / "manifest.txt").read_text().splitlines():
        tag, _start, _end, rc, *args = line.split(" ")
        manifest[tag] = (int(rc), " ".join(args))
    for path in sorted(folder.glob(prefix + "-*.json")):
        run = json.loads(path.read_text())
        rc, args = manifest[path.stem]
        seed = args.split("--seed ")[1].split(" ")[0] if "--seed " in args else None
        for c in run["cases"]:
            c.update(instance=ident, run_file=path.name, exit_status=rc, command="gpunvme-hw " + args)
            if seed is not None:
                c["seed"] = int(seed)
            yield run, c


def main() -> None:
    prefix, date, doc = sys.argv[1], sys.argv[2], sys.argv[3]
    instances, strategy_cases, controller_cases, under_polls = [], [], [], []
    polls, accesses = {}, {}
    header = None
    for spec in sys.argv[4:]:
        ident, _, rest = spec.partition("=")
        folder, _, kind = rest.partition(":")
        folder = Path(folder)
        instances.append(instance_record(folder, ident, kind or "nvidia-h200"))
        # Run files by tag: s- and p- strategy cases, c- controller-only, u- under polls.
        for tag, into in (("s", strategy_cases), ("p", strategy_cases), ("c", controller_cases),
                          ("u", under_polls)):
            for run, c in runs_of(folder, tag, ident):
                header = header or {k: run[k] for k in ("device", "target", "program", "harness")}
                into.append(c)
        for name, into in (("host-polls-under-copies.json", polls), ("warp-host-access.json", accesses)):
            if (folder / name).exists():
                into[ident] = json.loads((folder / name).read_text())
    device = dict(header["device"])
    device.pop("uuid", None)  # each instance's UUID is in instances
    common = {"date": date, "device": device, "program": header["program"],
              "harness": header["harness"], "instances": instances}
    strategies = {"schema": "gpunvme.hw/1", **common, "target": header["target"],
                  "doc": doc + " Strategy cases: s-<strategy>-r<round> untraced (--trace 0, seed = round), "
                  "p-<strategy> op profiles (--trace 3, seed 1).", "cases": strategy_cases}
    target = dict(header["target"])
    target.pop("threads", None)  # each case names its target_threads
    controller = {"schema": "gpunvme.hw_controller/1", **common, "target": target,
                  "doc": doc + " Controller-only cases: c-t<threads>-r<round>, the host target alone "
                  "fed by host threads (no GPU strategy), after each round's strategy cases: the "
                  "calibration set of gpunvme validate (the 4-thread runs, as the strategy cases use).",
                  "cases": controller_cases}
    if strategy_cases:
        with gzip.open(prefix + "-strategies.json.gz", "wt") as f:
            json.dump(strategies, f, indent=0)
    if controller_cases:
        with gzip.open(prefix + "-controller.json.gz", "wt") as f:
            json.dump(controller, f, indent=0)
    if under_polls:
        Path(prefix + "-under-polls.json").write_text(json.dumps(
            {"schema": "gpunvme.hw_controller/1", **common, "target": target,
             "doc": doc + " Controller-only cases u-w<W>-r<round> (tests/hardware/"
             "run_controller_under_polls.sh): the host target alone, fed by host threads at depths "
             "8, 32 and 64, while W GPU warps read its 32 CQ rings' entries one after another "
             "(--host-pollers W --host-poll sweep), a batch's buffers adjacent (one copy a batch).",
             "cases": under_polls}, indent=0) + "\n")
    for suffix, schema, runs in (("host-polls", "gpunvme.host_polls_under_copies/1", polls),
                                 ("warp-host-access", "gpunvme.warp_host_access/1", accesses)):
        if runs:
            doc_line = next(iter(runs.values())).get("method", "")
            Path(f"{prefix}-{suffix}.json").write_text(json.dumps(
                {"schema": schema, "date": date, "device": device["name"], "instances": instances,
                 "doc": doc, "method": doc_line, "runs": runs}, indent=1) + "\n")
    print(f"{len(strategy_cases)} strategy cases, {len(controller_cases)} controller-only cases, "
          f"{len(under_polls)} under-polls cases, "
          f"{len(polls)} host-polls runs, {len(accesses)} warp-host-access runs")


if __name__ == "__main__":
    main()
