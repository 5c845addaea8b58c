"""The pruning pass (tabprotect.secondary.prune): every pattern it returns is judged by
the independent LP oracle (tests/lp_oracle.py), with the single-contributor attack."""
from __future__ import annotations

import time

import numpy as np
import pytest

from lp_oracle import protected as oracle_protected
from tabprotect.secondary.gauss import gauss
from tabprotect.secondary.prune import prune
from test_gauss_widths import SMALL, linked


def _short(table, status):
    ok = oracle_protected(table.replace(status=status), singleton=True)
    return int((~ok & (table.status == "U")).sum())


def _all_candidates(t):
    """Every cell that may be suppressed suppressed: protected, and full of redundancy."""
    return np.where(np.isin(t.status, ("U", "P", "Z")), t.status, "M")


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_pruning_everything_suppressed_keeps_every_primary_protected(seed):
    t = linked(SMALL, seed=seed)
    start = _all_candidates(t)
    assert _short(t, start) == 0
    out = prune(t, start, t.value.copy())
    assert out.pruned > 0 and not out.timed_out and not out.skipped
    assert out.tried == int((start == "M").sum())
    assert _short(t, out.status) == 0
    # only secondaries are published again; primaries and other cells keep their status
    assert ((out.status == "M") <= (start == "M")).all()
    kept = out.status != "M"
    assert (out.status[kept] == t.status[kept]).all()


def test_pruning_tries_the_dearest_cells_first():
    t = linked(SMALL, seed=2)
    start = _all_candidates(t)
    cost = t.value.copy()
    dearest = int(np.argmax(np.where(start == "M", cost, -np.inf)))
    out = prune(t, start, cost, deadline=None)
    assert cost[out.status == "M"].sum() < cost[start == "M"].sum()
    # the dearest secondary is tried first, on the full pattern, where no primary needs
    # it (the oracle says so): it is published again
    alone = start.copy()
    alone[dearest] = t.status[dearest]
    assert _short(t, alone) == 0
    assert out.status[dearest] != "M"


def test_gauss_prunes_its_pattern_on_general_tables():
    t = linked(SMALL, seed=2)
    plain = gauss(t, t.value.copy(), prune="never")
    out = gauss(t, t.value.copy())
    assert "pruned" in out.details and "pruned" not in plain.details
    assert ((out.status == "M") <= (plain.status == "M")).all()
    assert (out.status == "M").sum() == (plain.status == "M").sum() - out.details["pruned"]
    assert _short(t, out.status) == 0


def test_a_pattern_without_a_witness_is_left_as_it_is():
    t = linked(SMALL, seed=2)
    alone = gauss(t, t.value.copy(), widths="never", prune="never")
    assert _short(t, alone.status) > 0          # some primary is short: no witness
    out = prune(t, alone.status, t.value.copy())
    assert out.pruned == 0 and out.skipped
    assert (out.status == alone.status).all()


def test_pruning_stops_at_its_deadline_and_keeps_the_pattern():
    t = linked(SMALL, seed=2)
    start = _all_candidates(t)
    out = prune(t, start, t.value.copy(), deadline=time.perf_counter() - 1.0)
    assert out.timed_out and out.pruned == 0 and (out.status == start).all()


def test_frequency_tables_are_not_pruned():
    t = linked(SMALL, seed=2)
    t = t.replace(kind="frequency")
    out = prune(t, _all_candidates(t), t.value.copy())
    assert out.skipped == "frequency table" and out.pruned == 0


def _no_single_contributors(t):
    """The table with every cell of at least two contributors: a witness then proves
    exactly what the oracle checks, and a cell the pass keeps must be needed."""
    return t.replace(freq=np.maximum(t.freq, 2))


@pytest.mark.parametrize("seed", [1, 3])
def test_every_secondary_left_after_pruning_is_needed(seed):
    # a cell whose removal failed stays suppressed: later witnesses may move it, so
    # every cell the pass keeps is one the oracle finds needed on the final pattern
    t = _no_single_contributors(linked(SMALL, seed=seed))
    out = prune(t, _all_candidates(t), t.value.copy())
    assert not out.timed_out and _short(t, out.status) == 0
    for x in np.flatnonzero((out.status == "M") & (t.status != "M")):
        alone = out.status.copy()
        alone[x] = t.status[x]
        assert _short(t, alone) > 0, f"secondary {x} is not needed"
