"""The twelve 律 by 三分损益 and the 五声 on any 律 as 宫. Exact ratios, not equal temperament.

三分损益: from 黄钟, alternately take away a third (×2/3, 下生) and add a third (×4/3, 上生),
folding into one octave. 疏 [002]: 「黄锺之初九，下生林锺之初六，林锺又上生大蔟之九二」.
Pitches are written as a 律's one-character name with an octave mark: 清 raises an octave
(黄清 = 黄钟 an octave up; 黄清清 two), 浊 lowers one (黄浊).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from yuexuan.errors import UserError

#: one-character names in ascending order within the octave, with full names.
LV = ("黄", "大", "太", "夹", "姑", "仲", "蕤", "林", "夷", "南", "无", "应")
LV_FULL = ("黄钟", "大吕", "太簇", "夹钟", "姑洗", "仲吕", "蕤宾", "林钟", "夷则", "南吕", "无射", "应钟")
#: the 五声 and their steps (in 律) above the 宫.
WUSHENG = ("宫", "商", "角", "徵", "羽")
WUSHENG_STEPS = (0, 2, 4, 7, 9)

_ALIASES = {full: short for full, short in zip(LV_FULL, LV)}
_ALIASES.update({"大蔟": "太", "大簇": "太", "太蔟": "太", "大吕": "大", "姑冼": "姑", "林锺": "林",
                 "黄锺": "黄", "夹锺": "夹", "应锺": "应", "中吕": "仲", "鑮": "黄"})


def _sanfen_sunyi() -> tuple[Fraction, ...]:
    """The 12 frequency ratios (Fractions in [1, 2)) in ascending 律 order, 三分损益 from 黄钟."""
    ratios = {}
    r = Fraction(1)
    step = 0                                  # chromatic step of the current 律
    for i in range(12):
        ratios[step % 12] = r
        # 下生 takes a third from the pipe (length ×2/3, frequency ×3/2); 上生 adds one
        # (length ×4/3, frequency ×3/4). Folding keeps the ratio inside one octave.
        r = r * (Fraction(3, 2) if i % 2 == 0 else Fraction(3, 4))
        step += 7
        while r < 1:
            r *= 2
        while r >= 2:
            r /= 2
    return tuple(ratios[k] for k in range(12))


#: exact ratios of the 12 律 to 黄钟: 黄 1, 大 2187/2048, 太 9/8, … 应 243/128.
RATIOS = _sanfen_sunyi()


@dataclass(frozen=True)
class Pitch:
    """A 律 in a given octave (0 = the 黄钟 reference octave)."""

    lv: int        # 0..11, index into LV
    octave: int

    @property
    def name(self) -> str:
        mark = "清" * self.octave if self.octave > 0 else "浊" * (-self.octave)
        return LV[self.lv] + mark

    def ratio(self) -> Fraction:
        """Exact ratio to the reference 黄钟."""
        return RATIOS[self.lv] * Fraction(2) ** self.octave

    def hz(self, huangzhong_hz: float) -> float:
        return float(huangzhong_hz * self.ratio())

    def transpose(self, octaves: int) -> Pitch:
        return Pitch(self.lv, self.octave + octaves)


def parse_pitch(text: str) -> Pitch:
    """Parse ``黄``, ``黄钟``, ``太清``, ``黄浊`` … into a :class:`Pitch`.

    Raises :class:`UserError` for an unknown 律.
    """
    s = str(text).strip()
    octave = 0
    while s.endswith("清"):
        s, octave = s[:-1], octave + 1
    while s.endswith("浊"):
        s, octave = s[:-1], octave - 1
    s = _ALIASES.get(s, s)
    if s not in LV:
        raise UserError(f"unknown 律 {text!r}; expected one of {''.join(LV)} (or a full name such as "
                        f"黄钟), optionally followed by 清 (octave up) or 浊 (octave down)")
    return Pitch(LV.index(s), octave)


#: a Western pitch name: letter, optional sharp or flat, optional octave (scientific: C4 = middle C)
_WESTERN = re.compile(r"([A-Ga-g])(#|♯|b|♭)?(-?\d)?")
_LETTER_STEPS = {"C": 0, "D": 2, "E": 4, "F": 5, "G": 7, "A": 9, "B": 11}
WESTERN_NAMES = ("C", "C#", "D", "D#", "E", "F", "F#", "G", "G#", "A", "A#", "B")


def parse_western(text: str) -> tuple[int, int | None] | None:
    """``F4`` → (5, 4), ``Bb`` → (10, None): the pitch class (0 = C) and octave of a Western name
    (A4 = 440 Hz, equal temperament), or None if ``text`` is not one."""
    m = _WESTERN.fullmatch(str(text).strip())
    if not m:
        return None
    step = _LETTER_STEPS[m.group(1).upper()] + {"#": 1, "♯": 1, "b": -1, "♭": -1}.get(m.group(2) or "", 0)
    return step % 12, (int(m.group(3)) + step // 12 if m.group(3) is not None else None)


def western_name(midi_key: int) -> str:
    """MIDI key 65 → ``F4``."""
    return f"{WESTERN_NAMES[midi_key % 12]}{midi_key // 12 - 1}"


def nearest_lv(hz: float, huangzhong_hz: float) -> tuple[Pitch, float]:
    """The 律 (any octave; 0 = that of ``huangzhong_hz``) nearest to ``hz``, and how far ``hz`` is
    from it in cents (positive: ``hz`` above the 律)."""
    x = cents(hz / huangzhong_hz)
    o = math.floor(x / 1200)
    candidates = [Pitch(lv, o + d) for d in (-1, 0, 1) for lv in range(12)]
    best = min(candidates, key=lambda p: abs(x - cents(float(p.ratio()))))
    return best, x - cents(float(best.ratio()))


def hz_to_midi(hz: float) -> tuple[int, float]:
    """Nearest MIDI key (A4 = 69 = 440 Hz, equal temperament) and the offset from it in cents."""
    if not hz > 0:
        raise ValueError(f"frequency must be positive, got {hz}")
    exact = 69.0 + 12.0 * math.log2(hz / 440.0)
    key = int(round(exact))
    return key, (exact - key) * 100.0


def cents(ratio: float) -> float:
    """An interval ratio in cents."""
    return 1200.0 * math.log2(float(ratio))


def wusheng(gong: str | int) -> dict[str, str]:
    """The 五声 with ``gong`` as 宫: {声: 律 one-character name}."""
    g = parse_pitch(gong).lv if isinstance(gong, str) else int(gong) % 12
    return {sheng: LV[(g + step) % 12] for sheng, step in zip(WUSHENG, WUSHENG_STEPS)}


def table(huangzhong_hz: float, octave: int = 0) -> list[dict[str, Any]]:
    """One row per 律 of an octave: name, full name, ratio, Hz, MIDI key, cents offset."""
    rows = []
    for i in range(12):
        p = Pitch(i, octave)
        hz = p.hz(huangzhong_hz)
        key, off = hz_to_midi(hz)
        rows.append({"lv": p.name, "full": LV_FULL[i], "ratio": str(p.ratio()), "hz": hz,
                     "midi": key, "cents": off})
    return rows
