"""Intelligibility of the voices by measure (issue 30 item 4): fifteen syllables of the rite (鹿 呦
鸣 食 苹 and ten of the formulas) rendered dry, spoken by the 司射 and sung by one of the 歌's
singers, matched to espeak-ng's ``cmn-latn-pinyin`` templates by MFCC-DTW (tests/speech_support.py;
espeak-ng is a test tool, GPL, never a dependency). Over DRAWS draws of three renditions each it
prints the share right per draw and the summed confusion matrices (Markdown, as docs/render.md
shows them).

Run: ``.venv/bin/python bench/bench_speech.py [DRAWS]`` (default 10; ~1 s of CPU a draw once
librosa's numba code is compiled). Last line ``SUMMARY {json}``. Targets: ≥ 60 % right spoken,
≥ 40 % sung in every draw.
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import speech_support as S  # noqa: E402

RENDITIONS = 3


def main(draws: int = 10) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as folder:
        refs = S.templates(Path(folder))
    right: dict[str, list[float]] = {"spoken": [], "sung": []}
    totals: dict[str, np.ndarray] = {}
    labels: list[str] = []
    for seed in range(1, draws + 1):
        rng = random.Random(seed)
        for mode in right:
            total = np.zeros((len(refs), len(refs)), dtype=int)
            for _ in range(RENDITIONS):
                labels, mat = S.confusion(S.said(mode, rng.randrange(2**31), rng.randrange(6)), refs)
                total += mat
            totals[mode] = totals.get(mode, 0) + total
            right[mode].append(float(np.trace(total) / total.sum()))
        print(f"seed {seed}: spoken {100 * right['spoken'][-1]:.0f} %, sung {100 * right['sung'][-1]:.0f} %",
              flush=True)
    for mode, mat in totals.items():
        print(f"\n{mode}: {100 * min(right[mode]):.0f}–{100 * max(right[mode]):.0f} % right "
              f"(mean {100 * np.mean(right[mode]):.0f} %)\n" + S.matrix_markdown(labels, mat))
    summary = {f"{mode}_{k}": round(100 * f(v), 1) for mode, v in right.items()
               for k, f in (("min_pct", min), ("mean_pct", np.mean))}
    summary["ok"] = summary["spoken_min_pct"] >= 60 and summary["sung_min_pct"] >= 40
    print("SUMMARY " + json.dumps(summary))
    return summary


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
