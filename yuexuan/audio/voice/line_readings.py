"""The reading of each sung, called or spoken syllable of a timeline, read in its line: a cue's
syllables of one voice in time order (so that pypinyin's phrase table and the readings table of
:mod:`yuexuan.pronunciation` see 周行, 和乐, 用乐 … as words)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from yuexuan import pronunciation
from yuexuan.data import DataSource
from yuexuan.pronunciation import Reading
from yuexuan.timeline import Note


def readings(notes: Sequence[Note], families: Mapping[str, str],
             source: DataSource = DataSource()) -> dict[int, Reading]:
    """{index into ``notes``: reading} for every voice note with a one-character lyric (the
    overrides from the readings table of ``source``)."""
    lines: dict[tuple[str, str], list[int]] = {}
    for j, n in enumerate(notes):
        if families.get(n.instrument) == "voice" and n.lyric and len(n.lyric) == 1 \
                and not n.lyric.isascii():
            lines.setdefault((n.cue, n.instrument), []).append(j)
    out: dict[int, Reading] = {}
    for idx in lines.values():
        idx.sort(key=lambda j: notes[j].time)
        chars = "".join(notes[j].lyric or "" for j in idx)
        for j, r in zip(idx, pronunciation.read_line(chars, source)):
            out[j] = r
    return out
