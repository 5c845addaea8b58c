"""Attackers among the contributors: single contributors and coalitions.

Each respondent contributes to one cell; a coalition of respondents pools its members'
own contributions. For every suppressed cell ``c`` with ``m_c`` of its ``freq_c``
contributors in the coalition, the coalition knows

* ``x_c`` exactly when ``m_c == freq_c`` (it holds every contribution), and otherwise
* ``x_c >= s_c``, the sum of its members' contributions: at most the ``m_c`` largest
  contributions (``top``) of a magnitude cell, ``m_c`` records of a count cell
  (contributions are non-negative; a cell whose a-priori lower bound is negative gives
  no such bound).

A single contributor (``singleton=True``) is the coalition of one member in a cell with
``freq == 1``; where cells hold the same single record (a total with one contributor
and the one cell of its sum that has it, :mod:`tabprotect.records`), that contributor
is one attacker who knows all of them, and none of them is a target of theirs. Knowing more only narrows the attacker's polytope, so it suffices to
judge the *maximal* coalitions: ``n`` members spread over the component's suppressed
cells (all of them when fewer contributors are there). A primary is judged against
every coalition with no member in it (members of the primary itself are the concern of
its sensitivity rule and protection levels), each on the coalition's own interval: the
intersection of different coalitions' intervals is no coalition's knowledge.
"""
from __future__ import annotations

import dataclasses
import itertools
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator, Sequence

import numpy as np

from tabprotect.audit_result import meets_requirement
from tabprotect.audit.moves import absorb_moves, move_points
from tabprotect.audit.system import Knowledge
from tabprotect.audit.verdict import verdict_bounds
from tabprotect.errors import InputError

if TYPE_CHECKING:
    from tabprotect.audit.component import ComponentTask


@dataclass
class Attacker:
    """One attacker among the contributors of a component (local variable indices)."""

    knowledge: Knowledge
    members: np.ndarray   # cells holding its members: never its targets


@dataclass
class Contributions:
    """What the contributors of one component's cells contributed (local order)."""

    freq: np.ndarray            # contributors per cell (nan: unknown)
    value: np.ndarray
    lb: np.ndarray
    ub: np.ndarray
    top: np.ndarray | None      # largest contributions, descending (magnitude tables)
    counts: bool                # a frequency table: every contribution is one record
    names: Sequence[str]        # cell names by local index, for errors
    record: np.ndarray | None = None   # class of the single record a cell holds (-1:
    #                                    none; None: each freq-1 cell its own record)

    def partial_sum(self, c: int, m: int) -> float | None:
        """The most ``m`` of cell ``c``'s contributors can hold together (``m <
        freq``), or None when no lower bound follows."""
        if self.lb[c] < 0:
            return None
        if self.counts:
            return min(float(m), float(self.value[c]))
        if self.top is None or self.top.shape[1] < m:
            raise InputError(
                f"audit: the coalition attacker needs the {m} largest contributions of "
                f"cell {self.names[c]} (a 'top' column per contributor up to the "
                f"coalition size)")
        return min(float(np.sum(self.top[c, :m])), float(self.value[c]))


def single_contributors(contrib: Contributions) -> list[Attacker]:
    """The contributor of each cell with ``freq == 1``, who knows that cell and every
    cell holding the same record (``contrib.record``; all of them are their members)."""
    single = np.flatnonzero(contrib.freq == 1)
    if contrib.record is None:
        return [Attacker(Knowledge.exact(s, contrib.value[s]), np.array([s]))
                for s in single]
    labels = contrib.record[single]
    out = []
    for label in np.unique(labels):
        cells = single[labels == label] if label >= 0 else None
        for group in ([cells] if cells is not None else
                      [np.array([s]) for s in single[labels < 0]]):
            out.append(Attacker(Knowledge.exact(group, contrib.value[group]), group))
    return out


