"""``yuexuan variants``: the commentators' disagreements that a cue sheet can set."""

from __future__ import annotations

from yuexuan.commands.common import data_source
from yuexuan.rite import variants


def add_arguments(p) -> None:
    pass


def run(args) -> int:
    for key, v in variants.load(source=data_source(args)).items():
        print(f"{key}  — {v['question']}")
        for name, opt in v["options"].items():
            mark = "*" if name == v["default"] else " "
            print(f"  {mark} {name}: {opt['source']}")
        print()
    print("* = default. Set them in the cue sheet's [variants] table, e.g.  luming_sanzhong = \"敖继公\"")
    return 0
