"""gauss's sparse elimination (modulo a prime) against an independent exact reference.

The reference is a dense row-echelon basis in exact integers (fraction-free; no sparse
keys, no pivot rule, no modular arithmetic): a vector is in the span of the published
ones iff it reduces to zero.  gauss's greedy must make the same decision as the reference
for every candidate, so the whole suppression pattern must be identical.  (On these small 0/+-1
and [-3, 3] vectors every minor is below the Hadamard bound, far below the prime, so the
modular span equals the rational one and any difference is a bug.)
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tabprotect.model import synthetic
from tabprotect.secondary.gauss import cell_vectors, gauss
from tabprotect.secondary.gauss.compile import NUMBA
from tabprotect.secondary.gauss.elimination import Elimination
from tabprotect.secondary.gauss.kernel import P, modinv, table_insert, table_remove
from tabprotect.secondary.gauss.method import run_elimination


class DenseSpan:
    """Span of dense integer vectors, kept as rows in echelon form (pivot -> row), by
    fraction-free elimination in Python's exact integers (rows divided by their content)."""

    def __init__(self, n: int):
        self.n = n
        self.rows: dict[int, list[int]] = {}

    def residue(self, v) -> list[int]:
        """``v`` reduced by the rows (zero at every pivot; a non-zero multiple of the exact
        residue, zero exactly when ``v`` is in the span)."""
        v = [int(x) for x in v]
        for j in sorted(self.rows):  # rows[j] is zero before column j: one sweep suffices
            if v[j]:
                row = self.rows[j]
                f, g = row[j], v[j]
                v = _primitive([f * a - g * b for a, b in zip(v, row)])
        return v

    def contains(self, v) -> bool:
        return not any(self.residue(v))

    def add(self, v) -> None:
        r = self.residue(v)
        j = next((i for i, x in enumerate(r) if x), None)
        if j is not None:
            self.rows[j] = r

    def copy(self) -> "DenseSpan":
        out = DenseSpan(self.n)
        out.rows = dict(self.rows)
        return out


def _primitive(v: list[int]) -> list[int]:
    """``v`` divided by the gcd of its entries (keeps the integers small)."""
    g = math.gcd(*v)
    return [x // g for x in v] if g > 1 else v


def inner_matrix(t) -> np.ndarray:
    """Dense (cells x inner cells) 0/1 matrix: which inner cells each cell sums."""
    inner = np.flatnonzero(t.is_inner)
    leaves = [d.hierarchy.leaf_descendants() for d in t.dimensions]
    pos = [np.asarray(p) for p in t.positions]
    M = np.zeros((t.n_cells, len(inner)), dtype=np.int64)
    for i in range(t.n_cells):
        ok = np.ones(len(inner), dtype=bool)
        for d in range(len(pos)):
            ok &= np.isin(pos[d][inner], leaves[d][pos[d][i]])
        M[i, ok] = 1
    return M


def reference_secondaries(M: np.ndarray, status: np.ndarray, cost: np.ndarray) -> set[int]:
    """Langsrud's greedy with the dense exact span: forced P/Z cells first, then the
    candidates by decreasing cost (ties by index); a candidate is suppressed iff adding it
    puts some primary into the published span (primaries already disclosed by the forced
    cells are lost anyway and do not block anything).

    The residue of a vector (what is left after the span's echelon sweep) is zero exactly
    for vectors in the span, so a candidate with residue ``r`` discloses a primary iff the
    primary's residue is a multiple of ``r``; the primaries' residues are kept up to date
    as the span grows."""
    span = DenseSpan(M.shape[1])
    for i in np.flatnonzero(np.isin(status, ("P", "Z"))):
        span.add(M[i])
    open_ = [r for r in (span.residue(M[u]) for u in np.flatnonzero(status == "U"))
             if any(r)]
    free = np.flatnonzero(~np.isin(status, ("U", "M", "P", "Z")))
    order = free[np.lexsort((free, -cost[free]))]
    secondary = set()
    for i in order:
        r = span.residue(M[i])
        j = next((k for k, x in enumerate(r) if x), None)
        if j is None:
            continue  # already in the span: publishing it reveals nothing new
        if any(p[j] and all(r[j] * a == p[j] * b for a, b in zip(p, r)) for p in open_):
            secondary.add(int(i))  # some primary's residue is a multiple of r
            continue
        span.rows[j] = r
        open_ = [_primitive([r[j] * a - p[j] * b for a, b in zip(p, r)]) if p[j] else p
                 for p in open_]
    return secondary


branching = st.lists(st.integers(2, 3), min_size=1, max_size=2)


@settings(max_examples=25, deadline=None)
@given(st.lists(branching, min_size=3, max_size=4), st.integers(0, 10**6),
       st.integers(0, 10**6), st.floats(0.0, 0.3))
def test_same_pattern_as_the_dense_exact_reference(dims, seed, cost_seed, p_forced):
    dims = [tuple(b) for b in dims]
    t = synthetic.generate(dims, seed=seed)
    if t.n_cells > 200:  # keep the dense reference fast
        dims = [b[:1] for b in dims]
        t = synthetic.generate(dims, seed=seed)
    rng = np.random.default_rng(cost_seed)
    status = t.status.copy()
    # some published-by-force cells, and a random cost order (distinct costs)
    forced = (status == "S") & (rng.random(t.n_cells) < p_forced)
    status[forced] = "P"
    t = t.replace(status=status)
    cost = rng.permutation(t.n_cells).astype(float)
    out = gauss(t, cost, singleton=False)
    got = set(np.flatnonzero(out.status == "M").tolist())
    assert got == reference_secondaries(inner_matrix(t), t.status, cost)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**6), st.integers(3, 9), st.integers(1, 4))
