"""The cue sheet's roster: the ``[[pair]]`` tables, each a 上射 and a 下射 with their hits."""

from __future__ import annotations

from yuexuan.rite.cuesheet_records import ARCHER_RANKS, MAX_PAIRS, Archer, Pair
from yuexuan.rite.tomlfile import Fields

PAIR_KEYS = {"id", "group", "upper", "lower", "hits"}


def _archer(pf: Fields, key: str) -> Archer:
    a = pf.table(key)
    a.unknown({"name", "rank"})
    return Archer(a.get("name", str), a.get("rank", str, choices=ARCHER_RANKS))


def _hits(pf: Fields) -> tuple:
    """Up to three rounds of up to 8 marks each, ``x`` hit or ``.`` miss."""
    hits = tuple(pf.get("hits", list, []))
    if len(hits) > 3:
        raise pf.error("hits", "at most three rounds")
    for h in hits:
        if not isinstance(h, str) or len(h) > 8 or set(h) - {"x", "."}:
            raise pf.error("hits", f"{h!r}: expected up to 8 marks, x (hit) or . (miss)")
    return hits


def roster(top: Fields) -> tuple:
    """The pairs of the sheet's ``[[pair]]`` tables, in order; ids unique."""
    pairs, seen = [], {}
    for i, pf in enumerate(top.tables("pair", [], limit=MAX_PAIRS)):
        pf.unknown(PAIR_KEYS)
        pid = pf.get("id", str)
        if pid in seen:
            raise pf.error("id", f"duplicate pair id {pid!r} (first at pair[{seen[pid]}])")
        seen[pid] = i
        hits = _hits(pf)
        upper, lower = _archer(pf, "upper"), _archer(pf, "lower")
        if upper.rank == "公":
            raise pf.error("upper", "the 公 shoots as 下射 (公下射也，而先发不留尊也); put him in `lower`")
        pairs.append(Pair(pid, pf.get("group", str), upper, lower, hits))
    return tuple(pairs)
