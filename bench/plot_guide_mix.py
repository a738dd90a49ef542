"""docs/img/guide_mix.png: a call over 貍首 in the seat mix and in the guide mix, as spectrograms.

Run: ``.venv/bin/python bench/plot_guide_mix.py SEAT.wav GUIDE.wav [--from S] [--to S]`` with the two
mixes of ``yuexuan render cues/dashe.toml --cues lishou -o X.wav --mix seat|guide`` (default window:
the 获者·干's first 获 calls, 14–21 s of the cue).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import librosa
import librosa.display
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import soundfile as sf

OUT = Path(__file__).resolve().parent.parent / "docs" / "img" / "guide_mix.png"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("seat")
    ap.add_argument("guide")
    ap.add_argument("--from", dest="t0", type=float, default=14.0)
    ap.add_argument("--to", dest="t1", type=float, default=21.0)
    args = ap.parse_args()
    fig, axes = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    spectra = []
    for path in (args.seat, args.guide):
        x, sr = sf.read(path, dtype="float32", start=int(args.t0 * 48000), stop=int(args.t1 * 48000))
        # dB re a full-scale sine (a Hann window's sum is n_fft / 2)
        spectra.append(np.abs(librosa.stft(x.mean(axis=1), n_fft=2048, hop_length=256)) / 512)
    # titles in pinyin: matplotlib's default font has no CJK glyphs
    for ax, s, title in zip(axes, spectra, ("seat mix (the bin's seat)", "guide mix")):
        img = librosa.display.specshow(librosa.amplitude_to_db(s, ref=1.0), sr=sr, hop_length=256,
                                       x_axis="time", y_axis="log", ax=ax, vmin=-100, vmax=-10,
                                       cmap="magma")
        ax.axhline(1000, color="white", lw=0.6, ls="--")
        ax.axhline(4000, color="white", lw=0.6, ls="--")
        ax.set_title(f"lishou: the huozhe (gan)'s calls at {2.5:.1f} s and {3.6:.1f} s, "
                     f"1-4 kHz dashed: {title}", fontsize=10)
        ax.set_xlabel("")
    axes[-1].set_xlabel(f"s after {args.t0:.0f} s of the cue")
    fig.colorbar(img, ax=axes, format="%+.0f dBFS")
    fig.savefig(OUT, dpi=80)
    print(OUT)


if __name__ == "__main__":
    main()
