"""How a syllable is pronounced: its initial, final and tone, from a pronunciation dictionary (read by
the compiler for the formulas' prosody, :mod:`yuexuan.compiler.prosody`, and by the voices).

The reading is modern Standard Mandarin (the setting ``reading`` of ``ceremony/readings.toml``),
NOT the Zhou pronunciation. pypinyin (MIT) reads each line with its phrase table; the table of
``ceremony/readings.toml`` (each entry with its source) overrides it where the commentaries read a
word of these texts otherwise (周行 háng, 和乐 lè, 用乐 yuè …). No sound is ever chosen from a
code point: a character pypinyin does not know is refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from yuexuan.data import DataSource
from yuexuan.errors import UserError
from yuexuan.rite import readings

#: Mandarin initials, longest first (for splitting a pinyin syllable).
INITIALS = ("zh", "ch", "sh", "b", "p", "m", "f", "d", "t", "n", "l", "g", "k", "h", "j", "q", "x",
            "r", "z", "c", "s")
_PINYIN = re.compile(r"^([a-zü]+?)([1-5]?)$")


@dataclass(frozen=True)
class Reading:
    """One syllable: initial ('' for none), final in pypinyin's strict spelling (``iou``, ``uei``,
    ``v`` for ü, ``i`` also for the apical vowels of zi/zhi), tone 1–4, 5 neutral."""

    initial: str
    final: str
    tone: int

    @property
    def pinyin(self) -> str:
        return f"{self.initial}{self.final}{self.tone}"


def split(syllable: str) -> Reading:
    """A pinyin syllable with tone number (``zhou1``, ``yue4``) as a :class:`Reading`."""
    from pypinyin import Style
    from pypinyin.style import convert

    m = _PINYIN.match(syllable.strip().lower().replace("u:", "v"))
    if not m:
        raise ValueError(f"not a pinyin syllable with a tone number: {syllable!r}")
    bare, tone = m.group(1), int(m.group(2) or 5)
    initial = convert(bare, Style.INITIALS, strict=True, default=bare) or ""
    final = convert(bare, Style.FINALS, strict=True, default=bare) or bare
    return Reading(initial, final.replace("ü", "v"), tone)


@dataclass(frozen=True)
class Table:
    """The overrides of ``ceremony/readings.toml``: phrases matched in a line, and characters alone."""

    setting: str
    phrases: tuple[tuple[str, tuple[Reading, ...]], ...]     # longest first
    alone: dict[str, Reading]


@lru_cache(maxsize=4)
def table(source: DataSource = DataSource()) -> Table:
    """The reading table of ``source`` (``ceremony/readings.toml``, read by
    :mod:`yuexuan.rite.readings`), its syllables split into readings."""
    data = readings.load(source)

    def read(entry: readings.Override) -> tuple[Reading, ...]:
        try:
            return tuple(split(s) for s in entry.syllables)
        except ValueError as exc:
            raise UserError(f"{entry.text}: {exc}", file=data.file) from None

    phrases = sorted(((e.text, read(e)) for e in data.phrases), key=lambda p: -len(p[0]))
    return Table(data.setting, tuple(phrases), {e.text: read(e)[0] for e in data.alone})


@lru_cache(maxsize=4096)
def read_line(line: str, source: DataSource = DataSource()) -> tuple[Reading, ...]:
    """The reading of each character of ``line`` (one voice's syllables in order)."""
    from pypinyin import Style, lazy_pinyin

    def refuse(ch: str) -> str:
        raise UserError(f"no Mandarin reading known for {ch!r} (not in pypinyin's dictionary)")

    pys = lazy_pinyin(line, style=Style.TONE3, neutral_tone_with_five=True, errors=refuse)
    if len(pys) != len(line):
        raise UserError(f"cannot read {line!r} one syllable per character")
    out = [split(p) for p in pys]
    tab = table(source)
    if len(line) == 1 and line in tab.alone:
        return (tab.alone[line],)
    fixed = [False] * len(line)
    for text, said in tab.phrases:
        start = line.find(text)
        while start >= 0:
            if not any(fixed[start:start + len(text)]):
                out[start:start + len(text)] = said
                fixed[start:start + len(text)] = [True] * len(text)
            start = line.find(text, start + 1)
    return tuple(out)


def read_syllable(syllable: str, source: DataSource = DataSource()) -> Reading:
    """The reading of one character alone (a call: 诺, 获, 留 …)."""
    return read_line(syllable[:1], source)[0]
