"""The readings table (``ceremony/readings.toml``): the words of these texts that the commentaries
read otherwise than the pronunciation dictionary (周行 háng, 和乐 lè, 用乐 yuè …), each with its
source, and the name of the reading the voices use. Read and checked here (every key, each entry's
syllables: pinyin with a tone number, one per character); the voices turn the syllables into
sounds (:mod:`yuexuan.pronunciation`, :mod:`yuexuan.audio.voice`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from yuexuan.data import DataSource
from yuexuan.rite import tomlfile

_ENTRY = {"text", "reading", "source"}
KEYS: tomlfile.Schema = {"reading": None, "phrase": _ENTRY, "alone": _ENTRY}
SYLLABLE = re.compile(r"^[a-zü]+[1-5]?$")       # pinyin, tone number 1–4, 5 (or none) neutral


@dataclass(frozen=True)
class Override:
    """One entry: ``text`` read as ``syllables`` (one pinyin syllable per character)."""

    text: str
    syllables: tuple[str, ...]
    source: str


@dataclass(frozen=True)
class ReadingTable:
    """The file's reading (its name), its phrases (matched within a line) and its characters
    read alone."""

    setting: str
    phrases: tuple[Override, ...]
    alone: tuple[Override, ...]
    file: str


def _entry(f: tomlfile.Fields) -> Override:
    text, reading = f.get("text", str), f.get("reading", str)
    source = f.get("source", str)
    if not text or not source.strip():
        raise f.error("text" if not text else "source", "expected a non-empty string")
    syllables = tuple(s.lower().replace("u:", "v") for s in reading.split())
    for s in syllables:
        if not SYLLABLE.match(s):
            raise f.error("reading", f"{s!r} is not a pinyin syllable with a tone number (zhou1, yue4)")
    if len(syllables) != len(text):
        raise f.error("reading", f"{len(text)} characters in {text!r} but {len(syllables)} syllables")
    return Override(text, syllables, source)


@lru_cache(maxsize=4)
def load(source: DataSource = DataSource()) -> ReadingTable:
    """The readings table of ``source`` (default: the packaged data)."""
    path = source.path("ceremony", "readings.toml")
    data, text = tomlfile.load(path)
    top = tomlfile.Fields(data, str(path), text, "")
    top.known_keys(KEYS)
    return ReadingTable(top.get("reading", str, ""), tuple(_entry(f) for f in top.tables("phrase", [])),
                        tuple(_entry(f) for f in top.tables("alone", [])), str(path))