def test_eliminator_on_random_integer_vectors(seed, n, n_primaries):
    # coefficients other than +-1 exercise the fraction-free scaling of the in-place update
    rng = np.random.default_rng(seed)

    def random_vector():
        v = rng.integers(-3, 4, size=n) * (rng.random(n) < 0.5)
        return v

    primaries = [random_vector() for _ in range(n_primaries)]
    # room=1: the smallest arrays, so that growing them is exercised too
    elim = Elimination(n, [{k: int(x) for k, x in enumerate(p) if x} for p in primaries],
                        room=1)
    span = DenseSpan(n)
    disclosed_before = sum(1 for p in primaries if not p.any())
    assert elim.disclosed == disclosed_before
    for _ in range(2 * n):
        v = random_vector()
        trial = span.copy()
        trial.add(v)
        discloses = any(trial.contains(p) and not span.contains(p) for p in primaries)
        published = elim.offer({k: int(x) for k, x in enumerate(v) if x})
        assert published == (not discloses)
        if published:
            span = trial
    # the primaries' reduced vectors are canonical: zero exactly for primaries in the span
    for u, p in enumerate(primaries):
        assert (not elim.reduced_primary(u)) == span.contains(p)


def test_forced_offers_count_disclosures():
    elim = Elimination(4, [{0: 1, 1: 1}, {2: 2}])
    assert elim.offer({0: 2, 1: 2, 3: 1})   # span {e0+e1+e3/2}: nothing disclosed
    assert not elim.offer({3: 1})           # would disclose e0+e1
    assert elim.offer({3: 1}, force=True)
    assert elim.disclosed == 1
    assert elim.offer({2: -3}, force=True)
    assert elim.disclosed == 2


@settings(max_examples=50, deadline=None)
@given(st.integers(1, P - 1))
def test_modular_inverse(a):
    assert a * modinv(a) % P == 1


def patterns(names_seeds: list[tuple[str, int]], singleton: bool = False, **options
             ) -> list[list[int]]:
    out = []
    for name, seed in names_seeds:
        t = synthetic.preset(name, seed=seed)
        status = gauss(t, t.value.copy(), singleton=singleton, **options).status
        out.append(np.flatnonzero(status == "M").tolist())
    return out


CASES = [("2d-small", 3), ("3d-small", 7), ("1k-3d", 2)]


