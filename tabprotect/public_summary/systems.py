"""The solves behind the public summary's checks: bounds of single cells over one system
(warm LPs, MILPs for fractional ends of integer tables), integral LP vertices, the solutions
kept for later proofs, and the pace that gives a hopeless check up early."""
from __future__ import annotations

import dataclasses
import time

import numpy as np
import scipy.sparse as sp

from solvers import HighsModel, LinearProgram, solve

__all__ = ["integral", "integral_vertex", "integral_point_at", "lagrange_bound",
           "independent_cells", "VertexOdds", "Pace", "Forecast", "SearchClock", "Points",
           "Bounds", "spans", "magnitude"]


def integral(x: np.ndarray) -> bool:
    return bool(np.abs(x - np.round(x)).max() <= 1e-6) if len(x) else True


def integral_point_at(lp: LinearProgram, j: int, v: float, sense: str, time_limit):
    """An integral solution of ``lp`` with column ``j`` at its LP end ``v`` rounded
    inward (a MILP without objective), or None where there is none (or none in time)."""
    end = np.floor(v + 1e-6) if sense == "max" else np.ceil(v - 1e-6)
    lo, hi = lp.col_lower.copy(), lp.col_upper.copy()
    if not lo[j] <= end <= hi[j]:
        return None
    lo[j] = hi[j] = end
    res = solve(dataclasses.replace(lp, c=np.zeros(lp.n_cols), col_lower=lo, col_upper=hi,
                                    sense="min", integrality=np.full(lp.n_cols, True)),
                time_limit=time_limit)
    return res if res.status == "optimal" else None


def lagrange_bound(A_T: sp.csr_matrix, row_lower: np.ndarray, row_upper: np.ndarray,
                   lo: np.ndarray, hi: np.ndarray, j: int, sense: str,
                   y: np.ndarray) -> float:
    """A bound on the ``sense`` end of column ``j`` over ``row_lower <= A x <= row_upper``
    and the box ``lo <= x <= hi`` from multipliers ``y`` of the rows (either sign: the
    better one): ``x_j - y (A x - s)`` over the box, ``s`` within the rows' ranges (``A_T``
    is ``A`` transposed). Valid for any ``y``; exact at the optimal duals."""
    best = -np.inf if sense == "min" else np.inf
    for yy in (y, -y):
        d = -(A_T @ yy)
        d[j] += 1.0
        if sense == "max":
            d, yy = -d, -yy          # max x_j = -min(-x_j)
        with np.errstate(invalid="ignore"):
            cols = np.where(d > 0, d * lo, np.where(d < 0, d * hi, 0.0)).sum()
            rows = np.where(yy > 0, yy * row_lower,
                            np.where(yy < 0, yy * row_upper, 0.0)).sum()
        low = cols + rows
        if np.isnan(low):
            continue
        best = max(best, low) if sense == "min" else min(best, -low)
    return float(best)


def independent_cells(A_csc: sp.csc_matrix, cells: np.ndarray) -> np.ndarray:
    """Positions in ``cells`` (columns of ``A_csc``) of a greedy choice sharing no row."""
    used = np.zeros(A_csc.shape[0], bool)
    keep = []
    for i, j in enumerate(cells):
        r = A_csc.indices[A_csc.indptr[j]:A_csc.indptr[j + 1]]
        if not used[r].any():
            used[r] = True
            keep.append(i)
    return np.array(keep, dtype=np.int64)


def integral_vertex(lp: LinearProgram, j, end, time_limit):
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
        if integral(res.x):
            return res
    return None


class VertexOdds:
    """Whether an optional look that may fail still pays within one checker: after
    ``first`` looks, only while at least ``share`` of them found what they looked for.
    Either way the answers are the same; only the time differs.

    Looks for an integral LP vertex (:func:`integral_vertex`, up to three LPs) before a
    MILP: the same end either way (an integral vertex at the LP end rounded inward is the
    integer end); on some 3-D count tables most looks fail, and each failed look costs
    about half a MILP on top of it.  Looks for an end point leaning toward the figures'
    true parts (``shifted.leaning``): where a figure narrows an interval, most end
    points cannot be made up whatever the search, and the later steps decide them."""

    def __init__(self, first: int = 10, share: float = 1 / 3):
        self.first, self.share = first, share
        self.looks = 0
        self.found = 0

    def worth(self) -> bool:
        return self.looks < self.first or self.found >= self.share * self.looks

    def record(self, found: bool) -> None:
        self.looks += 1
        self.found += int(found)


class Pace:
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


@dataclasses.dataclass(frozen=True)
class Forecast:
    """How an integer table's check foresees, from the cost of its first searches of the
    primaries' integer ends, that it cannot finish before the deadline (its figure is
    then withheld for time at once, as it would be at the deadline).  The foreseen
    seconds are the mean search's seconds times ``base_share`` searches per end still
    open without the figures and ``witness_share`` per end of the check with them: both
    shares lie below what the checks of the everyday 3-D count tables spend, so a check
    foreseen late is later still."""

    #: searches timed before any forecast: the first few are the dearest of a component
    searches: int = 10
    #: searches per open end without the figures (LP rounds and witnesses find the rest)
    base_share: float = 0.25
    #: searches' worth of work per end to make its end point a witness with the figures
    witness_share: float = 0.1

    def late(self, clock: "SearchClock", deadline, open_ends: int, ends: int) -> bool:
        """Whether ``open_ends`` ends without the figures and then ``ends`` witnesses
        with them cannot be done by ``deadline`` at ``clock``'s mean search."""
        if deadline is None or clock.count < self.searches:
            return False
        need = clock.seconds / clock.count * (self.base_share * open_ends
                                              + self.witness_share * ends)
        return time.monotonic() + need > deadline


class SearchClock:
    """The number of searches of the primaries' integer ends and their wall seconds."""

    def __init__(self):
        self.count, self.seconds = 0, 0.0

    def add(self, seconds: float) -> None:
        self.count += 1
        self.seconds += seconds


class Points:
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


class Bounds:
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

    def basis(self):
        """The model's current simplex basis (for :meth:`restore`)."""
        return self.model.highs.getBasis()

    def restore(self, basis) -> None:
        """Start the next solve from ``basis`` (one of :meth:`basis`, same rows)."""
        self.model.highs.setBasis(basis)

    def _remaining(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    def optimum(self, idx, vals, sense: str, duals: bool = False):
        """``(status, point)`` of the LP with objective ``sum vals * x[idx]``; with
        ``duals``, ``(status, point, row duals)`` (None where the solver gives none)."""
        left = self._remaining()
        if left is not None and left <= 0:
            return ("time", None, None) if duals else ("time", None)
        self.model.set_objective(indices=idx, values=vals, sense=sense)
        res = self.model.solve(duals=duals)
        return (res.status, res.x, res.duals) if duals else (res.status, res.x)

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


def spans(rows: list[np.ndarray], w: np.ndarray) -> bool:
    """``w`` is a linear combination of ``rows`` (up to rounding)."""
    if not rows:
        return False
    R = np.array(rows).T
    a = np.linalg.lstsq(R, w, rcond=None)[0]
    return bool(np.abs(R @ a - w).max() <= 1e-9 * np.abs(w).max())


def magnitude(ends: np.ndarray) -> np.ndarray:
    """``|ends|`` with unknown and infinite ends as 0 (the scale of a tolerance)."""
    return np.abs(np.where(np.isfinite(ends), ends, 0.0))
