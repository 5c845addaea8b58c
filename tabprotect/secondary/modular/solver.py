"""The sub-table solve: the optimal method on a small flat sub-table after checking that
it can be protected, the certified heuristic on a large one; and the test which of a
sub-table's primaries its suppressed cells leave unprotected."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

import numpy as np

from tabprotect.errors import InfeasibleRulesError
from tabprotect.model.table import Table
from tabprotect.secondary.candidates import candidate_cells
from tabprotect.secondary.modular.certified import Unreachable, certified_pattern
from tabprotect.secondary.modular.network import Network
from tabprotect.secondary.modular.network_cuts import SearchLimits
from tabprotect.secondary.modular.network_check import network_unprotected
from tabprotect.secondary.modular.network_search import network_pattern
from tabprotect.secondary.modular.subtable_cubes import cube_pattern, cube_protected
from tabprotect.secondary.attack_requirements import Requirements
from tabprotect.secondary.attacker_oracle import AttackerOracle
from tabprotect.secondary.repair import GreedyRepair

#: a sub-table solver: (flat sub-table, cost, time limit) -> its new status array
SubtableSolver = Callable[[Table, np.ndarray, "float | None"], np.ndarray]


def uses_heuristic(n_primaries: int, n_cells: int, heuristic_size: int | None,
                   min_primaries: int = 20) -> bool:
    """Whether a sub-table gets :func:`certified_pattern` instead of the optimal method:
    from ``heuristic_size`` primaries x cells and ``min_primaries`` primaries
    (``heuristic_size=0``: every sub-table; None: none).

    >>> uses_heuristic(150, 1050, 20_000), uses_heuristic(7, 10201, 20_000)
    (True, False)
    """
    if heuristic_size is None:
        return False
    return (n_primaries * n_cells >= heuristic_size
            and n_primaries >= min(min_primaries, heuristic_size))


@dataclass(frozen=True)
class OptimalSubtableSolver:
    """The default sub-table solver (picklable: it runs in worker processes).

    Attributes
    ----------
    singleton, mip_gap : passed to the optimal method
    seed : start the optimal method from a cube pattern (:func:`cube_pattern`) that
        protects every primary, so that a solve stopped by its time limit always has a
        pattern of its own
    heuristic_size, min_primaries : from this many primaries x cells (and primaries)
        the sub-table gets :func:`certified_pattern` and no MILP (:func:`uses_heuristic`)
    network : a sub-table whose relations form a network (1-D, 2-D) gets its exact
        pattern from the cut search (:func:`network_pattern`) instead of the MILP
    milp : a sub-table that is no network (3-D and more) gets the optimal method,
        started from the certified pattern and never costlier than it; off: the
        certified pattern alone (:func:`certified_pattern`, no MILP)
    kernel : the network search compiled (``ModularOptions.kernel``: ``auto``,
        ``compiled`` or ``python``)
    search : the network search's limits (None: the defaults, compiled and loaded as
        ``kernel`` says)
    """

    singleton: bool = True
    mip_gap: float | None = None
    seed: bool = False
    heuristic_size: int | None = 20_000
    min_primaries: int = 20
    network: bool = True
    milp: bool = True
    kernel: str = "auto"
    search: SearchLimits | None = None

    def __call__(self, sub: Table, cost: np.ndarray, time_limit: float | None, *,
                 short: np.ndarray | None = None, deadline: float | None = None,
                 fast: bool = False, net: Network | None = None) -> np.ndarray:
        """The new status of ``sub``.

        ``short``: the primaries the current pattern leaves unprotected, when known;
        only they need the feasibility check (more suppression never unprotects a
        primary).  ``deadline``: ``time.perf_counter()`` value of the method's budget
        (the user's ``time_limit``), the only clock the network search and the heuristic
        read: their own limits count work (nodes, LPs), so the pattern does not depend on
        the machine's load; ``time_limit`` bounds the optimal method's MILP alone.
        ``fast``: the certified heuristic's first pass on any sub-table (no MILP, no
        reverse pass).  ``net``: the sub-table's network when the caller has it
        (:meth:`Network.of` of its relations).

        Raises :class:`~tabprotect.errors.InfeasibleRulesError` when the sub-table's
        primaries cannot be protected with its ``P`` cells published.
        """
        req = Requirements.from_table(sub, singleton=self.singleton)
        todo = req.primary if short is None else np.asarray(short, dtype=np.int64)
        size = 0 if fast else self.heuristic_size
        if uses_heuristic(len(req.primary), sub.n_cells, size, self.min_primaries):
            return self._heuristic(sub, req, cost, todo, deadline,
                                   prune=not fast)
        if self.network:
            z = network_pattern(sub, req, cost, candidate_cells(sub),
                                limits=self._search_limits(), deadline=deadline, net=net)
            if z is not None:   # exact, without a MILP (a network sub-table)
                status = sub.status.copy()
                status[z & ~np.isin(status, ("U", "M"))] = "M"
                return status
        if not self.milp:
            return self._heuristic(sub, req, cost, todo, deadline, prune=True)
        movable = np.isin(sub.status, ("S", "U", "M")) & (sub.ub > sub.lb)
        # a movable cube proves a primary protectable without any LP
        todo = todo[~cube_protected(sub, req, movable, todo)]
        if len(todo):
            chk = AttackerOracle(sub, req).check(movable, cuts=False, primaries=todo,
                                                 first_only=True)
            if not chk.ok:
                raise InfeasibleRulesError("sub-table cannot be protected with its margins")
        # the MILP (imported here: network sub-tables, 1-D and 2-D, never need it)
        from tabprotect.secondary.optimal import optimal
        start = self._start(sub, req, cost, deadline)
        out = np.asarray(optimal(sub, cost, time_limit=time_limit, singleton=self.singleton,
                                 mip_gap=self.mip_gap, start=start).status)
        return _cheaper(sub, cost, out, start)

    def _search_limits(self) -> SearchLimits:
        """The network search's limits: ``search``, else the defaults with the kernel
        as ``kernel`` says."""
        if self.search is not None:
            return self.search
        return SearchLimits(compiled=self.kernel != "python",
                            load_first=self.kernel == "compiled")

    def _start(self, sub: Table, req: Requirements, cost: np.ndarray,
               deadline: float | None) -> np.ndarray | None:
        """The optimal method's first incumbent: the certified pattern (outside
        attacker only: its moves prove nothing about single contributors), else with
        ``seed`` a cube pattern, else None."""
        if not req.singleton.any():
            try:
                return certified_pattern(sub, req, cost, deadline=deadline)[0]
            except (Unreachable, TimeoutError):
                pass
        return cube_pattern(sub, req, cost) if self.seed else None

    def _heuristic(self, sub: Table, req: Requirements, cost: np.ndarray,
                   todo: np.ndarray, deadline: float | None,
                   prune: bool) -> np.ndarray:
        """:func:`certified_pattern` for the conditions of the ``todo`` primaries, then
        (single-contributor attackers) the greedy repair of what they still need."""
        hidden = np.isin(sub.status, ("U", "M"))
        only = np.isin(req.primary, todo)
        if not only.all():  # conditions of the short primaries only
            req = _restricted(req, only)
        try:
            z, _ = certified_pattern(sub, req, cost, hidden=hidden, deadline=deadline,
                                     prune=prune, prune_by=deadline)
        except Unreachable as exc:
            raise InfeasibleRulesError(f"sub-table cannot be protected: {exc}") from None
        if self.singleton and req.singleton.any():
            # the certificates are outsider moves: the greedy repair adds what the
            # single-contributor attackers still need (checked by attacker LPs)
            full = Requirements.from_table(sub, singleton=True)
            z, _ = GreedyRepair(sub, full, cost, candidate_cells(sub)).run(
                z, deadline=deadline)
        status = sub.status.copy()
        status[z & ~hidden] = "M"
        return status


def optimal_subtable_solver(singleton: bool = True, mip_gap: float | None = None,
                            seed: bool = False, heuristic_size: int | None = 20_000,
                            min_primaries: int = 20, milp: bool = True,
                            kernel: str = "auto") -> OptimalSubtableSolver:
    """The default sub-table solver: :func:`tabprotect.secondary.optimal.optimal`
    (``seed``: started from :func:`cube_pattern` when there is one); from
    ``heuristic_size`` primaries x cells :func:`certified_pattern` instead."""
    return OptimalSubtableSolver(singleton=singleton, mip_gap=mip_gap, seed=seed,
                                 heuristic_size=heuristic_size, min_primaries=min_primaries,
                                 milp=milp, kernel=kernel)


def _cheaper(sub: Table, cost: np.ndarray, status: np.ndarray,
             start: np.ndarray | None) -> np.ndarray:
    """``status``, or the ``start`` pattern where its new suppressions cost less (the
    optimal method's own incumbent may replace the start when its time runs out)."""
    if start is None:
        return status
    hidden = np.isin(sub.status, ("U", "M"))
    cost = np.asarray(cost, dtype=float)
    if cost[start & ~hidden].sum() < cost[(status == "M") & ~hidden].sum():
        status = sub.status.copy()
        status[start & ~hidden] = "M"
    return status


def _restricted(req: Requirements, keep: np.ndarray) -> Requirements:
    """``req`` with only the primaries where ``keep`` (a mask over ``req.primary``)."""
    return dataclasses.replace(req, primary=req.primary[keep], need_up=req.need_up[keep],
                               need_down=req.need_down[keep],
                               need_width=req.need_width[keep], tol=req.tol[keep])


def unprotected(sub: Table, singleton: bool, deadline: float | None = None
                ) -> np.ndarray | None:
    """The sub-table's primaries its suppressed cells leave unprotected (empty: no MILP
    needed).  On a network sub-table maximum flows decide; else cubes prove most
    protected primaries and attacker LPs judge the rest.  None
    when ``deadline`` (a ``time.perf_counter()`` value) stopped the LPs."""
    req = Requirements.from_table(sub, singleton=singleton)
    hidden = np.isin(sub.status, ("U", "M"))
    short = network_unprotected(sub, req, hidden)
    if short is not None:   # a network sub-table: maximum flows decide
        return short
    todo = req.primary[~cube_protected(sub, req, hidden, req.primary)]
    if len(todo) == 0:
        return todo
    chk = AttackerOracle(sub, req).check(hidden, cuts=False, primaries=todo,
                                         deadline=deadline)
    if not chk.complete:
        return None
    return np.unique(np.asarray([s for s, _, _ in chk.violated], dtype=np.int64))
