"""Sub-table jobs: what a worker process receives (a :class:`Job`), what it sends back
(a :class:`JobResult`), and how one worker runs its share of a wave within the time its
share has left."""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from tabprotect.errors import InfeasibleRulesError
from tabprotect.model.table import Table
from tabprotect.secondary.modular.network import Network
from tabprotect.secondary.modular.proof import proof_levels
from tabprotect.secondary.modular.solver import (OptimalSubtableSolver, SubtableSolver,
                                                     unprotected, uses_heuristic)


@dataclass
class Job:
    """One sub-table to solve: strict (margins published) and, if that is infeasible,
    loose (margins allowed at a penalty)."""

    key: tuple
    strict: Table
    loose: Table
    cost: np.ndarray
    loose_cost: np.ndarray
    time_limit: float | None
    #: wall-clock time (``time.time()``, shared by the worker processes) after which
    #: the job is not started: the sub-table is left to the full-table audit and repair
    deadline: float | None = None
    singleton: bool = False
    #: wall-clock time after which the job gets the fast solve (default solver only)
    fast_after: float | None = None
    #: compute :func:`proof_levels` of the solved sub-table (``carried_level="proof"``)
    proof: bool = False
    #: the sub-table's cells that lie in other sub-tables too (None: all): levels are
    #: computed only when the solve adds one of them (no other cell carries a level)
    shared: np.ndarray | None = None
    #: ... while its suppressed cells x cells stay within this (ModularOptions)
    proof_max_work: int = 2_000
    #: ... from least-movement flows on network sub-tables (ModularOptions.proof_by_flows)
    proof_by_flows: bool = False
    #: the least time a solve gets (ModularOptions.min_subtable_seconds)
    min_seconds: float = 0.5


@dataclass
class JobResult:
    key: tuple
    status: np.ndarray | None  # new local status; None: unsolved
    retried: bool = False      # the strict sub-table was infeasible: margins allowed
    skipped: bool = False      # already protected: no MILP
    late: bool = False         # not started: the global deadline had passed
    fast: bool = False         # solved by the fast solve (the time plan's tail)
    seconds: float = 0.0
    #: :func:`proof_levels` of the solved pattern (up, down), when asked and found
    levels: tuple[np.ndarray, np.ndarray] | None = None


class _Run:
    """One job being run: its start, its share of time and the solver to call."""

    def __init__(self, job: Job, solve: SubtableSolver, share: float | None):
        self.job, self.solve, self.share = job, solve, share
        self.t0 = time.perf_counter()
        self.local_deadline = None if job.deadline is None else \
            time.perf_counter() + (job.deadline - time.time())
        self.fast = False

    def done(self, **kw) -> JobResult:
        return JobResult(self.job.key, seconds=time.perf_counter() - self.t0, **kw)

    def limit(self) -> float | None:
        """The solve's time limit: its share, never past the global deadline (but at
        least ``min_seconds``)."""
        job = self.job
        if job.deadline is None:
            return self.share
        left = max(job.min_seconds, job.deadline - time.time())
        return left if self.share is None else min(self.share, left)

    def call(self, sub: Table, cost: np.ndarray, short: np.ndarray,
             net: Network | None = None) -> np.ndarray:
        if isinstance(self.solve, OptimalSubtableSolver):
            # the feasibility check (and the heuristic) needs only the short primaries;
            # the heuristic stops at the global deadline
            return self.solve(sub, cost, self.limit(), short=short,
                              deadline=self.local_deadline, fast=self.fast, net=net)
        return self.solve(sub, cost, self.limit())

    def solved(self, status: np.ndarray, **kw) -> JobResult:
        job = self.job
        levels = None
        added = np.isin(status, ("U", "M")) & ~np.isin(job.loose.status, ("U", "M"))
        if not added.any():
            # nothing added (a network sub-table found protected): no levels to carry
            return self.done(status=None, skipped=True)
        carried = added if job.shared is None else added & job.shared
        n_hidden = int(np.isin(job.loose.status, ("U", "M")).sum())
        if job.proof and carried.any() and n_hidden * len(status) <= job.proof_max_work:
            # the loose sub-table: its ranges do not depend on which margins were open
            levels = proof_levels(job.loose, np.isin(status, ("U", "M")), job.singleton,
                                  flows=job.proof_by_flows)
        return self.done(status=status, levels=levels, fast=self.fast, **kw)


