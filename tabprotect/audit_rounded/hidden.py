"""Random rounding with totals from inner cells when some inner cells are not published.

A published total is then the sum of the *rounded* inner cells, and the intruder who does
not see all of them still knows what they are: multiples ``b z_i`` of the base
(``z_i >= 0`` integer) whose sums are the published totals, each within ``b - 1`` of its
true inner value.  The intruder's system over the true inner values ``x_i`` and the hidden
``z_i``::

    A z = 0,  z = a / b on published cells,  z >= 0 integer
    b z_i - (b-1) <= x_i <= b z_i + (b-1),   lb_i <= x_i <= ub_i   (inner cells)

and a total's true value is the sum of its inner cells' (``K x``, the model matrix).
Given ``z``, each ``x_i`` ranges over its own interval independently, so:

* an inner cell's bounds are ``max(lb_i, b zmin_i - b + 1)`` and
  ``min(ub_i, b zmax_i + b - 1)``, from the integer bounds ``zmin_i, zmax_i`` of the
  hidden table (the rounded-table audit's own bound computation on ``z``);
* a total's maximum is ``b Zmax + k (b - 1)`` over its ``k`` inner cells (every inner cell
  at the top of its interval, the hidden table at the total's largest sum);
* a total's minimum is ``min_z sum_i max(lb_i, b z_i - b + 1)``: the hidden table with the
  most non-zero cells under it.  The known rounded table gives a value; when it meets a
  lower bound (``sum_i max(lb_i, b zmin_i - b + 1)``, or ``b Z - (b-1) min(p, Z)`` at the
  least sum ``Z``, ``p`` the parts with ``zmax_i >= 1``) it is the minimum, otherwise an
  integer program over ``(z, x)`` decides; the hidden table of each such program's
  optimum is one more known table for the totals after it (largest totals first).

Totals with a-priori bounds other than ``[0, inf)``, and inner cells with a finite upper
bound, make the totals' bounds joint: every total's bound then comes from the integer
program.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import scipy.sparse as sp

from solvers import HighsModel, LinearProgram
from tabprotect.audit_rounded.certificates import feasible_start
from tabprotect.audit_rounded.component import Counters, remaining
from tabprotect.errors import InputError
from tabprotect.model.table import Table

__all__ = ["hides_rounded_parts", "hidden_parts_bounds"]


def hides_rounded_parts(method: str, margins_from_interior: bool, is_pub: np.ndarray,
                        inner: np.ndarray) -> bool:
    """Whether published totals are sums of rounded inner cells the intruder does not all
    see (the method's ranges alone would leave those totals unbounded)."""
    return (method == "random" and bool(margins_from_interior)
            and bool((inner & ~is_pub).any()) and bool((~inner & is_pub).any()))


def _inner_model(table: Table) -> sp.csr_matrix:
    """Cells x inner cells: which inner cells each cell sums (checked against every
    relation)."""
    model = table.model_matrix if table.dimensions else None
    if model is None or not np.array_equal(model.leaf_cells, table.is_inner):
        raise InputError("audit_rounded: totals from inner cells with unpublished inner "
                         "cells need a product table")
    K = model.sparse().tocsr()
    if table.n_relations and abs(table.relations @ K).max() != 0:
        raise InputError("audit_rounded: totals from inner cells need the table's relations "
                         "to be the sums of its hierarchies")
    return K


def hidden_parts_bounds(table: Table, a: np.ndarray, is_pub: np.ndarray, base: int,
                        prior_lo: np.ndarray, prior_hi: np.ndarray,
                        z_bounds: Callable[[np.ndarray, np.ndarray, np.ndarray], tuple],
                        counters: Counters, deadline, threads) -> tuple[np.ndarray, np.ndarray]:
    """Exact integer bounds of every cell (see the module docstring).

    ``a`` holds the rounded table (published or not: the known feasible hidden table),
    ``prior_lo``/``prior_hi`` the a-priori integer bounds of every cell, and
    ``z_bounds(lo, hi, start)`` the integer bounds of the cells of an additive table
    inside ``[lo, hi]`` (``start`` a feasible one)."""
    b = float(base)
    inner = table.is_inner
    K = _inner_model(table)
    z0 = a / b
    if np.any(np.abs(z0[is_pub] - np.round(z0[is_pub])) > 1e-9):
        raise InputError(f"audit_rounded: a published value is not a multiple of base "
                         f"{base:g} (totals from inner cells are sums of multiples)")
    z0 = np.round(z0)
    zlo = np.where(is_pub, z0, 0.0)
    zhi = np.where(is_pub, z0, np.inf)
    hidden = inner & ~is_pub
    zlo[hidden] = np.maximum(0.0, np.ceil((prior_lo[hidden] - b + 1) / b))
    zhi[hidden] = np.floor((prior_hi[hidden] + b - 1) / b)
    zmin, zmax = z_bounds(zlo, zhi, z0)
    lower = np.maximum(prior_lo, b * zmin - b + 1)
    upper = np.minimum(prior_hi, b * zmax + b - 1)
    totals = np.flatnonzero(~inner)
    ii = np.flatnonzero(inner)
    k = np.asarray(K.sum(axis=1)).ravel()
    free_totals = np.all(prior_lo[totals] <= 0) and np.all(np.isinf(prior_hi[totals]))
    program = _TotalsProgram(table, K, b, zlo, zhi, prior_lo, prior_hi, threads)
    if free_totals and np.all(np.isinf(prior_hi[ii])):
        upper[totals] = b * zmax[totals] + k[totals] * (b - 1)
    else:
        for c in totals:
            upper[c] = program.bound(c, "max", counters, deadline, fallback=np.inf)[0]
    known = free_totals and feasible_start(table, [z0], zlo, zhi) is not None
    lower[totals] = _totals_least(K, b, ii, z0 if known else None, zmin, zmax, lower,
                                  prior_lo, program, totals, free_totals, counters,
                                  deadline)[totals]
    lower[totals] = np.maximum(lower[totals], prior_lo[totals])
    return lower + 0.0, upper + 0.0


def _totals_least(K, b, ii, z0, zmin, zmax, lower, prior_lo, program, totals, free_totals,
                  counters, deadline) -> np.ndarray:
    """Each total's least value (at the entries ``totals``): the best known hidden table's
    (``z0``; None: none known) when a lower bound meets it, else the integer program's,
    whose optimal hidden table is one more known table for the totals after it."""
    def least_at(z):
        return K @ np.maximum(prior_lo[ii], b * z[ii] - b + 1)

    best = least_at(z0) if z0 is not None else np.full(K.shape[0], np.inf)
    floor_ = K @ lower[ii]
    if np.all(prior_lo[ii] >= 0):   # then sum_i max(lb_i, b z_i - b + 1) >= b Z - (b-1) nz
        can = K @ (zmax[ii] >= 1).astype(float)       # parts that can be non-zero
        floor_ = np.maximum(floor_, b * zmin - (b - 1) * np.minimum(can, zmin))
    out = lower.copy()
    k = np.asarray(K.sum(axis=1)).ravel()
    for c in totals[np.argsort(-k[totals], kind="stable")]:   # the largest totals first
        if best[c] <= floor_[c]:
            out[c] = best[c]
            continue
        out[c], z = program.bound(c, "min", counters, deadline, fallback=floor_[c])
        if z is not None and free_totals:
            # its hidden table (most non-zero parts under c) may settle other totals
            best = np.minimum(best, least_at(np.round(z)))
    return out


class _TotalsProgram:
    """The integer program over the hidden table ``z`` (every cell) and the true inner
    values ``x``: a total's bound is the min or max of ``K_c x``."""

    def __init__(self, table, K, b, zlo, zhi, prior_lo, prior_hi, threads):
        self.args = (table, K, b, zlo, zhi, prior_lo, prior_hi)
        self.threads = threads
        self.model = None

    def _build(self) -> HighsModel:
        table, K, b, zlo, zhi, prior_lo, prior_hi = self.args
        n = table.n_cells
        ii = np.flatnonzero(table.is_inner)
        m = len(ii)
        A = table.relations
        link = sp.hstack([sp.csr_matrix((-b * np.ones(m), (np.arange(m), ii)), shape=(m, n)),
                          sp.identity(m, format="csr")])
        totals = np.flatnonzero(~table.is_inner)
        sums = sp.hstack([sp.csr_matrix((len(totals), n)), K[totals]])
        rows = sp.vstack([sp.hstack([A, sp.csr_matrix((A.shape[0], m))]), link, sums]).tocsr()
        row_lo = np.concatenate([np.zeros(A.shape[0]), np.full(m, -(b - 1)),
                                 prior_lo[totals]])
        row_hi = np.concatenate([np.zeros(A.shape[0]), np.full(m, b - 1), prior_hi[totals]])
        lp = LinearProgram(c=np.zeros(n + m), A=rows, row_lower=row_lo, row_upper=row_hi,
                           col_lower=np.concatenate([zlo, prior_lo[ii]]),
                           col_upper=np.concatenate([zhi, prior_hi[ii]]),
                           integrality=np.concatenate([np.ones(n, bool), np.zeros(m, bool)]))
        return HighsModel(lp, threads=self.threads)

    def bound(self, c: int, sense: str, counters: Counters, deadline, fallback: float):
        """Cell ``c``'s exact integer bound and the hidden table ``z`` reaching it;
        ``(fallback, None)`` (a valid bound) when cut short."""
        if self.model is None:
            self.model = self._build()
        n = self.args[0].n_cells
        row = self.args[1][c]
        self.model.set_objective(indices=n + row.indices, values=row.data, sense=sense)
        res = self.model.solve(time_limit=remaining(deadline), duals=False)
        counters.mip += 1
        if res.status == "unbounded":
            return (np.inf if sense == "max" else -np.inf), None
        if res.status != "optimal" or res.objective is None:
            counters.cut = True
            return fallback, None
        value = float(res.objective)
        end = np.ceil(value - 1e-6) if sense == "min" else np.floor(value + 1e-6)
        return float(end), None if res.x is None else res.x[:n]
