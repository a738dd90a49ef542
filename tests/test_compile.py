"""The compiler and its MIDI: read back with mido and music21 and compared with the timeline."""

from __future__ import annotations

import copy
import json
import math
import re
from collections import Counter, defaultdict
from pathlib import Path

import mido
import pytest

from yuexuan.compiler import compile_file
from yuexuan.formats.midimessages import DRUM_CHANNEL
from yuexuan.midi.smf import write_smf

TOL_S = 0.002            # MIDI tick rounding: 1 tick ≤ 0.65 ms at the slowest tempo here


def _midi_notes(path):
    """(time_s, track, channel, key, velocity, duration_s) of every note, by mido's own clock."""
    mf = mido.MidiFile(path, charset="utf-8")
    names = [t.name for t in mf.tracks]
    # walk each track with the tempo map of track 0, converting with mido.tick2second
    tempo_events = []
    tick = 0
    for m in mf.tracks[0]:
        tick += m.time
        if m.type == "set_tempo":
            tempo_events.append((tick, m.tempo))

    def seconds(abs_tick):
        s, last_tick, tempo = 0.0, 0, 500000
        for t, tp in tempo_events:
            if t > abs_tick:
                break
            s += mido.tick2second(t - last_tick, mf.ticks_per_beat, tempo)
            last_tick, tempo = t, tp
        return s + mido.tick2second(abs_tick - last_tick, mf.ticks_per_beat, tempo)

    out = []
    for ti, track in enumerate(mf.tracks):
        tick, on = 0, {}
        for m in track:
            tick += m.time
            if m.type == "note_on" and m.velocity > 0:
                on.setdefault((m.channel, m.note), []).append((tick, m.velocity))
            elif m.type in ("note_off", "note_on"):
                t0, vel = on[(m.channel, m.note)].pop(0)
                out.append((seconds(t0), names[ti], m.channel, m.note, vel, seconds(tick) - seconds(t0)))
    return sorted(out), mf


def test_midi_round_trip_with_mido(default_timeline, tmp_path):
    tl = default_timeline
    path = tmp_path / "d.mid"
    write_smf(tl, path)
    notes, mf = _midi_notes(path)
    assert mf.type == 1
    names = [t.name for t in mf.tracks]
    assert names[0] == "乐县"
    assert set(names[1:]) == {n.instrument for n in tl.notes}
    assert len(notes) == len(tl.notes)
    expected = sorted((n.time, n.instrument, n.midi, n.velocity, n.duration) for n in tl.notes)
    got = sorted((t, name, key, vel, dur) for t, name, ch, key, vel, dur in notes)
    for e, g in zip(expected, got):
        assert g[1:4] == e[1:4]
        assert abs(g[0] - e[0]) <= TOL_S and abs(g[4] - e[4]) <= TOL_S
    # drums and spoken calls (hz None) on channel 10, every pitched note on its body's own channel
    by_track = defaultdict(set)
    for _, name, ch, *_ in notes:
        by_track[name].add(ch)
    got_ch = sorted((t, name, key, ch) for t, name, ch, key, vel, dur in notes)
    for n, (_, name, key, ch) in zip(sorted(tl.notes, key=lambda n: (n.time, n.instrument, n.midi)), got_ch):
        assert (name, key) == (n.instrument, n.midi) and (ch == DRUM_CHANNEL) == (n.hz is None)
    unpitched = {n.instrument for n in tl.notes if n.hz is None}
    pitched = {n.instrument for n in tl.notes if n.hz is not None}
    for name, chans in by_track.items():
        assert (DRUM_CHANNEL in chans) == (name in unpitched)
        assert len(chans - {DRUM_CHANNEL}) == (1 if name in pitched else 0)
    # markers name every cue at its start; mido's own seconds clock agrees with the timeline
    markers, t = [], 0.0
    for m in mf:                       # merged, time in seconds via the tempo map
        t += m.time
        if m.type == "marker":
            markers.append((t, m.text))
    assert [txt.split(":")[0] for _, txt in markers] == [c.id for c in tl.cues]
    for (t, txt), c in zip(markers, tl.cues):
        assert abs(t - c.start) <= TOL_S and c.piece in txt
    assert len({m.tempo for m in mf.tracks[0] if m.type == "set_tempo"}) > 1   # a real tempo map


