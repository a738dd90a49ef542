"""The cue sheet's ``[[cue]]`` tables: one pure function per part of a cue (its instruments, its
县, its calls, its pairs, its length), checked against the known pieces, instruments, variants and
the roster. Every problem raises :class:`~yuexuan.errors.UserError` naming the file, line and key.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from yuexuan.rite.cuesheet_records import (
    CAPTION_KEYS,
    CONDITIONS,
    CUE_KINDS,
    MAX_CUES,
    SHOOTING_KINDS,
    Call,
    CueSpec,
    PieceNames,
)
from yuexuan.rite.cuesheet_setting import seconds
from yuexuan.rite.cuesheet_speech import speech
from yuexuan.rite.instruments import KINDS, Instrument, members
from yuexuan.rite.pieces import Piece
from yuexuan.rite.tomlfile import Fields
from yuexuan.rite.tuning import WUSHENG

CUE_KEYS = {"id", "piece", "action", "kind", "performers", "starts_when", "ends_when", "starts_when_en",
            "ends_when_en", "source", "gloss",
            "xian", "melody", "jie", "intro", "open_ended", "default_seconds", "zhong", "sanzhong",
            "accompaniment", "calls", "round", "pairs", "arrow_seconds", "pair_seconds", "reconstruction",
            "syllable_seconds", "note_seconds", "by_piece", "speech", "when", "wording_of", "pieces"}
BY_PIECE_KEYS = {"id", *CAPTION_KEYS}
CALL_KEYS = {"who", "sheng", "word", "at", "seconds", "velocity", "plain"}
XIAN_SIDES = ("东", "西", "北", "南", "堂上")


class Known(NamedTuple):
    """What a cue may name: pieces and instruments by name, variant definitions
    (ceremony/variants.toml) by key, and the roster's pair groups and ids."""
    pieces: dict[str, Piece]
    instruments: dict[str, Instrument]
    vdefs: dict[str, Any]
    groups: frozenset[str]


def cues(top: Fields, known: Known) -> tuple[CueSpec, ...]:
    """Every ``[[cue]]`` of the sheet, in order; ids unique."""
    tables = top.tables("cue", limit=MAX_CUES)
    if not tables:
        raise top.error("cue", "a cue sheet needs at least one [[cue]]")
    out: list[CueSpec] = []
    first_at: dict[str, int] = {}
    for i, cf in enumerate(tables):
        cf.unknown(CUE_KEYS)
        cid = _id(cf)
        if cid in first_at:
            raise cf.error("id", f"duplicate cue id {cid!r} (first at cue[{first_at[cid]}])")
        first_at[cid] = i
        out.append(cue(cf, cid, known))
    for cf, spec in zip(tables, out):
        for title, names in spec.by_piece:
            if names.id != spec.id and names.id in first_at:
                raise cf.table("by_piece").table(title).error(
                    "id", f"{names.id!r} is the id of cue[{first_at[names.id]}] too; "
                          "expected an id of its own")
    return tuple(out)


def _id(f: Fields) -> str:
    cid = f.get("id", str)
    if not cid.strip() or "," in cid:
        raise f.error("id", "expected a non-empty id without commas")
    return cid


def by_piece(cf: Fields, kind: str, known: Known) -> tuple[tuple[str, PieceNames], ...]:
    """A 射节 cue's ``[cue.by_piece."TITLE"]`` tables: the id and caption it takes when it plays
    that piece (the rank's, 礼记·射义), so that a 天子's 驺虞 is not captioned as another piece."""
    if not cf.has("by_piece"):
        return ()
    if kind != "shejie":
        raise cf.error("by_piece", "only a 射节 cue (kind = \"shejie\") plays a piece chosen by "
                                   "the rank")
    tf, out = cf.table("by_piece"), []
    for title in tf.data:
        if title not in known.pieces:
            raise tf.error(title, f"unknown piece {title!r}; "
                                  f"expected one of: {', '.join(sorted(known.pieces))}")
        pf = tf.table(title)
        pf.unknown(BY_PIECE_KEYS)
        fields = (pf.get(k, str, None) for k in CAPTION_KEYS)
        out.append((title, PieceNames(_id(pf), *fields)))
    return tuple(out)


