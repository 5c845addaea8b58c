"""Every audit mode gives the exact verdict, cell by cell, checked against an independent LP
audit (tests/lp_oracle.py): intervals, verdict, screen, the reuse of a previous audit and
candidate moves; outside intruder, single-contributor attackers and coalitions of two; LP
and integer (integer bounds by branch and bound on the warm model, by the MILP solver,
and by both)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st
from scipy.optimize import linprog

from lp_oracle import (attacked as oracle_attacked, intervals as oracle_intervals,
                       protected as oracle_protected)
from tabprotect.audit import AuditSettings, IntervalAudit, VerdictAudit, audit
from tabprotect.model import Hierarchy, Table, aggregate_leaves


def _flat_table(rng, leaves: tuple[int, ...], kind: str) -> Table:
    """A product of flat hierarchies with random inner cells and computed totals."""
    hs = [Hierarchy.flat([f"{d}{i}" for i in range(k)], total="T")
          for d, k in zip("abcd", leaves)]
    shape = tuple(len(h) for h in hs)
    inner = np.ones(1, bool)
    for h in hs:
        inner = np.logical_and.outer(inner, h.is_leaf).ravel()
    n = int(np.prod(shape))
    v = np.zeros(n)
    f = np.zeros(n)
    if kind == "frequency":
        v[inner] = rng.poisson(2.0, int(inner.sum()))
        f = v.copy()
    else:
        f[inner] = rng.integers(0, 4, int(inner.sum()))
        v[inner] = np.where(f[inner] > 0, rng.integers(1, 40, int(inner.sum())), 0)
    v = aggregate_leaves(v, hs)
    f = aggregate_leaves(f, hs)
    top = None
    if kind == "magnitude":
        # the two largest contributions of each cell: a random split into freq parts
        top = np.zeros((n, 2))
        for i in np.flatnonzero(f > 0):
            parts = np.sort(rng.dirichlet(np.ones(int(f[i]))) * v[i])[::-1]
            top[i, :min(2, len(parts))] = parts[:2]
    return Table.from_arrays(dict(zip("abcd", hs)), v, f, top=top, kind=kind)


def _pattern(rng, t: Table, kind: str) -> Table:
    """Count tables: frequency 1-2 primaries, upper level 1 (at least count + 1) and a
    sliding width 2; magnitude tables: random primaries and levels. Random secondaries."""
    st_ = np.where(t.value == 0, "Z", "S").astype("<U1")
    if kind == "frequency":
        prim = (t.value >= 1) & (t.value <= 2)
        prim &= rng.random(t.n_cells) < 0.6
        upl = np.where(prim, 1.0, 0.0)
        lpl = np.where(prim, rng.integers(0, 2, t.n_cells), 0.0)
        spl = np.where(prim, 2.0, 0.0)
    else:
        prim = (t.value > 0) & (rng.random(t.n_cells) < 0.15)
        scale = np.maximum(t.value, 1.0)
        upl = np.where(prim, np.round(rng.uniform(0, 0.5, t.n_cells) * scale), 0.0)
        lpl = np.where(prim, np.round(rng.uniform(0, 0.5, t.n_cells) * scale), 0.0)
        spl = np.where(prim & (rng.random(t.n_cells) < 0.3),
                       np.round(rng.uniform(0, 1.0, t.n_cells) * scale), 0.0)
    if not prim.any():
        prim[int(np.argmax(t.value))] = True
    st_[prim] = "U"
    share = rng.uniform(0.1, 0.6)
    sec = ~prim & (t.value > 0) & (rng.random(t.n_cells) < share)
    st_[sec] = "M"
    return t.replace(status=st_, upl=upl, lpl=lpl, spl=spl)


def _draw(data) -> Table:
    rng = np.random.default_rng(data.draw(st.integers(0, 100_000), label="seed"))
    dims = data.draw(st.integers(2, 4), label="dims")
    leaves = {2: (4, 5), 3: (3, 3, 2), 4: (2, 2, 2, 2)}[dims]
    kind = data.draw(st.sampled_from(["frequency", "magnitude"]), label="kind")
    return _pattern(rng, _flat_table(rng, leaves, kind), kind)


def _feasible_moves(t: Table, rng, count: int) -> sp.csr_matrix:
    """Deviations to feasible tables (random objectives over the unpublished cells,
    solved by scipy): moves the audit may use, found without it."""
    unp = np.isin(t.status, ("U", "M"))
    idx = np.flatnonzero(unp)
    A = sp.csr_matrix(t.relations)
    b = -(A[:, ~unp] @ t.value[~unp])
    bounds = [(lo, None if not np.isfinite(hi) else hi)
              for lo, hi in zip(t.lb[idx], np.minimum(t.ub[idx], t.value[idx] + 50))]
    rows = []
    for _ in range(count):
        res = linprog(rng.normal(size=len(idx)), A_eq=A[:, idx], b_eq=b, bounds=bounds,
                      method="highs")
        if res.status == 0:
            d = np.zeros(t.n_cells)
            d[idx] = np.round(res.x - t.value[idx], 9)
            rows.append(d)
    return sp.csr_matrix(np.array(rows) if rows else np.zeros((0, t.n_cells)))


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_property_every_mode_gives_the_exact_verdict(data):
    t = _draw(data)
    attack = data.draw(st.sampled_from(["outside", "singleton", "coalition"]), label="attack")
    integer = data.draw(st.booleans(), label="integer")
    # 0: every integer bound by the MILP solver; 2: branch and bound, then the solver
    nodes = data.draw(st.sampled_from([0, 2, 200]), label="integer_nodes")
    singleton, coalition = attack == "singleton", 2 if attack == "coalition" else 0
    truth = oracle_protected(t, singleton=singleton, integer=integer, coalition=coalition)
    kw = dict(singleton=singleton, integer=integer, coalition=coalition or None,
              settings=AuditSettings(integer_nodes=nodes))
    full = audit(t, **kw)
    assert isinstance(full, IntervalAudit)
    np.testing.assert_array_equal(full.protected, truth)
    rng = np.random.default_rng(1)
    # a sub-pattern (some secondaries published) audited first, then reused
    sub = t.status.copy()
    sec = np.flatnonzero(sub == "M")
    sub[sec[rng.random(len(sec)) < 0.5]] = "S"
    moves = _feasible_moves(t, rng, 3)
    for mode in ("verdict", "screen"):
        fast = audit(t, mode=mode, **kw)
        assert isinstance(fast, VerdictAudit) and fast.figures == "bounds"
        np.testing.assert_array_equal(fast.protected, truth, err_msg=mode)
        before = audit(t.replace(status=sub), mode=mode, **kw)
        again = audit(t, mode=mode, previous=before, **kw)
        np.testing.assert_array_equal(again.protected, truth, err_msg=f"{mode}, previous")
        if attack == "outside":
            _assert_bounds_hold(t, integer, fast, mode)
            _assert_bounds_hold(t, integer, again, f"{mode}, previous")
        with_moves = audit(t, mode=mode, moves=moves, **kw)
        np.testing.assert_array_equal(with_moves.protected, truth, err_msg=f"{mode}, moves")
        assert with_moves.n_moves_rejected == 0


def _assert_bounds_hold(t, integer, res, label):
    # a verdict audit's figures bracket the true interval: the values it says feasible
    # tables reach lie inside it, the limits it says the ends cannot pass outside it
    unpublished = np.isin(t.status, ["U", "M"])
    for cell, (lo, hi) in oracle_intervals(t, unpublished, integer=integer).items():
        tol = 1e-6 * max(1.0, abs(t.value[cell]))
        assert res.min_at_least[cell] - tol <= lo <= res.min_at_most[cell] + tol, (label, cell)
        assert res.max_at_least[cell] - tol <= hi <= res.max_at_most[cell] + tol, (label, cell)


@pytest.mark.parametrize("seed", [2, 8, 43])
def test_verdict_modes_judge_each_attacker_on_its_own(seed):
    # count patterns where the verdict audit intersected the witness intervals of
    # different single-contributor attackers and called protected primaries short
    rng = np.random.default_rng(seed)
    for leaves in ((4, 5), (3, 3, 2), (2, 2, 2, 2)):
        t = _pattern(rng, _flat_table(rng, leaves, "frequency"), "frequency")
        for integer in (False, True):
            truth = oracle_protected(t, singleton=True, integer=integer)
            for mode in ("intervals", "verdict", "screen"):
                res = audit(t, singleton=True, integer=integer, mode=mode)
                np.testing.assert_array_equal(res.protected, truth,
                                              err_msg=f"{leaves} {integer} {mode}")


def test_every_mode_flags_the_primaries_each_attacker_breaks():
    # `attacked` against an independent LP per (primary, attacker), with and without
    # the passes against groups of attackers: random count and magnitude patterns and a
    # gauss count pattern
    group_passes = 0
    tables = []
    for seed, leaves, kind in ((2, (4, 4, 2), "frequency"), (3, (5, 6), "frequency"),
                               (5, (3, 3, 3), "frequency"), (3, (4, 5), "magnitude"),
                               (3, (3, 3, 2), "magnitude")):
        rng = np.random.default_rng(seed)
        tables.append(_pattern(rng, _flat_table(rng, leaves, kind), kind))
    tables.append(_gauss_count_pattern(0, (3, 3, 3), singleton=True))
    for t in tables:
        for integer in (False, True):
            # against the oracle where the outside intruder leaves the requirement
            # (elsewhere an attacker of another component breaks nothing of its own);
            # the modes agree on every cell
            safe = (t.status == "U") & audit(t, integer=integer).protected
            truth = oracle_attacked(t, integer=integer)[safe]
            first = None
            for mode in ("intervals", "verdict", "screen"):
                for groups in (0, 2):
                    res = audit(t, singleton=True, integer=integer, mode=mode,
                                settings=AuditSettings(attacker_group_min=groups,
                                                              attacker_group_cell_lps=2))
                    msg = f"{t.n_cells} cells, {integer} {mode} groups {groups}"
                    np.testing.assert_array_equal(res.attacked[safe], truth, err_msg=msg)
                    first = res.attacked if first is None else first
                    np.testing.assert_array_equal(res.attacked, first, err_msg=msg)
                    group_passes += res.n_attacker_groups
    assert group_passes > 0


# the 3-D count tables where the verdict audit reported protected primaries short
# (singleton attack, sliding width 2): patterns from gauss; each one audited by every mode
# and by the independent LP audit
@pytest.mark.parametrize("seed,leaves", [
    (0, (3, 3, 2)), (1, (3, 3, 2)),
    *[pytest.param(seed, (4, 4, 3), marks=pytest.mark.slow) for seed in range(3)]])
def test_count_table_patterns_every_mode_agrees_with_the_lp_audit(seed, leaves):
    t = _gauss_count_pattern(seed, leaves, singleton=True)
    for integer in (False, True):
        truth = oracle_protected(t, singleton=True, integer=integer)
        for mode in ("intervals", "verdict", "screen"):
            res = audit(t, singleton=True, integer=integer, mode=mode)
            np.testing.assert_array_equal(res.protected, truth, err_msg=mode)


def test_verdict_audit_of_large_values_is_rescaled_with_its_bounds():
    # values far from 1 are audited in scaled units; a verdict audit's figures are its
    # bounds, rescaled like an interval audit's intervals
    r = Hierarchy.flat(["1", "2"], total="T")
    c = Hierarchy.flat(["a", "b"], total="T")
    t = Table.from_arrays({"r": r, "c": c}, np.array([10, 6, 4, 5, 3, 2, 5, 3, 2]) * 1e11)
    st_ = t.status.copy()
    st_[[4, 5, 7, 8]] = ["U", "M", "M", "M"]
    lvl = np.where(st_ == "U", 1e11, 0.0)
    t = t.replace(status=st_, upl=lvl, lpl=lvl)
    full = audit(t)
    for mode in ("verdict", "screen"):
        fast = audit(t, mode=mode)
        assert fast.passed and full.passed
        assert full.lower[4] <= fast.min_at_most[4] <= 2e11
        assert 4e11 <= fast.max_at_least[4] <= full.upper[4]
        assert audit(t, mode=mode, previous=fast).passed


def _gauss_count_pattern(seed: int, leaves: tuple[int, ...], singleton: bool = False) -> Table:
    """gauss's pattern (against the single-contributor attack when ``singleton``) of a
    random flat count table with frequency 1-2 primaries, upper level 1 and sliding width 2."""
    from tabprotect.secondary.gauss import gauss
    rng = np.random.default_rng(seed)
    t = _flat_table(rng, leaves, "frequency")
    prim = (t.value >= 1) & (t.value <= 2)
    st_ = np.where(t.value == 0, "Z", "S").astype("<U1")
    st_[prim] = "U"
    # empty="suppress": a suppressed count may be 0, so gauss's pattern protects some
    t = t.replace(status=st_, upl=np.where(prim, 1.0, 0.0), spl=np.where(prim, 2.0, 0.0),
                  empty="suppress")
    return t.replace(status=gauss(t, t.value.copy(), singleton=singleton).status)


@pytest.mark.parametrize("seed,leaves", [(0, (3, 3, 2)), (3, (4, 3, 3)), (5, (3, 3, 3))])
def test_integer_least_moves_alone_certify_what_the_integer_oracle_protects(seed, leaves):
    # a screen that treats every component as large and has no aggregate or local LPs:
    # only the true table and the integral least moves can certify a primary, and
    # whatever they leave counts as short; on these small tables they find a witness
    # for every primary the independent integer audit calls protected
    t = _gauss_count_pattern(seed, leaves)
    truth = oracle_protected(t, integer=True)
    prim = t.status == "U"
    assert truth[prim].sum() > 0
    bare = dict(local_min_vars=0, local_hops=(), aggregate_rounds=0)
    moves = audit(t, integer=True, mode="screen",
                  settings=AuditSettings(**bare, least_move_primaries=2000))
    np.testing.assert_array_equal(moves.protected[prim], truth[prim])
    without = audit(t, integer=True, mode="screen",
                    settings=AuditSettings(**bare, least_move_primaries=0))
    assert not without.protected[prim & truth].any()
    # and the verdict with the usual passes and least moves still agrees with the oracle
    verdict = audit(t, integer=True, mode="verdict",
                    settings=AuditSettings(least_move_primaries=2000))
    np.testing.assert_array_equal(verdict.protected, truth)


def test_least_move_goals_give_the_width_alone_first():
    from tabprotect.audit.least_moves import goals
    # a count of 1 with upper level 1 and sliding width 2: up to 3 (the width alone),
    # else 2; down to 0
    assert goals(1.0, 1.0, 2.0, 2.0, True) == {"max": [3.0, 2.0], "min": [0.0]}
    # no requirement on a side: that side's goal only from the width
    assert goals(5.0, np.inf, -np.inf, 1.5, True) == {"max": [7.0], "min": [3.0]}
    assert goals(5.0, np.inf, -np.inf, 1.5, False) == {"max": [6.5], "min": [3.5]}


def test_a_previous_audit_lends_reached_values_not_its_limits():
    # a 3x3 table: the previous pattern suppresses one 2x2 rectangle, this one a 3x2 block
    # around the same primary, so its interval is wider than the previous audit's exact one
    r = Hierarchy.flat(["1", "2", "3"], total="T")
    c = Hierarchy.flat(["a", "b", "c"], total="T")
    leaf = np.logical_and.outer(r.is_leaf, c.is_leaf).ravel()
    v = np.zeros(leaf.size)
    v[leaf] = [5, 7, 9, 4, 6, 8, 3, 5, 7]
    t = Table.from_arrays({"r": r, "c": c}, aggregate_leaves(v, [r, c]))
    name = {t.cell_name(i).replace("(r=", "").replace(", c=", "|").rstrip(")"): i
            for i in range(t.n_cells)}
    primary = name["1|a"]
    status = t.status.copy()
    status[primary] = "U"
    lvl = np.where(status == "U", 1.0, 0.0)
    t = t.replace(status=status, upl=lvl, lpl=lvl)
    small, large = status.copy(), status.copy()
    small[[name["1|b"], name["2|a"], name["2|b"]]] = "M"
    large[[name["1|b"], name["2|a"], name["2|b"], name["3|a"], name["3|b"]]] = "M"
    before = audit(t.replace(status=small))
    wider = oracle_intervals(t.replace(status=large), np.isin(large, ["U", "M"]),
                             cells=[primary])[primary]
    assert before.passed and before.upper[primary] < wider[1]
    after = audit(t.replace(status=large), mode="verdict", previous=before)
    _assert_bounds_hold(t.replace(status=large), False, after, "previous")


@pytest.mark.parametrize("seed,leaves", [(1, (6, 5)), (2, (4, 3, 3))])
def test_verdict_is_the_oracles_whatever_the_aggregate_rounds(seed, leaves):
    # the aggregate rounds (up, down, then mixed directions) only find witnesses: any
    # number of them, with or without the per-cell LPs after them, gives the same
    # verdict as the independent audit
    t = _gauss_count_pattern(seed, leaves)
    truth = oracle_protected(t, integer=True)
    prim = t.status == "U"
    assert prim.sum() >= 4
    for rounds in (0, 2, 8, 16):
        res = audit(t, integer=True, mode="verdict",
                    settings=AuditSettings(aggregate_rounds=rounds))
        np.testing.assert_array_equal(res.protected, truth)
