"""Summary figures that may leave the confidential report.

A suppression pattern is judged by the LP audit: the intruder knows the published cells,
the relations of the table and the a-priori bounds, and must not narrow any primary cell
beyond its protection interval. A summary figure published beside the table is one more
thing the intruder knows. A figure such as "value of the suppressed cells" is a linear
equation over the suppressed cells: with one primary, ``value_suppressed -
value_secondary`` *is* the primary's value.

:func:`public_summary` therefore releases a figure only when adding it to the intruder's
system as one more published equation narrows no primary's feasibility interval
(intervals with and without the equation compared, with a relative tolerance). Figures are
tried in the order given and each is checked together with the ones already released, so
two figures that disclose only together are not both released; a figure that the released
ones determine (its equation a combination of theirs, such as a share of a released sum)
tells the intruder nothing more and is released without an LP. A figure whose linear
form is not known, whose check does not finish in time, or that is not linear over the
cells it sums (absolute values of cells that may be negative) is withheld: it stays in the
confidential report only. Counts of cells, primaries and secondaries are released as they
are (the status of every cell is published anyway).

Examples
--------
>>> from tabprotect.model import Hierarchy, Table
>>> r = Hierarchy.flat(["1", "2"], total="T"); c = Hierarchy.flat(["a", "b"], total="T")
>>> t = Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2])
>>> st = t.status.copy(); st[[4, 5, 7, 8]] = ["U", "M", "M", "M"]
>>> t = t.replace(status=st, upl=np.where(st == "U", 1.0, 0.0))
>>> out = public_summary(t)
>>> out["primary"], out["secondary"], sorted(out["withheld"])
(1, 3, ['value_primary', 'value_secondary'])
"""
from __future__ import annotations

import dataclasses
import time
from typing import Mapping

import numpy as np
import scipy.sparse as sp

from solvers import HighsModel, LinearProgram, solve
from tabprotect.errors import InputError
from tabprotect.model.relations import linked_components
from tabprotect.model.status import check_status, is_suppressed
from tabprotect.model.table import Table

#: figures computed when none are given; each is a sum of absolute cell values
STANDARD_FIGURES = ("value_suppressed", "value_secondary", "value_primary",
                    "share_value_suppressed")
#: reasons a figure is withheld (the only text the caller gets about a withheld figure)
REASONS = {
    "narrows": "narrows a primary cell's feasibility interval",
    "unknown": "no linear form is known for it",
    "not_linear": "sums absolute values of cells that may be negative",
    "inconsistent": "does not agree with the table",
    "time": "its check did not finish in time",
}
_COUNT_KEYS = ("cells", "primary", "secondary", "suppressed")


def standard_figures(table: Table, status=None) -> dict[str, float]:
    """The value figures of a pattern (absolute values; the share is of all cells)."""
    status = table.status if status is None else np.asarray(status)
    a = np.abs(table.value)
    sup = is_suppressed(status)
    total = float(a.sum())
    return {"value_suppressed": float(a[sup].sum()),
            "value_secondary": float(a[status == "M"].sum()),
            "value_primary": float(a[status == "U"].sum()),
            "share_value_suppressed": float(a[sup].sum()) / total if total > 0 else 0.0}


def public_summary(table: Table, status=None, figures: Mapping[str, float] | None = None, *,
                   forms: Mapping[str, np.ndarray] | None = None, integer: bool | None = None,
                   time_limit: float | None = 60.0, tol: float = 1e-6, joint: int = 3) -> dict:
    """Counts of the pattern and the figures that disclose nothing more than the table.

    Parameters
    ----------
    table : the table with its true values and a-priori bounds
    status : the pattern's status letters (default ``table.status``)
    figures : name -> value of the figures to release (default :func:`standard_figures`).
        Names of :data:`STANDARD_FIGURES` have known forms; any other name needs ``forms``
    forms : name -> per-cell coefficients ``w``: the figure is ``sum w * value``
        (e.g. a cost with value weights: ``w = (status == "M") * 1.0``)
    integer : integer intervals (default: frequency tables)
    time_limit : seconds for all checks; a figure not checked in time is withheld
    tol : relative tolerance when comparing interval ends
    joint : integer tables: a primary's end is first sought within its component (the
        figures' parts there at their true values), then with this many of the largest
        other components beside it, then in the whole system (each a certificate: the
        other components stay at the true table); changes only the time, never the
        figures released

    Returns
    -------
    dict with ``cells``, ``primary``, ``secondary``, ``suppressed`` (counts), every released
    figure under its name, and ``withheld``: name -> reason for each figure kept back.
    """
    n = table.n_cells
    status = table.status if status is None else check_status(status, n)
    sup = is_suppressed(status)
    out: dict = {"cells": int(n), "primary": int((status == "U").sum()),
                 "secondary": int((status == "M").sum()), "suppressed": int(sup.sum())}
    figures = standard_figures(table, status) if figures is None else dict(figures)
    clash = set(figures) & set(_COUNT_KEYS + ("withheld",))
    if clash:
        raise InputError(f"public_summary: figure name(s) {sorted(clash)} are reserved")
    forms = dict(forms or {})
    if integer is None:
        integer = table.kind == "frequency"
    deadline = None if time_limit is None else time.monotonic() + time_limit
    checker = _Checker(table, status, bool(integer), tol, deadline, joint)
    withheld: dict[str, str] = {}
    for name, value in figures.items():
        form = _form(name, float(value), table, status, forms.get(name))
        reason = form if isinstance(form, str) else checker.try_release(*form)
        if reason is None:
            out[name] = value
        else:
            withheld[name] = REASONS[reason]
    out["withheld"] = withheld
    return out


