"""Every suppression method through protect() on count tables whose empty cells are
published: the final pattern protects every primary when each suppressed count is known to
be at least 1 (an integer LP written here over a copy of the table with bound 0, the
bound 1 added per suppressed cell); and the audit command states the policy."""
from __future__ import annotations

import numpy as np
import pytest

from helpers import flat_count_table
from lp_oracle import intervals, protected as oracle_protected
from tabprotect.cli import main
from tabprotect.secondary import protect

#: small flat count tables (Poisson counts, primaries the counts 1-2: upper level 1,
#: sliding width 2), two in 2-D and one in 3-D
TABLES = [((5, 6), 3), ((6, 5), 8), ((3, 3, 3), 4)]


def _short_at_one(table, hidden: np.ndarray) -> list[int]:
    """The primaries whose integer interval, every hidden cell in [1, inf) and every
    other at its value, misses an upper, lower or sliding level (or pins the cell)."""
    base = table.replace(empty="suppress")
    assert (base.lb == 0).all()
    assert (table.value[hidden] >= 1).all()   # empty cells are published (Z)
    got = intervals(base, hidden, integer=True,
                    known={int(i): (1.0, np.inf) for i in np.flatnonzero(hidden)})
    short = []
    for i in np.flatnonzero(table.status == "U"):
        lo, hi = got[int(i)]
        x = table.value[i]
        if not (hi >= x + table.upl[i] and lo <= max(x - table.lpl[i], 1.0)
                and hi - lo >= table.spl[i] and hi > lo):
            short.append(int(i))
    return short


@pytest.mark.parametrize("method", ["gauss", "hypercube", "modular", "optimal", "greedy"])
@pytest.mark.parametrize("leaves,seed", TABLES)
def test_every_method_protects_the_counts_known_non_empty(method, leaves, seed):
    t = flat_count_table(leaves, seed)
    res = protect(t, method=method, cost="value", singleton=False, time_limit=60)
    final = res.confidential_table
    hidden = np.isin(final.status, ("U", "M"))
    assert res.passed, res.notes
    assert _short_at_one(final, hidden) == []
    # the same pattern with a-priori bound 0 everywhere is no proof at bound 1: the
    # bare primaries of these tables are not protected at 1
    assert _short_at_one(t, t.status == "U")


@pytest.mark.parametrize("method", ["gauss", "optimal"])
def test_single_contributor_attackers_at_the_bound_one(method):
    # with singleton, the independent LP audit's attackers on the table's own bound 1
    t = flat_count_table((5, 6), 3)
    res = protect(t, method=method, cost="value", singleton=True, time_limit=60)
    final = res.confidential_table
    assert res.passed and (final.lb[final.suppressed] == 1).all()
    assert oracle_protected(final, singleton=True, integer=True)[final.status == "U"].all()
    assert _short_at_one(final, final.suppressed) == []


JOB = """
[input]
cells = "cells.csv"
dimensions = ["r", "c"]
value = "n"
status = "status"
upl = "upl"
lpl = "upl"
kind = "frequency"
compute_totals = true
{audit}
[output]
dir = "out"
"""

#: a 2x2 block of count-1 primaries behind published margins: each in [0, 2] when a
#: suppressed count may be 0, exactly 1 when it is at least 1
CELLS = """r,c,n,status,upl
1,a,1,U,1
1,b,1,U,1
1,c,5,,0
2,a,1,U,1
2,b,1,U,1
2,c,6,,0
3,a,4,,0
3,b,7,,0
3,c,8,,0
"""


def _job(folder, audit: str = ""):
    folder.mkdir()
    (folder / "job.toml").write_text(JOB.format(audit=audit))
    (folder / "cells.csv").write_text(CELLS)
    return str(folder / "job.toml")


def test_audit_command_states_the_policy(tmp_path, capsys):
    # the default is protect's: published empty cells, the block disclosed
    assert main(["audit", _job(tmp_path / "default")]) == 1
    assert "UNSAFE" in capsys.readouterr().out
    assert main(["audit", _job(tmp_path / "option"), "--empty", "suppress"]) == 0
    assert main(["audit", _job(tmp_path / "key", '[audit]\nempty = "suppress"\n')]) == 0
    assert main(["audit", _job(tmp_path / "both", '[audit]\nempty = "suppress"\n'),
                 "--empty", "publish"]) == 1


def test_gauss_attack_step_below_three_dimensions_takes_the_primaries_the_bound_holds():
    # upper level 1 and sliding width 2: a count 1 at its bound 1 has no range down, a
    # count 2 has the half width's 1; only the count-1 primaries get the step's LPs
    from tabprotect.secondary.base import cost_vector
    from tabprotect.secondary.gauss.attack import AttackStep
    t = flat_count_table((5, 6), 3)
    prim = t.status == "U"
    assert (t.value[prim] == 1).any() and (t.value[prim] == 2).any()
    cost = cost_vector(t, "value")
    only = {c.cell for c in AttackStep(t, cost, bound_only=True).conditions()}
    every = {c.cell for c in AttackStep(t, cost).conditions()}
    assert only == set(np.flatnonzero(prim & (t.value == 1)).tolist())
    assert every == set(np.flatnonzero(prim).tolist())
    # with bound 0 (empty cells may be suppressed) no primary is held back
    loose = t.replace(empty="suppress")
    assert not AttackStep(loose, cost, bound_only=True).conditions()
