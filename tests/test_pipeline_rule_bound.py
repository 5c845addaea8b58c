"""An audit of the rules' statuses on a count table: a pattern of primaries only tells an
intruder who knows the minimum-frequency rule that each suppressed count is below its
threshold; the audit models it (and only where that holds)."""
from __future__ import annotations

import numpy as np

from tabprotect.pipeline import run

JOB = """
[input]
cells = "cells.csv"
dimensions = ["g"]
value = "count"
kind = "frequency"
compute_totals = true
{status}
[rules.frequency]
n = 3

[output]
dir = "out"
"""


def _audit(tmp_path, cells, status=""):
    (tmp_path / "cells.csv").write_text(cells)
    (tmp_path / "job.toml").write_text(JOB.format(status=status))
    return run(tmp_path / "job.toml", task="audit")


def _interval(res, code):
    frame = res.audit.to_frame(confidential=True)
    row = frame[frame["g"] == code].iloc[0]
    return row["lower"], row["upper"]


def test_two_primaries_of_a_row_are_pinned_by_the_rule(tmp_path):
    # a + b = 4, each at least 1: [1, 3] meets the level 1 both ways without the rule;
    # knowing each is below 3, the intruder has a = b = 2
    res = _audit(tmp_path, "g,count\na,2\nb,2\nc,10\n")
    assert _interval(res, "a") == (2, 2)
    assert not res.audit.passed
    assert any("minimum-frequency rule" in n for n in res.notes)


def test_a_pattern_with_a_secondary_keeps_the_bound_open(tmp_path):
    # c given as a secondary: an X may be any count, so no X is bounded by the rule
    res = _audit(tmp_path, "g,count,status\na,2,\nb,2,\nc,10,M\n", 'status = "status"')
    low, high = _interval(res, "a")
    assert low == 1 and high >= 3
    assert not any("minimum-frequency rule" in n for n in res.notes)
    assert res.audit.passed


def test_the_bound_holds_for_the_true_counts(tmp_path):
    # the bound is knowledge, not a guess: every primary's true count lies within it
    rng = np.random.default_rng(4)
    counts = rng.integers(1, 6, size=12)
    cells = "g,count\n" + "".join(f"c{i},{v}\n" for i, v in enumerate(counts))
    res = _audit(tmp_path, cells)
    t = res.table
    s = t.suppressed
    assert s.any()
    assert np.all(t.value[s] <= t.ub[s]) and np.all(t.ub[s] == 2)
