"""protect()'s feasibility check on product tables: the sibling cubes it hands its audit
are moves of the table (every relation kept, unpublished cells only), and with them the
check decides as without them and as the independent LP audit (tests/lp_oracle.py)."""
from __future__ import annotations

import numpy as np
import pytest

from lp_oracle import protected as oracle_protected
from tabprotect.errors import InfeasibleRulesError
from tabprotect.audit import audit
from tabprotect.model import synthetic
from tabprotect.secondary.candidates import candidate_cells
from tabprotect.audit.sibling import sibling_cubes
from tabprotect.secondary.feasibility import check_feasible
from tabprotect.secondary.protect_settings import ProtectSettings

TABLES = [((2, 3), (4,)), ((2, 2), (2, 2)), ((3,), (2, 2), (2,)), ((2, 4), (3, 2))]


def _everything(t):
    return candidate_cells(t, "publish") | t.suppressed


@pytest.mark.parametrize("branchings", TABLES)
def test_sibling_cubes_keep_every_relation(branchings):
    rows = 0
    for seed in range(4):
        t = synthetic.count_table(list(branchings), seed=seed)
        every = _everything(t)
        moves = sibling_cubes(t, every, per_primary=3)
        rows += moves.shape[0]
        if moves.shape[0] == 0:
            continue
        assert np.abs(t.relations @ moves.T).max() == 0
        assert every[np.unique(moves.indices)].all()
        # 2^d corners, +1 and -1 alike
        assert (np.asarray(moves.sum(axis=1)).ravel() == 0).all()
        assert (np.diff(moves.indptr) == 2 ** len(branchings)).all()
    assert rows > 0


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("published", [0.0, 0.3])
@pytest.mark.parametrize("branchings", TABLES)
def test_check_with_sibling_cubes_decides_as_the_lp_audit(branchings, published, seed):
    # some cells never suppressed (P): primaries no pattern protects, refused alike
    t = synthetic.count_table(list(branchings), seed=seed)
    rng = np.random.default_rng(seed)
    st_ = t.status.copy()
    st_[(st_ == "S") & (rng.random(t.n_cells) < published)] = "P"
    t = t.replace(status=st_)
    every = _everything(t)
    pattern = t.replace(status=np.where(every & (t.status != "U"), "M", t.status))
    truth = oracle_protected(pattern, integer=True)[t.status == "U"].all()
    outcomes = []
    for cubes in (0, 2):
        settings = ProtectSettings(feasibility_sibling_cubes=cubes)
        try:
            outcomes.append(("passed", check_feasible(t, every, False, None,
                                                      settings=settings)))
        except InfeasibleRulesError as exc:
            outcomes.append(("refused", str(exc)))
    assert outcomes[0] == outcomes[1]
    assert (outcomes[0][0] == "passed") == truth


def test_both_verdicts_occur():
    seen = set()
    for branchings in TABLES:
        for seed in range(4):
            t = synthetic.count_table(list(branchings), seed=seed)
            rng = np.random.default_rng(seed)
            st_ = t.status.copy()
            st_[(st_ == "S") & (rng.random(t.n_cells) < 0.3)] = "P"
            t = t.replace(status=st_)
            try:
                check_feasible(t, _everything(t), False, None)
                seen.add("passed")
            except InfeasibleRulesError:
                seen.add("refused")
    assert seen == {"passed", "refused"}


def test_sibling_cubes_spare_the_check_its_lps():
    t = synthetic.count_table([(3, 5), (3, 5)], seed=4)
    every = _everything(t)
    moves = sibling_cubes(t, every, per_primary=2)
    with_cubes = audit(t, unpublished=every, mode="verdict", moves=moves)
    without = audit(t, unpublished=every, mode="verdict")
    np.testing.assert_array_equal(with_cubes.protected, without.protected)
    assert with_cubes.n_moves_rejected == 0 and with_cubes.n_moves_used > 0
    assert with_cubes.n_lp < without.n_lp


@pytest.mark.parametrize("branchings,seed", [(((4,), (4,)), 10), (((3,), (3,), (3,)), 8)])
def test_unprotectable_table_is_refused_before_any_attacker_repair(branchings, seed):
    """A table whose rules no pattern meets against single-contributor attackers is
    refused after the first audit, before a repair round's attacker LPs (whose work on
    such a table only grows the pattern: minutes on a 2,240-cell 5-D table), and the
    refusal is right: with every candidate suppressed the independent LP audit finds a
    primary a single contributor narrows too far."""
    from tabprotect.secondary import protect
    t = synthetic.generate(branchings, seed=seed)
    every = _everything(t)
    assert not oracle_protected(t, unpublished=every, singleton=True)[t.status == "U"].all()
    assert oracle_protected(t, unpublished=every)[t.status == "U"].all()   # the outsider
    audits = []
    with pytest.raises(InfeasibleRulesError, match="cannot be protected"):
        protect(t, method="gauss",
                progress=lambda msg, f: audits.append(msg) if msg.startswith("audit") else 0)
    assert len(audits) == 1         # the first audit, no re-audit after a repair
