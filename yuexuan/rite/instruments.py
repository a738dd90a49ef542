"""Instrument data: one TOML file per sounding body of the 轩县 (instruments/*.toml)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from yuexuan.data import DataSource
from yuexuan.errors import UserError
from yuexuan.rite import names, tomlfile
from yuexuan.rite.synth_keys import SYNTH_KEYS
from yuexuan.rite.tuning import Pitch, parse_pitch

FAMILIES = ("bell", "stone", "drum", "string", "pipe", "free_reed", "voice")
KINDS = ("磬", "钟", "鑮", "建鼓", "鼙", "鼗", "簜", "笙", "瑟", "歌", "呼")
XIAN = ("东", "西", "北", "南", "堂下", "堂上", "侯")   # 堂下: at the 堂's foot, not hung (the 簜)
SUSPENSIONS = ("编悬", "特悬")
_KEYS = {"name", "pinyin", "alias", "english", "family", "kind", "xian", "suspension", "count", "pitched",
         "octave", "pitch_set", "gm_program", "gm_drum_key", "facing", "position_m", "source",
         "notes", "synth", "place", "at_hou"}
_PLACE_KEYS = {"where", "position_m", "source", "cues", "from_cue", "when", "attendants"}
MAX_PLACES = 64                # [[place]] rows an instrument file may have
#: ``at_hou``: the file is a caller of every 侯 (xian 侯), one body a 侯 named ``<name>·<侯>`` at
#: its 乏 (乏) or south of the 乏, due west of the 侯 (乏南); its own position_m gives the height
AT_HOU = ("乏", "乏南")


@dataclass(frozen=True)
class Place:
    """Where a performer is during some cues (a ``[[place]]`` row of an instrument file).

    It applies to the cues of ``cues``, or to ``from_cue`` and every later cue of the sheet, and
    only under the settings of ``when`` (variant key -> option); the first row that applies gives
    the place, and a cue no row applies to hears the instrument at its ``position_m``."""

    where: str                 # the text's name of the place, e.g. 东坫之东南
    position_m: tuple[float, ...]  # (x east, y north, z up), metres
    source: str
    cues: tuple[str, ...] = ()  # cue ids
    from_cue: str | None = None
    when: dict[str, str] = field(default_factory=dict)
    # official -> (x, y, z) m: drawn, not heard
    attendants: dict[str, tuple[float, ...]] = field(default_factory=dict)

    def applies(self, cue_id: str, so_far: dict[str, frozenset[str]], variants: dict[str, str]) -> bool:
        """True for ``cue_id`` under the chosen ``variants``; ``so_far[id]`` is the set of cue ids
        the sheet has at or before cue ``id``."""
        if any(variants.get(k) != v for k, v in self.when.items()):
            return False
        return cue_id in self.cues or (self.from_cue is not None
                                       and self.from_cue in so_far.get(cue_id, ()))

    def timeline_entry(self) -> dict[str, Any]:
        """The plain dict a :class:`~yuexuan.timeline.Cue`'s ``places`` holds for it."""
        out: dict[str, Any] = {"where": self.where, "position_m": list(self.position_m),
                               "source": self.source}
        if self.attendants:
            out["attendants"] = {k: list(v) for k, v in self.attendants.items()}
        return out


def _position(f: tomlfile.Fields, key: str, value: Any) -> tuple[float, ...]:
    """[x, y, z] metres within 1000 m of the 堂, else a one-line error naming ``key``."""
    if not isinstance(value, list) or len(value) != 3 or \
            not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        raise f.error(key, "expected [x, y, z] in metres")
    if any(abs(v) > 1000 for v in value):
        raise f.error(key, "absurd position; expected metres within 1000 of the 堂")
    return tuple(float(v) for v in value)


def _place(f: tomlfile.Fields) -> Place:
    f.unknown(_PLACE_KEYS)
    cues, from_cue = f.strings("cues"), f.get("from_cue", str, None)
    if bool(cues) == (from_cue is not None):
        raise f.error("cues", "a place needs either `cues` (a list of cue ids) or `from_cue`")
    when = f.get("when", dict, {})
    for k, v in when.items():
        if not isinstance(v, str):
            raise f.error("when", f"expected variant key = \"option\", got {k} = {v!r}")
    attendants = {k: _position(f, "attendants", v) for k, v in f.get("attendants", dict, {}).items()}
    return Place(f.get("where", str), _position(f, "position_m", f.get("position_m", list)),
                 f.get("source", str), cues, from_cue, dict(when), attendants)


