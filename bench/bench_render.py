"""Speed and memory of ``yuexuan render`` on the whole default ceremony, side by side with FluidSynth
rendering the project's own MIDI of it (Debian ``fluidsynth`` + ``fluid-soundfont-gm``).

Run: ``.venv/bin/python bench/bench_render.py [--repeat N] [--cues FILE]``. Both are timed as the
whole commands a user waits for, start-up included: ``yuexuan render CUES -o OUT.wav --mix seat``
and ``--mix guide`` (issue 29: the two mixes; the guide's envelopes computed from the timeline; Python's
start, the imports, reading the data, compiling the cue sheet, rendering, writing) against
``fluidsynth -ni -r 48000 -F OUT.wav SF2 MID`` (the MIDI written beforehand by ``yuexuan compile``, not
timed). They run as child processes in this one run, alternately, N times each (default 2); the
best time of each is compared. Then each runs once more for its peak memory: the largest resident
set of one of its processes and the peak of its process tree's proportional set size (the render
forks), polled — not while timed: reading a process's ``smaps_rollup`` takes 5–15 ms of kernel
time and its memory map's lock, five times a second per process, which slowed the render (two busy
cores) and not FluidSynth (one). The
target: our render takes at most a quarter of FluidSynth's time, in under 500 MB. FluidSynth
writes at our sample rate (``-r 48000``: the same file, sample for sample; ``--fluid-rate 44100``
gives its default). Also printed: × real time, and the FLAC render the main job writes.
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

# Child that runs one whole command and reports its wall time and (with ``poll`` first) peak memory:
# RUSAGE_CHILDREN's largest resident set of any one process of the command, and the peak of the
# whole process tree's proportional set size (Linux /proc/PID/smaps_rollup, polled every 0.2 s: the
# render forks workers that share its pages, which the largest resident set alone would leave out,
# and a sum of resident sets would count twice).
TIMED = """
import json, os, resource, subprocess, sys, threading, time

def tree(root):
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for t in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{t}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return out

