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
- the footprint runs: per namespace image and k, the batch against the buffers written fitted
  linear in MiB and linear in log2 MiB (worst residual of each), and k = 32 over k = 1 split into a
  part at no buffers and a part per MiB;
- the host-thread target at 4 threads with k = 1, 2, 4, 32 active queues (queue q served by thread
  (q - 1) % 4: k = 1, 2, 4 keep k threads busy, 32 keeps four busy with eight queues each).

Usage: scripts/target-concurrency.py [FILE.json ...]
"""

import math
import os
import statistics
import sys

import measurement_files

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


def first_in_process(case):
    """Whether the case was its process's first (runs list their depths 1,8,32 or 32,8,1 or
    run depth 32 alone: the first case of a process ran slower at small k, see the README)."""
    return case["depth_order"].split(",")[0] == str(case["depth"])


def service(case):
    return case["target"]["service_ns"]["mean"]


def ok(case):
    return not case.get("failed") and case["errors"] == 0 and case.get("data_mismatches", 0) == 0 \
        and case.get("timed_out_warps", 0) == 0 and not case["target"].get("violations") \
        and case["target"].get("errors", 0) == 0


def fmt_us(ns):
    return f"{ns / 1e3:6.2f}"


def footprint_forms(groups):
    """Which form of the batch time against the buffers' footprint the footprint runs support:
    per namespace image, k and I/O count with three or more buffer sizes, the least-squares line
    through (MiB, batch) and through (log2 MiB, batch), each with its worst residual; and, where
    k = 1 and k = 32 share two footprints, the k = 32 over k = 1 difference extrapolated to no
    buffers (what the busy count adds without the footprint)."""
    series = {}
    for (ns, slots, k, ios), sel in groups.items():
        series.setdefault((ns, k, ios), []).append((slots * 4 / 1024,
                                                    statistics.median(service(c) for c in sel)))
    lines = {}
    for (ns, k, ios), points in sorted(series.items()):
        points.sort()
        if len(points) >= 2:
            lines[(ns, k, ios)] = line_fit(points)
        if len(points) < 3:
            continue
        for name, tx in (("MiB", lambda x: x), ("log2 MiB", math.log2)):
            fixed, per = line_fit([(tx(x), y) for x, y in points])
            worst = max(abs(fixed + per * tx(x) - y) for x, y in points)
            print(f"     footprint form, namespace {ns} MiB, k {k}, ios {ios}: batch = {fmt_us(fixed)} us"
                  f" + {per:6.1f} ns per {name}, worst residual {worst:5.0f} ns")
    for (ns, k, ios), (fixed, per) in sorted(lines.items()):
        one = lines.get((ns, 1, ios))
        if k == 1 or one is None:
            continue
        print(f"     namespace {ns} MiB, ios {ios}: k {k} over k 1 = {fmt_us(fixed - one[0])} us at no"
              f" buffers + {per - one[1]:5.1f} ns per MiB of buffers ({per:5.1f} against {one[1]:5.1f}"
              f" ns per MiB)")


def report(path):
    data = measurement_files.load_json(path)
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
              " depth 1 us  depth 8 us | @32 first  after 1,8 (IQR %) | SM clock MHz (feeder, smi)")
        base = None
        rows, firsts, afters = {}, {}, {}
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
            first = statistics.median(service(c) for c in sweep if c["queues"] == k and c["depth"] == 32
                                      and first_in_process(c))
            after, after_iqr = spread([service(c) for c in sweep if c["queues"] == k and c["depth"] == 32
                                       and not first_in_process(c)])
            if base is None:
                base = (m32, fixed, per)
            rows[k] = m32
            firsts[k] = first
            afters[k] = after
            clock = f"{statistics.median(clocks):6.0f}" if clocks else "     -"
            smi_s = f"{statistics.median(smi):6.0f}" if smi else "     -"
            print(f"  {k:2d}  {len(at[32]):4d}  {fmt_us(m32):>11}  {iqr32:5.1f}  {m32 / base[0]:6.3f} |"
                  f" {fmt_us(fixed):>13}  {per:10.1f}  {(fixed + 32 * per) / (base[1] + 32 * base[2]):5.3f} |"
                  f" {fmt_us(meds.get(1, 0)):>10}  {fmt_us(meds.get(8, 0)):>10} |"
                  f" {fmt_us(first):>9}  {fmt_us(after):>9} ({after_iqr:3.1f}) | {clock} {smi_s}")
        summary[iid] = rows
        for name, series in (("all runs", rows), ("depth 32 after 1,8", afters)):
            if len(series) < 3 or 1 not in series:
                continue
            # batch(k) / batch(1) = 1 + slope (k - 1), least squares through (1, 1)
            xs = [(k - 1, series[k] / series[1] - 1) for k in series]
            slope = sum(x * y for x, y in xs) / sum(x * x for x, _ in xs)
            worst = max(abs(1 + slope * x - (1 + y)) for x, y in xs)
            ratios = ", ".join(f"{series[k] / series[1]:.3f}" for k in sorted(series))
            print(f"   {name}: batch(k) / batch(1) = {ratios}; = 1 + {slope:.5f} (k - 1):"
                  f" {100 * slope:.3f} % per further busy warp, worst residual {100 * worst:.2f} points")
        busy_share = [(c["queues"], c["target"]["busy_threads"] * c["target"]["busy_ns_median"]
                       / (c["wall_ms"] * 1e6)) for c in sweep if c["depth"] == 32]
        if busy_share:
            shares = ", ".join(f"k {k}: {statistics.median(v for kk, v in busy_share if kk == k):.1f}"
                               for k in ks)
            print(f"   serving warps busy at once, mean over a run (depth 32): {shares}")
        def reference(case):
            """The k sweep's depth-32 median in the same position in its process."""
            return (firsts if first_in_process(case) else afters), \
                ("first" if first_in_process(case) else "after 1,8")

        def variant_rows(title, cases_of_variant, key, label):
            if not cases_of_variant:
                return
            print(title)
            groups = {}
            for c in cases_of_variant:
                if c["depth"] == 32:
                    refs, where = reference(c)
                    groups.setdefault((key(c), where), []).append(c)
            for (value, where), sel in sorted(groups.items()):
                refs, _ = reference(sel[0])
                m, iqr = spread([service(c) for c in sel])
                k = sel[0]["queues"]
                ref = refs.get(k)
                against = f"  8-SM spinning-feeder k sweep {fmt_us(ref)} us: x {m / ref:5.3f}" if ref else ""
                x1 = f"  x k=1 {m / refs[1]:5.3f}" if 1 in refs else ""
                # The target records a gap only between back-to-back batches (no idle pass
                # between them): with a think time there is none.
                gaps = [c["target"]["batch_gap_ns"]["mean"] for c in sel
                        if c["target"]["batch_gap_ns"].get("count", 1) > 0]
                gap_s = f"{fmt_us(statistics.median(gaps))} us" if gaps else "    none back to back"
                at_once = statistics.median(c["target"]["busy_threads"] * c["target"]["busy_ns_median"]
                                            / (c["wall_ms"] * 1e6) for c in sel)
                clocks = [c["sm_clock_mhz"] for c in sel if c.get("sm_clock_mhz")]
                clock = f"  SM clock {statistics.median(clocks):5.0f} MHz" if clocks else ""
                print(f"     {label(value)} ({where}): {len(sel):3d} runs  {fmt_us(m)} us  IQR {iqr:4.1f} %"
                      f"{against}{x1}  gap {gap_s}  busy at once {at_once:4.1f}{clock}")

        variant_rows("   one serving warp per SM (--gpu-target-sms 32), depth 32:",
                     [c for c in mine if c["variant"] == "one_warp_per_sm"],
                     lambda c: c["queues"], lambda v: f"k {v:2d}")
        variant_rows("   feeder think time (--feed-gap-ns), k = 32, depth 32:",
                     [c for c in mine if c["variant"] == "think_time"],
                     lambda c: c.get("feed_gap_ns", 0), lambda v: f"think {v / 1e3:4.0f} us")
        variant_rows("   feeder think time drawn from [0, 2 x mean] (--feed-gap-random 1), k = 32, depth 32:",
                     [c for c in mine if c["variant"] == "think_time_random"],
                     lambda c: c.get("feed_gap_ns", 0), lambda v: f"think {v / 1e3:4.0f} us mean")
        variant_rows("   feeders sleeping 2 us between CQ polls (--feed-poll-sleep-ns 2000), depth 32:",
                     [c for c in mine if c["variant"] == "feeder_poll_sleep"],
                     lambda c: c["queues"], lambda v: f"k {v:2d}")
        foot = [c for c in mine if c["variant"] == "footprint" and c["depth"] == 32]
        if foot:
            print("   footprint against concurrency, depth 32 after 1,8 (buffers = queues x entries x 4 KiB;"
                  " the namespace image random-read):")
            groups = {}
            for c in foot:
                groups.setdefault((c["namespace_mib"], c["queues"] * c["queue_entries"], c["queues"],
                                   c["ios"]), []).append(c)
            for (ns, slots, k, ios), sel in sorted(groups.items(), key=lambda x: (x[0][0], x[0][1], x[0][3], x[0][2])):
                m, iqr = spread([service(c) for c in sel])
                same = groups.get((ns, slots, 1, ios)) if k != 1 else None
                vs = ""
                if same:
                    vs = f"  x k=1 at the same footprint {m / statistics.median(service(c) for c in same):5.3f}"
                print(f"     namespace {ns:5d} MiB  buffers {slots * 4 / 1024:6.2f} MiB  k {k:2d}  ios {ios:5d}:"
                      f" {len(sel):3d} runs  {fmt_us(m)} us  IQR {iqr:4.1f} %{vs}")
            footprint_forms(groups)
        host = [c for c in mine if c["variant"] == "host_target"]
        if host:
            print("   host-thread target, 4 threads, depth 32 (batch line fitted per run on its own"
                  " batches, at 32 commands; command service time):")
            hbase = None
            for k in sorted({c["queues"] for c in host}):
                sel = [c for c in host if c["queues"] == k]
                at32 = [c["target"]["batch_fixed_ns"] + 32 * c["target"].get("batch_per_command_ns", 0)
                        for c in sel]
                m, iqr = spread(at32)
                sm, siqr = spread([service(c) for c in sel])
                hbase = hbase or m
                busy = statistics.median(c["target"]["busy_threads"] for c in sel)
                size = statistics.median(c["target"]["batch_commands_mean"] for c in sel)
                print(f"     k {k:2d}: {len(sel):3d} runs  line at 32 {fmt_us(m)} us  IQR {iqr:4.1f} %"
                      f"  x k=1 {m / hbase:5.3f}  service {fmt_us(sm)} us  IQR {siqr:4.1f} %"
                      f"  batch {size:4.1f} commands  busy threads {busy:.0f}")
        colocated = [c.get("feeders_on_target_sms", 0) for c in mine if "sm_clock_mhz" in c]
        if colocated:
            print(f"   feeder warps on a serving SM: max {max(colocated)} per case, "
                  f"{sum(1 for x in colocated if x)} of {len(colocated)} cases")
    return summary


def main():
    paths = sys.argv[1:] or measurement_files.glob_json(
        os.path.join(MEASUREMENTS, "hw-gpu-target-concurrency-*.json"))
    if not paths:
        sys.exit("no hw-gpu-target-concurrency-*.json files")
    for p in paths:
        report(p)
        print()


if __name__ == "__main__":
    main()
