"""Parallel dispatch: the components of a pattern are independent LPs, solved in this
process or, for large patterns, by worker processes."""
from __future__ import annotations

from typing import Callable

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
                     progress: Callable[[int, int], None] | None = None
                     ) -> list[ComponentOutcome]:
    """The outcome of every task, in task order; worker processes when ``workers > 1``,
    there are several tasks and at least ``min_cells`` variables in all (below that a
    process pool costs more than it saves)."""
    relay = _ProgressRelay(progress, len(tasks))
    sizes = [task.system.k for task in tasks]
    if workers > 1 and len(tasks) > 1 and sum(sizes) >= min_cells:
        return process_map(solve_component, tasks, workers, weights=sizes,
                           on_result=relay)
    outcomes = []
    for k, task in enumerate(tasks):
        outcomes.append(solve_component(task))
        relay(k, outcomes[-1])
    return outcomes
