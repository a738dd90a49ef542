"""The live judge (yuexuan/live/judge.py) and its log (yuexuan/scoring/logwrite.py) against ``check``.

The independent evidence is ``yuexuan check`` itself, run on the log file the writer left on disk
and read back with the csv module: after every shot, the shot's live verdict must be the one
``check`` gives that row of the log so far, and the judge's rows must be all of check's rows.
"""

from __future__ import annotations

import csv
import io
import os

import numpy as np
import pytest
from cli_support import default_sigint

from yuexuan.cli import main
from yuexuan.data import DataSource
from yuexuan.live import judge as judge_mod
from rite_support import HOU as TARGETS
from yuexuan.rite.vocabulary import MISSES, RESULTS
from yuexuan.scoring import logwrite as logwriter
from yuexuan.scoring import rules

VERDICT = ("nearest_beat", "offset", "on_beat", "released", "reason")


@pytest.fixture(scope="module")
def saved(default_cues):
    """The cue sheet check reads, as a user runs it (a saved timeline's times are rounded to the
    microsecond, which moves a shot exactly between two strokes to the other one)."""
    return default_cues


def check_rows(capsys, saved, log, *options) -> tuple[list, str]:
    """``yuexuan check SAVED LOG --format csv`` in process: its rows (dicts of text), stderr."""
    code = main(["check", str(saved), str(log), "--format", "csv", *options])
    out, err = capsys.readouterr()
    assert code == 0, err
    return list(csv.DictReader(io.StringIO(out, newline=""))), err


def as_text(row: dict) -> dict:
    """A judge's row as ``check --format csv`` writes it."""
    buf = io.StringIO()
    csv.writer(buf).writerow([logwriter._cell(row[c]) for c in logwriter.COLUMNS])
    return dict(zip(logwriter.COLUMNS, next(csv.reader(io.StringIO(buf.getvalue())))))


def round3_arrows(timeline, seed: int) -> list:
    """One arrow per shooting stroke of the 射节, as a scorer reports it: a loose near the stroke
    (on it, 20 ms, 70 ms or 250 ms off) and a shot 1.5–2.6 s later (so a loose of the next arrow
    may come before the last shot), some with no loose at all."""
    rng = np.random.default_rng(seed)
    out = []
    for b in timeline.beats:
        if not (b.shoot and b.archer):
            continue
        off = float(rng.choice([0.0, 0.02, -0.02, 0.07, -0.07, 0.25, -0.25, 0.6]))
        hit = rng.random() < 0.6
        result = "贯" if hit else str(rng.choice([r for r in RESULTS if r != "贯"]))
        own = {"公": "大侯", "宾": "大侯", "卿": "参", "大夫": "参", "士": "干"}[b.rank]
        target = "" if result in MISSES else (
            own if rng.random() < 0.8 else str(rng.choice(TARGETS)))
        fields = {"archer": b.archer, "rank": b.rank, "role": b.role, "target": target,
                  "result": result, "pair": b.pair, "round": 3}
        loose = None if rng.random() < 0.15 else b.time + off
        out.append((loose, b.time + off + float(rng.uniform(1.5, 2.6)), fields))
    return out


def events(arrows) -> list:
    """(time, kind, payload) in arrival order: looses and shots interleaved."""
    ev = [(loose, 0, (f["archer"], loose)) for loose, _, f in arrows if loose is not None]
    ev += [(land, 1, f) for _, land, f in arrows]
    return sorted(ev, key=lambda e: (e[0], e[1]))


