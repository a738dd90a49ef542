"""S7 (the 负侯者's 诺 at each 取矢), S8 (the 大射正's 留/扬/方 on the 公's misses), spoken calls
(no pitch: ``hz`` null, MIDI channel 10, no harmonic series in the render) and O15 (宫 and 商 as two
calls or one held call).

Evidence: the compiled timeline JSON, the MIDI file read back with mido, the rendered audio measured
with librosa (pyin, spectral flatness), the cue sheet read with tomllib.
"""

from __future__ import annotations

import json
import math
import tomllib
from pathlib import Path

import librosa
import mido
import numpy as np
import pytest
import soundfile as sf
from cli_support import run_cli

REPO = Path(__file__).resolve().parent.parent
SHEET = REPO / "cues" / "dashe.toml"
S7_QUOTES = ("命取矢",)                       # every 取矢 cue quotes the order to collect the arrows
S8_QUOTE = "「大射正立于公后，以矢行告于公：下曰留，上曰扬，左右曰方」 [001]"
GONG_HZ = 345.0 / 2                          # 宫 = 黄钟 of the sheet, sung an octave down (负侯者 octave −1)
FUHOU = {"负侯者·大侯", "负侯者·参", "负侯者·干"}   # one bearer per 侯: 「负侯皆许诺」 (who = "负侯者")


def run(*args, cwd=None):
    return run_cli(*args, cwd=cwd)


def compile_json(tmp_path: Path, sheet: Path = SHEET, name: str = "t") -> tuple:
    mid, js = tmp_path / f"{name}.mid", tmp_path / f"{name}.json"
    r = run("compile", sheet, "-o", mid, "--timeline", js)
    assert r.returncode == 0, r.stderr
    return json.loads(js.read_text(encoding="utf-8")), mid, r.stderr


@pytest.fixture(scope="module")
def default(tmp_path_factory):
    return compile_json(tmp_path_factory.mktemp("calls"))


def sheet_copy(tmp_path: Path, edit) -> Path:
    text = edit(SHEET.read_text(encoding="utf-8"))
    p = tmp_path / "sheet.toml"
    p.write_text(text, encoding="utf-8")
    return p


def set_variant(key: str, option: str):
    def edit(text: str) -> str:
        return text.replace("[variants]\n", f'[variants]\n{key} = "{option}"\n', 1) \
            if f"\n{key} = " not in text else \
            "\n".join(f'{key} = "{option}"' if ln.startswith(f"{key} = ") else ln for ln in text.split("\n"))
    return edit


# ---- S7 -------------------------------------------------------------------------------------------

def test_s7_follows_each_round_and_quotes_its_sentence(default):
    tl, _, _ = default
    cues = tl["cues"]
    rounds = {}                                  # round -> index of its last shooting cue
    sheet = tomllib.loads(SHEET.read_text(encoding="utf-8"))
    round_of = {c["id"]: c.get("round") for c in sheet["cue"]}
    for i, c in enumerate(cues):
        if c["kind"] in ("shoot", "shejie"):
            rounds[round_of[c["id"]]] = i
    assert sorted(rounds) == [1, 2, 3]
    for rnd, i in rounds.items():
        nxt = next(c for c in cues[i + 1:] if c["kind"] != "speech")   # the officers' formulas may come between
        assert nxt["kind"] == "calls", (rnd, nxt["id"])
        assert all(q in nxt["source"] for q in S7_QUOTES) and "负侯许诺" in nxt["source"], nxt["source"]
        notes = [n for n in tl["notes"] if n["cue"] == nxt["id"]]
        assert notes and {n["instrument"] for n in notes} == FUHOU
        assert all(n["lyric"] == "诺" for n in notes)
        assert nxt["start"] > cues[i]["end"]