def test_mts_sysex_tunes_every_sounded_key(default_timeline, tmp_path):
    path = tmp_path / "d.mid"
    write_smf(default_timeline, path)
    mf = mido.MidiFile(path, charset="utf-8")
    tuned = {}
    for m in mf.tracks[0]:
        if m.type == "sysex" and list(m.data[:4]) == [0x7F, 0x7F, 0x08, 0x02]:
            d = list(m.data)
            for i in range(d[5]):
                key, xx, yy, zz = d[6 + 4 * i: 10 + 4 * i]
                tuned[key] = 440.0 * 2 ** ((xx + ((yy << 7) | zz) / 16384 - 69) / 12)
    for n in default_timeline.notes:
        if n.hz is not None:
            assert abs(1200 * math.log2(tuned[n.midi] / n.hz)) < 0.01
    # every pitched channel selects tuning program 0 by RPN 0x0003
    rpn = defaultdict(list)
    for tr in mf.tracks[1:]:
        for m in tr:
            if m.type == "control_change":
                rpn[m.channel].append((m.control, m.value))
    pitched_channels = {m.channel for tr in mf.tracks[1:] for m in tr
                        if m.type == "note_on" and m.channel != DRUM_CHANNEL}
    for ch in pitched_channels:
        seq = rpn[ch]
        assert ((101, 0) in seq and (100, 3) in seq and (6, 0) in seq)


def test_pitch_bend_mode(default_timeline, tmp_path):
    """Each pitched note-on is preceded, on its own track and channel at the same tick, by a pitch
    bend worth the note's offset from its key, computed here from its exact Hz."""
    path = tmp_path / "b.mid"
    write_smf(default_timeline, path, pitch_bend=True)
    mf = mido.MidiFile(path, charset="utf-8")
    assert not any(m.type == "sysex" for t in mf.tracks for m in t)
    bends = [m for t in mf.tracks for m in t if m.type == "pitchwheel"]
    pitched = [n for n in default_timeline.notes if n.hz is not None]
    assert len(bends) == len(pitched)
    paired = 0
    for track in mf.tracks[1:]:
        notes = [n for n in pitched if n.instrument == track.name]     # in timeline (= track) order
        ons, prev = [], None
        for m in track:
            if m.type == "note_on" and m.velocity > 0 and m.channel != DRUM_CHANNEL:
                ons.append((prev, m))
            prev = m
        assert len(ons) == len(notes), track.name
        for (bend, on), n in zip(ons, notes):
            assert on.note == n.midi
            assert bend is not None and bend.type == "pitchwheel" and bend.channel == on.channel
            assert on.time == 0                          # the bend's tick is the note's tick
            cents = 1200 * math.log2(n.hz / (440.0 * 2 ** ((n.midi - 69) / 12)))
            assert abs(bend.pitch / 8192 * 200 - cents) < 0.02     # 200/8192 cents a step
            paired += 1
    assert paired == len(pitched)


def test_music21_reads_the_same_notes(tmp_path):
    import music21
    tl = compile_file("cues/dashe.toml", ["luming"])
    path = tmp_path / "luming.mid"
    write_smf(tl, path)
    score = music21.converter.parse(str(path), quantizePost=False)
    by_part = {}
    for part in score.parts:
        name = part.partName or ""
        pitches = []
        for el in part.recurse().notes:
            for p in (el.pitches if el.isChord else [el.pitch]):
                pitches.append(p.midi)
        by_part[name] = pitches
    for inst in ("歌", "瑟"):
        expected = [n.midi for n in tl.notes if n.instrument == inst]
        got = next(v for k, v in by_part.items() if inst in k)
        assert got == expected
    # onsets in seconds, through music21's own tempo handling
    sung = [n for n in tl.notes if n.instrument == "歌"]
    part = next(p for p in score.parts if "歌" in (p.partName or ""))
    flat = part.flatten()
    smap = {round(e["offsetSeconds"], 3) for e in flat.secondsMap if isinstance(e["element"], music21.note.Note)}
    assert all(any(abs(s - n.time) < 0.003 for s in smap) for n in sung[:40])


RANK_SHEET = re.compile(r'^rank = "诸侯"', re.M)