def pss_kb(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            return next(int(l.split()[1]) for l in f if l.startswith("Pss:"))
    except (OSError, StopIteration, ValueError):
        return 0

polling = sys.argv.pop(1) == "poll"
t0 = time.perf_counter()
proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
peak = 0
done = threading.Event()

def poll():                        # on its own thread: the wait below sees the end at once
    global peak
    while not done.wait(0.2):
        peak = max(peak, sum(pss_kb(p) for p in tree(proc.pid)))

watcher = threading.Thread(target=poll, daemon=True)
if polling:
    watcher.start()
proc.wait()
dt = time.perf_counter() - t0
done.set()
if polling:
    watcher.join()
assert proc.returncode == 0, proc.returncode
print(json.dumps({"seconds": dt, "tree_pss_mb": peak / 1024,
                  "max_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""


def _timed(*command, poll: bool = False) -> dict:
    """{"seconds", "max_rss_mb", "tree_pss_mb"} of one run of ``command`` (the tree's PSS with
    ``poll``, else 0)."""
    out = subprocess.run([sys.executable, "-c", TIMED, "poll" if poll else "time", *map(str, command)],
                         check=True, cwd=ROOT, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _with_memory(best: dict, *command) -> dict:
    """``best`` (a timed run of ``command``) with the peak memory of one more run, polled."""
    m = _timed(*command, poll=True)
    return {**best, "max_rss_mb": max(best["max_rss_mb"], m["max_rss_mb"]), "tree_pss_mb": m["tree_pss_mb"]}


def _yuexuan() -> str:
    """The ``yuexuan`` console script of this interpreter's environment."""
    script = Path(sys.executable).with_name("yuexuan")
    return str(script) if script.exists() else (shutil.which("yuexuan") or "yuexuan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--cues", default=str(ROOT / "cues" / "dashe.toml"))
    ap.add_argument("--fluid-rate", type=int, default=48000, help="FluidSynth's sample rate, Hz")
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
        commands = {
            "fs": ("fluidsynth", "-ni", "-r", args.fluid_rate, "-F", d / "fluidsynth.wav", SF2, mid),
            "seat": (yuexuan, "render", args.cues, "-o", d / "ours.wav", "--mix", "seat"),
            "guide": (yuexuan, "render", args.cues, "-o", d / "guide.wav", "--mix", "guide"),
            "flac": (yuexuan, "render", args.cues, "-o", d / "ours.flac"),
        }
        runs: dict[str, list[dict]] = {k: [] for k in commands}
        for _ in range(max(1, args.repeat)):
            for k, command in commands.items():
                runs[k].append(_timed(*command))
        best_of = {k: _with_memory(min(r, key=lambda x: x["seconds"]), *commands[k]) for k, r in runs.items()}
        best, best_guide, best_fs, best_flac = (best_of[k] for k in ("seat", "guide", "fs", "flac"))
        info = sf.info(str(d / "ours.wav"))
        best["audio_s"], best["notes"] = info.frames / info.samplerate, len(tl.notes)
    audio = best["audio_s"]
    print(f"ceremony: {audio:.1f} s of audio, {best['notes']} notes; whole commands timed, start-up included")
    print("memory: the largest resident set of one process / the peak of the process tree's "
          "proportional set size")
    print(f"fluidsynth -ni -r {args.fluid_rate} -F (WAV) {best_fs['seconds']:7.2f} s  {audio / best_fs['seconds']:6.0f}× real time"
          f"  {best_fs['max_rss_mb']:5.0f} / {best_fs['tree_pss_mb']:5.0f} MB")
    print(f"yuexuan render (WAV, seat) {best['seconds']:6.2f} s  "
          f"{audio / best['seconds']:6.0f}× real time  {best['max_rss_mb']:5.0f} / {best['tree_pss_mb']:5.0f} MB")
    print(f"yuexuan render (WAV, guide) {best_guide['seconds']:5.2f} s  "
          f"{audio / best_guide['seconds']:6.0f}× real time"
          f"  {best_guide['max_rss_mb']:5.0f} / {best_guide['tree_pss_mb']:5.0f} MB")
    print(f"yuexuan render (FLAC)     {best_flac['seconds']:7.2f} s  "
          f"{audio / best_flac['seconds']:6.0f}× real time  {best_flac['max_rss_mb']:5.0f} / "
          f"{best_flac['tree_pss_mb']:5.0f} MB")
    ratio = best["seconds"] / best_fs["seconds"]
    peak = max(max(r["max_rss_mb"], r["tree_pss_mb"]) for r in (best, best_guide, best_flac))
    guide_ratio = best_guide["seconds"] / best_fs["seconds"]
    spool_mb = 8 * audio * info.samplerate / 1e6
    print(f"temporary disk: the render's spool beside its output, {spool_mb:.0f} MB "
          "(pass 1's float32 mix; a file, in the page cache while it fits: not in the memory above)")
    print(f"ratio render/fluidsynth: seat {ratio:.3f}, guide {guide_ratio:.3f} (target ≤ 0.25); FLAC: "
          f"{best_flac['seconds'] / best_fs['seconds']:.3f}; memory {peak:.0f} MB (target < 500)")
    print("SUMMARY " + json.dumps({
        "bench": "render", "audio_s": audio, "ratio_vs_fluidsynth": ratio,
        "guide_ratio_vs_fluidsynth": guide_ratio, "render_guide_wav_s": best_guide["seconds"],
        "x_realtime": audio / best["seconds"], "peak_mb": peak, "render_wav_s": best["seconds"],
        "fluidsynth_s": best_fs["seconds"], "render_flac_s": best_flac["seconds"],
        "flac_ratio_vs_fluidsynth": best_flac["seconds"] / best_fs["seconds"],
        "spool_mb": spool_mb, "timed": "whole commands, start-up included"}))
    return 0 if max(ratio, guide_ratio) <= 0.25 and peak < 500 else 1


if __name__ == "__main__":
    sys.exit(main())
