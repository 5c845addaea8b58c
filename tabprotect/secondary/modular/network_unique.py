"""The network search's pattern certified by two MILPs when the optimum is unique.

The search over cut rows alone (:class:`.network_search._Search`) returns the first
least-cost pattern in its depth-first order.  When one pattern costs strictly less than
every other, that pattern is the search's answer whatever the order, so two small MILPs
(HiGHS) can stand in for a long search:

1. the covering problem ``min c'z, K z >= d - tol, z binary`` gives a pattern ``x``,
   kept only if it meets every row as the search judges rows (slack within ``tol``,
   with a margin for the order of the float sums);
2. the same rows with ``x`` cut off (``sum_{x_e=1} (1 - z_e) + sum_{x_e=0} z_e >= 1``)
   and the cost capped just above ``c'x`` must be infeasible: no other pattern costs as
   little.  The cap's margin (``2e-9`` relative) exceeds the search's pruning tolerance
   (``1e-9``), so no pattern the search could prefer escapes the proof.

When the search has already met a pattern (its best after the nodes it searched), that
pattern stands in for the first MILP's: the second MILP alone shows it to be the unique
optimum (the first MILP takes most of the certificate's time).  When the second MILP
finds a cheaper pattern meeting every row instead, that pattern is the least-cost one
(the MILP's optimum over all patterns but the search's), the first MILP's answer
without it: the second MILP runs again for it.

Anything else -- a tie, a MILP stopped by its node limit or by the method's deadline, a
pattern meeting the rows only within HiGHS' tolerance -- gives None and the search runs
as before.  The limit is a count of branch-and-bound nodes, not seconds, so that the
answer does not depend on the machine's load.  On the sub-tables whose search
takes thousands of nodes the two solves take milliseconds, so a process need not load
the compiled kernel for them.
"""
from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from solvers import HighsModel, LinearProgram

#: relative margin of the cost cap in the proof of uniqueness (above the search's
#: pruning tolerance of 1e-9, so a pattern the search might keep is never left out)
COST_MARGIN = 2e-9
#: relative margin by which the MILP's pattern must meet each row beyond the search's
#: tolerance (the search sums a row's coefficients in another order)
ROW_MARGIN = 1e-12
#: HiGHS options of the certificate's MILPs: no primal heuristics (the second MILP is
#: infeasible when it certifies, so nothing is there to find; the first, or a second
#: that finds a cheaper pattern, finds it by branching on a few dozen binaries) and no
#: restarts after the root (each restart presolves and cuts the model again): on the
#: tables measured these cost a quarter of the MILPs' time and decide nothing
MILP_OPTIONS = {"mip_heuristic_effort": 0.0, "mip_heuristic_run_feasibility_jump": False,
                "mip_heuristic_run_rins": False, "mip_heuristic_run_rens": False,
                "mip_heuristic_run_root_reduced_cost": False, "mip_allow_restart": False}


def unique_optimum(K: np.ndarray, d: np.ndarray, tol: np.ndarray, c: np.ndarray,
                   deadline: float | None = None, *, start_rows: int = 150,
                   rounds: int = 20, nodes: int = 500,
                   known: np.ndarray | None = None) -> np.ndarray | None:
    """The least-cost pattern (bool over the columns of ``K``) meeting ``K z >= d``
    within ``tol``, when every other pattern costs more (see the module docstring);
    None when that is not shown (a tie, no pattern, the deadline).

    Both MILPs start from the ``start_rows`` rows hardest to cover and add the rows
    their solution misses, at most ``rounds`` times each (a MILP over some rows is a
    relaxation: its optimum met by every row is the optimum, its infeasibility is the
    full problem's); each solve searches at most ``nodes`` branch-and-bound nodes (HiGHS'
    ``mip_max_nodes``: a work limit, so the answer does not depend on the machine's
    load).  ``known``: a pattern that
    meets every row within ``tol`` (the search's best so far), put to the second MILP
    before any first one."""
    n = len(c)
    if n == 0 or not len(d):
        return None
    lower = d - tol
    rows = _hardest(K, lower, start_rows)
    found = None
    if known is not None:
        alone, rows, z = _only_pattern(K, lower, c, known, rows, rounds, deadline, nodes)
        if alone is not False:      # shown unique, or a tie or the deadline: settled
            return None if alone is None else known.copy()
        if _meets(K, d, tol, z):
            found = z, rows
    if found is None:
        found = _least(K, d, tol, lower, c, rows, rounds, deadline, nodes)
    if found is None:
        return None
    x, rows = found
    return x if _only_pattern(K, lower, c, x, rows, rounds, deadline, nodes)[0] else None