def test_every_live_verdict_is_checks_on_the_log_so_far(capsys, tmp_path, default_timeline, saved):
    """The whole 射节, 64 arrows: after each shot check reads the fsynced log; its row n is the
    live verdict of shot n, and every earlier row equals the judge's latest; the round ends with
    check's announcement exactly when the last of the roster's arrows is in."""
    rs = rules.rules_for(default_timeline, DataSource())
    judge = judge_mod.Judge(rs, judge_mod.round_rosters(default_timeline))
    arrows = round3_arrows(default_timeline, seed=13)
    assert len(arrows) == 4 * len(judge.rosters[3]) == 64
    log = tmp_path / "live.csv"
    ends = []
    with logwriter.ShotLogWriter(log) as writer:
        for t, kind, payload in events(arrows):
            if kind == 0:
                assert judge.loose(*payload) is None
                continue
            js = judge.shot(payload, t)
            assert not isinstance(js, judge_mod.ShotError), js
            writer.write(js.row)
            got, _ = check_rows(capsys, saved, log)
            assert len(got) == js.number
            assert {k: got[-1][k] for k in VERDICT} == {k: as_text(js.row)[k] for k in VERDICT}
            assert got == [as_text(r) for r in judge.rows]     # earlier rows, as revised
            assert js.released == (got[-1]["released"] == "true") and js.reason == got[-1]["reason"]
            if js.round_end:
                ends.append((js.number, js.round_end))
    reasons = [r["reason"] for r in judge.rows]
    assert "释" in reasons and "不鼓不释" in reasons          # both sides of the drum were tried
    _, err = check_rows(capsys, saved, log)
    (number, end), = ends
    assert number == 64 and end.round == 3
    assert f"round 3: 右 {end.right} 算, 左 {end.left} 算 — {end.announcement}" in err


def test_loose_time_is_judged_not_the_landing(default_timeline):
    """A loose on the stroke with 贯 is released; 250 ms off is refused 不鼓不释; a shot without a
    loose takes its own time. One loose pending an archer: a newer one replaces a stray one (so
    it shifts none of his later shots); a loose outside the show, ahead of its clock or too old
    is refused; a pending loose too old when the shot comes is dropped (counted, warned)."""
    rs = rules.rules_for(default_timeline, DataSource())
    judge = judge_mod.Judge(rs, judge_mod.round_rosters(default_timeline),
                            span_s=(0.0, default_timeline.duration))
    b1, b2, b3 = [b for b in default_timeline.beats if b.archer == "上耦上射"][:3]
    fields = {"archer": "上耦上射", "rank": "士", "role": "上射", "target": "干", "result": "贯",
              "pair": "上耦"}
    t1 = round(b1.time, 6)                                # the log's microseconds
    assert judge.loose("上耦上射", b1.time - 3.0, b1.time) is None     # a stray loose …
    assert judge.loose("上耦上射", b1.time, b1.time) == judge_mod.Replaced(round(b1.time - 3, 6))
    assert judge.pending("上耦上射") == (t1,) and judge.looses_replaced == 1
    first = judge.shot(fields, b1.time + 1.0)
    assert (first.reason, first.row["time"], first.loose_s) == ("释", t1, t1)
    assert judge.pending("上耦上射") == ()
    # refused: outside the show (1e9 s), ahead of the clock by more than the tolerance, too old
    for t, now, says in ((1e9, b2.time, "outside the show"), (b2.time + 0.5, b2.time, "ahead"),
                         (b2.time - 9.0, b2.time, "old")):
        err = judge.loose("上耦上射", t, now)
        assert isinstance(err, judge_mod.ShotError) and says in err.message, err
    assert judge.looses_refused == 3 and judge.pending("上耦上射") == ()
    judge.loose("上耦上射", b2.time + 0.25, b2.time + 0.25)
    second = judge.shot(fields, b2.time + 1.8)
    assert first.huo and second.huo                       # the 获者 calls a 贯 on his own 侯
    assert (second.reason, second.row["offset"]) == ("不鼓不释", 0.25)
    judge.loose("上耦上射", b3.time - 1.0, b3.time - 1.0)    # its shot comes 9 s later: stale
    third = judge.shot(fields, b3.time + 8.3123456789)
    assert third.loose_s is None and third.row["time"] == round(b3.time + 8.3123456789, 6)
    assert judge.looses_expired == 1 and "dropped" in third.warnings[-1]
    assert [t["round"] for t in third.tallies] == [3] and third.tallies[0]["右"] == 1
    judge.undo(third)                                     # its row could not be logged
    assert len(judge) == 2 and judge.rows[-1]["time"] == second.row["time"]
    assert judge.shot(fields, b3.time).number == 3


