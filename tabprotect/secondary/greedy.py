"""A simple, fast baseline: the attacker-LP loop ("greedy").

For every primary cell whose feasibility interval is too narrow, solve one small linear
program: the cheapest *deviation* ``f`` of the table that keeps every relation
(``A f = 0``), keeps every cell inside its a-priori bounds (``lb <= x + f <= ub``), leaves
``P`` and empty cells alone and moves the primary by its full protection level
(``f_p = +UPL`` or ``-LPL``).  Already suppressed cells carry deviation for free; a
published cell ``i`` costs ``cost_i * |f_i| / level`` (the LP relaxation of the optimal
model for that one primary).  Every published cell the deviation touches is suppressed:
``x + f`` is then a table the intruder cannot rule out, so the primary's interval reaches
its required bound.  Repeat with the LP audit until it passes.

The deviation LP (:mod:`~tabprotect.secondary.deviation`) is solved on a neighbourhood of
the primary (its sub-tables for product tables, its relation neighbours for general
tables; cells outside are held at 0, so a solution is valid for the whole table) and
widened only when the neighbourhood has no deviation.  This is also the repair step of :func:`tabprotect.secondary.protect`:
:func:`greedy_repair` takes the shortfalls of any pattern and adds suppressions.
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from tabprotect.audit import AuditResult, VerdictAudit, audit, mirror_share
from tabprotect.model.table import Table
from tabprotect.parallel import map_runs
from tabprotect.requirements import cell_moves
from tabprotect.secondary.base import MethodOutcome, register_method
from tabprotect.secondary.cubes import _move_matrix
from tabprotect.secondary.deviation import (WarmModels, block_neighbourhood, deviation_lp,
                                           free_reach, neighbourhood)
from tabprotect.secondary.repair_options import GreedyOptions
from tabprotect.secondary.subtables import Split

def _levels(table: Table, cell: int) -> tuple[float, float]:
    """(up, down) amounts that give the primary its required interval
    (:func:`tabprotect.requirements.cell_moves`: levels, and never a point)."""
    return cell_moves(table, cell)


@dataclass
class RepairStats:
    """What a repair did (filled by :func:`greedy_repair` when given one)."""

    #: deviation LPs solved
    lps: int = 0
    #: ... of them on a region's suppressed cells alone (``free_first_min_cells``)
    free_first_lps: int = 0
    #: directions served by the mirror image of the other direction's move (no LP)
    mirror_skips: int = 0
    #: directions served by a larger move found in the same direction (no LP)
    covered_skips: int = 0
    #: LPs of primaries the audit left open, on their neighbourhood's suppressed cells
    reach_lps: int = 0
    #: ... of those primaries, protected by the pattern there (no cell added)
    already_protected: int = 0

    def add(self, other: "RepairStats") -> None:
        self.lps += other.lps
        self.free_first_lps += other.free_first_lps
        self.mirror_skips += other.mirror_skips
        self.covered_skips += other.covered_skips
        self.reach_lps += other.reach_lps
        self.already_protected += other.already_protected


def greedy_repair(table: Table, cost: np.ndarray, unprotected_cells, *,
                  audit_result: AuditResult | None = None, time_limit: float | None = None,
                  progress: Callable[[str, float], None] | None = None,
                  max_radius: int = 4, block_sizes: tuple[int, ...] = (),
                  return_moves: bool = False, workers: int = 1,
                  options: GreedyOptions | None = None, stats: RepairStats | None = None):
    """Add secondary suppressions so that each listed primary reaches its required interval.

    For each cell in ``unprotected_cells`` (in the given order) and each direction whose
    bound falls short (both directions when ``audit_result`` is None), solve the cheapest
    deviation LP (see the module docstring) on a neighbourhood of the cell, widened up to
    ``max_radius`` relation steps (then the whole table) when infeasible, and suppress (status
    ``M``) every published cell it moves.  Suppressions made for earlier cells are free for
    later ones.  The result is *not* audited here: call :func:`tabprotect.audit.audit` again
    (a deviation LP proves its own direction; repairs of several primaries only add cells).

    Parameters
    ----------
    table : the table with its current status (U primaries, M secondaries, P forced published)
    cost : suppression cost per cell
    unprotected_cells : indices of primary cells to repair (e.g. ``audit(...).shortfalls``)
    audit_result : the audit of the current pattern; tells which direction falls short
    time_limit : seconds for the whole repair (cells not reached keep their status)
    progress : ``progress(message, fraction)``
    block_sizes : first try, in this order, regions of about this many suppressed cells
        grown around the primary plus the published cells of their relations (see
        ``block_neighbourhood``; on 10^6-cell tables far cheaper than the sub-table
        neighbourhoods, which must grow until the deviation fits)
    return_moves : also return the deviations found, as rows of a sparse matrix of
        moves for ``audit(..., moves=...)`` (each keeps every relation and, with its
        support suppressed, moves only suppressed cells)
    workers : worker processes (from ``options.parallel_min_primaries`` primaries on):
        the primaries, in cell order, are cut into ``workers`` runs of neighbouring
        cells, each repaired from the current pattern, and the suppressions are united.
        Still safe: a deviation stays a witness when further cells are suppressed.  Only
        the sharing of suppressions across the cut is lost (a little more cost).
    options : the deviation LPs' settings (:class:`GreedyOptions`; defaults when None)
    stats : a :class:`RepairStats` to add this repair's counts to

    Returns
    -------
    The new status array (a copy), and with ``return_moves`` the moves.

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> r = Hierarchy.flat(["1", "2"], total="T"); c = Hierarchy.flat(["a", "b"], total="T")
    >>> t = Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2])
    >>> st = t.status.copy(); st[4] = "U"
    >>> t = t.replace(status=st, upl=np.where(st == "U", 1.0, 0), lpl=np.where(st == "U", 1.0, 0))
    >>> new = greedy_repair(t, np.ones(9), [4])
    >>> int((new == "M").sum())
    3
    """
    opts = options or GreedyOptions()
    cells = [int(c) for c in np.atleast_1d(np.asarray(unprotected_cells, dtype=np.int64))]
    unproven = _unproven(table, audit_result)
    tasks = [(p, _directions(table, p, audit_result), bool(unproven[p])) for p in cells]
    tasks = [task for task in tasks if task[1]]
    plan = _RepairPlan(time_limit, max_radius, tuple(block_sizes), opts)
    if workers > 1 and len(tasks) >= opts.parallel_min_primaries:
        status, found_moves, counts = _parallel_repair(table, cost, tasks, plan, workers,
                                                       progress)
    else:
        repair = _Repair(table, cost, plan)
        repair.run(tasks, progress)
        status, found_moves, counts = repair.status, repair.found_moves, repair.stats
    if stats is not None:
        stats.add(counts)
    if return_moves:
        return status, _move_matrix(found_moves, table.n_cells)
    return status


def _unproven(table: Table, audit_result: AuditResult | None) -> np.ndarray:
    """Per cell: whether the audit left the primary open rather than proved it short (a
    screen's uncertified primaries, those a verdict audit did not decide in time): the
    pattern may already protect such a primary, which the intruder's LPs on its
    neighbourhood's suppressed cells then show.  None against attackers among the
    contributors (those LPs do not model what an attacker knows)."""
    out = np.zeros(table.n_cells, dtype=bool)
    if audit_result is None or audit_result.singleton or audit_result.coalition or (
            audit_result.attacked is not None and audit_result.attacked.any()):
        return out
    if audit_result.mode == "screen":
        out[:] = True
    elif audit_result.incomplete is not None:
        out |= np.asarray(audit_result.incomplete, dtype=bool)
    return out


def _directions(table: Table, p: int, audit_result: AuditResult | None) -> list[float]:
    """The signed moves primary ``p`` needs (its shortfall directions), as amounts."""
    up, down = _levels(table, p)
    directions: list[float] = []
    if audit_result is None:
        directions = [up, -down]
    else:
        tol = 1e-6
        x = table.value[p]
        scale = tol * max(1.0, abs(x))
        # an outer bound (verdict mode: from an LP with relations dropped) only
        # proves a shortfall; on the side it does not, the true bound is unknown
        # (a verdict audit's reached values: the interval holds [lo, hi])
        if isinstance(audit_result, VerdictAudit):
            lo, hi = audit_result.min_at_most[p], audit_result.max_at_least[p]
            outer_hi, outer_lo = audit_result.outer_upper[p], audit_result.outer_lower[p]
        else:
            lo, hi = audit_result.lower[p], audit_result.upper[p]
            outer_hi = outer_lo = False
        if hi < x + up - scale or audit_result.exact[p] or outer_hi:
            directions.append(up)
        if lo > x - down + scale or audit_result.exact[p] or outer_lo:
            directions.append(-down)
        width = hi - lo
        if width < table.spl[p] - scale and not directions:
            directions.append(up if up > 0 else -down)
    out = []
    for amount in directions:
        if amount == 0:
            # zero level (e.g. a primary whose level was capped by its bounds): ask for
            # a small positive move so that the cell is at least not exactly disclosed
            room_up = table.ub[p] - table.value[p]
            room_dn = table.value[p] - table.lb[p]
            unit = max(1.0, 0.01 * abs(table.value[p]))
            amount = min(unit, room_up) if room_up > 0 else -min(unit, room_dn)
            if amount == 0:
                continue
        out.append(float(amount))
    # the larger move first: its mirror image may serve the other direction (no LP)
    return sorted(out, key=abs, reverse=True)


@dataclass(frozen=True)
class _RepairPlan:
    """What a repair (or one worker's share of it) is given besides the table."""

    time_limit: float | None
    max_radius: int
    block_sizes: tuple[int, ...]
    options: GreedyOptions

    def hoods(self) -> list[tuple[str, int | None]]:
        """The neighbourhoods tried in turn: the primary's own sub-tables first (small:
        in 3-D mostly enough), then the block regions, then wider sub-table
        neighbourhoods, then the whole table (radius None)."""
        return [("radius", 0)] + [("block", size) for size in self.block_sizes] + \
            [("radius", r) for r in range(1, self.max_radius + 1)] + [("radius", None)]


class _Repair:
    """The sequential repair of a list of primaries from the table's status: the pattern
    so far, the moves found and the counts."""

    def __init__(self, table: Table, cost: np.ndarray, plan: _RepairPlan):
        self.table, self.cost, self.plan = table, cost, plan
        self.start = time.perf_counter()
        self.status = table.status.copy()
        self.suppressed = np.isin(self.status, ("U", "M"))
        self.split = Split(table) if table.dimensions else None
        self.hoods = plan.hoods()
        self.found_moves: list[tuple[np.ndarray, np.ndarray]] = []
        self.stats = RepairStats()
        warm = plan.options.warm_regions
        self.models = WarmModels(warm) if warm > 0 else None

    def left(self) -> float | None:
        limit = self.plan.time_limit
        return None if limit is None else max(1.0, limit - (time.perf_counter() - self.start))

    def run(self, tasks: list[tuple[int, list[float], bool]],
            progress: Callable[[str, float], None] | None) -> None:
        limit = self.plan.time_limit
        for n_done, (p, directions, unproven) in enumerate(tasks):
            if limit is not None and time.perf_counter() - self.start > limit:
                break
            self._primary(p, directions, unproven)
            if progress is not None:
                progress("greedy repair", (n_done + 1) / max(1, len(tasks)))

    def _primary(self, p: int, directions: list[float], unproven: bool = False) -> None:
        """Repair primary ``p`` in each direction.  The second direction starts from
        the neighbourhood that served the first: a larger neighbourhood never gives a
        dearer deviation (more freedom), and the smaller ones mostly fail again.
        ``unproven``: the audit did not prove ``p`` short (see :func:`_unproven`)."""
        if unproven and self._protected_already(p):
            return
        first, served = 0, None
        reach = {1.0: 0.0, -1.0: 0.0}          # how far this primary's moves go up, down
        by_mirror = {1.0: False, -1.0: False}  # ... by a move's mirror image
        for amount in directions:
            sign = float(np.sign(amount))
            if reach[sign] >= abs(amount) * (1 - 1e-9):
                # a move found for a larger amount (a zero level's small move after the
                # other level's in the same direction), or the deviation of the other
                # direction run backwards: it already moves the primary this far inside
                # the bounds on suppressed cells only, a witness the audit takes too (it
                # uses every move and its mirror image), so no second LP
                self.stats.mirror_skips += by_mirror[sign]
                self.stats.covered_skips += not by_mirror[sign]
                continue
            found, at, hood, used = self._search(p, amount, first, served)
            if found is None:
                continue
            if self.hoods[at][1] is not None:
                first, served = at, hood
            mirror = self._take(p, amount, found, used)
            if abs(amount) > reach[sign]:
                reach[sign], by_mirror[sign] = abs(amount), False
            if abs(mirror) > reach[-sign]:
                reach[-sign], by_mirror[-sign] = abs(mirror), True

    def _protected_already(self, p: int) -> bool:
        """Whether the suppressed cells of ``p``'s own neighbourhood already give it
        its levels and width (the intruder's LPs there: how far ``p`` moves up and
        down); then the two moves go to the audit and no cell is added.  (The
        direction amounts of :func:`_levels` are one sufficient split of the width; this
        check takes any.)"""
        t = self.table
        need_up = max(min(float(t.upl[p]), float(t.ub[p] - t.value[p])), 0.0)
        need_down = max(min(float(t.lpl[p]), float(t.value[p] - t.lb[p])), 0.0)
        up, down = _levels(t, p)
        width = up + down          # at least the sliding level and never a point
        self.stats.reach_lps += 2
        reach_up, reach_down, moves = free_reach(
            t, self.status, p, self._hood(p, 0), max(up, down, width), self.left(),
            self.models)
        if reach_up < need_up - 1e-9 or reach_down < need_down - 1e-9 or \
                reach_up + reach_down < width - 1e-9:
            return False
        self.found_moves.extend(moves)
        self.stats.already_protected += 1
        return True

    def _search(self, p: int, amount: float, first: int, served: np.ndarray | None):
        """The cheapest deviation on the first neighbourhood (from ``first`` on) that
        has one: (found or None, its index in the list, the neighbourhood, the cells
        the LP used)."""
        found, at, hood, used = None, first, None, None
        for at in range(first, len(self.hoods)):
            # the region that served the first direction is not grown again: it holds
            # the cells that direction suppressed (its support)
            hood = served if (served is not None and at == first) else self._hood(p, at)
            found, used = self._deviation_on(p, amount, hood)
            if found is not None or len(hood) == self.table.n_cells:
                break
        return found, at, hood, used

    def _hood(self, p: int, at: int) -> np.ndarray:
        kind, radius = self.hoods[at]
        if kind == "block":
            return block_neighbourhood(self.table, self.suppressed, p, radius)
        if radius is None:
            return np.arange(self.table.n_cells)
        return neighbourhood(self.table, p, radius, self.split)

    def _deviation_on(self, p: int, amount: float, hood: np.ndarray):
        """(deviation or None, cells it was sought on).  A large region first gets the
        deviation on its suppressed cells alone (no cost, a third of the columns): a
        primary protected by a long move that the audit's blocks missed needs no new
        cell, and this LP shows it in a fraction of the time."""
        opts = self.plan.options
        left = self.left()
        presolve = opts.deviation_lp_presolve_min_columns
        args = (self.table, self.status, self.cost, p, amount)
        if len(hood) >= opts.free_first_min_cells:
            used = hood[self.suppressed[hood]]
            self.stats.lps += 1
            self.stats.free_first_lps += 1
            found = deviation_lp(*args, used, left, presolve, self.models)
            if found is not None:
                return found, used
        self.stats.lps += 1
        return deviation_lp(*args, hood, left, presolve, self.models), hood

    def _take(self, p: int, amount: float, found, used: np.ndarray) -> float:
        """Suppress the deviation's support and keep it as a move; returns how far its
        mirror image moves ``p`` (on a frequency table only an integral deviation whose
        whole mirror image stays inside the bounds counts)."""
        support, deviation = found
        if len(support):
            self.status[support] = "M"
            self.suppressed[support] = True
        moved = np.flatnonzero(deviation)   # (over the cells the LP used)
        cells = used[moved]
        self.found_moves.append((cells, deviation[moved]))
        share = mirror_share(self.table.value[cells], self.table.lb[cells],
                             self.table.ub[cells], deviation[moved])
        if self.table.kind == "frequency" and (
                share < 1.0 or (deviation[moved] != np.round(deviation[moved])).any()):
            return 0.0   # an integer intruder takes only a whole, integral mirror image
        return -amount * share


def _repair_in_worker(job: tuple) -> tuple[np.ndarray, list, RepairStats]:
    """One worker's share of a parallel repair: (cells it suppressed, its moves, its
    counts)."""
    table, cost, tasks, plan = job
    repair = _Repair(table, cost, plan)
    repair.run(tasks, None)
    return np.flatnonzero(repair.status != table.status), repair.found_moves, repair.stats


def _parallel_repair(table: Table, cost: np.ndarray, tasks: list, plan: _RepairPlan,
                     workers: int, progress: Callable[[str, float], None] | None
                     ) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]], RepairStats]:
    """Cut the primaries, in cell order, into ``workers`` runs of neighbouring cells
    (C order: the first dimensions' codes vary slowest, so a run covers whole slabs of the
    table and shares most of its suppressions within itself), repair each run in a worker
    process from the current pattern, and unite the suppressions and the moves."""
    order = sorted(tasks, key=lambda t: t[0])
    results = map_runs(_repair_in_worker, order, workers,
                       job=lambda run: (table, cost, run, plan))
    status = table.status.copy()
    found_moves: list[tuple[np.ndarray, np.ndarray]] = []
    counts = RepairStats()
    for changed, job_moves, job_stats in results:
        status[changed] = "M"
        found_moves.extend(job_moves)
        counts.add(job_stats)
    if progress is not None:
        progress("greedy repair", 1.0)
    return status, found_moves, counts


