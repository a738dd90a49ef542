"""Speed and memory of ``yuexuan render`` on the whole default ceremony, side by side with FluidSynth
rendering the project's own MIDI of it (Debian ``fluidsynth`` + ``fluid-soundfont-gm``).

Run: ``.venv/bin/python bench/bench_render.py [--repeat N] [--cues FILE]``. Both renderers run as
child processes in this one run, alternately, N times each (default 2); the best time of each is
compared. The target: our render (to WAV, like ``fluidsynth -F out.wav``) takes at most a quarter
of FluidSynth's time, in under 500 MB. Also printed: × real time, and the FLAC render the main job
writes.
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

# Child for our renderer: compile (not timed), then time render.render and report peak memory.
CHILD = """
import json, re, sys, time
from yuexuan.compiler import compile_file
from yuexuan.audio import render
tl = compile_file(sys.argv[1])
t0 = time.perf_counter()
rep = render.render(tl, sys.argv[2])
dt = time.perf_counter() - t0
print(json.dumps({"seconds": dt, "audio_s": rep.duration_s, "lufs": rep.loudness_lufs,
                  "dbtp": rep.true_peak_dbtp, "notes": rep.notes,
                  "max_rss_mb": int(re.search(r"VmHWM:\\s+(\\d+) kB",
                                              open("/proc/self/status").read()).group(1)) / 1024}))
"""

# Child that runs FluidSynth and reports its time and its own peak memory.
FS_CHILD = """
import json, resource, subprocess, sys, time
t0 = time.perf_counter()
subprocess.run(["fluidsynth", "-ni", "-F", sys.argv[2], sys.argv[3], sys.argv[1]], check=True,
               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
dt = time.perf_counter() - t0
print(json.dumps({"seconds": dt,
                  "max_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""


def _child(code: str, *args) -> dict:
    out = subprocess.run([sys.executable, "-c", code, *map(str, args)], check=True, cwd=ROOT,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--cues", default=str(ROOT / "cues" / "dashe.toml"))
    args = ap.parse_args()
    if not shutil.which("fluidsynth") or not Path(SF2).is_file():
        print("needs Debian fluidsynth and fluid-soundfont-gm (tests/system-deps.sh)", file=sys.stderr)
        return 2
    from yuexuan.compiler import compile_file
    from yuexuan.midi.smf import write_smf
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        mid = d / "dashe.mid"
        write_smf(compile_file(args.cues), mid)
        ours, fs, flac = [], [], []
        for _ in range(max(1, args.repeat)):
            fs.append(_child(FS_CHILD, mid, d / "fluidsynth.wav", SF2))
            ours.append(_child(CHILD, args.cues, d / "ours.wav"))
            flac.append(_child(CHILD, args.cues, d / "ours.flac"))
        best = min(ours, key=lambda r: r["seconds"])
        best_fs = min(fs, key=lambda r: r["seconds"])
        best_flac = min(flac, key=lambda r: r["seconds"])
    audio = best["audio_s"]
    print(f"ceremony: {audio:.1f} s of audio, {best['notes']} notes")
    print(f"fluidsynth -ni -F (WAV)   {best_fs['seconds']:7.2f} s  {audio / best_fs['seconds']:6.0f}× real time"
          f"  {best_fs['max_rss_mb']:5.0f} MB")
    print(f"yuexuan render (WAV)      {best['seconds']:7.2f} s  {audio / best['seconds']:6.0f}× real time"
          f"  {best['max_rss_mb']:5.0f} MB   {best['lufs']:.2f} LUFS, {best['dbtp']:.2f} dBTP")
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
        "lufs": best["lufs"], "dbtp": best["dbtp"]}))
    return 0 if ratio <= 0.25 and peak < 500 else 1


if __name__ == "__main__":
    sys.exit(main())
