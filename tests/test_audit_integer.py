"""The audit's branch and bound on the warm model (tabprotect.audit.integer) against the
independent MILP bounds of tests/lp_oracle.py, on 3-D count tables whose LP vertices are
fractional."""
import numpy as np
import pytest

from lp_oracle import intervals
from tabprotect.audit.integer import branch_and_bound
from tabprotect.audit.system import Knowledge, SystemBuilder
from tabprotect.model import synthetic
from tabprotect.model.relations import linked_components
from tabprotect.secondary import protect


def _systems(shape, seed):
    # suppressed counts may be 0 (bound 0): fractional LP optima, so the search branches
    t = synthetic.count_table(shape, seed=seed).replace(empty="suppress")
    res = protect(t, method="gauss", cost="freq", repair=False, empty="suppress")
    table = t.replace(status=res.status)
    hidden = table.suppressed
    builder = SystemBuilder(table, hidden, dual_min_vars=10**9)
    for comp in linked_components(table.relations, hidden):
        comp = np.sort(comp)
        if len(comp) >= 4:
            yield table, hidden, comp, builder.system(comp)


# tables where some of the LPs' optima are fractional (the search branches)
@pytest.mark.parametrize("shape, seed", [([(5,), (5,), (4,)], 4), ([(5,), (5,), (4,)], 5),
                                         ([(3, 3), (2, 3), (2, 3)], 5)])
def test_integer_bounds_and_goal_tables_match_the_milp(shape, seed):
    counters, checked, branched = {"lp": 0}, 0, 0
    for table, hidden, comp, system in _systems(shape, seed):
        attacker = int(np.argmax(table.freq[comp] == 1)) if (table.freq[comp] == 1).any() \
            else None
        for fixed in (None, attacker):
            know = None if fixed is None else Knowledge.exact([fixed], [system.value[fixed]])
            system.model(know)
            system.fix(know)    # the attacker's knowledge in the warm model, as the audit does
            exact = intervals(table, hidden, fixed=() if fixed is None else [comp[fixed]],
                              integer=True, cells=comp)
            for j in range(system.k):
                lo, hi = exact[int(comp[j])]
                for sense, end in (("max", hi), ("min", lo)):
                    before = counters["lp"]
                    found, x = branch_and_bound(system, j, sense, know, counters, 10**6)
                    branched += counters["lp"] - before > 1
                    assert found == "found" and x[j] == pytest.approx(end)
                    _assert_table(system, know, x)
                    # one goal beyond the end has no table; the end itself has one
                    beyond = end + (1 if sense == "max" else -1)
                    assert branch_and_bound(system, j, sense, know, counters, 10**6,
                                            goal=beyond)[0] == "none"
                    found, x = branch_and_bound(system, j, sense, know, counters, 10**6,
                                                goal=end)
                    assert found == "found" and x[j] == pytest.approx(end)
                    _assert_table(system, know, x)
                    checked += 1
            system.unfix(know)
    assert checked > 0 and branched > 0


def _assert_table(system, know, x):
    lb, ub = system.bounds(know)
    assert np.all(x == np.round(x))
    assert np.all(x >= lb - 1e-9) and np.all(x <= ub + 1e-9)
    assert np.allclose(system.A @ x, system.rhs)


class _RecordingModel:
    """Column bounds as a warm model holds them."""

    def __init__(self, lb, ub):
        self.lb, self.ub = lb.copy(), ub.copy()

    def set_col_bounds(self, idx, lo, hi):
        self.lb[idx], self.ub[idx] = lo, hi


def test_node_bounds_are_the_root_bounds_with_the_nodes_branchings():
    # depth-first nodes in any order: after each, the model holds exactly the root's
    # bounds tightened by that node's branchings (none left from an earlier node)
    from tabprotect.audit.integer import _Bounds
    rng = np.random.default_rng(0)
    k = 12
    lb0, ub0 = np.zeros(k), np.full(k, 9.0)
    root_lb, root_ub = lb0.copy(), ub0.copy()
    root_lb[3] = 2.0        # a goal's bound
    model = _RecordingModel(lb0, ub0)
    bounds = _Bounds(model, lb0, ub0)
    for _ in range(300):
        depth = int(rng.integers(0, 5))
        branch = tuple((int(rng.integers(k)), -np.inf, float(rng.integers(0, 9)))
                       if rng.random() < 0.5 else
                       (int(rng.integers(k)), float(rng.integers(0, 9)), np.inf)
                       for _ in range(depth))
        bounds.apply(root_lb, root_ub, branch)
        lb, ub = root_lb.copy(), root_ub.copy()
        for var, lo, hi in branch:
            lb[var], ub[var] = max(lb[var], lo), min(ub[var], hi)
        assert np.array_equal(model.lb, lb) and np.array_equal(model.ub, ub)
    bounds.restore()
    assert np.array_equal(model.lb, lb0) and np.array_equal(model.ub, ub0)
