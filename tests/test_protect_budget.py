"""protect() within a time limit that binds: each stage keeps its share, every stage is
in the timings, and a pattern is called safe only when an independent integer audit
(brute force on tiny tables, the MILP oracle on small ones) finds it safe."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.linalg

from helpers import flat_count_table
from lp_oracle import intervals as oracle_intervals
from lp_oracle import protected as oracle_protected
from tabprotect.model import Table, synthetic
from tabprotect.secondary import protect
from tabprotect.secondary.gauss import gauss
from tabprotect.secondary.milp_repair import MilpRepairSettings
from tabprotect.secondary.protect_settings import ProtectSettings


def brute_force_protected(table: Table) -> np.ndarray:
    """Per cell: False for a primary whose integer interval, found by enumerating every
    integer table inside the LP oracle's box, falls short of its protection levels.
    The enumeration runs over the free cells of the hidden cells' relations (the others
    follow from them) and keeps the integral tables inside the box."""
    hidden = np.isin(table.status, ("U", "M"))
    cells = np.flatnonzero(hidden)
    box = oracle_intervals(table, hidden, (), False, [int(c) for c in cells])
    lo = np.array([np.ceil(box[int(c)][0] - 1e-9) for c in cells])
    hi = np.array([np.floor(box[int(c)][1] + 1e-9) for c in cells])
    A = table.relations.tocsr()
    base = table.value.astype(float).copy()
    base[cells] = 0.0
    rhs = -(A @ base)                                  # Ac @ x_hidden = rhs
    Ac = A[:, cells].toarray()
    _, _, piv = scipy.linalg.qr(Ac, pivoting=True)
    rank = np.linalg.matrix_rank(Ac)
    dep, free = piv[:rank], piv[rank:]
    assert np.prod(hi[free] - lo[free] + 1) < 3e6, "too large to enumerate"
    grid = np.stack(np.meshgrid(*[np.arange(lo[f], hi[f] + 1) for f in free],
                                indexing="ij"), axis=-1).reshape(-1, len(free)) \
        if len(free) else np.zeros((1, 0))
    B = Ac[:, dep]
    xd = np.linalg.lstsq(B, rhs[:, None] - Ac[:, free] @ grid.T, rcond=None)[0].T
    tables = np.zeros((len(grid), len(cells)))
    tables[:, free], tables[:, dep] = grid, np.round(xd)
    ok = (np.abs(xd - np.round(xd)) < 1e-6).all(axis=1)
    ok &= (np.abs(tables @ Ac.T - rhs) < 1e-6).all(axis=1)
    ok &= ((tables >= lo - 1e-9) & (tables <= hi + 1e-9)).all(axis=1)
    tables = tables[ok]
    assert len(tables) >= 1          # the true table is one of them
    out = np.ones(table.n_cells, bool)
    x = table.value
    for k, c in enumerate(cells):
        if table.status[c] != "U":
            continue
        a, b = tables[:, k].min(), tables[:, k].max()
        need_hi = min(table.ub[c], x[c] + table.upl[c])
        need_lo = max(table.lb[c], x[c] - table.lpl[c])
        out[c] = b >= need_hi - 1e-9 and a <= need_lo + 1e-9 and b - a >= table.spl[c] \
            and b > a
    out[(table.status == "U") & ~hidden] = False
    return out


def _check_honest(t: Table, res, truth: np.ndarray) -> None:
    """Called safe only when safe; every primary truly short reported short."""
    prim = t.status == "U"
    if res.passed:
        assert truth[prim].all()
    missed = prim & ~truth & ~np.isin(np.arange(t.n_cells), res.audit.shortfalls)
    assert not missed.any()


def _check_stages(res, limit: float | None) -> None:
    names = list(res.stage_seconds)
    assert names[0] == "setup" and "method" in names
    assert any(n.startswith("audit") or n == "screen" for n in names)
    # every stage is in the timings: together they are the call's time (the stage
    # clock's gaps are a few statements), never more
    total = sum(res.stage_seconds.values())
    assert total <= res.seconds + 0.01
    assert total >= 0.5 * res.seconds - 0.05
    if limit is not None:
        assert res.seconds <= limit + 30.0   # generous: the floors of the stages


@pytest.mark.parametrize("seed", range(4))
def test_tiny_tables_against_brute_force_whatever_the_budget(seed):
    # finite a-priori upper bounds keep the enumeration box finite
    t = flat_count_table((3, 3), seed, mean=1.5)
    t = t.replace(ub=t.value + 3.0)
    assert (t.status == "U").any()
    for method, limit in itertools.product(("gauss", "greedy"), (None, 0.0, 1.0)):
        res = protect(t, method=method, cost="unity", time_limit=limit, singleton=False)
        _check_honest(t, res, brute_force_protected(res.confidential_table))
        _check_stages(res, limit)


@pytest.mark.parametrize("limit", [0.1, 0.3])
@pytest.mark.parametrize("large_table", [10 ** 9, 1])
def test_a_budget_that_binds_never_passes_an_unsafe_pattern(limit, large_table):
    # the small-table path and the large one (screening audits, local repair), every
    # stage at a floor of 0.01 s: the stages are cut short (the audit of this table
    # alone takes longer), and the verdict must be honest whatever they decided
    t = flat_count_table((6, 6, 5), 1)
    res = protect(t, method="gauss", cost="value", time_limit=limit, singleton=False,
                  settings=ProtectSettings(large_table=large_table,
                                           audit_floor_seconds=0.01))
    _check_honest(t, res, oracle_protected(res.confidential_table, integer=True))
    _check_stages(res, limit)
    if not res.passed:
        assert any("did NOT pass" in n and "undecided" in n for n in res.notes)


@pytest.mark.slow   # about 20 s of wall clock
def test_the_first_audit_keeps_to_its_share():
    # a 14^3 count table on the large path: its screen alone takes minutes, so within
    # 20 s the first audit stops at its share and leaves the witness search, the repair
    # and the final audit theirs
    t = flat_count_table((13, 13, 13), 1)
    gauss(t, t.value.copy(), time_limit=1.0)    # compiled before the timed call
    limit = 20.0
    s = ProtectSettings(large_table=1)
    res = protect(t, method="gauss", cost="value", time_limit=limit, singleton=False,
                  settings=s)
    assert res.stage_seconds["audit 1"] <= s.first_audit_share * limit + 5.0
    names = list(res.stage_seconds)
    assert names.index("audit 1") < len(names) - 1 or res.passed
    _check_stages(res, limit)


@pytest.mark.parametrize("limit", [None, 0.3])
def test_small_path_round_with_many_shortfalls_takes_deviation_lps_and_cubes(limit):
    # past whole_repair_max_work the small path's round is the large path's (deviation
    # LPs on the primaries' sub-tables, leaf cubes for those not reached): a pass is a
    # true pass and every primary truly short is reported short, with or without a
    # budget that binds
    # (gauss leaves 21 primaries of this 1,331-cell table short; the MILP repair, which
    # would take them first, is off)
    t = synthetic.count_table([(2, 4)] * 3, seed=1)
    s = ProtectSettings(whole_repair_max_work=1, audit_floor_seconds=0.01,
                        milp_repair=MilpRepairSettings(enabled=False))
    res = protect(t, method="gauss", cost="value", time_limit=limit, singleton=False,
                  settings=s)
    _check_honest(t, res, oracle_protected(res.confidential_table, integer=True))
    _check_stages(res, limit)
    assert res.params["settings"]["whole_repair_max_work"] == 1
    if limit is None:
        assert res.passed and len(res.repaired) > 0
        assert any("deviation LPs for" in n for n in res.notes)


@pytest.mark.parametrize("whole_max", [1, 10 ** 12])
def test_a_protected_pattern_gets_no_cell_from_either_repair(whole_max):
    # the pattern of a passed call handed back as the method's: nothing is short, so
    # neither repair (whole-table LPs, deviation LPs and cubes) adds a cell
    t = flat_count_table((6, 6, 5), 1)
    s = ProtectSettings(whole_repair_max_work=whole_max)
    first = protect(t, method="gauss", cost="value", singleton=False, settings=s)
    assert first.passed
    safe = t.replace(status=first.confidential_table.status)
    again = protect(safe, method="gauss", cost="value", singleton=False, settings=s)
    assert again.passed and len(again.repaired) == 0
    assert (again.confidential_table.status == safe.status).all()
