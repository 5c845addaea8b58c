"""Settings of the modular method: one frozen dataclass, passed from :func:`modular`
to the time plan, the sub-table jobs and the default sub-table solver, and recorded in
the result's ``params`` by :func:`~tabprotect.secondary.protect`."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal


@dataclass(frozen=True)
class ModularOptions:
    """How the modular method plans, solves and carries its sub-tables (see
    :func:`~tabprotect.secondary.modular.modular`)."""

    #: relative gap at which each sub-table's optimal solve may stop
    mip_gap: float | None = None
    #: a custom sub-table solver ``(sub_table, cost, time_limit) -> status`` (default:
    #: the optimal method, the certified heuristic on large sub-tables); must be
    #: picklable to run in worker processes
    solver: Callable | None = None
    #: seconds per sub-table solve, so one hard sub-table cannot take the whole budget
    subtable_time_limit: float | None = 60.0
    #: times one sub-table may be solved again (bounds the backtracking)
    max_passes: int = 20
    #: level carried by a secondary into its other sub-tables: proof (its move in the
    #: proof of its sub-table) asks the sub-tables below for least
    carried_level: Literal["proof", "median", "max"] = "proof"
    #: processes for the sub-table solves (None: 2 from 5,000 cells)
    workers: int | None = None
    #: start each sub-table's optimal solve from a cube pattern, so a stopped solve
    #: never overruns (off: the repair's start is cheaper)
    cube_start: bool = False
    #: sub-tables that are no network (3-D and more) get the optimal method, started
    #: from the certified pattern, below heuristic_size (off: the certified heuristic
    #: alone, in a fraction of the time; a table of one sub-table always gets the MILP)
    subtable_milp: bool = False
    #: primaries x cells from which a sub-table gets the certified heuristic instead of
    #: the network search or the optimal method (None: never; 0: every sub-table; those
    #: that are no network get it anyway unless subtable_milp): the 4-D sub-tables of
    #: 1,000 cells with 150 primaries get no pattern of their own from the MILP in seconds
    heuristic_size: int | None = 20_000
    #: ... and at least this many primaries: on a large flat table with a handful of
    #: primaries the optimal method is quick and the heuristic far from optimal
    heuristic_min_primaries: int = 20
    #: cost factor of a margin cell when a sub-table is solved again with its margins
    #: allowed: a published margin is suppressed only when nothing else protects
    margin_penalty: float = 10.0
    #: sub-tables up to this many suppressed cells x cells get proof levels (two LPs
    #: per primary); larger ones carry the median requirement, whose solves a
    #: time-limited run on a large table needs more than the LPs
    proof_level_max_work: int = 2_000
    #: proof levels of network (1-D, 2-D) sub-tables from least-movement flows instead
    #: of LPs: two to three times faster, but where several least-movement proofs exist
    #: the two pick different ones, and the LPs' carried levels cost less on most tables
    #: measured (the demo table: 9.18M against 9.86M)
    proof_by_flows: bool = False
    #: a sub-table solve never gets less than this many seconds (below it the optimal
    #: method has no pattern of its own and falls back to its repair heuristic)
    min_subtable_seconds: float = 0.5
    #: share of the time left that the sub-table solves may plan to use (the rest:
    #: building sub-tables, process start-up, re-solves after backtracking)
    planned_share: float = 0.8
    #: the last share of the method's time: sub-tables started then get the fast solve
    #: (the certified heuristic's first pass) instead of being left to protect()'s
    #: repair, which costs far more time per cell
    fast_tail: float = 0.1
    #: the network sub-tables' cut search, cut listing and maximum flows compiled by
    #: numba (the same pattern): compiled loads the kernel at the first network
    #: sub-table (compiling it, about 10 s once, where no cache exists); python never
    #: loads it; auto loads it after SearchLimits.load_after numpy nodes in the process,
    #: or at a later call's first network sub-table when its cache exists
    kernel: Literal["auto", "compiled", "python"] = "auto"

    def __post_init__(self):
        if self.carried_level not in ("proof", "median", "max"):
            raise ValueError(f"carried_level must be 'proof', 'median' or 'max', not "
                             f"{self.carried_level!r}")
        if self.kernel not in ("auto", "compiled", "python"):
            raise ValueError(f"kernel must be 'auto', 'compiled' or 'python', not "
                             f"{self.kernel!r}")
        for name in ("planned_share", "fast_tail"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must lie between 0 and 1")
