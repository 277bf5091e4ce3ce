#!/usr/bin/env python3
"""How the NVMe target's batch time depends on how many of its serving warps are busy.

Reads the controller-only concurrency runs of `gpunvme-hw` (default: every committed
configs/measurements/hw-gpu-target-concurrency-*.json) and prints, per GPU and machine instance:

- the k sweep: k active queues (= k busy serving warps of the GPU-resident target's 32, on 8 SMs,
  4 per SM; warp w serves queue w + 1), the batch time of a 32-command batch (median and IQR over
  runs of each run's mean target service time at depth 32) and the batch line fitted through the
  depth-1, -8 and -32 medians (fixed + per command), each as a ratio to k = 1;
- one serving warp per SM (--gpu-target-sms 32): the same k at depth 32, against the 8-SM runs;
- the feeder think time (--feed-gap-ns): k = 32 at depth 32 with each feeder idle 0, 20 or 40 us
  after each round, so that every serving warp idles that long before its next batch;
- the SM clock each case ran at: the feeder warps' clock64 cycles over %globaltimer ns (runs that
  record it) and the median nvidia-smi sample (every 200 ms) over the runs of each case;
- the host-thread target at 4 threads with k = 1, 2, 4, 32 active queues (queue q served by thread
  (q - 1) % 4: k = 1, 2, 4 keep k threads busy, 32 keeps four busy with eight queues each).

Usage: scripts/target-concurrency.py [FILE.json ...]
"""

import glob
import json
import math
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MEASUREMENTS = os.path.join(ROOT, "configs", "measurements")


def quantile(values, share):
    ordered = sorted(values)
    position = (len(ordered) - 1) * share
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def spread(values):
    """Median, and the IQR as a share of it, of a list of per-run values."""
    median = statistics.median(values)
    iqr = quantile(values, 0.75) - quantile(values, 0.25)
    return median, 100.0 * iqr / median if median else 0.0


