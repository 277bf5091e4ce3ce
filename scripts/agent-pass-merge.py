#!/usr/bin/env python3
"""Merges runs of tests/hardware/agent_pass.cu into one measurement file.

Each run (the program's JSON, schema gpunvme.agent_pass/1) holds, per agent
kernel (k_agent_loop, io_kernel, agent_kernel), the median over its launches
unprofiled and profiled, and the profiled run's op-profile split and calls per
32 requests. The merged file gives per kernel the median, minimum and maximum
over the runs of each figure (what `gpunvme validate --microbench` reads), the
first run's calls, the ptxas figures of the build and each run's figures.

  scripts/agent-pass-merge.py --runs R1.json ... --build-log BUILD.log \
      --instance INSTANCE.json --date 2026-11-29 --build "..." --doc "..." -o OUT.json

INSTANCE.json is one `instances` entry (boot id, GPU, driver, clocks, ...).
Exit status 2 on a run that is not an agent_pass result, naming the file and
the JSON path.
"""
import argparse
import json
import re
import statistics
import sys

KERNELS = ("k_agent_loop", "io_kernel", "agent_kernel")


def fail(path, where, value, allowed):
    print(f"{path}: {where}: {value!r}: {allowed}", file=sys.stderr)
    sys.exit(2)


def spread(values):
    return {"median": round(statistics.median(values), 2), "min": min(values), "max": max(values)}


def ptxas_figures(log_text):
    """Registers, stack frame and spills of each agent kernel's entry."""
    out = {}
    names = {"k_agent_loop": "12k_agent_loop", "io_kernel": "9io_kernel", "agent_kernel": "12agent_kernel"}
    blocks = re.split(r"ptxas info\s+: Compiling entry function ", log_text)
    for block in blocks[1:]:
        mangled = block.split("'", 2)[1] if block.startswith("'") else ""
        for kernel, tag in names.items():
            if tag not in mangled or kernel in out:
                continue
            frame = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", block)
            regs = re.search(r"Used (\d+) registers", block)
            if frame and regs:
                out[kernel] = {
                    "registers": int(regs.group(1)),
                    "stack_frame_bytes": int(frame.group(1)),
                    "spill_stores_bytes": int(frame.group(2)),
                    "spill_loads_bytes": int(frame.group(3)),
                }
    return out


def load_run(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        fail(path, "$", str(e), "a JSON file written by agent_pass")
    if doc.get("schema") != "gpunvme.agent_pass/1":
        fail(path, "$.schema", doc.get("schema"), 'expected "gpunvme.agent_pass/1"')
    rows = doc.get("agent", {}).get("rows")
    if not isinstance(rows, list) or not rows:
        fail(path, "$.agent.rows", rows, "a non-empty list of kernel rows")
    figures = {"intake": doc.get("intake", {}).get("ns_per_pass")}
    for i, row in enumerate(rows):
        kernel = row.get("kernel")
        if kernel not in KERNELS:
            fail(path, f"$.agent.rows[{i}].kernel", kernel, f"one of {', '.join(KERNELS)}")
        value = row.get("event_ns_per_32_requests")
        if not isinstance(value, (int, float)) or value <= 0:
            fail(path, f"$.agent.rows[{i}].event_ns_per_32_requests", value, "a positive number of ns")
        if row.get("profiled"):
            figures[f"{kernel}_profiled"] = value
            figures[f"{kernel}_warp"] = row.get("warp_ns_per_32_requests")
            figures[f"{kernel}_split"] = row.get("split_ns_per_32_requests", {})
            figures[f"{kernel}_calls"] = row.get("calls_per_32_requests", {})
        else:
            figures[f"{kernel}_unprofiled"] = value
    return doc, figures


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", nargs="+", required=True)
    ap.add_argument("--build-log", required=True)
    ap.add_argument("--instance", required=True)
    ap.add_argument("--date", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--doc", required=True)
    ap.add_argument("-o", "--out", required=True)
    args = ap.parse_args()

    runs = [load_run(p) for p in args.runs]
    first_doc = runs[0][0]
    with open(args.build_log) as f:
        ptxas = ptxas_figures(f.read())
    with open(args.instance) as f:
        instance = json.load(f)

    out = {
        "schema": "gpunvme.agent_pass/1",
        "program": "tests/hardware/agent_pass.cu",
        "date": args.date,
        "device": first_doc["device"],
        "instances": [instance],
        "build": args.build,
        "runs": len(runs),
        "launches_per_figure": first_doc.get("launches"),
        "doc": args.doc,
        "intake": {"ns_per_pass_of_32": spread([r["intake"] for _, r in runs])},
    }
    out["intake"]["ns_per_request"] = round(out["intake"]["ns_per_pass_of_32"]["median"] / 32, 2)
    for kernel in KERNELS:
        if f"{kernel}_unprofiled" not in runs[0][1]:
            continue
        missing = [p for p, (_, r) in zip(args.runs, runs) if f"{kernel}_profiled" not in r]
        if missing:
            fail(missing[0], "$.agent.rows", kernel, "a profiled row for every kernel of the first run")
        unprofiled = spread([r[f"{kernel}_unprofiled"] for _, r in runs])
        block = {
            "ptxas": ptxas.get(kernel),
            "ns_per_32_requests_unprofiled": unprofiled,
            "ns_per_request_unprofiled": round(unprofiled["median"] / 32, 2),
            "ns_per_32_requests_profiled": spread([r[f"{kernel}_profiled"] for _, r in runs]),
            "profile_split_ns_per_32_requests": {
                kind: spread([r[f"{kernel}_split"][kind] for _, r in runs])
                for kind in runs[0][1][f"{kernel}_split"]
            },
            "profile_calls_per_32_requests_run1": runs[0][1][f"{kernel}_calls"],
        }
        out[kernel] = block
    out["per_run"] = [r for _, r in runs]
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
