"""Compile time of the default ceremony, and its growth with the roster (×1, ×10, ×100 pairs).

Prints one row per size, measured side by side in this run: seconds (median of runs), notes, and
the time ratio against the ×1 sheet next to the size ratio. Linear growth shows as
time-ratio ÷ size-ratio staying near (or below) 1 as the roster grows.

    python bench/bench_compile.py [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from yuexuan.compiler import compile_path  # noqa: E402

PAIR_BLOCK = re.compile(r"^\[\[pair\]\]\n(?:(?!\[\[).*\n)*", re.M)


def scaled_sheet(text: str, factor: int) -> str:
    """The default sheet with every [[pair]] repeated ``factor`` times under new ids."""
    blocks = PAIR_BLOCK.findall(text)
    first = text.index(blocks[0])
    rest = text[first:]
    for b in blocks:
        rest = rest.replace(b, "", 1)
    copies = []
    for k in range(factor):
        for b in blocks:
            copies.append(re.sub(r'^id = "(.*)"', lambda m: f'id = "{m.group(1)}#{k}"', b, flags=re.M)
                          if k else b)
    return text[:first] + "".join(copies) + rest


def measure(path: Path, repeat: int) -> tuple:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        tl, _ = compile_path(path)
        times.append(time.perf_counter() - t)
    return statistics.median(times), len(tl.notes), len(tl.beats)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    text = (ROOT / "cues" / "dashe.toml").read_text(encoding="utf-8")
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for factor in (1, 10, 100):
            p = Path(d) / f"x{factor}.toml"
            p.write_text(scaled_sheet(text, factor), encoding="utf-8")
            s, notes, beats = measure(p, args.repeat if factor < 100 else max(1, args.repeat // 2))
            rows.append((factor, s, notes, beats))
    base = rows[0]
    print(f"{'pairs':>8} {'seconds':>9} {'notes':>9} {'beats':>7} {'time ×':>8} {'notes ×':>8} {'time×/notes×':>13}")
    for factor, s, notes, beats in rows:
        tr, nr = s / base[1], notes / base[2]
        print(f"{8 * factor:>8} {s:>9.3f} {notes:>9} {beats:>7} {tr:>8.1f} {nr:>8.1f} {tr / nr:>13.2f}")
    print(f"default ceremony compiles in {base[1]:.3f} s (target: well under 1 s)")
    big = rows[-1]
    print("SUMMARY " + json.dumps({"bench": "compile", "default_s": base[1], "pairs_x100_s": big[1],
                                  "time_ratio_x100": big[1] / base[1], "notes_ratio_x100": big[2] / base[2]}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
