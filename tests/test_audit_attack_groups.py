"""The attackers among the contributors of an integer intruder, judged alone and in groups,
against brute force: every integral table of a tiny count table is enumerated, and each
attacker's interval of each primary is the least and greatest value over the tables that
keep what the attacker knows (an LP only bounds the box that is enumerated)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

from lp_oracle import _meets, coalition_knowledge, record_classes
from test_audit_modes import _flat_table, _pattern
from tabprotect.audit import AuditSettings, audit
from tabprotect.model import Hierarchy, Table, aggregate_leaves


def _integral_tables(t, unpublished) -> tuple[np.ndarray, np.ndarray]:
    """Every integral table (rows: the values of the unpublished cells ``idx``) that
    keeps the relations, the bounds and the published values, by enumeration: cell by
    cell over the box of the LP relaxation's bounds (which holds every integral table),
    dropping partial tables as soon as a relation whose cells are all set fails."""
    idx = np.flatnonzero(unpublished)
    A = sp.csr_matrix(t.relations)
    Au = A[:, idx].toarray()
    b = -(A[:, ~unpublished] @ t.value[~unpublished])
    keep = np.abs(Au).sum(axis=1) > 0
    Au, b = Au[keep], b[keep]
    box = []
    for i in range(len(idx)):
        ends = []
        for sign in (1.0, -1.0):
            c = np.zeros(len(idx))
            c[i] = sign
            res = linprog(c, A_eq=Au, b_eq=b, bounds=list(zip(t.lb[idx], t.ub[idx])),
                          method="highs")
            assert res.status == 0, "a tiny count table must be bounded"
            ends.append(sign * res.fun)
        box.append(range(int(np.ceil(ends[0] - 1e-6)), int(np.floor(ends[1] + 1e-6)) + 1))
    # the cells in an order that closes relations early: next, a cell of the relation
    # with the fewest cells still to set
    order, left = [], (Au != 0).sum(axis=1)
    todo = set(range(len(idx)))
    while todo:
        r = min((r for r in range(len(Au)) if left[r] > 0), key=lambda r: left[r],
                default=None)
        i = min(todo) if r is None else min(c for c in todo if Au[r, c] != 0)
        order.append(i)
        todo.discard(i)
        left -= (Au[:, i] != 0)
    Au, box, idx = Au[:, order], [box[i] for i in order], idx[order]
    last = np.array([np.flatnonzero(row).max() for row in Au])   # where each closes
    X = np.zeros((1, 0))
    for i, values in enumerate(box):
        X = np.hstack([np.repeat(X, len(values), axis=0),
                       np.tile(np.array(values, float), len(X))[:, None]])
        closed = last == i
        if closed.any():
            ok = np.all(np.abs(X @ Au[closed, :i + 1].T - b[closed]) < 1e-9, axis=1)
            X = X[ok]
        assert len(X) <= 2_000_000, "too many partial tables for a tiny-table test"
    return idx, X


def _brute_attacked(t, singleton: bool, coalition: int = 0) -> np.ndarray:
    """Per cell: True for a primary that an attacker among the contributors narrows
    below its requirement (the definition of ``tests/lp_oracle.py``, by enumeration)."""
    unpublished = np.isin(t.status, ("U", "M"))
    idx, X = _integral_tables(t, unpublished)
    col = {int(c): i for i, c in enumerate(idx)}
    primary = [int(c) for c in np.flatnonzero((t.status == "U") & unpublished)]
    classes = record_classes(t)
    knowers = []   # (cells it holds, {cell: (lo, hi)} it knows)
    if singleton:
        knowers += [(set(k), {c: (t.value[c],) * 2 for c in k if unpublished[c]})
                    for k in classes]
    if coalition:
        holders = [int(c) for c in idx if t.freq[c] >= 1]
        for n in range(1, coalition + 1):
            for group in itertools.combinations_with_replacement(holders, n):
                if any(group.count(c) > t.freq[c] for c in set(group)):
                    continue
                own = set(group).union(*[k for k in classes if k & set(group)])
                known = coalition_knowledge(t, list(group))
                known.update({c: (t.value[c],) * 2 for c in own - set(group)
                              if unpublished[c]})
                knowers.append((own, known))
    out = np.zeros(t.n_cells, bool)
    for own, known in knowers:
        keep = np.ones(len(X), bool)
        for c, (lo, hi) in known.items():
            keep &= (X[:, col[c]] >= lo - 1e-9) & (X[:, col[c]] <= hi + 1e-9)
        for c in primary:
            if c in own:
                continue
            vals = X[keep, col[c]]
            out[c] |= not _meets(t, c, vals.min(), vals.max())
    return out


def _tiny_pattern(seed: int, leaves: tuple[int, ...], empty: str):
    """A random count pattern (``test_audit_modes``) with more secondaries, the grand
    total published (every enumerated cell stays below it); with ``empty="publish"``
    every suppressed count is at least 1 (``Table.lb``), with ``"suppress"`` at least 0."""
    rng = np.random.default_rng(seed)
    t = _pattern(rng, _flat_table(rng, leaves, "frequency"), "frequency")
    status = t.status.copy()
    status[(status == "S") & (rng.random(t.n_cells) < 0.35)] = "M"
    status[int(np.argmax(t.value))] = "S"
    return t.replace(status=status, empty=empty)


# patterns where primaries the outside intruder leaves safe meet single contributors
# and coalitions of two, in group passes and alone, at the bounds 1 and 0
CASES = [(6, (3, 3), "publish"), (8, (3, 3), "suppress"), (39, (4, 3), "publish"),
         (15, (4, 3), "suppress"), (6, (3, 2, 2), "publish"), (15, (3, 2, 2), "suppress")]


@pytest.mark.parametrize("seed,leaves,empty", CASES)
def test_integer_attackers_alone_and_in_groups_match_brute_force(seed, leaves, empty):
    # where the outside intruder already leaves a primary short, no attacker is asked
    # (as in the audit); elsewhere every mode, with and without group passes, flags
    # exactly the primaries some attacker narrows below the requirement
    t = _tiny_pattern(seed, leaves, empty)
    safe = (t.status == "U") & audit(t, integer=True).protected
    assert safe.any()
    groups_run = 0
    for singleton, coalition in ((True, None), (False, 2)):
        truth = _brute_attacked(t, singleton, coalition or 0)[safe]
        for mode in ("intervals", "verdict", "screen"):
            for groups in (0, 2):
                res = audit(t, singleton=singleton, coalition=coalition, integer=True,
                            mode=mode, settings=AuditSettings(
                                attacker_group_min=groups, attacker_group_cell_lps=2))
                np.testing.assert_array_equal(
                    res.attacked[safe], truth,
                    err_msg=f"{mode}, groups {groups}, singleton {singleton}, "
                            f"coalition {coalition}")
                groups_run += res.n_attacker_groups
    assert groups_run > 0


def test_two_attackers_pin_together_what_neither_pins_alone():
    # a 2x3 count table (row 0: three single contributors, row 1: counts of 2), every
    # margin published: cell (0,0) moves with (0,1) or with (0,2). The contributor of
    # (0,1) or of (0,2) alone leaves it [0, 2]; both together pin it. So a group's pass
    # can only certify, and attackers sharing a relation go to different groups. Empty
    # cells may be suppressed (bound 0): at bound 1 row 0 is pinned for every intruder.
    rows = Hierarchy.flat(["r0", "r1"], total="T")
    cols = Hierarchy.flat(["c0", "c1", "c2"], total="T")
    inner = np.array([[1, 1, 1], [2, 2, 2]], float)
    grid = np.zeros((3, 4))   # totals first in each hierarchy
    grid[1:, 1:] = inner
    v = aggregate_leaves(grid.ravel(), [rows, cols])
    target, partners = 5, [6, 7]   # (r0, c0); (r0, c1) and (r0, c2)
    status = np.full(12, "S")
    status[[5, 6, 7, 9, 10, 11]] = ["U", "M", "M", "M", "M", "M"]
    t = Table.from_arrays({"r": rows, "c": cols}, v, v.copy(), kind="frequency",
                          empty="suppress", status=status, upl=np.where(np.arange(12) == target, 1.0, 0.0))
    idx, X = _integral_tables(t, np.isin(t.status, ("U", "M")))
    col = {int(c): i for i, c in enumerate(idx)}
    for known, lo, hi in ((partners[:1], 0, 2), (partners[1:], 0, 2), (partners, 1, 1)):
        keep = np.all(X[:, [col[c] for c in known]] == 1, axis=1)
        assert (X[keep, col[target]].min(), X[keep, col[target]].max()) == (lo, hi)
    assert not _brute_attacked(t, singleton=True)[target]
    res = audit(t, singleton=True, integer=True, mode="verdict",
                settings=AuditSettings(attacker_group_min=2, attacker_group_cell_lps=2))
    assert res.protected[target] and not res.attacked[target]


@pytest.mark.parametrize("seed,leaves,empty", CASES[:4])
def test_attacker_passes_stopped_early_leave_primaries_undecided(seed, leaves, empty):
    # with no time for the attackers' passes, a primary they did not finish is
    # undecided (incomplete, not protected), never attacked; the shortfalls brute
    # force finds are each attacked or undecided, and a finished audit flags them all
    t = _tiny_pattern(seed, leaves, empty)
    safe = (t.status == "U") & audit(t, integer=True).protected
    truth = _brute_attacked(t, singleton=True)
    for mode in ("intervals", "verdict"):
        full = audit(t, singleton=True, integer=True, mode=mode)
        np.testing.assert_array_equal(full.attacked[safe], truth[safe], err_msg=mode)
        assert not (full.incomplete & safe).any()
        cut = audit(t, singleton=True, integer=True, mode=mode,
                    settings=AuditSettings(attacker_seconds=0.0, attacker_group_min=0))
        assert not (cut.attacked & ~truth)[safe].any(), mode
        assert ((cut.attacked | cut.incomplete) >= truth)[safe].all(), mode
        undecided = cut.incomplete & safe
        assert undecided.any(), mode
        assert not cut.protected[undecided].any() and not cut.passed
        assert not cut.attacked[undecided].any()
