"""gauss's attack step (tabprotect/secondary/gauss/attack.py): the method's own pattern
meets the protection levels against every single contributor, judged by the
independent LP audit (tests/lp_oracle.py), with no repair."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lp_oracle import protected as oracle_protected

from helpers import flat_count_table
from tabprotect.audit import audit
from tabprotect.model import Table
from tabprotect.secondary import protect
from tabprotect.secondary.base import cost_vector
from tabprotect.secondary.gauss import gauss
from tabprotect.secondary.gauss.attack import AttackStep


def short_primaries(t: Table, status: np.ndarray) -> np.ndarray:
    """Primaries the oracle finds short on ``status`` that some pattern protects (every
    non-empty cell suppressed)."""
    got = oracle_protected(t.replace(status=status), singleton=True)
    can = oracle_protected(t, unpublished=t.status != "Z", singleton=True)
    return np.flatnonzero(~got & can & (t.status == "U"))


def _short_after_the_elimination(leaves, seed):
    """A flat 3-D count table (mean 1.5), its value costs and gauss's pattern without the
    attack step, which leaves some primary short against a single contributor."""
    t = flat_count_table(leaves, seed, 1.5)
    cost = cost_vector(t, "value")
    plain = gauss(t, cost, singleton=True, attack="never")
    assert len(short_primaries(t, plain.status)) > 0
    return t, cost, plain


@pytest.mark.parametrize("seed", [2, 12])
def test_the_elimination_alone_leaves_narrow_intervals_the_step_widens(seed):
    # 3-D counts where no contributor derives a primary after the elimination, yet one
    # count-1 cell known leaves some primaries' intervals 1.5 wide
    t, cost, plain = _short_after_the_elimination((3, 3, 3), seed)
    out = gauss(t, cost, singleton=True)
    assert len(short_primaries(t, out.status)) == 0
    assert out.details["attack_added"] > 0
    assert ((plain.status == "M") <= (out.status == "M")).all()


@settings(max_examples=6, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from([(4, 5), (3, 3, 2), (3, 3, 3)]),
       st.sampled_from([1.5, 3.0]))
def test_property_the_method_alone_passes_the_audit_with_the_attack(seed, leaves, mean):
    t = flat_count_table(leaves, seed, mean)
    out = gauss(t, cost_vector(t, "value"), singleton=True)
    assert len(short_primaries(t, out.status)) == 0


@pytest.mark.parametrize("seed", [2, 12])
def test_the_step_pricing_every_widened_lp_leaves_no_primary_short(seed):
    # every widened LP priced (as on large tables): the step's pattern, the
    # elimination's extended, has no primary the oracle finds short against a single
    # contributor (of those some pattern protects), pricing bought cells where the
    # pattern had no witness, and it leaves unmet the conditions one LP over each whole
    # component leaves
    t, cost, plain = _short_after_the_elimination((4, 4, 3), seed)
    hidden = np.isin(plain.status, ("U", "M"))
    out = AttackStep(t, cost, priced_cells=0).run(hidden)
    assert out.added > 0
    assert out.unmet == AttackStep(t, cost, priced_cells=10**9).run(hidden).unmet
    status = np.where(out.suppressed & (t.status != "U"), "M", t.status)
    assert len(short_primaries(t, status)) == 0


def test_a_pattern_with_every_witness_gets_no_cell():
    # the step's own output has every witness: a second run adds nothing and settles
    # every condition (the witnesses are found over the pattern, not bought)
    t = flat_count_table((3, 3, 3), 12, 1.5)
    cost = cost_vector(t, "value")
    out = gauss(t, cost, singleton=True)
    again = AttackStep(t, cost).run(np.isin(out.status, ("U", "M")))
    assert again.added == 0
    assert again.unmet == out.details["attack_unmet"]


def test_no_step_without_the_attack_or_on_magnitude_tables():
    t = flat_count_table((3, 3, 3), 12, 1.5)
    cost = cost_vector(t, "value")
    assert "attack_lps" not in gauss(t, cost, singleton=False).details
    magnitude = t.replace(kind="magnitude")
    assert "attack_lps" not in gauss(magnitude, cost, singleton=True, widths="never").details


@pytest.mark.slow
@pytest.mark.parametrize("seed", [2, 12])
def test_the_step_meets_the_levels_for_an_integer_intruder_too(seed):
    # protect() audits a count table as an integer intruder: the step's real-valued
    # witnesses on these tables are met by integral tables as well
    t = flat_count_table((3, 3, 3), seed, 1.5)
    out = gauss(t, cost_vector(t, "value"), singleton=True)
    got = oracle_protected(t.replace(status=out.status), singleton=True, integer=True)
    can = oracle_protected(t, unpublished=t.status != "Z", singleton=True, integer=True)
    assert not (~got & can & (t.status == "U")).any()


@settings(max_examples=6, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from([(3, 3, 3), (4, 3, 3), (3, 3, 2)]))
def test_property_the_steps_moves_are_integral_tables_within_the_pattern(seed, leaves):
    # each row: integral, every relation kept, only cells of the final pattern moved,
    # every cell within its a-priori bounds (counts stay non-negative)
    t = flat_count_table(leaves, seed, 1.5)
    out = gauss(t, cost_vector(t, "value"), singleton=True)
    d = out.moves.toarray()
    hidden = np.isin(out.status, ("U", "M"))
    assert np.array_equal(d, np.round(d))
    assert not d[:, ~hidden].any()
    assert np.abs(t.relations @ d.T).max(initial=0.0) == 0.0
    assert ((t.value + d) >= 0).all()
    assert (np.abs(d).sum(axis=1) > 0).all()


@settings(max_examples=5, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from([(3, 3, 3), (3, 3, 2)]),
       st.sampled_from([1.5, 3.0]))
def test_property_the_audit_with_the_steps_moves_is_the_oracles_cell_by_cell(seed, leaves,
                                                                            mean):
    # the moves only spare LPs: the verdict with them is the integer oracle's, against
    # the outside intruder and every single contributor, primary by primary
    t = flat_count_table(leaves, seed, mean)
    out = gauss(t, cost_vector(t, "value"), singleton=True)
    pattern = t.replace(status=out.status)
    truth = oracle_protected(pattern, singleton=True, integer=True)
    res = audit(pattern, singleton=True, integer=True, mode="verdict", moves=out.moves)
    np.testing.assert_array_equal(res.protected, truth)
    assert res.n_moves_rejected == 0


def test_protect_hands_the_steps_moves_to_its_audit():
    t = flat_count_table((4, 4, 3), 5, 1.5)
    res = protect(t, method="gauss", cost="freq", singleton=True, audit_mode="verdict",
                  repair=False)
    assert res.audit.n_moves_used == res.solver["attack_moves"] > 0


@pytest.mark.parametrize("seed", [0, 5, 10])
def test_fractional_witnesses_lifted_to_integral_multiples_are_tables_the_oracle_backs(
        seed):
    # a half-integral witness doubled (or its mirror image) is an integral move of the
    # pattern: checked here without the step's code, and the audit with the lifted
    # moves is the integer oracle's cell by cell, with fewer LPs than without them
    # (suppressed counts may be 0 here: at bound 1 the witnesses are integral already)
    t = flat_count_table((4, 4, 3), seed, 1.5).replace(empty="suppress")
    cost = cost_vector(t, "value")
    out = gauss(t, cost, singleton=True)
    hidden = np.isin(out.status, ("U", "M"))
    lifted = AttackStep(t, cost).run(hidden).moves
    plain = AttackStep(t, cost, lift=1).run(hidden).moves
    assert lifted.shape[0] > plain.shape[0]
    d = lifted.toarray()
    assert np.array_equal(d, np.round(d)) and not d[:, ~hidden].any()
    assert np.abs(t.relations @ d.T).max(initial=0.0) == 0.0
    assert ((t.value + d >= t.lb) & (t.value + d <= t.ub)).all()
    pattern = t.replace(status=out.status)
    truth = oracle_protected(pattern, singleton=True, integer=True)
    runs = {}
    for name, moves in (("lifted", lifted), ("plain", plain)):
        res = audit(pattern, singleton=True, integer=True, mode="verdict", moves=moves)
        np.testing.assert_array_equal(res.protected, truth)
        assert res.n_moves_rejected == 0
        runs[name] = res.summary()["lp_solved"]
    assert runs["lifted"] <= runs["plain"]


@pytest.mark.parametrize("seed", [2, 12])
def test_components_kept_across_a_growing_pattern_are_those_of_a_fresh_step(seed):
    # the step keeps the widened components (pattern and candidates) while the pattern
    # grows by candidates; each must be the component a fresh labelling finds
    t = flat_count_table((3, 3, 3), seed, 1.5)
    cost = cost_vector(t, "value")
    z = np.isin(gauss(t, cost, singleton=True, attack="never").status, ("U", "M"))
    step = AttackStep(t, cost)
    primaries = np.flatnonzero(t.status == "U")
    rng = np.random.default_rng(seed)
    for grow in rng.permutation(np.flatnonzero(step.candidate & ~z))[:4]:
        for s in primaries:
            for widen in (False, True):
                comp = step._component(int(s), z, widen)
                fresh = AttackStep(t, cost)._component(int(s), z, widen)
                assert np.array_equal(comp.cells, fresh.cells)
                assert (comp.sub != fresh.sub).nnz == 0
                assert (comp.split != fresh.split).nnz == 0
        z = z.copy()
        z[grow] = True


def _fresh_cost(step: AttackStep, cond, comp, z, keep):
    """The optimum of a condition's protection LP on a new model (no warm basis, every
    bound sent), as the warm LP would be given it."""
    lp = step._attack_lp(cond, comp, z, keep)
    if lp is None:
        return None, None
    res = AttackStep._lp_model(*lp, presolve=False).solve()
    return (res.objective if res.status == "optimal" else None), lp[0]


def _compare_with_fresh(step: AttackStep, cond, comp, z, keep, start=None) -> bool:
    """Whether the step's LP for ``cond`` found a move, asserting its cost is a new
    model's optimum (both find one or neither)."""
    y = step._solve_attack(cond, comp, z, keep, None, start)
    fresh, weights = _fresh_cost(step, cond, comp, z, keep)
    assert (y is None) == (fresh is None)
    if y is None:
        return False
    n = len(comp.cells)
    got = weights[:n] @ np.maximum(y, 0) + weights[n:] @ np.maximum(-y, 0)
    assert got == pytest.approx(fresh, rel=1e-6, abs=1e-9)
    return True


