"""Names a user types: the rite's own (宾, 笙钟), or the ASCII ``alias`` the data gives beside it
(``bin``, ``shengzhong``: pinyin without tone marks, ``-`` between the parts of a name such as
建鼓·东, ``jiangu-dong``).

An alias is matched without regard to case, tone marks, spaces, ``-``, ``_`` and ``·``, so
``zhongting``, ``Zhong-ting`` and ``zhōngtíng`` are one name.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping

from yuexuan.errors import UserError

#: what an ``alias`` field may hold: lower-case ASCII letters and digits, parts joined by ``-``
ALIAS = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")


def folded(text: str) -> str:
    """``text`` as a typed name is compared: lower case, tone marks dropped, only [a-z0-9] kept."""
    decomposed = unicodedata.normalize("NFD", text.lower()).replace("u\u0308", "v")    # ü, ǜ … → v
    plain = "".join(ch for ch in decomposed if unicodedata.category(ch) != "Mn")
    return re.sub(r"[^a-z0-9]", "", plain)


def listing(aliases: Mapping[str, str]) -> str:
    """``宾 (bin), 公 (gong), 中庭 (zhongting)``: the names of ``aliases`` (name → alias, "" for
    none) with their aliases, for help texts and error messages."""
    return ", ".join(f"{n} ({a})" if a else n for n, a in aliases.items())


def duplicate(aliases: Mapping[str, str]) -> tuple[str, str] | None:
    """Two names whose aliases fold alike (or one's alias folds like another's name), or None."""
    seen: dict[str, str] = {}
    for name, alias in aliases.items():
        for key in {folded(alias), folded(name)} - {""}:
            if key in seen and seen[key] != name:
                return seen[key], name
            seen[key] = name
    return None


def resolve(typed: str, aliases: Mapping[str, str], what: str, key: str | None = None) -> str:
    """The name ``typed`` stands for: itself if it is a name of ``aliases`` (name → alias), else
    the one name whose alias folds like it. Anything else is a UserError listing the names."""
    if typed in aliases:
        return typed
    key_typed = folded(typed)
    hits = [n for n, a in aliases.items() if key_typed and key_typed in (folded(a), folded(n))]
    if len(hits) == 1:
        return hits[0]
    raise UserError(f"unknown {what} {typed!r}; expected one of {listing(aliases)}", key=key)
