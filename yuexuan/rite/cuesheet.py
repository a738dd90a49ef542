"""Cue sheets (cues/*.toml): parsed and validated into plain dataclasses.

Every problem raises :class:`~yuexuan.errors.UserError` naming the file, the line where it can be
found, the key, and what was expected. See docs/cuesheet.md for the format.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from yuexuan.rite import tomlfile, variants as variants_mod
from yuexuan.errors import UserError
from yuexuan.rite.instruments import KINDS
from yuexuan.rite.tomlfile import Fields
from yuexuan.rite.tuning import parse_pitch

RANKS = ("天子", "诸侯", "卿大夫", "士")
ARCHER_RANKS = ("公", "宾", "卿", "大夫", "士")
CUE_KINDS = ("music", "calls", "shoot", "shejie")
SHENG = ("宫", "商", "角", "徵", "羽")
MAX_SECONDS = 6 * 3600.0          # no single setting may exceed six hours
MAX_PAIRS = 200_000
MAX_CUES = 10_000

_TOP = {"ceremony", "variants", "shejie", "pair", "cue"}
_CEREMONY = {"name", "rank", "huangzhong_hz", "gong", "gap_seconds", "syllable_seconds", "note_seconds",
             "open_ended_seconds"}
_SHEJIE = {"jie_seconds", "pi_offsets", "gu_offsets", "syllables_per_jie", "heard_jie"}
_PAIR = {"id", "group", "upper", "lower", "hits"}
_CUE = {"id", "piece", "action", "kind", "performers", "starts_when", "ends_when", "source", "gloss",
        "xian", "melody", "jie", "intro", "open_ended", "default_seconds", "zhong", "sanzhong",
        "accompaniment", "calls", "round", "pairs", "arrow_seconds", "pair_seconds", "reconstruction",
        "syllable_seconds", "note_seconds"}
_CALL = {"who", "sheng", "word", "at", "seconds", "velocity", "plain"}


@dataclass(frozen=True)
class Archer:
    name: str
    rank: str                 # 公 | 宾 | 卿 | 大夫 | 士


@dataclass(frozen=True)
class Pair:
    id: str
    group: str
    upper: Archer             # 上射
    lower: Archer             # 下射
    hits: tuple = ()          # per round: 8 marks in shooting order, x = hit

    @property
    def first(self) -> str:
        """Who looses first: the 上射, except in the 公's pair (公下射也，而先发不留尊也)."""
        return "下射" if self.lower.rank == "公" else "上射"

    def shooter(self, k: int) -> tuple:
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
class CueSpec:
    id: str
    piece: str
    action: str
    kind: str
    source: str
    line: int | None = None
    performers: str = ""
    starts_when: str = ""
    ends_when: str = ""
    gloss: str = ""
    xian: tuple | None = None           # 县 sides, or None (all)
    xian_variant: tuple | None = None   # (variant key, for whom)
    melody: tuple = ()
    jie: tuple = ()
    intro: tuple = ()
    open_ended: bool = False
    default_seconds: float | None = None
    zhong: int | None = None
    sanzhong: str | None = None         # variant key giving the pieces of the 三终
    accompaniment: str | None = None    # variant key giving accompanying instruments
    calls: tuple = ()
    round: int | None = None
    pairs: tuple = ()                   # group names or pair ids
    arrow_seconds: float = 4.0
    pair_seconds: float = 8.0
    reconstruction: bool | None = None
    syllable_seconds: float | None = None
    note_seconds: float | None = None


@dataclass(frozen=True)
class Shejie:
    jie_seconds: float = 4.0
    pi_offsets: tuple = (0.0, 0.3)
    gu_offsets: tuple = (1.0, 3.0)
    syllables_per_jie: int = 4
    heard_jie: int | None = None


