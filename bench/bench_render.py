"""Speed and memory of ``yuexuan render`` on the whole default ceremony, side by side with FluidSynth
rendering the project's own MIDI of it (Debian ``fluidsynth`` + ``fluid-soundfont-gm``).

Run: ``.venv/bin/python bench/bench_render.py [--repeat N] [--cues FILE]``. Both are timed as the
whole commands a user waits for, start-up included: ``yuexuan render CUES -o OUT.wav`` (Python's
start, the imports, reading the data, compiling the cue sheet, rendering, writing) against
``fluidsynth -ni -F OUT.wav SF2 MID`` (the MIDI written beforehand by ``yuexuan compile``, not
timed). They run as child processes in this one run, alternately, N times each (default 2); the
best time of each is compared, and each child's peak memory (its own and its children's maximum
resident set) is reported. The target: our render takes at most a quarter of FluidSynth's time,
in under 500 MB. Also printed: × real time, and the FLAC render the main job writes.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SF2 = "/usr/share/sounds/sf2/FluidR3_GM.sf2"

# Child that runs one whole command and reports its wall time and peak memory (RUSAGE_CHILDREN:
# the largest resident set of the command and of anything it started).
TIMED = """
import json, resource, subprocess, sys, time
t0 = time.perf_counter()
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
dt = time.perf_counter() - t0
print(json.dumps({"seconds": dt,
                  "max_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""


def _timed(*command) -> dict:
    out = subprocess.run([sys.executable, "-c", TIMED, *map(str, command)], check=True, cwd=ROOT,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _yuexuan() -> str:
    """The ``yuexuan`` console script of this interpreter's environment."""
    script = Path(sys.executable).with_name("yuexuan")
    return str(script) if script.exists() else (shutil.which("yuexuan") or "yuexuan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--cues", default=str(ROOT / "cues" / "dashe.toml"))
    args = ap.parse_args()
    if not shutil.which("fluidsynth") or not Path(SF2).is_file():
        print("needs Debian fluidsynth and fluid-soundfont-gm (tests/system-deps.sh)", file=sys.stderr)
        return 2
    import soundfile as sf

    from yuexuan.compiler import compile_file
    from yuexuan.midi.smf import write_smf
    yuexuan = _yuexuan()
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        mid = d / "dashe.mid"
        tl = compile_file(args.cues)
        write_smf(tl, mid)
        ours, fs, flac = [], [], []
        for _ in range(max(1, args.repeat)):
            fs.append(_timed("fluidsynth", "-ni", "-F", d / "fluidsynth.wav", SF2, mid))
            ours.append(_timed(yuexuan, "render", args.cues, "-o", d / "ours.wav"))
            flac.append(_timed(yuexuan, "render", args.cues, "-o", d / "ours.flac"))
        best = min(ours, key=lambda r: r["seconds"])
        best_fs = min(fs, key=lambda r: r["seconds"])
        best_flac = min(flac, key=lambda r: r["seconds"])
        info = sf.info(str(d / "ours.wav"))
        best["audio_s"], best["notes"] = info.frames / info.samplerate, len(tl.notes)
    audio = best["audio_s"]
    print(f"ceremony: {audio:.1f} s of audio, {best['notes']} notes; whole commands timed, start-up included")
    print(f"fluidsynth -ni -F (WAV)   {best_fs['seconds']:7.2f} s  {audio / best_fs['seconds']:6.0f}× real time"
          f"  {best_fs['max_rss_mb']:5.0f} MB")
    print(f"yuexuan render (WAV)      {best['seconds']:7.2f} s  {audio / best['seconds']:6.0f}× real time"
          f"  {best['max_rss_mb']:5.0f} MB")
    print(f"yuexuan render (FLAC)     {best_flac['seconds']:7.2f} s  "
          f"{audio / best_flac['seconds']:6.0f}× real time  {best_flac['max_rss_mb']:5.0f} MB")
    ratio = best["seconds"] / best_fs["seconds"]
    print(f"ratio render/fluidsynth: {ratio:.3f} (target ≤ 0.25); FLAC: "
          f"{best_flac['seconds'] / best_fs['seconds']:.3f}; memory "
          f"{max(r['max_rss_mb'] for r in ours + flac):.0f} MB (target < 500)")
    peak = max(r["max_rss_mb"] for r in ours + flac)
    print("SUMMARY " + json.dumps({
        "bench": "render", "audio_s": audio, "ratio_vs_fluidsynth": ratio,
        "x_realtime": audio / best["seconds"], "peak_mb": peak, "render_wav_s": best["seconds"],
        "fluidsynth_s": best_fs["seconds"], "render_flac_s": best_flac["seconds"],
        "flac_ratio_vs_fluidsynth": best_flac["seconds"] / best_fs["seconds"],
        "timed": "whole commands, start-up included"}))
    return 0 if ratio <= 0.25 and peak < 500 else 1


if __name__ == "__main__":
    sys.exit(main())