def _with_rank(default_cues, tmp_path, rank):
    text = default_cues.read_text(encoding="utf-8")
    assert RANK_SHEET.search(text)
    p = tmp_path / f"{rank}.toml"
    p.write_text(RANK_SHEET.sub(f'rank = "{rank}"', text), encoding="utf-8")
    return p


@pytest.mark.parametrize("heard,per_pair", [(3, 7), (1, 5), (0, 4)])
def test_heard_jie_override_shortens_the_turn(default_cues, tmp_path, heard, per_pair):
    """heard_jie sets the heard 节 before the 4 shooting 节; the turn stays within the 诸侯's 7."""
    text = default_cues.read_text(encoding="utf-8").replace("[shejie]\n", f"[shejie]\nheard_jie = {heard}\n")
    p = tmp_path / "heard.toml"
    p.write_text(text, encoding="utf-8")
    beats = [b for b in compile_file(p, ["lishou"]).beats]
    by_pair = defaultdict(list)
    for b in beats:
        by_pair[b.pair].append(b)
    for bs in by_pair.values():
        assert max(b.jie for b in bs) == per_pair and sum(b.shoot for b in bs) == 8
        assert {b.jie for b in bs if not b.shoot} == set(range(1, heard + 1))


def test_heard_jie_beyond_the_rank_count_is_refused(cli, default_cues, tmp_path):
    """4 heard + 4 shooting 节 do not fit in a 诸侯's 7: one line naming shejie.heard_jie."""
    text = default_cues.read_text(encoding="utf-8").replace("[shejie]\n", "[shejie]\nheard_jie = 4\n")
    p = tmp_path / "heard.toml"
    p.write_text(text, encoding="utf-8")
    r = cli("compile", p, "-o", tmp_path / "x.mid")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    assert str(p) in r.stderr and "shejie.heard_jie" in r.stderr and "7 节" in r.stderr
    assert not (tmp_path / "x.mid").exists()


@pytest.mark.parametrize("rank,n_jie,n_pairs", [("诸侯", 7, 8), ("天子", 9, 12), ("卿大夫", 5, 5), ("士", 5, 5)])
def test_shejie_counts_by_rank(default_cues, tmp_path, rank, n_jie, n_pairs):
    """Each rank's 射节 count, for each pair of its roster (the 天子's 六耦 and 诸侯; a 卿大夫's or a
    士's rite has no 卿 or 大夫 pairs: ceremony/dashe.toml, the cue sheet's pair ``ranks``)."""
    tl = compile_file(_with_rank(default_cues, tmp_path, rank))
    beats = [b for b in tl.beats if b.cue == tl.cue("lishou").id]      # the alias names the 射节 cue
    per_pair = defaultdict(list)
    for b in beats:
        per_pair[b.pair].append(b)
    assert len(per_pair) == n_pairs == len(tl.rite.pairs)
    for pair, bs in per_pair.items():
        assert max(b.jie for b in bs) == n_jie
        assert sum(b.shoot for b in bs) == 8                     # 乘矢: four arrows each
        assert {b.jie for b in bs if not b.shoot} == set(range(1, n_jie - 3))   # N−4 heard (贾疏)


def test_shifa_order_and_gong_first(default_timeline):
    beats = [b for b in default_timeline.beats if b.cue == "lishou" and b.shoot]
    by_pair = defaultdict(list)
    for b in beats:
        by_pair[b.pair].append(b)
    for pair, bs in by_pair.items():
        roles = [b.role for b in sorted(bs, key=lambda b: b.time)]
        first = "下射" if pair == "公耦" else "上射"
        other = "上射" if first == "下射" else "下射"
        assert roles == [first, other] * 4
        arrows = Counter((b.archer, b.arrow) for b in bs)
        assert all(v == 1 for v in arrows.values()) and len(arrows) == 8
    gong = sorted(by_pair["公耦"], key=lambda b: b.time)
    assert gong[0].archer == "公" and gong[1].archer == "宾"