def test_each_warm_protection_lp_has_the_optimum_of_a_fresh_one():
    # the warm model of a component takes one condition after another, with and without
    # attackers held, changing only the bounds that differ, and is kept while the
    # pattern grows elsewhere: each optimum is the one a new model with every bound
    # given finds
    t = flat_count_table((3, 3, 3), 12, 1.5)
    cost = cost_vector(t, "value")
    z = np.isin(gauss(t, cost, singleton=True).status, ("U", "M"))
    step = AttackStep(t, cost)
    step._integral = []
    compared = 0
    for widen in (False, True):
        for cond in step.conditions():
            comp = step._component(cond.cell, z, widen)
            held = (step.attacker[comp.cells] >= 0) & \
                (step.attacker[comp.cells] != step.attacker[cond.cell])
            for keep in (None, held, None):
                compared += _compare_with_fresh(step, cond, comp, z, keep)
        # a published cell joins the pattern: the components it does not touch, and
        # the widened one, keep their warm models
        z = z.copy()
        z[np.flatnonzero(step.candidate & ~z)[0]] = True
    assert compared >= 20


@pytest.mark.parametrize("seed", [2, 12, 28])
def test_a_priced_widened_lp_has_the_optimum_of_the_whole_one(seed):
    # the widened LP solved from the pattern's component and the primary's relations,
    # the cells that price out joining, ends at the optimum of the LP over the whole
    # widened component (or hands it that LP): against no attacker, and with every
    # attacker but the primary's held
    t = flat_count_table((4, 4, 3), seed, 1.5)
    cost = cost_vector(t, "value")
    z = np.isin(gauss(t, cost, singleton=True, attack="never").status, ("U", "M"))
    step = AttackStep(t, cost)
    priced = 0
    for cond in step.conditions():
        inner = step._component(cond.cell, z, False)
        comp = step._component(cond.cell, z, True)
        start = step._start(cond.cell, comp, inner)
        held = (step.attacker[comp.cells] >= 0) & \
            (step.attacker[comp.cells] != step.attacker[cond.cell])
        for keep in (None, held):
            priced += _compare_with_fresh(step, cond, comp, z, keep, start)
    assert priced >= 10


@pytest.mark.parametrize("seed", [2, 28])
def test_a_second_lp_with_published_cells_gives_another_pattern_the_oracle_passes(seed):
    # from attack_together kept attackers on, the second LP of a condition buys cells
    # against all of them at once instead of one LP per attacker: another pattern on
    # these tables, and the integer oracle finds no primary short on it
    t = flat_count_table((3, 3, 3), seed, 1.5)
    cost = cost_vector(t, "value")
    apart = gauss(t, cost, singleton=True, attack_together=10**6)
    together = gauss(t, cost, singleton=True, attack_together=2)
    assert not np.array_equal(apart.status, together.status)
    can = oracle_protected(t, unpublished=t.status != "Z", singleton=True, integer=True)
    for out in (apart, together):
        got = oracle_protected(t.replace(status=out.status), singleton=True, integer=True)
        assert not (~got & can & (t.status == "U")).any()
