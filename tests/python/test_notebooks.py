"""The what-if notebooks execute headless, draw figures with data in them, and reproduce
the outputs committed with them."""

import base64
import copy
import difflib
import glob
import json
import os
import re
import sys

import pytest

from conftest import SOURCE_DIR, require

sys.path.insert(0, os.path.join(SOURCE_DIR, "scripts"))
# What is compared (printed text, text/plain and text/markdown; not images) and what is
# left out as volatile (the checkout's path, kernel file names, addresses, wall times).
from notebook_outputs import normalise, text_outputs  # noqa: E402

nbformat = require("nbformat")
nbclient = require("nbclient")

NOTEBOOKS = sorted(glob.glob(os.path.join(SOURCE_DIR, "notebooks", "*.ipynb")))

# Runs first in the kernel: records, for every figure the notebook displays, what
# each of its axes holds, so the test can check the plots themselves.
RECORDER = r'''
import matplotlib
from matplotlib.backend_bases import FigureCanvasBase
import numpy as _np
_drawn_figures = []
_print_figure = FigureCanvasBase.print_figure

def _record_figure(canvas, *args, **kwargs):
    axes = []
    for ax in canvas.figure.axes:
        lines = []
        for line in ax.get_lines():
            y = _np.asarray(line.get_ydata())
            # Category labels (a bar chart's names on the y axis) are data, never NaN.
            numeric = y.dtype.kind in "fiub"
            finite = int(_np.isfinite(y.astype(float)).sum()) if numeric else int(y.size)
            lines.append({"label": line.get_label(), "points": int(y.size), "finite": finite})
        bars = [float(p.get_height()) for p in ax.patches
                if hasattr(p, "get_height")] + [float(p.get_width()) for p in ax.patches
                                                 if hasattr(p, "get_width")]
        points = sum(len(c.get_offsets()) for c in ax.collections)
        axes.append({"title": ax.get_title(), "lines": lines, "bars": len(ax.patches),
                     "bar_sizes": bars, "points": points})
    _drawn_figures.append(axes)
    return _print_figure(canvas, *args, **kwargs)

FigureCanvasBase.print_figure = _record_figure
'''
REPORTER = "import json as _json; print('DRAWN_FIGURES=' + _json.dumps(_drawn_figures))"

# Per notebook: code run after it that prints, from the notebook's own data, what its
# conclusion must state; and the text the conclusion must then contain.
FACT_CHECKS = {
    # Queues per SSD: the conclusion names the queue count with the best warp_batch IOPS,
    # mean of the seeds (not a threshold written into the text).
    "queue-and-cid-strategies": (
        "_q = sweep2[(sweep2['scenario.strategy'] == 'warp_batch') & sweep2['error'].isna()]\n"
        "_q = _q.groupby('scenario.queues', as_index=False)['MIOPS'].mean()\n"
        "_b = _q.loc[_q['MIOPS'].idxmax()]\n"
        "print('FACT=IOPS peak at %d queue' % _b['scenario.queues'])\n"
        "print('FACT=(%.2f M IOPS)' % _b['MIOPS'])",
    ),
}


RERUN = ("re-execute the notebooks and commit them: scripts/run-notebooks.sh build "
         "(results change whenever the model or a notebook changes)")


def decimal_numbers(text):
    """Numbers with a fractional part (1.23, 0.5) in text: measured, not counted."""
    return set(re.findall(r"(?<![\w.])\d+\.\d+(?![\w.])", text))


def test_there_are_notebooks():
    names = {os.path.basename(n) for n in NOTEBOOKS}
    assert {"queue-and-cid-strategies.ipynb", "topology.ipynb", "kv-cache-tiering.ipynb",
            "graph-traversal.ipynb", "devices-as-measured.ipynb"} <= names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: os.path.basename(p)[:-6])
