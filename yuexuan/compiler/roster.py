"""The rite at the sheet's rank: its roster, its 侯 with their callers, and the timeline's ``rite``.

From the rite file's rank (:class:`yuexuan.rite.ranks.RankRite`, the variants applied) and the cue
sheet's ``[[pair]]`` tables: the pairs of that rank (a pair's ``ranks``; the host's ``host = true``
takes the rank's host; the first 耦 cut to the rank's count), each 侯 placed on its 侯道 with its
乏 and one 获者 and one 负侯者 body made from the caller files that have ``at_hou``, and the
record every later stage reads (:class:`yuexuan.timeline_rite.Rite`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from yuexuan.errors import UserError
from yuexuan.rite import courtyard
from yuexuan.rite import variants as variants_mod
from yuexuan.rite.cuesheet_records import Archer, CueSheet, Pair
from yuexuan.rite.instruments import Instrument, in_layout_order
from yuexuan.rite.ranks import RankRite, Rite
from yuexuan.timeline_rite import Archer as RiteArcher
from yuexuan.timeline_rite import Host, Hou
from yuexuan.timeline_rite import Pair as RitePair
from yuexuan.timeline_rite import Rite as RiteRecord

#: each 侯's (position, its 乏's position), metres
Places = list[tuple[tuple[float, ...], tuple[float, ...]]]


def rank_pairs(sheet: CueSheet, rite: Rite, rr: RankRite,
               vdefs: dict[str, Any]) -> tuple[tuple[Pair, ...], list[str]]:
    """(the pairs that shoot at the sheet's rank, warnings): the sheet's pairs whose ``ranks``
    include it (or give none), the host resolved, the variants' ``roster`` applied, each archer's
    rank checked against the rank's, the first 耦 (``ou_group``) cut to ``ou`` pairs."""
    out, warnings = [], []
    for p in sheet.pairs:
        for r in p.ranks:
            if rite.resolve(r) is None:
                raise UserError(f"pair {p.id!r}: unknown rank {r!r} of the {rite.name}; expected one of: "
                                f"{rite.listing()}", file=sheet.file, line=p.line, key="ranks")
        if p.ranks and sheet.rank not in {rite.resolve(r) for r in p.ranks}:
            continue
        out.append(dataclasses.replace(p, upper=_archer(p, p.upper, rr, sheet),
                                       lower=_archer(p, p.lower, rr, sheet)))
    pairs = variants_mod.apply_to_pairs(vdefs, sheet.variants, tuple(out), rr.ranks)
    for p in pairs:
        for role, a in (("upper", p.upper), ("lower", p.lower)):
            if a.rank not in rr.ranks:
                raise UserError(f"pair {p.id!r}: rank {a.rank!r} does not shoot at a {rr.rank}'s "
                                f"{rite.name}; expected one of: {', '.join(rr.ranks)} (or give the pair "
                                "`ranks = [...]`, the ranks whose roster it is in)",
                                file=sheet.file, line=p.line, key=f"pair.{role}.rank")
    first = [p for p in pairs if p.group == rr.ou_group]
    if len(first) < rr.ou:
        warnings.append(f"the roster's {rr.ou_group} has {len(first)} pairs; a {rr.rank} shoots with "
                        f"{rr.ou} ({rr.sources.get('ou_source', '')})")
    dropped = {p.id for p in first[rr.ou:]}
    looses_first = rr.privileges.looses_first
    kept = tuple(dataclasses.replace(p, first="下射" if p.lower.host and looses_first else "上射")
                 for p in pairs if p.id not in dropped)
    return kept, warnings


def _archer(p: Pair, a: Archer, rr: RankRite, sheet: CueSheet) -> Archer:
    if not a.host:
        return a
    if rr.host is None:
        raise UserError(f"pair {p.id!r}: a {rr.rank}'s rite has no host to shoot", file=sheet.file,
                        line=p.line, key="pair.lower.host")
    return Archer(a.name or rr.host, rr.host, True)


def hou_places(rite: Rite, rr: RankRite, yard: courtyard.Courtyard) -> Places:
    """(侯 position, 乏 position), metres, of each 侯 of ``rr``: on the 堂's axis at its 侯道 from
    the courtyard's origin of the 侯道 (variant O24), its 乏 ``fa_bu`` (west, north) 步 from it."""
    origin = yard.houdao.origin_y_m if yard.houdao is not None else 0.0
    out: Places = []
    for h in rr.hou:
        west, north = h.fa_bu or rite.fa_bu
        hy = origin - h.distance_bu * yard.bu_m
        fa = (round(-west * yard.bu_m, 3), round(hy + north * yard.bu_m, 3), 0.0)
        out.append(((0.0, round(hy, 3), 0.0), fa))
    return out


def with_callers(insts: dict[str, Instrument], rite: Rite, rr: RankRite,
                 places: Places) -> dict[str, Instrument]:
    """``insts`` with the callers' files (``at_hou``) replaced by one body a 侯: ``<file>·<侯>``
    at its 乏 (or south of it, due west of the 侯), its height the file's; a 获者's count the
    侯's ``huo``."""
    out = {n: i for n, i in insts.items() if i.at_hou is None}
    for h, (hou_m, fa_m) in zip(rr.hou, places):
        for template in (rite.huozhe, rite.fuhou):
            t = insts.get(template)
            if t is None or t.at_hou is None:
                raise UserError(f"the {rite.name}'s caller {template!r} has no instrument file with "
                                "`at_hou` (instruments/)", file=rite.file, key="huozhe")
            y = fa_m[1] if t.at_hou == "乏" else hou_m[1]
            body = dataclasses.replace(t, name=f"{template}·{h.name}",
                                       english=f"{t.english}: the {h.name}",
                                       alias=f"{t.alias}-{h.alias}" if t.alias and h.alias else "",
                                       position_m=(fa_m[0], y, t.position_m[2]), at_hou=None,
                                       count=h.huo if template == rite.huozhe else t.count)
            out[body.name] = body
    return in_layout_order(out)


def record(rite: Rite, rr: RankRite, pairs: tuple[Pair, ...], places: Places, bu_m: float,
           vdefs: dict[str, Any], chosen: dict[str, str]) -> RiteRecord:
    """The timeline's ``rite``: the rank's ranks, 侯 and host (O20 and O21 applied), the roster."""
    hou = tuple(Hou(h.name, h.distance_bu, round(h.distance_bu * bu_m, 6), pos, fa, h.shot_by,
                    f"{rite.huozhe}·{h.name}", f"{rite.fuhou}·{h.name}", h.huo, h.rong, h.source)
                for h, (pos, fa) in zip(rr.hou, places))
    host = None
    if rr.host is not None:
        pv = rr.privileges
        def setting(key: str, field: str) -> bool:      # O20, O21 (a data folder without them: granted)
            return bool(variants_mod.effect(vdefs, chosen, key)[field]) if key in vdefs else True
        exempt, outside = setting("gong_exempt", "exempt"), setting("gong_outside_hu", "counted")
        host = Host(rr.host, pv.looses_first, pv.any_hou, pv.near_misses, pv.drum_exempt and exempt,
                    (pv.near_misses or pv.any_hou) and outside, pv.misses_called_by)
    roster = tuple(RitePair(p.id, p.group, RiteArcher(p.upper.name, p.upper.rank),
                            RiteArcher(p.lower.name, p.lower.rank), p.first) for p in pairs)
    return RiteRecord(rite.name, rr.rank, rr.ranks, hou, host, rr.ou_group, rr.ou, roster, rr.inference,
                      rr.source, rite.courtyard)