def run_job(job: Job, solve: SubtableSolver, time_limit: float | None = None) -> JobResult:
    """Check, then solve one sub-table (in a worker process or in the caller).

    ``time_limit``: the solve's share (default ``job.time_limit``)."""
    run = _Run(job, solve, job.time_limit if time_limit is None else time_limit)
    if job.deadline is not None and time.time() >= job.deadline:
        return run.done(status=None, late=True)
    # the tail of the time plan: the certified heuristic's first pass, on any sub-table
    # (a few LPs for the few short primaries of a re-solve)
    run.fast = isinstance(solve, OptimalSubtableSolver) and job.fast_after is not None \
        and time.time() >= job.fast_after
    net = None if run.fast else _searched_as_network(job, solve)
    if net is not None:
        # the cut search is exact and adds nothing to a protected sub-table: its rows
        # are the check (the check's maximum flows would repeat them)
        short = None
    else:
        # (in the worker: the attacker-LP check is as parallel as the solves)
        short = unprotected(job.strict, job.singleton, run.local_deadline)
        if short is None:   # the global deadline stopped the check
            return run.done(status=None, late=True)
        if len(short) == 0:
            return run.done(status=None, skipped=True)
    try:
        # the strict and the loose sub-table share their relations, so their network
        return run.solved(run.call(job.strict, job.cost, short, net))
    except InfeasibleRulesError:
        pass
    except TimeoutError:  # the heuristic reached the global deadline
        return run.done(status=None, late=True)
    try:
        return run.solved(run.call(job.loose, job.loose_cost, short, net), retried=True)
    except InfeasibleRulesError:
        return run.done(status=None, retried=True)
    except TimeoutError:
        return run.done(status=None, retried=True, late=True)


def _searched_as_network(job: Job, solve: SubtableSolver) -> Network | None:
    """The network of ``job``'s strict sub-table when the default solver takes it to the
    exact cut search (a network sub-table below the heuristic's size), else None."""
    if not (isinstance(solve, OptimalSubtableSolver) and solve.network):
        return None
    sub = job.strict
    n_primary = int((sub.status == "U").sum())
    if uses_heuristic(n_primary, sub.n_cells, solve.heuristic_size, solve.min_primaries):
        return None
    return Network.of(sub.relations)


def run_bin(args: tuple) -> list[JobResult]:
    """One worker's jobs of a wave, one after the other: ``(jobs, solve, wave_end)``.

    With ``wave_end`` (``time.time()`` value) every job gets an equal part of the time
    its bin has left (at most its planned share): a job that finishes early hands its
    time on, and on a loaded machine the last jobs still get their turn before the wave
    should end."""
    jobs, solve, wave_end = args
    out = []
    for i, job in enumerate(jobs):
        limit = job.time_limit
        if wave_end is not None:
            part = max(job.min_seconds, (wave_end - time.time()) / (len(jobs) - i))
            limit = part if limit is None else min(limit, part)
        out.append(run_job(job, solve, limit))
    return out


def deal(weights: list[float], workers: int) -> list[list[int]]:
    """Job indices dealt to ``workers`` bins, heaviest first to the least loaded bin
    (deterministic); each bin in index order."""
    bins: list[list[int]] = [[] for _ in range(max(1, workers))]
    load = [0.0] * len(bins)
    for i in sorted(range(len(weights)), key=lambda i: (-float(weights[i]), i)):
        b = min(range(len(bins)), key=lambda b: (load[b], b))
        bins[b].append(i)
        load[b] += float(weights[i])
    return [sorted(b) for b in bins if b]