def test_jian_ruo_yi_equal_jie(default_timeline):
    tl = default_timeline
    shuo = [n.time for n in tl.notes if n.cue == "lishou" and n.instrument == "朔鼙"]
    gaps = [b - a for a, b in zip(shuo, shuo[1:])]
    assert len(shuo) == 8 * 7
    assert max(gaps) - min(gaps) < 1e-6
    # each 节: 朔鼙 first, 应鼙 answering, then 建鼓 with 鑮
    for t in shuo[:7]:
        ying = min(n.time for n in tl.notes if n.instrument == "应鼙" and n.time >= t)
        gu = min(n.time for n in tl.notes if n.instrument == "建鼓·东" and n.time >= t)
        bo = min(n.time for n in tl.notes if n.instrument == "鑮·东" and n.time >= t)
        assert t < ying < gu and gu == bo
    # every beat is a 建鼓 stroke
    gu_times = {round(n.time, 6) for n in tl.notes if n.instrument.startswith("建鼓")}
    assert all(round(b.time, 6) in gu_times for b in tl.beats)


# 风雅十二诗谱 《鹿鸣》 stanza 1 (scores.md): 律 line with the octave from the 工尺 line
# (六 = 黄清, 五 = 太清; the 31st note 大→太清 as scores.md says).
LUMING_1_LV = "黄南蕤姑南姑太黄蕤林应南林南黄林蕤林南姑应黄姑南林南黄姑林南太黄"
LUMING_1_GC = "六工勾一工一四合勾尺凡工尺工六尺勾尺工一凡六一工尺工合一尺工五六"
RATIO = {"黄": 1, "大": 2187 / 2048, "太": 9 / 8, "夹": 19683 / 16384, "姑": 81 / 64,
         "仲": 177147 / 131072, "蕤": 729 / 512, "林": 3 / 2, "夷": 6561 / 4096, "南": 27 / 16,
         "无": 59049 / 32768, "应": 243 / 128}
WORDS_1 = "呦呦鹿鸣食野之苹我有嘉宾鼓瑟吹笙吹笙鼓簧承筐是将人之好我示我周行"


def test_luming_follows_the_fengya_score_in_cents(default_timeline):
    tl = default_timeline
    sung = [n for n in tl.notes if n.cue == "luming" and n.instrument == "歌"]
    assert len(sung) == 3 * 103            # 郑玄: 鹿鸣 three times (32 + 36 + 35 syllables)
    ref = tl.ceremony.huangzhong_hz / 2    # the singers sound an octave below the reference
    for n, lv, gc, word in zip(sung, LUMING_1_LV, LUMING_1_GC, WORDS_1):
        octave = 1 if gc in "六五" else 0
        expected = 1200 * math.log2(RATIO[lv] * 2 ** octave)
        assert abs(1200 * math.log2(n.hz / ref) - expected) < 1e-6
        assert n.lyric == word
    se = [n for n in tl.notes if n.cue == "luming" and n.instrument == "瑟"]
    assert [n.hz for n in se] == [n.hz for n in sung]     # the 瑟 double the sung line


def test_ao_jigong_reading_sings_three_songs(default_cues, tmp_path):
    text = default_cues.read_text(encoding="utf-8").replace('luming_sanzhong = "郑玄"', 'luming_sanzhong = "敖继公"')
    p = tmp_path / "ao.toml"
    p.write_text(text, encoding="utf-8")
    tl = compile_file(p, ["luming"])
    words = "".join(n.lyric for n in tl.notes if n.instrument == "歌")
    assert words.startswith("呦呦鹿鸣") and "四牡騑騑" in words and words.endswith("周爰咨询")


def test_beat_s_of_a_cue_is_its_first_pieces_step(default_cues):
    """A 三终 mixing a sung and an unworded piece keeps the first's step as its beat, with a warning;
    each piece still moves at its own step (鹿鸣 1.2 s a syllable, 新宫 1.0 s a note)."""
    from yuexuan.compiler import compile_sheet
    from yuexuan.rite import cuesheet, instruments, pieces, suspension, variants

    vdefs = copy.deepcopy(variants.load())          # edited here, never the loaded tables
    vdefs["luming_sanzhong"]["options"]["郑玄"] = {"source": "test", "pieces": ["鹿鸣", "新宫", "鹿鸣"]}
    all_pieces, insts = pieces.load_all(), instruments.load_all()
    sheet = cuesheet.parse(default_cues, all_pieces, insts, vdefs)
    tl, warnings = compile_sheet(sheet, all_pieces, insts, suspension.load(), vdefs, ["luming"])
    assert tl.cue("luming").beat_s == 1.2
    assert any("luming" in w and "1.2, 1" in w for w in warnings), warnings
    onsets = sorted({n.time for n in tl.notes if n.instrument == "瑟"})
    steps = {round(b - a, 6) for a, b in zip(onsets, onsets[1:])}
    assert steps == {1.2, 1.0}


