"""Pieces: melodies as data (pieces/*.toml), one note per syllable.

A stanza is either ``lv`` + ``gongche`` (the 风雅十二诗谱 as 熊朋来 writes it: the 律 line gives the pitch
class, the 工尺 line the octave) or ``pitches`` (space-separated pitch names such as 黄 太清, used for
reconstructions). ``words``, when present, has one character per note.

A ``[[correction]]`` mends a slip of the written source (its ``lv`` or its ``gongche`` letter at one
syllable), with its reason in ``note``. A ``[[reading]]`` gives the note another witness has at one
syllable (``pitch``: 黄, 黄清 …), read when the setting that names the witness (``by``) is chosen:
:meth:`Piece.read` (the 诗谱's notes as 朱熹's print gives them, ceremony/variants.toml shipu_reading).

``reconstruction`` marks a melody of ours (a lost piece); ``later_source`` names the later source of
a melody that survives only from after the Zhou (the Song 风雅十二诗谱, 熊朋来's Yuan 瑟谱), so that no
output passes it as a Zhou tune.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from yuexuan.data import DataSource
from yuexuan.errors import UserError
from yuexuan.rite import tomlfile
from yuexuan.rite.tuning import LV, Pitch, parse_pitch

#: one stanza: its notes, each (Pitch, the syllable sung or None)
Stanza = tuple[tuple[Pitch, str | None], ...]

#: 工尺 letter → the 律 it may stand for (熊朋来 卷一「雅律通俗谱例」; 五 also 夹清 in 熊's 夹钟角 驺虞)
#: and the octave it fixes (六, 五: the upper octave).
GONGCHE = {"合": ("黄", 0), "四": ("大太", 0), "一": ("夹姑", 0), "上": ("仲", 0), "勾": ("蕤", 0),
           "尺": ("林", 0), "工": ("夷南", 0), "凡": ("无应", 0), "六": ("黄", 1), "五": ("大太夹", 1)}
_KEYS = {"title", "pinyin", "english", "mode", "reconstruction", "phrase_syllables", "source",
         "stanza", "correction", "reading", "later_source"}
_STANZA_KEYS = {"pitches", "words", "lv", "gongche"}
_CORRECTION_KEYS = {"stanza", "syllable", "lv", "gongche", "note"}
_READING_KEYS = {"by", "stanza", "syllable", "pitch", "note"}


@dataclass(frozen=True)
class Reading:
    """Another witness's note at one syllable (a ``[[reading]]`` row)."""

    by: str            # the reading's name, as a variant option's ``reading`` names it (朱熹)
    stanza: int        # 1-based
    syllable: int      # 1-based, within the stanza
    pitch: Pitch
    note: str          # which witnesses, and why


@dataclass(frozen=True)
class Piece:
    title: str
    english: str
    mode: str
    reconstruction: bool
    source: str
    phrase_syllables: int
    stanzas: tuple[Stanza, ...]      # of tuples of (Pitch, syllable or None)
    file: str = ""
    later_source: str = ""    # e.g. "宋 风雅十二诗谱 (…)"; "" for none (module docstring)
    readings: tuple[Reading, ...] = ()

    def notes(self) -> list[tuple[Pitch, str | None]]:
        """All (Pitch, syllable) pairs, stanza after stanza."""
        return [n for st in self.stanzas for n in st]

    def read(self, by: str) -> Piece:
        """The piece with the notes of its readings ``by`` that witness (itself if it has none)."""
        rows = {(r.stanza, r.syllable): r.pitch for r in self.readings if r.by == by}
        if not rows:
            return self
        stanzas = tuple(tuple((rows.get((j, i), p), w) for i, (p, w) in enumerate(st, start=1))
                        for j, st in enumerate(self.stanzas, start=1))
        return replace(self, stanzas=stanzas)


