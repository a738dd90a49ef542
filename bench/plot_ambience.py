"""The ambience's impulse response as a picture (docs/render.md, "Ambience").

Run: ``.venv/bin/python bench/plot_ambience.py [-o docs/img/ambience_ir.png]`` (needs matplotlib:
the ``plots`` extra). A click at the 建鼓·东 heard from the 宾's seat and from 中庭, in both venues
of variant O24 (郊 open, 公宫 walled), through the renderer's own ``space.placement`` and
``space.spatialise``: the level of each sample (left and right together) in dB re the direct
sound, the named reflections marked with their surfaces. Also prints each reflection's delay and
level.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from yuexuan.audio.room import space, surfaces
from yuexuan.rite.instruments import load_all

ROOT = Path(__file__).resolve().parent.parent
SR = 48000
SOURCE = "建鼓·东"


def response(seat, venue: str):
    p = space.placement(seat, load_all()[SOURCE].position_m, SR, SOURCE, surfaces.load(venue))
    h = space.impulse_response(p, SR)
    level = np.hypot(h[:, 0], h[:, 1])
    return p, 20 * np.log10(np.maximum(level, 1e-9) / level[0])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", default=str(ROOT / "docs" / "img" / "ambience_ir.png"))
    args = ap.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("needs matplotlib (pip install '.[plots]')", file=sys.stderr)
        return 2
    plt.rcParams["font.family"] = ["Noto Sans CJK JP", "Noto Sans CJK SC", "DejaVu Sans"]
    seats = space.listeners()
    fig, axes = plt.subplots(2, 2, figsize=(12, 7), sharey=True)
    for row, venue in enumerate(("郊", "公宫")):
        for col, seat_name in enumerate(("宾", "中庭")):
            p, db = response(seats[seat_name], venue)
            ms = np.arange(len(db)) / SR * 1000
            ax = axes[row, col]
            ax.plot(ms, db, lw=0.5, color="0.35")
            ax.axhline(-20, color="tab:red", lw=0.8, ls="--")
            ax.axvline(20, color="tab:red", lw=0.8, ls=":")
            print(f"{venue} {seat_name}: {SOURCE} at {p.distance_m:.1f} m")
            groups: list = []          # [lag ms, level dB, names]: arrivals within 5 ms share a label
            for tap, r in zip(p.taps[1:], p.reflections):
                ms_at = tap.lag / SR * 1000
                level = 20 * np.log10(np.hypot(tap.left, tap.right) / np.hypot(*p.direct))
                print(f"  {'+'.join(r.surfaces):10s} {ms_at:7.1f} ms {level:6.1f} dB")
                if groups and ms_at - groups[-1][0] < 5:
                    groups[-1][1] = max(groups[-1][1], level)
                    groups[-1][2].append("+".join(r.surfaces))
                else:
                    groups.append([ms_at, level, ["+".join(r.surfaces)]])
            for k, (ms_at, level, names) in enumerate(groups):
                ax.annotate(", ".join(names), (ms_at, level), fontsize=7, color="tab:blue",
                            xytext=(3, 4 + 9 * (k % 2)), textcoords="offset points")
            ax.set_xscale("symlog", linthresh=10)
            ax.set_xlim(0, max(400, ms[-1] * 1.15))
            ax.set_ylim(-70, 3)
            ax.set_title(f"{SOURCE} heard from {seat_name}, venue {venue} ({p.distance_m:.1f} m)",
                         fontsize=9)
            if row == 1:
                ax.set_xlabel("ms after the direct sound (linear to 10 ms, then log)")
            if col == 0:
                ax.set_ylabel("dB re the direct sound")
    fig.suptitle("A click through the ambience: direct sound, named reflections, diffuse tail "
                 "(red: −20 dB after 20 ms)", fontsize=10)
    fig.tight_layout()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
