"""The 射节 pattern as a setting (variant shejie_pattern, O33): the grid, 鲁鼓 and 薛鼓 of 《礼记·投壶》.

The scores are read from ../shared/scores.md (not from ceremony/variants.toml): compiling with each
option gives a 射节 cue whose strokes, 节 after 节, read back as the score (○ a 鼙 note, □ a 建鼓
note); ``check`` judges shot logs whose times were worked out here by hand from the score (stroke k
of a 节 at k × stroke_seconds), on the default rule and with ``--own-jie``.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict

import pytest

from yuexuan.cli import main
from yuexuan.commands.variants import listing
from yuexuan.compiler import compile_path
from yuexuan.rite import variants

HEADER = "time,archer,rank,role,target,result,pair,round\n"
BEI = {"朔鼙": "○", "应鼙": "○"}


def scores(root) -> dict[str, str]:
    """{鲁鼓, 薛鼓: the score with its 半} as ../shared/scores.md writes them."""
    path = root.parent / "shared" / "scores.md"
    if not path.exists():
        pytest.fail(f"{path} is absent: the tests need ../shared beside the checkout")
    return dict(re.findall(r"^\s*(鲁鼓|薛鼓) ([○□半]+)\s*$", path.read_text(encoding="utf-8"), re.M))


def sheet(default_cues, tmp_path, pattern, mapping="节一终"):
    text = default_cues.read_text(encoding="utf-8")
    for key, value in (("shejie_pattern", pattern), ("score_mapping", mapping)):
        assert re.search(rf'^{key} = "', text, re.M), key
        text = re.sub(rf'^{key} = "[^"]*"', f'{key} = "{value}"', text, count=1, flags=re.M)
    p = tmp_path / f"{pattern}-{mapping}.toml"
    p.write_text(text, encoding="utf-8")
    return p


def test_variants_lists_the_pattern_setting():
    lines = listing(variants.load())
    at = next(i for i, x in enumerate(lines) if x.startswith("shejie_pattern"))
    assert "O33" in lines[at]
    options = [x.split(":")[0].strip(" *") for x in lines[at + 1:at + 12] if x.startswith("  ") and ":" in x
               and not x.strip().startswith(("→", "effect"))]
    assert options[:3] == ["网格", "鲁鼓", "薛鼓"]
    text = "\n".join(lines[at:at + 12])
    assert "INFERENCE" in text.split("鲁鼓:")[0] and text.count("OUTSIDE") >= 2


@pytest.mark.parametrize("pattern,mapping", [("鲁鼓", "节一终"), ("薛鼓", "节一终"), ("鲁鼓", "矢一终")])
def test_each_jie_plays_the_score_in_order(root, default_cues, tmp_path, pattern, mapping):
    score = scores(root)[pattern]
    first, second = score.split("半")
    tl, _ = compile_path(sheet(default_cues, tmp_path, pattern, mapping), ["lishou"])
    cue = tl.cue("lishou")
    kinds = {name: f["kind"] for name, f in tl.instruments.items()}
    strokes = defaultdict(set)                 # time -> drums struck then
    for n in tl.notes:
        if n.instrument in BEI or kinds.get(n.instrument) == "建鼓":
            strokes[round(n.time, 6)].add(BEI.get(n.instrument, "□"))
    times = sorted(strokes)
    assert all(len(strokes[t]) == 1 for t in times), "a ○ and a □ at one time"
    marks = "".join(strokes[t].pop() for t in times)
    playings = 1 if mapping == "节一终" else 2
    per_jie = playings * (first + second)
    n_jie = len(cue.phrases)
    assert marks == per_jie * n_jie                      # every 节 the whole score, in order
    assert times[1] - times[0] == pytest.approx(0.5)     # [shejie] stroke_seconds
    # the beats are the □ strokes; the arrows are loosed on the last □ of each half (节一终) or of
    # each playing (矢一终)
    gu = [t for t, m in zip(times, marks) if m == "□"]
    assert [b.time for b in tl.beats] == pytest.approx(gu)
    n = len(first + second)
    release = ([first.rindex("□"), len(first) + second.rindex("□")] if mapping == "节一终"
               else [len(first) + second.rindex("□"), n + len(first) + second.rindex("□")])
    for b in tl.beats:
        if b.shoot:
            k = round((b.time - cue.phrases[0]) / 0.5) % (playings * n)
            assert k in release, (b, k)
    shots = [b for b in tl.beats if b.shoot]
    assert len(shots) == 8 * len({b.pair for b in tl.beats})
    # the ○ strokes of a playing go 朔鼙, 应鼙, 朔鼙 … (先击朔鼙)
    bei = [n.instrument for n in sorted(tl.notes, key=lambda n: n.time) if n.instrument in BEI]
    assert bei[:3] == ["朔鼙", "应鼙", "朔鼙"]


# Hand-judged: the 射节 cue starts at S; 3 heard 节 of length J, then the 上耦's shooting 节 1. The
# times below are seconds after S, worked out from the score (stroke k at 0.5 k s into its 节).
#   网格: J = 4; □ at 1.0 and 3.0 of each 节.
#   鲁鼓 节一终: J = 23 × 0.5 = 11.5; 节 1 of shooting at 34.5; last □ of the first half is stroke 10
#       (+5.0 → 39.5), of the score stroke 21 (+10.5 → 45.0); 节 2 starts with a ○ at 46.0.
#   薛鼓 节一终: J = 14; shooting at 42.0; last □ of the halves: strokes 18 (51.0) and 26 (55.0).
#   鲁鼓 矢一终: J = 23; shooting at 69.0; last □ of each playing: strokes 21 (79.5) and 44 (91.0).
# The 次耦's turn starts at 7 J; its first □ is stroke 1 (网格: at 1.0).
HAND = {("网格", "节一终"): (13.0, 15.0, 16.0, 29.0),
        ("鲁鼓", "节一终"): (39.5, 45.0, 46.0, 81.0),
        ("薛鼓", "节一终"): (51.0, 55.0, 56.0, 98.5),
        ("鲁鼓", "矢一终"): (79.5, 91.0, 92.0, 161.5)}


@pytest.mark.parametrize("pattern,mapping", list(HAND))
def test_check_judges_against_the_patterns_strokes(capsys, default_timeline, default_cues, tmp_path,
                                                   pattern, mapping):
    up, down, bei, next_gu = HAND[pattern, mapping]
    start = default_timeline.cue("lishou").start          # the cues before it do not change
    log = tmp_path / "shots.csv"
    log.write_text(HEADER + f"{up + 0.03},上耦上射,士,上射,干,贯,上耦,3\n"      # on his stroke
                            f"{down - 0.02},上耦下射,士,下射,干,贯,上耦,3\n"     # on his stroke
                            f"{bei},上耦上射,士,上射,干,贯,上耦,3\n"             # on a 鼙 (○) only
                            f"{next_gu},上耦下射,士,下射,干,贯,上耦,3\n",        # a □ not his own
                   encoding="utf-8")
    cues = sheet(default_cues, tmp_path, pattern, mapping)
    reasons = {}
    for opts in ((), ("--own-jie",)):
        code = main(["check", str(cues), str(log), "--format", "json", "--offset", str(start),
                     "--cue", "lishou", *opts])
        out, err = capsys.readouterr()
        assert code == 0, err
        doc = json.loads(out)
        reasons[opts] = [s["reason"] for s in doc["shots"]]
        assert doc["shots"][0]["nearest_beat"] == pytest.approx(start + up)
    assert reasons[()] == ["释", "释", "不鼓不释", "释"]
    assert reasons[("--own-jie",)] == ["释", "释", "不鼓不释", "不鼓不释"]
    # the live judge (play --osc) on the same arrows: loosed at the log's times, landed 1 s later
    from yuexuan.data import DataSource
    from yuexuan.live.judge import Judge, round_rosters
    from yuexuan.scoring.rules import rules_for
    tl, _ = compile_path(cues)
    rows = [r.split(",") for r in log.read_text(encoding="utf-8").splitlines()[1:]]
    for own in (False, True):
        judge = Judge(rules_for(tl, DataSource(), own_jie=own), round_rosters(tl))
        live = []
        for t, archer, rank, role, target, result, pair, rnd in rows:
            assert judge.loose(archer, start + float(t)) is None
            live.append(judge.shot({"archer": archer, "rank": rank, "role": role, "target": target,
                                    "result": result, "pair": pair, "round": rnd},
                                   start + float(t) + 1.0).reason)
        assert live == reasons[("--own-jie",) if own else ()], own


@pytest.mark.parametrize("old,new,key,fragment", [
    ('id = "zouyu"', 'id = "gai"', "by_piece.驺虞.id", "is the id of cue["),
    ('[cue.by_piece."采蘩"]', '[cue.by_piece."采薇"]', "by_piece.采薇", "unknown piece '采薇'"),
    ('score_mapping = "节一终"', 'score_mapping = "耦一终"', "shejie.score_mapping", "unknown value '耦一终'"),
    ('stroke_seconds = 0.5', 'stroke_seconds = 0.0', "shejie.stroke_seconds", "too small"),
])
def test_a_bad_setting_is_one_error_naming_its_key(default_cues, tmp_path, old, new, key, fragment):
    from yuexuan.errors import UserError
    text = default_cues.read_text(encoding="utf-8")
    assert old in text
    p = tmp_path / "bad.toml"
    p.write_text(text.replace(old, new, 1), encoding="utf-8")
    with pytest.raises(UserError) as err:
        compile_path(p)
    line = str(err.value)
    assert str(p) in line and key in line and fragment in line and "\n" not in line, line


def test_the_midi_file_sounds_the_score(root, default_cues, tmp_path):
    """Read back from the written MIDI file (each instrument's track against the conductor's tempo
    map): the 鼙 and 建鼓 note-ons of 鲁鼓 spell the score, and the 建鼓's are the timeline's beats."""
    import mido

    from yuexuan.midi.smf import write_smf
    first, second = scores(root)["鲁鼓"].split("半")
    tl, _ = compile_path(sheet(default_cues, tmp_path, "鲁鼓"), ["lishou"])
    write_smf(tl, tmp_path / "l.mid")
    mf = mido.MidiFile(tmp_path / "l.mid", charset="utf-8")
    ons: dict[str, list[float]] = {}
    for track in mf.tracks[1:]:
        name = next(m.name for m in track if m.type == "track_name")
        one = mido.MidiFile(type=1, ticks_per_beat=mf.ticks_per_beat)
        one.tracks = [mf.tracks[0], track]
        t, times = 0.0, []
        for m in one:
            t += m.time
            if m.type == "note_on" and m.velocity:
                times.append(round(t, 3))
        ons[name] = times
    marks = {t: "○" for name in ("朔鼙", "应鼙") for t in ons[name]}
    marks.update({t: "□" for t in ons["建鼓·东"]})
    assert "".join(marks[t] for t in sorted(marks)) == (first + second) * len(tl.cue("lishou").phrases)
    assert ons["建鼓·东"] == pytest.approx([b.time for b in tl.beats], abs=2e-3)