def _stanza(f: tomlfile.Fields, corrections: dict[int, dict[str, str]]) -> Stanza:
    words = f.get("words", str, None)
    if f.has("pitches"):
        try:
            pitches = [parse_pitch(t) for t in f.get("pitches", str).split()]
        except UserError as exc:
            raise f.error("pitches", exc.message) from None
    else:
        lv, gc = f.get("lv", str), f.get("gongche", str)
        if len(lv) != len(gc):
            raise f.error("gongche", f"{len(gc)} 工尺 letters for {len(lv)} 律; expected one each")
        pitches = []
        for i, (lu, g) in enumerate(zip(lv, gc), start=1):
            lu, g = corrections.get(i, {}).get("lv", lu), corrections.get(i, {}).get("gongche", g)
            if lu not in LV:
                raise f.error("lv", f"syllable {i}: unknown 律 {lu!r}")
            if g not in GONGCHE:
                raise f.error("gongche", f"syllable {i}: unknown 工尺 letter {g!r}")
            allowed, octave = GONGCHE[g]
            if lu not in allowed:
                raise f.error("gongche", f"syllable {i}: 工尺 {g} cannot stand for {lu}; it stands for "
                                         f"{'/'.join(allowed)}")
            pitches.append(Pitch(LV.index(lu), octave))
    if not pitches:
        raise f.error("pitches", "empty stanza")
    if words is not None and len(words) != len(pitches):
        raise f.error("words", f"{len(words)} syllables for {len(pitches)} notes; expected one each")
    return tuple((p, words[i] if words else None) for i, p in enumerate(pitches))


def load_piece(path: str | Path) -> Piece:
    data, text = tomlfile.load(path)
    f = tomlfile.Fields(data, str(path), text, "")
    f.known_keys({**dict.fromkeys(_KEYS), "stanza": _STANZA_KEYS, "correction": _CORRECTION_KEYS,
                  "reading": _READING_KEYS})
    corr: dict[int, dict[int, dict[str, str]]] = {}     # stanza → syllable → {lv, gongche}
    mends = [tomlfile.Fields(c, str(path), text, f"correction[{j}]",
                             tomlfile.table_line(text, "correction", j))
             for j, c in enumerate(f.get("correction", list, []))]
    for cf in mends:
        mend = {k: cf.get(k, str) for k in ("lv", "gongche") if cf.has(k)}
        if not mend:
            raise cf.error("lv", "a correction mends the `lv` or the `gongche` of one syllable")
        cf.get("note", str)                                    # its reason
        corr.setdefault(cf.get("stanza", int, lo=1), {})[cf.get("syllable", int, lo=1)] = mend
    stanzas = []
    for j, s in enumerate(f.get("stanza", list)):
        sf = tomlfile.Fields(s, str(path), text, f"stanza[{j}]", tomlfile.table_line(text, "stanza", j))
        stanzas.append(_stanza(sf, corr.get(j + 1, {})))
    if not stanzas:
        raise f.error("stanza", "a piece needs at least one [[stanza]]")
    for cf in mends:               # each within the piece (one outside it would mend nothing)
        _at(cf, stanzas)
    readings = tuple(_reading(tomlfile.Fields(r, str(path), text, f"reading[{j}]",
                                              tomlfile.table_line(text, "reading", j)), stanzas)
                     for j, r in enumerate(f.get("reading", list, [])))
    return Piece(title=f.get("title", str), english=f.get("english", str, ""), mode=f.get("mode", str, ""),
                 reconstruction=f.get("reconstruction", bool), source=f.get("source", str),
                 phrase_syllables=f.get("phrase_syllables", int, 4, lo=1, hi=64),
                 stanzas=tuple(stanzas), file=str(path),
                 later_source=f.get("later_source", str, "").strip(), readings=readings)


def _at(f: tomlfile.Fields, stanzas: list[Stanza]) -> tuple[int, int]:
    """(stanza, syllable) of a correction or reading row, both within the piece."""
    st = f.get("stanza", int, lo=1, hi=len(stanzas))
    return st, f.get("syllable", int, lo=1, hi=len(stanzas[st - 1]))


def _reading(f: tomlfile.Fields, stanzas: list[Stanza]) -> Reading:
    st, syl = _at(f, stanzas)
    try:
        pitch = parse_pitch(f.get("pitch", str))
    except UserError as exc:
        raise f.error("pitch", exc.message) from None
    return Reading(f.get("by", str), st, syl, pitch, f.get("note", str))


def load_all(source: DataSource = DataSource()) -> dict[str, Piece]:
    """All pieces of pieces/ of ``source`` (default: the packaged data), by title."""
    out: dict[str, Piece] = {}
    for p in source.files("pieces"):
        piece = load_piece(p)
        if piece.title in out:
            raise UserError(f"duplicate piece title {piece.title!r}", file=str(p), key="title")
        out[piece.title] = piece
    return out


def read_by(pieces: dict[str, Piece], by: str) -> dict[str, Piece]:
    """``pieces`` with the readings ``by`` that witness (:meth:`Piece.read`); "" reads none."""
    return {title: p.read(by) for title, p in pieces.items()} if by else pieces
