"""A single contributor is no attacker of the cells holding their own record: the optimal
method protects a table where a total and its one non-empty part hold the same single
record (it refused it as unprotectable), judged by the independent LP oracle."""
from __future__ import annotations

import numpy as np

from lp_oracle import protected
from tabprotect.model import synthetic
from tabprotect.records import same_record
from tabprotect.secondary import protect
from tabprotect.secondary.attack_requirements import Requirements


def _table():
    # seed 3's R1 has one contributor, held by R1.1 (R1.2 is empty)
    return synthetic.preset("3d-small", seed=3)


def test_the_table_has_a_primary_sharing_its_record():
    table = _table()
    label = same_record(table)
    primary = np.flatnonzero(table.status == "U")
    shared = [s for s in primary if label[s] >= 0 and (label == label[s]).sum() > 1]
    assert shared
    req = Requirements.from_table(table, singleton=True)
    s = int(shared[0])
    partner = int(next(j for j in np.flatnonzero(label == label[s]) if j != s))
    assert not req.attacks(partner, s)
    assert req.attacks(-1, s)
    other = int(next(j for j in np.flatnonzero(req.singleton) if label[j] != label[s]))
    assert req.attacks(other, s)


def test_optimal_protects_a_table_with_shared_records():
    table = _table()
    result = protect(table, "optimal", time_limit=120)
    assert result.passed
    unpublished = np.isin(result.table.status, ("U", "M"))
    assert protected(table, unpublished, singleton=True).all()
    gauss = protect(table, "gauss", time_limit=120)
    assert result.cost <= gauss.cost + 1e-6
