"""What the published table's status column tells an intruder: suppressed cells carry one
letter, so which of them are primary (a threshold-rule primary of a count table holds 1 to
n-1) is not read from it; checked by the intruder's own LP on the published file."""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.optimize import linprog

from tabprotect.cli import main

JOB = """[input]
cells = "cells.csv"
dimensions = ["r", "c"]
compute_totals = true
kind = "frequency"

[hierarchies.r]
codes = ["r1", "r2"]

[hierarchies.c]
codes = ["a", "b", "c"]

[rules.frequency]
n = 3
safety_range = 3

[protect]
method = "optimal"
cost = "unity"

[output]
dir = "out"
"""

CELLS = "r,c,value,freq\nr1,a,1,1\nr1,b,10,10\nr1,c,12,12\nr2,a,7,7\nr2,b,9,9\nr2,c,20,20\n"
ROWS, COLS = ("r1", "r2"), ("a", "b", "c")


def intruder_interval(pub: pd.DataFrame, cell: tuple[str, str], n: int) -> tuple[float, float]:
    """min and max of ``cell`` over the counts that fit the published file: its values,
    the table's sums, counts >= 0, and a status U read as the threshold rule's 1..n-1."""
    keys = list(zip(pub["r"], pub["c"]))
    index = {k: i for i, k in enumerate(keys)}
    eqs = []
    for r in ROWS + ("Total",):
        eqs.append([(r, c) for c in COLS] + [(r, "Total")])
    for c in COLS + ("Total",):
        eqs.append([(r, c) for r in ROWS] + [("Total", c)])
    a_eq = np.zeros((len(eqs), len(keys)))
    for row, members in enumerate(eqs):
        for k in members[:-1]:
            a_eq[row, index[k]] = 1.0
        a_eq[row, index[members[-1]]] = -1.0
    bounds = []
    for value, status in zip(pub["value"], pub["status"]):
        if not np.isnan(value):
            bounds.append((value, value))
        elif status == "U":
            bounds.append((1, n - 1))
        else:
            bounds.append((0, None))
    objective = np.zeros(len(keys))
    objective[index[cell]] = 1.0
    low = linprog(objective, A_eq=a_eq, b_eq=np.zeros(len(eqs)), bounds=bounds)
    high = linprog(-objective, A_eq=a_eq, b_eq=np.zeros(len(eqs)), bounds=bounds)
    assert low.status == 0 and high.status == 0
    return low.fun, -high.fun


def test_published_status_does_not_tell_primaries_from_secondaries(tmp_path, capsys):
    (tmp_path / "job.toml").write_text(JOB)
    (tmp_path / "cells.csv").write_text(CELLS)
    assert main(["protect", str(tmp_path / "job.toml"), "--quiet"]) == 0
    capsys.readouterr()
    out = tmp_path / "out"
    pub = pd.read_csv(out / "published.csv", dtype={"r": str, "c": str})
    # the primary (r1, a) = 1 needs an upper bound of at least 1 + 3 (frequency protection
    # level in count units); the intruder's LP on the published file must allow it
    low, high = intruder_interval(pub, ("r1", "a"), n=3)
    assert low <= 0 + 1e-9 and high >= 4 - 1e-9
    hidden = pub["value"].isna()
    assert hidden.sum() >= 4 and pub.loc[hidden, "status"].nunique() == 1
    assert not pub["status"].isin(["U", "M"]).any()
