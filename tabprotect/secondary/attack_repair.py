"""The large path's repair round against single-contributor attackers, and its
feasibility check.

The large path's deviation LPs and leaf cubes answer the outside intruder: a primary
the audit proves short against a single contributor ``j`` (who knows ``x_j``) gets
nothing from them when the outside intruder is already answered.  This round serves
such primaries with the attacker's own problem:

1. the attacker LPs of the primary's component on the current pattern
   (:class:`~tabprotect.secondary.attacker_oracle.AttackerOracle`) name the conditions
   ``(primary, direction, attacker)`` that fall short;
2. each such condition gets the cheapest deviation of the primary's neighbourhood that
   keeps ``y_j = 0`` (suppressed cells move for free, a published candidate costs its
   suppression cost per share of the level it carries); the cells it moves are
   suppressed and the deviation goes to the next audit as a witness;
   a primary whose attacker LPs are all met (short for an integer audit only) gets,
   when no deviation serves a neighbour or it is short again after a round, integral
   witnesses from the MILP repair (:mod:`~tabprotect.secondary.milp_repair`),
   which keeps each attacker's cell still;
3. a condition that no deviation in any neighbourhood meets is decided on the whole
   table: the intruder's LP with every cell that may be suppressed suppressed and
   ``y_j = 0`` (:func:`unprotectable`).  A maximum below the level proves that no
   pattern protects the primary against ``j`` (an integer intruder gets no further than
   the LP), and protect() refuses the table naming the cell.

Only the conditions found short are solved, each over the table's movable cells, so the
check costs a few LPs where the small path's check audits the whole all-suppressed
table against every attacker.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from solvers import LinearProgram, solve
from tabprotect.audit.least_moves import split_bounds
from tabprotect.secondary.attack_requirements import Requirements
from tabprotect.secondary.attacker_oracle import AttackerOracle
from tabprotect.secondary.milp_repair import MilpRepair, MilpRepairSettings


@dataclass(frozen=True)
class AttackRepairSettings:
    """How the attacker round spends its time (none of these changes what is safe:
    every cell it adds comes with a witness the next audit checks)."""

    #: share of what the repair may spend that the round's deviation LPs take (the
    #: rest: the next audit and the final audit's reserve)
    share: float = 0.5
    #: the round takes at most this many attack-short primaries (the others wait for
    #: the next round; each costs its attacker LPs and deviation LPs)
    max_primaries: int = 200
    #: the neighbourhoods tried per condition (relation steps around the primary, see
    #: :func:`~tabprotect.secondary.deviation.neighbourhood`); a condition none of them
    #: serves goes to the whole-table LP (:func:`unprotectable`)
    radii: tuple[int, ...] = (2, 5)
    #: regions larger than this many cells are not tried
    max_region_cells: int = 20_000
    #: the integral witness MILPs of the primaries short for an integer audit only
    #: (few, each given time: a MILP stopped early keeps a poor incumbent, a move over
    #: hundreds of cells where a few serve)
    milp: MilpRepairSettings = field(default_factory=lambda: MilpRepairSettings(
        enabled=True, seconds_per_primary=15.0))

    def __post_init__(self):
        if not 0.0 <= self.share <= 1.0:
            raise ValueError("AttackRepairSettings.share must lie between 0 and 1")


@dataclass
class AttackRepairOutcome:
    """What one attacker round did."""

    #: cells it suppressed
    added: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    #: the deviations it found, (cells, deviation) pairs in table coordinates
    moves: list = field(default_factory=list)
    #: conditions ``(primary, kind, attacker)`` the current pattern leaves short
    violated: list = field(default_factory=list)
    #: primaries a condition of which no neighbourhood served (decided by
    #: :func:`unprotectable`)
    unresolved: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))


def attack_round(table, cost: np.ndarray, cand: np.ndarray, req: Requirements,
                 primaries: np.ndarray, *, deadline: float | None,
                 settings: AttackRepairSettings, integer: bool = False,
                 tried: np.ndarray | None = None) -> AttackRepairOutcome:
    """Serve the attack-short ``primaries`` of ``table`` (its status the current
    pattern): the attacker LPs name the short conditions, and each gets the cheapest
    deviation that keeps the attacker's cell still, on the primary's neighbourhood
    (see the module docstring); its cells are suppressed, its deviation is a witness
    for the next audit.  ``integer`` (an integer audit): a primary whose attacker LPs
    are all met is short for integers only, and gets integral witnesses against the
    attackers from the MILP repair (:mod:`~tabprotect.secondary.milp_repair`) when the
    round adds no deviation or an earlier round took it (``tried``): the deviations
    added for its neighbours mostly serve it too."""
    out = AttackRepairOutcome()
    suppressed = np.isin(table.status, ("U", "M"))
    primaries = np.asarray(primaries, np.int64)[:settings.max_primaries]
    tried = np.zeros(0, np.int64) if tried is None else np.asarray(tried, np.int64)
    if len(primaries) == 0:
        return out
    check = AttackerOracle(table, req).check(suppressed, cuts=False, primaries=primaries,
                                             deadline=deadline)
    out.violated = list(check.violated)
    from tabprotect.secondary.deviation import neighbourhood   # only with violations
    dev = _Deviation(table, cost, cand, req)
    added, unresolved = [], []
    for s, kind, j in out.violated:
        if deadline is not None and time.perf_counter() > deadline:
            unresolved.append(s)
            continue
        found = None
        for radius in settings.radii:
            region = neighbourhood(table, s, radius)
            if len(region) > settings.max_region_cells:
                break
            found = dev.serve(s, kind, j, suppressed, region, deadline)
            if found is not None:
                break
        if found is None:
            unresolved.append(s)
            continue
        new, moves = found
        suppressed[new] = True
        added.append(new)
        out.moves.extend(moves)
    lp_met = np.setdiff1d(primaries, [s for s, _, _ in out.violated])
    if sum(len(a) for a in added):
        lp_met = np.intersect1d(lp_met, tried)
    if integer and len(lp_met) and check.complete:
        # short for the integer audit only: integral witnesses against the attackers
        now = np.where(suppressed & (table.status != "U"), "M", table.status)
        rep = MilpRepair(table.replace(status=now), cost, cand, req, integer=True,
                         settings=settings.milp)
        res = rep.run(now, lp_met, deadline=deadline, quick_when_late=False)
        added.append(np.asarray(res.added, np.int64))
        out.moves.extend(res.moves)
    out.added = np.unique(np.concatenate(added)) if added else np.zeros(0, np.int64)
    out.unresolved = np.unique(np.asarray(unresolved, np.int64))
    return out


class _Deviation:
    """The cheapest deviation of a region (cells outside held at 0) that moves a primary
    by its level with an attacker's cell held: ``y = p - q``, ``A y = 0``, suppressed
    cells move for (almost) nothing, a candidate ``i`` costs ``cost_i / min(range_i,
    level)`` per unit (its suppression cost when it moves its full share)."""

    def __init__(self, table, cost: np.ndarray, cand: np.ndarray, req: Requirements):
        self.table, self.cost, self.cand, self.req = table, np.asarray(cost, float), cand, req
        self.A = table.relations.tocsr()
        self.At = self.A.T.tocsr()
        self.slot = np.full(table.n_cells, -1, np.int64)
        self.slot[req.primary] = np.arange(len(req.primary))
        self.free = 1e-6 * max(float(np.median(self.cost)), 1e-9)

    def serve(self, s: int, kind: str, j: int, suppressed: np.ndarray,
              region: np.ndarray, deadline: float | None):
        """(new cells, witnesses) meeting condition ``kind`` of ``s`` against ``j`` on
        ``region``, or None (no such deviation there, or out of time)."""
        req, p = self.req, self.slot[s]
        tol = req.tol[p]
        # a width asks of each way its share (Requirements.way_need); a way without
        # range is left out
        w = None if kind == "width" else 0.0
        wants = []
        if kind in ("up", "width"):
            wants.append((1.0, min(req.way_need(p, 1.0, w) * (1 + 1e-6) + tol, req.up[s])))
        if kind in ("down", "width"):
            wants.append((-1.0, min(req.way_need(p, -1.0, w) * (1 + 1e-6) + tol,
                                    req.down[s])))
        wants = [(sign, need) for sign, need in wants if need > 0]
        if not wants:   # the cell cannot move at all
            return None
        sup = suppressed.copy()
        new_all, moves = [], []
        for sign, need in wants:
            got = self._solve(s, sign, need, j, sup, np.sort(region), deadline)
            if got is None:
                return None
            cells, y = got
            new = cells[~sup[cells]]
            sup[new] = True
            new_all.append(new)
            moves.append((cells, y))
        return np.concatenate(new_all), moves

    def _solve(self, s, sign, need, j, sup, region, deadline):
        movable = (sup[region] | self.cand[region])
        up = np.where(movable, self.req.up[region], 0.0)
        dn = np.where(movable, self.req.down[region], 0.0)
        k = int(np.searchsorted(region, s))
        if j >= 0:
            at = np.searchsorted(region, j)
            if at < len(region) and region[at] == j:
                up[at] = dn[at] = 0.0
        if (up[k] if sign > 0 else dn[k]) < need - 1e-9:
            return None
        rows = np.unique(self.At[region].indices)
        M = self.A[rows][:, region].tocsr()
        m = len(region)
        with np.errstate(divide="ignore", invalid="ignore"):
            wu = np.where(up > 0, self.cost[region] / np.minimum(up, need), 0.0)
            wd = np.where(dn > 0, self.cost[region] / np.minimum(dn, need), 0.0)
        wu = np.where(sup[region], self.free, wu)
        wd = np.where(sup[region], self.free, wd)
        lo, hi = split_bounds(up, dn, k, sign, need)
        limit = None if deadline is None else max(0.05, deadline - time.perf_counter())
        res = solve(LinearProgram(c=np.concatenate([wu, wd]), A=sp.hstack([M, -M]).tocsr(),
                                  row_lower=np.zeros(len(rows)), row_upper=np.zeros(len(rows)),
                                  col_lower=lo, col_upper=hi), time_limit=limit)
        if res.status != "optimal" or res.x is None:
            return None
        y = res.x[:m] - res.x[m:]
        moved = np.flatnonzero(np.abs(y) > 1e-9 * max(1.0, need))
        return region[moved], y[moved]


def decide(table, cost: np.ndarray, cand: np.ndarray, req: Requirements, violated: list,
           *, deadline: float | None) -> tuple[AttackRepairOutcome, list]:
    """The conditions ``(primary, kind, attacker)`` no neighbourhood served, on the
    whole table: the cheapest deviation with the attacker's cell held over every cell
    that may be suppressed (served: its cells and witness in the outcome); where none
    exists, the intruder's LP (:func:`unprotectable`) proves the level out of reach.
    Returns the outcome and the conditions no pattern meets; conditions not decided by
    ``deadline`` are in neither."""
    out = AttackRepairOutcome(violated=list(violated))
    suppressed = np.isin(table.status, ("U", "M"))
    dev = _Deviation(table, cost, cand, req)
    everything = np.arange(table.n_cells)
    added, failed = [], []
    for s, kind, j in violated:
        if deadline is not None and time.perf_counter() > deadline:
            break
        found = dev.serve(int(s), kind, int(j), suppressed, everything, deadline)
        if found is None:
            failed.append((s, kind, j))
            continue
        suppressed[found[0]] = True
        added.append(found[0])
        out.moves.extend(found[1])
    out.added = np.unique(np.concatenate(added)) if added else np.zeros(0, np.int64)
    return out, unprotectable(table, cand, req, failed, deadline=deadline)


def unprotectable(table, cand: np.ndarray, req: Requirements, violated: list, *,
                  deadline: float | None) -> list[tuple[int, str, int]]:
    """The conditions ``(primary, kind, attacker)`` of ``violated`` that no pattern
    meets: the intruder's LP over the whole table with every cell of ``cand`` and every
    unpublished cell free to move and the attacker's cell held (``attacker`` -1: the
    outside intruder) reaches less than the level.  Conditions not decided by
    ``deadline`` are left out (not proven)."""
    movable = np.asarray(cand, bool) | np.isin(table.status, ("U", "M"))
    lp = _WholeTableLP(table, req, movable)
    bad = []
    for s, kind, j in violated:
        if deadline is not None and time.perf_counter() > deadline:
            break
        if lp.short(int(s), kind, int(j), deadline):
            bad.append((int(s), kind, int(j)))
    return bad


class _WholeTableLP:
    """The intruder's LP over the movable cells of the whole table: deviations ``y``
    with ``A y = 0`` within each cell's range (0 for a cell that is never suppressed)."""

    def __init__(self, table, req: Requirements, movable: np.ndarray):
        self.req = req
        self.cols = np.flatnonzero(movable)
        self.pos = np.full(table.n_cells, -1, np.int64)
        self.pos[self.cols] = np.arange(len(self.cols))
        A = table.relations.tocsr()[:, self.cols].tocsr()
        self.A = A[np.flatnonzero(np.diff(A.indptr) > 0)]
        self.hi = req.up[self.cols].astype(float)
        self.lo = -req.down[self.cols].astype(float)
        self.slot = np.full(table.n_cells, -1, np.int64)
        self.slot[req.primary] = np.arange(len(req.primary))
        self._reach: dict[tuple[int, int], tuple[float, float]] = {}

    def reach(self, s: int, j: int, deadline: float | None) -> tuple[float, float] | None:
        """(max y_s, max -y_s) with attacker ``j``'s cell held; None when the deadline
        stopped an LP."""
        key = (s, j)
        if key not in self._reach:
            lo, hi = self.lo.copy(), self.hi.copy()
            if j >= 0 and self.pos[j] >= 0:
                lo[self.pos[j]] = hi[self.pos[j]] = 0.0
            got = []
            for sign in (1.0, -1.0):
                c = np.zeros(len(self.cols))
                c[self.pos[s]] = -sign
                limit = None if deadline is None else deadline - time.perf_counter()
                if limit is not None and limit <= 0:
                    return None
                res = solve(LinearProgram(c=c, A=self.A, row_lower=np.zeros(self.A.shape[0]),
                                          row_upper=np.zeros(self.A.shape[0]),
                                          col_lower=lo, col_upper=hi), time_limit=limit)
                if res.status == "unbounded":
                    got.append(np.inf)
                elif res.status == "optimal":
                    got.append(-float(res.objective))
                else:
                    return None
            self._reach[key] = (got[0], got[1])
        return self._reach[key]

    def short(self, s: int, kind: str, j: int, deadline: float | None) -> bool:
        """Whether condition ``kind`` of primary ``s`` fails against ``j`` even with
        every movable cell suppressed (False when not decided in time)."""
        if self.pos[s] < 0:
            return True          # the primary itself can never be unpublished
        got = self.reach(s, j, deadline)
        if got is None:
            return False
        up, down = got
        p = self.slot[s]
        req = self.req
        tol = req.tol[p]
        if kind == "up":
            return up < req.need_up[p] - tol
        if kind == "down":
            return down < req.need_down[p] - tol
        return up + down < req.need_width[p] - tol