def _form(name, value, table, status, weights):
    """``(coefficients, rhs)`` of the figure as ``coefficients @ x == rhs``, or a reason key."""
    if weights is not None:
        w = np.asarray(weights, dtype=float)
        if w.shape != (table.n_cells,):
            raise InputError(f"public_summary: form of '{name}' needs {table.n_cells} entries")
        return w, value
    sup = is_suppressed(status)
    masks = {"value_suppressed": sup, "value_secondary": status == "M",
             "value_primary": status == "U", "share_value_suppressed": sup}
    if name not in masks:
        return "unknown"
    mask = masks[name]
    # |x| is linear where the a-priori bounds fix the sign of an unpublished cell
    sign = np.where(table.lb >= 0, 1.0, np.where(table.ub <= 0, -1.0, 0.0))
    sign = np.where(sup, sign, np.sign(table.value))
    if (sup & mask & (sign == 0)).any() or (name == "share_value_suppressed" and
                                            (sup & (sign == 0)).any()):
        return "not_linear"
    if name == "share_value_suppressed":
        # sum_sup |x| = s * sum_all |x|  <=>  sum (1[sup] - s) |x| = 0
        return sign * (mask.astype(float) - value), 0.0
    return sign * mask, value


class _Checker:
    """The intruder's system over the unpublished cells, the primaries' intervals in it,
    and the figures released so far as extra rows."""

    def __init__(self, table: Table, status, integer: bool, tol: float, deadline,
                 joint: int = 3):
        self.tol, self.deadline, self.integer = tol, deadline, integer
        sup = is_suppressed(status)
        self.cells = np.flatnonzero(sup)
        self.value = table.value.astype(float)
        self.published = ~sup
        A = table.relations.tocsr()
        sub = A[:, self.cells].tocsr()
        rows = np.flatnonzero(np.diff(sub.indptr) > 0)
        rhs = -np.asarray(A[rows] @ np.where(sup, 0.0, self.value), dtype=float)
        # relations that hold only up to rounding in the true table hold so for the intruder
        magnitude = np.asarray(abs(A[rows]) @ np.abs(self.value), dtype=float)
        band = 1.5 * np.abs(np.asarray(A[rows] @ self.value, dtype=float)) \
            + 1e-12 * np.maximum(1.0, magnitude)
        self.lp = LinearProgram(c=np.zeros(len(self.cells)), A=sub[rows],
                                row_lower=rhs - band, row_upper=rhs + band,
                                col_lower=table.lb[self.cells], col_upper=table.ub[self.cells])
        self.base = _Bounds(self.lp, integer, deadline)
        self.ext = _Bounds(self.lp, integer, deadline)
        comps = linked_components(A, sup)
        self.comp = np.full(len(self.cells), -1)
        local = np.full(table.n_cells, -1)
        local[self.cells] = np.arange(len(self.cells))
        for k, c in enumerate(comps):
            self.comp[local[c]] = k
        self.primary = np.flatnonzero(status[self.cells] == "U")
        self.n_comp = len(comps)
        # each component's columns and rows (every row lies in one component)
        order = np.argsort(self.comp, kind="stable")
        self.comp_cols = np.split(order, np.cumsum(np.bincount(self.comp,
                                                               minlength=self.n_comp))[:-1])
        A_lp = self.lp.A.tocsr()
        row_comp = self.comp[A_lp.indices[A_lp.indptr[:-1]]] if A_lp.shape[0] else \
            np.zeros(0, np.int64)
        self.comp_rows = [np.flatnonzero(row_comp == k) for k in range(self.n_comp)]
        self.A_csr = A_lp
        # components by size, largest first (the likeliest to make up a change of a
        # component's part of the figures)
        self.by_size = np.argsort([-len(c) for c in self.comp_cols], kind="stable")
        self.joint = joint
        # per released figure: its part's (min, max) per component
        self.rows: list[tuple[np.ndarray, np.ndarray]] = []
        # per released figure: its coefficients over the unpublished cells
        self.released: list[np.ndarray] = []
        self.base_lo = np.full(len(self.cells), np.nan)
        self.base_hi = np.full(len(self.cells), np.nan)
        # solutions of the system without the figures, for _spanned (LP tables only)
        self.points = _Points(len(self.cells)) if not integer else None
        # integer tables: per sense, primary -> its component's part of an integral
        # solution without the figures at that end (for _shifted)
        self.ends: dict[str, dict[int, np.ndarray]] = {"min": {}, "max": {}}
        # integer tables: (component, shift of the parts of the figures in play) -> that
        # component's integral solution with its parts moved so, or None where none exists
        self.shifts: dict[tuple, np.ndarray | None] = {}

    def try_release(self, coef: np.ndarray, rhs: float) -> str | None:
        """None if the figure narrows no primary (its row is then kept), else a reason."""
        coef = np.asarray(coef, dtype=float)
        free = coef[self.cells]
        const = float(coef[self.published] @ self.value[self.published])
        truth = float(free @ self.value[self.cells]) + const
        scale = max(1.0, abs(rhs), float(np.abs(coef) @ np.abs(self.value)))
        if abs(truth - rhs) > 1e-6 * scale:
            return "inconsistent"
        nz = np.flatnonzero(free)
        if len(nz) == 0:
            return None          # a function of published cells only
        if self._implied(free):
            return None          # the intruder computes it from the figures released
        band = abs(truth - rhs) + 1e-12 * scale
        ranges = self._ranges(free, nz)
        if ranges is None:
            return "time"
        active = self._active(ranges, scale, rhs - const, band)
        targets = self.primary[active[self.comp[self.primary]]]
        if len(targets) == 0:
            self._keep(ranges, free)
            return None
        row = sp.csr_matrix((free[nz], (np.zeros(len(nz), int), nz)), shape=(1, len(free)))
        new_row = self.ext.add_row(row, rhs - const - band, rhs - const + band)
        self.spans = self.rows + [ranges]
        self.shifts = {}         # the moves are of these rows' parts
        reason = self._holds(targets, self.released + [free])
        if reason is None:
            self._keep(ranges, free)
        else:
            self.ext.delete_row(new_row)
        return reason

    def _keep(self, ranges, free: np.ndarray) -> None:
        self.rows.append(ranges)
        self.released.append(free)

    def _implied(self, free: np.ndarray) -> bool:
        """The row's part over the unpublished cells is a combination of the released
        figures' parts: the intruder who knows those figures (and the published cells)
        computes this one, so it tells nothing more (its value agrees with the table)."""
        if not self.released:
            return False
        R = np.array(self.released).T
        a = np.linalg.lstsq(R, free, rcond=None)[0]
        return bool(np.abs(R @ a - free).max() <= 1e-9 * np.abs(free).max())

    def _ranges(self, free: np.ndarray, nz: np.ndarray):
        """Per component, the least and largest value of the row's part over the intruder's
        system: one LP each way, because the components are independent and an optimum
        of their sum is an optimum of every part. None when out of time; infinite ends
        when unbounded."""
        out = []
        for sense in ("min", "max"):
            status, x = self.base.optimum(nz, free[nz], sense)
            if status == "unbounded":
                return np.full(self.n_comp, -np.inf), np.full(self.n_comp, np.inf)
            if status != "optimal":
                return None
            self._bank(x)
            out.append(np.bincount(self.comp[nz], weights=free[nz] * x[nz],
                                   minlength=self.n_comp))
        return out[0], out[1]

    def _active(self, ranges, scale: float, rhs: float, band: float) -> np.ndarray:
        """Components whose primaries the rows in play may narrow. A component on which
        every row's part is constant cannot be narrowed (its part is a published constant
        already). With a single row (and LP intervals) the rest of the table leaves the
        component's part the range ``rhs - others``; a component whose own range lies
        inside it is not narrowed either."""
        lo, hi = ranges
        tol = 1e-9 * scale
        active = hi - lo > tol
        for r_lo, r_hi in self.rows:
            active |= r_hi - r_lo > tol
        if self.rows or self.integer or not np.isfinite(lo).all() or \
                not np.isfinite(hi).all():
            return active
        others_lo, others_hi = lo.sum() - lo, hi.sum() - hi
        inside = (lo >= rhs - band - others_hi - tol) & (hi <= rhs + band - others_lo + tol)
        return active & ~inside

    def _base(self, targets: np.ndarray) -> bool:
        """The targets' intervals without the figures (computed once per primary); False
        when out of time.

        The system without the figures falls apart into the components, so one LP
        optimizes one target of every component at once: an optimum of their sum is an
        optimum of each (:meth:`_base_round`). A solution at a target's a-priori bound
        gives that end without an LP."""
        for sense, known in (("min", self.base_lo), ("max", self.base_hi)):
            pace = _Pace(self.deadline, int(np.isnan(known[targets]).sum()))
            while True:
                pending = targets[np.isnan(known[targets])]
                if len(pending) == 0:
                    break
                if pace.hopeless(len(pending)):
                    return False
                _, first = np.unique(self.comp[pending], return_index=True)
                if not self._base_round(pending[first], pending, sense, known):
                    return False
        return True

    def _base_round(self, picks: np.ndarray, pending: np.ndarray, sense: str,
                    known: np.ndarray) -> bool:
        """The ``sense`` end of ``picks`` (one per component) from one LP; a pick whose
        component's part of the solution is fractional in an integer table, and every pick
        of an unbounded LP, gets its own solve (:meth:`_Bounds.bound`)."""
        single = picks
        status, x = self.base.optimum(picks, np.ones(len(picks)), sense)
        if status == "optimal":
            whole = np.ones(self.n_comp, bool)
            if self.integer:
                whole[self.comp[np.abs(x - np.round(x)) > 1e-6]] = False
            ok = whole[self.comp[picks]]
            known[picks[ok]] = x[picks[ok]]
            self._end_points(sense, picks[ok], x)
            self._bank(x)
            self._witness(x, pending[whole[self.comp[pending]]])
            single = picks[~ok]
        elif status not in ("unbounded", "infeasible"):
            return False
        for j in single:
            val, xj = self._local(int(j), sense, []) if self.integer else \
                self.base.bound(int(j), sense)
            if val is None or val == "infeasible":
                return False
            known[j] = val
            if xj is not None:
                self._end_points(sense, [j], xj)
                self._bank(xj)
                self._witness(xj, pending)
        return True

    def _witness(self, x: np.ndarray, targets: np.ndarray) -> None:
        """Targets whose end ``x`` (a solution of the system without the figures, integer
        on these targets' components in an integer table) shows at an a-priori bound."""
        self._end_points("min", self._at_bounds(x, targets, self.base.col_lower,
                                                 self.base_lo), x)
        self._end_points("max", self._at_bounds(x, targets, self.base.col_upper,
                                                 self.base_hi), x)

    @staticmethod
    def _at_bounds(x, targets, bound, known) -> np.ndarray:
        """Targets not yet known that ``x`` shows at their (finite) a-priori ``bound``
        (their end set to it; returned)."""
        pending = targets[np.isnan(known[targets]) & np.isfinite(bound[targets])]
        at = pending[np.abs(x[pending] - bound[pending])
                     <= 1e-9 * np.maximum(1.0, np.abs(bound[pending]))]
        known[at] = bound[at]
        return at

    def _end_points(self, sense: str, targets, x: np.ndarray) -> None:
        """Integer tables: keep each target's component part of ``x`` (a solution without
        the figures, integral there, at the target's ``sense`` end)."""
        if self.integer:
            for j in targets:
                self.ends[sense][int(j)] = np.round(x[self.comp_cols[self.comp[j]]])

    def _bank(self, x) -> None:
        if self.points is not None and x is not None:
            self.points.keep(x)

    def _spanned(self, targets, rows, lo, hi, slack, pending) -> None:
        """Target ends that kept solutions of the system without the figures show kept
        (LP tables): the solutions with a target at an end of its base interval form a
        convex set. Where every row but one is at its true value at each kept solution
        at that end, and that row's least value there is at most its true value and its
        largest at least, a convex combination of two of them meets every row and keeps
        the end: a solution of the extended system at the end, found without an LP."""
        if self.points is None or not self.points.rows:
            return
        P = self.points.matrix()
        R = np.array(rows)
        truth = self.value[self.cells]
        F = P @ R.T - R @ truth                      # solutions x rows: off the truth
        tol = (1e-9 * np.maximum(1.0, np.abs(R) @ np.abs(truth)))[:, None]
        X = P[:, targets]
        for sense, end in (("min", lo), ("max", hi)):
            open_ = np.flatnonzero(pending[sense])
            if len(open_) == 0:
                continue
            with np.errstate(invalid="ignore"):
                at = np.abs(X[:, open_] - end[open_]) <= slack[open_]
            least = np.array([np.where(at, F[:, [i]], np.inf).min(axis=0)
                              for i in range(len(rows))])
            most = np.array([np.where(at, F[:, [i]], -np.inf).max(axis=0)
                             for i in range(len(rows))])
            held = (least >= -tol) & (most <= tol)
            spans = (least <= tol) & (most >= -tol)
            ok = at.any(axis=0) & spans.all(axis=0) & ((~held).sum(axis=0) <= 1)
            pending[sense][open_[ok]] = False

    def _holds(self, targets: np.ndarray, rows: list[np.ndarray]) -> str | None:
        """Every target's interval with the extra rows equals its interval without. The
        base intervals come first, so that every solution of the extended system is a
        witness: a target it shows at an end of its base interval keeps that end (in an
        integer table only an integer solution is a witness).  ``rows``: the extra
        rows' coefficients over the unpublished cells."""
        if not self._base(targets):
            return "time"
        lo, hi = self.base_lo[targets], self.base_hi[targets]
        ends = np.abs(np.where(np.isfinite(lo), lo, 0.0)) + \
            np.abs(np.where(np.isfinite(hi), hi, 0.0))
        slack = self.tol * np.maximum(1.0, ends)
        pending = {"min": np.ones(len(targets), bool), "max": np.ones(len(targets), bool)}

        def witness(x):
            if x is None or (self.integer and np.abs(x - np.round(x)).max() > 1e-6):
                return
            self._bank(x)
            xt = x[targets]
            with np.errstate(invalid="ignore"):
                pending["min"] &= ~(np.abs(xt - lo) <= slack)
                pending["max"] &= ~(np.abs(xt - hi) <= slack)

        def keeps(k: int, sense: str) -> str | None:
            """The target's own solve: None when it keeps its ``sense`` end."""
            val, x = self.ext.bound(int(targets[k]), sense)
            if val == "infeasible":
                return "inconsistent"
            if val is None:
                return "time"
            end = (lo if sense == "min" else hi)[k]
            if not (val == end or abs(val - end) <= slack[k]):
                return "narrows"
            pending[sense][k] = False
            witness(x)
            return None

        self._spanned(targets, rows, lo, hi, slack, pending)
        if self.integer:
            # an LP optimum is rarely an integer witness: each target in turn, whose
            # integer solutions show the others.  First within its component, the
            # figures' parts there held at their true values (a small MIP); then with
            # the largest other components beside it (they may make up a change of
            # the parts); the whole system where neither reaches the end
            if not self._shifted(targets, rows, pending, witness, False):
                return "time"
            if not self._shifted(targets, rows, pending, witness, True):
                return "time"
            if not self._component_rounds(targets, rows, pending, witness):
                return "time"
            for k in range(len(targets)):
                for sense in ("min", "max"):
                    if not pending[sense][k]:
                        continue
                    end = (lo if sense == "min" else hi)[k]
                    for more in sorted({0, min(1, self.joint), self.joint}):
                        val, x = self._local(int(targets[k]), sense, rows, more)
                        if val is None:
                            return "time"
                        if val != "infeasible" and abs(val - end) <= slack[k]:
                            pending[sense][k] = False
                            witness(x)
                            break
                    if pending[sense][k] and (reason := keeps(k, sense)) is not None:
                        return reason
            return None
        return self._holds_batched(targets, pending, witness, keeps)

    def _local(self, j: int, sense: str, rows: list[np.ndarray], more: int = 0,
               objective: np.ndarray | None = None):
        """The integer ``sense`` end of unpublished cell ``j`` within its component and
        the ``more`` largest other components, with the part of each of ``rows``
        (coefficients over the unpublished cells) on those components held at its true
        value and every other component at the true table: ``(value, point)``, the
        point a solution of the whole system (integral); ``("infeasible", None)``;
        ``(None, None)`` out of time.  The value is the cell's end in the whole system
        when ``rows`` is empty (the components are independent), and an end the whole
        system with ``rows`` reaches otherwise.  ``objective``: cells of ``j``'s
        component whose sum is optimized instead (a point for many targets at once)."""
        objective = np.atleast_1d(j if objective is None else objective)
        k = int(self.comp[j])
        comps = [k] + [int(d) for d in self.by_size if d != k][:more]
        cols = np.sort(np.concatenate([self.comp_cols[d] for d in comps]))
        rws = np.concatenate([self.comp_rows[d] for d in comps])
        truth = self.value[self.cells]
        A = self.A_csr[rws][:, cols]
        row_lo, row_hi = self.lp.row_lower[rws], self.lp.row_upper[rws]
        parts = [r[cols] for r in rows if np.any(r[cols])]
        if parts:
            E = np.array(parts)
            fixed = E @ truth[cols]
            band = 1e-9 * np.maximum(1.0, np.abs(E) @ np.abs(truth[cols]))
            A = sp.vstack([A, sp.csr_matrix(E)]).tocsr()
            row_lo = np.concatenate([row_lo, fixed - band])
            row_hi = np.concatenate([row_hi, fixed + band])
        c = np.zeros(len(cols))
        c[np.searchsorted(cols, objective)] = 1.0
        left = None if self.deadline is None else self.deadline - time.monotonic()
        if left is not None and left <= 0:
            return None, None
        lp = LinearProgram(c=c, A=A, row_lower=row_lo, row_upper=row_hi,
                           col_lower=self.lp.col_lower[cols],
                           col_upper=self.lp.col_upper[cols], sense=sense)
        res = solve(lp, time_limit=left)
        # an integral LP optimum is the integer one; an integral vertex at the LP end
        # rounded inward is too (a single cell: no integer point goes past it); the
        # MILP only where neither is found
        if res.status == "optimal" and not _integral(res.x):
            jj = np.searchsorted(cols, objective)
            point = None
            if len(jj) == 1:
                v = res.x[jj[0]]
                end = np.floor(v + 1e-6) if sense == "max" else np.ceil(v - 1e-6)
                point = _integral_vertex(lp, jj[0], end, left)
            res = point if point is not None else solve(
                dataclasses.replace(lp, integrality=np.full(len(cols), True)),
                time_limit=left)
        if res.status == "infeasible":
            return "infeasible", None
        if res.status == "unbounded":
            return (-np.inf if sense == "min" else np.inf), None
        if res.status != "optimal":
            return None, None
        x = truth.copy()
        x[cols] = np.round(res.x)
        return float(x[j]), x

    def _shifted(self, targets, rows, pending, witness, compensate: bool) -> bool:
        """Integer tables: a target's end point without the figures (its component's part,
        :attr:`ends`) is a witness with the figures when another component can move its
        parts of the figures by what the end point moves them the other way (an integral
        solution of that component with its parts so moved, :meth:`_shift`, cached; only
        when ``compensate``, else only end points that keep the parts); the point (both
        components changed, the others at the true table) is checked against the whole
        system before it counts.  False when out of time."""
        R = np.array(rows)
        truth = self.value[self.cells]
        scale = np.maximum(1.0, np.abs(R) @ np.abs(truth))
        for sense in ("min", "max"):
            for k in np.flatnonzero(pending[sense]):
                if not pending[sense][k]:
                    continue
                j = int(targets[k])
                y = self.ends[sense].get(j)
                if y is None:
                    continue
                c = int(self.comp[j])
                cols = self.comp_cols[c]
                delta = R[:, cols] @ truth[cols] - R[:, cols] @ y
                x = truth.copy()
                x[cols] = y
                if np.abs(delta).max() > 1e-9 * scale.max():
                    if not compensate:
                        continue
                    moves = self._compensate(c, R, delta)
                    if moves is False:
                        return False
                    if moves is None:
                        continue
                    for d, z in moves:
                        x[self.comp_cols[d]] = z
                if self._solves(x, R, scale):
                    witness(x)
        return True

    def _compensate(self, c: int, R: np.ndarray, delta: np.ndarray):
        """Other components than ``c`` whose integral solutions together move their parts
        of ``R`` by ``delta``: a list of ``(component, its part)``; None when none is
        found (one component taking all of it, else the largest ones in turn taking what
        their parts' ranges allow); False out of time."""
        found = self._from_cache(c, delta)
        if found is None:
            found = self._moved(c, R, delta)
        if found is not None:
            return found
        left, out = delta.copy(), []
        for d in self.by_size:
            if np.abs(left).max() <= 1e-9:
                return out
            step = self._room(int(d), c, R, left, clip=True)
            if step is None or np.abs(step).max() <= 1e-9:
                continue
            z = self._cached_shift(int(d), R, step)
            if z is False:
                return False
            if z is not None:
                out.append((int(d), z))
                left = left - step
        return out if np.abs(left).max() <= 1e-9 else None

    def _from_cache(self, c: int, delta: np.ndarray):
        """One or two moves found already (of components other than ``c`` and each
        other) that add up to ``delta``: a list of ``(component, part)`` or None."""
        found = [(k[0], np.array(k[1:]), z) for k, z in self.shifts.items()
                 if z is not None and k[0] != c]
        for i, (d, step, z) in enumerate(found):
            if np.abs(step - delta).max() <= 1e-9:
                return [(d, z)]
            for d2, step2, z2 in found[i + 1:]:
                if d2 != d and np.abs(step + step2 - delta).max() <= 1e-9:
                    return [(d, z), (d2, z2)]
        return None

    def _moved(self, c: int, R: np.ndarray, delta: np.ndarray):
        """One other component than ``c`` that moves its parts by all of ``delta``:
        ``[(component, part)]``, None, or False out of time."""
        for d in self.by_size:
            if self._room(int(d), c, R, delta, clip=False) is None:
                continue
            z = self._cached_shift(int(d), R, delta)
            if z is False:
                return False
            if z is not None:
                return [(int(d), z)]
        return None

    def _room(self, d: int, c: int, R: np.ndarray, delta: np.ndarray, clip: bool):
        """The move of component ``d``'s parts toward ``delta`` that their LP ranges
        (``spans``, which hold every integral move) allow: all of it or None, or with
        ``clip`` as much of each row as the range holds (whole units)."""
        cols = self.comp_cols[d]
        if d == c or not np.any(R[:, cols]):
            return None
        now = R[:, cols] @ self.value[self.cells][cols]
        lo = np.array([s_lo[d] for s_lo, _ in self.spans]) - now
        hi = np.array([s_hi[d] for _, s_hi in self.spans]) - now
        tol = 1e-9 * np.maximum(1.0, np.abs(now))
        if not clip:
            ok = np.all(delta >= lo - tol) and np.all(delta <= hi + tol)
            return delta if ok else None
        return np.clip(delta, np.ceil(lo - tol), np.floor(hi + tol))

    def _cached_shift(self, d: int, R: np.ndarray, delta: np.ndarray):
        key = (d,) + tuple(np.round(delta, 9))
        if key not in self.shifts:
            z = self._shift(d, R, delta)
            if z is False:
                return False
            self.shifts[key] = z
        return self.shifts[key]

    def _shift(self, d: int, R: np.ndarray, delta: np.ndarray):
        """An integral solution of component ``d`` with its parts of ``R`` at their true
        values plus ``delta``; None when there is none, False out of time."""
        cols, rws = self.comp_cols[d], self.comp_rows[d]
        truth = self.value[self.cells][cols]
        E = R[:, cols]
        want = E @ truth + delta
        band = 1e-9 * np.maximum(1.0, np.abs(E) @ np.abs(truth))
        lp = LinearProgram(c=np.zeros(len(cols)),
                           A=sp.vstack([self.A_csr[rws][:, cols], sp.csr_matrix(E)]).tocsr(),
                           row_lower=np.concatenate([self.lp.row_lower[rws], want - band]),
                           row_upper=np.concatenate([self.lp.row_upper[rws], want + band]),
                           col_lower=self.lp.col_lower[cols],
                           col_upper=self.lp.col_upper[cols])
        left = None if self.deadline is None else self.deadline - time.monotonic()
        if left is not None and left <= 0:
            return False
        res = solve(lp, time_limit=left)
        # an integral vertex of the LP is an answer; the MILP only where none is found
        if res.status == "optimal" and not _integral(res.x):
            point = _integral_vertex(lp, None, None, left)
            res = point if point is not None else solve(
                dataclasses.replace(lp, integrality=np.full(len(cols), True)),
                time_limit=left)
        if res.status == "infeasible":
            return None
        if res.status != "optimal":
            return False
        return np.round(res.x)

    def _solves(self, x: np.ndarray, R: np.ndarray, scale: np.ndarray) -> bool:
        """``x`` is an integral solution of the whole system with the figures' rows ``R``
        at their true values."""
        truth = self.value[self.cells]
        Ax = self.A_csr @ x
        tol = 1e-9 * np.maximum(1.0, np.abs(self.lp.row_lower) + np.abs(self.lp.row_upper))
        tol = np.where(np.isfinite(tol), tol, 1e-9)
        return bool(np.all(np.abs(x - np.round(x)) <= 1e-9)
                    and np.all(Ax >= self.lp.row_lower - tol)
                    and np.all(Ax <= self.lp.row_upper + tol)
                    and np.all(x >= self.lp.col_lower) and np.all(x <= self.lp.col_upper)
                    and np.all(np.abs(R @ x - R @ truth) <= 1e-9 * scale))

    def _component_rounds(self, targets, rows, pending, witness) -> bool:
        """One solve per component and sense over the sum of its pending targets, the
        figures' parts held at their true values: a point that shows several targets at
        their ends at once (integer tables).  False when out of time."""
        comp = self.comp[targets]
        for sense in ("min", "max"):
            for k in np.unique(comp[pending[sense]]):
                open_ = np.flatnonzero(pending[sense] & (comp == k))
                if len(open_) < 2:
                    continue
                val, x = self._local(int(targets[open_[0]]), sense, rows,
                                     objective=targets[open_])
                if val is None:
                    return False
                if x is not None:
                    witness(x)
        return True

    def _holds_batched(self, targets, pending, witness, keeps) -> str | None:
        """Each round optimizes one pending target of every component at once: the
        extended system is a subset of the base one, so when the targets keep their ends
        one optimum shows them all there; a target it does not show gets its own solve."""
        comp = self.comp[targets]
        for sense in ("min", "max"):
            pace = _Pace(self.deadline, int(pending[sense].sum()))
            while pending[sense].any():
                open_ = np.flatnonzero(pending[sense])
                if pace.hopeless(len(open_)):
                    return "time"
                _, first = np.unique(comp[open_], return_index=True)
                picks = open_[first]
                status, x = self.ext.optimum(targets[picks], np.ones(len(picks)), sense)
                if status == "infeasible":
                    return "inconsistent"
                if status == "optimal":
                    witness(x)
                elif status != "unbounded":
                    return "time"
                for k in picks:
                    if pending[sense][k] and (reason := keeps(k, sense)) is not None:
                        return reason
        return None