def cue(cf: Fields, cid: str, known: Known) -> CueSpec:
    """One ``[[cue]]`` table (its id already checked)."""
    kind = cf.get("kind", str, "music", choices=CUE_KINDS)
    # a 射节 cue may leave its piece to the rank (ceremony/suspension.toml shejie_piece, 礼记·射义)
    piece = cf.get("piece", str, None if kind == "shejie" else ...)
    if kind in ("music", "shejie") and piece is not None and piece not in known.pieces:
        raise cf.error("piece", f"unknown piece {piece!r}; "
                                f"expected one of: {', '.join(sorted(known.pieces))}")
    melody, jie, intro = (_instrument_names(cf, key, known.instruments) for key in ("melody", "jie", "intro"))
    xian, xian_variant = _xian(cf, known.vdefs)
    for key in ("sanzhong", "accompaniment"):
        if cf.has(key) and cf.get(key, str) not in known.vdefs:
            raise cf.error(key, f"unknown variant {cf.data[key]!r}; "
                                f"expected one of: {', '.join(known.vdefs)}")
    cue_calls = calls(cf, known.instruments)
    if kind == "calls" and not cue_calls:
        raise cf.error("calls", "a calls cue needs at least one call")
    said = speech(cf, known.instruments)
    if kind == "speech" and not said:
        raise cf.error("speech", "a speech cue needs at least one utterance")
    pairs = _pairs(cf, kind, known.groups)
    zhong, open_ended = _length(cf, kind)
    suite = cf.strings("pieces")
    for title in suite:
        if title not in known.pieces:
            raise cf.error("pieces", f"unknown piece {title!r}; expected one of: "
                                     f"{', '.join(sorted(known.pieces))}")
    if kind == "music" and not melody:
        raise cf.error("melody", "a music cue needs the instruments that play its melody")
    return CueSpec(
        id=cid, piece=piece, action=cf.get("action", str), kind=kind, source=cf.get("source", str),
        line=cf.line, performers=cf.get("performers", str, ""), starts_when=cf.get("starts_when", str, ""),
        ends_when=cf.get("ends_when", str, ""), starts_when_en=cf.get("starts_when_en", str, ""),
        ends_when_en=cf.get("ends_when_en", str, ""), gloss=cf.get("gloss", str, ""), xian=xian,
        xian_variant=xian_variant, melody=melody, jie=jie, intro=intro, open_ended=open_ended,
        default_seconds=seconds(cf, "default_seconds", None, lo=0.1), zhong=zhong,
        sanzhong=cf.get("sanzhong", str, None), accompaniment=cf.get("accompaniment", str, None),
        calls=cue_calls, speech=said, round=cf.get("round", int, None, lo=1, hi=3), pairs=pairs,
        arrow_seconds=seconds(cf, "arrow_seconds", 4.0, lo=0.1),
        pair_seconds=seconds(cf, "pair_seconds", 8.0),
        reconstruction=cf.get("reconstruction", bool, None),
        syllable_seconds=seconds(cf, "syllable_seconds", None, lo=0.05),
        note_seconds=seconds(cf, "note_seconds", None, lo=0.05), by_piece=by_piece(cf, kind, known),
        when=_when(cf), wording_of=cf.get("wording_of", str, None), pieces=suite)


def _when(cf: Fields) -> str | None:
    """``when``: the shot log's condition a cue sounds on (with the ``round`` it concerns)."""
    when = cf.get("when", str, None, choices=CONDITIONS)
    if when is not None and not cf.has("round"):
        raise cf.error("when", f"when = {when!r} needs the cue's `round` (whose arrows are counted)")
    return when


def _instrument_names(cf: Fields, key: str, instruments: dict[str, Instrument]) -> tuple[str, ...]:
    """``melody``, ``jie`` or ``intro``: instrument names or kinds (钟 磬 …)."""
    names = cf.strings(key)
    for name in names:
        if name not in instruments and name not in KINDS:
            raise cf.error(key, f"unknown instrument {name!r}; expected an instrument name "
                                f"({', '.join(instruments)}) or a kind ({', '.join(KINDS)})")
    return names


