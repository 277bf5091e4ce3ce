"""Latency budgets: check budgeted scenarios, re-baseline them on purpose.

Budget files live in ``scenarios/budgets/*.json`` (format in sim/frontend/budgets/budgets.h
and README "Latency budgets"); ``gpunvme budgets`` on the command line does the same.
"""

import json
import os

from . import _native


class BudgetReport:
    """The outcome of one budget check.

    Attributes:
        name, file, doc: the budget's name (file stem), file and description.
        ok: True when every figure is within its budget (tolerance applied).
        checks: list of dicts: metric, bound ("max" or "floor"), budget, limit,
            measured, over_budget (signed fraction, positive = worse), ok, note.
        table: every check as a readable table (str).
        failures_table: only the checks that failed (str).
        summary: the run's result summary (dict).
    """

    def __init__(self, data):
        self.name = data["name"]
        self.file = data["file"]
        self.doc = data["doc"]
        self.ok = data["ok"]
        self.checks = data["checks"]
        self.table = data["table"]
        self.failures_table = data["failures_table"]
        self.summary = data["summary"]

    def failures(self):
        """The checks that failed (list of dicts)."""
        return [c for c in self.checks if not c["ok"]]

    def frame(self):
        """The checks as a pandas DataFrame, one row per metric."""
        import pandas as pd

        return pd.DataFrame(self.checks)

    def message(self):
        """A readable account: the budget, and the table of what exceeded it."""
        if self.ok:
            return "budget %s: ok (%d checks)" % (self.name, len(self.checks))
        return "budget %s: %d of %d checks out of budget (%s)\n%s" % (
            self.name, len(self.failures()), len(self.checks), self.file, self.failures_table)

    def __repr__(self):
        return "BudgetReport(%r, ok=%r, failures=%d)" % (self.name, self.ok, len(self.failures()))


def files(directory=None):
    """Budget files of a folder, sorted (default: the shipped scenarios/budgets/)."""
    return list(_native.budget_files(os.fspath(directory) if directory else ""))


def load(file):
    """A budget file's document (dict), validated; ConfigError names a bad field."""
    return json.loads(_native.budget_load(os.fspath(file)))


def check(file):
    """Run a budget's scenario and compare it with the budget; returns a BudgetReport."""
    return BudgetReport(json.loads(_native.budget_check(os.fspath(file))))


def check_all(budget_files=None):
    """Check several budgets (default: every shipped one); returns a list of BudgetReport."""
    return [check(f) for f in (budget_files if budget_files is not None else files())]


def update(file):
    """Re-baseline a budget from a fresh run and rewrite its file; returns the new document.

    Keeps the file's scenario, overrides, seed, tolerance and its choice of percentiles
    and floors. Do this on purpose, after a change that is meant to move the figures.
    """
    text = _native.budget_rebaseline(os.fspath(file))
    with open(file, "w") as out:
        out.write(text)
    return json.loads(text)
