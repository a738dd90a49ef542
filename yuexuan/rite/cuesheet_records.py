"""What a parsed cue sheet holds: plain frozen dataclasses (see docs/cuesheet.md for the format)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from yuexuan.rite.cuesheet_hits import HitsMidi
    from yuexuan.rite.tuning import Pitch

CUE_KINDS = ("music", "calls", "shoot", "shejie", "speech")
SHOOTING_KINDS = ("shoot", "shejie")       # the cues of the three rounds (docs/timeline.md)
#: a cue's ``when``: 矢不备, some arrow of its round was not recovered (「若矢不备」 [001]; the shot
#: log's result 失, compile --shots)
CONDITIONS = ("矢不备",)
MAX_SECONDS = 6 * 3600.0          # no single setting may exceed six hours
MAX_PAIRS = 200_000
MAX_CUES = 10_000
#: how a 投壶 drum score meets the 节 (``[shejie] score_mapping``; yuexuan/compiler/shejie_pattern.py)
SCORE_MAPPINGS = ("节一终", "矢一终")


@dataclass(frozen=True)
class Archer:
    name: str
    rank: str                 # one of the rank's archer ranks (ceremony/<rite>.toml ``ranks``)
    host: bool = False        # the rite's host (公, 王, 主人): his rank is the rite's ``host``


@dataclass(frozen=True)
class Pair:
    id: str
    group: str
    upper: Archer             # 上射
    lower: Archer             # 下射
    hits: tuple[str, ...] = ()          # per round: 8 marks in shooting order, x = hit
    # who looses first: the 上射, except where the host is the 下射 and the rite lets him
    # (注 「公下射也，而先发不留尊也」 [000]; ceremony/<rite>.toml ``privileges.looses_first``)
    first: str = "上射"
    ranks: tuple[str, ...] = ()         # the ceremony ranks whose roster it is in (() = every rank)
    line: int | None = None             # its [[pair]] table's line in the cue sheet

    def shooter(self, k: int) -> tuple[str, Archer]:
        """(role, archer) of the k-th arrow (0-based) of the pair's 8, by 拾发."""
        first = self.first
        role = first if k % 2 == 0 else ("上射" if first == "下射" else "下射")
        return role, (self.upper if role == "上射" else self.lower)

    def hit(self, round_: int, k: int) -> bool:
        if round_ - 1 >= len(self.hits):
            return False
        s = self.hits[round_ - 1]
        return k < len(s) and s[k] == "x"


@dataclass(frozen=True)
class Call:
    who: str
    sheng: str
    word: str
    at: float
    seconds: float
    velocity: int
    plain: bool = False


@dataclass(frozen=True)
class PieceNames:
    """What a 射节 cue is called when it plays one piece (``[cue.by_piece."驺虞"]``): its id and the
    caption fields that replace the cue's own (None: the cue's own is kept)."""
    id: str
    starts_when: str | None = None
    ends_when: str | None = None
    starts_when_en: str | None = None
    ends_when_en: str | None = None
    source: str | None = None
    gloss: str | None = None
    performers: str | None = None


# the caption fields of a cue that a [cue.by_piece."TITLE"] may replace, in PieceNames' order
CAPTION_KEYS = ("starts_when", "ends_when", "starts_when_en", "ends_when_en", "source", "gloss", "performers")


@dataclass(frozen=True)
class Utterance:
    """One spoken formula of an officer (a ``speech`` cue): ``words`` said one syllable a slot,
    or, with ``tally`` (a round), the 释获者's count of that round (compiler/formulas.py)."""
    who: str
    words: str
    at: float | None                    # s after the cue's start; None: a slot after the one before
    syllable_seconds: float             # one syllable's slot, s (a pause at punctuation: one slot)
    velocity: int
    tally: int | None = None            # the round whose count is announced, or None
    seconds: float | None = None        # the utterance's window, s (required with ``tally``)


@dataclass(frozen=True)
class CueSpec:
    id: str
    piece: str | None         # None: a 射节 cue whose piece the rank supplies
    action: str
    kind: str
    source: str
    line: int | None = None
    performers: str = ""
    starts_when: str = ""
    ends_when: str = ""
    starts_when_en: str = ""          # the same in English (the operator's screen: play --lang)
    ends_when_en: str = ""
    gloss: str = ""
    xian: tuple[str, ...] | None = None           # 县 sides, or None (all)
    xian_variant: tuple[str, str] | None = None   # (variant key, for whom)
    melody: tuple[str, ...] = ()
    jie: tuple[str, ...] = ()
    intro: tuple[str, ...] = ()
    open_ended: bool = False
    default_seconds: float | None = None
    zhong: int | None = None
    sanzhong: str | None = None         # variant key giving the pieces of the 三终
    accompaniment: str | None = None    # variant key giving accompanying instruments
    calls: tuple[Call, ...] = ()
    speech: tuple[Utterance, ...] = ()
    round: int | None = None
    pairs: tuple[str, ...] = ()                   # group names or pair ids
    arrow_seconds: float = 4.0
    pair_seconds: float = 8.0
    reconstruction: bool | None = None
    syllable_seconds: float | None = None
    note_seconds: float | None = None
    by_piece: tuple[tuple[str, PieceNames], ...] = ()   # a 射节 cue's id and caption per piece played
    # a cue sounded only on a condition of the shot log: "矢不备" (an arrow of its ``round`` not
    # recovered; compile --shots); None: always
    when: str | None = None
    # the rank whose rite the cue's words and source quote; at another rank the compiler marks
    # the cue's source INFERENCE; None: every rank's
    wording_of: str | None = None
    pieces: tuple[str, ...] = ()        # a music cue's pieces, one after another (the 乡射's 合乐)


@dataclass(frozen=True)
class Ceremony:
    """The ``[ceremony]`` table."""
    name: str
    rank: str                 # a rank of the rite file (ceremony/<rite>.toml), its alias resolved
    huangzhong_hz: float
    gong: Pitch               # the 宫 of the rite's mode (calls 以宫 … 以商)
    gap_seconds: float
    syllable_seconds: float
    note_seconds: float
    open_ended_seconds: float
    rite: str                 # the rite file, ceremony/<rite>.toml (yuexuan.rite.ranks)
    mix: str | None           # the audio's mix (vocabulary.MIXES), None: the command's default


@dataclass(frozen=True)
class Shejie:
    jie_seconds: float = 4.0
    pi_offsets: tuple[float, ...] = (0.0, 0.3)
    gu_offsets: tuple[float, ...] = (1.0, 3.0)
    syllables_per_jie: int = 4
    heard_jie: int | None = None
    # a 投壶 score (variant shejie_pattern, O33): the seconds between its strokes, and how it meets
    # the 节 (SCORE_MAPPINGS); the grid above is not read then
    stroke_seconds: float = 0.5
    score_mapping: str = "节一终"


@dataclass(frozen=True)
class CueSheet(Ceremony):
    """A whole sheet: its ``[ceremony]`` settings (inherited fields) and everything else."""
    file: str
    variants: dict[str, str]         # variant key -> chosen option (defaults filled in)
    shejie: Shejie
    pairs: tuple[Pair, ...]
    cues: tuple[CueSpec, ...]
    text: str = field(default="", repr=False)
    hits_midi: HitsMidi | None = None  # a hit sensor's note → 侯 map, or None

    def pair_selection(self, names: Iterable[str]) -> list[Pair]:
        """Pairs named by group or id, in roster order within each name, names in the given order."""
        out: list[Pair] = []
        for n in names:
            out.extend(p for p in self.pairs if p.group == n or p.id == n)
        return out
