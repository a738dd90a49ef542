"""The shot reader (plain and quoted CSV, blanks, CRLF, extra columns) against Python's csv
module's own reading of generated logs (hypothesis): times, names, categories and pair groups."""

from __future__ import annotations

import csv
import io
import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rite_support import HOU as TARGETS
from rite_support import RANKS as ARCHER_RANKS
from yuexuan.rite.vocabulary import MISSES as MISS_RESULTS
from yuexuan.rite.vocabulary import RESULTS, ROLES
from yuexuan.scoring.shots import read_shots

names = st.text(alphabet=st.sampled_from("甲乙丙丁射者耦abcXYZ012-_.·公宾 "), min_size=1,
                max_size=12).filter(lambda s: s.strip())
blank = st.sampled_from(["", " ", "  ", "\t"])


@st.composite
def logs(draw):
    n = draw(st.integers(1, 40))
    crlf = draw(st.booleans())
    extra = draw(st.booleans())            # an extra column the reader ignores
    header = ["time", "archer", "rank", "role", "target", "result", "pair", "round"]
    order = draw(st.permutations(header))
    if extra:
        order = list(order) + ["note"]
    rows = []
    for _ in range(n):
        result = draw(st.sampled_from(RESULTS))
        target = "" if result in MISS_RESULTS else draw(st.sampled_from(TARGETS))
        t = draw(st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False))
        row = {"time": repr(t), "archer": draw(names), "rank": draw(st.sampled_from(ARCHER_RANKS)),
               "role": draw(st.sampled_from(ROLES)), "target": target, "result": result,
               "pair": draw(st.one_of(st.just(""), names)),
               "round": draw(st.sampled_from(["", "1", "2", "3"])), "note": "x"}
        pad = draw(blank)
        rows.append([pad + row[k] + draw(blank) if k not in ("archer", "pair") else row[k]
                     for k in order])
    eol = "\r\n" if crlf else "\n"
    if draw(st.booleans()):          # quoted: the csv-module path
        buf = io.StringIO()
        csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator=eol).writerows([list(order)] + rows)
        return buf.getvalue()
    return eol.join(",".join(r) for r in [list(order)] + rows) + draw(st.sampled_from(["", eol]))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=logs())
def test_reader_agrees_with_the_csv_module(tmp_path, text):
    p = tmp_path / "shots.csv"
    p.write_text(text, encoding="utf-8", newline="")
    s = read_shots(p)
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    assert len(s) == len(rows)
    assert s.lines.tolist() == list(range(2, len(rows) + 2))
    for i, r in enumerate(rows):
        assert math.isclose(s.time[i], float(r["time"]), rel_tol=0, abs_tol=0)
        assert s.archers[i] == r["archer"].strip()
        assert s.rank_names[s.rank[i]] == r["rank"].strip() and ROLES[s.role[i]] == r["role"].strip()
        assert (s.target_names[s.target[i]] if s.target[i] >= 0 else "") == r["target"].strip()
        assert RESULTS[s.result[i]] == r["result"].strip()
        assert (s.pair_names[s.pair[i]] if s.pair[i] >= 0 else "") == r["pair"].strip()
        assert s.round[i] == int(r["round"].strip() or 3)
    # same value, same group: the grouping is exact
    pairs = [r["pair"].strip() for r in rows]
    for i in range(len(rows)):
        for j in range(len(rows)):
            assert (s.pair[i] == s.pair[j]) == (pairs[i] == pairs[j])
    assert np.all((s.pair >= 0) == np.array([bool(x) for x in pairs]))
