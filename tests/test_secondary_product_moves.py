"""Product moves: every step keeps its hierarchy's relations, every move found keeps the
table's relations and lies on usable cells, the search is exhaustive (brute force on small
tables), and the LP audit confirms the rooms it reports."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tabprotect import audit
from tabprotect.model import Hierarchy, Table
from tabprotect.secondary.product_limits import ProductSearchLimits
from tabprotect.secondary.product_moves import cheapest_product_moves, dimension_steps


def _hierarchy(lengths, name):
    codes = []
    # codes of every level: "1", "11", "111", ... by fan-outs
    def grow(prefix, level):
        if level == len(lengths):
            return
        for k in range(1, lengths[level] + 1):
            code = prefix + str(k)
            codes.append(code)
            grow(code, level + 1)
    grow("", 0)
    return Hierarchy.from_levels(codes, range(1, len(lengths) + 1), total="T", name=name)


def _relations_1d(h):
    rows = []
    for parent, kids in enumerate(h.children):
        if kids:
            row = np.zeros(len(h))
            row[parent] = 1.0
            row[list(kids)] = -1.0
            rows.append(row)
    return np.array(rows)


@pytest.mark.parametrize("lengths", [(3,), (2, 3), (3, 2, 2)])
def test_every_step_keeps_the_hierarchys_relations(lengths):
    h = _hierarchy(lengths, "x")
    R = _relations_1d(h)
    step_ptr, entry_ptr, codes, signs = dimension_steps(h)
    for a in range(len(h)):
        steps = range(step_ptr[a], step_ptr[a + 1])
        assert len(steps) > 0
        seen = set()
        for s in steps:
            v = np.zeros(len(h))
            v[a] = 1.0
            cs, ss = codes[entry_ptr[s]:entry_ptr[s + 1]], signs[entry_ptr[s]:entry_ptr[s + 1]]
            assert a not in cs.tolist() and len(set(cs.tolist())) == len(cs)
            v[cs] = ss
            np.testing.assert_array_equal(R @ v, 0.0)
            seen.add(tuple(v))
        assert len(seen) == len(steps)   # no step twice
        assert all(np.diff(entry_ptr[step_ptr[a]:step_ptr[a + 1] + 1]) >= 0)


def _random_table(seed, lengths=((2, 2), (3,), (2,))):
    rng = np.random.default_rng(seed)
    dims = {f"d{k}": _hierarchy(ls, f"d{k}") for k, ls in enumerate(lengths)}
    from tabprotect.model.table import aggregate_leaves
    hs = list(dims.values())
    leaf_shape = tuple(len(h.leaves) for h in hs)
    inner = rng.integers(0, 30, size=leaf_shape).astype(float)
    shape = tuple(len(h) for h in hs)
    full = np.zeros(shape)
    idx = np.ix_(*[np.flatnonzero(h.is_leaf) for h in hs])
    full[idx] = inner
    full = aggregate_leaves(full.ravel(), hs)
    t = Table.from_arrays(dims, full)
    return t, rng


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000))
def test_found_moves_keep_the_relations_and_the_audit_confirms_their_rooms(seed):
    t, rng = _random_table(seed)
    n = t.n_cells
    status = np.where(rng.random(n) < 0.5, "M", "S").astype("<U1")
    positive = np.flatnonzero(t.value > 0)
    prim = rng.choice(positive, size=min(3, len(positive)), replace=False)
    status[prim] = "U"
    t = t.replace(status=status)
    usable = np.isin(status, ("U", "M")) & (t.value > 0)
    need = np.ones(len(prim))
    ok, moves = cheapest_product_moves(t, prim, np.where(usable, 0.0, np.inf), need, need,
                                       np.zeros(len(prim)))
    res = audit(t)
    A = t.relations
    for p, (corners, signs, t_up, t_down, cost) in zip(prim[ok], moves):
        assert corners[0] == p and cost == 0.0
        assert usable[corners[1:]].all()
        d = np.zeros(n)
        d[corners] = signs
        np.testing.assert_allclose(A @ d, 0.0, atol=1e-9)
        assert t_up >= 1.0 and t_down >= 1.0
        # the LP audit's interval holds the move's reach both ways
        assert res.upper[p] >= t.value[p] + t_up - 1e-6
        assert res.lower[p] <= t.value[p] - t_down + 1e-6


def _brute_force_cheapest(t, p, cell_cost, need_up, need_down):
    dims = [d for d in range(len(t.shape)) if t.shape[d] > 1]
    pos = np.unravel_index(p, t.shape)
    options = []
    for d in dims:
        h = t.dimensions[d].hierarchy
        step_ptr, entry_ptr, codes, signs = dimension_steps(h)
        a = int(pos[d])
        options.append([[(a, 1)] + list(zip(codes[entry_ptr[s]:entry_ptr[s + 1]].tolist(),
                                            signs[entry_ptr[s]:entry_ptr[s + 1]].tolist()))
                        for s in range(step_ptr[a], step_ptr[a + 1])])
    best = np.inf
    for combo in itertools.product(*options):
        corners, sg = [], []
        for entries in itertools.product(*combo):
            coord = list(pos)
            sign = 1
            for d, (code, s) in zip(dims, entries):
                coord[d] = code
                sign *= s
            corners.append(int(np.ravel_multi_index(coord, t.shape)))
            sg.append(sign)
        corners, sg = np.array(corners), np.array(sg)
        room_up = np.where(sg > 0, t.ub[corners] - t.value[corners],
                           t.value[corners] - t.lb[corners]).min()
        room_dn = np.where(sg > 0, t.value[corners] - t.lb[corners],
                           t.ub[corners] - t.value[corners]).min()
        if room_up >= need_up and room_dn >= need_down:
            best = min(best, cell_cost[corners[1:]].sum())
    return best


@pytest.mark.parametrize("seed", range(6))
def test_the_search_finds_the_cheapest_product_move(seed):
    t, rng = _random_table(seed, lengths=((2, 2), (3,)))
    cell_cost = np.where(t.value > 0, rng.integers(0, 5, t.n_cells).astype(float), np.inf)
    cell_cost[rng.random(t.n_cells) < 0.3] = 0.0
    cell_cost[t.value <= 0] = np.inf
    for p in np.flatnonzero(t.value > 0)[:6]:
        ok, moves = cheapest_product_moves(t, np.array([p]), cell_cost, np.array([1.0]),
                                           np.array([1.0]), np.array([0.0]),
                                           ProductSearchLimits(budget=10**6))
        expected = _brute_force_cheapest(t, p, cell_cost, 1.0, 1.0)
        if np.isfinite(expected):
            assert ok[0] and moves[0][4] == pytest.approx(expected)
        else:
            assert not ok[0]


def test_a_new_process_searches_in_plain_python_and_finds_the_compiled_moves(tmp_path):
    # a process that has not loaded numba searches an everyday table's cells as plain
    # Python (no numba import); with ``plain_seconds=0`` it runs the compiled kernel at
    # once: the same moves for every cell
    import os
    import pickle
    import subprocess
    import sys
    t, rng = _random_table(4)
    cells = np.flatnonzero(t.value > 0)[:20]
    cost = np.where(t.value > 0, rng.integers(0, 5, t.n_cells).astype(float), np.inf)
    cost[rng.random(t.n_cells) < 0.4] = 0.0
    ones = np.ones(len(cells))
    path = tmp_path / "args.pkl"
    path.write_bytes(pickle.dumps((t, cells, cost, ones, ones, np.zeros(len(cells)))))
    env = {k: v for k, v in os.environ.items() if k != "TABPROTECT_NO_NUMBA"}
    out = []
    for plain_seconds in (60.0, 0.0):
        search = ("import pickle, sys\n"
                  "from tabprotect.secondary.product_limits import ProductSearchLimits\n"
                  "from tabprotect.secondary.product_moves import cheapest_product_moves\n"
                  f"args = pickle.loads(open({str(path)!r}, 'rb').read())\n"
                  "result = cheapest_product_moves(*args, ProductSearchLimits("
                  f"plain_seconds={plain_seconds}))\n"
                  "sys.stdout.buffer.write(pickle.dumps((result, 'numba' in sys.modules)))\n")
        proc = subprocess.run([sys.executable, "-c", search], capture_output=True, env=env,
                              timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        out.append(pickle.loads(proc.stdout))
    (plain, plain_numba), (compiled, compiled_numba) = out
    assert not plain_numba and compiled_numba
    assert plain[0].tolist() == compiled[0].tolist() and plain[0].any()
    for a, b in zip(plain[1], compiled[1]):
        assert a[0].tolist() == b[0].tolist() and a[1].tolist() == b[1].tolist()
        assert a[2:] == b[2:]


@pytest.mark.parametrize("field, bad", [("budget", 0), ("max_corners", 0.5),
                                        ("plain_seconds", -1.0), ("plain_batch", True)])
def test_search_limits_reject_bad_values_naming_the_field(field, bad):
    from tabprotect.errors import InputError
    with pytest.raises(InputError, match=f"ProductSearchLimits.{field}"):
        ProductSearchLimits(**{field: bad})
