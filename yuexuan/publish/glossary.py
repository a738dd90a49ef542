"""The glossary written out: docs/glossary.md (``python -m yuexuan.publish.glossary``) and the
guide's glossary.html, both from ``ceremony/glossary.toml`` (:mod:`yuexuan.rite.glossary`), with
the table of the twelve 律 computed at a 黄钟 (their 三分损益 ratio, hertz and nearest Western note).
"""

from __future__ import annotations

import html
import re
import sys

from yuexuan.rite import glossary as glossary_data
from yuexuan.rite.glossary import Glossary
from yuexuan.rite.tuning import table, western_name

DEFAULT_HUANGZHONG_HZ = 345.0   # as cues/dashe.toml
_CODE = re.compile(r"`([^`]+)`")


def lv_rows(glossary: Glossary, huangzhong_hz: float) -> list[tuple[str, ...]]:
    """(律, pinyin, ratio, Hz, nearest Western note with its cents) for the twelve 律."""
    rows: list[tuple[str, ...]] = []
    for row, pinyin in zip(table(huangzhong_hz), glossary.lv_pinyin):
        cents = round(row["cents"], 1)
        sign = "+" if cents > 0 else "−" if cents < 0 else "±"
        rows.append((f"{row['lv']} {row['full']}", pinyin, row["ratio"], f"{row['hz']:.1f}",
                     f"{western_name(row['midi'])} {sign}{abs(cents):.1f} cents"))
    return rows


def markdown(glossary: Glossary, huangzhong_hz: float = DEFAULT_HUANGZHONG_HZ) -> str:
    """docs/glossary.md."""
    out = ["<!-- Written by `python -m yuexuan.publish.glossary > docs/glossary.md` from",
           "     ceremony/glossary.toml: edit that file, then run the command again. -->",
           "# Glossary: the rite's words",
           "",
           "Each word of the rite that yuexuan shows or takes, in characters, pinyin and English, with where "
           "you meet it. A name you type (an instrument, a seat) may also be typed in pinyin: "
           "`yuexuan note shengzhong F4`, `yuexuan render … --listener zhongting` (the aliases are "
           "listed by `--help`). The sources behind the words: [sources.md](sources.md).",
           ""]
    out += [f"- [{title}](#{_anchor(title)})" for title in glossary.sections.values()]
    out += [f"- [The twelve 律](#{_anchor('The twelve 律')})", ""]
    for key, title in glossary.sections.items():
        out += [f"## {title}", "", "| characters | pinyin | English | where you meet it |",
                "|---|---|---|---|"]
        out += [f"| {t.zh} | {t.pinyin} | {t.en} | {t.where} |" for t in glossary.terms if t.section == key]
        out.append("")
    out += ["## The twelve 律", "",
            f"By 三分损益 from 黄钟 = {huangzhong_hz:g} Hz (the default `huangzhong_hz`), each 律 with its "
            "exact ratio to 黄钟 and the nearest note of Western equal temperament (A4 = 440 Hz). "
            "An instrument sounds them in its own octave (its `octave`); 清 marks an octave up, 浊 one down. "
            "`yuexuan note` takes either name: `note 笙钟 F4` plays 黄.", "",
            "| 律 | pinyin | ratio | Hz | Western |", "|---|---|---|---|---|"]
    out += ["| " + " | ".join(r) + " |" for r in lv_rows(glossary, huangzhong_hz)]
    return "\n".join(out) + "\n"


def page_html(glossary: Glossary, huangzhong_hz: float) -> str:
    """The guide's glossary.html (a page of its own, styled by the guide's style.css)."""
    e = html.escape
    parts = ['<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             '<title>Glossary · 词汇</title>\n<link rel="stylesheet" href="style.css">\n</head>\n<body>',
             '<main class="glossary">',
             '<p><a href="index.html">← <span lang="zh">导览</span> <span lang="en">the guide</span></a></p>',
             '<h1><span lang="zh">词汇</span> <span lang="en">Glossary: the rite\'s words</span></h1>']
    for key, title in glossary.sections.items():
        parts.append(f"<h2>{e(title)}</h2>\n<dl>")
        for t in (t for t in glossary.terms if t.section == key):
            where = _CODE.sub(r"<code>\1</code>", e(t.where))
            parts.append(f'<dt><span lang="zh">{e(t.zh)}</span> <i>{e(t.pinyin)}</i></dt>'
                         f"<dd>{e(t.en)}<br><small>{where}</small></dd>")
        parts.append("</dl>")
    parts.append(f"<h2>The twelve 律 (黄钟 = {huangzhong_hz:g} Hz)</h2>\n<dl>")
    for name, pinyin, ratio, hz, western in lv_rows(glossary, huangzhong_hz):
        parts.append(f'<dt><span lang="zh">{e(name)}</span> <i>{e(pinyin)}</i></dt>'
                     f"<dd>{e(hz)} Hz, ratio {e(ratio)}: {e(western)}</dd>")
    parts.append("</dl>\n</main>\n</body>\n</html>\n")
    return "\n".join(parts)


def _anchor(title: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, spaces to -, punctuation dropped."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


if __name__ == "__main__":           # docs/glossary.md
    sys.stdout.write(markdown(glossary_data.load()))
