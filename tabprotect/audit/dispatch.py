"""Parallel dispatch: the components of a pattern are independent LPs, solved in this
process or, for large patterns, by worker processes. In this process the small
components are first bounded together, stacked (:mod:`~tabprotect.audit.batch`): in
every mode, since on components of a few cells the exact intervals of a stacked LP per
round cost less than a verdict search's witness and per-cell LPs one component at a
time (a verdict from exact bounds is the same verdict); in the verdict modes not for an
integer intruder where LP vertices can be fractional (see :func:`_stackable`)."""
from __future__ import annotations

from typing import Callable

from tabprotect.audit.batch import batched_intervals
from tabprotect.audit.component import ComponentOutcome, ComponentTask, solve_component
from tabprotect.parallel import process_map


class _ProgressRelay:
    """Counts arriving outcomes for ``progress(done, total)``."""

    def __init__(self, progress: Callable[[int, int], None] | None, total: int):
        self.progress, self.total, self.done = progress, total, 0

    def __call__(self, _index: int, _outcome) -> None:
        self.done += 1
        if self.progress is not None:
            self.progress(self.done, self.total)


def solve_components(tasks: list[ComponentTask], workers: int, min_cells: int,
                     progress: Callable[[int, int], None] | None = None,
                     stack: tuple[int, int] = (0, 0)) -> list[ComponentOutcome]:
    """The outcome of every task, in task order; worker processes when ``workers > 1``,
    there are several tasks and at least ``min_cells`` variables in all (below that a
    process pool costs more than it saves). ``stack``: ``(max_vars, max_total)``, in this
    process the components of at most ``max_vars`` variables are bounded in stacked LPs
    of at most ``max_total`` variables (see :func:`stack_intervals`)."""
    relay = _ProgressRelay(progress, len(tasks))
    sizes = [task.system.k for task in tasks]
    if workers > 1 and len(tasks) > 1 and sum(sizes) >= min_cells:
        return process_map(solve_component, tasks, workers, weights=sizes,
                           on_result=relay)
    stack_intervals(tasks, *stack)
    outcomes = []
    for k, task in enumerate(tasks):
        outcomes.append(solve_component(task))
        relay(k, outcomes[-1])
    return outcomes


def stack_intervals(tasks: list[ComponentTask], max_vars: int, max_total: int) -> None:
    """The exact intervals of the components of at most ``max_vars`` variables, from
    stacked LPs (components of similar sizes together, at most ``max_total`` variables
    per stack), put into their tasks. In the verdict modes only components with a
    primary still to decide, no candidate moves (which may certify it without an LP)
    and, for an integer intruder, integral LP vertices are stacked."""
    small = sorted((t for t in tasks if _stackable(t) and 0 < t.system.k <= max_vars),
                   key=lambda t: t.system.k)
    group: list[ComponentTask] = []
    for task in small + [None]:
        if task is None or (group and sum(t.system.k for t in group) + task.system.k
                            > max_total):
            if len(group) >= 2:
                for t, out in zip(group, batched_intervals(
                        [t.system for t in group], group[0].integer, group[0].deadline)):
                    if t.mode != "intervals" and t.system.incomplete:
                        # unfinished (out of time): the component's own verdict search
                        # reports witness values, never the infinite ends of a stack
                        t.system.incomplete.clear()
                        continue
                    t.intervals = out
            group = []
        if task is not None:
            group.append(task)


def _stackable(task: ComponentTask) -> bool:
    """Whether a small component's task takes exact intervals from a stacked LP."""
    if task.mode == "intervals":
        return True
    # an integer intruder where LP vertices can be fractional: every fractional end of
    # a stacked block takes branch and bound on the component's own model, where the
    # verdict search bounds the primaries' ends alone (on a 13^3 count table stacking
    # cost twice the LPs of the verdict search)
    if task.integer and task.fractional_vertices:
        return False
    return bool(task.primary.any()) and (task.moves is None or task.moves.nnz == 0)