def coalitions(contrib: Contributions, size: int, primary: np.ndarray,
               limit: int) -> list[Attacker]:
    """The maximal coalitions of ``size`` contributors over the component's cells (see
    the module docstring); at most ``limit`` of them, else an InputError."""
    cells = np.flatnonzero(np.isfinite(contrib.freq) & (contrib.freq >= 1))
    caps = contrib.freq[cells].astype(np.int64)
    total = int(caps.sum())
    spreads = list(_spreads(caps, min(size, total), limit, contrib, cells))
    # a primary whose coalition must stay out of it, where the other cells hold fewer
    # than ``size`` contributors: every other contribution of the component
    for p in np.flatnonzero(primary[cells]):
        if total - caps[p] < size and total - caps[p] > 0:
            others = caps.copy()
            others[p] = 0
            spreads.append(others)
    seen, out = set(), []
    for spread in spreads:
        key = spread.tobytes()
        if key not in seen:
            seen.add(key)
            out.append(_attacker(contrib, cells, spread))
    if len(out) > limit:
        _too_many(contrib, cells, size, limit)
    return out


def _spreads(caps: np.ndarray, members: int, limit: int, contrib, cells
             ) -> Iterator[np.ndarray]:
    """Every way to place ``members`` contributors in cells of these capacities (each
    multiset of cells once)."""
    count = 0
    for chosen in itertools.combinations_with_replacement(range(len(caps)), members):
        spread = np.bincount(np.array(chosen, dtype=np.int64), minlength=len(caps))
        if (spread > caps).any():
            continue
        count += 1
        if count > limit:
            _too_many(contrib, cells, members, limit)
        yield spread


def _too_many(contrib: Contributions, cells: np.ndarray, size: int, limit: int):
    raise InputError(
        f"audit: more than {limit} coalitions of {size} contributors in the component "
        f"around cell {contrib.names[int(cells[0])]} (AuditSettings.max_coalitions); audit "
        f"a smaller coalition or raise the limit")


def _attacker(contrib: Contributions, cells: np.ndarray, spread: np.ndarray) -> Attacker:
    held = np.flatnonzero(spread)
    index, lower, upper = [], [], []
    for h in held:
        c, m = int(cells[h]), int(spread[h])
        if m >= contrib.freq[c]:
            index.append(c), lower.append(contrib.value[c]), upper.append(contrib.value[c])
            continue
        s = contrib.partial_sum(c, m)
        if s is not None:
            index.append(c), lower.append(s), upper.append(contrib.ub[c])
    members = cells[held]
    partners = _record_partners(contrib, members)
    for c in partners:      # a member's own record in other cells: known exactly
        index.append(c), lower.append(contrib.value[c]), upper.append(contrib.value[c])
    order = np.argsort(np.array(index, dtype=np.int64), kind="stable")
    knowledge = Knowledge(np.array(index, dtype=np.int64)[order],
                          np.array(lower, dtype=float)[order],
                          np.array(upper, dtype=float)[order])
    return Attacker(knowledge, np.union1d(members, partners).astype(np.int64))


def _record_partners(contrib: Contributions, members: np.ndarray) -> np.ndarray:
    """The cells outside ``members`` holding the same single record as a member's
    single-contributor cell (none without ``contrib.record``)."""
    if contrib.record is None:
        return np.zeros(0, np.int64)
    labels = contrib.record[members]
    labels = labels[labels >= 0]
    if len(labels) == 0:
        return np.zeros(0, np.int64)
    same = np.flatnonzero(np.isin(contrib.record, labels))
    return np.setdiff1d(same, members).astype(np.int64)


