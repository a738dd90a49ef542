"""The performers' score: a music21 Score of selected cues, written as MusicXML (and PDF via LilyPond).

One part per instrument group (歌, 瑟, 簜, 钟·鑮, 磬, 鼓, 呼). Each cue starts a new measure under a
rehearsal mark and a metronome mark: a quarter note is the cue's ``beat_s`` (its syllable, note, call
step or arrow; docs/timeline.md), and its onsets and lengths are quantised to sixteenths of that.
Pitched notes are written at the nearest equal-tempered pitch
(the timeline's MIDI key); under each note: the 歌's syllable (verse 1, 歌 only), the 律 name and the
deviation of the exact 三分损益 pitch from the written one, in cents.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from yuexuan import atomic
from yuexuan.errors import UserError
from yuexuan.timeline import Cue, Note, Timeline, chosen_cues

if TYPE_CHECKING:                    # music21 is imported when a score is made (start-up time)
    from music21 import stream

#: group key -> (part name, abbreviation); in score order, top to bottom.
GROUPS = {"歌": ("歌 Voices", "歌"), "瑟": ("瑟 Zithers", "瑟"), "簜": ("簜 Pipes", "簜"),
          "笙": ("笙·和 Mouth organs", "笙"),
          "钟": ("钟·鑮 Bells", "钟"), "磬": ("磬 Stone chimes", "磬"), "鼓": ("鼓·鼙·鼗 Drums", "鼓"),
          "呼": ("呼 Calls (获, 诺)", "呼")}
_FAMILY_GROUP = {"bell": "钟", "stone": "磬", "drum": "鼓", "string": "瑟", "pipe": "簜", "free_reed": "笙",
                 "voice": "歌"}
#: display positions (step, octave) of the unpitched drums on the percussion staff, by kind.
DRUM_LINE = {"建鼓": ("F", 4), "鼙": ("C", 5), "鼗": ("G", 5)}
GRID = 4                     # divisions of a quarter note onsets are quantised to (sixteenths)
BEATS_PER_MEASURE = 4


def group_of(name: str, facts: dict[str, Any]) -> str:
    """The score part an instrument belongs to."""
    kind = facts.get("kind", "")
    if kind in ("歌", "呼"):
        return kind
    return _FAMILY_GROUP.get(facts.get("family", ""), "呼")


def cents_text(c: float | None) -> str:
    """Cents as written under a note: sign always shown, rounded to the cent (e.g. ``−21``)."""
    if c is None:
        return ""
    r = int(round(c))
    return "±0" if r == 0 else (f"+{r}" if r > 0 else f"−{-r}")


@dataclass(frozen=True)
class Section:
    """One cue laid out in the score: where it starts (quarters) and its tempo."""

    cue_id: str
    offset_ql: float          # quarter notes from the start of the score
    length_ql: float          # whole measures
    quarter_s: float          # seconds per quarter note: the cue's beat_s


def metronome_number(quarter_s: float) -> float:
    """Quarter notes a minute for a quarter of ``quarter_s`` seconds, to four figures (as printed)."""
    return float(f"{60.0 / quarter_s:.4g}")


def select_cues(timeline: Timeline, cue_ids: list[str] | None) -> list[Cue]:
    """The cues to print, in time order; all cues with notes when ``cue_ids`` is empty."""
    with_notes = {n.cue for n in timeline.notes}
    chosen = chosen_cues(timeline, cue_ids) if cue_ids else [c for c in timeline.cues if c.id in with_notes]
    chosen = [c for c in chosen if c.id in with_notes]
    if not chosen:
        raise UserError("the selected cues have no notes to print", key="--cues")
    return sorted(chosen, key=lambda c: c.start)


def build_score(timeline: Timeline, cue_ids: list[str] | None = None) -> stream.Score:
    """A music21 ``Score`` of the chosen cues (see the module docstring)."""
    from music21 import bar, clef, expressions, instrument, layout, metadata, meter, stream, tempo

    cues = select_cues(timeline, cue_ids)
    insts = timeline.instruments
    groups_used = []
    notes_by_cue = {c.id: [n for n in timeline.notes if n.cue == c.id] for c in cues}
    sections = []
    offset = 0.0
    for c in cues:
        ns = notes_by_cue[c.id]
        q = c.beat_s
        end_ql = max((n.time - c.start + n.duration) / q for n in ns)
        length = math.ceil(max(end_ql, 1e-9) / BEATS_PER_MEASURE) * BEATS_PER_MEASURE
        sections.append(Section(c.id, offset, float(length), q))
        offset += length
        for n in ns:
            g = group_of(n.instrument, insts.get(n.instrument, {}))
            if g not in groups_used:
                groups_used.append(g)
    total_ql = offset
    order = [g for g in GROUPS if g in groups_used] + [g for g in groups_used if g not in GROUPS]

    score = stream.Score()
    score.metadata = metadata.Metadata()
    pieces = "、".join(dict.fromkeys(c.piece for c in cues))
    score.metadata.title = f"{timeline.ceremony.name} · {pieces}"
    score.metadata.composer = ("风雅十二诗谱 (Song) where it survives; lost pieces are modern "
                               "reconstructions (重构)")
    score.metadata.movementName = f"黄钟 = {timeline.ceremony.huangzhong_hz:g} Hz"

    for gi, g in enumerate(order):
        part = stream.Part()
        part.id = f"P{gi + 1}"
        name, abbr = GROUPS.get(g, (g, g))
        inst = instrument.UnpitchedPercussion() if g == "鼓" else instrument.Instrument()
        inst.partName, inst.partAbbreviation = name, abbr
        inst.instrumentName = name
        part.insert(0, inst)
        part.partName, part.partAbbreviation = name, abbr
        if g == "鼓":
            part.insert(0, clef.PercussionClef())
        part.insert(0, meter.TimeSignature(f"{BEATS_PER_MEASURE}/4"))
        for sec, c in zip(sections, cues):
            if gi == 0:
                part.insert(sec.offset_ql, tempo.MetronomeMark(number=metronome_number(sec.quarter_s),
                                                               referent=1.0))
                label = f"{c.piece} · {c.action}" + (" · 重构 reconstruction" if c.reconstruction else "")
                part.insert(sec.offset_ql, expressions.RehearsalMark(label))
            ns = [n for n in notes_by_cue[c.id] if group_of(n.instrument, insts.get(n.instrument, {})) == g]
            _fill(part, ns, c.start, sec, drum=(g == "鼓"), words=(g == "歌"), insts=insts)
        if g != "鼓":
            part.insert(0, clef.bestClef(part, recurse=True))
        _rest_gaps(part, total_ql)
        part.makeMeasures(inPlace=True)
        part.makeTies(inPlace=True)
        _finish_notation(part)
        boundaries = {s.offset_ql + s.length_ql for s in sections}
        for m in part.getElementsByClass(stream.Measure):
            # every bar is BEATS_PER_MEASURE quarters (the part's one time signature; music21's
            # barDuration searched the part for it, bar by bar: a fifth of the score's time)
            if m.offset + BEATS_PER_MEASURE in boundaries:
                m.rightBarline = bar.Barline("final" if m.offset + BEATS_PER_MEASURE >= total_ql
                                             else "double")
        score.insert(0, part)
    score.insert(0, layout.StaffGroup(list(score.parts), name="", symbol="bracket"))
    return score


def _fill(part: stream.Part, ns: list[Note], cue_start: float, sec: Section, drum: bool, words: bool,
          insts: dict[str, dict[str, Any]]) -> None:
    """Insert the notes of one group in one cue: chords of simultaneous onsets, no overlaps."""
    from music21 import chord, note, percussion, pitch

    if not ns:
        return
    on_q = np.round((np.array([n.time for n in ns]) - cue_start) / sec.quarter_s * GRID) / GRID
    dur_q = np.maximum(np.round(np.array([n.duration for n in ns]) / sec.quarter_s * GRID) / GRID, 1 / GRID)
    onsets = np.unique(on_q)
    for k, t in enumerate(onsets):
        idx = np.nonzero(on_q == t)[0]
        nxt = onsets[k + 1] if k + 1 < len(onsets) else sec.length_ql
        d = float(min(dur_q[idx].max(), nxt - t))
        at = [ns[i] for i in idx]
        # music21 elements: unpitched heads (drums), else one note or chord per onset
        el: Any
        heads: list[Any]
        if drum:
            lines = sorted({DRUM_LINE.get(insts.get(n.instrument, {}).get("kind", ""), ("A", 4)) for n in at},
                           key=lambda s: (s[1], "CDEFGAB".index(s[0])))
            heads = []
            for step, octv in lines:
                u: Any = note.Unpitched()       # its displayStep is typed as a step-name Literal
                u.displayStep, u.displayOctave = step, octv
                heads.append(u)
            el = heads[0] if len(heads) == 1 else percussion.PercussionChord(heads)
            el.quarterLength = d
            el.addLyric("·".join(dict.fromkeys(n.instrument.split("·")[0] for n in at)))
        else:
            keys: dict[int, Note] = {}
            for n in at:                          # one head per MIDI key; the loudest note names it
                if n.midi not in keys or n.velocity > keys[n.midi].velocity:
                    keys[n.midi] = n
            heads = [keys[m] for m in sorted(keys)]
            if len(heads) == 1:
                el = note.Note(pitch.Pitch(midi=heads[0].midi))
                if heads[0].hz is None:           # a spoken call: an x head, no pitch meant
                    el.notehead = "x"
            else:
                el = chord.Chord([pitch.Pitch(midi=h.midi) for h in heads])
            el.quarterLength = d
            el.volume.velocity = max(h.velocity for h in heads)
            if words:
                syl = next((n.lyric for n in at if n.lyric), None)
                el.addLyric(syl or "", lyricNumber=1)
            el.addLyric("/".join(h.lv or "" for h in reversed(heads)),
                        lyricNumber=2 if words else 1)
            el.addLyric("/".join(cents_text(h.cents) for h in reversed(heads)),
                        lyricNumber=3 if words else 2)
        part.insert(sec.offset_ql + float(t), el)


def _finish_notation(part: stream.Part) -> None:
    """What music21's MusicXML export would otherwise do on a copy of the whole score (a third of
    the ceremony's export time): split durations no single note value writes, beam, bracket
    tuplets. The score is then written as it stands (``makeNotation=False``)."""
    from music21 import exceptions21, stream
    from music21.stream import makeNotation

    measures = list(part.getElementsByClass(stream.Measure))
    for m in measures:
        m.splitAtDurations(recurse=True)
    with contextlib.suppress(exceptions21.Music21Exception):   # a measure no meter divides:
        part.makeBeams(inPlace=True)                           # left unbeamed
    for m in measures:
        for m_or_v in [m, *m.voices]:
            makeNotation.makeTupletBrackets(m_or_v, inPlace=True)


def _rest_gaps(part: stream.Part, total_ql: float) -> None:
    """Fill the silences between notes with rests, up to ``total_ql``."""
    from music21 import note

    pos: float | Fraction = 0.0
    events = sorted((e.offset, e.offset + e.quarterLength) for e in part.notes)
    for start, end in [*events, (total_ql, total_ql)]:
        if start > pos + 1e-6:
            r = note.Rest()
            r.quarterLength = start - pos
            part.insert(pos, r)
        pos = max(pos, end)


def write_musicxml(score: stream.Score, target: str | Path) -> Path:
    """Write ``score`` as MusicXML to ``target`` atomically."""
    target = Path(target)
    with atomic.atomic_path(target, suffix=".musicxml") as tmp:
        score.write("musicxml", fp=str(tmp), makeNotation=False)    # build_score notated it
    return target


def lilypond_available() -> bool:
    return bool(shutil.which("lilypond") and shutil.which("musicxml2ly"))


def write_pdf(musicxml: str | Path, target: str | Path, timeout_s: float = 300.0) -> Path:
    """Engrave ``musicxml`` to PDF with LilyPond (``musicxml2ly`` then ``lilypond``)."""
    if not lilypond_available():
        raise UserError("--pdf needs LilyPond (Debian package 'lilypond': lilypond and musicxml2ly)")
    target = Path(target)
    with tempfile.TemporaryDirectory(prefix="yuexuan-ly-") as d:
        ly = Path(d) / "score.ly"
        _run(["musicxml2ly", "--no-beaming", "-o", str(ly), str(musicxml)], timeout_s)
        _run(["lilypond", "-dno-point-and-click", "-o", str(Path(d) / "score"), str(ly)], timeout_s)
        pdf = Path(d) / "score.pdf"
        if not pdf.is_file():
            raise UserError("LilyPond wrote no PDF", file=str(musicxml))
        with atomic.atomic_path(target, suffix=".pdf") as tmp:
            shutil.copyfile(pdf, tmp)
            os.chmod(tmp, 0o644)
    return target


def _run(cmd: list[str], timeout_s: float) -> None:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise UserError(f"{cmd[0]} took longer than {timeout_s:g} s") from None
    if p.returncode != 0:
        last = (p.stderr or p.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise UserError(f"{cmd[0]} failed (exit {p.returncode}): {last[0]}")
