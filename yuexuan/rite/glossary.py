"""The rite's words for everyone (``ceremony/glossary.toml``): characters, pinyin, an English gloss
and where a user meets each; docs/glossary.md and the guide's glossary page are written from it
(:mod:`yuexuan.publish.glossary`)."""

from __future__ import annotations

from dataclasses import dataclass

from yuexuan.data import DataSource
from yuexuan.rite import tomlfile
from yuexuan.rite.tuning import LV

_TERM_KEYS = {"section", "zh", "pinyin", "en", "where", "short"}


@dataclass(frozen=True)
class Term:
    section: str               # a key of Glossary.sections
    zh: str                    # the characters (several words joined by " · ")
    pinyin: str
    en: str                    # one line of English
    where: str                 # where a user meets it (Markdown code spans allowed)
    short: str = ""            # a short English name, for the guide (e.g. 诸侯: a lord)


@dataclass(frozen=True)
class Glossary:
    sections: dict[str, str]   # key → English title, in reading order
    terms: tuple[Term, ...]
    lv_pinyin: tuple[str, ...]  # the pinyin of the twelve 律, 黄钟 … 应钟


def load(source: DataSource = DataSource()) -> Glossary:
    """Read ``ceremony/glossary.toml`` of ``source``; a missing or empty field is a UserError."""
    path = source.path("ceremony", "glossary.toml")
    data, text = tomlfile.load(path)
    top = tomlfile.Fields(data, str(path), text, "")
    top.unknown({"sections", "term", "lv_pinyin"})
    sec = top.table("sections")
    sections = {k: sec.get(k, str) for k in sec.data}
    lv_pinyin = top.strings("lv_pinyin")
    if len(lv_pinyin) != len(LV):
        raise top.error("lv_pinyin", f"expected the pinyin of the {len(LV)} 律, 黄钟 … 应钟")
    terms = []
    for f in top.tables("term"):
        f.unknown(_TERM_KEYS)
        values = {k: f.get(k, str).strip() for k in ("zh", "pinyin", "en", "where")}
        for k, v in values.items():
            if not v:
                raise f.error(k, "expected a non-empty string")
        terms.append(Term(f.get("section", str, choices=list(sections)), **values,
                          short=f.get("short", str, "").strip()))
    return Glossary(sections, tuple(terms), lv_pinyin)


def short_names(glossary: Glossary) -> dict[str, str]:
    """{characters: short English name} of the terms that have one."""
    return {t.zh: t.short for t in glossary.terms if t.short}