def test_bad_shots_are_refused_and_nothing_is_kept(default_timeline):
    rs = rules.rules_for(default_timeline, DataSource())
    judge = judge_mod.Judge(rs, judge_mod.round_rosters(default_timeline))
    judge.loose("士乙", 1200.0)
    good = {"archer": "士乙", "rank": "士", "role": "上射", "target": "干", "result": "贯"}
    for change, column in (({"rank": "王"}, "rank"), ({"result": "中"}, "result"),
                           ({"target": ""}, "target"), ({"round": 4}, "round"),
                           ({"archer": "无名"}, "archer"), ({"result": "不中"}, "target")):
        err = judge.shot(good | change, 1201.5)
        assert isinstance(err, judge_mod.ShotError) and err.column == column, (change, err)
    assert len(judge) == 0 and judge.pending("士乙") == (1200.0,)    # the loose still pending
    assert isinstance(judge.loose("无名", 1.0), judge_mod.ShotError)
    assert isinstance(judge.loose("士乙", float("nan")), judge_mod.ShotError)
    assert judge.shot(good, 1201.5).number == 1


def test_a_later_partner_revises_an_earlier_verdict(default_timeline):
    """「卑者与尊者为耦，不异侯」: the 士 paired with a 大夫 shoots the 参. Until the 大夫's first
    shot is in, check (on that log) sees the 士 alone on the 干; the judge says which earlier
    verdict the new shot changed."""
    rs = rules.rules_for(default_timeline, DataSource())
    judge = judge_mod.Judge(rs, None)
    shi = judge.shot({"archer": "士甲", "rank": "士", "role": "下射", "target": "参", "result": "贯",
                      "pair": "大夫二耦", "round": 2}, 980.0)
    assert shi.reason == "非其侯" and not shi.huo
    dafu = judge.shot({"archer": "大夫丙", "rank": "大夫", "role": "上射", "target": "参",
                       "result": "贯", "pair": "大夫二耦", "round": 2}, 982.0)
    assert dafu.reason == "释"
    assert [(n, r["reason"]) for n, r in dafu.revised] == [(1, "释")]
    assert dafu.tallies == [{"round": 2, "右": 1, "左": 1, "winner": None, "chun": 0, "qi": 0,
                             "announcement": "左右钧"}]


def test_the_gong_misses_give_the_da_she_zheng_call(default_timeline):
    rs = rules.rules_for(default_timeline, DataSource())
    judge = judge_mod.Judge(rs, judge_mod.round_rosters(default_timeline))
    js = judge.shot({"archer": "公", "rank": "公", "role": "下射", "target": "", "result": "留",
                     "pair": "公耦"}, 1190.0)
    assert (js.zheng, js.huo, js.reason) == ("留", False, "不中")


@pytest.mark.parametrize("options", [("--own-jie",), ("--strict-gong", "--tolerance", "0.03")])
def test_judging_options_are_checks(capsys, tmp_path, default_timeline, saved, options):
    """The options reach the judge through the same rules.rules_from_args as check's."""
    import argparse
    p = argparse.ArgumentParser()
    rules.add_arguments(p)
    rs = rules.rules_from_args(p.parse_args(list(options)), default_timeline, DataSource())
    judge = judge_mod.Judge(rs, judge_mod.round_rosters(default_timeline))
    log = tmp_path / "live.csv"
    with logwriter.ShotLogWriter(log) as writer:
        for t, kind, payload in events(round3_arrows(default_timeline, seed=7)):
            if kind == 0:
                judge.loose(*payload)
            else:
                writer.write(judge.shot(payload, t).row)
    got, _ = check_rows(capsys, saved, log, *options)
    assert [{k: g[k] for k in VERDICT} for g in got] == \
        [{k: as_text(r)[k] for k in VERDICT} for r in judge.rows]


# -- the log --------------------------------------------------------------------------------

ROW = {"time": 1215.32, "archer": "上耦上射", "rank": "士", "role": "上射", "target": "干",
       "result": "贯", "pair": "上耦", "round": 3, "nearest_beat": 1215.3, "offset": 0.02,
       "on_beat": True, "released": True, "reason": "释"}


