"""A run's result document and the lookups on it (no configuration, no runs)."""

import json

from . import _native


# Column order of a latency summary, as the CLI prints it.
_SUMMARY_ORDER = ["count", "mean", "min", "p50", "p90", "p99", "p999", "max"]


class Result(dict):
    """A run's result: the JSON document the CLI writes with ``--out``, as a dict.

    Keys (see README "Results"): ``schema``, ``config`` (fully resolved), ``summary``,
    ``stages``, ``ssds``, ``gpus``, ``pcie``, ``paths``, plus any the scenario kind
    adds. Everything except ``summary.wall_time_s`` is a pure function of the
    configuration and seed. The methods give the common views as DataFrames.
    """

    def table(self):
        """The CLI's human-readable summary (str)."""
        return _native.summary_table(json.dumps(self))

    def flat(self, prefix=""):
        """The summary flattened to one level: ``iops``, ``latency_ns.p99``, ... (dict)."""
        return flatten(self.get("summary", {}), prefix)

    def stages_frame(self):
        """Per-stage latency distributions in ns: one row per stage with samples.

        Columns: count, mean, min, p50, p90, p99, p999, max (whatever the result holds).
        """
        import pandas as pd

        rows = {k: v for k, v in self.get("stages", {}).items() if v.get("count", 0) > 0}
        frame = pd.DataFrame.from_dict(rows, orient="index").rename_axis("stage")
        order = [c for c in _SUMMARY_ORDER if c in frame.columns]
        return frame[order + [c for c in frame.columns if c not in order]]

    def ssds_frame(self):
        """Per-SSD statistics, one row per SSD, nested figures flattened to dotted columns."""
        import pandas as pd

        rows = {k: flatten(v) for k, v in self.get("ssds", {}).items()}
        return pd.DataFrame.from_dict(rows, orient="index").rename_axis("ssd")

    def error_handling_frame(self):
        """The GPU path's error handling through the host, one row per SSD.

        Columns (``error_policy`` fail or retry; see README "GPU-side error handling"):
        signalled, retries, retried_ok, failed, resets, reset_retries, reset_recovery_ns,
        host_ns_per_error, gpu_wait_ns_per_error, stalled_lane_ns and
        ``queue_stalled_lane_ns.QID`` per queue that stalled. Empty without a policy.
        """
        import pandas as pd

        rows = {
            k: flatten(v["error_handling"])
            for k, v in self.get("ssds", {}).items()
            if "error_handling" in v
        }
        return pd.DataFrame.from_dict(rows, orient="index").rename_axis("ssd")

    def links_frame(self):
        """Per-link-direction PCIe statistics (utilization, TLPs, bytes), one row each."""
        import pandas as pd

        links = self.get("pcie", {}).get("links", {})
        if isinstance(links, dict):
            rows = {k: flatten(v) for k, v in links.items()}
            return pd.DataFrame.from_dict(rows, orient="index").rename_axis("link")
        return pd.DataFrame([flatten(v) for v in links])

    def remote_frame(self):
        """A remote path's seams (``remote_staged``, ``nvmf_gpudirect``, ``dpu``), one row.

        Columns: path, initiator, target, the payload bytes through the GPU host's and the
        storage host's memory, copies, redirected transfers, the NICs' translation lookups
        and misses (``registrations.*``), core ns per I/O (host, DPU, target) and the
        per-hop means in ns (``per_hop_ns.network``, ``.nic_pcie``, ``.nic``, ``.ssd``,
        ``.target_software``, ``.initiator``). Empty for a local path.
        """
        import pandas as pd

        remote = self.get("remote")
        if not remote:
            return pd.DataFrame()
        keep = {k: v for k, v in remote.items()
                if k not in ("links", "nvmf_target", "nvmf_target_stages", "storage_hosts")}
        return pd.DataFrame([flatten(keep)])

    def storage_hosts_frame(self):
        """A remote path's storage hosts, one row each (index: host).

        Columns: target, target_nic, target_placement, ssds, ios, bytes, network_switches,
        route (node ids from the initiator's port to the target's NIC), packets each way, the
        target's core ns per I/O, offload waits, and per hop the mean ns of a packet's tail
        (``to_target.<from>><to>``, ``to_initiator.<from>><to>``). Empty for a local path.
        """
        import pandas as pd

        remote = self.get("remote")
        if not remote:
            return pd.DataFrame()
        rows = {}
        for host in remote.get("storage_hosts", []):
            row = {k: v for k, v in host.items()
                   if k not in ("host", "hops_to_target", "hops_to_initiator")}
            for direction in ("to_target", "to_initiator"):
                for hop in host["hops_" + direction]:
                    row[direction + "." + hop["hop"]] = hop["mean_ns"]
            rows[host["host"]] = row
        return pd.DataFrame.from_dict(rows, orient="index").rename_axis("host")

    def tenants_frame(self):
        """A multi-tenant run's tenants, one row each (index: tenant name).

        Columns: path, strategy, priority, weight, then the tenant's summary flattened
        (``iops``, ``bandwidth_gbps``, ``latency_ns.p99``, ...), ``throttle.*`` for a
        rate-limited tenant, ``alone.*`` (``alone.slowdown``) with compare_alone and
        ``isolation.*`` (``isolation.refused_dmas``, ``isolation.iotlb_misses``, ...).
        Empty for a run of one workload.
        """
        import pandas as pd

        rows = {}
        for tenant in self.get("tenants", []):
            row = {"priority": tenant.get("priority"), "weight": tenant.get("weight")}
            row.update(flatten(tenant.get("summary", {})))
            for key in ("throttle", "alone", "isolation"):
                if key in tenant:
                    row.update(flatten(tenant[key], key + "."))
            rows[tenant["name"]] = row
        frame = pd.DataFrame.from_dict(rows, orient="index").rename_axis("tenant")
        first = [c for c in ("path", "strategy", "priority", "weight") if c in frame.columns]
        return frame[first + [c for c in frame.columns if c not in first]]

    def tenant_stages_frame(self):
        """Per-tenant, per-stage latency distributions in ns (index: tenant, stage)."""
        import pandas as pd

        frames = {}
        for tenant in self.get("tenants", []):
            view = Result({"stages": tenant.get("stages", {})})
            frames[tenant["name"]] = view.stages_frame()
        if not frames:
            return pd.DataFrame()
        return pd.concat(frames, names=["tenant", "stage"])

    def fairness(self):
        """A multi-tenant run's fairness summary (dict; empty for one workload)."""
        return dict(self.get("fairness", {}))

    def to_json(self, path=None, indent=2):
        """JSON text of the result; also written to ``path`` when given."""
        text = json.dumps(self, indent=indent) + "\n"
        if path is not None:
            with open(path, "w") as out:
                out.write(text)
        return text

    def __repr__(self):
        s = self.get("summary", {})
        cfg = self.get("config", {})
        return "Result(scenario=%r, path=%r, iops=%r, p99_ns=%r)" % (
            cfg.get("scenario", {}).get("name"),
            s.get("path"),
            s.get("iops"),
            s.get("latency_ns", {}).get("p99"),
        )

    def _repr_pretty_(self, printer, cycle):
        printer.text(repr(self))


def flatten(document, prefix=""):
    """Nested dicts flattened to one level with dotted keys; lists are kept as values."""
    out = {}
    for key, value in document.items():
        name = prefix + key
        if isinstance(value, dict):
            out.update(flatten(value, name + "."))
        else:
            out[name] = value
    return out


def lookup(document, dotted, default=None):
    """The value at a dotted path (``"summary.latency_ns.p99"``), or ``default``."""
    at = document
    for key in dotted.split("."):
        if isinstance(at, dict) and key in at:
            at = at[key]
        elif isinstance(at, list) and key.isdigit() and int(key) < len(at):
            at = at[int(key)]
        else:
            return default
    return at