@register_method("greedy", options=GreedyOptions, needs_product_structure=False,
                 handles_singletons=True, proves_optimality=False)
def greedy(table: Table, cost: np.ndarray, *, time_limit: float | None = None,
           progress: Callable[[str, float], None] | None = None, singleton: bool = False,
           options: GreedyOptions | None = None, **fields) -> MethodOutcome:
    """The attacker-LP loop: repair every short primary, audit, repeat until the audit passes.

    Parameters
    ----------
    singleton : audit against single-contributor attackers too (default False)
    options : the settings (:class:`GreedyOptions`; defaults when None); ``max_rounds``
        bounds the audit/repair rounds
    **fields : fields of :class:`GreedyOptions` given one by one, applied on top of
        ``options`` (an unknown name is a ``TypeError``)

    ``details``: ``rounds``, ``audit_passed``, ``secondaries`` and ``deviation_lps``
    (the deviation LPs asked for; of them ``free_first_lps`` on suppressed cells alone;
    ``mirror_skips``: directions served by the mirror image of a move, no LP).

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> r = Hierarchy.flat(["1", "2"], total="T"); c = Hierarchy.flat(["a", "b"], total="T")
    >>> t = Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2])
    >>> st = t.status.copy(); st[4] = "U"
    >>> t = t.replace(status=st, upl=np.where(st == "U", 1.0, 0), lpl=np.where(st == "U", 1.0, 0))
    >>> out = greedy(t, np.ones(9))
    >>> int((out.status == "M").sum())
    3
    """
    opts = dataclasses.replace(options or GreedyOptions(), **fields)
    clock = _Clock(time_limit)
    status = table.status.copy()
    primaries = np.flatnonzero(status == "U")
    # first round without an audit: every primary needs both directions anyway
    order = primaries[np.argsort(-table.value[primaries], kind="stable")]
    counts = RepairStats()
    status = greedy_repair(table.replace(status=status), cost, order,
                           time_limit=clock.remaining(), progress=progress, options=opts,
                           stats=counts)
    rounds = 1
    passed = False
    for _ in range(opts.max_rounds):
        if clock.expired():
            break
        res = audit(table.replace(status=status), singleton=singleton,
                    time_limit=clock.remaining())
        if res.passed:
            passed = True
            break
        new = greedy_repair(table.replace(status=status), cost, res.shortfalls,
                            audit_result=res, time_limit=clock.remaining(),
                            progress=progress, options=opts, stats=counts)
        rounds += 1
        if (new != status).sum() == 0:
            break  # no deviation can help (e.g. blocked by P cells): protect() reports it
        status = new
    return MethodOutcome(status=status, solver_status="heuristic",
                         details={"rounds": rounds, "audit_passed": passed,
                                  "secondaries": int((status == "M").sum()),
                                  "deviation_lps": counts.lps,
                                  "free_first_lps": counts.free_first_lps,
                                  "mirror_skips": counts.mirror_skips})


class _Clock:
    """The greedy method's time limit (None: none); each step gets at least 1 s."""

    def __init__(self, time_limit: float | None):
        self.time_limit = time_limit
        self.start = time.perf_counter()

    def expired(self) -> bool:
        return self.time_limit is not None and \
            time.perf_counter() - self.start > self.time_limit

    def remaining(self) -> float | None:
        if self.time_limit is None:
            return None
        return max(1.0, self.time_limit - (time.perf_counter() - self.start))