def attacked_primaries(task: "ComponentTask", counters: dict,
                       outside: tuple[np.ndarray, np.ndarray] | None = None,
                       reach: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """Mask of the component's primaries that some attacker among the contributors
    narrows below their requirement (all False without such attackers).

    ``outside``: limits the outside intruder's interval ends cannot pass. An
    attacker's interval lies inside the intruder's, so a primary those limits already
    prove short is short against every attacker of it, without an LP.

    A primary an attacker's pass leaves unfinished (its time limit, or
    ``AuditSettings.attacker_seconds``, came first) is undecided: not attacked, but
    added to ``system.incomplete``, so it is never passed either.

    ``reach``: the values the outside intruder's witnesses reach. A screen counts a
    primary they leave short as uncertified whatever the attackers' passes find (an
    attacker's interval lies inside the intruder's), so in a screen no attacker pass
    takes it."""
    system = task.system
    task = _with_attacker_budget(task)
    attacked = np.zeros(system.k, dtype=bool)
    targets_all = np.flatnonzero(task.primary)
    if outside is not None:
        proven = ~meets_requirement(outside[0][targets_all], outside[1][targets_all],
                                    task.req_lo[targets_all], task.req_hi[targets_all],
                                    task.req_w[targets_all], system.value[targets_all])
    else:
        proven = np.zeros(len(targets_all), dtype=bool)
    if reach is not None and task.mode == "screen":
        keep = proven | meets_requirement(
            reach[0][targets_all], reach[1][targets_all], task.req_lo[targets_all],
            task.req_hi[targets_all], task.req_w[targets_all], system.value[targets_all])
        targets_all, proven = targets_all[keep], proven[keep]
    attackers = task.attackers or []
    targets_of = []
    for attacker in attackers:
        aimed = ~np.isin(targets_all, attacker.members)
        attacked[targets_all[aimed & proven]] = True
        targets_of.append(targets_all[aimed & ~proven])
    # the outside intruder's unfinished cells stay unfinished, whatever an attacker's
    # pass settles
    unfinished = set(system.incomplete)
    if task.moves is not None and task.moves.nnz:
        targets_of = _left_by_moves(task, attackers, targets_of)
    if task.fractional_vertices and task.settings.attacker_move_lps and attackers:
        # (where every vertex is integral, the attackers' own aggregate LPs certify
        # many primaries each, and the least moves cost more LPs than they spare)
        from tabprotect.audit.attack_moves import move_passes
        targets_of = move_passes(task, attackers, targets_of, counters)
    least = task.settings.attacker_group_min
    if least and len(attackers) >= max(2, least):
        from tabprotect.audit.attack_groups import group_passes
        targets_of = group_passes(task, attackers, targets_of, counters)
    undecided = _own_passes(task, attackers, targets_of, attacked, counters)
    system.incomplete.clear()
    system.incomplete |= unfinished | set(np.flatnonzero(undecided & ~attacked).tolist())
    return attacked


def _left_by_moves(task: "ComponentTask", attackers: list[Attacker],
                   targets_of: list[np.ndarray]) -> list[np.ndarray]:
    """The targets of each attacker that the checked candidate moves (``task.moves``)
    do not certify against it: a move that keeps what the attacker knows (it leaves
    the cells it knows exactly alone, and is shrunk into its bounds) is a feasible
    table for that attacker. No LP: the passes after this take only the rest."""
    system = task.system
    shared = _SharedReach(task)
    out = []
    for attacker, targets in zip(attackers, targets_of):
        if len(targets) == 0:
            out.append(targets)
            continue
        fixed = attacker.knowledge
        if len(fixed.known) == len(fixed.index):
            lo, hi = shared.without(fixed.known)
        else:
            lb, ub = system.bounds(fixed)
            lo, hi = system.value.copy(), system.value.copy()
            frozen = np.zeros(system.k, dtype=bool)
            frozen[fixed.known] = True
            absorb_moves(task.moves, system.value, lb, ub, lo, hi, task.integer, frozen)
        ok = meets_requirement(lo[targets], hi[targets], task.req_lo[targets],
                               task.req_hi[targets], task.req_w[targets],
                               system.value[targets])
        out.append(targets[~ok])
    return out


class _SharedReach:
    """The moves' points with no cell known, for the attackers who know only exact
    values: such an attacker's bounds differ from the a-priori ones only at the cells
    it knows, and the moves touching those are the ones it drops, so its reach is the
    shared one recomputed at the cells those moves touch."""

    def __init__(self, task: "ComponentTask"):
        system = task.system
        self.value = system.value
        self.moves_csc = task.moves.tocsc()
        lb, ub = system.bounds(None)
        row, col, point = move_points(task.moves, system.value, lb, ub, task.integer,
                                      np.zeros(system.k, dtype=bool))
        self.row, self.col, self.point = row, col, point
        self.lo, self.hi = self.value.copy(), self.value.copy()
        np.minimum.at(self.lo, self.col, self.point)
        np.maximum.at(self.hi, self.col, self.point)

    def without(self, known: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Lowest and highest values the moves that leave ``known`` alone reach."""
        lo, hi = self.lo.copy(), self.hi.copy()
        csc = self.moves_csc
        dropped = np.unique(np.concatenate(
            [csc.indices[csc.indptr[c]:csc.indptr[c + 1]] for c in known] or [[]])
        ).astype(np.int64)
        if len(dropped) == 0:
            return lo, hi
        hit = np.isin(self.row, dropped)
        if not hit.any():
            return lo, hi    # the dropped moves reach nothing
        cells = np.zeros(len(lo), dtype=bool)
        cells[self.col[hit]] = True
        lo[cells], hi[cells] = self.value[cells], self.value[cells]
        keep = cells[self.col] & ~hit
        np.minimum.at(lo, self.col[keep], self.point[keep])
        np.maximum.at(hi, self.col[keep], self.point[keep])
        return lo, hi


def _with_attacker_budget(task: "ComponentTask") -> "ComponentTask":
    """The task with its deadline cut to ``AuditSettings.attacker_seconds`` from now."""
    budget = task.settings.attacker_seconds
    if budget is None:
        return task
    end = time.time() + budget
    return dataclasses.replace(task, deadline=end if task.deadline is None
                               else min(end, task.deadline))


def _own_passes(task: "ComponentTask", attackers: list[Attacker],
                targets_of: list[np.ndarray], attacked: np.ndarray, counters: dict
                ) -> np.ndarray:
    """Each attacker's own pass over its open targets: sets ``attacked`` where the pass
    proves a shortfall; returns the mask of targets some pass left unfinished."""
    system = task.system
    undecided = np.zeros(system.k, dtype=bool)
    for attacker, targets in zip(attackers, targets_of):
        # a primary one attacker narrows too far is attacked, whatever the others find
        targets = targets[~attacked[targets]]
        if len(targets) == 0:
            continue
        # the pass reports the targets it leaves unfinished in ``system.incomplete``
        system.incomplete.clear()
        lo, hi = _attacker_interval(task, targets, counters, attacker.knowledge)
        short = ~meets_requirement(
            lo, hi, task.req_lo[targets], task.req_hi[targets], task.req_w[targets],
            system.value[targets])
        # this attacker's own verdict (its witnesses certify, or its exact / outer
        # bounds prove the shortfall); a short end it did not finish proves nothing
        open_ = np.isin(targets, np.fromiter(system.incomplete, dtype=np.int64,
                                             count=len(system.incomplete)))
        attacked[targets[short & ~open_]] = True
        undecided[targets[short & open_]] = True
    return undecided


def _attacker_interval(task: "ComponentTask", targets, counters, knowledge):
    """Witness bounds of the attacker's interval of each target, exact where they
    decide: the verdict search (:func:`~tabprotect.audit.verdict.verdict_bounds`) in
    every mode, since an attacker is only judged (its intervals are never reported),
    and witnesses of the passes before it spare most of its LPs."""
    state = verdict_bounds(task.system, task, targets, counters, knowledge)
    return state.lo[targets], state.hi[targets]
