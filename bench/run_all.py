"""Run every benchmark in one go and print one table of the figures the issues name.

Each bench/bench_*.py measures its own ratios side by side within its run (this machine is shared
and noisy) and ends with a ``SUMMARY {json}`` line; this script runs them one after another, shows
their own reports, and gathers the summaries into one table with the machine it ran on.

    python bench/run_all.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHES = [("compile", ["bench_compile.py"]), ("check", ["bench_check.py"]),
           ("render", ["bench_render.py"]), ("live", ["bench_live.py"]),
           ("live_judge", ["bench_live_judge.py"]), ("drum", ["bench_drum.py"]),
           ("interrupted_shows", ["bench_interrupted_shows.py"])]
QUICK = {"check": ["20000"], "compile": ["--repeat", "1"], "live_judge": ["--shots", "200"],
         "interrupted_shows": ["--runs", "3"]}


def run(name: str, argv: list, quick: bool) -> dict:
    cmd = [sys.executable, str(HERE / argv[0]), *argv[1:], *(QUICK.get(name, []) if quick else [])]
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=HERE.parent)
    wall = time.perf_counter() - t
    print(f"===== {name} ({' '.join(cmd[1:])}) — {wall:.0f} s, exit {p.returncode}")
    print(p.stdout.rstrip())
    if p.returncode not in (0, 1):
        print(p.stderr.rstrip()[-2000:])
    summary = {}
    for line in p.stdout.splitlines():
        if line.startswith("SUMMARY "):
            summary = json.loads(line[len("SUMMARY "):])
    return summary


def rows(s: dict) -> list:
    """(benchmark, figure, value, target) rows from the summaries."""
    out = []
    c = s.get("compile")
    if c:
        out.append(("compile", "default ceremony", f"{c['default_s']:.3f} s", "well under 1 s"))
        out.append(("compile", "100× roster: time × / notes ×",
                    f"{c['time_ratio_x100']:.1f} / {c['notes_ratio_x100']:.1f}", "linear (≈ 1 or less)"))
    k = s.get("check")
    if k:
        out.append(("check", f"{k['shots']:,} shots vs csv.reader (judge + tally)", f"{k['check_ratio']:.2f}×",
                    f"≤ {k.get('target_ratio', 8):g}×"))
        out.append(("check", "… and writing CSV / JSON output",
                    f"{k['check_csv_out_ratio']:.2f}× / {k['check_json_out_ratio']:.2f}×", "—"))
    r = s.get("render")
    if r:
        out.append(("render", "whole ceremony vs fluidsynth -F", f"{r['ratio_vs_fluidsynth']:.3f}×", "≤ 0.25×"))
        out.append(("render", "speed", f"{r['x_realtime']:.1f}× real time", "—"))
        out.append(("render", "peak memory", f"{r['peak_mb']:.0f} MB", "≤ 500 MB"))
    lv = s.get("live")
    if lv:
        out.append(("live", f"scheduler, {lv['messages']:,} messages p50 / p99 / max",
                    f"{lv['p50_ms']:.3f} / {lv['p99_ms']:.3f} / {lv['max_ms']:.3f} ms", "p99 ≤ 1 ms"))
        out.append(("live", "naive sleep(gap) p99", f"{lv['naive_p99_ms']:.1f} ms", "—"))
    j = s.get("live_judge")
    if j:
        out.append(("live_judge", f"shot → 获 call note-on, {j['shots']} shots p50 / p99",
                    f"{j['call_p50_ms']:.2f} / {j['call_p99_ms']:.2f} ms", "p99 ≤ 10 ms"))
        out.append(("live_judge", "… the music's note-ons in the same run p50 / p99",
                    f"{j['note_p50_ms']:.2f} / {j['note_p99_ms']:.2f} ms", "—"))
    d = s.get("drum")
    if d:
        a = d["accuracy"]
        out.append(("drum", "FluidR3 full mix: strokes found / extra",
                    f"{a['found']}/{a['strokes']} / {a['extra']}", "≥ 110/112 / ≤ 5"))
        out.append(("drum", "… |error| median / 95th percentile",
                    f"{a['median_abs_err_ms']} / {a['p95_abs_err_ms']} ms", "95 % ≤ 10 ms"))
        out.append(("drum", "seconds per hour of audio (find, wall) / peak memory",
                    f"{d['find_s_per_hour']:.1f} s / {d['peak_mb']} MB", "< 500 MB"))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller inputs (a smoke run, not the figures)")
    ap.add_argument("--only", help="comma-separated subset: compile,check,render,live,live_judge,drum")
    a = ap.parse_args(argv)
    only = set(a.only.split(",")) if a.only else None
    summaries = {}
    for name, argv_ in BENCHES:
        if only and name not in only:
            continue
        if not (HERE / argv_[0]).exists():
            print(f"===== {name}: {argv_[0]} missing")
            continue
        summaries[name] = run(name, argv_, a.quick)
    print()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"{platform.platform()}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    table = rows(summaries)
    w = max((len(r[1]) for r in table), default=10)
    print(f"| bench | figure{' ' * (w - 6)} | measured | target |")
    print(f"|---|{'-' * (w + 2)}|---|---|")
    for b, fig, val, tgt in table:
        print(f"| {b} | {fig}{' ' * (w - len(fig))} | {val} | {tgt} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
