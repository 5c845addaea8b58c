"""Integral witnesses inside the pattern (tabprotect.secondary.witness_search), checked
against the table's relations and an independent integer audit (tests/lp_oracle.py)."""
from __future__ import annotations

import numpy as np
import pytest

from helpers import flat_count_table
from lp_oracle import protected as oracle_protected
from tabprotect.audit import AuditSettings, audit
from tabprotect.model import Table
from tabprotect.secondary import protect
from tabprotect.secondary.gauss import gauss
from tabprotect.secondary.protect_settings import ProtectSettings
from tabprotect.secondary.witness_search import (WitnessSearchSettings, box_cells,
                                                 integral_witnesses)


def _count_pattern(seed: int, leaves: tuple[int, ...], mean: float = 2.0,
                   empty: str = "publish") -> Table:
    """gauss's pattern of a random flat count table (helpers.flat_count_table; ``empty``:
    its policy, the suppressed counts' bound 1 or 0)."""
    t = flat_count_table(leaves, seed, mean).replace(empty=empty)
    return t.replace(status=gauss(t, t.value.copy(), singleton=False).status)


@pytest.mark.parametrize("seed,leaves", [(0, (4, 4, 3)), (1, (5, 4, 4)), (2, (6, 5, 4))])
def test_moves_are_integral_tables_that_differ_only_on_suppressed_cells(seed, leaves):
    t = _count_pattern(seed, leaves)
    out = integral_witnesses(t, np.flatnonzero(t.status == "U"), None)
    assert out.moves.shape[0] > 0
    D = out.moves.toarray()
    assert np.array_equal(D, np.round(D))
    assert not D[:, ~t.suppressed].any()
    assert np.abs(t.relations @ D.T).max() == 0
    for d in D:
        assert (t.value + d >= t.lb).all() and (t.value + d <= t.ub).all()


@pytest.mark.parametrize("seed,leaves", [(0, (4, 4, 3)), (1, (5, 4, 4)), (3, (5, 5, 4))])
def test_the_moves_certify_only_what_the_integer_oracle_protects(seed, leaves):
    # a screen without aggregate or local LPs: only the true table and the moves can
    # certify a primary; it must never certify one the independent integer audit
    # finds narrowed, and the moves must certify some. Suppressed counts may be 0: at
    # the bound 1 the elimination's pattern alone protects few of these primaries
    t = _count_pattern(seed, leaves, empty="suppress")
    prim = t.status == "U"
    truth = oracle_protected(t, integer=True)
    out = integral_witnesses(t, np.flatnonzero(prim), None)
    bare = AuditSettings(local_min_vars=0, local_hops=(), aggregate_rounds=0)
    with_moves = audit(t, integer=True, mode="screen", settings=bare, moves=out.moves)
    without = audit(t, integer=True, mode="screen", settings=bare)
    certified = with_moves.protected & prim
    assert not (certified & ~truth).any()
    assert (certified & ~without.protected).sum() > 0
    # the search's own count of what its moves reach is not a certificate either
    assert truth[out.reached].all()


def test_box_holds_the_primary_and_only_suppressed_cells():
    t = _count_pattern(0, (5, 4, 4))
    for p in np.flatnonzero(t.status == "U")[:10]:
        cells = box_cells(t, t.suppressed, int(p), 3)
        assert int(p) in cells and t.suppressed[cells].all()
        assert np.all(np.diff(cells) > 0)


def test_protect_passes_with_the_witnesses_where_the_pattern_is_integer_safe():
    # verdict mode with a screen before the cube pass (every component counts as large):
    # the witnesses settle the screen's open primaries before any cube is added; the
    # final pattern is checked by the independent integer audit
    t = _count_pattern(1, (5, 5, 4))
    base = dict(interval_audit_max_work=0, audit=AuditSettings(local_min_vars=0))
    on = protect(t, method="gauss", cost="value", singleton=False,
                 settings=ProtectSettings(**base))
    off = protect(t, method="gauss", cost="value", singleton=False,
                  settings=ProtectSettings(**base, witness_search=WitnessSearchSettings(
                      share=0.0)))
    for res in (on, off):
        assert res.audit.passed
        assert oracle_protected(res.confidential_table, integer=True)[
            t.status == "U"].all()
    assert any("integral witnesses" in n for n in on.notes)
    assert len(on.repaired) <= len(off.repaired)
