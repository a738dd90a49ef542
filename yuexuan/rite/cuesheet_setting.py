"""The cue sheet's setting tables: ``[ceremony]``, ``[variants]`` and ``[shejie]``.

Each part is a pure function over one table (:class:`~yuexuan.rite.tomlfile.Fields`, which knows the
lines); every problem raises :class:`~yuexuan.errors.UserError` naming the file, line and key.
"""

from __future__ import annotations

from typing import Any

from yuexuan.errors import UserError
from yuexuan.rite.cuesheet_records import MAX_SECONDS, SCORE_MAPPINGS, Ceremony, Shejie
from yuexuan.rite.ranks import DEFAULT_RITE, Rite
from yuexuan.rite.tomlfile import Fields
from yuexuan.rite.tuning import parse_pitch, table
from yuexuan.rite.vocabulary import MIXES

CEREMONY_KEYS = {"name", "rite", "rank", "huangzhong_hz", "gong", "gap_seconds", "syllable_seconds",
                 "note_seconds", "open_ended_seconds", "mix"}
SHEJIE_KEYS = {"jie_seconds", "pi_offsets", "gu_offsets", "syllables_per_jie", "heard_jie", "stroke_seconds",
               "score_mapping"}


def seconds(f: Fields, key: str, default: Any = ..., lo: float = 0.0) -> Any:
    """A duration in seconds, from ``lo`` to six hours."""
    return f.get(key, float, default, lo=lo, hi=MAX_SECONDS)


def rite_name(cer: Fields) -> str:
    """The ``[ceremony]`` table's ``rite``: the rite file ceremony/<rite>.toml (default dashe)."""
    return cer.get("rite", str, DEFAULT_RITE)


def ceremony(cer: Fields, rite: Rite) -> Ceremony:
    """The ``[ceremony]`` table; ``rank`` (a name or its alias) one of ``rite``'s ranks."""
    cer.unknown(CEREMONY_KEYS)
    given = cer.get("rank", str, rite.default_rank)
    rank = rite.resolve(given)
    if rank is None:
        raise cer.error("rank", f"unknown rank {given!r} of the {rite.name}; expected one of: "
                                f"{rite.listing()}")
    try:
        gong = parse_pitch(cer.get("gong", str, "黄钟"))
    except UserError as exc:
        raise cer.error("gong", exc.message) from None
    return Ceremony(
        name=cer.get("name", str), rank=rank,
        huangzhong_hz=_huangzhong_hz(cer), gong=gong,
        gap_seconds=seconds(cer, "gap_seconds", 5.0),
        syllable_seconds=seconds(cer, "syllable_seconds", 1.2, lo=0.05),
        note_seconds=seconds(cer, "note_seconds", 1.0, lo=0.05),
        open_ended_seconds=seconds(cer, "open_ended_seconds", 40.0, lo=0.1), rite=rite_name(cer),
        mix=cer.get("mix", str, None, choices=MIXES))


def _huangzhong_hz(cer: Fields) -> float:
    """黄钟, Hz (20..2000), that puts the twelve 律 and 黄清 on thirteen MIDI keys: a key is retuned
    once for the whole file (one Hz per MIDI key, yuexuan.timeline_checks), and a pitch an octave
    up is twelve keys up, so then no two 律 in any octaves share a key."""
    hz = cer.get("huangzhong_hz", float, lo=20.0, hi=2000.0)
    lv_on: dict[int, str] = {}
    for row in table(hz) + table(hz, 1)[:1]:
        if row["midi"] in lv_on:
            raise cer.error("huangzhong_hz", f"{hz:g} Hz puts {lv_on[row['midi']]} and {row['lv']} on "
                                             f"one MIDI key ({row['midi']}), which is tuned once; "
                                             f"choose another 黄钟 (the default is 345)")
        lv_on[row["midi"]] = row["lv"]
    return hz


def chosen_variants(vf: Fields, vdefs: dict[str, Any]) -> dict[str, str]:
    """The ``[variants]`` table: variant key -> chosen option, the defaults filled in.
    ``vdefs`` is ceremony/variants.toml (:func:`yuexuan.rite.variants.load`)."""
    chosen = {}
    for key in vf.data:
        if key not in vdefs:
            raise vf.error(key, f"unknown variant; expected one of: {', '.join(vdefs)}")
        chosen[key] = vf.get(key, str, choices=tuple(vdefs[key]["options"]))
    for key, v in vdefs.items():
        chosen.setdefault(key, v["default"])
    return chosen


def _offsets(f: Fields, key: str, default: tuple[float, ...]) -> tuple[float, ...]:
    """A non-empty array of stroke offsets, seconds into the 节."""
    v = f.get(key, list, None)
    if v is None:
        return default
    if not v or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
        raise f.error(key, "expected a non-empty array of numbers (seconds)")
    if any(x < 0 or x > MAX_SECONDS for x in v):
        raise f.error(key, "offsets must be between 0 and the 节 length")
    return tuple(float(x) for x in v)


def shejie(sf: Fields) -> Shejie:
    """The ``[shejie]`` table: the 射节 of round 3 — the drum grid, and how a 投壶 score is played."""
    sf.unknown(SHEJIE_KEYS)
    jie_seconds = sf.get("jie_seconds", float, 4.0, lo=0.2, hi=600.0)
    grid = Shejie(jie_seconds=jie_seconds,
                  pi_offsets=_offsets(sf, "pi_offsets", (0.0, 0.3)),
                  gu_offsets=_offsets(sf, "gu_offsets", (1.0, 3.0)),
                  syllables_per_jie=sf.get("syllables_per_jie", int, 4, lo=1, hi=64),
                  heard_jie=sf.get("heard_jie", int, None, lo=0, hi=64),
                  stroke_seconds=sf.get("stroke_seconds", float, 0.5, lo=0.1, hi=60.0),
                  score_mapping=sf.get("score_mapping", str, "节一终", choices=SCORE_MAPPINGS))
    if len(grid.pi_offsets) != 2:
        raise sf.error("pi_offsets", "expected two offsets: 朔鼙, then 应鼙")
    if len(grid.gu_offsets) != 2:
        raise sf.error("gu_offsets", "expected two 建鼓 strokes per 节, one for each arrow of the pair")
    if max(grid.pi_offsets + grid.gu_offsets) >= jie_seconds:
        raise sf.error("gu_offsets", f"every stroke must fall inside the 节 (jie_seconds = {jie_seconds})")
    if list(grid.gu_offsets) != sorted(grid.gu_offsets) or grid.gu_offsets[0] == grid.gu_offsets[1]:
        raise sf.error("gu_offsets", "expected two increasing offsets")
    return grid