def test_each_row_is_fsynced_and_the_header_written_once(tmp_path, monkeypatch):
    synced = []
    real = os.fsync
    monkeypatch.setattr(logwriter.os, "fsync", lambda fd: (synced.append(fd), real(fd)))
    log = tmp_path / "log.csv"
    with logwriter.ShotLogWriter(log) as w:
        w.write(ROW)
        after_one = len(synced)
        w.write(ROW | {"archer": "a,\"b\"\nc"})
    assert after_one == 2 and len(synced) == 3          # header, then one fsync a row
    with logwriter.ShotLogWriter(log) as w:               # a resumed show appends
        w.write(ROW | {"round": 2, "on_beat": None, "nearest_beat": None, "offset": None})
    rows = list(csv.reader(io.StringIO(log.read_text(encoding="utf-8"), newline="")))
    assert rows[0] == list(logwriter.COLUMNS) and len(rows) == 4
    assert rows[1][:3] == ["1215.32", "上耦上射", "士"] and rows[1][10:] == ["true", "true", "释"]
    assert rows[2][1] == "a,\"b\"\nc" and rows[3][8:11] == ["", "", ""]
    assert log.read_bytes().endswith(b"\r\n")


def test_a_cut_last_line_is_read_with_a_warning_and_dropped_on_reopen(capsys, tmp_path, saved):
    log = tmp_path / "log.csv"
    with logwriter.ShotLogWriter(log) as w:
        w.write(ROW)
    whole = log.read_bytes()
    second = ("1217.41,上耦下射,士,下射,干,贯,上耦,3,1217.3,0.11,false,false,不鼓不释\r\n"
              .encode("utf-8"))
    for cut in (5, 30, 31, len(second) - 30):           # 31: inside a 3-byte character
        log.write_bytes(whole + second[:cut])
        got, err = check_rows(capsys, saved, log)
        assert len(got) == 1 and got[0]["reason"] == "释"
        assert f"{log}:3: the last line is cut short" in err and "warning" in err
    with logwriter.ShotLogWriter(log) as w:
        assert "cut short" in w.repaired
        w.write(ROW | {"time": 1217.41})
    got, err = check_rows(capsys, saved, log)
    assert [g["time"] for g in got] == ["1215.32", "1217.41"] and "cut short" not in err
    log.write_bytes(b"time,archer,ra")                    # even the header cut
    with logwriter.ShotLogWriter(log) as w:
        assert w.repaired
        w.write(ROW)                   # the first row comes with the header, in one replace
    assert log.read_bytes() == whole
    log.unlink()
    with logwriter.ShotLogWriter(log):  # no row: play leaves no log (never a header alone)
        pass
    assert not log.exists()


def test_a_file_that_is_not_a_live_log_is_refused(tmp_path):
    other = tmp_path / "notes.csv"
    other.write_text("time,archer\n1,a\n", encoding="utf-8")
    with pytest.raises(Exception, match="not a live shot log"):
        logwriter.ShotLogWriter(other)
    assert other.read_text(encoding="utf-8") == "time,archer\n1,a\n"


def test_a_correction_rejudges_and_the_rewritten_log_is_checks(capsys, tmp_path, default_timeline,
                                                                saved):
    """/yuexuan/correct: the sensor's 贯 was a 扬触 (not pierced): refused 不贯不释, the tally moves,
    and check on the rewritten log gives the judge's rows."""
    rs = rules.rules_for(default_timeline, DataSource())
    judge = judge_mod.Judge(rs, judge_mod.round_rosters(default_timeline))
    strokes = [b for b in default_timeline.beats if b.archer in ("上耦上射", "上耦下射")][:4]
    log = tmp_path / "live.csv"
    with logwriter.ShotLogWriter(log) as writer:
        for b in strokes:
            judge.loose(b.archer, b.time)
            writer.write(judge.shot({"archer": b.archer, "rank": b.rank, "role": b.role,
                                     "target": "干", "result": "贯", "pair": b.pair},
                                    b.time + 1.2).row)
        assert [t["右"] for t in judge.verdict.tallies] == [2]
        fixed = judge.correct("上耦上射", 2, "扬触")
        assert (fixed.number, fixed.reason, fixed.row["result"], fixed.row["target"]) == \
            (3, "不贯不释", "扬触", "干")
        assert fixed.tallies[0]["右"] == 1 and fixed.round_end is None
        missed = judge.correct("上耦下射", 1, "留")
        assert (missed.row["target"], missed.reason) == (None, "不中")
        writer.rewrite(judge.rows)                          # the writer goes on after it
        writer.write(judge.shot({"archer": "次耦上射", "rank": "士", "role": "上射", "target": "干",
                                 "result": "贯", "pair": "次耦"}, strokes[-1].time + 9).row)
    got, _ = check_rows(capsys, saved, log)
    assert got == [as_text(r) for r in judge.rows] and len(got) == 5
    assert [g["reason"] for g in got[:4]] == ["释", "不中", "不贯不释", "释"]
    for bad in (("无人", 1, "贯"), ("上耦上射", 5, "贯"), ("上耦上射", 1, "中")):
        assert isinstance(judge.correct(*bad), judge_mod.ShotError)
    assert not list(tmp_path.glob(".live.csv.*"))         # no temporary file left