def test_round3_nuo_is_spoken_rounds_1_2_on_gong_and_shang(default):
    tl, _, _ = default
    by_cue = {}
    for n in tl["notes"]:
        if n["instrument"] in FUHOU:
            by_cue.setdefault(n["cue"], []).append(n)
    sheet = tomllib.loads(SHEET.read_text(encoding="utf-8"))
    round_of = {c["id"]: c.get("round") for c in sheet["cue"]}
    last2 = max(i for i, c in enumerate(tl["cues"]) if round_of[c["id"]] == 2 and c["kind"] != "calls")
    # after round 2's last shooting cue (the officers' 「左右卒射」 may come between): its 取矢, then
    # round 3's 去侯, the re-posting before the 公 (inside the 射节 cue under O17 连奏, the default)
    # and the 取矢
    qushi2 = next(i for i, c in enumerate(tl["cues"]) if c["kind"] == "calls" and i > last2)
    round3 = [c["id"] for i, c in enumerate(tl["cues"]) if c["id"] in by_cue and i > qushi2]
    assert len(round3) == 3 and [c["kind"] for c in tl["cues"] if c["id"] in round3] == \
        ["calls", "shejie", "calls"]
    for cid in round3:
        for n in by_cue[cid]:
            assert n["hz"] is None and n["lv"] is None and n["cents"] is None, n
    sung = [cid for cid in by_cue if cid not in round3]
    assert len(sung) == 5                        # 去侯 ×3 (round 1, 2, before the 公) and 取矢 ×2
    for cid in sung:
        for who in FUHOU:                        # each bearer: 宫, then 商 = 宫 × 9/8
            calls = sorted((n for n in by_cue[cid] if n["instrument"] == who), key=lambda n: n["time"])
            assert [n["hz"] for n in calls] == pytest.approx([GONG_HZ, GONG_HZ * 9 / 8]), (cid, who)


def test_spoken_nuo_in_the_midi_is_a_fixed_key_on_channel_10_never_retuned(default):
    tl, mid, _ = default
    speakers = FUHOU | {"大射正", "司射", "乐正", "大师", "释获者"}    # the calls and the officers' formulas
    spoken = sorted(n["time"] for n in tl["notes"] if n["hz"] is None and n["instrument"] in speakers)
    keys = {n["midi"] for n in tl["notes"] if n["hz"] is None and n["instrument"] in speakers}
    assert keys == {70}
    sung = {(round(n["time"], 2), n["midi"]) for n in tl["notes"] if n["instrument"] in FUHOU and n["hz"]}
    t, on_times, tuned_channels, sung_ch = 0.0, [], set(), set()
    rpn = {}
    for msg in mido.MidiFile(mid):
        t += msg.time
        if msg.type == "note_on" and msg.velocity and msg.channel == 9 and msg.note == 70:
            on_times.append(t)
        if msg.type == "note_on" and msg.velocity and (round(t, 2), msg.note) in sung:
            sung_ch.add(msg.channel)
        if msg.type == "control_change" and msg.control in (101, 100):
            rpn[(msg.channel, msg.control)] = msg.value
        if msg.type == "control_change" and msg.control == 6 and \
                (rpn.get((msg.channel, 101)), rpn.get((msg.channel, 100))) in ((0, 3), (0, 4)):
            tuned_channels.add(msg.channel)
    assert len(on_times) == len(spoken) and np.allclose(on_times, spoken, atol=2e-3), (on_times, spoken)
    assert tuned_channels and 9 not in tuned_channels   # channel 10 selects no MTS tuning program
    # and the 负侯者's sung calls stay on a channel that selects the tuning
    assert sung_ch and 9 not in sung_ch and sung_ch <= tuned_channels, sung_ch


def _mono(path: Path, sr: int = 22050) -> np.ndarray:
    x, rate = sf.read(path, dtype="float32")
    if x.ndim > 1:
        x = x.mean(axis=1)
    return librosa.resample(x, orig_sr=rate, target_sr=sr)


def _pitch_track(y: np.ndarray, sr: int = 22050):
    f0, voiced, _ = librosa.pyin(y, fmin=80, fmax=600, sr=sr)
    rms = librosa.feature.rms(y=y)[0][:len(f0)]
    loud = rms > 0.1 * rms.max()
    return f0[:len(loud)][loud], voiced[:len(loud)][loud]


def test_render_speaks_the_round3_nuo_and_sings_the_round1_gong(tmp_path, default):
    tl, _, _ = default
    out = {}
    for cid in ("round3_quhou", "round1_quhou"):
        r = run("render", SHEET, "-o", tmp_path / f"{cid}.wav", "--cues", cid)
        assert r.returncode == 0, r.stderr
        out[cid] = _mono(tmp_path / f"{cid}.wav")
    # the spoken 诺 is voiced speech (pyin: at least half its loud frames voiced), on its tone:
    # nuò, the falling fourth tone, not a held note
    f0, voiced = _pitch_track(out["round3_quhou"])
    assert len(voiced) > 20 and voiced.mean() >= 0.5, voiced.mean()
    assert _falls_or_rises(f0[voiced]) < -2.0
    # the 宫 诺 of round 1 (its first 3.5 s; the 商 starts at 5 s): pitch within 30 cents of hz
    gong = next(n for n in tl["notes"] if n["cue"] == "round1_quhou" and n["lv"] and n["instrument"] in FUHOU)
    y = out["round1_quhou"][:int(3.4 * 22050)]
    f0, voiced = _pitch_track(y)
    assert voiced.mean() > 0.8, voiced.mean()
    cents = 1200 * math.log2(float(np.nanmedian(f0[voiced])) / gong["hz"])
    assert abs(cents) < 30, cents


