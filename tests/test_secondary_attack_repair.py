"""The large path's repair round against single-contributor attackers
(tabprotect/secondary/attack_repair.py): a primary no pattern protects against one
contributor is refused with its name, as on the small path; one a pattern protects gets
cells that serve it.  Judged by the independent LP audit (tests/lp_oracle.py)."""
from __future__ import annotations

import numpy as np
import pytest

from lp_oracle import protected as oracle_protected
from tabprotect.errors import InfeasibleRulesError
from tabprotect.model import synthetic
from tabprotect.secondary import protect
from tabprotect.secondary.attack_repair import AttackRepairSettings, attack_round, decide
from tabprotect.secondary.attack_requirements import Requirements
from tabprotect.secondary.candidates import candidate_cells
from tabprotect.secondary.protect_settings import ProtectSettings

#: every table takes the large path (no up-front check, local repair rounds)
LARGE_PATH = ProtectSettings(large_table=1)


def _with_fixed_cells(branchings, seed: int, share: float, empty: str = "publish"):
    """A hierarchical count table with a share of its non-primary cells never
    suppressed (P); ``empty``: its policy (with ``"publish"`` a suppressed count is at
    least 1)."""
    t = synthetic.count_table(list(branchings), seed=seed).replace(empty=empty)
    rng = np.random.default_rng(seed)
    st = t.status.copy()
    st[(st == "S") & (rng.random(t.n_cells) < share)] = "P"
    return t.replace(status=st)


def _everything(t):
    every = candidate_cells(t, "publish") | t.suppressed
    return t.replace(status=np.where(every & (t.status != "U"), "M", t.status))


def test_a_primary_only_a_single_contributor_defeats_is_refused_on_the_large_path():
    # suppressed counts may be 0 (bound 0): at the bound 1 some primaries of these tables
    # (seeds 0-29) are short against the outside intruder too
    t = _with_fixed_cells(((2, 3), (3, 2)), seed=9, share=0.15, empty="suppress")
    pattern = _everything(t)
    primary = t.status == "U"
    # the independent audit: every primary is protectable against the outside intruder,
    # some are not against a single contributor, whatever else is suppressed
    assert oracle_protected(pattern, singleton=False)[primary].all()
    bad = np.flatnonzero(primary & ~oracle_protected(pattern, singleton=True))
    assert len(bad)
    with pytest.raises(InfeasibleRulesError) as err:
        protect(t, method="gauss", singleton=True, settings=LARGE_PATH, time_limit=60,
                empty="suppress")
    message = str(err.value)
    assert "single-contributor" in message
    named = [c for c in np.flatnonzero(primary) if t.cell_name(c) in message]
    assert set(named) <= set(bad.tolist()) and named


def test_decide_refuses_exactly_what_the_independent_audit_finds_unprotectable():
    t = _with_fixed_cells(((2, 3), (3, 2)), seed=9, share=0.15)
    req = Requirements.from_table(t, singleton=True)
    cand = candidate_cells(t, "publish")
    conditions = [(int(s), kind, int(j)) for s in np.flatnonzero(t.status == "U")
                  for kind in ("up", "width")
                  for j in [-1, *np.flatnonzero((t.freq == 1) & (t.status != "P"))]
                  if j != s]
    out, bad = decide(t, np.ones(t.n_cells), cand, req, conditions, deadline=None)
    pattern = _everything(t)
    truth = np.flatnonzero((t.status == "U") & ~oracle_protected(pattern, singleton=True))
    assert sorted({s for s, _, _ in bad}) == truth.tolist()


@pytest.mark.parametrize("branchings,seed", [(((2, 3), (3, 2)), 8), (((3, 3), (2, 3)), 2),
                                             (((3, 3), (2, 3)), 9)])
def test_the_round_serves_primaries_short_against_single_contributors(branchings, seed):
    # a pattern that protects against the outside intruder only
    t = synthetic.count_table(list(branchings), seed=seed)
    pattern = protect(t, method="gauss", singleton=False, cost="unity").confidential_table
    primary = t.status == "U"
    short = np.flatnonzero(primary & ~oracle_protected(pattern, singleton=True))
    assert len(short)
    cand = candidate_cells(t, "publish")
    out = attack_round(pattern, np.ones(t.n_cells), cand, Requirements.from_table(t),
                       short, deadline=None, settings=AttackRepairSettings())
    assert len(out.added) and cand[out.added].all() and len(out.unresolved) == 0
    status = pattern.status.copy()
    status[out.added] = "M"
    repaired = t.replace(status=status)
    assert oracle_protected(repaired, singleton=True)[primary].all()
    # a witness per condition: each deviation keeps every relation
    for cells, y in out.moves:
        assert np.abs(t.relations[:, cells] @ y).max() < 1e-6