KILLED_WRITER = r"""
import sys
from yuexuan.scoring import logwrite as logwriter
row = dict(time=1215.32, archer="上耦上射", rank="士", role="上射", target="干", result="贯",
           pair="上耦", round=3, nearest_beat=1215.3, offset=0.02, on_beat=True, released=True,
           reason="释")
with logwriter.ShotLogWriter(sys.argv[1]) as w:
    rows = []
    for k in range(100000):
        r = dict(row, time=1000.0 + k)
        rows.append(r)
        if k % 50 == 49:
            w.rewrite(rows)                 # now and then a correction's rewrite
        else:
            w.write(r)
        print(k + 1, flush=True)            # confirmed: on disk
"""


KILL_DELAYS_S = (0.5, 0.65, 0.8, 0.95, 1.1, 1.3)


def _killed_writer(log, delay_s: float) -> int:
    """Run KILLED_WRITER on ``log`` and SIGKILL it ``delay_s`` after its first confirmed row;
    the number of rows it had confirmed."""
    import signal
    import subprocess
    import sys
    import threading
    import time
    child = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(log)],
                             stdout=subprocess.PIPE, text=True, preexec_fn=default_sigint)
    lines, first = [], threading.Event()

    def read():                         # drained all along: a full pipe would stall the writer
        for line in child.stdout:
            lines.append(line)
            first.set()
        first.set()

    reader = threading.Thread(target=read)
    reader.start()
    first.wait(60)
    time.sleep(delay_s)
    child.send_signal(signal.SIGKILL)
    child.wait()
    reader.join()
    return int(lines[-1]) if lines else 0


@pytest.fixture(scope="module")
def killed_logs(tmp_path_factory) -> dict:
    """{delay: (log, rows confirmed)}: the writers of every delay run side by side (the kill
    moments, not the machine's speed, are what the delays vary)."""
    from concurrent.futures import ThreadPoolExecutor
    d = tmp_path_factory.mktemp("killed")
    logs = {delay: d / f"live-{delay}.csv" for delay in KILL_DELAYS_S}
    with ThreadPoolExecutor(len(logs)) as pool:
        confirmed = dict(zip(logs, pool.map(_killed_writer, logs.values(), logs)))
    return {delay: (logs[delay], confirmed[delay]) for delay in logs}


@pytest.mark.parametrize("delay_s", KILL_DELAYS_S)
def test_sigkill_keeps_every_confirmed_row(capsys, killed_logs, saved, delay_s):
    """SIGKILL at any moment: every row whose write (or rewrite) had returned is in the log, whole
    and in order, and check reads the log (a cut last line with a warning)."""
    log, confirmed = killed_logs[delay_s]
    assert confirmed > 0                                  # killed while writing
    got, err = check_rows(capsys, saved, log)
    times = [float(g["time"]) for g in got]
    assert times[:confirmed] == [1000.0 + k for k in range(confirmed)], (confirmed, len(got))
    assert len(times) <= confirmed + 1                    # at most the row being written
    print(f"killed {delay_s} s after its first row: {confirmed} rows confirmed, {len(times)} read back")
