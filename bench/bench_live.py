"""Bench: the live scheduler's own timing error over 10,000 messages.

Runs, side by side in one process, the absolute-deadline :class:`yuexuan.scheduler.Scheduler`
and a naive loop that sleeps the gap between consecutive messages (the drift the scheduler is
built to avoid), on the same 10,000 due times (a 30 s stream with chords: several messages per
instant). The dispatch does no I/O, so the figures are the scheduler's own error (sent − due).
Prints p50/p99/max for both and their ratios; target: scheduler p99 ≤ 1 ms.

    .venv/bin/python bench/bench_live.py [--messages 10000] [--seconds 30]
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from yuexuan.scheduler import Scheduler, summarise


def due_times(n: int, seconds: float, seed: int = 5) -> np.ndarray:
    """``n`` offsets (s) in [0, seconds): onsets with 1–4 messages each, sorted."""
    rng = np.random.default_rng(seed)
    per = rng.integers(1, 5, size=n)
    k = int(np.searchsorted(np.cumsum(per), n)) + 1
    onsets = np.sort(rng.uniform(0.0, seconds, size=k))
    return np.repeat(onsets, per[:k])[:n]


def run_scheduler(offsets: np.ndarray, lead_s: float = 0.2) -> np.ndarray:
    sched = Scheduler(lambda _payload: True)
    origin = time.monotonic() + lead_s
    sched.add_many((origin + t, i) for i, t in enumerate(offsets))
    sched.start()
    sched.wait_idle()
    sched.close()
    return sched.stats.errors_s()


def run_naive(offsets: np.ndarray) -> np.ndarray:
    """What a scheduler without absolute deadlines does: sleep each gap, then send."""
    errors = np.empty(offsets.size)
    origin = time.monotonic()
    previous = 0.0
    for i, t in enumerate(offsets):
        gap = t - previous
        if gap > 0:
            time.sleep(gap)
        previous = t
        errors[i] = time.monotonic() - (origin + t)
    return errors


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=10_000)
    ap.add_argument("--seconds", type=float, default=30.0)
    a = ap.parse_args(argv)
    offsets = due_times(a.messages, a.seconds)
    s = summarise(run_scheduler(offsets))
    n = summarise(run_naive(offsets))
    print(f"messages: {s.count} over {offsets[-1]:.1f} s")
    print(f"{'':24}{'p50 ms':>10}{'p99 ms':>10}{'max ms':>10}")
    print(f"{'absolute deadlines':24}{s.p50_ms:10.3f}{s.p99_ms:10.3f}{s.max_ms:10.3f}")
    print(f"{'naive sleep(gap)':24}{n.p50_ms:10.3f}{n.p99_ms:10.3f}{n.max_ms:10.3f}")
    print(f"ratio naive/scheduler p99: {n.p99_ms / max(s.p99_ms, 1e-6):.1f}x; "
          f"scheduler p99 {'meets' if s.p99_ms <= 1.0 else 'MISSES'} the 1 ms target")
    return 0 if s.p99_ms <= 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
