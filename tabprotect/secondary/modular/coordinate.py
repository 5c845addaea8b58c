"""The coordination of the sub-table solves: the work list (smallest level first), the
pattern and the protection levels carried between sub-tables, the jobs of a wave and the
application of their results (backtracking into higher sub-tables)."""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np

from tabprotect.model.table import Table
from tabprotect.secondary.hypercube import requirements
from tabprotect.secondary.modular.jobs import Job, JobResult
from tabprotect.secondary.modular.options import ModularOptions
from tabprotect.secondary.modular.time_plan import TimePlan
from tabprotect.secondary.subtables import Split, SubTable, subtable_table


class WorkList:
    """Sub-tables to solve, smallest level first; a sub-table is queued once."""

    def __init__(self, split: Split):
        self.split = split
        self.heap: list[tuple[int, tuple]] = []
        self.queued: set[tuple] = set()

    def __bool__(self) -> bool:
        return bool(self.heap)

    def push(self, key: tuple) -> None:
        if key not in self.queued:
            self.queued.add(key)
            heapq.heappush(self.heap, (self.split.level(key), key))

    def next_wave(self) -> tuple[int, list[tuple]]:
        """Every queued sub-table of the smallest level (they share no cell)."""
        level = self.heap[0][0]
        wave = []
        while self.heap and self.heap[0][0] == level:
            _, key = heapq.heappop(self.heap)
            self.queued.discard(key)
            wave.append(key)
        return level, wave


@dataclass
class ModularStats:
    """The numbers a modular run reports (``MethodOutcome.details``)."""

    subtables: int
    solves: int = 0
    skipped: int = 0          # already protected: no MILP
    backtracks: int = 0       # margin cells suppressed by a lower sub-table
    margin_retries: int = 0   # strict sub-table infeasible: solved with margins allowed
    unsolved: int = 0         # left to the full-table audit and repair
    late: int = 0             # not started: the deadline had passed
    waves: int = 0
    workers: int = 1
    solve_seconds: float = 0.0
    max_solve_seconds: float = 0.0
    #: per wave: (level, sub-tables, seconds planned per sub-table, wall seconds)
    wave_seconds: list = field(default_factory=list)
    proof_levels: int = 0     # solved sub-tables whose secondaries carry proof levels
    budget_seconds: float | None = None
    fast: int = 0             # solved by the fast solve (the time plan's tail)

    def count(self, res: JobResult) -> None:
        """Add one job's result."""
        self.skipped += int(res.skipped)
        self.late += int(res.late)
        self.fast += int(res.fast)
        self.solves += int(not (res.skipped or res.late))
        self.margin_retries += int(res.retried)
        self.solve_seconds += res.seconds
        self.max_solve_seconds = max(self.max_solve_seconds, res.seconds)
        if res.status is None and not res.skipped:
            self.unsolved += 1


class Coordinator:
    """The pattern of a modular run and the levels its suppressed cells carry.

    ``need_up``/``need_down`` start as the primaries' requirements; a secondary chosen
    in one sub-table gets the level it must be able to move by in the others
    (:meth:`apply`)."""

    def __init__(self, table: Table, cost: np.ndarray, split: Split,
                 options: ModularOptions, singleton: bool):
        self.table, self.split, self.options, self.singleton = table, split, options, singleton
        self.cost = np.asarray(cost, dtype=float)
        self.status = table.status.copy()
        self.need_up, self.need_down = requirements(table)
        self.spl = np.where(self.status == "U", table.spl, 0.0)
        self.room_up = table.ub - table.value
        self.room_down = table.value - table.lb
        self.passes: dict[tuple, int] = {}
        #: the sub-tables of the wave being solved, by key
        self.built: dict[tuple, SubTable] = {}
        self.work = WorkList(split)
        #: cells that lie in more than one sub-table: only they carry levels elsewhere
        self.shared = np.diff(split.membership().indptr) > 1
        for p in np.flatnonzero(self.status == "U"):
            for key in split.subtables_of_cell(int(p)):
                self.work.push(key)

    def jobs(self, wave: list[tuple], limit: float | None, plan: TimePlan,
             stats: ModularStats) -> list[Job]:
        """The jobs of a wave from the current pattern (sub-tables solved
        ``max_passes`` times count as unsolved; those without a suppressed cell need
        no job)."""
        out = []
        for key in sorted(wave):
            self.passes[key] = self.passes.get(key, 0) + 1
            if self.passes[key] > self.options.max_passes:
                stats.unsolved += 1
                continue
            job = self._job(key, limit, plan)
            if job is not None:
                out.append(job)
        return out

    def _job(self, key: tuple, limit: float | None, plan: TimePlan) -> Job | None:
        sub = self.split.subtable(key)
        cells = sub.cells
        local = self.status[cells].copy()
        hidden = np.isin(local, ("U", "M"))
        if not hidden.any():
            return None
        self.built[key] = sub
        local[hidden] = "U"  # everything suppressed so far must be protected here
        margin_open = sub.margin & ~hidden & (local == "S")
        strict = local.copy()
        strict[margin_open] = "P"
        levels = dict(upl=self.need_up[cells], lpl=self.need_down[cells], spl=self.spl[cells])
        opts = self.options
        strict_table = subtable_table(self.table, sub, status=strict, **levels)
        return Job(key, strict_table, strict_table.replace(status=local),
                   self.cost[cells],
                   np.where(sub.margin, opts.margin_penalty * self.cost[cells],
                            self.cost[cells]),
                   limit, plan.deadline, self.singleton, plan.fast_after,
                   proof=opts.carried_level == "proof", shared=self.shared[cells],
                   proof_max_work=opts.proof_level_max_work,
                   proof_by_flows=opts.proof_by_flows,
                   min_seconds=opts.min_subtable_seconds)

    def apply(self, res: JobResult, stats: ModularStats) -> None:
        """Suppress what the sub-table ``res.key`` added, give each new secondary its
        carried level, and queue every other sub-table holding it (higher ones:
        backtracking)."""
        stats.count(res)
        sub = self.built.pop(res.key)
        if res.status is None:
            return
        cells = sub.cells
        hidden = np.isin(self.status[cells], ("U", "M"))
        added = np.flatnonzero((res.status == "M") & ~hidden)
        if len(added) == 0:
            return
        stats.proof_levels += int(res.levels is not None)
        if res.levels is not None:
            lift_up, lift_down = res.levels[0][added], res.levels[1][added]
        else:
            lift_up = lift_down = np.full(len(added), self._subtable_level(cells, hidden))
        for j, up, down in zip(added, lift_up, lift_down):
            s = int(cells[j])
            self.status[s] = "M"
            self.need_up[s] = max(self.need_up[s], min(up, self.room_up[s]))
            self.need_down[s] = max(self.need_down[s], min(down, self.room_down[s]))
            if sub.margin[j]:
                stats.backtracks += 1
            for other in self.split.subtables_of_cell(s):
                if other != res.key:
                    self.work.push(other)

    def _subtable_level(self, cells: np.ndarray, hidden: np.ndarray) -> float:
        """The level a sub-table gives its secondaries without proof levels: the median
        (or the largest) requirement of its own primaries (carried levels would
        snowball), of its suppressed cells when it has none."""
        own = self.table.status[cells] == "U"
        ask = own if own.any() else hidden
        up, down = self.need_up[cells][ask], self.need_down[cells][ask]
        if self.options.carried_level == "max":
            return max(float(up.max(initial=0.0)), float(down.max(initial=0.0)))
        return float(np.median(np.maximum(up, down)))
