"""The MILP repair, judged by the independent LP oracle (tests/lp_oracle.py)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp

from tabprotect.model import Hierarchy, Table, synthetic
from tabprotect.secondary import protect
from tabprotect.budget import Budget
from tabprotect.secondary.audit_repair import AuditRepair, StageClock
from tabprotect.secondary.base import cost_vector
from tabprotect.secondary.candidates import candidate_cells
from tabprotect.secondary.gauss import gauss
from tabprotect.secondary.greedy import greedy
from tabprotect.secondary.protect_settings import ProtectSettings
from tabprotect.secondary.milp_repair import MilpRepair, MilpRepairSettings
from tabprotect.secondary.attack_requirements import Requirements

import lp_oracle
from helpers import flat_count_table


def _short(table, status, singleton, integer=False):
    ok = lp_oracle.protected(table.replace(status=status), singleton=singleton,
                             integer=integer)
    return np.flatnonzero((table.status == "U") & ~ok)


def _repair(table, status, short, cost, singleton, settings=None):
    rep = MilpRepair(table.replace(status=status), cost, candidate_cells(table),
                     Requirements.from_table(table, singleton=singleton), settings=settings)
    out = rep.run(status, short)
    new = status.copy()
    new[out.added] = "M"
    return new, out


def _grid(rows: int, cols: int, seed: int) -> Table:
    r = Hierarchy.flat([str(i) for i in range(rows)], total="T")
    c = Hierarchy.flat([chr(97 + j) for j in range(cols)], total="T")
    inner = np.random.default_rng(seed).integers(1, 20, size=(rows, cols)).astype(float)
    full = np.zeros((rows + 1, cols + 1))
    full[1:, 1:] = inner
    full[0, 1:] = inner.sum(0)
    full[1:, 0] = inner.sum(1)
    full[0, 0] = inner.sum()
    return Table.from_arrays({"r": r, "c": c}, full.ravel())


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow),
                                  pytest.param(2, marks=pytest.mark.slow)])
def test_one_primary_gets_the_fewest_cells(seed):
    # brute force: the smallest set of extra cells after which the oracle passes
    t = _grid(2, 3, seed)
    st = t.status.copy()
    p = 5 + seed % 3                # an inner cell
    st[p] = "U"
    lvl = np.where(st == "U", 0.3 * t.value, 0.0)
    t = t.replace(status=st, upl=lvl, lpl=lvl)
    others = [i for i in range(t.n_cells) if i != p]
    best = None
    for k in range(1, 4):
        for extra in itertools.combinations(others, k):
            trial = st.copy()
            trial[list(extra)] = "M"
            if len(_short(t, trial, False)) == 0:
                best = k
                break
        if best:
            break
    new, out = _repair(t, st, [p], np.ones(t.n_cells), False,
                       MilpRepairSettings(mip_gap=0.0))
    assert len(_short(t, new, False)) == 0
    assert len(out.added) == best


# (tables whose primaries can be protected against the single contributors: with every
# candidate suppressed the oracle passes)
@pytest.mark.parametrize("name,seed,singleton", [
    ("2d-small", 1, False), ("2d-small", 7, True),
    *(pytest.param(*case, marks=pytest.mark.slow) for case in [
        ("3d-small", 9, True), ("2d-small", 6, True), ("3d-small", 3, False), ("3d-small", 1, True),
        ("3d-small", 6, False)])])
def test_nearly_safe_patterns_are_repaired(name, seed, singleton):
    """A safe pattern (greedy's, or every candidate suppressed where greedy's is not
    safe) with a third of its secondaries taken away: the repaired pattern passes the
    oracle, adds only candidate cells, and costs at most suppressing every candidate
    cell within three relation steps of each short primary."""
    t = synthetic.preset(name, seed=seed)
    cost = cost_vector(t, "value")
    safe = greedy(t, cost, singleton=singleton).status
    if len(_short(t, safe, singleton)):
        safe = np.where(candidate_cells(t) & (t.status != "U"), "M", t.status)
        assert len(_short(t, safe, singleton)) == 0
    rng = np.random.default_rng(seed)
    sec = np.flatnonzero(safe == "M")
    st = safe.copy()
    st[rng.choice(sec, size=max(1, len(sec) // 3), replace=False)] = "S"
    short = _short(t, st, singleton)
    assert len(short)
    new, out = _repair(t, st, short, cost, singleton)
    assert out.unresolved == []
    assert len(_short(t, new, singleton)) == 0
    added = np.asarray(out.added)
    cand = candidate_cells(t)
    assert cand[added].all() and (st[added] == "S").all()
    rep = MilpRepair(t.replace(status=st), cost, cand, Requirements.from_table(t))
    bound = sum(cost[r[(st[r] == "S") & cand[r]]].sum() for r in
                (rep._region(int(s), 3) for s in short))
    assert cost[added].sum() <= bound * (1 + 1e-9)


def test_a_safe_primary_costs_nothing():
    t = _grid(2, 2, 0)
    st = t.status.copy()
    st[[4, 5, 7, 8]] = ["U", "M", "M", "M"]
    t = t.replace(status=np.where(np.arange(9) == 4, "U", "S"),
                  upl=np.where(np.arange(9) == 4, 1.0, 0.0))
    new, out = _repair(t, st, [4], cost_vector(t, "value"), False)
    assert out.added == [] and out.free == [4] and len(out.moves) >= 1


def test_single_contributor_attackers_get_their_own_witnesses():
    # two count-1 cells in one row with the primary: the intruder's cheapest witness
    # moves them; each contributor knows its own cell, so the repair must find witnesses
    # that keep each of them still
    t = _grid(3, 3, 4)
    freq = np.where(t.value < 6, 1.0, 5.0)
    st = np.where(np.arange(t.n_cells) == 5, "U", "S")
    t = t.replace(status=st, freq=freq, upl=np.where(st == "U", 1.0, 0.0),
                  lpl=np.where(st == "U", 1.0, 0.0))
    new, out = _repair(t, st, [5], cost_vector(t, "value"), True)
    assert out.unresolved == []
    assert len(_short(t, new, True)) == 0


def test_integer_witnesses_on_a_count_table():
    t = synthetic.count_table([(1, 3)] * 3, seed=2)
    cost = cost_vector(t, "value")
    st = t.status.copy()
    short = _short(t, st, False, integer=True)
    new, out = _repair(t, st, short, cost, False)
    assert out.unresolved == []
    assert len(_short(t, new, False, integer=True)) == 0
    for cells, dev in out.moves:
        np.testing.assert_allclose(dev, np.round(dev))


def test_protect_uses_the_milp_repair_and_passes_the_oracle():
    t = synthetic.preset("3d-small", seed=9)
    res = protect(t, method="gauss", cost="value", singleton=True,
                  settings=ProtectSettings(milp_repair=MilpRepairSettings(enabled=True)))
    assert res.passed
    assert lp_oracle.protected(res.confidential_table, singleton=True).all()
    assert res.params["settings"]["milp_repair"]["enabled"] is True


@pytest.mark.parametrize("singleton", [False, True])
def test_quick_answers_are_safe(singleton):
    # the answer a tight budget gets (the LP relaxation's witnesses, no MILP)
    t = synthetic.preset("2d-small", seed=7)
    cost = cost_vector(t, "value")
    st = t.status.copy()
    short = _short(t, st, singleton)
    rep = MilpRepair(t, cost, candidate_cells(t), Requirements.from_table(t, singleton))
    out = rep.run(st, short, quick_after=0.0)
    assert out.unresolved == []
    new = st.copy()
    new[out.added] = "M"
    assert len(_short(t, new, singleton)) == 0


@pytest.mark.slow
def test_repair_loop_on_a_count_table_passes_the_integer_oracle():
    # protect()'s loop on gauss's pattern with half its secondaries taken away:
    # continuous witnesses first, integral ones for what the integer audit still finds
    # short; the final pattern must hold against the integer intruder
    t = synthetic.count_table([(1, 4)] * 3, seed=3)
    cost = cost_vector(t, "value")
    st = np.asarray(gauss(t, cost).status)
    sec = np.flatnonzero(st == "M")
    st[np.random.default_rng(0).choice(sec, len(sec) // 2, replace=False)] = "S"
    notes: list[str] = []
    loop = AuditRepair(t, cost, st, req=Requirements.from_table(t, singleton=False),
                       cand=candidate_cells(t), settings=ProtectSettings(
                           milp_repair=MilpRepairSettings(enabled=True)),
                       budget=Budget(120), singleton=False, mode="intervals", large=False,
                       repair=True, workers=1, progress=None, notes=notes,
                       stage=StageClock({}))
    res = loop.run()
    assert res.passed and any("MILP" in n for n in notes)
    assert lp_oracle.protected(loop.protected_table, integer=True).all()


def test_a_spent_milp_round_leaves_its_primaries_to_the_lp_repair():
    # with no time for MILPs (and no time limit on the call) the round hands every
    # short primary to the LP repair instead of giving it the dearer quick answer:
    # the same pattern as the LP repair alone, judged protected by the oracle
    t = synthetic.preset("3d-small", seed=9)
    spent = MilpRepairSettings(enabled=True, relative_seconds=0.0, min_seconds=0.0)
    runs = {name: protect(t, method="gauss", cost="value", singleton=True,
                          settings=ProtectSettings(milp_repair=ms))
            for name, ms in (("spent", spent), ("lp", MilpRepairSettings(enabled=False)))}
    assert len(runs["spent"].repaired) > 0
    assert (runs["spent"].table.status == runs["lp"].table.status).all()
    assert lp_oracle.protected(runs["spent"].confidential_table, singleton=True).all()


def test_enabled_auto_takes_the_milp_repair_on_count_tables_without_the_attack():
    # "auto" (the default): count tables' repair rounds start with MILPs unless the
    # single-contributor attack is on or the table takes the large-table path;
    # magnitude tables' with the LP repair.  The count
    # pattern (gauss leaves primaries short) holds against the integer oracle
    with pytest.raises(ValueError, match="enabled"):
        MilpRepairSettings(enabled="yes")
    magnitude = synthetic.preset("2d-small", seed=7)
    assert not MilpRepairSettings(enabled="auto").applies(magnitude)
    assert MilpRepairSettings(enabled=True).applies(magnitude, singleton=True)
    counts = synthetic.count_table([(2, 3)] * 3, seed=2)
    assert MilpRepairSettings(enabled="auto").applies(counts)
    assert not MilpRepairSettings(enabled="auto").applies(counts, singleton=True)
    assert not MilpRepairSettings(enabled="auto").applies(counts, large=True)
    assert not MilpRepairSettings(enabled=False).applies(counts)
    settings = ProtectSettings(feasibility_check_max_work=0)
    res = protect(counts, method="gauss", cost="value", singleton=False, settings=settings)
    assert res.params["settings"]["milp_repair"]["enabled"] == "auto"
    assert len(res.repaired) > 0 and any("MILP" in n for n in res.notes)
    assert res.passed
    assert lp_oracle.protected(res.confidential_table, integer=True).all()


def test_enabled_auto_repairs_count_tables_under_the_attack_with_lps():
    # with the single-contributor attack the default repair is the LP repair, and its
    # pattern holds against the integer oracle with that attack (gauss without its
    # attack step, which leaves the repair nothing to do here)
    attacked = synthetic.count_table([(1, 5)] * 3, seed=9)
    res = protect(attacked, method="gauss", cost="value", singleton=True,
                  settings=ProtectSettings(feasibility_check_max_work=0), attack="never")
    assert len(res.repaired) > 0 and not any("MILP" in n for n in res.notes)
    assert res.passed
    assert lp_oracle.protected(res.confidential_table, singleton=True, integer=True).all()


def _odd_cycle_counts() -> tuple[Table, np.ndarray]:
    """A count table of overlapping groups (eight cells, seven published group totals)
    and a pattern whose one deviation a continuous intruder can take in thirds: the
    suppressed cells move as ``t * (1, 1, 1, -1, -1, -1, -3, 3)`` (primary ``a`` first),
    the counts 6 of ``d`` and ``e`` (at least 1) hold ``t`` within ``[-5/3, 5/3]``, the
    counts 3 within ``[-2, 2]``.  The primary (3, upper level 1, width 3) has the
    interval ``[4/3, 14/3]`` against a continuous intruder and ``[2, 4]`` (width 2)
    against an integer one."""
    parts = {"a": 3, "b": 3, "g": 3, "c": 3, "f": 3, "h": 3, "d": 6, "e": 6}
    groups = [("a", "c"), ("b", "c"), ("g", "c"), ("a", "b", "g", "d"), ("a", "f"),
              ("a", "h"), ("c", "f", "h", "e")]
    cells = list(parts) + ["+".join(g) for g in groups]
    value = np.array(list(parts.values()) + [sum(parts[p] for p in g) for g in groups],
                     float)
    A = np.zeros((len(groups), len(cells)))
    for k, g in enumerate(groups):
        A[k, len(parts) + k] = 1.0
        A[k, [cells.index(p) for p in g]] = -1.0
    primary = np.arange(len(cells)) == 0
    table = Table.from_relations(value, sp.csr_matrix(A), labels=cells, freq=value.copy(),
                                 status=np.where(primary, "U", "S"), kind="frequency",
                                 upl=np.where(primary, 1.0, 0.0),
                                 spl=np.where(primary, 3.0, 0.0))
    pattern = table.status.copy()
    pattern[1:len(parts)] = "M"
    return table, pattern


def test_a_count_round_that_adds_no_cell_hands_over_to_the_milp_repair():
    # "auto" leaves the MILP repair off under the single-contributor attack; the given
    # pattern holds against a continuous intruder (the LP repair's round adds no cell)
    # and not against an integer one: the MILP repair takes the next round, and the
    # final pattern holds against the integer intruder and every single contributor
    t, pattern = _odd_cycle_counts()
    given = t.replace(status=pattern)
    assert lp_oracle.protected(given, singleton=True).all()
    assert not lp_oracle.protected(given, singleton=True, integer=True).all()
    assert not MilpRepairSettings().applies(t, singleton=True)
    notes: list[str] = []
    loop = AuditRepair(t, cost_vector(t, "freq"), pattern,
                       req=Requirements.from_table(t, singleton=True),
                       cand=candidate_cells(t), settings=ProtectSettings(),
                       budget=Budget(60), singleton=True, mode="intervals", large=False,
                       repair=True, workers=1, progress=None, notes=notes,
                       stage=StageClock({}))
    res = loop.run()
    handover = [k for k, n in enumerate(notes)
                if n == "repair round 1: no cell could be added; the MILP repair takes "
                        "the next round"]
    assert handover, notes
    assert any("MILP(s)" in n for n in notes[handover[0] + 1:]), notes
    final = loop.protected_table
    assert res.passed
    assert (final.suppressed & ~given.suppressed).any()
    assert final.suppressed[given.suppressed].all()
    assert lp_oracle.protected(final, singleton=True, integer=True).all()


def test_a_repair_told_not_to_use_milps_stops_where_the_lp_round_adds_no_cell():
    # the same pattern with the MILP repair switched off (enabled=False): no handover, and
    # the loop ends with the pattern short against the integer intruder, said so
    t, pattern = _odd_cycle_counts()
    notes: list[str] = []
    settings = ProtectSettings(milp_repair=MilpRepairSettings(enabled=False))
    loop = AuditRepair(t, cost_vector(t, "freq"), pattern,
                       req=Requirements.from_table(t, singleton=True),
                       cand=candidate_cells(t), settings=settings,
                       budget=Budget(60), singleton=True, mode="intervals", large=False,
                       repair=True, workers=1, progress=None, notes=notes,
                       stage=StageClock({}))
    res = loop.run()
    assert not any("the MILP repair takes" in n for n in notes), notes
    assert not any("MILP(s)" in n for n in notes), notes
    assert not res.passed
    assert not lp_oracle.protected(loop.protected_table, singleton=True, integer=True).all()