def _xian(cf: Fields, vdefs: dict[str, Any]) -> tuple[tuple[str, ...] | None, tuple[str, str] | None]:
    """(县 sides or None for all, (variant key, for whom) or None) from ``xian``."""
    if not cf.has("xian"):
        return None, None
    if isinstance(cf.data["xian"], dict):
        xf = cf.table("xian")
        xf.unknown({"variant", "for"})
        by_seat = {k: _seats(v) for k, v in vdefs.items() if _seats(v)}
        key = xf.get("variant", str, choices=tuple(by_seat))
        return None, (key, xf.get("for", str, choices=by_seat[key]))
    sides = cf.strings("xian")
    for s in sides:
        if s not in XIAN_SIDES:
            raise cf.error("xian", f"unknown 县 {s!r}; expected 东, 西, 北, 南 or 堂上")
    return sides, None


def _seats(vdef: dict[str, Any]) -> tuple[str, ...]:
    """The seats a 县 variant's options give sides for (宾, 公 in O1: an option's keys whose values
    are lists of 县 sides); () for a variant of another kind."""
    first: dict[str, Any] = next(iter(vdef["options"].values()), {})
    return tuple(k for k, v in first.items() if isinstance(v, list) and v and set(v) <= set(XIAN_SIDES))


def calls(cf: Fields, instruments: dict[str, Instrument]) -> tuple[Call, ...]:
    """The cue's ``calls``: the 负侯者's calls (``who``: an instrument, or a group of them such as
    负侯者, :func:`~yuexuan.rite.instruments.members`), each on a 声 of the mode, or ``plain``
    (spoken, no pitch; its ``sheng``, default 宫, is used only where a variant restores 宫 and 商)."""
    out = []
    for kf in cf.tables("calls", []):
        kf.unknown(CALL_KEYS)
        who = kf.get("who", str)
        bodies = [instruments[n] for n in members(instruments, who)]
        if not bodies:
            raise kf.error("who", f"unknown instrument {who!r} (an instrument, or a group of them "
                                  f"named {who}·…)")
        for body in bodies:
            if body.family != "voice":
                raise kf.error("who", f"{body.name} is not a voice (family {body.family!r}); calls "
                                      "are spoken or sung")
        plain = kf.get("plain", bool, False)
        mute = next((body for body in bodies if not body.pitched), None)
        if not plain and mute is not None:
            raise kf.error("plain", f"{mute.name} has no pitch (see {mute.file}); mark the call "
                                    "`plain = true`")
        out.append(Call(who, kf.get("sheng", str, "宫" if plain else ..., choices=WUSHENG),
                        kf.get("word", str, ""), seconds(kf, "at"), seconds(kf, "seconds", lo=0.01),
                        kf.get("velocity", int, 90, lo=1, hi=127), plain))
    return tuple(out)


def _pairs(cf: Fields, kind: str, groups: frozenset[str]) -> tuple[str, ...]:
    """The groups or pair ids that shoot, each known to the roster; required when shooting."""
    sel = cf.strings("pairs")
    for n in sel:
        if n not in groups:
            raise cf.error("pairs", f"no pair or group named {n!r} in the roster ([[pair]] tables)")
    if kind in SHOOTING_KINDS and not sel:
        raise cf.error("pairs", "a shooting cue needs the pairs (groups or ids) that shoot")
    return sel


def _length(cf: Fields, kind: str) -> tuple[int | None, bool]:
    """(zhong, open_ended): a music cue has exactly one of them."""
    zhong = cf.get("zhong", int, None, lo=1, hi=1000)
    open_ended = cf.get("open_ended", bool, False)
    if kind == "music" and zhong is None and not open_ended and not cf.has("pieces"):
        raise cf.error("zhong", "a music cue needs its length: `zhong = N` (终), `pieces = [...]` (each "
                                "once) or `open_ended = true`")
    if zhong is not None and open_ended:
        raise cf.error("open_ended", "give either `zhong` or `open_ended`, not both")
    return zhong, open_ended