def _falls_or_rises(f0: np.ndarray) -> float:
    """Semitones from the median of the first third of a pitch track to that of its last third."""
    k = max(1, len(f0) // 3)
    return 12 * math.log2(float(np.median(f0[-k:])) / float(np.median(f0[:k])))


def test_note_command_speaks_the_zheng_calls(tmp_path):
    """留 liú and 扬 yáng (second tone) rise, 方 fāng (first tone) stays level; all voiced."""
    for word, tone in (("留", 2), ("扬", 2), ("方", 1)):
        path = tmp_path / f"{word}.wav"
        r = run("note", "大射正", "黄", "-o", path, "--lyric", word, "--duration", "1.0")
        assert r.returncode == 0 and "unpitched" in r.stdout, r.stderr + r.stdout
        f0, voiced = _pitch_track(_mono(path))
        assert voiced.mean() >= 0.5, (word, voiced.mean())
        move = _falls_or_rises(f0[voiced])
        assert (move > 2.0) if tone == 2 else (abs(move) < 2.0), (word, move)


# ---- S8 -------------------------------------------------------------------------------------------

def test_s8_calls_follow_each_marked_miss_of_the_gong(default):
    tl, _, warnings = default
    sheet = tomllib.loads(SHEET.read_text(encoding="utf-8"))
    gong_pair = next(p for p in sheet["pair"] if p["lower"].get("host"))
    letters = {"l": "留", "y": "扬", "f": "方"}
    expected = []
    for hits in gong_pair["hits"]:
        # the 公 looses first (公下射也，而先发不留尊也): his arrows are the 1st, 3rd, 5th and 7th
        for k in range(0, len(hits), 2):
            mark = letters.get(hits[k], hits[k])
            assert mark != ".", "the default sheet gives every miss of the 公 its place"
            if mark in "留扬方":
                expected.append(mark)
    calls = [n for n in tl["notes"] if n["instrument"] == "大射正"]
    assert [n["lyric"] for n in calls] == expected and len(expected) >= 2
    assert all(n["hz"] is None and n["midi"] == 70 for n in calls)
    cues = {c["id"]: c for c in tl["cues"]}
    for n in calls:
        assert S8_QUOTE in cues[n["cue"]]["source"], n["cue"]
    # in round 3 every call follows one of the 公's 射节 strokes (his arrow) within the 4 s 节
    gong_strokes = [b["time"] for b in tl["beats"] if b["archer"] == "公"]
    for n in calls:
        if cues[n["cue"]]["kind"] == "shejie":
            assert any(0 < n["time"] - t < 4.0 for t in gong_strokes), n
    assert "大射正" in tl["instruments"] and not tl["instruments"]["大射正"]["pitched"]
    assert "warning" not in warnings.lower()


def test_hits_marks_ascii_letters_equal_the_characters(tmp_path, default):
    tl, _, _ = default
    ascii_sheet = sheet_copy(tmp_path, lambda s: s.replace('"xx留x扬.x.", "x.xx方.留."', '"xxlxy.x.", "x.xxf.l."'))
    assert ascii_sheet.read_text(encoding="utf-8") != SHEET.read_text(encoding="utf-8")
    tl2, _, _ = compile_json(tmp_path, ascii_sheet, "ascii")
    assert tl2["notes"] == tl["notes"]


def test_unmarked_miss_of_the_gong_is_not_called_and_warned(tmp_path):
    plain = sheet_copy(tmp_path, lambda s: s.replace('"xx留x扬.x.", "x.xx方.留."', '"xx.x..x.", "x.xx.x.."'))
    tl, _, stderr = compile_json(tmp_path, plain, "plain")
    assert not [n for n in tl["notes"] if n["instrument"] == "大射正"]
    assert stderr.count("the 大射正 does not call it") == 4, stderr


def test_bad_hits_mark_is_one_line_exit_2(tmp_path):
    bad = sheet_copy(tmp_path, lambda s: s.replace('"xx留x扬.x."', '"xx留x扬.z."'))
    r = run("compile", bad, "-o", tmp_path / "bad.mid")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "hits" in r.stderr and "留" in r.stderr, r.stderr


def test_unpitched_caller_cannot_sing(tmp_path):
    bad = sheet_copy(tmp_path, lambda s: s.replace(
        '{ who = "负侯者", word = "诺", at = 0.0, seconds = 1.2, velocity = 70, plain = true },   # spoken (O16)',
        '{ who = "大射正", sheng = "宫", word = "诺", at = 0.0, seconds = 1.2, velocity = 70 },', 1))
    r = run("compile", bad, "-o", tmp_path / "bad.mid")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "plain" in r.stderr, r.stderr


# ---- O16 and O15 ----------------------------------------------------------------------------------

def test_o16_ruchu_sings_round3_on_gong_and_shang(tmp_path):
    tl, _, _ = compile_json(tmp_path, sheet_copy(tmp_path, set_variant("fuhou_round3", "如初")), "ruchu")
    for cid in ("round3_quhou", "round3_qushi"):
        hz = sorted(n["hz"] for n in tl["notes"] if n["cue"] == cid)
        assert hz == pytest.approx([GONG_HZ] * 3 + [GONG_HZ * 9 / 8] * 3), (cid, hz)   # each bearer


def test_o15_zhang_erqi_holds_the_gong_until_the_shang(tmp_path, default):
    tl0, _, _ = default
    tl, _, _ = compile_json(tmp_path, sheet_copy(tmp_path, set_variant("fuhou_gongshang", "张尔岐")), "zhang")

    def gap(t, cid):
        gong, shang = sorted((n for n in t["notes"] if n["cue"] == cid and n["instrument"] == "负侯者·干"),
                             key=lambda n: n["time"])
        assert gong["hz"] < shang["hz"]
        return shang["time"] - (gong["time"] + gong["duration"])

    for cid in ("round1_quhou", "round2_quhou", "round1_qushi", "round2_qushi"):
        assert gap(tl0, cid) > 1.0                  # 秦蕙田: two calls, silence between (they run)
        assert gap(tl, cid) == pytest.approx(0.0, abs=1e-6)   # 张尔岐: one call, 宫 carried to 商
    # the round-3 诺 is spoken either way (O16 default), and nothing else moves
    assert [c["start"] for c in tl["cues"]] == [c["start"] for c in tl0["cues"]]
    assert tl["ceremony"]["variants"]["fuhou_gongshang"] == "张尔岐"


def test_score_writes_spoken_calls_with_x_noteheads(tmp_path):
    from music21 import converter

    heads = {}
    for cid in ("round3_quhou", "round1_quhou"):
        path = tmp_path / f"{cid}.musicxml"
        r = run("score", SHEET, "-o", path, "--cues", cid)
        assert r.returncode == 0, r.stderr
        notes = [n for n in converter.parse(path).recurse().notes if not n.tie or n.tie.type == "start"]
        heads[cid] = [n.notehead for n in notes]
    assert heads["round3_quhou"] == ["x"]                       # one spoken 诺
    assert len(heads["round1_quhou"]) == 2 and "x" not in heads["round1_quhou"]   # 宫 and 商, sung


def test_each_hou_has_its_own_callers_placed_by_the_courtyard(default):
    """One 获者 at each 侯's 乏 and one 负侯者 due west of each 侯, 10 步 south of its 乏 (乏南: where
    「又诺以商」): the 侯 at 九十, 七十, 五十 貍步 of ceremony/courtyard.toml's bu_m from the 堂, each 乏
    「西十北十」 (ceremony/dashe.toml); the bodies made from instruments/获者.toml and 负侯者.toml."""
    tl = default[0]
    yard = tomllib.loads((REPO / "ceremony" / "courtyard.toml").read_text(encoding="utf-8"))
    bu = yard["bu_m"]
    assert [(h["name"], h["distance_bu"]) for h in tl["rite"]["hou"]] == [("大侯", 90), ("参", 70), ("干", 50)]
    for h in tl["rite"]["hou"]:
        assert h["position_m"][1] == pytest.approx(-h["distance_bu"] * bu, abs=1e-3)
        assert h["fa_m"][:2] == pytest.approx((-10 * bu, h["position_m"][1] + 10 * bu), abs=1e-3)
        huo, fu = tl["instruments"][f"获者·{h['name']}"], tl["instruments"][f"负侯者·{h['name']}"]
        assert (h["huozhe"], h["fuhou"]) == (f"获者·{h['name']}", f"负侯者·{h['name']}")
        assert huo["position_m"][:2] == pytest.approx(h["fa_m"][:2]), h["name"]
        assert fu["position_m"][:2] == pytest.approx([h["fa_m"][0], h["position_m"][1]]), h["name"]
        assert huo["xian"] == fu["xian"] == "侯"
    for template in ("获者", "负侯者"):
        data = tomllib.loads((REPO / "instruments" / f"{template}.toml").read_text(encoding="utf-8"))
        assert data["at_hou"] in ("乏", "乏南") and template not in tl["instruments"]


# ---- round 3: the 负侯 posted again before the 公 (「其他如初仪」 [001]; O17) ----------------------

def _round3_repost(tl, cue_ids):
    """The 负侯者's notes in ``cue_ids`` between the last 三耦 stroke and the 公's first."""
    beats = [b for b in tl["beats"] if b["shoot"]]
    last_sanou = max(b["time"] for b in beats if b["pair"] in ("上耦", "次耦", "下耦"))
    first_gong = min(b["time"] for b in beats if b["archer"] == "公")
    return [n for n in tl["notes"] if n["instrument"] in FUHOU and n["cue"] in cue_ids
            and last_sanou < n["time"] < first_gong], first_gong


def test_o17_lianzou_reposts_the_hou_inside_the_running_shejie(default):
    """连奏: the three bearers' 诺 (spoken in round 3, O16) sound inside the 射节 cue before the 公's
    first stroke, and the music does not stop: the sung line runs on through them, one syllable
    every jie_seconds / syllables_per_jie (间若一)."""
    tl, _, _ = default
    assert "round3_gong_quhou" not in {c["id"] for c in tl["cues"]}
    nuo, first_gong = _round3_repost(tl, {"lishou"})
    assert {n["instrument"] for n in nuo} == FUHOU and all(n["hz"] is None for n in nuo)
    (t,) = {n["time"] for n in nuo}
    sheet = tomllib.loads(SHEET.read_text(encoding="utf-8"))
    step = sheet["shejie"]["jie_seconds"] / sheet["shejie"]["syllables_per_jie"]
    sung = sorted(n["time"] for n in tl["notes"] if n["cue"] == "lishou" and n["instrument"] == "歌")
    assert np.diff(sung).max() == pytest.approx(step) and sung[0] < t < sung[-1]
    lishou = next(c for c in tl["cues"] if c["id"] == "lishou")
    assert t in lishou["phrases"]                    # at a 节's start: the 公's pair's first


def test_o17_gongyuezuo_reposts_the_hou_in_a_cue_of_its_own(tmp_path):
    """公乐作: the 三耦's 射节 cue ends, the calls cue round3_gong_quhou sounds the 诺, then the 射节
    begins anew for the 公 (lishou_gong, its sung line from the tune's first syllable)."""
    tl, _, _ = compile_json(tmp_path, sheet_copy(tmp_path, set_variant("lishou_span", "公乐作")), "gyz")
    ids = [c["id"] for c in tl["cues"]]
    k = ids.index("lishou")
    assert ids[k:k + 3] == ["lishou", "round3_gong_quhou", "lishou_gong"]
    cues = {c["id"]: c for c in tl["cues"]}
    assert cues["round3_gong_quhou"]["kind"] == "calls" and "其他如初仪" in cues["round3_gong_quhou"]["source"]
    nuo, _ = _round3_repost(tl, set(ids))
    assert {n["cue"] for n in nuo} == {"round3_gong_quhou"} and {n["instrument"] for n in nuo} == FUHOU
    assert {b["pair"] for b in tl["beats"] if b["cue"] == "lishou"} == {"上耦", "次耦", "下耦"}
    assert min(b["time"] for b in tl["beats"] if b["archer"] == "公") > cues["round3_gong_quhou"]["end"]
    first_words = [sorted((n for n in tl["notes"] if n["cue"] == cid and n["instrument"] == "歌"),
                          key=lambda n: n["time"])[0]["lyric"] for cid in ("lishou", "lishou_gong")]
    assert first_words[0] == first_words[1]          # the tune begun again for the 公