@dataclass(frozen=True)
class Instrument:
    """One sounding body (or a group played as one, such as the four 瑟)."""

    name: str                  # exact timeline name, e.g. 建鼓·东
    pinyin: str
    english: str
    family: str                # bell | stone | drum | string | pipe | free_reed | voice
    kind: str                  # its role in a 县: 磬 钟 鑮 建鼓 鼙 鼗 簜 笙 瑟 歌 呼
    xian: str                  # 东 | 西 | 北 | 南 (hung sides) | 堂下 | 堂上 | 侯
    position_m: tuple[float, ...]  # (x east, y north, z up), metres, ceremony/courtyard.toml frame
    facing: str
    source: str
    notes: str = ""
    suspension: str | None = None   # 编悬 | 特悬 | None
    count: int = 1
    pitched: bool = False
    octave: int = 0            # its 黄 sounds at huangzhong_hz × 2**octave
    pitch_set: tuple[Pitch, ...] = ()  # Pitches it can sound (relative to its own octave)
    gm_program: int | None = None   # General MIDI program, 0..127
    gm_drum_key: int | None = None  # GM percussion key (channel 10) for unpitched bodies
    synth: dict[str, Any] = field(default_factory=dict)
    file: str = ""
    places: tuple[Place, ...] = ()  # Place rows: where it is during some cues (else at position_m)
    alias: str = ""            # what a user may type for it (rite/names.py), e.g. jiangu-dong
    at_hou: str | None = None  # a caller of every 侯 (AT_HOU): one body each, compiler/roster.py

    def can_sound(self, pitch: Pitch) -> bool:
        return pitch in self.pitch_set

    def facts(self) -> dict[str, Any]:
        """Plain dict for the timeline JSON: all that the outputs read of an instrument (the
        renderer synthesises from ``family``, ``pitched`` and ``synth`` and places by
        ``position_m``, never reading the instrument files)."""
        return {"pinyin": self.pinyin, "english": self.english, "family": self.family,
                "kind": self.kind, "xian": self.xian, "position_m": list(self.position_m),
                "facing": self.facing, "suspension": self.suspension, "count": self.count,
                "gm_program": self.gm_program, "gm_drum_key": self.gm_drum_key,
                "source": self.source, "pitched": self.pitched,
                "synth": {k: list(v) if isinstance(v, list) else v for k, v in self.synth.items()}}


def load_instrument(path: str | Path) -> Instrument:
    data, text = tomlfile.load(path)
    f = tomlfile.Fields(data, str(path), text, "")
    f.unknown(_KEYS)
    pitched = f.get("pitched", bool, False)
    pos = _position(f, "position_m", f.get("position_m", list))
    pitch_set: tuple[Pitch, ...] = ()
    if pitched:
        raw = f.get("pitch_set", list)
        try:
            pitch_set = tuple(parse_pitch(p) for p in raw)
        except UserError as exc:
            raise f.error("pitch_set", exc.message) from None
        if not pitch_set:
            raise f.error("pitch_set", "a pitched instrument needs at least one 律")
    gm_program = f.get("gm_program", int, None, lo=0, hi=127)
    gm_drum_key = f.get("gm_drum_key", int, None, lo=27, hi=87)
    if pitched and gm_program is None:
        raise f.error("gm_program", "a pitched instrument needs a General MIDI program (0..127)")
    if not pitched and gm_drum_key is None:
        raise f.error("gm_drum_key", "an unpitched instrument needs a GM drum key (27..87)")
    family = f.get("family", str, choices=FAMILIES)
    if f.has("synth"):
        f.table("synth").known_keys(SYNTH_KEYS[family])
    synth = dict(f.get("synth", dict, {}))
    alias = f.get("alias", str, "")
    if alias and not names.ALIAS.fullmatch(alias):
        raise f.error("alias", "expected lower-case ASCII pinyin, parts joined by '-', e.g. jiangu-dong")
    second = synth.get("second_tone_ratio")
    if second is not None and not any(abs(p - second) < 1e-9 for p in synth.get("partials", ())):
        # the bell sounds one mode per listed partial: a 侧鼓 missing from them would be silent
        raise f.error("synth.partials", f"a two-tone bell must list its 侧鼓 (second_tone_ratio {second}) "
                      "among its partials")
    return Instrument(
        name=f.get("name", str), pinyin=f.get("pinyin", str, ""), english=f.get("english", str, ""),
        family=family, kind=f.get("kind", str, choices=KINDS),
        xian=f.get("xian", str, choices=XIAN), position_m=pos,
        facing=f.get("facing", str, ""), source=f.get("source", str), notes=f.get("notes", str, ""),
        suspension=f.get("suspension", str, None, choices=SUSPENSIONS),
        count=f.get("count", int, 1, lo=1, hi=64), pitched=pitched,
        octave=f.get("octave", int, 0, lo=-4, hi=4), pitch_set=pitch_set, gm_program=gm_program,
        gm_drum_key=gm_drum_key, synth=synth, file=str(path),
        places=tuple(_place(p) for p in f.tables("place", [], limit=MAX_PLACES)), alias=alias,
        at_hou=f.get("at_hou", str, None, choices=AT_HOU))


