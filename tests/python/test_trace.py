"""gpunvme.run(trace=...): the CLI's --trace, --trace-limit-mb and --trace-window."""

import json

import pytest

import gpunvme


def strip_wall_clock(result):
    result = json.loads(json.dumps(result))
    for key in gpunvme._native.wall_clock_fields():
        result["summary"].pop(key, None)
    return result


def slices(trace):
    """(start, end) in microseconds of every slice and async event of a trace."""
    out = []
    for event in trace["traceEvents"]:
        if event["ph"] in ("M", "C"):
            continue
        start = float(event["ts"])
        out.append((start, start + float(event.get("dur", 0.0))))
    return out


def read_trace(path):
    with open(path) as f:
        return json.load(f)


def test_run_writes_a_trace_that_parses(small_config, tmp_path):
    path = tmp_path / "run.trace.json"
    traced = gpunvme.run(small_config, trace=str(path))
    trace = read_trace(path)
    processes = {e["args"]["name"] for e in trace["traceEvents"]
                 if e["ph"] == "M" and e["name"] == "process_name"}
    assert any(name.startswith("GPU ") for name in processes), processes
    assert any(name.startswith("SSD ") for name in processes), processes
    events = slices(trace)
    assert len(events) > 100
    # Tracing leaves the result as it is.
    plain = gpunvme.run(small_config)
    assert strip_wall_clock(traced) == strip_wall_clock(plain)


def test_trace_window_keeps_only_the_events_that_overlap_it(small_config, tmp_path):
    full_path, window_path = tmp_path / "full.json", tmp_path / "window.json"
    gpunvme.run(small_config, trace=full_path)  # a path-like object is taken too
    full = slices(read_trace(full_path))
    last = max(end for _, end in full)
    start, end = last / 3, 2 * last / 3
    gpunvme.run(small_config, trace=str(window_path), trace_window=(start, end))
    windowed = slices(read_trace(window_path))
    assert windowed and len(windowed) < len(full)
    # Microsecond timestamps are printed rounded; allow a nanosecond.
    for s, e in windowed:
        assert e >= start - 1e-3 and s <= end + 1e-3, (s, e)
    # From the full trace by hand: the slices that overlap the window.
    expected = [(s, e) for s, e in full if e >= start - 1e-3 and s <= end + 1e-3]
    assert abs(len(windowed) - len(expected)) <= len(expected) // 100 + 2
    # An open end keeps everything from the start on.
    gpunvme.run(small_config, trace=str(window_path), trace_window=(start, None))
    assert all(e >= start - 1e-3 for _, e in slices(read_trace(window_path)))


def test_trace_limit_caps_the_file(small_config, tmp_path):
    path = tmp_path / "small.json"
    gpunvme.run(small_config, trace=str(path), trace_limit_mb=0.1)
    assert path.stat().st_size <= 0.1e6 + 4096
    read_trace(path)  # still a whole JSON document


@pytest.mark.parametrize("kwargs, field", [
    ({"trace_limit_mb": 0}, "trace_limit_mb"),
    ({"trace_window": (5, 1)}, "trace_window"),
    ({"trace_window": ("a", 1)}, "trace_window"),
    ({"trace_window": 5}, "trace_window"),
])
def test_bad_trace_options_are_config_errors(small_config, tmp_path, kwargs, field):
    with pytest.raises(gpunvme.ConfigError) as error:
        gpunvme.run(small_config, trace=str(tmp_path / "t.json"), **kwargs)
    assert field in str(error.value)


def test_a_window_without_a_trace_is_refused(small_config):
    with pytest.raises(gpunvme.ConfigError, match="needs a trace file"):
        gpunvme.run(small_config, trace_window=(0, 10))
