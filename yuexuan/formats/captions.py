"""Chapters of a rendered file, one per ritual cue: the WebVTT and CUE sheet writers (the one
writer of captions: the guide's captions come from :func:`vtt_text` too)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from yuexuan import atomic
from yuexuan.timeline import Cue, Timeline


class Chapter(NamedTuple):
    start_s: float                     # from the start of the file
    end_s: float
    cue: Cue


def _vtt_time(t: float) -> str:
    ms = int(round(max(0.0, t) * 1000))
    h, ms = divmod(ms, 3600_000)
    m, ms = divmod(ms, 60_000)
    s, ms = divmod(ms, 1000)
    return f"{h:02d}:{m:02d}:{s:02d}.{ms:03d}"


def _cue_time(t: float) -> str:
    frames = int(round(max(0.0, t) * 75))
    m, frames = divmod(frames, 75 * 60)
    s, f = divmod(frames, 75)
    return f"{m:02d}:{s:02d}:{f:02d}"


def _one_line(text: str) -> str:
    return " ".join(str(text).replace("-->", "→").split())


def chapters(timeline: Timeline, duration_s: float) -> list[Chapter]:
    """A :class:`Chapter` for each cue heard in a file of ``timeline`` (time 0 = the timeline's)
    that lasts ``duration_s``, clipped to the file, sorted."""
    out = []
    for c in timeline.cues:
        start, end = c.start, c.end
        if end <= 0 or start >= duration_s:
            continue
        out.append(Chapter(max(0.0, start), min(duration_s, end), c))
    out.sort(key=lambda r: (r.start_s, r.end_s))
    return out


def later_source_line(cue: Cue) -> str:
    """The caption line telling a listener that the cue's melody is from a later source, not a Zhou
    tune ('' when it has none)."""
    if not cue.later_source:
        return ""
    return f"后世之谱，非周乐 · melody: {_one_line(cue.later_source)}, not a Zhou tune"


def vtt_text(rows: Iterable[tuple[float, float, Cue]]) -> str:
    """WebVTT chapters from (start s, end s, cue) rows: one cue per ritual cue (piece · ritual
    moment, then the melody's later source if it has one, the quoted source, the gloss)."""
    lines = ["WEBVTT", "", "NOTE chapters of the rendered rite: piece, ritual moment, source", ""]
    for k, (a, b, c) in enumerate(rows, start=1):
        title = _one_line(c.piece)
        if c.starts_when:
            title += f" · {_one_line(c.starts_when)}"
        lines += [f"{k} {c.id}", f"{_vtt_time(a)} --> {_vtt_time(max(b, a + 0.001))}", title]
        if c.later_source:
            lines.append(later_source_line(c))
        if c.source:
            lines.append(_one_line(c.source))
        if c.gloss:
            lines.append(_one_line(c.gloss))
        lines.append("")
    return "\n".join(lines)


def cue_text(rows: Iterable[tuple[float, float, Cue]], audio_name: str, title: str) -> str:
    """A CUE sheet: one track per ritual cue, INDEX 01 at its start (mm:ss:ff, 75 frames/s)."""
    q = lambda s: _one_line(s).replace('"', "”")          # noqa: E731
    lines = ['REM GENERATOR "yuexuan render"', f'TITLE "{q(title)}"',
             f'FILE "{q(audio_name)}" WAVE']
    last = -1
    for k, (a, _, c) in enumerate(rows, start=1):
        frames = max(int(round(a * 75)), last + 1 if k > 1 else 0)
        last = frames
        lines += [f"  TRACK {k:02d} AUDIO", f'    TITLE "{q(c.piece)}"',
                  f'    REM CUE "{q(c.id)}"']
        if c.starts_when:
            lines.append(f'    REM MOMENT "{q(c.starts_when)}"')
        if c.source:
            lines.append(f'    REM SOURCE "{q(c.source)}"')
        if c.later_source:
            lines.append(f'    REM MELODY "{q(c.later_source)} (a later source, not a Zhou tune)"')
        lines.append(f"    INDEX 01 {_cue_time(frames / 75)}")
    return "\n".join(lines) + "\n"


def write_sidecars(timeline: Timeline, out_path: Path, rows: Iterable[tuple[float, float, Cue]]) -> list[str]:
    """``OUT.vtt`` and ``OUT.cue`` beside ``out_path`` (atomically); their paths."""
    vtt = out_path.with_suffix(".vtt")
    cue = out_path.with_suffix(".cue")
    atomic.write_text(vtt, vtt_text(rows))
    atomic.write_text(cue, cue_text(rows, out_path.name, timeline.ceremony.name))
    return [str(vtt), str(cue)]
