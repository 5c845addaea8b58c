"""The modular method's time plan: the method's budget, the share each wave's
sub-tables may plan on, the wave's planned end, and the fast tail."""
from __future__ import annotations

import time

import numpy as np

from tabprotect.secondary.modular.options import ModularOptions
from tabprotect.secondary.subtables import Split


class TimePlan:
    """The budget of one modular run (None: no limit).

    ``deadline`` and ``fast_after`` are wall-clock times (``time.time()``, shared with
    the worker processes): past ``deadline`` no job starts, past ``fast_after`` (the
    last ``options.fast_tail`` of the budget) jobs get the fast solve."""

    def __init__(self, split: Split, budget: float | None, options: ModularOptions,
                 workers: int, start: float):
        self.budget, self.options, self.workers, self.start = budget, options, workers, start
        # for the shares: the level of every sub-table and which cells it holds
        sub_level = np.zeros(1, dtype=np.int64)
        for g in split.dims:
            sub_level = np.add.outer(sub_level, g.parent_depth).ravel()
        self.sub_level = sub_level
        self.member_t = split.membership().T.tocsr().astype(np.int32) \
            if budget is not None else None
        to_wall = time.time() - time.perf_counter()
        self.deadline = None if budget is None else to_wall + start + budget
        self.fast_after = None if budget is None else \
            to_wall + start + budget * (1.0 - options.fast_tail)

    def expired(self) -> bool:
        return self.budget is not None and time.perf_counter() - self.start > self.budget

    def subtable_limit(self, level: int, wave_size: int, status: np.ndarray
                       ) -> float | None:
        """Seconds each sub-table of a wave of ``wave_size`` at ``level`` may plan on:
        the planned share of the time left, shared among the sub-tables still to come
        (this wave's and every lower-level sub-table that already holds a suppressed
        cell), at least ``min_subtable_seconds``, at most ``subtable_time_limit``."""
        cap = self.options.subtable_time_limit
        if self.budget is None:
            return cap
        left = self.budget - (time.perf_counter() - self.start)
        holds = self.member_t @ np.isin(status, ("U", "M")).astype(np.int32)
        later = int(((holds > 0) & (self.sub_level > level)).sum())
        share = self.options.planned_share * left * max(1, self.workers) / \
            max(1, wave_size + later)
        share = max(self.options.min_subtable_seconds, share)
        return share if cap is None else min(share, cap)

    def wave_end(self, limit: float | None, longest_bin: int) -> float | None:
        """When the wave should end: its longest bin has had its planned shares (never
        past the deadline); the bins hand unused time on to later jobs."""
        if self.budget is None or limit is None or longest_bin == 0:
            return None
        return min(self.deadline, time.time() + limit * longest_bin)
