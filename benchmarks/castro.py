"""Load Castro's benchmark tables (../shared/benchmarks/castro/*.csv.gz) as general Tables.

Each table: ``value``; attacker bounds ``lb = value + lo_dev`` (blank: 0 for non-negative
values, else -inf) and ``ub = value + up_dev`` (blank: +inf); status ``U`` for sensitive
cells; ``upl = lpl = upl`` column (the files give one level; the usual symmetric choice).
Zero cells come out as status ``Z`` (empty), fixed cells have ``lb == ub`` (never useful
as a suppression).

    >>> from benchmarks.castro import load_castro, CASTRO_TABLES
    >>> t = load_castro("TARGUS")          # doctest: +SKIP
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.sparse.linalg import lsqr, splu

from tabprotect.model import Table
from tabprotect.model.relations import relations_from_triplets

CASTRO_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "benchmarks" / "castro"

#: name -> number of cells, smallest first
CASTRO_TABLES = {"TARGUS": 162, "TABLE7": 624, "HIE1372D": 637, "TABLE8": 1271,
                 "HIER13": 2020, "HIER133D": 2197, "TABLE3": 4992, "NINENEW": 6546,
                 "OSORIO": 10201, "CBS": 11163}


def make_additive(value: np.ndarray, A: sp.spmatrix, fixed: np.ndarray,
                  solver: str = "direct") -> np.ndarray:
    """The least-squares smallest change of the free cells that makes ``A x = 0`` hold.

    The files' values are reconstructed from CTA objective terms (``-LO``, ``-2 LO``,
    ``2/Q``) and miss additivity by rounding errors (up to 42 in TARGUS); an intruder's LP
    over non-additive published values can be infeasible, so the benchmark tables are
    made exactly additive first.  Relative changes are minimised (``sum (d_i/|v_i|)^2``,
    so small cells barely move): ``d = D^2 A^T y`` with ``(A D^2 A^T) y = -A x``.
    ``solver="direct"`` factorises that relations x relations system once (sparse LU,
    a tiny ridge for the redundant relations of product tables) and refines; ``"lsqr"``
    solves each refinement step iteratively (the same answer, slower; kept for
    benchmarks/bench_general.py's before/after comparison).
    """
    out = value.copy()
    free = np.flatnonzero(~fixed)
    scale = np.maximum(np.abs(value[free]), 1e-3)
    Af = (A[:, free] @ sp.diags(scale)).tocsr()
    if solver == "lsqr":
        step = lambda r: lsqr(Af, r, atol=1e-15, btol=1e-15, iter_lim=50000)[0]  # noqa: E731
    else:
        normal = (Af @ Af.T).tocsc()
        ridge = 1e-12 * max(1.0, float(normal.diagonal().max()))
        lu = splu((normal + ridge * sp.identity(normal.shape[0], format="csc")).tocsc(),
                  permc_spec="MMD_AT_PLUS_A")
        step = lambda r: Af.T @ lu.solve(r)  # noqa: E731
    for _ in range(8 if solver == "direct" else 4):  # iterative refinement
        resid = A @ out
        if np.abs(resid).max() <= 1e-9:
            break
        out[free] += scale * step(-resid)
    return out


def load_castro(name: str, directory: str | Path | None = None,
                solver: str = "direct") -> Table:
    """The Castro table ``name`` as a general :class:`~tabprotect.model.Table`."""
    d = Path(directory) if directory else CASTRO_DIR
    cells = pd.read_csv(d / f"{name}.cells.csv.gz")
    rel = pd.read_csv(d / f"{name}.relations.csv.gz")
    n = len(cells)
    if not (cells["id"].to_numpy() == np.arange(n)).all():
        cells = cells.sort_values("id").reset_index(drop=True)
    value = cells["value"].to_numpy(dtype=float)
    lo = cells["lo_dev"].to_numpy(dtype=float)
    up = cells["up_dev"].to_numpy(dtype=float)
    A, total = relations_from_triplets(rel["rel"].to_numpy(), rel["cell"].to_numpy(),
                                       rel["coef"].to_numpy(dtype=float), n)
    # a sensitive cell's positive lo_dev is CTA's forced upward shift (= its level), not
    # an attacker bound: such a cell gets the default lower bound
    a_priori_lb = np.where(np.isnan(lo) | (lo > 0), np.nan, value + lo)
    a_priori_ub = np.where(np.isnan(up), np.nan, value + up)
    pinned = (lo == 0) & (up == 0)
    value = make_additive(value, A, fixed=pinned | (value == 0), solver=solver)
    if np.abs(A @ value).max() > 1e-6:
        # a relation among pinned cells only (OSORIO's margins): move them too, and pin
        # them at their new values
        value = make_additive(value, A, fixed=value == 0, solver=solver)
        a_priori_lb[pinned] = a_priori_ub[pinned] = value[pinned]
    lb = np.where(np.isnan(a_priori_lb), np.where(value >= 0, 0.0, -np.inf), a_priori_lb)
    ub = np.where(np.isnan(up), np.inf, a_priori_ub)
    # the reconstructed values can sit a rounding error outside their own bounds
    lb = np.minimum(lb, value)
    ub = np.maximum(ub, value)
    sens = cells["sensitive"].to_numpy() == 1
    level = np.where(sens, cells["upl"].fillna(0.0).to_numpy(dtype=float), 0.0)
    freq = np.where(value != 0, np.nan, 0.0)
    status = np.where(sens, "U", np.where((value == 0), "Z", "S"))
    return Table.from_relations(value, A, total, labels=[str(i) for i in range(n)], freq=freq,
                                lb=lb, ub=ub, status=status, upl=level, lpl=level,
                                name=name)
