"""The reading of each sung, called or spoken syllable of a timeline, read in its line: a cue's
syllables of one voice in time order (so that pypinyin's phrase table and the readings table of
:mod:`yuexuan.audio.phonetics` see 周行, 和乐, 用乐 … as words)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from yuexuan.audio import forked, phonetics
from yuexuan.audio.phonetics import Reading
from yuexuan.timeline import Note

LineReader = Callable[[list[str]], "list[tuple[Reading, ...]] | None"]


def readings(notes: Sequence[Note], families: Mapping[str, str],
             read_lines: LineReader | None = None) -> dict[int, Reading]:
    """{index into ``notes``: reading} for every voice note with a one-character lyric.
    ``read_lines`` (a :func:`forked_reader`'s ``call``) reads the lines elsewhere; if it gives
    nothing, they are read here (:func:`yuexuan.audio.phonetics.read_line`)."""
    lines: dict[tuple[str, str], list[int]] = {}
    for j, n in enumerate(notes):
        if families.get(n.instrument) == "voice" and n.lyric and len(n.lyric) == 1 \
                and not n.lyric.isascii():
            lines.setdefault((n.cue, n.instrument), []).append(j)
    groups = list(lines.values())
    for idx in groups:
        idx.sort(key=lambda j: notes[j].time)
    texts = ["".join(notes[j].lyric or "" for j in idx) for idx in groups]
    got = read_lines(texts) if read_lines is not None and texts else None
    if got is None or len(got) != len(texts):
        got = [phonetics.read_line(t) for t in texts]
    out: dict[int, Reading] = {}
    for idx, said in zip(groups, got):
        for j, r in zip(idx, said):
            out[j] = r
    return out


def _prepare() -> None:
    phonetics.read_line("之")           # imports pypinyin (its phrase table: 0.2 s), reads the table


def _read_all(texts: list[str]) -> list[tuple[Reading, ...]]:
    return [phonetics.read_line(t) for t in texts]


def forked_reader() -> forked.Helper:
    """A child that imports pypinyin now, while this process imports and compiles, and then reads
    the lines :func:`readings` gives it (``helper.call``): the render's start-up is serial, one
    core idle, and pypinyin's import a quarter of it. Close it (``helper.close``) when done."""
    return forked.Helper(_prepare, _read_all)
