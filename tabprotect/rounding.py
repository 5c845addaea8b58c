"""Rounding of frequency tables: deterministic, random, controlled and small-count.

Every method rounds to multiples of a base ``b``.  With ``floor_b(x) = b * floor(x / b)``
and the remainder ``r = x - floor_b(x)``:

* **deterministic** -- every cell (inner cells and totals independently) to the nearest
  multiple; a tie (``r == b/2``, even bases only) goes *up* ("round half up", as in
  conventional rounding).  Not additive: published totals are generally not the sums of
  the published parts.
* **random** -- unbiased random rounding: down to ``floor_b(x)`` with probability
  ``1 - r/b``, up with ``r/b``; multiples unchanged; seeded (the seed is reported).  With
  ``margins_from_interior=True`` only the inner cells are rounded and every total is the sum
  of its rounded inner cells (additive, totals not multiples of ``b``).
* **controlled** -- zero-restricted (each cell to one of its two adjacent multiples,
  multiples unchanged) and additive through every level of every hierarchy, with minimum
  total (optionally weighted) absolute deviation.  Only non-multiples are variables:
  ``R_i = floor_b(x_i) + b d_i`` with ``d_i in {0, 1}``, so ``A R = 0`` becomes the sparse
  equality system ``A_nm d = -A floor_b(x) / b`` and the deviation ``|R_i - x_i| =
  r_i + d_i (b - 2 r_i)`` is linear in ``d``.  Two-dimensional tables are a network flow
  (node-arc incidence matrix, totally unimodular): the LP relaxation solved by simplex has an
  integral optimal vertex, which is checked, so no branching is needed.  Large LPs (from
  ``SIFTING_MIN_COLUMNS`` free cells) are solved by sifting (:func:`sifted_lp`): HiGHS sees
  only a working set of cells, started from nearest rounding, and reduced-cost pricing of
  all cells proves the optimum for the whole LP.  That holds for
  two-way tables with subtotals in at most one dimension; with hierarchies in both
  dimensions, and in three and more dimensions, the MILP is needed and a zero-restricted
  solution may not exist; the error says so
  and ``k_step=K`` allows cells to move up to ``K`` further multiples (each extra step
  penalised).  Large hierarchical tables are solved by partitioning along a hierarchy
  (top slice first, then each parent's children with the parent's rounded slice fixed):
  exactly additive by construction, optimal per part rather than globally.
* **small-count** -- only inner cells with ``0 < x < threshold`` are rounded, to 0 or
  ``b``; every published aggregate is the sum of its rounded inner cells.  Which small cells
  go up is chosen by a MILP that keeps the number rounded up equal to the rounded sum of the
  small counts and minimises the aggregates' absolute deviations (the grand total most).

Every result carries its deviation and, unless ``audit=False``, the rounded-table audit
(:func:`tabprotect.audit_rounded.audit_rounded`): what an intruder can derive from the
published values.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from solvers import HighsModel, LinearProgram, solve
from tabprotect.audit_rounded import audit_rounded
from tabprotect.errors import InputError
from tabprotect.model.table import Table
from tabprotect.results import publication_frame, published_table

METHODS = ("deterministic", "random", "controlled", "small-count")
_TOL = 1e-9
#: LP-first controlled rounding with at least this many free cells is solved by sifting
SIFTING_MIN_COLUMNS = 20_000


class ZeroRestrictedInfeasible(InputError):
    """No zero-restricted controlled rounding exists (possible in 3+ dimensions)."""


@dataclass
class RoundingResult:
    """A rounded table, how it was made, its deviation and its audit (the protocol of
    :mod:`tabprotect.results`).

    Attributes
    ----------
    confidential_table : the original table (true counts; not for publication)
    table, rounded_table : (properties) the table as published: rounded values only
    rounded : rounded value of every cell (same order as ``table.value``)
    base : the rounding base
    method : ``deterministic``, ``random``, ``controlled`` or ``small-count``
    params : every parameter needed to reproduce the result (the seed included)
    additive : the rounded table satisfies every relation of the table
    zero_restricted : every cell is on one of its two adjacent multiples and multiples
        are unchanged (False for small-count: large counts stay unrounded)
    max_steps : largest number of multiples any cell moved beyond its adjacent ones
        (0 for zero-restricted rounding; ``<= k_step`` for the K-step relaxation)
    solver_path : how the solution was found, e.g. ``"network-flow LP (integral)"``,
        ``"MILP"``, ``"partitioned MILP (7 parts)"``, ``"K-step MILP"``, ``"closed form"``
    proven_optimal : the deviation is a proven minimum for the method's problem
    notes : plain-language remarks (non-additivity, fallbacks, time limits)
    audit : the rounded-table audit, or None when not requested
    seconds : wall-clock seconds of the rounding (the audit's are its own)
    """

    confidential_table: Table
    rounded: np.ndarray
    base: int
    method: str
    params: dict[str, Any]
    additive: bool
    zero_restricted: bool
    max_steps: int
    solver_path: str
    proven_optimal: bool
    seconds: float
    notes: list[str] = field(default_factory=list)
    audit: Any = None

    @property
    def table(self) -> Table:
        """The published table: the rounded values, no true value or count."""
        return published_table(self.confidential_table, self.rounded)

    @property
    def rounded_table(self) -> Table:
        """The published table (same as :attr:`table`)."""
        return self.table

    @property
    def passed(self) -> bool:
        """The rounded-table audit passed (False when no audit was run)."""
        return bool(self.audit is not None and self.audit.passed)

    @property
    def deviation(self) -> np.ndarray:
        """``rounded - original`` per cell (confidential: it gives the true values)."""
        return self.rounded - self.confidential_table.value

    @property
    def total_absolute_deviation(self) -> float:
        return float(np.abs(self.deviation).sum())

    @property
    def max_absolute_deviation(self) -> float:
        return float(np.abs(self.deviation).max()) if len(self.rounded) else 0.0

    def summary(self) -> dict[str, Any]:
        """Counts and deviations for reports and the CLI."""
        dev = np.abs(self.deviation)
        out = {
            "method": self.method,
            "base": self.base,
            "cells": int(self.confidential_table.n_cells),
            "changed_cells": int((dev > _TOL).sum()),
            "total_absolute_deviation": float(dev.sum()),
            "max_absolute_deviation": self.max_absolute_deviation,
            "mean_absolute_deviation": float(dev.mean()) if len(dev) else 0.0,
            "additive": self.additive,
            "zero_restricted": self.zero_restricted,
            "max_steps": self.max_steps,
            "solver_path": self.solver_path,
            "proven_optimal": self.proven_optimal,
            "seconds": round(self.seconds, 3),
        }
        out.update({f"param_{k}": v for k, v in self.params.items()
                    if isinstance(v, (int, float, str, bool)) or v is None})
        return out

    def published(self) -> pd.DataFrame:
        """Only what may be published: the codes and the rounded ``value``."""
        return publication_frame(self.table, with_status=False)

    def to_frame(self, confidential: bool = False) -> pd.DataFrame:
        """One row per cell: codes and the rounded ``value``; ``confidential=True`` adds
        ``confidential_value`` (the true value) and ``deviation`` (rounded - true)."""
        out = self.published()
        if confidential:
            out["confidential_value"] = self.confidential_table.value
            out["deviation"] = self.deviation
        return out


# ---------------------------------------------------------------- public entry point
def round_table(table: Table, base: int, method: str = "controlled", *,
                seed: int | None = None, margins_from_interior: bool = False,
                weights: np.ndarray | str | None = None, k_step: int = 0,
                step_penalty: float | None = None, threshold: int | None = None,
                partition: bool | str = "auto", partition_min_cells: int = 20000,
                time_limit: float | None = None, mip_gap: float | None = None,
                threads: int | None = 1, audit: bool = True,
                audit_options: dict | None = None) -> RoundingResult:
    """Round a frequency table to multiples of ``base``.

    Parameters
    ----------
    table : the table (non-negative values; counts for frequency tables)
    base : rounding base ``b >= 1`` (integer)
    method : ``"deterministic"``, ``"random"``, ``"controlled"`` or ``"small-count"``
    seed : random rounding: seed of the generator (None draws one; it is reported in
        ``params`` so the result can be reproduced)
    margins_from_interior : random rounding: round only the inner cells and publish every
        total as the sum of its rounded inner cells
    weights : controlled rounding: weight of each cell's absolute deviation (array),
        ``"relative"`` (``1 / max(x, 1)``) or None (unit weights)
    k_step : controlled rounding: 0 = zero-restricted only (an error explains when no
        solution exists); ``K > 0`` = if zero-restricted rounding is infeasible, allow
        cells to move up to ``K`` multiples beyond their adjacent ones, each extra step
        costing ``step_penalty``
    step_penalty : cost of one extra step (default ``10 * b * max weight``)
    threshold : small-count rounding: counts ``0 < x < threshold`` are rounded (default b)
    partition : controlled rounding of large tables: ``"auto"`` (tables of 3+ dimensions
        with at least ``partition_min_cells`` cells and a hierarchy of 2+ levels), True or
        False
    time_limit, mip_gap, threads : solver settings (MILP paths)
    audit : attach the rounded-table audit (:func:`tabprotect.audit_rounded.audit_rounded`)
    audit_options : keyword arguments for the audit

    Returns
    -------
    RoundingResult

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> rows = Hierarchy.flat(["A", "B", "C"], total="Total")
    >>> cols = Hierarchy.flat(["Male", "Female"], total="Total")
    >>> t = Table.from_arrays({"r": rows, "c": cols},
    ...                       [39, 16, 23, 1, 1, 0, 6, 3, 3, 32, 12, 20], kind="frequency")
    >>> res = round_table(t, 5, "controlled", audit=False)
    >>> res.total_absolute_deviation, res.additive, res.zero_restricted
    (18.0, True, True)
    """
    start = time.perf_counter()
    if method not in METHODS:
        raise InputError(f"rounding method must be one of {', '.join(METHODS)}, "
                         f"not {method!r}")
    base = _check_base(base)
    x = np.asarray(table.value, dtype=float)
    if np.isnan(x).any():
        raise InputError(f"rounding: cell {table.cell_name(int(np.flatnonzero(np.isnan(x))[0]))}"
                         f" has no value")
    if (x < 0).any():
        raise InputError(f"rounding: cell {table.cell_name(int(np.flatnonzero(x < 0)[0]))} "
                         f"is negative; rounding needs non-negative counts")
    if k_step < 0 or int(k_step) != k_step:
        raise InputError(f"rounding: k_step must be a non-negative integer, not {k_step!r}")
    params: dict[str, Any] = {"base": base, "method": method}
    notes: list[str] = []
    if method == "deterministic":
        rounded = deterministic_round(x, base)
        path, optimal = "closed form (nearest multiple, ties up)", True
        params["tie_rule"] = "half up"
    elif method == "random":
        if seed is None:
            seed = int(np.random.SeedSequence().entropy % (2**63))
        params["seed"] = int(seed)
        params["margins_from_interior"] = bool(margins_from_interior)
        rng = np.random.default_rng(int(seed))
        if margins_from_interior:
            inner = table.is_inner
            rounded_inner = random_round(x[inner], base, rng)
            rounded = _aggregate_from_inner(table, inner, rounded_inner)
        else:
            rounded = random_round(x, base, rng)
        path, optimal = "random draw", False
    elif method == "controlled":
        w = _weights(table, weights)
        params.update({"k_step": int(k_step), "weights": _weights_label(weights),
                       "partition": partition, "time_limit": time_limit, "mip_gap": mip_gap})
        penalty = float(step_penalty) if step_penalty is not None \
            else 10.0 * base * float(w.max() if len(w) else 1.0)
        params["step_penalty"] = penalty
        solver = _ControlledRounder(table, base, w, time_limit=time_limit, mip_gap=mip_gap,
                                    threads=threads)
        rounded, path, optimal, sub_notes = solver.run(
            k_step=int(k_step), penalty=penalty, partition=partition,
            partition_min_cells=partition_min_cells)
        notes.extend(sub_notes)
    else:  # small-count
        thr = int(threshold) if threshold is not None else base
        if thr < 1:
            raise InputError("small-count rounding: threshold must be at least 1")
        params["threshold"] = thr
        params["time_limit"] = time_limit
        rounded, path, optimal = small_count_round(table, base, thr, time_limit=time_limit,
                                                   mip_gap=mip_gap, threads=threads)
    rounded = np.asarray(rounded, dtype=float)
    additive = _is_additive(table, rounded)
    zr = _is_zero_restricted(x, rounded, base)
    steps = _max_steps(x, rounded, base)
    if method == "deterministic" and not additive:
        notes.append("deterministic rounding is not additive: published totals need not "
                     "equal the sums of the published parts")
    if method == "random" and not margins_from_interior and not additive:
        notes.append("random rounding of every cell independently is not additive")
    if method == "random" and margins_from_interior:
        notes.append("totals are sums of rounded inner cells: additive, but totals are not "
                     "multiples of the base")
    if method == "small-count":
        notes.append(f"only inner counts 0 < x < {params['threshold']} were rounded (to 0 or "
                     f"{base}); aggregates are sums of the rounded inner cells")
    result = RoundingResult(confidential_table=table, rounded=rounded, base=base, method=method,
                            params=params, additive=additive, zero_restricted=zr,
                            max_steps=steps, solver_path=path, proven_optimal=optimal,
                            seconds=time.perf_counter() - start, notes=notes)
    if audit:
        result.audit = audit_rounded(result, **(audit_options or {}))
    return result


# ---------------------------------------------------------------- simple methods
def deterministic_round(x: np.ndarray, base: int) -> np.ndarray:
    """Nearest multiple of ``base``; ties (remainder exactly ``base/2``) go up.

    Examples
    --------
    >>> deterministic_round(np.array([1, 2, 3, 7, 8]), 5).tolist()
    [0.0, 0.0, 5.0, 5.0, 10.0]
    """
    x = np.asarray(x, dtype=float)
    low = np.floor(x / base + _TOL) * base
    rem = x - low
    return np.where(rem >= base / 2.0 - _TOL, low + base, low)


def random_round(x: np.ndarray, base: int, rng: np.random.Generator) -> np.ndarray:
    """Unbiased random rounding: up with probability ``r/b``, down otherwise; multiples
    stay.

    Examples
    --------
    >>> random_round(np.array([0.0, 5.0, 10.0]), 5, np.random.default_rng(0)).tolist()
    [0.0, 5.0, 10.0]
    """
    x = np.asarray(x, dtype=float)
    low = np.floor(x / base + _TOL) * base
    rem = np.clip(x - low, 0.0, None)
    up = rng.random(len(x)) < rem / base
    up &= rem > _TOL
    return low + base * up


# ---------------------------------------------------------------- controlled rounding
class _ControlledRounder:
    """Zero-restricted (or K-step) controlled rounding of one table."""

    def __init__(self, table: Table, base: int, weights: np.ndarray, *, time_limit,
                 mip_gap, threads):
        self.table = table
        self.base = base
        self.w = weights
        self.x = table.value.astype(float)
        self.low = np.floor(self.x / base + _TOL) * base
        self.rem = np.where(self.x - self.low > _TOL, self.x - self.low, 0.0)
        self.nonmult = self.rem > 0
        self.A = table.relations.tocsr()
        self.time_limit = time_limit
        self.mip_gap = mip_gap
        self.threads = threads
        self.deadline = None if time_limit is None else time.perf_counter() + time_limit
        # LP-first paths with many columns are solved by sifting (see sifted_lp)
        self.sifting = True
        self.sifting_log: SiftedLPResult | None = None

    # -- orchestration
    def run(self, k_step: int, penalty: float, partition, partition_min_cells: int):
        notes: list[str] = []
        table = self.table
        dims = table.dimensions
        part_dims: list[int] = []
        if partition is True or (partition == "auto" and len(dims) >= 3
                                 and table.n_cells >= partition_min_cells):
            part_dims = _partition_dimensions(table)
            if partition is True and not part_dims:
                notes.append("no dimension has a hierarchy to partition along; the whole "
                             "table was solved at once")
        if part_dims:
            rounded, path, optimal = self._run_partitioned(part_dims, k_step, penalty, notes)
            return rounded, path, optimal, notes
        everything = np.ones(table.n_cells, dtype=bool)
        fixed = np.zeros(table.n_cells, dtype=bool)
        # a two-way table with subtotals in at most one dimension is a network: its
        # relation matrix is a node-arc incidence matrix (totally unimodular), so the LP
        # optimum found by simplex is integral and a solution always exists.  With
        # hierarchies in both dimensions that fails (zero-restricted rounding may not
        # exist, see the tests); the LP is still tried first and its integrality checked.
        network = len(dims) == 2 and sum(len(d.hierarchy.edges()) > 1 for d in dims) <= 1
        lp_first = len(dims) == 2
        values, status, path, optimal = self._solve_part(everything, fixed, np.zeros(0),
                                                         lp_first, k_step, penalty, notes,
                                                         label="the table", network=network)
        return values, path, optimal, notes

    def _run_partitioned(self, dims: list[int], k_step, penalty, notes):
        """Top-down over the hierarchy of the first partition dimension: its total's slice,
        then for each parent (already rounded) its children's slices together.  Each such
        part is split again top-down along the second partition dimension.

        Every relation lies inside exactly one part (a relation along a partition
        dimension links a parent's slice, rounded earlier, with its children's slices,
        rounded together), so the result is exactly additive.
        """
        table = self.table
        rounded = np.full(table.n_cells, np.nan)
        done = np.zeros(table.n_cells, dtype=bool)
        paths, n_parts = set(), 0
        for cells in _stages(table, dims[0], np.ones(table.n_cells, dtype=bool)):
            inner_stages = _stages(table, dims[1], cells) if len(dims) > 1 else [cells]
            for part in inner_stages:
                if not part.any():
                    continue
                label = _part_label(table, part, dims)
                vals, _, path, _ = self._solve_part(part, done, rounded, False, k_step,
                                                    penalty, notes, label=label)
                rounded[part] = vals[part]
                done |= part
                paths.add(path)
                n_parts += 1
        names = " and ".join(f"'{table.dimensions[d].name}'" for d in dims)
        notes.append(f"partitioned along {names} into {n_parts} parts; each part is optimal "
                     f"given its already rounded parent slices, the whole is exactly additive "
                     f"but not necessarily of globally minimum deviation")
        path = f"partitioned ({n_parts} parts along {names}: {'/'.join(sorted(paths))})"
        return rounded, path, False

    # -- one sub-problem: round `cells`, with `fixed` cells at `fixed_values`
    def _solve_part(self, cells, fixed, fixed_values, lp_first, k_step, penalty, notes, label,
                    network=False):
        A = self.A
        in_scope = cells | fixed
        # relations entirely inside (cells + already fixed) and touching the cells
        support_total = np.diff(A.indptr)
        abs_A = abs(A)
        inside = abs_A @ in_scope.astype(float)
        touching = abs_A @ cells.astype(float)
        rows = np.flatnonzero((inside >= support_total - 0.5) & (touching > 0.5))
        base_vals = np.where(cells, self.low, 0.0)
        base_vals[fixed] = fixed_values[fixed] if len(fixed_values) else 0.0
        free = cells & self.nonmult
        sol = self._zero_restricted(rows, free, base_vals, lp_first, label, network)
        if sol is not None:
            vals, path, optimal = sol
            out = np.where(cells, vals, np.nan)
            return out, "ok", path, optimal
        msg = (f"no zero-restricted controlled rounding exists for {label} (every cell on an "
               f"adjacent multiple, multiples unchanged, additive)")
        if k_step <= 0:
            raise ZeroRestrictedInfeasible(
                msg + "; rerun with k_step=1 (cells may move to multiples further away, "
                "penalised)" + ("" if label == "the table" else
                                " or without partitioning (partition=false)"))
        notes.append(msg + f"; used the {k_step}-step relaxation")
        vals, path, optimal = self._k_step(rows, cells, fixed, base_vals, k_step, penalty,
                                           label)
        return np.where(cells, vals, np.nan), "k-step", path, optimal

    def _rhs(self, rows, base_vals):
        # A (base + b d) = 0  ->  A_free d = -A base / b (exact integers)
        r = -(self.A[rows] @ base_vals) / self.base
        return np.round(r)

    def _zero_restricted(self, rows, free, base_vals, lp_first, label, network=False):
        b = self.base
        cols = np.flatnonzero(free)
        M = self.A[rows][:, cols].tocsr()
        rhs = self._rhs(rows, base_vals)
        # rows without a free cell must already balance (all their cells are multiples)
        empty = np.diff(M.indptr) == 0
        if np.any(np.abs(rhs[empty]) > 1e-6):
            return None
        M, rhs = M[~empty], rhs[~empty]
        c = self.w[cols] * (b - 2.0 * self.rem[cols])
        if lp_first and self.sifting and len(cols) >= SIFTING_MIN_COLUMNS:
            sol = self._sifted(c, M, rhs, cols, base_vals, label, network)
            if sol == "fractional":
                lp_first = False  # not a network: straight to branch and bound
            elif sol is not False:
                return sol
        lp = LinearProgram(c=c, A=M, row_lower=rhs, row_upper=rhs, col_lower=np.zeros(len(cols)),
                           col_upper=np.ones(len(cols)),
                           integrality=None if lp_first else np.ones(len(cols), dtype=bool))
        res = self._solve(lp, simplex=lp_first)
        if res.status == "infeasible":
            return None
        if lp_first and res.has_solution and \
                np.abs(res.x - np.round(res.x)).max(initial=0.0) > 1e-6:
            # fractional vertex (not a network): branch and bound on the same model
            lp.integrality = np.ones(len(cols), dtype=bool)
            res = self._solve(lp)
            lp_first = False
            if res.status == "infeasible":
                return None
        if not res.has_solution:
            raise InputError(f"controlled rounding of {label}: the solver stopped without a "
                             f"solution ({res.status}); give a longer time_limit")
        d = np.round(res.x)
        vals = base_vals.copy()
        vals[cols] += b * d
        if lp_first:
            path = "network-flow LP (integral vertex)" if network else \
                "LP relaxation (integral vertex)"
        else:
            path = "MILP"
        return vals, path, res.status == "optimal"

    def _sifted(self, c, M, rhs, cols, base_vals, label, network):
        """The LP relaxation by sifting, started from every cell's individually best
        adjacent multiple (nearest rounding).  Returns the solution, None when
        infeasible, ``"fractional"`` when the optimal vertex is fractional (branch and
        bound is needed), or False when the whole-model route should decide."""
        remaining = None
        if self.deadline is not None:
            remaining = max(1.0, self.deadline - time.perf_counter())
        start = (c < 0).astype(float)
        res = sifted_lp(c, M, rhs, np.zeros(len(cols)), np.ones(len(cols)), start,
                        time_limit=remaining, threads=self.threads)
        self.sifting_log = res
        if res.status == "infeasible":
            return None
        if res.status != "optimal":
            if res.status == "time_limit":
                raise InputError(f"controlled rounding of {label}: the time limit was reached "
                                 f"before a solution was found; give a longer time_limit")
            return False
        if np.abs(res.x - np.round(res.x)).max(initial=0.0) > 1e-6:
            return "fractional"
        vals = base_vals.copy()
        vals[cols] += self.base * np.round(res.x)
        kind = "network-flow LP" if network else "LP relaxation"
        return vals, f"{kind}, sifting (integral vertex)", True

    def _k_step(self, rows, cells, fixed, base_vals, K, penalty, label):
        """Cells may move up to K multiples beyond their adjacent ones (penalised).

        Non-multiple i: R = low + b (z + p - m), z binary (the zero-restricted choice), p, m
        integer steps in [0, K]; deviation cost (b - 2r) z + b (p + m) plus the step penalty.
        Multiple i: R = x + b (p - m).  ``m`` is capped so that R stays >= 0.
        """
        b = self.base
        idx = np.flatnonzero(cells)
        k = len(idx)
        nm = self.nonmult[idx]
        w = self.w[idx]
        M = self.A[rows][:, idx].tocsc()
        rhs = self._rhs(rows, base_vals)
        # columns: z (k, only non-multiples matter), p (k), m (k)
        Z = M @ sp.diags(nm.astype(float))
        big = sp.hstack([Z, M, -M]).tocsr()
        c = np.concatenate([w * (b - 2 * self.rem[idx]) * nm,
                            w * b + penalty, w * b + penalty])
        m_cap = np.minimum(K, np.floor(base_vals[idx] / b + _TOL))
        lp = LinearProgram(c=c, A=big, row_lower=rhs, row_upper=rhs,
                           col_lower=np.zeros(3 * k),
                           col_upper=np.concatenate([nm.astype(float), np.full(k, float(K)),
                                                     m_cap]),
                           integrality=np.ones(3 * k, dtype=bool))
        res = self._solve(lp)
        if not res.has_solution:
            raise ZeroRestrictedInfeasible(
                f"controlled rounding of {label}: no rounding within {K} extra step(s) exists "
                f"({res.status}); try a larger k_step")
        sol = np.round(res.x)
        z, p, m = sol[:k], sol[k:2 * k], sol[2 * k:]
        vals = base_vals.copy()
        vals[idx] = base_vals[idx] + b * (z + p - m)
        return vals, f"{K}-step MILP", res.status == "optimal"

    def _solve(self, lp, simplex=False):
        remaining = None
        if self.deadline is not None:
            remaining = max(1.0, self.deadline - time.perf_counter())
        options = {}
        if simplex:
            # simplex ends on a vertex: integral for a totally unimodular matrix
            options["solver"] = "simplex"
        return solve(lp, time_limit=remaining, mip_gap=self.mip_gap, threads=self.threads,
                     **options)


# ---------------------------------------------------------------- sifting LP
@dataclass
class SiftedLPResult:
    """Outcome of :func:`sifted_lp`.

    ``status`` is ``"optimal"`` (proven optimal for the *whole* LP: every column outside
    the final working set priced out), ``"infeasible"`` (elastic slacks stayed positive
    at a priced-out optimum with the largest penalty tried), ``"time_limit"`` or
    ``"error"``; ``x`` is the solution (None unless optimal); ``rounds`` pricing rounds;
    ``working_columns`` size of the final working set.
    """

    status: str
    x: np.ndarray | None
    objective: float | None
    rounds: int
    working_columns: int
    runtime: float


def sifted_lp(c: np.ndarray, A: sp.spmatrix, rhs: np.ndarray, lower: np.ndarray,
              upper: np.ndarray, start: np.ndarray, *, per_row: int = 24,
              max_add: int = 100_000, time_limit: float | None = None,
              threads: int | None = 1) -> SiftedLPResult:
    """``min c'x  s.t.  A x = rhs,  lower <= x <= upper`` by sifting (column generation).

    Meant for LPs with far more columns than rows (a 1000 x 1000 table has 10^6 cells
    but 2 002 relations).  Every column outside a *working set* is held at its value in
    ``start``, which must be one of its bounds; only the working set is passed to HiGHS
    (warm, persistent model) together with two elastic slack columns per row, so the
    restricted LP is always feasible.  After each solve the reduced costs
    ``c - A' y`` of *all* columns are priced in one sparse product: a held column whose
    reduced cost says that moving it off its bound would lower the objective joins the
    working set.  When no such column is left and the slacks are zero, the restricted
    optimum is optimal for the whole LP (the usual LP optimality conditions hold for
    every column), so the answer is exact, not a heuristic.

    The initial working set is, for every row, the ``per_row`` columns with the smallest
    ``|c|`` (the cheapest to move away from ``start`` when ``start`` is each column's
    individually best bound).

    Examples
    --------
    >>> A = sp.csr_matrix(np.array([[1.0, 1.0, 1.0]]))
    >>> r = sifted_lp(np.array([1.0, -1.0, 2.0]), A, np.array([1.0]), np.zeros(3),
    ...               np.ones(3), np.array([0.0, 1.0, 0.0]), per_row=1)
    >>> r.status, r.x.tolist()
    ('optimal', [0.0, 1.0, 0.0])
    """
    t0 = time.perf_counter()
    deadline = None if time_limit is None else t0 + time_limit
    A = sp.csr_matrix(A, dtype=float)
    m, n = A.shape
    c = np.asarray(c, dtype=float)
    lower = np.asarray(lower, dtype=float)
    upper = np.asarray(upper, dtype=float)
    start = np.asarray(start, dtype=float).copy()
    if not np.all((np.abs(start - lower) <= _TOL) | (np.abs(start - upper) <= _TOL)):
        raise ValueError("sifted_lp: every start value must be at one of its bounds")
    AT = A.T.tocsr()
    movable = upper - lower > _TOL
    # initial working set, per row: the columns of smallest |c| whose move away from
    # `start` brings the row toward its right-hand side (as many as twice the row's
    # imbalance, plus `per_row`), and the `per_row` cheapest others
    coo = A.tocoo()
    keep = movable[coo.col]
    rows, cols, vals = coo.row[keep], coo.col[keep], coo.data[keep]
    imbalance = rhs - A @ start
    direction = np.where(np.abs(start - lower) <= _TOL, 1.0, -1.0)
    reach = vals * direction[cols] * (upper - lower)[cols]
    helpful = reach * imbalance[rows] > 0
    step = np.maximum(np.abs(reach), _TOL)
    need = np.ceil(np.abs(imbalance) / max(float(np.median(step)) if len(step) else 1.0,
                                           _TOL))
    in_w = np.zeros(n, dtype=bool)
    for mask, quota in ((helpful, per_row + 2 * need), (~helpful, np.full(m, per_row))):
        r, cl = rows[mask], cols[mask]
        order = np.lexsort((np.abs(c[cl]), r))
        r, cl = r[order], cl[order]
        rank = np.arange(len(r)) - np.searchsorted(r, np.arange(m))[r]
        in_w[cl[rank < quota[r]]] = True
    scale = float(np.abs(c).max()) if n else 1.0
    penalty = 1e3 * max(scale, 1.0)
    eye = sp.identity(m, format="csc")

    def held_rhs():
        return rhs - A @ np.where(in_w, 0.0, start)

    # model columns: slacks s+ (m) and s- (m) first, then the working columns in the
    # order they joined
    model_cols = np.flatnonzero(in_w)
    lp = LinearProgram(
        c=np.concatenate([np.full(2 * m, penalty), c[model_cols]]),
        A=sp.hstack([eye, -eye, A[:, model_cols]]).tocsr(),
        row_lower=held_rhs(), row_upper=held_rhs(),
        col_lower=np.concatenate([np.zeros(2 * m), lower[model_cols]]),
        col_upper=np.concatenate([np.full(2 * m, np.inf), upper[model_cols]]))
    model = HighsModel(lp, threads=threads)
    rounds = 0
    while True:
        rounds += 1
        remaining = None if deadline is None else max(0.5, deadline - time.perf_counter())
        res = model.solve(time_limit=remaining)
        if res.status != "optimal" or res.duals is None:
            st = "time_limit" if res.status.startswith("time_limit") else "error"
            return SiftedLPResult(st, None, None, rounds, len(model_cols),
                                  time.perf_counter() - t0)
        reduced = c - AT @ res.duals
        tol = 1e-7 * max(scale, 1.0)
        enter = ~in_w & movable & (
            ((np.abs(start - lower) <= _TOL) & (reduced < -tol)) |
            ((np.abs(start - upper) <= _TOL) & (reduced > tol)))
        if not enter.any():
            if res.x[:2 * m].max(initial=0.0) > 1e-7:
                # slacks still in use: the LP is infeasible or the penalty too small
                if penalty > 1e9 * max(scale, 1.0):
                    return SiftedLPResult("infeasible", None, None, rounds,
                                          len(model_cols), time.perf_counter() - t0)
                penalty *= 1e3
                model.set_objective(np.concatenate([np.full(2 * m, penalty),
                                                    c[model_cols]]))
                continue
            x = start.copy()
            x[model_cols] = res.x[2 * m:]
            return SiftedLPResult("optimal", x, float(c @ x), rounds, len(model_cols),
                                  time.perf_counter() - t0)
        if deadline is not None and time.perf_counter() > deadline:
            return SiftedLPResult("time_limit", None, None, rounds, len(model_cols),
                                  time.perf_counter() - t0)
        new = np.flatnonzero(enter)
        if len(new) > max_add:
            new = new[np.argsort(-np.abs(reduced[new]), kind="stable")[:max_add]]
        in_w[new] = True
        model.add_cols(c[new], lower[new], upper[new], A_cols=A[:, new].tocsc())
        model_cols = np.concatenate([model_cols, new])
        bounds = held_rhs()
        model.set_row_bounds(np.arange(m), bounds, bounds)


def _partition_dimensions(table: Table) -> list[int]:
    """Up to two dimensions to partition along: those whose hierarchies have the most
    non-leaf codes (a flat dimension only splits off its total, so it is used only when
    its table is large in that dimension).  The last dimension is never used when it is
    the only one left, so every part keeps at least one whole dimension."""
    scored = []
    for d, dim in enumerate(table.dimensions):
        h = dim.hierarchy
        scored.append((len(h.edges()), len(h), d))
    scored.sort(reverse=True)
    chosen = [d for n_edges, size, d in scored if n_edges > 1 or size > 50]
    return chosen[:min(2, len(table.dimensions) - 1)]


def _stages(table: Table, d: int, within: np.ndarray) -> list[np.ndarray]:
    """Cell masks, in solving order, that split ``within`` along dimension ``d``: the
    total's slice, then per parent code (shallowest first) its children's slices."""
    h = table.dimensions[d].hierarchy
    pos = table.positions[d]
    order = sorted((p for p, _ in h.edges()), key=lambda p: h.depth[p])
    groups = [np.array([0])] + [np.asarray(h.children[p]) for p in order]
    return [within & np.isin(pos, g) for g in groups]


def _part_label(table: Table, part: np.ndarray, dims: list[int]) -> str:
    bits = []
    for d in dims:
        codes = np.unique(table.positions[d][part])
        names = [table.dimensions[d].hierarchy.codes[c] for c in codes[:3]]
        bits.append(f"{table.dimensions[d].name} in {{{', '.join(names)}"
                    f"{', ...' if len(codes) > 3 else ''}}}")
    return "the part " + ", ".join(bits)


# ---------------------------------------------------------------- small-count rounding
def small_count_round(table: Table, base: int, threshold: int, *,
                      time_limit: float | None = None, mip_gap: float | None = None,
                      threads: int | None = 1) -> tuple[np.ndarray, str, bool]:
    """Round inner counts ``0 < x < threshold`` to 0 or ``base``; aggregates follow.

    The number of small cells rounded up is fixed to ``round(sum of small counts / base)``
    (so the grand total stays within ``base/2`` of the sum's share), and the MILP picks
    which ones minimising the sum over aggregates of ``|published - true|`` (the grand
    total weighted by the number of aggregates, so it is kept closest).

    Returns the rounded values of every cell, the solver path and whether optimal.
    """
    x = table.value.astype(float)
    inner = table.is_inner
    small = inner & (x > _TOL) & (x < threshold - _TOL)
    out_inner = x[inner].copy()
    small_local = small[inner]
    n_small = int(small_local.sum())
    if n_small == 0:
        return x.copy(), "nothing to round", True
    agg = _aggregation_matrix(table, inner)  # cells x inner
    is_agg = ~inner
    S = agg[is_agg][:, np.flatnonzero(small_local)].tocsr()  # aggregates x small cells
    xs = out_inner[small_local]
    # deviation of aggregate t: b * sum_{i in t} d_i - sum_{i in t} x_i
    shift = S @ xs
    keep = np.diff(S.indptr) > 0
    S, shift = S[keep], shift[keep]
    n_agg = S.shape[0]
    target_up = int(np.floor(xs.sum() / base + 0.5))
    # variables: d (n_small, binary), e (n_agg, >= |b S d - shift|)
    agg_weight = np.ones(n_agg)
    totals = np.flatnonzero(is_agg)[keep]
    agg_weight[totals == _grand_total(table)] = max(1.0, float(n_agg))
    I = sp.identity(n_agg, format="csr")
    upper_rows = sp.hstack([base * S, -I])   # b S d - e <= shift
    lower_rows = sp.hstack([base * S, I])    # b S d + e >= shift
    count_row = sp.hstack([sp.csr_matrix(np.ones((1, n_small))), sp.csr_matrix((1, n_agg))])
    A = sp.vstack([upper_rows, lower_rows, count_row]).tocsr()
    lo = np.concatenate([np.full(n_agg, -np.inf), shift, [target_up]])
    hi = np.concatenate([shift, np.full(n_agg, np.inf), [target_up]])
    c = np.concatenate([np.zeros(n_small), agg_weight])
    lp = LinearProgram(c=c, A=A, row_lower=lo, row_upper=hi,
                       col_lower=np.zeros(n_small + n_agg),
                       col_upper=np.concatenate([np.ones(n_small), np.full(n_agg, np.inf)]),
                       integrality=np.concatenate([np.ones(n_small, bool), np.zeros(n_agg, bool)]))
    res = solve(lp, time_limit=time_limit, mip_gap=mip_gap, threads=threads)
    if not res.has_solution:
        raise InputError(f"small-count rounding: the solver stopped without a solution "
                         f"({res.status}); give a longer time_limit")
    d = np.round(res.x[:n_small])
    out_inner[small_local] = base * d
    rounded = _aggregate_from_inner(table, inner, out_inner, agg=agg)
    return rounded, "MILP", res.status == "optimal"


def _grand_total(table: Table) -> int:
    if table.dimensions:
        return 0  # every hierarchy's root is code 0: cell 0 is the grand total
    return -1


def _aggregation_matrix(table: Table, inner: np.ndarray) -> sp.csr_matrix:
    """cells x inner-cells 0/1 matrix: which inner cells make up each cell (the table's
    model matrix; its columns, the leaf cells in cell order, are the inner cells)."""
    if not table.dimensions:
        # general table: solve the relations top-down is not defined in general
        raise InputError("small-count rounding and margins_from_interior need a product "
                         "table (dimensions with hierarchies)")
    return table.model_matrix.sparse()


def _aggregate_from_inner(table: Table, inner: np.ndarray, inner_values: np.ndarray,
                          agg: sp.csr_matrix | None = None) -> np.ndarray:
    if agg is None:
        agg = _aggregation_matrix(table, inner)
    return np.asarray(agg @ inner_values, dtype=float)


# ---------------------------------------------------------------- checks and helpers
def _check_base(base) -> int:
    try:
        b = int(base)
    except (TypeError, ValueError):
        raise InputError(f"rounding base must be a positive integer, not {base!r}") from None
    if b != base or b < 1:
        raise InputError(f"rounding base must be a positive integer, not {base!r}")
    return b


def _weights(table: Table, weights) -> np.ndarray:
    n = table.n_cells
    if weights is None or (isinstance(weights, str) and weights == "unity"):
        return np.ones(n)
    if isinstance(weights, str):
        if weights == "relative":
            return 1.0 / np.maximum(table.value, 1.0)
        raise InputError(f"rounding weights must be 'unity', 'relative' or an array, "
                         f"not {weights!r}")
    w = np.asarray(weights, dtype=float)
    if w.shape != (n,) or np.any(~np.isfinite(w)) or np.any(w < 0):
        raise InputError(f"rounding weights: expected {n} finite non-negative values")
    return w


def _weights_label(weights) -> str:
    if weights is None:
        return "unity"
    return weights if isinstance(weights, str) else "array"


def _is_additive(table: Table, values: np.ndarray) -> bool:
    if table.n_relations == 0:
        return True
    return bool(np.abs(table.relations @ values).max() <= 1e-6)


def _is_zero_restricted(x: np.ndarray, rounded: np.ndarray, base: int) -> bool:
    low = np.floor(x / base + _TOL) * base
    mult = np.abs(x - low) <= _TOL
    ok_mult = np.abs(rounded - x) <= _TOL
    ok_other = (np.abs(rounded - low) <= _TOL) | (np.abs(rounded - low - base) <= _TOL)
    return bool(np.all(np.where(mult, ok_mult, ok_other)))


def _max_steps(x: np.ndarray, rounded: np.ndarray, base: int) -> int:
    """Multiples moved beyond the adjacent ones (0 when zero-restricted)."""
    if len(x) == 0:
        return 0
    low = np.floor(x / base + _TOL) * base
    mult = np.abs(x - low) <= _TOL
    high = np.where(mult, low, low + base)
    beyond = np.maximum(np.maximum(low - rounded, rounded - high), 0.0) / base
    return int(np.ceil(beyond.max() - 1e-9))