def test_plain_python_kernel_gives_the_same_patterns():
    # the same kernel source uncompiled must make the same decisions as the compiled one
    pure = patterns(CASES, kernel="python")
    assert pure == patterns(CASES, kernel="compiled")
    assert all(pure)  # the cases do have secondaries
    # with the single-contributor attack (the pair test of the kernel)
    pure = patterns(CASES, singleton=True, kernel="python")
    assert pure == patterns(CASES, singleton=True, kernel="compiled")


def _json_of_new_process(code: str, root: Path):
    """What ``code`` prints last, as JSON, run in a new Python process (numba not loaded,
    not switched off)."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    env.pop("TABPROTECT_NO_NUMBA", None)
    proc = subprocess.run([sys.executable, "-c", code], cwd=root, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_auto_kernel_runs_small_tables_as_plain_python_with_the_same_pattern():
    # below python_below_cells (numba not loaded yet) auto picks the plain kernel, above
    # it the compiled one; the pattern is the same either way (checked in a new process,
    # where numba is not loaded until a compiled kernel runs)
    root = Path(__file__).resolve().parents[1]
    code = ("import json, sys; sys.path.insert(0, 'tests'); import test_gauss as t; "
            "from tabprotect.model import synthetic; "
            "from tabprotect.secondary.gauss import gauss; "
            "out = {}\n"
            "for below in (10**9, 0):\n"
            "    for name, seed in t.CASES:\n"
            "        tb = synthetic.preset(name, seed=seed)\n"
            "        r = gauss(tb, tb.value.copy(), singleton=True, python_below_cells=below,\n"
            "                  python_seconds=1e9)\n"
            "        out.setdefault(str(below), []).append([r.details['kernel'], "
            "'numba' in sys.modules, t.np.flatnonzero(r.status == 'M').tolist()])\n"
            "print(json.dumps(out))")
    out = _json_of_new_process(code, root)
    plain, compiled = out[str(10**9)], out["0"]
    assert [k for k, _, _ in plain] == ["python"] * len(CASES)
    assert not any(loaded for _, loaded, _ in plain)  # numba never imported
    assert [k for k, _, _ in compiled] == ["compiled"] * len(CASES)
    assert [p for _, _, p in plain] == [p for _, _, p in compiled]
    assert [p for _, _, p in plain] == patterns(CASES, singleton=True, kernel="compiled")
    assert all(p for _, _, p in plain)


def test_auto_kernel_turns_compiled_once_plain_runs_took_python_seconds():
    # a long-lived process: once its plain eliminations took python_seconds in all,
    # auto loads numba for good (checked in a new process, numba not loaded before)
    root = Path(__file__).resolve().parents[1]
    code = ("import json, sys\n"
            "from tabprotect.model import synthetic\n"
            "from tabprotect.secondary.gauss import gauss\n"
            "t = synthetic.preset('2d-small', seed=1)\n"
            "kernels = []\n"
            "for seconds in (1e9, 1e9, 1e-9, 1e9):\n"
            "    r = gauss(t, t.value.copy(), singleton=False, python_seconds=seconds)\n"
            "    kernels.append(r.details['kernel'])\n"
            "print(json.dumps(kernels))")
    # the last call: numba is loaded, whatever python_seconds says
    expected = ["python", "python", "compiled", "compiled"] if NUMBA else ["python"] * 4
    assert _json_of_new_process(code, root) == expected


def test_auto_kernel_stays_compiled_once_numba_is_loaded():
    t = synthetic.preset("2d-small", seed=1)
    gauss(t, t.value.copy(), singleton=False, kernel="compiled")  # loads numba
    out = gauss(t, t.value.copy(), singleton=False, python_below_cells=10**9)
    assert out.details["kernel"] == ("compiled" if NUMBA else "python")
    out = gauss(t, t.value.copy(), singleton=False, kernel="python")
    assert out.details["kernel"] == "python"


def test_without_numba_the_kernel_runs_as_plain_python():
    # TABPROTECT_NO_NUMBA=1: as if numba could not be imported
    root = Path(__file__).resolve().parents[1]
    code = ("import json, sys; sys.path.insert(0, 'tests'); import test_gauss as t; "
            "from tabprotect.secondary.gauss import compile as c; assert not c.NUMBA; "
            f"print(json.dumps(t.patterns({CASES[:2]!r})))")
    env = {**os.environ, "TABPROTECT_NO_NUMBA": "1", "PYTHONPATH": str(root)}
    proc = subprocess.run([sys.executable, "-c", code], cwd=root, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == patterns(CASES[:2])


def test_growing_the_arrays_does_not_change_the_pattern():
    t = synthetic.preset("10k-4d", seed=3)
    cost = t.value.copy()
    primary = t.status == "U"
    vectors = cell_vectors(t)
    for singleton in (False, True):
        big = run_elimination(t, cost, vectors, primary, singleton, None)
        # tiny initial arrays: many compactions and reallocations; tiny chunks
        small = run_elimination(t, cost, vectors, primary, singleton, None, chunk=7, room=1)
        assert (big.secondary == small.secondary).all() and big[1:] == small[1:]
        assert big.secondary.sum() > 0


def test_time_limit_keeps_unexamined_cells_hidden():
    t = synthetic.preset("1k-3d", seed=4)
    out = gauss(t, t.value.copy(), singleton=False, time_limit=0.0)
    assert out.solver_status == "time_limit"
    free = ~np.isin(t.status, ("U", "M", "P", "Z"))
    assert (out.status[free] == "M").all()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 11), st.sampled_from([0, 7, 14, 15])),
                max_size=60))
def test_fingerprint_table_finds_every_filed_primary(ops):
    # few fingerprints in a 16-slot table: long clusters that wrap around the end, so the
    # backward-shift deletion is exercised; a set is the model
    table = np.full(16, -1, np.int64)
    fp = np.zeros(12, np.int64)
    filed: set[int] = set()
    for insert, u, f in ops:
        if insert and u not in filed:
            fp[u] = f
            table_insert(table, fp, u)
            filed.add(u)
        elif not insert and u in filed:
            table_remove(table, fp, u)
            filed.discard(u)
        assert set(table[table >= 0].tolist()) == filed
        for v in filed:  # found by probing from its home slot before an empty slot
            slot = int(fp[v]) & 15
            while table[slot] != v:
                assert table[slot] >= 0
                slot = (slot + 1) & 15


def test_warns_on_large_tables_with_the_plain_python_kernel():
    t = synthetic.preset("2d-small", seed=1)
    with pytest.warns(RuntimeWarning, match="plain Python"):
        gauss(t, t.value.copy(), singleton=False, kernel="python",
              python_warning_cells=t.n_cells)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gauss(t, t.value.copy(), singleton=False, kernel="python",
              python_warning_cells=t.n_cells + 1)
        gauss(t, t.value.copy(), singleton=False, kernel="compiled",
              python_warning_cells=1)


def test_no_pair_of_count_one_cells_on_a_hierarchical_count_table():
    # a 3-D count table with two-level hierarchies: the contributor of a suppressed
    # count-1 cell must not derive any primary, in particular another count-1 cell
    # (judged by the independent LP audit, levels set to 0: exact disclosure only)
    from lp_oracle import protected as oracle_protected
    t = synthetic.count_table([(2, 2), (2, 2), (3,)], seed=2)
    t = t.replace(upl=np.zeros(t.n_cells), spl=np.zeros(t.n_cells))
    ones = (t.status == "U") & (t.freq == 1)
    plain = t.replace(status=gauss(t, t.value.copy(), singleton=False).status)
    broken = ~oracle_protected(plain, singleton=True)
    # without the attack in the elimination, some count-1 primary is derivable by the
    # contributor of another count-1 cell: the case the singleton handling is for
    assert (broken & ones).any()
    out = gauss(t, t.value.copy(), singleton=True)
    assert oracle_protected(t.replace(status=out.status), singleton=True).all()
    assert out.details["forced_disclosures"] == 0
