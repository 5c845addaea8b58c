"""Single-contributor attackers: the contributor of a suppressed cell with ``freq == 1``
knows that cell's value exactly. Each such attacker's interval of every other primary of
the component is computed (or, in the verdict modes, decided) with that cell fixed, and
the primary must meet its requirement against each attacker separately: the
intersection of different attackers' intervals is no attacker's knowledge.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from tabprotect.audit_result import meets_requirement
from tabprotect.audit.intervals import exact_intervals
from tabprotect.audit.verdict import verdict_bounds

if TYPE_CHECKING:
    from tabprotect.audit.component import ComponentTask


def attacked_primaries(task: "ComponentTask", counters: dict) -> np.ndarray:
    """Mask of the component's primaries that some single contributor narrows below
    their requirement (all False unless the task carries contributor counts)."""
    system = task.system
    attacked = np.zeros(system.k, dtype=bool)
    if task.freq is None:
        return attacked
    targets_all = np.flatnonzero(task.primary)
    for s in np.flatnonzero(task.freq == 1):
        targets = targets_all[targets_all != s]
        if len(targets) == 0:
            continue
        fixed = {int(s): float(system.value[s])}
        lo, hi = _attacker_interval(task, targets, counters, fixed)
        # this attacker's own verdict (verdict modes: its witnesses certify, or its
        # exact / outer bounds prove the shortfall)
        attacked[targets] |= ~meets_requirement(
            lo, hi, task.req_lo[targets], task.req_hi[targets], task.req_w[targets],
            system.value[targets])
    return attacked


def _attacker_interval(task: "ComponentTask", targets, counters, fixed):
    """The attacker's interval of each target (witness bounds in the verdict modes)."""
    if task.mode in ("verdict", "screen"):
        state = verdict_bounds(task.system, task, targets, counters, fixed)
        return state.lo[targets], state.hi[targets]
    return exact_intervals(task.system, targets, task.integer, counters, task.deadline,
                           fixed)
