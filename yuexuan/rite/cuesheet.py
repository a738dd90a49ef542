"""Cue sheets (cues/*.toml): parsed and validated into plain dataclasses.

Every problem raises :class:`~yuexuan.errors.UserError` naming the file, the line where it can be
found, the key, and what was expected. See docs/cuesheet.md for the format. The parts, one job each:
:mod:`~yuexuan.rite.cuesheet_setting` (``[ceremony]``, ``[variants]``, ``[shejie]``),
:mod:`~yuexuan.rite.cuesheet_roster` (``[[pair]]``), :mod:`~yuexuan.rite.cuesheet_cues`
(``[[cue]]``); the records are in :mod:`~yuexuan.rite.cuesheet_records`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from yuexuan.rite import ranks as ranks_mod
from yuexuan.rite import tomlfile
from yuexuan.rite.cuesheet_cues import Known, cues
from yuexuan.rite.cuesheet_hits import hits_midi
from yuexuan.rite.cuesheet_records import Archer, Call, Ceremony, CueSheet, CueSpec, Pair, Shejie  # noqa: F401  (the records, re-exported for callers)
from yuexuan.rite.cuesheet_roster import roster
from yuexuan.rite.cuesheet_setting import ceremony, chosen_variants, rite_name, shejie
from yuexuan.rite.instruments import Instrument
from yuexuan.rite.pieces import Piece
from yuexuan.rite.tomlfile import Fields

TOP_KEYS = {"ceremony", "variants", "shejie", "pair", "cue", "hits_midi"}


def parse(path: str | Path, pieces: dict[str, Piece], instruments: dict[str, Instrument],
          variant_defs: dict[str, Any],
          rites: Callable[[str], ranks_mod.Rite] = ranks_mod.load) -> CueSheet:
    """Read and validate a cue sheet against the known pieces, instruments and variants (the
    tables of :func:`yuexuan.rite.variants.load`); ``rites`` loads the rite file its
    ``[ceremony] rite`` names (:func:`yuexuan.rite.ranks.load` of the packaged data by default)."""
    path = str(path)
    data, text = tomlfile.load(path)
    top = Fields(data, path, text, "")
    top.unknown(TOP_KEYS)
    cer_fields = top.table("ceremony")
    try:
        rite = rites(rite_name(cer_fields))
    except ranks_mod.NoRite as exc:
        raise cer_fields.error("rite", exc.message) from None
    cer = ceremony(cer_fields, rite)
    chosen = chosen_variants(top.table("variants", {}), variant_defs)
    grid = shejie(top.table("shejie", {}))
    sensor = hits_midi(top.table("hits_midi", {}))     # play --hits-midi's note → 侯 map
    pairs = roster(top)
    groups = frozenset(p.group for p in pairs) | frozenset(p.id for p in pairs)
    specs = cues(top, Known(pieces, instruments, variant_defs, groups))
    # vars(cer): the [ceremony] fields, which CueSheet inherits from Ceremony
    return CueSheet(**vars(cer), file=path, variants=chosen, shejie=grid, pairs=pairs, cues=specs,
                    text=text, hits_midi=sensor)
