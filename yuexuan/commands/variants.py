"""``yuexuan variants``: the commentators' disagreements that a cue sheet can set."""

from __future__ import annotations

import argparse
import re
from typing import Any

from yuexuan.commands.common import data_source
from yuexuan.data import DataSource
from yuexuan.rite import ranks, variants

O_NUMBER = re.compile(r"\bO(\d+)\b")


def add_arguments(p: argparse.ArgumentParser) -> None:
    pass


def _data(opt: dict[str, Any]) -> str:
    """An option's effect data (all but its source) on one line, e.g. ``cue = {melody = 磬}``."""
    def show(v: Any) -> str:
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k} = {show(x)}" for k, x in v.items()) + "}"
        if isinstance(v, list):
            return " ".join(map(show, v)) or "none"
        return str(v).lower() if isinstance(v, bool) else str(v)
    return "; ".join(f"{k} = {show(v)}" for k, v in opt.items() if k != "source" and v != {})


def listing(defs: dict[str, Any]) -> list[str]:
    """The lines of ``yuexuan variants`` for the variant tables ``defs`` (ceremony/variants.toml)."""
    lines = []
    for key, v in defs.items():
        lines.append(f"{key}  — {v['question']}")
        if v.get("effect"):
            lines.append(f"    effect: {v['effect']}"
                         + (f" (cues {', '.join(v['cues'])})" if v.get("cues") else ""))
        for name, opt in v["options"].items():
            mark = "*" if name == v["default"] else " "
            lines.append(f"  {mark} {name}: {opt['source']}")
            if _data(opt):
                lines.append(f"        → {_data(opt)}")
        lines.append("")
    numbers = sorted({int(n) for v in defs.values() for n in O_NUMBER.findall(v["question"].split(":")[0])})
    lines.append(f"{len(numbers)} open questions (docs/sources.md) are settings: "
                 + " ".join(f"O{n}" for n in numbers))
    lines.append("* = default. Set them in the cue sheet's [variants] table, "
                 "e.g.  luming_sanzhong = \"敖继公\"")
    return lines


def rank_listing(source: DataSource) -> list[str]:
    """The lines naming each rite file's ranks with their aliases (``[ceremony] rank``)."""
    lines = ["Ranks: the cue sheet's [ceremony] rank, by name or alias, of its rite (its `rite`, "
             "a file of ceremony/):"]
    for name in ranks.rite_names(source):
        rite = ranks.load(name, source)
        lines.append(f"  rite = \"{name}\" ({rite.name}): {rite.listing()}")
    return lines


def run(args: argparse.Namespace) -> int:
    source = data_source(args)
    print("\n".join([*listing(variants.load(source=source)), "", *rank_listing(source)]))
    return 0
