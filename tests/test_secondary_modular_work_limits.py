"""The modular sub-table solve reads no clock of its own: the network search and the
certified heuristic stop by counts of work (nodes, LPs) and at the method's global
deadline alone, so a sub-table's time share -- which shrinks on a loaded machine --
never changes its pattern.  Patterns are judged by the LP oracle (tests/lp_oracle.py)."""
from __future__ import annotations

import numpy as np
import pytest

from lp_oracle import protected
from test_secondary_modular_network import _subtable
from tabprotect.secondary.base import cost_vector
from tabprotect.secondary.modular.solver import OptimalSubtableSolver


@pytest.mark.parametrize("seed,shape", [(42, (6, 6)), (31, (7, 6))])
@pytest.mark.parametrize("kernel", ["python", "auto"])
def test_a_sub_tables_pattern_does_not_depend_on_its_time_share(seed, shape, kernel):
    """A time share already spent (as on a machine too loaded to finish the search in
    it) gives the pattern of an unlimited solve, protected by the LP oracle."""
    t = _subtable(shape, seed, published=0.2)
    c = cost_vector(t, "value")
    solve = OptimalSubtableSolver(singleton=False, kernel=kernel)
    free = solve(t, c, None)
    for share in (1e-9, 1e-9):
        assert solve(t, c, share).tolist() == free.tolist()
    assert (free == "M").any()
    assert protected(t, np.isin(free, ("U", "M")), singleton=False).all()
