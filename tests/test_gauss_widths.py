"""gauss's width step on general (linked) tables: every pattern is judged by the
independent LP oracle (tests/lp_oracle.py), with the single-contributor attack."""
from __future__ import annotations

import time

import numpy as np
import pytest

from helpers import unprotectable_two_by_two
from lp_oracle import protected as oracle_protected
from tabprotect.errors import InfeasibleRulesError
from tabprotect.model import Table
from tabprotect.model.linked import TOTAL, link_tables
from tabprotect.model.synthetic import DIMENSION_NAMES, generate
from tabprotect.secondary.gauss import gauss
from tabprotect.secondary import protect
from tabprotect.secondary.gauss.widths import WidthStep
from tabprotect.secondary.prune import FREE_LOG_WEIGHT, log_weights

#: the three 3-D faces of a 4-D table: linked tables sharing their 2-D margins
FACES = ((0, 1, 2), (0, 1, 3), (0, 2, 3))


def linked(branchings, seed) -> Table:
    """The faces of a generated 4-D table as one general table, primaries carried over."""
    full = generate(branchings, seed=seed)
    names = DIMENSION_NAMES[:4]
    hs = [full.hierarchy(v) for v in names]
    parts = []
    for face in FACES:
        index = tuple(slice(None) if d in face else 0 for d in range(4))
        parts.append(Table.from_arrays(
            {names[d]: hs[d] for d in face}, full.value.reshape(full.shape)[index].ravel(),
            full.freq.reshape(full.shape)[index].ravel()))
    t = link_tables(parts)
    pos = [t.labels[v].map({**{c: k for k, c in enumerate(h.codes)}, TOTAL: 0}).to_numpy()
           for v, h in zip(names, hs)]
    src = np.ravel_multi_index(pos, full.shape)
    return t.replace(status=full.status[src], upl=full.upl[src], lpl=full.lpl[src])


SMALL = ((2, 2), (3,), (3,), (2,))   # 210 cells


def _short(table, status):
    judged = table.replace(status=status)
    ok = oracle_protected(judged, singleton=True)
    return int((~ok & (table.status == "U")).sum())


def test_width_step_makes_the_pattern_pass_where_the_elimination_alone_falls_short():
    t = linked(SMALL, seed=2)
    assert not t.dimensions and (t.status == "U").sum() >= 5
    alone = gauss(t, t.value.copy(), widths="never")
    assert _short(t, alone.status) > 0       # the fixture needs the width step
    out = gauss(t, t.value.copy())
    assert out.details["widths_unmet"] == 0 and out.details["widths_lps"] > 0
    assert _short(t, out.status) == 0
    # the width step only adds suppressions; primaries and their status are kept
    assert ((out.status == "U") == (t.status == "U")).all()


@pytest.mark.parametrize("seed", [0, 1, 3])
def test_gauss_on_linked_tables_passes_the_oracle(seed):
    t = linked(((2,), (3,), (2,), (2,)), seed=seed)
    out = gauss(t, t.value.copy())
    assert out.details.get("widths_unmet", 0) == 0
    assert _short(t, out.status) == 0


def test_width_step_alone_gives_every_condition_a_witness():
    """Without the elimination: the width step's own pattern meets every level."""
    t = linked(SMALL, seed=3)
    step = WidthStep(t, t.value.copy(), singleton=True).run(t.status == "U")
    assert step.unmet == 0 and not step.timed_out and step.added > 0
    status = np.where(step.suppressed & (t.status != "U"), "M", t.status)
    assert _short(t, status) == 0


def test_width_step_stops_at_its_deadline():
    t = linked(SMALL, seed=2)
    step = WidthStep(t, t.value.copy(), singleton=True)
    out = step.run(t.status == "U", deadline=time.perf_counter() - 1.0)
    assert out.timed_out and out.lps == 0 and out.added == 0
    assert out.unmet == len(step.conditions()) > 0


def test_width_step_is_off_on_product_tables_by_default():
    full = generate(((2,), (3,)), seed=1)
    assert (full.status == "U").any()
    assert "widths_lps" not in gauss(full, full.value.copy()).details
    assert "widths_lps" in gauss(full, full.value.copy(), widths="always").details


def test_width_step_with_log_weights_gives_every_condition_a_witness():
    """With every LP on the log-scaled weights (as after stalls of the exact ones) the
    witnesses still prove every condition."""
    t = linked(SMALL, seed=3)
    step = WidthStep(t, t.value.copy(), singleton=True, exact_stalls=0)
    out = step.run(t.status == "U")
    assert out.unmet == 0 and not out.timed_out and out.added > 0
    status = np.where(out.suppressed & (t.status != "U"), "M", t.status)
    assert _short(t, status) == 0


def test_log_weights_order_the_published_cells_as_their_cost():
    w = np.array([1e-5, 3e-5, 1.0, 8e3, 2.0])
    free = np.array([False, False, False, False, True])
    out = log_weights(w, free)
    assert out[4] == FREE_LOG_WEIGHT and out[0] == 1.0
    assert (np.diff(out[:4]) > 0).all() and out[3] < 25   # 1 + ln(8e8)


def _as_general(t: Table) -> Table:
    return Table.from_relations(t.value, t.relations, t.relation_total, freq=t.freq,
                                status=t.status, upl=t.upl, lpl=t.lpl, spl=t.spl)


def test_gauss_on_a_general_table_checks_feasibility_only_after_a_failed_audit():
    # the width step meets an unprotectable primary at the cost of one LP: protect()
    # checks feasibility after the final audit, with the same error naming the cell
    with pytest.raises(InfeasibleRulesError, match="cannot be protected.*up protection"):
        protect(_as_general(unprotectable_two_by_two()), method="gauss", cost="unity",
                singleton=False)
    t = linked(SMALL, seed=2)
    res = protect(t, method="gauss", cost="value")
    assert res.passed and _short(t, res.status) == 0
    assert not any(k.startswith("feasibility check") for k in res.stage_seconds)
    # every condition has a witness: the elimination is not needed
    assert res.solver["elimination_skipped"]
