"""A ``speech`` cue's utterances: the officers' spoken formulas (docs/cuesheet.md, "Speech").

Each utterance is said by a voice instrument (the speaker), one syllable (one character) a slot of
``syllable_seconds``, a pause of one slot at each punctuation mark, from ``at`` seconds into the
cue (without ``at``: one slot after the utterance before it ends); or, with ``tally = ROUND``,
it is the 释获者's count of that round, whose words the compiler takes from the tally
(compiler/formulas.py) within a window of ``seconds``.
"""

from __future__ import annotations

import re

from yuexuan.rite.cuesheet_records import Utterance
from yuexuan.rite.cuesheet_setting import seconds
from yuexuan.rite.instruments import Instrument
from yuexuan.rite.tomlfile import Fields

UTTERANCE_KEYS = {"who", "words", "tally", "at", "seconds", "syllable_seconds", "velocity"}
PAUSES = "，。、；：！？,.;:!? "     # a pause of one slot (none is sounded)
#: one syllable's slot in a formula called across the courtyard, s: INFERENCE (a slow, loud
#: delivery; conversational Mandarin runs about 4–5 syllables a second)
SYLLABLE_S = 0.4
COUNTED_ROUNDS = (2, 3)            # round 1: 「获而未释获」, nothing is counted
#: ``{射节}`` in ``words``: the piece the rank shoots to; ``{NAME}``: the rank's formula NAME
#: (ceremony/<rite>.toml ``formulas``), filled in by the compiler (compiler/formulas.py)
PLACEHOLDER = re.compile(r"\{([^{}]+)\}")
SHEJIE_PIECE = "射节"


def is_syllable(ch: str) -> bool:
    """A character that is one spoken syllable (a CJK ideograph)."""
    return "\u3400" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff" or "\U00020000" <= ch <= "\U0002ffff"


def slots(words: str) -> list[str | None]:
    """The slots of ``words``: each syllable, None for a pause (consecutive pauses are one; none at
    the ends). ValueError naming the first character that is neither."""
    out: list[str | None] = []
    for ch in words:
        if is_syllable(ch):
            out.append(ch)
        elif ch in PAUSES:
            if out and out[-1] is not None:
                out.append(None)
        else:
            raise ValueError(f"{ch!r} is neither a syllable (a Chinese character) "
                             f"nor a pause ({PAUSES.strip()})")
    while out and out[-1] is None:
        out.pop()
    return out


def speech(cf: Fields, instruments: dict[str, Instrument]) -> tuple[Utterance, ...]:
    """The cue's ``speech``: who says what, when."""
    out = []
    for uf in cf.tables("speech", []):
        uf.unknown(UTTERANCE_KEYS)
        who = uf.get("who", str)
        if who not in instruments:
            raise uf.error("who", f"unknown instrument {who!r}")
        if instruments[who].family != "voice":
            raise uf.error("who", f"{who} is not a voice (family {instruments[who].family!r}); "
                                  "an utterance is spoken")
        if uf.has("words") == uf.has("tally"):
            raise uf.error("words", "give either `words` (the formula) or `tally = ROUND` (the count "
                                    "the 释获者 announces), not both or neither")
        tally = uf.get("tally", int, None)
        words = uf.get("words", str, "")
        if tally is not None and tally not in COUNTED_ROUNDS:
            raise uf.error("tally", f"round {tally} is not counted; expected one of {COUNTED_ROUNDS} "
                                    "(round 1: 「获而未释获」)")
        try:
            said = slots(PLACEHOLDER.sub("", words))
        except ValueError as exc:
            raise uf.error("words", str(exc)) from None
        if tally is None and not said and not PLACEHOLDER.search(words):
            raise uf.error("words", "expected at least one syllable")
        window = seconds(uf, "seconds", ... if tally is not None else None, lo=0.05)
        step = seconds(uf, "syllable_seconds", SYLLABLE_S, lo=0.05)
        out.append(Utterance(who, words, seconds(uf, "at", None), step,
                             uf.get("velocity", int, 90, lo=1, hi=127),
                             tally, window))
    return tuple(out)