@dataclass(frozen=True)
class CueSheet:
    file: str
    name: str
    rank: str
    huangzhong_hz: float
    gong: object              # tuning.Pitch: the 宫 of the rite's mode (calls 以宫 … 以商)
    gap_seconds: float
    syllable_seconds: float
    note_seconds: float
    open_ended_seconds: float
    variants: dict
    shejie: Shejie
    pairs: tuple
    cues: tuple
    text: str = field(default="", repr=False)

    def pair_selection(self, names: tuple) -> list:
        """Pairs named by group or id, in roster order within each name, names in the given order."""
        out = []
        for n in names:
            out.extend(p for p in self.pairs if p.group == n or p.id == n)
        return out


def _seconds(f: Fields, key: str, default=..., lo: float = 0.0):
    return f.get(key, float, default, lo=lo, hi=MAX_SECONDS)


def _str_list(f: Fields, key: str, default=()) -> tuple:
    v = f.get(key, list, None)
    if v is None:
        return tuple(default)
    for x in v:
        if not isinstance(x, str) or not x:
            raise f.error(key, f"expected an array of names, got {x!r}")
    return tuple(v)


def _archer(f: Fields, key: str) -> Archer:
    a = Fields(f.get(key, dict), f.file, f.text, f"{f.prefix}.{key}", f._line(key))
    a.unknown({"name", "rank"})
    return Archer(a.get("name", str), a.get("rank", str, choices=ARCHER_RANKS))


def _number_list(f: Fields, key: str, default: tuple) -> tuple:
    v = f.get(key, list, None)
    if v is None:
        return default
    if not v or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
        raise f.error(key, "expected a non-empty array of numbers (seconds)")
    if any(x < 0 or x > MAX_SECONDS for x in v):
        raise f.error(key, "offsets must be between 0 and the 节 length")
    return tuple(float(x) for x in v)


