"""The cue sheet's roster: the ``[[pair]]`` tables, each a 上射 and a 下射 with their hits."""

from __future__ import annotations

from yuexuan.rite.cuesheet_records import MAX_PAIRS, Archer, Pair
from yuexuan.rite.tomlfile import Fields
from yuexuan.rite.vocabulary import ZHENG_CALLS

PAIR_KEYS = {"id", "group", "upper", "lower", "hits", "ranks"}


def _archer(pf: Fields, key: str) -> Archer:
    """``{ name = …, rank = … }``, or ``{ host = true }`` for the rite's host (公, 王, 主人: his rank
    and, by default, his name are the rank's ``host``); the ranks are checked against the rite's
    when it is compiled (:mod:`yuexuan.compiler.roster`)."""
    a = pf.table(key)
    a.unknown({"name", "rank", "host"})
    host = a.get("host", bool, False)
    if host:
        if a.has("rank"):
            raise a.error("rank", "the host's rank is the rite's (ceremony/<rite>.toml `host`); give "
                                  "either `rank` or `host = true`")
        return Archer(a.get("name", str, ""), "", True)
    return Archer(a.get("name", str), a.get("rank", str), False)


#: a ``hits`` mark: x (hit), . (miss), or where a miss went (:data:`ZHENG_CALLS`), the character
#: or its ASCII letter
_MARK = {"x": "x", ".": ".", **{c: c for c in ZHENG_CALLS}, **dict(zip("lyf", ZHENG_CALLS))}


def _hits(pf: Fields) -> tuple[str, ...]:
    """Up to three rounds of up to 8 marks each: ``x`` hit, ``.`` miss, or a miss with its place,
    ``留``/``l`` (low, short), ``扬``/``y`` (high, over), ``方``/``f`` (left or right); the ASCII
    letters are stored as the characters."""
    hits = tuple(pf.get("hits", list, []))
    if len(hits) > 3:
        raise pf.error("hits", "at most three rounds")
    for h in hits:
        if not isinstance(h, str) or len(h) > 8 or set(h) - set(_MARK):
            raise pf.error("hits", f"{h!r}: expected up to 8 marks, x (hit), . (miss) or a miss with "
                                   "where it went: 留 or l (low), 扬 or y (high), 方 or f (left or right)")
    return tuple("".join(_MARK[c] for c in h) for h in hits)


def miss_place(pair: Pair, round_: int, k: int) -> str | None:
    """Where the k-th arrow (0-based, shooting order) of ``pair`` in ``round_`` went, 留 扬 or 方,
    if the ``hits`` string marks it; None for a hit, an unmarked miss or an arrow not given."""
    if not 1 <= round_ <= len(pair.hits) or not 0 <= k < len(pair.hits[round_ - 1]):
        return None
    mark = pair.hits[round_ - 1][k]
    return mark if mark in ZHENG_CALLS else None


def roster(top: Fields) -> tuple[Pair, ...]:
    """The pairs of the sheet's ``[[pair]]`` tables, in order; ids unique."""
    pairs: list[Pair] = []
    seen: dict[str, int] = {}
    for i, pf in enumerate(top.tables("pair", [], limit=MAX_PAIRS)):
        pf.unknown(PAIR_KEYS)
        pid = pf.get("id", str)
        if pid in seen:
            raise pf.error("id", f"duplicate pair id {pid!r} (first at pair[{seen[pid]}])")
        seen[pid] = i
        hits = _hits(pf)
        upper, lower = _archer(pf, "upper"), _archer(pf, "lower")
        if upper.host:
            raise pf.error("upper", "the host shoots as 下射 (注 「公下射也」 [000]); put him in `lower`")
        pairs.append(Pair(pid, pf.get("group", str), upper, lower, hits, ranks=pf.strings("ranks"),
                          line=pf.line))
    return tuple(pairs)
