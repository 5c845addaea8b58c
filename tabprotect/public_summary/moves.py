"""Integral moves of whole components for the public summary's checks on integer tables.

An integral end point of one component (its part of a solution without the figures) moves
the released figures' parts; it stays a witness with the figures when other components
move their parts back by as much. A move is an integral solution of one component with its
parts of the figures shifted by a given amount; moves are found per component and shift
and reused for the figure under check. The components' integral end points without the
figures (kept by the checker's interval step) are moves already: each shifts its
component's parts by what it does, so they are looked up before any solve."""
from __future__ import annotations

import dataclasses
import time

import numpy as np
import scipy.sparse as sp

from solvers import LinearProgram, solve
from tabprotect.public_summary.systems import integral, integral_vertex

__all__ = ["ComponentMoves"]


class ComponentMoves:
    """The moves of the components of ``system`` (a :class:`~.checker.Checker`) for one
    figure under check: ``spans`` holds, per figure in play, each component's (min, max)
    of its part, which bound every integral move."""

    def __init__(self, system, spans: list[tuple[np.ndarray, np.ndarray]]):
        self.system = system
        self.spans = spans
        # (component, shift of the parts of the figures in play) -> that component's
        # integral solution with its parts moved so, or None where none exists
        self.shifts: dict[tuple, np.ndarray | None] = {}
        self._seeded = False

    def _seed(self, R: np.ndarray) -> None:
        """The end points the checker kept, as the moves they are (their shifts of the
        parts of ``R``; the ones that shift nothing move nothing and are left out)."""
        self._seeded = True
        system = self.system
        truth = system.value[system.cells]
        for ends in system.ends.values():
            for j, y in ends.items():
                d = int(system.comp[j])
                cols = system.comp_cols[d]
                step = R[:, cols] @ y - R[:, cols] @ truth[cols]
                if np.abs(step).max() > 1e-9:
                    self.shifts.setdefault((d,) + tuple(np.round(step, 9)), y)

    def compensate(self, c: int, R: np.ndarray, delta: np.ndarray):
        """Other components than ``c`` whose integral solutions together move their parts
        of ``R`` by ``delta``: a list of ``(component, its part)``; None when none is
        found (one component taking all of it, else the largest ones in turn taking what
        their parts' ranges allow); False out of time."""
        if not self._seeded:
            self._seed(R)
        found = self._from_cache(c, delta)
        if found is None:
            found = self._moved(c, R, delta)
        if found is not None:
            return found
        left, out = delta.copy(), []
        for d in self.system.by_size:
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
        found = [(k, z) for k, z in self.shifts.items() if z is not None and k[0] != c]
        if not found:
            return None
        steps = np.array([k[1:] for k, _ in found])
        comps = np.array([k[0] for k, _ in found])
        one = np.flatnonzero(np.abs(steps - delta).max(axis=1) <= 1e-9)
        if len(one):
            return [(int(comps[one[0]]), found[one[0]][1])]
        # two moves: the rest of delta after the first, looked up by its rounded shift
        by_step: dict[tuple, list[int]] = {}
        for i, k in enumerate(found):
            by_step.setdefault(k[0][1:], []).append(i)
        rests = np.round(delta - steps, 9)
        for i in range(len(found)):
            for i2 in by_step.get(tuple(rests[i]), ()):
                if comps[i2] != comps[i]:
                    return [(int(comps[i]), found[i][1]), (int(comps[i2]), found[i2][1])]
        return None

    def _moved(self, c: int, R: np.ndarray, delta: np.ndarray):
        """One other component than ``c`` that moves its parts by all of ``delta``:
        ``[(component, part)]``, None, or False out of time."""
        for d in self.system.by_size:
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
        cols = self.system.comp_cols[d]
        if d == c or not np.any(R[:, cols]):
            return None
        now = R[:, cols] @ self.system.value[self.system.cells][cols]
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
        system = self.system
        cols, rws = system.comp_cols[d], system.comp_rows[d]
        truth = system.value[system.cells][cols]
        E = R[:, cols]
        want = E @ truth + delta
        own = LinearProgram(c=np.zeros(len(cols)), A=system.A_csr[rws][:, cols],
                            row_lower=system.lp.row_lower[rws],
                            row_upper=system.lp.row_upper[rws],
                            col_lower=system.lp.col_lower[cols],
                            col_upper=system.lp.col_upper[cols])
        left = None if system.deadline is None else system.deadline - time.monotonic()
        if left is not None and left <= 0:
            return False
        if np.array_equal(E, np.round(E)) and np.array_equal(want, np.round(want)):
            # integral parts: the component's warm model, the parts its extra variables
            return system.warm.shift(("shift", d, E.tobytes()), own, truth, E, want)
        band = 1e-9 * np.maximum(1.0, np.abs(E) @ np.abs(truth))
        lp = dataclasses.replace(own, A=sp.vstack([own.A, sp.csr_matrix(E)]).tocsr(),
                                 row_lower=np.concatenate([own.row_lower, want - band]),
                                 row_upper=np.concatenate([own.row_upper, want + band]))
        res = solve(lp, time_limit=left)
        # an integral vertex of the LP is an answer; the MILP only where none is found
        if res.status == "optimal" and not integral(res.x):
            point = None
            if self.system.odds.worth():
                point = integral_vertex(lp, None, None, left)
                self.system.odds.record(point is not None)
            res = point if point is not None else solve(
                dataclasses.replace(lp, integrality=np.full(len(cols), True)),
                time_limit=left)
        if res.status == "infeasible":
            return None
        if res.status != "optimal":
            return False
        return np.round(res.x)
