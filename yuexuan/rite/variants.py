"""The commentators' variants as settings (ceremony/variants.toml).

Besides the effect tables each compiler part reads by key (:func:`effect`), an option may carry
generic effects, applied here as pure functions over the parsed data (header of ceremony/variants.toml):
``cue`` (fields set on the cues a variant names in ``cues``), ``drop_cues``, ``facts`` (instrument
facts replaced), ``roster`` (a group's rank) and ``ranks`` (fields of a rank of the rite file,
applied by :func:`yuexuan.rite.ranks.rank_rite`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from yuexuan.data import DataSource
from yuexuan.rite import tomlfile
from yuexuan.rite.cuesheet_records import CueSpec, Pair
from yuexuan.rite.instruments import Instrument
from yuexuan.rite.ranks import RANK_KEYS
from yuexuan.rite.tuning import parse_pitch

CUE_FIELDS = ("piece", "melody", "jie", "intro", "default_seconds", "ends_when", "ends_when_en", "pairs")
FACT_FIELDS = ("position_m", "pitch_set", "count", "suspension")
VARIANT_KEYS = {"question", "default", "effect", "cues", "options"}
#: what any option may carry: its source and the generic effects (the module's docstring)
GENERIC_KEYS = {"source", "cue", "drop_cues", "facts", "hou_shift_m", "roster"}
ROSTER_KEYS = {"group", "rank"}


def load(path: str | Path | None = None, source: DataSource = DataSource()) -> dict[str, Any]:
    """{variant key: {question, default, options: {name: {source, …effect data}}}} of ``path``
    (default ceremony/variants.toml of ``source``)."""
    path = Path(path) if path else source.path("ceremony", "variants.toml")
    data, text = tomlfile.load(path)
    _check(tomlfile.Fields(data, str(path), text, ""))
    return data


def _check(top: tomlfile.Fields) -> None:
    """Each variant has a question, options with a source, a default among them, and generic effect
    tables (``cue``, ``facts``, ``roster``) with known fields; a mistake is one UserError naming file
    and key. An option's own effects are read by the part of the compiler its variant concerns, each
    option of a variant setting the same ones: a key that no other option of its variant has is
    refused as a typo (a variant of one option has none to compare)."""
    for key in top.data:
        v = top.table(key)
        v.unknown(VARIANT_KEYS)
        v.get("question", str)
        options = v.table("options")
        v.get("default", str, choices=tuple(options.data))
        for name in options.data:
            opt = options.table(name)
            opt.get("source", str)
            if opt.has("cue"):
                opt.table("cue").unknown(set(CUE_FIELDS))
            if opt.has("roster"):
                opt.table("roster").unknown(ROSTER_KEYS)
            facts = opt.table("facts", {})
            for inst in facts.data:
                facts.table(inst).unknown(set(FACT_FIELDS))
            others = {k for other, o in options.data.items() if other != name and isinstance(o, dict)
                      for k in o}
            if others:
                opt.unknown(GENERIC_KEYS | others)
            ranks = opt.table("ranks", {})
            for rank in ranks.data:
                ranks.table(rank).unknown(RANK_KEYS - {"rank", "alias"})


def effect(variants: dict[str, Any], chosen: dict[str, str], key: str) -> dict[str, Any]:
    """The effect table of the option chosen for ``key`` (the default when not chosen)."""
    v = variants[key]
    return v["options"][chosen.get(key, v["default"])]


def _chosen_effects(variants: dict[str, Any], chosen: dict[str, str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(key, effect table) of every variant, in file order."""
    return ((key, effect(variants, chosen, key)) for key in variants)


def cue_fields(variants: dict[str, Any], chosen: dict[str, str], cue_id: str) -> dict[str, Any]:
    """The cue fields (:data:`CUE_FIELDS`) the chosen options set on cue ``cue_id``."""
    out = {}
    for key, eff in _chosen_effects(variants, chosen):
        if cue_id in variants[key].get("cues", ()):
            out.update({k: tuple(v) if isinstance(v, list) else v for k, v in eff.get("cue", {}).items()
                        if k in CUE_FIELDS})
    return out


def apply_to_cue(variants: dict[str, Any], chosen: dict[str, str], spec: CueSpec) -> CueSpec:
    """``spec`` (a CueSpec) with the fields the chosen options set on it."""
    fields = cue_fields(variants, chosen, spec.id)
    return dataclasses.replace(spec, **fields) if fields else spec


def dropped_cues(variants: dict[str, Any], chosen: dict[str, str]) -> frozenset[str]:
    """Cue ids the chosen options leave out of the timeline (``drop_cues``)."""
    return frozenset(cid for _, eff in _chosen_effects(variants, chosen) for cid in eff.get("drop_cues", ()))


def apply_to_instruments(variants: dict[str, Any], chosen: dict[str, str],
                         insts: dict[str, Instrument]) -> tuple[dict[str, Instrument], frozenset[str]]:
    """(instruments with the chosen ``facts`` applied, names of those whose pitch set a variant
    narrowed — they rest on notes outside it). ``insts`` is not changed."""
    out, narrowed = dict(insts), set()
    for _, eff in _chosen_effects(variants, chosen):
        for name, facts in eff.get("facts", {}).items():
            if name not in out:
                continue          # an instrument a --data folder leaves out
            new = {k: v for k, v in facts.items() if k in FACT_FIELDS}
            if "position_m" in new:
                new["position_m"] = tuple(float(a) for a in new["position_m"])
            if "pitch_set" in new:
                new["pitch_set"] = tuple(parse_pitch(p) for p in new["pitch_set"])
                narrowed.add(name)
            out[name] = dataclasses.replace(out[name], **new)
    return out, frozenset(narrowed)


def apply_to_pairs(variants: dict[str, Any], chosen: dict[str, str],
                   pairs: tuple[Pair, ...], ranks: tuple[str, ...] | None = None) -> tuple[Pair, ...]:
    """``pairs`` with the ranks the chosen ``roster`` options give their groups (only a rank of
    ``ranks``, the rank's archers, when given: a rite without it keeps the roster's)."""
    for _, eff in _chosen_effects(variants, chosen):
        ro = eff.get("roster")
        if not ro or (ranks is not None and ro["rank"] not in ranks):
            continue
        pairs = tuple(dataclasses.replace(p, upper=dataclasses.replace(p.upper, rank=ro["rank"]),
                                          lower=dataclasses.replace(p.lower, rank=ro["rank"]))
                      if p.group == ro["group"] else p for p in pairs)
    return pairs
