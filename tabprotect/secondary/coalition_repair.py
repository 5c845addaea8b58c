"""Repair against coalitions of contributors (``protect(..., coalition=n)``).

The coalition attacker (:mod:`tabprotect.audit.contributors`) knows, for each cell it
holds members of, the cell's value (all of its contributors) or a lower bound (the
largest contributions its members can hold).  In the attacker LPs of
:mod:`tabprotect.secondary.attacker_oracle` a cell's deviation range is ``[-down, up]``; the
coalition's knowledge narrows it to ``[lower - a, upper - a]``.  For every short primary
and every maximal coalition of its component of the pattern that holds none of its
contributors, the greedy repair then adds the cells that let the primary move as far
as its requirement asks within that coalition's polytope.

The coalitions are those of the audit (same enumeration, same limit), taken over the
components of the whole pattern: a superset of the audit's attackers, whose components
leave out the cells the intruder derives anyway.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from tabprotect.audit.contributors import Attacker, Contributions, coalitions
from tabprotect.errors import InputError
from tabprotect.model.relations import linked_components
from tabprotect.model.table import Table
from tabprotect.secondary.attack_requirements import Requirements
from tabprotect.secondary.attacker_oracle import AttackerOracle
from tabprotect.secondary.repair import GreedyRepair


def check_coalition(table: Table, coalition, singleton: bool) -> int | None:
    """``coalition`` checked for protect(): None, or an integer >= 2 whose largest
    contributions the table carries.  A bad value is an :class:`InputError` naming it."""
    if coalition is None:
        return None
    if isinstance(coalition, bool) or not isinstance(coalition, (int, np.integer)) \
            or coalition < 2:
        raise InputError(f"coalition must be an integer >= 2 (contributors pooling their "
                         f"data), not {coalition!r}")
    if not singleton:
        raise InputError("coalition includes the single contributors: it needs "
                         "singleton=True")
    freq = table.freq[np.isfinite(table.freq)]
    need = int(min(coalition, freq.max() - 1)) if len(freq) else 0
    if table.kind != "frequency" and need > 0 and (
            table.top is None or table.top.shape[1] < need):
        raise InputError(f"coalition={coalition} needs the {need} largest contributions "
                         f"of each cell (a 'top' column per contributor up to the "
                         f"coalition size)")
    return int(coalition)


def coalition_round(table: Table, req: Requirements, cost: np.ndarray,
                    cand: np.ndarray, suppressed: np.ndarray, shortfalls: np.ndarray,
                    size: int, limit: int, deadline: float | None) -> np.ndarray:
    """The pattern ``suppressed`` extended until no coalition of up to ``size``
    contributors narrows a primary of ``shortfalls`` below its requirement (as far as
    the candidates ``cand`` allow and the deadline lets it run)."""
    mask = np.asarray(suppressed, bool).copy()
    short = np.zeros(table.n_cells, bool)
    short[shortfalls] = True
    for comp in linked_components(table.relations, mask):
        if not short[comp].any():
            continue
        for attacker in coalitions(_contributions(table, comp), size,
                                   table.status[comp] == "U", limit):
            members = comp[attacker.members]
            targets = comp[short[comp] & ~np.isin(comp, members)]
            if len(targets) == 0:
                continue
            rq = knowing(req, table.value, comp, attacker)
            oracle = AttackerOracle(table, rq)
            if oracle.check(mask, cuts=False, primaries=targets, deadline=deadline).ok:
                continue
            rep = GreedyRepair(table, rq, cost, cand & ~mask, oracle=oracle)
            mask, _ = rep.run(mask, primaries=targets, deadline=deadline)
    return mask


def knowing(req: Requirements, value: np.ndarray, comp: np.ndarray,
            attacker: Attacker) -> Requirements:
    """The requirements with the deviation ranges the attacker leaves: its knowledge
    of the cells it holds members of (local indices of ``comp``) narrows their ranges;
    no single-contributor attackers besides (the coalition includes them)."""
    k = attacker.knowledge
    cells = comp[k.index]
    a = value[cells]
    up, down = req.up.copy(), req.down.copy()
    up[cells] = np.minimum(up[cells], np.maximum(k.upper - a, 0.0))
    down[cells] = np.minimum(down[cells], np.maximum(a - k.lower, 0.0))
    return dataclasses.replace(req, up=up, down=down,
                               singleton=np.zeros(len(req.singleton), bool))


def _contributions(table: Table, comp: np.ndarray) -> Contributions:
    return Contributions(freq=table.freq[comp], value=table.value[comp].astype(float),
                         lb=table.lb[comp], ub=table.ub[comp],
                         top=None if table.top is None else table.top[comp],
                         counts=table.kind == "frequency",
                         names=[table.cell_name(int(c)) for c in comp])
