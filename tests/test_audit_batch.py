"""tabprotect.audit.batch: small components bounded in stacked LPs (every audit mode) give
the exact intervals and verdicts, checked against the independent LP audit
(tests/lp_oracle.py), brute force, and the audit with one LP per component and bound."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from lp_oracle import intervals as oracle_intervals, protected as oracle_protected
from tabprotect.audit import AuditSettings, audit
from tabprotect.errors import InputError
from tabprotect.model import Hierarchy, Table, aggregate_leaves

UNSTACKED = AuditSettings(stack_max_vars=0)


def _table(rng, leaves, kind="frequency", lam=2.0) -> Table:
    hs = [Hierarchy.flat([f"{d}{i}" for i in range(k)], total="T")
          for d, k in zip("abc", leaves)]
    inner = np.ones(1, bool)
    for h in hs:
        inner = np.logical_and.outer(inner, h.is_leaf).ravel()
    v = np.zeros(len(inner))
    v[inner] = rng.poisson(lam, int(inner.sum())) if kind == "frequency" else \
        rng.integers(1, 40, int(inner.sum()))
    f = v.copy() if kind == "frequency" else np.where(inner, rng.integers(1, 4, len(v)), 0)
    v, f = aggregate_leaves(v, hs), aggregate_leaves(f.astype(float), hs)
    return Table.from_arrays(dict(zip("abc", hs)), v, f, kind=kind)


def _blocks(rng, t: Table, n: int) -> Table:
    """Primaries each hidden in a block of 2-3 rows by 2-3 columns of inner cells of a
    2-D table, the blocks on disjoint rows and columns: ``n`` components."""
    shape = tuple(len(d.hierarchy.codes) for d in t.dimensions)
    grid = np.arange(t.n_cells).reshape(shape)
    rows, cols = rng.permutation(np.arange(1, shape[0])), rng.permutation(np.arange(1, shape[1]))
    st_ = np.where(t.value == 0, "Z", "S").astype("<U1")
    for _ in range(n):
        (r, rows), (c, cols) = ((a[:k], a[k:]) for a, k in
                                ((rows, int(rng.integers(2, 4))), (cols, int(rng.integers(2, 4)))))
        assert len(r) >= 2 and len(c) >= 2, "table too small for the blocks"
        cells = grid[np.ix_(r, c)].ravel()
        st_[cells] = "M"
        st_[rng.choice(cells, int(rng.integers(1, 3)), replace=False)] = "U"
    prim = st_ == "U"
    return t.replace(status=st_, upl=np.where(prim, 1.0, 0.0), lpl=np.where(prim, 1.0, 0.0),
                     spl=np.where(prim, 2.0, 0.0))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("integer", [False, True])
def test_stacked_intervals_are_the_lp_audits(seed, integer):
    rng = np.random.default_rng(seed)
    t = _blocks(rng, _table(rng, (12, 13)), 4)
    res = audit(t, integer=integer)
    assert res.n_components >= 2
    unpublished = np.isin(t.status, ("U", "M"))
    for cell, (lo, hi) in oracle_intervals(t, unpublished, integer=integer).items():
        assert res.lower[cell] == pytest.approx(lo, abs=1e-6), t.cell_name(cell)
        assert res.upper[cell] == pytest.approx(hi, abs=1e-6), t.cell_name(cell)
    one_by_one = audit(t, integer=integer, settings=UNSTACKED)
    np.testing.assert_array_equal(res.lower, one_by_one.lower)
    np.testing.assert_array_equal(res.upper, one_by_one.upper)
    assert res.n_lp < one_by_one.n_lp


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("singleton", [False, True])
def test_stacked_verdict_is_the_lp_audits(seed, singleton):
    # count tables with many small counts (single contributors), LP and integer
    rng = np.random.default_rng(100 + seed)
    t = _blocks(rng, _table(rng, (10, 10), lam=1.5), 3)
    for integer in (False, True):
        res = audit(t, singleton=singleton, integer=integer)
        truth = oracle_protected(t, singleton=singleton, integer=integer)
        np.testing.assert_array_equal(res.protected, truth)
        one_by_one = audit(t, singleton=singleton, integer=integer, settings=UNSTACKED)
        np.testing.assert_array_equal(res.attacked, one_by_one.attacked)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("mode", ["verdict", "screen"])
def test_stacked_verdict_modes_are_the_lp_audits(seed, mode):
    # the verdict modes take exact intervals from the stacked LPs: the oracle's verdict,
    # exact bounds and the same verdict as the verdict search one component at a time;
    # a component whose primaries an earlier audit settled costs no LP
    rng = np.random.default_rng(200 + seed)
    t = _blocks(rng, _table(rng, (12, 13)), 4)
    for singleton, integer in ((False, False), (True, True)):
        res = audit(t, singleton=singleton, integer=integer, mode=mode)
        truth = oracle_protected(t, singleton=singleton, integer=integer)
        np.testing.assert_array_equal(res.protected, truth)
        assert (res.exact_lower & res.exact_upper)[t.status == "U"].all()
        one_by_one = audit(t, singleton=singleton, integer=integer, mode=mode,
                           settings=UNSTACKED)
        np.testing.assert_array_equal(one_by_one.protected, truth)
        np.testing.assert_array_equal(res.attacked, one_by_one.attacked)
        again = audit(t, singleton=singleton, integer=integer, mode=mode, previous=res)
        np.testing.assert_array_equal(again.protected, truth)
        if truth[t.status == "U"].all():
            assert again.n_lp == 0


def _brute_force(t: Table, unpublished: np.ndarray, caps):
    """Every integral table the intruder cannot rule out (cell ``k`` from its a-priori
    lower bound ``t.lb`` to ``caps[k]``), enumerated."""
    A = t.relations.toarray()
    cells = np.flatnonzero(unpublished)
    grids = np.stack(np.meshgrid(*[np.arange(int(t.lb[s]), c + 1) for s, c in zip(cells, caps)],
                                 indexing="ij"),
                     axis=-1).reshape(-1, len(cells))
    base = t.value.copy()
    base[cells] = 0
    ok = np.all(np.abs((A @ base)[:, None] + A[:, cells] @ grids.T) < 1e-9, axis=0)
    feasible = grids[ok]
    return {c: (feasible[:, k].min(), feasible[:, k].max()) for k, c in enumerate(cells)}


@pytest.mark.parametrize("seed", range(5))
def test_stacked_integer_intervals_match_brute_force(seed):
    # two disjoint 2x2 blocks of a 5x5 table (two components): every integral table
    rng = np.random.default_rng(200 + seed)
    t = _table(rng, (4, 4), lam=1.0)
    grid = np.arange(t.n_cells).reshape(5, 5)
    unpublished = np.zeros(t.n_cells, bool)
    unpublished[grid[1:3, 1:3].ravel()] = True
    unpublished[grid[3:5, 3:5].ravel()] = True
    # no count exceeds its row's published total
    caps = [int(t.value[grid[c // 5, 0]]) for c in np.flatnonzero(unpublished)]
    res = audit(t, unpublished=unpublished, integer=True)
    assert res.n_components == 2
    for cell, (lo, hi) in _brute_force(t, unpublished, caps).items():
        assert (res.lower[cell], res.upper[cell]) == (lo, hi), t.cell_name(cell)


def test_an_unbounded_component_in_a_stack_keeps_its_infinite_interval():
    # one block of a magnitude table has no a-priori bounds (unbounded both ways), the
    # others are bounded below by zero
    rng = np.random.default_rng(5)
    t = _blocks(rng, _table(rng, (10, 10), kind="magnitude"), 3)
    hidden = np.flatnonzero(np.isin(t.status, ("U", "M")))
    # the block of the first hidden cell: the hidden cells of the rows its column hides
    rows = hidden[hidden % 11 == hidden[0] % 11] // 11
    lb = t.lb.copy()
    lb[hidden[np.isin(hidden // 11, rows)]] = -np.inf
    t = t.replace(lb=lb, ub=np.full(t.n_cells, np.inf))
    res = audit(t)
    one_by_one = audit(t, settings=UNSTACKED)
    assert np.isinf(res.upper).any() and np.isfinite(res.upper[hidden]).any()
    assert res.n_components >= 2
    np.testing.assert_array_equal(res.lower, one_by_one.lower)
    np.testing.assert_array_equal(res.upper, one_by_one.upper)
    np.testing.assert_array_equal(res.protected, oracle_protected(t))


def test_an_infeasible_component_in_a_stack_is_named():
    rng = np.random.default_rng(3)
    t = _blocks(rng, _table(rng, (12, 13)), 4)
    # one hidden cell of the last row with hidden cells pinned off its value, the rest of
    # that row's hidden cells pinned at theirs: no table adds up
    hidden = np.flatnonzero(np.isin(t.status, ("U", "M")))
    row = hidden[hidden // 14 == hidden[-1] // 14]
    lb, ub = t.lb.copy(), t.ub.copy()
    lb[row], ub[row] = t.value[row], t.value[row]
    lb[row[0]] = ub[row[0]] = t.value[row[0]] + 0.5
    bad = t.replace(lb=lb, ub=ub)
    with pytest.raises(InputError, match="around cell") as stacked:
        audit(bad)
    with pytest.raises(InputError, match="around cell") as alone:
        audit(bad, settings=UNSTACKED)
    assert str(stacked.value) == str(alone.value)


def test_a_stack_out_of_time_never_passes():
    rng = np.random.default_rng(1)
    t = _blocks(rng, _table(rng, (12, 13)), 4)
    res = audit(t, time_limit=0.0)
    assert not res.passed and res.incomplete.any()


def test_stacked_3d_blocks_match_brute_force():
    # two 2x2x2 sub-cubes of a 4x4x4 count table hidden behind their published line sums
    # (two components, each with two integral tables): the integer bounds are theirs.
    # The sub-cubes hide empty cells, so empty cells may be suppressed: bound 0
    hs = {d: Hierarchy.flat([f"{d}{i}" for i in range(4)], total="T") for d in "abc"}
    inner = np.zeros((4, 4, 4))
    parity = np.indices((2, 2, 2)).sum(axis=0) % 2
    inner[:2, :2, :2] = parity
    inner[2:, 2:, 2:] = 1 - parity
    rng = np.random.default_rng(0)
    rest = np.ones((4, 4, 4), bool)
    rest[:2, :2, :2] = rest[2:, 2:, 2:] = False
    inner[rest] = rng.integers(0, 3, int(rest.sum()))
    full = np.zeros((5, 5, 5))
    full[1:, 1:, 1:] = inner
    leaf = np.zeros((5, 5, 5), bool)
    leaf[1:, 1:, 1:] = True
    t = Table.from_arrays(hs, aggregate_leaves(full.ravel(), list(hs.values())),
                          kind="frequency", empty="suppress")
    grid = np.arange(t.n_cells).reshape(5, 5, 5)
    unpublished = np.zeros(t.n_cells, bool)
    unpublished[grid[1:3, 1:3, 1:3].ravel()] = True
    unpublished[grid[3:5, 3:5, 3:5].ravel()] = True
    ip = audit(t, unpublished=unpublished, integer=True)
    assert ip.n_components == 2
    for cell, (lo, hi) in _brute_force(t, unpublished, [1] * 16).items():
        assert (ip.lower[cell], ip.upper[cell]) == (lo, hi), t.cell_name(cell)


@pytest.mark.parametrize("seed", range(10))
def test_outer_bounds_contain_every_lp_interval(seed):
    # random systems A x = b with a known feasible point and random (some infinite)
    # bounds: propagation never cuts into the LP's interval of any variable
    from scipy.optimize import linprog
    from tabprotect.audit.propagate import outer_bounds
    rng = np.random.default_rng(seed)
    m, n = int(rng.integers(2, 6)), int(rng.integers(3, 9))
    A = rng.integers(-1, 2, (m, n)).astype(float)
    x0 = rng.integers(0, 10, n).astype(float)
    lb = np.where(rng.random(n) < 0.2, -np.inf, x0 - rng.integers(0, 5, n))
    ub = np.where(rng.random(n) < 0.4, np.inf, x0 + rng.integers(0, 5, n))
    olb, oub = outer_bounds(sp.csr_matrix(A), A @ x0, lb, ub)
    assert np.all(olb >= lb) and np.all(oub <= ub) and np.all(olb <= x0) and np.all(oub >= x0)
    for j in range(n):
        for sign in (1.0, -1.0):
            c = np.zeros(n)
            c[j] = sign
            res = linprog(c, A_eq=A, b_eq=A @ x0, bounds=list(zip(
                np.where(np.isfinite(lb), lb, None), np.where(np.isfinite(ub), ub, None))),
                method="highs")
            if res.status == 0:
                assert olb[j] <= res.x[j] + 1e-7 and oub[j] >= res.x[j] - 1e-7


def test_outer_bounds_of_a_row_bound_its_cells():
    from tabprotect.audit.propagate import outer_bounds
    # x0 + x1 + x2 = 7 with x >= 0 and x2 >= 3: x0, x1 <= 4; x2 <= 7
    A = sp.csr_matrix(np.ones((1, 3)))
    lb, ub = outer_bounds(A, np.array([7.0]), np.array([0.0, 0.0, 3.0]), np.full(3, np.inf))
    np.testing.assert_array_equal(ub, [4.0, 4.0, 7.0])
    np.testing.assert_array_equal(lb, [0.0, 0.0, 3.0])


@pytest.mark.parametrize("seed", range(6))
def test_sibling_cubes_for_the_attackers_keep_their_verdict(seed):
    # intervals mode: the pattern's sibling cubes go to the single-contributor attackers'
    # passes as candidate witnesses; the verdict is the LP audit's with and without them
    rng = np.random.default_rng(300 + seed)
    t = _blocks(rng, _table(rng, (10, 10), lam=1.2), 3)
    truth = oracle_protected(t, singleton=True, integer=True)
    plain = audit(t, singleton=True, settings=AuditSettings(attacker_sibling_cubes=0))
    cubes = audit(t, singleton=True)
    for res in (plain, cubes):
        np.testing.assert_array_equal(res.protected, truth)
    np.testing.assert_array_equal(plain.attacked, cubes.attacked)
    assert cubes.n_lp <= plain.n_lp


def _two_hidden_cubes(seed: int) -> Table:
    """A 4x4x4 count table with two 2x2x2 sub-cubes suppressed (two components), one
    or two primaries in each, single contributors among them."""
    rng = np.random.default_rng(seed)
    hs = {d: Hierarchy.flat([f"{d}{i}" for i in range(4)], total="T") for d in "abc"}
    full = np.zeros((5, 5, 5))
    full[1:, 1:, 1:] = rng.integers(0, 4, (4, 4, 4))
    full[1:3, 1:3, 1:3] += 1      # no zero in the hidden cubes (zeros are published)
    full[3:5, 3:5, 3:5] += 1
    t = Table.from_arrays(hs, aggregate_leaves(full.ravel(), list(hs.values())),
                          kind="frequency", empty="suppress")
    grid = np.arange(t.n_cells).reshape(5, 5, 5)
    st_ = np.where(t.value == 0, "Z", "S").astype("<U1")
    for cube in (grid[1:3, 1:3, 1:3].ravel(), grid[3:5, 3:5, 3:5].ravel()):
        st_[cube] = "M"
        st_[rng.choice(cube, int(rng.integers(1, 3)), replace=False)] = "U"
    prim = st_ == "U"
    return t.replace(status=st_, upl=np.where(prim, 1.0, 0.0), lpl=np.zeros(t.n_cells),
                     spl=np.where(prim, 2.0, 0.0))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("mode", ["verdict", "screen"])
def test_verdict_modes_stack_no_fractional_integer_components(seed, mode):
    # 3-D count tables (LP vertices can be fractional): the integer verdict modes leave
    # the components to their own verdict search (the LPs of the unstacked audit), the
    # LP audit still stacks them (exact bounds); the oracle's verdict either way
    t = _two_hidden_cubes(seed)
    for integer in (True, False):
        res = audit(t, singleton=True, integer=integer, mode=mode)
        assert res.n_components == 2
        np.testing.assert_array_equal(
            res.protected, oracle_protected(t, singleton=True, integer=integer))
        alone = audit(t, singleton=True, integer=integer, mode=mode, settings=UNSTACKED)
        np.testing.assert_array_equal(res.attacked, alone.attacked)
        if integer:
            assert res.n_lp == alone.n_lp
        else:
            assert (res.exact_lower & res.exact_upper)[t.status == "U"].all()