def cue_places(insts: dict[str, Instrument], cue_ids: list[str], variants: dict[str, str],
               vdefs: dict[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    """{cue id: {instrument: Place.timeline_entry()}} for the cues ``cue_ids`` (the sheet's order)
    under the chosen ``variants``: the first ``[[place]]`` row of each instrument that applies.
    A ``when`` naming an unknown variant or option is a UserError naming the instrument file."""
    for inst in insts.values():
        for i, pl in enumerate(inst.places):
            for k, v in pl.when.items():
                if k not in vdefs or v not in vdefs[k]["options"]:
                    raise UserError(f"unknown variant setting {k} = {v!r} (see ceremony/variants.toml)",
                                    file=inst.file, key=f"place[{i}].when")
    so_far, seen = {}, set()
    for cid in cue_ids:
        seen.add(cid)
        so_far[cid] = frozenset(seen)
    out = {}
    for cid in cue_ids:
        here = {}
        for name, inst in insts.items():
            row = next((p for p in inst.places if p.applies(cid, so_far, variants)), None)
            if row is not None:
                here[name] = row.timeline_entry()
        out[cid] = here
    return out


def place_summary(places_by_cue: dict[str, dict[str, dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """{instrument: [{where, position_m, cues}]}: each distinct place of ``places_by_cue`` (as
    :func:`cue_places` returns) with the cue ids it holds for, in cue order: the drawing's key."""
    out: dict[str, list[dict[str, Any]]] = {}
    for cid, here in places_by_cue.items():
        for name, entry in here.items():
            rows = out.setdefault(name, [])
            row = next((r for r in rows if r["where"] == entry["where"]
                        and r["position_m"] == entry["position_m"]), None)
            if row is None:
                rows.append({"where": entry["where"], "position_m": entry["position_m"],
                             "attendants": entry.get("attendants", {}), "cues": [cid]})
            else:
                row["cues"].append(cid)
    return out


def aliases(insts: dict[str, Instrument]) -> dict[str, str]:
    """{name: alias} of ``insts``: what :func:`yuexuan.rite.names.resolve` takes."""
    return {name: inst.alias for name, inst in insts.items()}


def members(insts: dict[str, Instrument], who: str) -> list[str]:
    """The instruments ``who`` names, in ``insts``' order: itself if it is one, else the group of
    bodies named ``who·…`` (the 负侯者 of each 侯: 负侯者·大侯, 负侯者·参, 负侯者·干); [] for none."""
    if who in insts:
        return [who]
    return [name for name in insts if name.startswith(f"{who}·")]


def load_all(source: DataSource = DataSource()) -> dict[str, Instrument]:
    """All instruments of instruments/ of ``source`` (default: the packaged data), by name."""
    out: dict[str, Instrument] = {}
    for p in source.files("instruments"):
        inst = load_instrument(p)
        if inst.name in out:
            raise UserError(f"duplicate instrument name {inst.name!r} (also in {out[inst.name].file})",
                            file=str(p), key="name")
        out[inst.name] = inst
    clash = names.duplicate({i.name: i.alias for i in out.values()})
    if clash:
        raise UserError(f"instruments {clash[0]!r} and {clash[1]!r} have one alias (or one's alias is the "
                        "other's name)", file=out[clash[1]].file, key="alias")
    return in_layout_order(out)


def in_layout_order(insts: dict[str, Instrument]) -> dict[str, Instrument]:
    """``insts`` in layout order: east 县 north to south, then west, north, the hall, the targets."""
    order = sorted(insts.values(), key=lambda i: (XIAN.index(i.xian), -i.position_m[1], i.position_m[0]))
    return {i.name: i for i in order}
