"""Controlled rounding: zero-restricted and additive at every level, minimum deviation.

Two-dimensional tables go LP first (a network in 2-D: integral vertex; sifting for large
LPs), others to the MILP; large hierarchical tables are solved part by part
(:mod:`tabprotect.rounding.partition`); when no zero-restricted rounding exists the K-step
relaxation lets cells move further, penalised.
"""
from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from solvers import LinearProgram, solve
from tabprotect.errors import InputError
from tabprotect.model.table import Table
from tabprotect.rounding.partition import part_label, partition_dimensions, stages
from tabprotect.rounding.controlled_search import search_rounding
from tabprotect.rounding.result import TOL, ZeroRestrictedInfeasible
from tabprotect.rounding.settings import RoundingSettings
from tabprotect.rounding.sifting import SiftedLPResult, sifted_lp

__all__ = ["ControlledRounder"]


class ControlledRounder:
    """Zero-restricted (or K-step) controlled rounding of one table."""

    def __init__(self, table: Table, base: int, weights: np.ndarray, *, time_limit,
                 mip_gap, threads, settings: RoundingSettings = RoundingSettings()):
        self.table = table
        self.base = base
        self.w = weights
        self.x = table.value.astype(float)
        self.low = np.floor(self.x / base + TOL) * base
        self.rem = np.where(self.x - self.low > TOL, self.x - self.low, 0.0)
        self.nonmult = self.rem > 0
        self.A = table.relations.tocsr()
        self.time_limit = time_limit
        self.mip_gap = mip_gap
        self.threads = threads
        self.deadline = None if time_limit is None else time.perf_counter() + time_limit
        self.settings = settings
        self.sifting_log: SiftedLPResult | None = None
        # without a time limit, branch and bound of every part together stops here
        self.search_end: float | None = None

    # -- orchestration
    def run(self, k_step: int, penalty: float, partition, partition_min_cells: int):
        notes: list[str] = []
        table = self.table
        dims = table.dimensions
        part_dims: list[int] = []
        if partition is True or (partition == "auto" and len(dims) >= 3
                                 and table.n_cells >= partition_min_cells):
            part_dims = partition_dimensions(table)
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
        for cells in stages(table, dims[0], np.ones(table.n_cells, dtype=bool)):
            inner_stages = stages(table, dims[1], cells) if len(dims) > 1 else [cells]
            for part in inner_stages:
                if not part.any():
                    continue
                label = part_label(table, part, dims)
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
        if not lp_first:
            return self._searched(c, M, rhs, cols, base_vals, label)
        if len(cols) >= self.settings.sifting_min_columns:
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

    def _searched(self, c, M, rhs, cols, base_vals, label):
        """Three and more dimensions: the relaxation's bound, a first rounding improved in
        its neighbourhood, branch and bound on the rest of the budget
        (:func:`search_rounding`). None when no zero-restricted rounding exists."""
        rem = self.rem[cols]
        lp = LinearProgram(c=c, A=M, row_lower=rhs, row_upper=rhs,
                           col_lower=np.zeros(len(cols)), col_upper=np.ones(len(cols)),
                           offset=float(self.w[cols] @ rem))
        if self.search_end is None:
            self.search_end = time.perf_counter() + self.settings.search_seconds
        found = search_rounding(lp, deadline=self.deadline, search_end=self.search_end,
                                mip_gap=self.mip_gap, threads=self.threads)
        if found.up is None:
            if found.optimal:
                return None  # proven: no zero-restricted rounding
            raise InputError(f"controlled rounding of {label}: the time limit was reached "
                             f"before a zero-restricted rounding was found ({found.steps}); "
                             f"give a longer time_limit")
        vals = base_vals.copy()
        vals[cols] += self.base * found.up
        if found.optimal:
            return vals, f"MILP ({found.steps})", True
        return vals, f"MILP ({found.steps}; within {100 * found.gap:.2f} % of the bound)", \
            False

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
                        per_row=self.settings.sifting_per_row,
                        max_add=self.settings.sifting_max_add, time_limit=remaining,
                        threads=self.threads)
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
        m_cap = np.minimum(K, np.floor(base_vals[idx] / b + TOL))
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