def _integral(x: np.ndarray) -> bool:
    return bool(np.abs(x - np.round(x)).max() <= 1e-6) if len(x) else True


def _integral_vertex(lp: LinearProgram, j, end, time_limit):
    """An optimal result of ``lp`` whose point is integral, with column ``j`` fixed at
    ``end`` when given, found by LP vertices of a few objectives (none, the columns' sum
    down and up); None when none of them is integral."""
    lo, hi = lp.col_lower.copy(), lp.col_upper.copy()
    if j is not None:
        if not lo[j] <= end <= hi[j]:
            return None
        lo[j] = hi[j] = end
    k = lp.n_cols
    for c in (np.zeros(k), np.ones(k), -np.ones(k)):
        res = solve(dataclasses.replace(lp, c=c, col_lower=lo, col_upper=hi, sense="min"),
                    time_limit=time_limit)
        if res.status != "optimal":
            return None
        if _integral(res.x):
            return res
    return None


class _Pace:
    """Whether the ends still open can be found before the deadline at the recent pace:
    a check that cannot finish in time is given up early (its figure is withheld, as it
    would be at the deadline) instead of spending the rest of the time.  The pace is
    taken over the last ``window`` share of the time left at the start (the first
    solves show many ends at once, the later ones one each)."""

    def __init__(self, deadline, open_ends: int, window: float = 0.1):
        now = time.monotonic()
        self.deadline = deadline
        self.span = None if deadline is None else window * max(0.0, deadline - now)
        self.seen: list[tuple[float, int]] = [(now, open_ends)]
        self.first = 0          # the first entry of ``seen`` inside the window

    def hopeless(self, open_ends: int) -> bool:
        if self.deadline is None:
            return False
        now = time.monotonic()
        self.seen.append((now, open_ends))
        if now - self.seen[0][0] < self.span:
            return False
        while self.seen[self.first][0] < now - self.span:
            self.first += 1
        then, before = self.seen[self.first]
        if now - then < 0.5 * self.span:
            then, before = self.seen[-2]
        done = before - open_ends
        return done <= 0 or now + (now - then) / done * open_ends > self.deadline


