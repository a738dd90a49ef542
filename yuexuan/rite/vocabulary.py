"""The rite's words, each defined once: the ceremony's rank, the archers' ranks and roles, the
three 侯, the result of an arrow and the 大射正's calls on the 公's misses.

They live in the rite (the lowest stage that reads them: the cue sheet's ``[ceremony] rank``,
``[[pair]]`` ranks, ``hits`` marks and ``[hits]`` 侯) so that the shot rules
(:mod:`yuexuan.scoring`), the compiler, ``check`` and the live show import the same tuples.
The shot log's category codes are indices into these tuples (docs/check.md).
"""

from __future__ import annotations

#: whose 大射 the cue sheet sets (``[ceremony] rank``): it fixes the 射节 and the suspension.
CEREMONY_RANKS = ("天子", "诸侯", "卿大夫", "士")
#: an archer's rank (the roster's ``rank``, the shot log's ``rank``), most senior first.
ARCHER_RANKS = ("公", "宾", "卿", "大夫", "士")
#: who looses in a pair: 上射, 下射.
ROLES = ("上射", "下射")
#: the three 侯: 「公射大侯，大夫射参，士射干」.
TARGETS = ("大侯", "参", "干")
#: the 大射正's call where the 公's arrow missed: 「下曰留，上曰扬，左右曰方」 [001];
#: 注 「留不至也，扬遇去也，方出旁也」 [000] (遇 read 过): low or short, high or over, to the side.
ZHENG_CALLS = ("留", "扬", "方")
#: the misses: touched no 侯 (不中, or one the 大射正 placed).
MISS_RESULTS = ("不中", *ZHENG_CALLS)
#: an arrow's result; 贯 … 梱复 and 不中 are the original five (indices kept), 着侯 stuck in the
#: 侯 outside the 鹄 (O21).
RESULTS = ("贯", "离维纲", "扬触", "梱复", *MISS_RESULTS, "着侯")

__all__ = ["CEREMONY_RANKS", "ARCHER_RANKS", "ROLES", "TARGETS", "ZHENG_CALLS", "MISS_RESULTS",
           "RESULTS"]