def line_fit(points):
    """Least-squares line ns = fixed + per_command * commands through (commands, ns) points."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    slope = sum((x - mx) * (y - my) for x, y in points) / sxx
    return my - slope * mx, slope


def service(case):
    return case["target"]["service_ns"]["mean"]


def ok(case):
    return not case.get("failed") and case["errors"] == 0 and case.get("data_mismatches", 0) == 0 \
        and case.get("timed_out_warps", 0) == 0 and not case["target"].get("violations") \
        and case["target"]["errors"] == 0


def fmt_us(ns):
    return f"{ns / 1e3:6.2f}"


def report(path):
    data = json.load(open(path))
    cases = [c for c in data["cases"] if ok(c)]
    failed = len(data["cases"]) - len(cases)
    print(f"== {os.path.basename(path)}: {data['device']['name']}, "
          f"{len(cases)} cases ({failed} failed or in error)")
    by_instance = {}
    for c in cases:
        by_instance.setdefault(c["instance"], []).append(c)
    ids = sorted(by_instance) + (["all"] if len(by_instance) > 1 else [])
    summary = {}
    for iid in ids:
        mine = cases if iid == "all" else by_instance[iid]
        inst = next((i for i in data["instances"] if i["id"] == iid), None)
        what = f"{inst['gpu']}, {inst['requested_kind']}, boot {inst['boot_id'][:8]}" if inst \
            else "every instance pooled"
        print(f"\n-- instance {iid} ({what})")
        sweep = [c for c in mine if c["variant"] == "k_sweep"]
        ks = sorted({c["queues"] for c in sweep})
        print("   k  runs  batch@32 us  IQR %   x k=1 | line fixed us  per cmd ns  x k=1 |"
              " depth 1 us  depth 8 us | SM clock MHz (feeder, smi)")
        base = None
        rows = {}
        for k in ks:
            at = {d: [service(c) for c in sweep if c["queues"] == k and c["depth"] == d]
                  for d in (1, 8, 32)}
            if not at[32]:
                continue
            m32, iqr32 = spread(at[32])
            meds = {d: statistics.median(v) for d, v in at.items() if v}
            fixed, per = line_fit([(d, v) for d, v in meds.items()]) if len(meds) >= 2 else (0, 0)
            clocks = [c["sm_clock_mhz"] for c in sweep if c["queues"] == k and c.get("sm_clock_mhz")]
            smi = [s["sm_clock_mhz_median"] for s in data.get("smi_summary", [])
                   if s["variant"] == "k_sweep" and s["queues"] == k and (iid == "all" or s["instance"] == iid)]
            if base is None:
                base = (m32, fixed, per)
            rows[k] = m32
            clock = f"{statistics.median(clocks):6.0f}" if clocks else "     -"
            smi_s = f"{statistics.median(smi):6.0f}" if smi else "     -"
            print(f"  {k:2d}  {len(at[32]):4d}  {fmt_us(m32):>11}  {iqr32:5.1f}  {m32 / base[0]:6.3f} |"
                  f" {fmt_us(fixed):>13}  {per:10.1f}  {(fixed + 32 * per) / (base[1] + 32 * base[2]):5.3f} |"
                  f" {fmt_us(meds.get(1, 0)):>10}  {fmt_us(meds.get(8, 0)):>10} | {clock} {smi_s}")
        summary[iid] = rows
        one = [c for c in mine if c["variant"] == "one_warp_per_sm"]
        if one:
            print("   one serving warp per SM (--gpu-target-sms 32), depth 32:")
            for k in sorted({c["queues"] for c in one}):
                v = [service(c) for c in one if c["queues"] == k]
                m, iqr = spread(v)
                ref = rows.get(k)
                against = f"  8-SM runs {fmt_us(ref)} us: x {m / ref:5.3f}" if ref else ""
                x1 = f"  x k=1 (8 SMs) {m / rows[1]:5.3f}" if 1 in rows else ""
                print(f"     k {k:2d}: {len(v):3d} runs  {fmt_us(m)} us  IQR {iqr:4.1f} %{against}{x1}")
        think = [c for c in mine if c["variant"] == "think_time"]
        if think:
            print("   feeder think time, k = 32, depth 32:")
            for gap in sorted({c["feed_gap_ns"] for c in think}):
                sel = [c for c in think if c["feed_gap_ns"] == gap]
                m, iqr = spread([service(c) for c in sel])
                g = statistics.median(c["target"]["batch_gap_ns"]["mean"] for c in sel)
                clocks = [c["sm_clock_mhz"] for c in sel if c.get("sm_clock_mhz")]
                clock = f"  SM clock {statistics.median(clocks):5.0f} MHz" if clocks else ""
                x1 = f"  x k=1 {m / rows[1]:5.3f}" if 1 in rows else ""
                print(f"     think {gap / 1e3:4.0f} us: {len(sel):3d} runs  batch {fmt_us(m)} us"
                      f"  IQR {iqr:4.1f} %  idle before a batch {fmt_us(g)} us{x1}{clock}")
        host = [c for c in mine if c["variant"] == "host_target"]
        if host:
            print("   host-thread target, 4 threads, depth 32 (batch line fitted per run on its own"
                  " batches, at 32 commands; command service time):")
            hbase = None
            for k in sorted({c["queues"] for c in host}):
                sel = [c for c in host if c["queues"] == k]
                at32 = [c["target"]["batch_fixed_ns"] + 32 * c["target"]["batch_per_command_ns"]
                        for c in sel]
                m, iqr = spread(at32)
                sm, siqr = spread([service(c) for c in sel])
                hbase = hbase or m
                busy = statistics.median(c["target"]["busy_threads"] for c in sel)
                size = statistics.median(c["target"]["batch_commands_mean"] for c in sel)
                print(f"     k {k:2d}: {len(sel):3d} runs  line at 32 {fmt_us(m)} us  IQR {iqr:4.1f} %"
                      f"  x k=1 {m / hbase:5.3f}  service {fmt_us(sm)} us  IQR {siqr:4.1f} %"
                      f"  batch {size:4.1f} commands  busy threads {busy:.0f}")
        colocated = [c.get("feeders_on_target_sms") for c in mine if "feeders_on_target_sms" in c]
        if colocated:
            print(f"   feeder warps on a serving SM: max {max(colocated)} per case, "
                  f"{sum(1 for x in colocated if x)} of {len(colocated)} cases")
    return summary


def main():
    paths = sys.argv[1:] or sorted(glob.glob(os.path.join(MEASUREMENTS, "hw-gpu-target-concurrency-*.json")))
    if not paths:
        sys.exit("no hw-gpu-target-concurrency-*.json files")
    for p in paths:
        report(p)
        print()


if __name__ == "__main__":
    main()