class _Points:
    """Solutions of the system without the figures (a solution of the extended system
    is one too), kept while they take at most ``max_floats`` numbers in all."""

    def __init__(self, k: int, max_floats: int = 4_000_000):
        self.room = max_floats // max(1, k)
        self.rows: list[np.ndarray] = []

    def keep(self, x: np.ndarray) -> None:
        if len(self.rows) < self.room:
            self.rows.append(np.array(x, dtype=float))

    def matrix(self) -> np.ndarray:
        return np.array(self.rows)


class _Bounds:
    """Min and max of single cells over one system (warm LPs, MIPs for fractional ends)."""

    def __init__(self, lp: LinearProgram, integer: bool, deadline):
        self.integer, self.deadline = integer, deadline
        self.A = lp.A.tocsr()
        self.row_lower, self.row_upper = lp.row_lower.copy(), lp.row_upper.copy()
        self.col_lower, self.col_upper = lp.col_lower, lp.col_upper
        self.model = HighsModel(lp)

    def add_row(self, row: sp.csr_matrix, lower: float, upper: float) -> int:
        self.model.add_rows(row, [lower], [upper])
        self.A = sp.vstack([self.A, row]).tocsr()
        self.row_lower = np.append(self.row_lower, lower)
        self.row_upper = np.append(self.row_upper, upper)
        return self.A.shape[0] - 1

    def delete_row(self, i: int) -> None:
        self.model.delete_rows([i])
        keep = np.arange(self.A.shape[0]) != i
        self.A, self.row_lower, self.row_upper = \
            self.A[keep], self.row_lower[keep], self.row_upper[keep]

    def _remaining(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    def optimum(self, idx, vals, sense: str):
        """``(status, point)`` of the LP with objective ``sum vals * x[idx]``."""
        left = self._remaining()
        if left is not None and left <= 0:
            return "time", None
        self.model.set_objective(indices=idx, values=vals, sense=sense)
        res = self.model.solve()
        return res.status, res.x

    def bound(self, j: int, sense: str):
        """``(value, point)``; ``("infeasible", None)``; ``(None, None)`` out of time."""
        status, x = self.optimum([j], [1.0], sense)
        if status == "infeasible":
            return "infeasible", None
        if status == "unbounded":
            return (-np.inf if sense == "min" else np.inf), None
        if status != "optimal":
            return None, None
        if self.integer and np.abs(x - np.round(x)).max() > 1e-6:
            return self._integer(j, sense)
        return float(x[j]), x

    def _integer(self, j: int, sense: str):
        k = self.A.shape[1]
        c = np.zeros(k)
        c[j] = 1.0
        lp = LinearProgram(c=c, A=self.A, row_lower=self.row_lower, row_upper=self.row_upper,
                           col_lower=self.col_lower, col_upper=self.col_upper,
                           integrality=np.full(k, True), sense=sense)
        res = solve(lp, time_limit=self._remaining())
        if res.status == "infeasible":
            return "infeasible", None
        if res.status != "optimal":
            return None, None
        return float(res.x[j]), res.x
