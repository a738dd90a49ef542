"""The words every archery rite shares, each defined once: the archers' roles, the result of an
arrow and the calls on a host's misses.

What differs between rites and ranks — the ceremony's ranks, the archers' ranks, the 侯, the host
— is data (ceremony/<rite>.toml, read by :mod:`yuexuan.rite.ranks`; the compiled rite is the
timeline's ``rite``). The shot log's ``role`` and ``result`` codes are indices into these tuples
(docs/check.md).
"""

from __future__ import annotations

#: who looses in a pair: 上射, 下射.
ROLES = ("上射", "下射")
#: the 大射正's call where the host's arrow missed: 「下曰留，上曰扬，左右曰方」 [001];
#: 注 「留不至也，扬遇去也，方出旁也」 [000] (遇 read 过): low or short, high or over, to the side.
ZHENG_CALLS = ("留", "扬", "方")
#: the misses: touched no 侯 (不中, or one the 大射正 placed).
MISS_RESULTS = ("不中", *ZHENG_CALLS)
#: an arrow's result; 贯 … 梱复 and 不中 are the original five (indices kept), 着侯 stuck in the
#: 侯 outside the 鹄 (O21), 失 a miss whose arrow was not found at 取矢 (「若矢不备」 [001]).
RESULTS = ("贯", "离维纲", "扬触", "梱复", *MISS_RESULTS, "着侯", "失")
#: every miss, the lost arrow too
MISSES = (*MISS_RESULTS, "失")

#: the mixes a render can make (docs/render.md, "Two mixes"): what a person at the seat would hear,
#: or a produced mix a listener of an audio guide can follow
MIXES = ("seat", "guide")

__all__ = ["ROLES", "ZHENG_CALLS", "MISS_RESULTS", "RESULTS", "MISSES", "MIXES"]