def _meets(K, d, tol, x) -> bool:
    """``x`` meets every row as the search judges rows, with a margin for the order of
    the float sums."""
    return not (d - K[:, x].sum(axis=1) > tol - ROW_MARGIN * np.maximum(1.0, d)).any()


def _least(K, d, tol, lower, c, rows, rounds, deadline, nodes):
    """The first MILP: its least-cost pattern, kept when it meets every row as the
    search judges rows, and the rows it ended with; None when there is none."""
    x = None
    for _ in range(rounds):
        res = _solve(K[rows], lower[rows], c, None, deadline, nodes)
        if res is None or res.status != "optimal" or res.x is None:
            return None
        x = res.x > 0.5
        short = d - K[:, x].sum(axis=1) > tol - ROW_MARGIN * np.maximum(1.0, d)
        if not short.any():         # (_meets)
            break
        rows = _more(rows, short)
        if rows is None:        # met only within HiGHS' tolerance
            return None
    else:
        return None
    return x, rows


def _only_pattern(K, lower, c, x, rows, rounds, deadline, nodes):
    """The second MILP: True when no pattern other than ``x`` meets the rows at a cost
    up to ``COST_MARGIN`` above ``x``'s; False when one meets every row at a cost below
    ``x``'s by more than that margin (``x`` is no optimum); None when neither is shown
    (a tie, the deadline).  And the rows it ended with, and with False that pattern
    (the least-cost one: the MILP's optimum)."""
    cost = float(c[x].sum())
    margin = COST_MARGIN * max(1.0, cost)
    for _ in range(rounds):
        res = _solve(K[rows], lower[rows], c, (x, cost + margin), deadline, nodes)
        if res is None:
            return None, rows, None
        if res.status == "infeasible":
            return True, rows, None
        if res.status != "optimal" or res.x is None:
            return None, rows, None
        z = res.x > 0.5
        more = _more(rows, K[:, z].sum(axis=1) < lower)
        if more is None:        # another pattern meets every row: cheaper, or a tie
            return (False if float(c[z].sum()) < cost - margin else None), rows, z
        rows = more
    return None, rows, None


def _hardest(K: np.ndarray, lower: np.ndarray, count: int) -> np.ndarray:
    """The ``count`` rows whose candidates cover the least of what they lack."""
    if len(lower) <= count:
        return np.arange(len(lower))
    room = K.sum(axis=1) / np.maximum(lower, 1e-300)
    return np.sort(np.argsort(room, kind="stable")[:count])


def _more(rows: np.ndarray, missed: np.ndarray) -> np.ndarray | None:
    """``rows`` with the ``missed`` rows (mask) added; None when none is new."""
    new = np.setdiff1d(np.flatnonzero(missed), rows)
    return None if not len(new) else np.union1d(rows, new)


def _solve(K: np.ndarray, lower: np.ndarray, c: np.ndarray, cut, deadline: float | None,
           nodes: int):
    """``min c'z, K z >= lower, z binary`` (with ``cut`` = (x, cap): ``z != x`` and
    ``c'z <= cap``) within ``nodes`` branch-and-bound nodes and the time left before
    ``deadline`` (None: none left)."""
    left = None
    if deadline is not None:
        left = deadline - time.perf_counter()
        if left <= 0:
            return None
    n = len(c)
    A, upper = sp.csr_matrix(K), np.full(len(lower), np.inf)
    if cut is not None:
        x, cap = cut
        A = sp.vstack([A, sp.csr_matrix(np.where(x, -1.0, 1.0)), sp.csr_matrix(c)],
                      format="csr")
        lower = np.concatenate([lower, [1.0 - x.sum()], [-np.inf]])
        upper = np.concatenate([upper, [np.inf], [cap]])
    lp = LinearProgram(c=c.copy(), A=A, row_lower=lower, row_upper=upper,
                       col_upper=np.ones(n), integrality=np.ones(n, bool))
    return HighsModel(lp, threads=1, mip_gap=0.0, time_limit=left,
                      mip_max_nodes=int(nodes), **MILP_OPTIONS).solve(duals=False)
