"""Bench: the issue's full count of interrupted shows (issue 36): 貍首 stopped by SIGINT, SIGTERM
and SIGHUP, RUNS shows each (default 20), heard by JACK's own ``jack_midi_dump``.

The suite's test (tests/test_live_delivery.py) runs a few shows per signal within its budget;
this runs the same test with ``YUEXUAN_INTERRUPTED_SHOWS=RUNS`` and prints its figures (shows per
signal, notes left sounding, delivery confirmed in …) and a ``SUMMARY {json}`` line.

    .venv/bin/python bench/bench_interrupted_shows.py [--runs 20] [--servers 3] [--seed N]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=20, help="shows per signal (default 20)")
    ap.add_argument("--servers", type=int, default=3, help="private JACK servers (default 3)")
    ap.add_argument("--seed", type=int, help="the points of the signals (default: drawn afresh)")
    args = ap.parse_args()
    env = dict(os.environ, YUEXUAN_INTERRUPTED_SHOWS=str(args.runs),
               YUEXUAN_INTERRUPTED_SERVERS=str(args.servers))
    if args.seed is not None:
        env["YUEXUAN_TEST_SEED"] = str(args.seed)
    t = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:randomly", "-p",
                          "no:xdist", "tests/test_live_delivery.py::"
                          "test_interrupted_shows_leave_nothing_sounding"],
                         cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t
    figures = next((line for line in run.stdout.splitlines() if "interrupted shows" in line), "")
    print(run.stdout[-3000:] if run.returncode else figures)
    m = re.search(r"(\{[^}]*\}) interrupted shows, (\d+) left a note sounding", figures)
    summary = {"shows_per_signal": m.group(1) if m else None,
               "left_sounding": int(m.group(2)) if m else None,
               "passed": run.returncode == 0, "wall_s": round(wall, 1), "figures": figures}
    print("SUMMARY " + json.dumps(summary, ensure_ascii=False))
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())