def test_notebook_runs_and_plots_data(path):
    committed = nbformat.read(path, as_version=4)
    code_cells = [c for c in committed.cells if c.cell_type == "code"]
    assert all(c.get("execution_count") for c in code_cells), (
        "notebooks are committed executed, with their outputs: " + RERUN)
    nb = copy.deepcopy(committed)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    authored = len(nb.cells)
    nb.cells.insert(0, nbformat.v4.new_code_cell(RECORDER))
    nb.cells.append(nbformat.v4.new_code_cell(REPORTER))
    name = os.path.basename(path)[:-6]
    facts_code = FACT_CHECKS.get(name, ("",))[0]
    if facts_code:
        nb.cells.append(nbformat.v4.new_code_cell(facts_code))
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": os.path.dirname(path)}})
    client.execute()  # raises CellExecutionError, with the cell and traceback, on failure

    # A fresh run reproduces the committed text outputs, cell by cell (seeds are fixed).
    for index, (old, new) in enumerate(zip(committed.cells, nb.cells[1:authored + 1])):
        if old.cell_type != "code":
            continue
        expected = text_outputs(old)
        actual = [normalise(text, SOURCE_DIR) for text in text_outputs(new)]
        if expected != actual:
            diff = "\n".join(difflib.unified_diff(
                "\n".join(expected).splitlines(), "\n".join(actual).splitlines(),
                "committed", "fresh run", lineterm="", n=1))
            pytest.fail("%s cell %d: a fresh run's outputs differ from the committed ones; %s\n%s"
                        % (os.path.basename(path), index, RERUN, diff[:4000]))

    pngs = []
    for cell in nb.cells[1:-1]:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if "image/png" in data:
                pngs.append(base64.b64decode(data["image/png"]))
    assert pngs, "the notebook draws no figure"
    for png in pngs:
        assert png.startswith(b"\x89PNG") and len(png) > 5000

    reporter = nb.cells[authored + 1]
    report = "".join(o.get("text", "") for o in reporter.outputs)
    figures = json.loads(report.split("DRAWN_FIGURES=", 1)[1])
    assert len(figures) == len(pngs)
    for i, axes in enumerate(figures):
        assert axes, "figure %d has no axes" % i
        for ax in axes:
            where = "figure %d, axes %r" % (i, ax["title"])
            assert ax["lines"] or ax["bars"] or ax["points"], where + " is empty"
            for line in ax["lines"]:
                assert line["points"] > 0 and line["finite"] > 0, (
                    "%s: line %r has no data" % (where, line["label"]))
            if ax["bars"]:
                assert any(size > 0 for size in ax["bar_sizes"]), where + ": all bars empty"

    # The conclusion is computed text: the last authored code cell displays Markdown.
    last = [c for c in nb.cells[1:authored + 1] if c.cell_type == "code"][-1]
    conclusion = "".join(o.get("data", {}).get("text/markdown", "") for o in last.outputs)
    assert conclusion.strip(), "no computed conclusion"
    assert "nan" not in conclusion.lower().replace("nanosleep", "")
    # Computed, not written in: the measured figures it states appear nowhere in the
    # cell's source (a hard-coded "less than 5 %" or "4.24 M" would).
    measured = decimal_numbers(conclusion)
    assert measured, "the conclusion states no measured figure"
    written_in = measured & decimal_numbers("".join(last.source))
    assert not written_in, "figures written into the conclusion's source: %s" % written_in
    if facts_code:
        facts = "".join(o.get("text", "") for o in nb.cells[-1].outputs).splitlines()
        facts = [f.split("FACT=", 1)[1] for f in facts if f.startswith("FACT=")]
        assert facts, "the fact check printed nothing"
        for fact in facts:
            assert fact in conclusion, "conclusion does not state %r:\n%s" % (fact, conclusion)


def test_normalise_removes_what_differs_between_machines():
    text = ("/tmp/ipykernel_10613/769856043.py:4: SweepPointsFailed: /src/gpunvme/scenarios/"
            "randread-4k.json: $.agent_warps = 8\n<Figure at 0x7f3a2c1b>; wall_s: 1.25\n")
    assert normalise(text, "/src/gpunvme/") == (
        "<cell>:4: SweepPointsFailed: scenarios/randread-4k.json: $.agent_warps = 8\n"
        "<Figure at 0x...>; wall_s: <wall time>\n")
    # Results are left alone, hexadecimal-looking or not.
    assert normalise("peak 0.52 us at QD32, id 0x1f", "/src") == "peak 0.52 us at QD32, id 0x1f"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: os.path.basename(p)[:-6])
def test_committed_outputs_name_no_checkout(path):
    """run-notebooks.sh writes paths relative to the checkout, so outputs match in any clone."""
    nb = nbformat.read(path, as_version=4)
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            for text in text_outputs(cell):
                assert SOURCE_DIR not in text and "/tmp/ipykernel_" not in text, (
                    "%s cell %d names a machine's path; %s"
                    % (os.path.basename(path), index, RERUN))


def test_stream_chunks_compare_as_one_output():
    """A cell's printed text compares the same however the kernel chunked it; a different
    stream, another output between, or different text still differ."""
    def cell(*outputs):
        return {"outputs": list(outputs)}

    def out(name, text):
        return {"output_type": "stream", "name": name, "text": text}

    one_chunk = cell(out("stdout", "refused: x\n0 failed\n"))
    two_chunks = cell(out("stdout", "refused: x\n"), out("stdout", "0 failed\n"))
    assert text_outputs(one_chunk) == text_outputs(two_chunks) == [
        "[stdout] refused: x\n0 failed\n"]
    assert text_outputs(cell(out("stdout", "refused: x\n"), out("stderr", "0 failed\n"))) == [
        "[stdout] refused: x\n", "[stderr] 0 failed\n"]
    table = {"output_type": "execute_result", "data": {"text/plain": "t"}}
    assert text_outputs(cell(out("stdout", "a\n"), table, out("stdout", "b\n"))) == [
        "[stdout] a\n", "[text/plain] t", "[stdout] b\n"]
    assert text_outputs(two_chunks) != text_outputs(cell(out("stdout", "refused: x\n1 failed\n")))