def parse(path: str | Path, pieces: dict, instruments: dict) -> CueSheet:
    """Read and validate a cue sheet against the known pieces and instruments."""
    path = str(path)
    data, text = tomlfile.load(path)
    top = Fields(data, path, text, "")
    top.unknown(_TOP)
    cer = Fields(top.get("ceremony", dict), path, text, "ceremony", tomlfile.line_of(text, "name") or 1)
    cer.line = next((i for i, l in enumerate(text.splitlines(), 1) if l.strip() == "[ceremony]"), None)
    cer.unknown(_CEREMONY)
    rank = cer.get("rank", str, choices=RANKS)
    try:
        gong = parse_pitch(cer.get("gong", str, "黄钟"))
    except UserError as exc:
        raise cer.error("gong", exc.message) from None

    vdefs = variants_mod.load()
    vline = next((i for i, l in enumerate(text.splitlines(), 1) if l.strip() == "[variants]"), None)
    vf = Fields(top.get("variants", dict, {}), path, text, "variants", vline)
    chosen = {}
    for key, value in vf.data.items():
        if key not in vdefs:
            raise vf.error(key, f"unknown variant; expected one of: {', '.join(vdefs)}")
        chosen[key] = vf.get(key, str, choices=tuple(vdefs[key]["options"]))
    for key, v in vdefs.items():
        chosen.setdefault(key, v["default"])

    sline = next((i for i, l in enumerate(text.splitlines(), 1) if l.strip() == "[shejie]"), None)
    sf = Fields(top.get("shejie", dict, {}), path, text, "shejie", sline)
    sf.unknown(_SHEJIE)
    jie_seconds = sf.get("jie_seconds", float, 4.0, lo=0.2, hi=600.0)
    shejie = Shejie(jie_seconds=jie_seconds,
                    pi_offsets=_number_list(sf, "pi_offsets", (0.0, 0.3)),
                    gu_offsets=_number_list(sf, "gu_offsets", (1.0, 3.0)),
                    syllables_per_jie=sf.get("syllables_per_jie", int, 4, lo=1, hi=64),
                    heard_jie=sf.get("heard_jie", int, None, lo=0, hi=64))
    if len(shejie.pi_offsets) != 2:
        raise sf.error("pi_offsets", "expected two offsets: 朔鼙, then 应鼙")
    if len(shejie.gu_offsets) != 2:
        raise sf.error("gu_offsets", "expected two 建鼓 strokes per 节, one for each arrow of the pair")
    if max(shejie.pi_offsets + shejie.gu_offsets) >= jie_seconds:
        raise sf.error("gu_offsets", f"every stroke must fall inside the 节 (jie_seconds = {jie_seconds})")
    if list(shejie.gu_offsets) != sorted(shejie.gu_offsets) or shejie.gu_offsets[0] == shejie.gu_offsets[1]:
        raise sf.error("gu_offsets", "expected two increasing offsets")

    raw_pairs = top.get("pair", list, [])
    if len(raw_pairs) > MAX_PAIRS:
        raise top.error("pair", f"{len(raw_pairs)} pairs; the limit is {MAX_PAIRS}")
    pairs, seen = [], {}
    pair_lines = tomlfile.table_lines(text, "pair")
    for i, rp in enumerate(raw_pairs):
        pf = Fields(rp, path, text, f"pair[{i}]", pair_lines[i] if i < len(pair_lines) else None)
        pf.unknown(_PAIR)
        pid = pf.get("id", str)
        if pid in seen:
            raise pf.error("id", f"duplicate pair id {pid!r} (first at pair[{seen[pid]}])")
        seen[pid] = i
        hits = tuple(pf.get("hits", list, []))
        if len(hits) > 3:
            raise pf.error("hits", "at most three rounds")
        for h in hits:
            if not isinstance(h, str) or len(h) > 8 or set(h) - {"x", "."}:
                raise pf.error("hits", f"{h!r}: expected up to 8 marks, x (hit) or . (miss)")
        upper, lower = _archer(pf, "upper"), _archer(pf, "lower")
        if upper.rank == "公":
            raise pf.error("upper", "the 公 shoots as 下射 (公下射也，而先发不留尊也); put him in `lower`")
        pairs.append(Pair(pid, pf.get("group", str), upper, lower, tuple(hits)))
    groups = {p.group for p in pairs} | {p.id for p in pairs}

    raw_cues = top.get("cue", list)
    if not raw_cues:
        raise top.error("cue", "a cue sheet needs at least one [[cue]]")
    if len(raw_cues) > MAX_CUES:
        raise top.error("cue", f"{len(raw_cues)} cues; the limit is {MAX_CUES}")
    names = set(instruments) | set(KINDS)
    cues, cue_ids = [], {}
    cue_lines = tomlfile.table_lines(text, "cue")
    for i, rc in enumerate(raw_cues):
        cf = Fields(rc, path, text, f"cue[{i}]", cue_lines[i] if i < len(cue_lines) else None)
        cf.unknown(_CUE)
        cid = cf.get("id", str)
        if not cid.strip() or "," in cid:
            raise cf.error("id", "expected a non-empty id without commas")
        if cid in cue_ids:
            raise cf.error("id", f"duplicate cue id {cid!r} (first at cue[{cue_ids[cid]}])")
        cue_ids[cid] = i
        kind = cf.get("kind", str, "music", choices=CUE_KINDS)
        piece = cf.get("piece", str)
        if kind in ("music", "shejie") and piece not in pieces:
            raise cf.error("piece", f"unknown piece {piece!r}; expected one of: {', '.join(sorted(pieces))}")
        for key in ("melody", "jie", "intro"):
            for name in _str_list(cf, key):
                if name not in names:
                    raise cf.error(key, f"unknown instrument {name!r}; expected an instrument name "
                                        f"({', '.join(instruments)}) or a kind ({', '.join(KINDS)})")
        xian, xian_variant = None, None
        if cf.has("xian"):
            xv = cf.data["xian"]
            if isinstance(xv, dict):
                xf = Fields(xv, path, text, f"cue[{i}].xian", cf._line("xian"))
                xf.unknown({"variant", "for"})
                vk = xf.get("variant", str, choices=tuple(k for k, v in vdefs.items()
                                                           if any(isinstance(o, dict) and "宾" in o
                                                                  for o in v["options"].values())))
                xian_variant = (vk, xf.get("for", str, choices=("宾", "公")))
            else:
                xian = _str_list(cf, "xian")
                for s in xian:
                    if s not in ("东", "西", "北", "南", "堂上"):
                        raise cf.error("xian", f"unknown 县 {s!r}; expected 东, 西, 北, 南 or 堂上")
        for vk in ("sanzhong", "accompaniment"):
            if cf.has(vk):
                if cf.get(vk, str) not in vdefs:
                    raise cf.error(vk, f"unknown variant {cf.data[vk]!r}; expected one of: {', '.join(vdefs)}")
        calls = []
        for j, rcall in enumerate(cf.get("calls", list, [])):
            kf = Fields(rcall, path, text, f"cue[{i}].calls[{j}]", cf._line("calls"))
            kf.unknown(_CALL)
            who = kf.get("who", str)
            if who not in instruments:
                raise kf.error("who", f"unknown instrument {who!r}")
            calls.append(Call(who, kf.get("sheng", str, choices=SHENG), kf.get("word", str, ""),
                              _seconds(kf, "at"), _seconds(kf, "seconds", lo=0.01),
                              kf.get("velocity", int, 90, lo=1, hi=127), kf.get("plain", bool, False)))
        if kind == "calls" and not calls:
            raise cf.error("calls", "a calls cue needs at least one call")
        sel = _str_list(cf, "pairs")
        for n in sel:
            if n not in groups:
                raise cf.error("pairs", f"no pair or group named {n!r} in the roster ([[pair]] tables)")
        if kind in ("shoot", "shejie") and not sel:
            raise cf.error("pairs", "a shooting cue needs the pairs (groups or ids) that shoot")
        zhong = cf.get("zhong", int, None, lo=1, hi=1000)
        open_ended = cf.get("open_ended", bool, False)
        if kind == "music" and zhong is None and not open_ended:
            raise cf.error("zhong", "a music cue needs its length: `zhong = N` (终) or `open_ended = true`")
        if zhong is not None and open_ended:
            raise cf.error("open_ended", "give either `zhong` or `open_ended`, not both")
        if kind == "music" and not _str_list(cf, "melody"):
            raise cf.error("melody", "a music cue needs the instruments that play its melody")
        cues.append(CueSpec(
            id=cid, piece=piece, action=cf.get("action", str), kind=kind, source=cf.get("source", str),
            line=cf.line, performers=cf.get("performers", str, ""), starts_when=cf.get("starts_when", str, ""),
            ends_when=cf.get("ends_when", str, ""), gloss=cf.get("gloss", str, ""), xian=xian,
            xian_variant=xian_variant, melody=_str_list(cf, "melody"), jie=_str_list(cf, "jie"),
            intro=_str_list(cf, "intro"), open_ended=open_ended,
            default_seconds=_seconds(cf, "default_seconds", None, lo=0.1), zhong=zhong,
            sanzhong=cf.get("sanzhong", str, None), accompaniment=cf.get("accompaniment", str, None),
            calls=tuple(calls), round=cf.get("round", int, None, lo=1, hi=3), pairs=sel,
            arrow_seconds=_seconds(cf, "arrow_seconds", 4.0, lo=0.1),
            pair_seconds=_seconds(cf, "pair_seconds", 8.0),
            reconstruction=cf.get("reconstruction", bool, None),
            syllable_seconds=_seconds(cf, "syllable_seconds", None, lo=0.05),
            note_seconds=_seconds(cf, "note_seconds", None, lo=0.05)))
    return CueSheet(
        file=path, name=cer.get("name", str), rank=rank,
        huangzhong_hz=cer.get("huangzhong_hz", float, lo=20.0, hi=2000.0), gong=gong,
        gap_seconds=_seconds(cer, "gap_seconds", 5.0),
        syllable_seconds=_seconds(cer, "syllable_seconds", 1.2, lo=0.05),
        note_seconds=_seconds(cer, "note_seconds", 1.0, lo=0.05),
        open_ended_seconds=_seconds(cer, "open_ended_seconds", 40.0, lo=0.1),
        variants=chosen, shejie=shejie, pairs=tuple(pairs), cues=tuple(cues), text=text)