def test_sixia_xian_variant(default_cues, tmp_path):
    tl = compile_file(default_cues, ["sixia_bin", "sixia_gong"])
    assert {"颂钟", "颂磬"} <= set(tl.cue("sixia_bin").instruments)
    assert not {"笙钟", "笙磬"} & set(tl.cue("sixia_bin").instruments)
    assert {"笙钟", "笙磬"} <= set(tl.cue("sixia_gong").instruments)
    text = default_cues.read_text(encoding="utf-8").replace('sixia_xian = "敖继公"', 'sixia_xian = "盛世佐"')
    p = tmp_path / "sheng.toml"
    p.write_text(text, encoding="utf-8")
    tl2 = compile_file(p, ["sixia_bin", "sixia_gong"])
    for cid in ("sixia_bin", "sixia_gong"):          # 盛: the same for both — here both sides
        assert {"笙钟", "颂钟", "笙磬", "颂磬"} <= set(tl2.cue(cid).instruments)


def test_every_cue_quotes_its_source_and_marks_reconstructions(default_timeline):
    for c in default_timeline.cues:
        assert "「" in c.source and "」" in c.source
    recon = {c.piece for c in default_timeline.cues if c.reconstruction}
    assert {"肆夏", "新宫", "貍首", "陔", "骜"} <= recon
    assert not default_timeline.cue("luming").reconstruction


def test_selection_starts_at_zero(default_cues):
    tl = compile_file(default_cues, ["lishou"])
    assert tl.cues[0].start == 0.0 and [c.id for c in tl.cues] == ["lishou"]
    assert min(n.time for n in tl.notes) == 0.0


def test_timeline_json_contract(cli, tmp_path):
    out, js = tmp_path / "a.mid", tmp_path / "a.json"
    r = cli("compile", "cues/dashe.toml", "-o", out, "--timeline", js)
    assert r.returncode == 0, r.stderr
    d = json.loads(js.read_text(encoding="utf-8"))
    assert set(d["ceremony"]) >= {"name", "rank", "suspension", "huangzhong_hz"}
    assert d["ceremony"]["rank"] == "诸侯" and d["ceremony"]["suspension"] == "轩县"
    assert set(d["cues"][0]) >= {"id", "piece", "action", "start", "end", "instruments", "reconstruction", "source"}
    assert set(d["notes"][0]) >= {"time", "duration", "instrument", "cue", "midi", "hz", "velocity"}
    assert set(d["beats"][0]) >= {"time", "cue", "pair", "jie", "shoot", "role", "archer", "arrow"}
    drums = [n for n in d["notes"] if n["instrument"].startswith("建鼓")]
    assert drums and all(n["hz"] is None for n in drums)
    from yuexuan.timeline import from_dict, to_dict
    assert to_dict(from_dict(d)) == d


def test_a_data_file_read_again_is_parsed_as_tomllib_parses_it(tmp_path):
    """tomlfile.load memoises a parse by the file's text: a file read again gives tomllib's
    parse, a copy of its own (a caller changing one leaves the next alone), and a file whose
    text changed is parsed anew; instrument, piece and cue files drawn afresh (seed printed)."""
    import random
    import tomllib

    from yuexuan.rite import tomlfile

    root = Path(__file__).resolve().parent.parent
    seed = random.randrange(2 ** 32)
    rng = random.Random(seed)
    files = sorted((root / "instruments").glob("*.toml")) + sorted((root / "pieces").glob("*.toml")) + \
        [root / "cues" / "dashe.toml"]
    for path in rng.sample(files, 6):
        first, text = tomlfile.load(path)
        assert first == tomllib.loads(path.read_text(encoding="utf-8")), (seed, path)
        first.clear()
        again, _ = tomlfile.load(path)
        assert again == tomllib.loads(text) and again, (seed, path)
        edited = tmp_path / path.name
        edited.write_text(text + "\n[added_by_the_test]\nvalue = 1\n", encoding="utf-8")
        assert tomlfile.load(edited)[0]["added_by_the_test"] == {"value": 1}, (seed, path)
