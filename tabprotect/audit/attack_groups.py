"""Attackers judged in groups before each attacker's own pass.

Knowing more only narrows an interval: a feasible table that keeps what several
attackers know *together* is a feasible table for each of them. So one aggregate
witness pass (:func:`~tabprotect.audit.aggregate.aggregate_rounds`) against a group of
attackers at once -- all their bounds in the component's aggregate model -- certifies
each primary it pushes far enough against every member of the group, where the
per-attacker passes pay those LPs once per attacker.

The same holds for an integer intruder: what a group knows is only more bounds on the
same variables, so every integral table within the group's bounds is an integral table
within each member's, and a group's integral witness certifies a primary against every
member. A group's *bounds* are not its members' in general -- two attackers may pin
together a primary that either leaves free alone (``tests/test_audit_attack_groups.py``
shows one, by enumeration of the integral tables) -- so a group pass never proves a
shortfall: what it leaves open, each member's own pass decides, and the verdict is the
one separate passes give.

Attackers that share a relation are put in different groups (a greedy colouring of the
attackers by shared relations): two attackers next to each other may block a primary's
moves together that each leaves open alone, while far apart they seldom do. The
witnesses of the group passes are kept for the members' own passes, which then take
only what the groups left uncertified and decide it exactly.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from tabprotect.audit_result import meets_requirement
from tabprotect.audit.aggregate import aggregate_rounds
from tabprotect.audit.system import Knowledge, ReducedSystem, out_of_time
from tabprotect.audit.integer import INTEGRAL, branch_and_bound
from tabprotect.audit.verdict import goal_of
from tabprotect.audit.witness import VerdictState

if TYPE_CHECKING:
    from tabprotect.audit.component import ComponentTask
    from tabprotect.audit.contributors import Attacker


def pending_targets(k: int, targets_of: list[np.ndarray]) -> np.ndarray:
    """Per attacker (row) the cells of a component of ``k`` cells it still attacks."""
    pending = np.zeros((len(targets_of), k), dtype=bool)
    for a, targets in enumerate(targets_of):
        pending[a, targets] = True
    return pending


def group_passes(task: "ComponentTask", attackers: list["Attacker"],
                 targets_of: list[np.ndarray], counters: dict) -> list[np.ndarray]:
    """The targets each attacker's own pass still has to judge after the group passes
    (``targets_of[a]``: the primaries attacker ``a`` attacks)."""
    system = task.system
    pending = pending_targets(system.k, targets_of)
    for group in colour_groups(system, attackers):
        if len(group) < 2 or out_of_time(task.deadline):
            continue
        fixed = together([attackers[a].knowledge for a in group])
        aimed = pending[group].any(axis=0)
        aimed[fixed.index] = False
        targets = np.flatnonzero(aimed)
        if len(targets) == 0:
            continue
        per_cell = len(group) >= task.settings.attacker_group_cell_lps
        ok = _certified(task, targets, fixed, counters, per_cell)
        counters["attacker_groups"] += 1
        pending[np.ix_(group, targets[ok])] = False
    return [np.flatnonzero(row) for row in pending]


def _certified(task: "ComponentTask", targets: np.ndarray, fixed: Knowledge,
               counters: dict, per_cell: bool) -> np.ndarray:
    """Which of ``targets`` the aggregate witnesses of the attackers who know ``fixed``
    together (and the kept witnesses that respect it) certify, followed by per-cell LPs
    with ``per_cell``."""
    system = task.system
    state = VerdictState(system, task, targets, counters, fixed)
    state.absorb_all(system.bank.usable(system.value, fixed))
    aggregate_rounds(state, task.settings.aggregate_rounds)
    if per_cell and not (task.mode == "screen"
                         and system.k >= task.settings.local_min_vars):
        # per-cell LPs for the rest (a screen skips them on large components); what
        # they leave open is the members' own passes' business
        system.fix(fixed)
        try:
            _cell_witnesses(state)
        finally:
            system.unfix(fixed)
    return meets_requirement(state.lo[targets], state.hi[targets], task.req_lo[targets],
                             task.req_hi[targets], task.req_w[targets],
                             system.value[targets])


def _cell_witnesses(state: VerdictState) -> None:
    """Per-cell LPs towards each target's requirement against the group; each solution
    (for an integer intruder: an integral table reaching the goal, by branch and bound
    on the warm model only) is a witness. No exact bound: a group's bound proves
    nothing about its members."""
    system, task = state.system, state.task
    for sense in ("max", "min"):
        for j in np.flatnonzero(state.want & ~state.satisfied()):
            if out_of_time(task.deadline):
                return
            if not (state.needs_hi(j) if sense == "max" else state.needs_lo(j)):
                continue
            status, x = system.solve([j], [1.0], sense, state.fixed, state.counters)
            if status != "optimal" or x is None:
                continue
            if task.integer and np.abs(x - np.round(x)).max() > INTEGRAL:
                found, x = branch_and_bound(system, int(j), sense, state.fixed,
                                            state.counters, system.integer_nodes,
                                            goal=goal_of(state, int(j), sense))
                if found != "found":
                    continue
            state.absorb(x)


def colour_groups(system: ReducedSystem, attackers: list["Attacker"]
                  ) -> list[np.ndarray]:
    """The attackers in groups none of which holds two attackers whose cells share a
    relation (greedy colouring, attackers with the most neighbours first)."""
    n = len(attackers)
    rows = [system.rows_of(a.knowledge.index) for a in attackers]
    by_row: dict[int, list[int]] = {}
    for a, rs in enumerate(rows):
        for r in rs.tolist():
            by_row.setdefault(r, []).append(a)
    neighbours = [set() for _ in range(n)]
    for members in by_row.values():
        for a in members:
            neighbours[a].update(members)
    for a in range(n):
        neighbours[a].discard(a)
    colour = np.full(n, -1)
    for a in sorted(range(n), key=lambda a: -len(neighbours[a])):
        taken = {int(colour[b]) for b in neighbours[a]}
        c = 0
        while c in taken:
            c += 1
        colour[a] = c
    return [np.flatnonzero(colour == c) for c in range(int(colour.max()) + 1)] if n else []


def together(knowledge: list[Knowledge]) -> Knowledge:
    """What attackers know together: every bound any of them knows."""
    if len(knowledge) == 1:
        return knowledge[0]
    index = np.concatenate([kn.index for kn in knowledge])
    cells, inverse = np.unique(index, return_inverse=True)
    lo = np.full(len(cells), -np.inf)
    hi = np.full(len(cells), np.inf)
    np.maximum.at(lo, inverse, np.concatenate([kn.lower for kn in knowledge]))
    np.minimum.at(hi, inverse, np.concatenate([kn.upper for kn in knowledge]))
    return Knowledge(cells, lo, hi)
