"""CTA's secret margin: at exactly its level a sensitive cell whose level is a public
proportion of its value (a rule's safety range) gives its true value away; each cell moves
its level times a secret ``1 + u`` instead. Checked from the published values alone."""
from __future__ import annotations

import json

import numpy as np
import pytest

from tabprotect.adjust import cta
from tabprotect.model import Hierarchy, Table
from tabprotect.model.table import aggregate_leaves
from tabprotect.cli import main
from tabprotect.primary import FrequencyRule, apply_rules

# values and contributor counts of a 3 x 3 magnitude table; frequency rule n = 3 with a
# 10 % safety range makes (x, q) and (y, q) sensitive, each at a level of 10 % of its value
VALUES = [[120, 35, 400], [80, 5, 310], [44, 60, 20]]
FREQ = [[12, 2, 9], [6, 1, 8], [4, 5, 3]]


def table() -> Table:
    hs = [Hierarchy.flat(["x", "y", "z"], total="T"), Hierarchy.flat(["p", "q", "r"],
                                                                       total="T")]
    leaves = np.ix_(*[np.flatnonzero(h.is_leaf) for h in hs])

    def full(inner):
        a = np.zeros((len(hs[0]), len(hs[1])))
        a[leaves] = inner
        return aggregate_leaves(a.ravel(), hs)

    t = Table.from_arrays({"r": hs[0], "c": hs[1]}, full(VALUES), freq=full(FREQ))
    return apply_rules(t, [FrequencyRule(3, safety_range=10)]).table


def recovered(t: Table, published: np.ndarray) -> np.ndarray:
    """The intruder who knows the 10 % rule: a sensitive cell published at y is y / 1.1
    (moved up) or y / 0.9 (moved down); whichever candidate is a whole number (the values'
    grid) is taken as the true value. True where that gives the true value."""
    s = t.status == "U"
    hits = np.zeros(t.n_cells, dtype=bool)
    for factor in (1.1, 0.9):
        guess = published / factor
        whole = np.abs(guess - np.round(guess)) <= 1e-6
        hits |= s & whole & (np.abs(np.round(guess) - t.value) <= 1e-6)
    return hits


def test_at_exactly_its_level_a_cell_gives_its_value_away():
    t = table()
    assert (t.status == "U").sum() == 2
    res = cta(t, margin=0)
    assert recovered(t, res.adjusted).any()


@pytest.mark.parametrize("seed", range(6))
def test_the_secret_margin_keeps_the_value_and_the_guarantee(seed):
    t = table()
    res = cta(t, seed=seed)
    y = res.adjusted
    assert not recovered(t, y).any()
    # additive: every relation holds on the published values
    assert np.abs(t.relations @ y).max() <= 1e-6 * max(1.0, np.abs(y).max())
    # each sensitive cell at least its level away, in the direction it went
    s = np.flatnonzero(t.status == "U")
    d = y[s] - t.value[s]
    assert np.all((d >= t.upl[s] - 1e-6) | (-d >= t.lpl[s] - 1e-6))
    assert res.passed


def test_the_margin_repeats_with_its_seed_and_is_recorded():
    t = table()
    a, b = cta(t, seed=11), cta(t, seed=11)
    assert np.array_equal(a.adjusted, b.adjusted) and a.params["seed"] == 11
    drawn = cta(t)
    assert isinstance(drawn.params["seed"], int)
    assert cta(t, seed=drawn.params["seed"]).adjusted.tolist() == drawn.adjusted.tolist()


JOB = """
[input]
cells = "cells.csv"
dimensions = ["g"]
value = "value"
freq = "freq"
compute_totals = true

[rules.frequency]
n = 3
safety_range = 10

[protect]
method = "cta"
seed = 48151623

[output]
dir = "out"
"""


def test_the_seed_stays_out_of_the_trail_and_the_summary(tmp_path, capsys):
    (tmp_path / "cells.csv").write_text("g,value,freq\na,35,2\nb,400,9\nc,120,12\n")
    (tmp_path / "job.toml").write_text(JOB)
    assert main(["protect", str(tmp_path / "job.toml")]) == 0
    assert "seed: 48151623" in capsys.readouterr().out      # the user's terminal has it
    for name in ("trail.json", "summary.json"):
        text = (tmp_path / "out" / name).read_text()
        json.loads(text)
        assert "48151623" not in text, name
