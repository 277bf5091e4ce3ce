"""A sweep's worker process (``python -m gpunvme._sweep_worker``).

Reads tasks, one JSON line each, on stdin; runs each with
:func:`gpunvme.sweep.run_point`; writes its row as one JSON line on stdout. Started
by :func:`gpunvme.sweep` with ``jobs`` > 1: a fresh interpreter that imports only
gpunvme, never the script that called the sweep.
"""

import json
import os
import signal
import sys


def main():
    # Ctrl-C reaches the whole process group: the sweep stops its workers itself,
    # without a traceback from each.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Rows go out on the original stdout; anything else printed goes to stderr,
    # so that it cannot break a row.
    rows = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    from gpunvme.sweep import run_point

    for line in sys.stdin:
        row = run_point(json.loads(line))
        rows.write(json.dumps(row, separators=(",", ":"), ensure_ascii=False) + "\n")
        rows.flush()


if __name__ == "__main__":
    main()
