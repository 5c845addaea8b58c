"""protect()'s passes before the first audit on large tables: the cubes a pattern
already has (handed to the audit as moves), a leaf-and-chain cube per primary without
one, and the hypercube method run on a pattern -- each searched in worker processes
when there are many primaries.  More suppressed cells never narrow an interval, so the
passes only add protection; the audit judges the result."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from tabprotect.errors import InputError
from tabprotect.model.structure import product_structure
from tabprotect.model.table import Table
from tabprotect.parallel import map_runs
from tabprotect.secondary.cubes import cube_repair
from tabprotect.secondary.hypercube import hypercube
from tabprotect.secondary.product_limits import ProductSearchLimits

def product_view(table: Table, run_table: Table) -> Table | None:
    """``table`` itself when it is a product table, else its recovered product structure
    (cells in another order, ``extra["source_cell"]``), or None when there is none."""
    if table.dimensions:
        return table
    if run_table is not table:
        return run_table
    try:
        view = product_structure(table)
    except InputError:
        return None
    source = view.extra.get("source_cell")
    if source is None or len(source) != table.n_cells:
        return None
    return view


def cube_pass(view: Table, table: Table, status: np.ndarray, cost: np.ndarray,
              singleton: bool, time_limit: float | None, workers: int = 1,
              parallel_min: int = 5_000, primaries: np.ndarray | None = None,
              product_limits: ProductSearchLimits | None = None
              ) -> tuple[np.ndarray, sp.csr_matrix]:
    """cube_repair (leaf and chain cubes) of every primary (of ``primaries``, cells of
    ``table``, when given) on the product ``view`` of ``table``; returns the new status and the cubes as moves, both in ``table``'s cell
    order.  With ``workers`` > 1 and at least ``parallel_min`` primaries
    left after the certify step, those are cut in cell order into ``workers`` runs,
    searched in worker processes from the same pattern, and the suppressions united
    (a cube stays a proof when more cells are suppressed; only the sharing of corners
    across a cut is lost).  ``product_limits`` bound the certify step's search."""
    source = None if view is table else np.asarray(view.extra["source_cell"],
                                                   dtype=np.int64)
    view_status = status if source is None else status[source]
    view_cost = cost if source is None else cost[source]
    view = view.replace(status=view_status)
    wanted = view_status == "U"
    if primaries is not None:
        wanted &= np.isin(np.arange(len(view_status)) if source is None else source,
                          primaries)
    primaries = np.flatnonzero(wanted)
    # the cubes the pattern already has first (vectorised, nothing added), then the
    # cheapest cubes for the others
    _, open_, certified = cube_repair(view, view_cost, primaries, singleton=singleton,
                                      certify_only=True, return_moves=True,
                                      product_limits=product_limits)
    if workers > 1 and len(open_) >= parallel_min:
        runs = map_runs(_cube_repair_in_worker, np.sort(open_), workers,
                        job=lambda run: (view, view_cost, run, singleton, time_limit))
        new_view = view_status.copy()
        for changed, _ in runs:
            new_view[changed] = "M"
        found = sp.vstack([f for _, f in runs], format="csr")
    else:
        new_view, _, found = cube_repair(view, view_cost, open_, singleton=singleton,
                                         time_limit=time_limit, chains=True,
                                         return_moves=True)
    found = sp.vstack([certified, found], format="csr")
    if source is None:
        return new_view, found
    new = status.copy()
    new[source] = new_view
    found = found.tocoo()
    return new, sp.csr_matrix((found.data, (found.row, source[found.col])),
                              shape=(found.shape[0], table.n_cells))


def hypercube_pass(table: Table, status: np.ndarray, cost: np.ndarray, singleton: bool,
                   time_limit: float | None, workers: int = 1,
                   parallel_min: int = 5_000) -> np.ndarray:
    """The cells the hypercube method adds to ``status`` (its suppressions are free
    corners).  With ``workers`` > 1 and at least ``parallel_min``
    primaries, the primaries are cut in cell order into ``workers`` runs, each run's
    cubes searched in a worker process (the other primaries count as suppressed cells
    without requirements there) and the suppressions united: each primary keeps the
    cubes it got in its run, and more suppressed cells never narrow an interval."""
    primaries = np.flatnonzero(status == "U")
    if workers > 1 and len(primaries) >= parallel_min:
        runs = map_runs(hypercube_in_worker, primaries, workers,
                        job=lambda run: (table, status, primaries, run, cost, singleton,
                                         time_limit))
        return np.unique(np.concatenate(runs))
    out = hypercube(table.replace(status=status), cost, time_limit=time_limit,
                    singleton=singleton)
    return np.flatnonzero((out.status == "M") & (status != "M"))


def hypercube_in_worker(job: tuple) -> np.ndarray:
    """One worker's share of the parallel hypercube pass: the cells it suppressed."""
    table, status, primaries, run, cost, singleton, time_limit = job
    mine = status.copy()
    mine[np.setdiff1d(primaries, run)] = "M"
    out = hypercube(table.replace(status=mine), cost, time_limit=time_limit,
                    singleton=singleton)
    return np.flatnonzero((out.status == "M") & (mine != "M"))


def _cube_repair_in_worker(job: tuple) -> tuple[np.ndarray, sp.csr_matrix]:
    """One worker's share of the parallel cube pass: (cells it suppressed, its cubes)."""
    view, cost, cells, singleton, time_limit = job
    new, _, found = cube_repair(view, cost, cells, singleton=singleton,
                                time_limit=time_limit, chains=True, return_moves=True)
    return np.flatnonzero(new != view.status), found
