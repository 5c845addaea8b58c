"""The gauss method: settings, the candidate order and the main loop."""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from types import ModuleType
from typing import Callable, Literal, NamedTuple

import numpy as np

from tabprotect.model.table import Table
from tabprotect.secondary.base import MethodOutcome, register_method
from tabprotect.secondary.gauss import kernel as compiled_kernel
from tabprotect.secondary.gauss.attack import AttackStep
from tabprotect.secondary.gauss.compile import NUMBA
from tabprotect.secondary.gauss.elimination import (Elimination, add_plain_seconds,
                                                    choose_kernel, kernel_module)
from tabprotect.secondary.gauss.singletons import watched_roles
from tabprotect.secondary.gauss.swaps import swap
from tabprotect.secondary.gauss.vectors import cell_vectors
from tabprotect.secondary.gauss.widths import WidthStep
from tabprotect.secondary.prune import prune as prune_pattern


@dataclass(frozen=True)
class GaussOptions:
    """Settings of the gauss method (see :func:`gauss`)."""

    dependent: Literal["largest", "last"] = field(default="largest", metadata={
        "why": "the dependent child of each group in the cell vectors; the result does "
               "not depend on it (kept to check exactly that)"})
    kernel: Literal["auto", "compiled", "python"] = field(default="auto", metadata={
        "why": "the elimination compiled by numba (plain Python where numba cannot be "
               "imported), or the same source uncompiled (same pattern); auto: plain "
               "below python_below_cells until numba is loaded, else compiled"})
    python_below_cells: int = field(default=3_000, metadata={
        "why": "auto runs smaller tables as plain Python while numba is not loaded: "
               "numba's import and cached kernels cost a new process about 0.4 s CPU, "
               "more than the plain elimination of count tables below about 3,000 "
               "cells (3-D about 0.2 ms CPU per cell, 2-D under 0.1: "
               "benchmarks/bench_gauss_kernel.py)"})
    python_seconds: float = field(default=0.4, metadata={
        "why": "auto stops choosing plain Python once the process's plain eliminations "
               "took this long in all (numba's load): a long-lived process loads it once"})
    python_warning_cells: int = field(default=50_000, metadata={
        "why": "the plain-Python kernel warns from this many cells on: it runs many "
               "times slower than the compiled one (about a second per 10,000 cells)"})
    widths: Literal["general", "always", "never"] = field(default="general", metadata={
        "why": "the width step (protection LPs giving every primary a witness of its "
               "levels, :mod:`.widths`) before the elimination: on general tables, where "
               "the elimination alone leaves many primaries short of their levels; on "
               "product tables the audit and repair do that"})
    widths_share: float = field(default=0.7, metadata={
        "why": "share of the time limit the width step may take (the elimination, not "
               "needed when every condition has a witness, and the pruning pass get the "
               "rest; conditions left without a witness go to the audit and repair)"})
    widths_seconds: float = field(default=120.0, metadata={
        "why": "most seconds of the width step when the call has no time limit (its LPs "
               "grow with the table's linkage: the audit and repair finish what is left)"})
    prune: Literal["general", "always", "never"] = field(default="general", metadata={
        "why": "the pruning pass after the elimination (:mod:`tabprotect.secondary.prune`: "
               "secondaries no primary needs are published again, dearest first): on "
               "general tables, whose width step adds cells one condition at a time"})
    swaps: bool = field(default=True, metadata={
        "why": "the swap pass after the pruning pass (:mod:`.swaps`: a dear secondary "
               "is published again for cheaper cells, each swap proven by witnesses), "
               "wherever the pruning pass runs; within the same time"})
    attack: Literal["counts", "always", "never"] = field(default="counts", metadata={
        "why": "the attack step after the elimination (:mod:`.attack`: witnesses of every "
               "primary's levels against each single contributor, with singleton): on "
               "count tables of 3 or more dimensions without the width step, where the "
               "elimination's no-exact-disclosure leaves intervals 1.5 wide against one "
               "count-1 cell; on other count tables whose primaries have a positive lower "
               "bound (empty cells published), for the primaries whose range one way is "
               "short of their level (a count 1 at its bound 1; the elimination ignores "
               "the bound: fewer LPs and cells than every primary's, the audit judges the "
               "rest); elsewhere none was found short, the step's LPs only certify"})
    attack_max_component: int = field(default=1_000, metadata={
        "why": "the attack step leaves to the audit the primaries whose component of the "
               "pattern has more cells: each of its LPs spans the component (a 10^4-cell "
               "flat 3-D pattern is one of 2,116 cells, 0.5 s an LP, thousands of "
               "conditions), and there the elimination's pattern already meets the LP "
               "levels (sampled on 22^3)"})
    attack_together: int = field(default=8, metadata={
        "why": "the attack step's second LP of a condition (the attackers its first "
               "witness moved kept in place) takes published cells too from this many "
               "such attackers on, where the pattern holds no witness against them all: "
               "one LP over the table instead of as many per-attacker ones (on "
               "4,500-13,500-cell 3-D count tables a fifth to a third of protect()'s "
               "CPU); with fewer, the per-attacker LPs buy cheaper cells"})
    attack_share: float = field(default=0.5, metadata={
        "why": "share of the time limit the attack step may take (its LPs grow with the "
               "pattern's components; conditions it leaves go to the audit and repair)"})
    attack_seconds: float = field(default=30.0, metadata={
        "why": "most seconds of the attack step when the call has no time limit: on "
               "10^4-cell 3-D patterns, one component of thousands of cells, its LPs take "
               "longer than the audit that judges them anyway"})
    prune_seconds: float = field(default=60.0, metadata={
        "why": "most seconds of the pruning pass when the call has no time limit (with "
               "one it runs until the call's limit; what it has not tried stays "
               "suppressed, which is safe)"})


#: seconds of offers between two deadline checks (a check costs one clock read)
CHECK_SECONDS = 0.05


class EliminationRun(NamedTuple):
    """One elimination's outcome."""

    secondary: np.ndarray  # the candidates it suppressed (boolean, per cell)
    disclosed: int         # checked primaries in the span (only forced offers do that)
    timed_out: bool        # candidates were left unexamined (and suppressed)
    offers: int            # cells offered
    relations_offered: int  # relations offered (general tables; before any cell)
    relations: int          # relations of a general table (0: a product table)


def candidate_order(table: Table, cost: np.ndarray, checked: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """(cells published by force, candidates in offer order): the forced ``P`` and
    empty ``Z`` cells that are not checked; then every other cell not suppressed yet,
    most expensive first (the last we want to suppress), ties by index."""
    status = table.status
    forced = np.flatnonzero(np.isin(status, ("P", "Z")) & ~checked)
    free = np.flatnonzero(~np.isin(status, ("U", "M", "P", "Z")))
    return forced, free[np.lexsort((free, -cost[free]))]


def run_elimination(table: Table, cost: np.ndarray, vectors, checked: np.ndarray,
                    singleton: bool, deadline: float | None,
                    kernel: ModuleType = compiled_kernel, chunk: int = 4096,
                    room: int | None = None) -> EliminationRun:
    """One elimination: the ``checked`` primaries stay out of the published span (with
    ``singleton``, also out of its span with any one attacker added; see
    :mod:`.singletons`).  ``chunk``: most offers between deadline checks (the relations
    of a general table first, then the cells); ``room``: see `Elimination`.

    At the deadline the offers stop: every candidate not examined stays hidden; if the
    relations or the forced cells are not all in, the published span is not known and
    every candidate stays hidden."""
    cells, roles = watched_roles(table, checked, singleton)
    watched = np.zeros(table.n_cells, bool)
    watched[cells] = True
    elim = Elimination(vectors.n_keys, vectors.csr(cells), room, roles, kernel)
    forced_idx, order = candidate_order(table, cost, checked)
    offered = np.concatenate([forced_idx, order])
    published = np.ones(len(offered), np.int8)
    rows = vectors.forced_csr()  # general tables: the relations are public
    n_rel = len(rows[0]) - 1
    n_rows = 0
    if n_rel:
        n_rows = _offer_chunks(elim, rows, np.ones(n_rel, bool), np.zeros(n_rel, np.int8),
                               deadline, chunk)
    n = 0
    if n_rows == n_rel:
        force = np.zeros(len(offered), bool)
        force[:len(forced_idx)] = True
        n = _offer_chunks(elim, vectors.csr(offered), force, published, deadline, chunk)
    timed_out = n_rows < n_rel or n < len(offered)
    if timed_out:
        # not examined in time: kept hidden (safe); if the forced cells are not all
        # in, the published span is not known: every candidate stays hidden
        published[max(n, len(forced_idx)):] = 0
    secondary = np.zeros(table.n_cells, dtype=bool)
    secondary[order[published[len(forced_idx):] == 0]] = True
    return EliminationRun(secondary, elim.disclosed, timed_out, n, n_rows, n_rel)


def _offer_chunks(elim: Elimination, csr: tuple, force: np.ndarray,
                  published: np.ndarray, deadline: float | None, chunk: int) -> int:
    """Offer the CSR's vectors in order until the deadline; returns how many were
    offered.  With a deadline, the offers between two checks adapt to take about
    ``CHECK_SECONDS`` (one offer's cost grows with the fill-in); at most ``chunk``."""
    ptr, keys, vals = csr
    total = len(ptr) - 1
    step = chunk if deadline is None else min(chunk, 16)
    n = 0
    while n < total:
        t0 = time.perf_counter()
        if deadline is not None and t0 > deadline:
            break
        hi = min(n + step, total)
        elim.offer_range(ptr, keys, vals, force, n, hi, published)
        n = hi
        took = time.perf_counter() - t0
        if took < CHECK_SECONDS / 2:
            step = min(chunk, 2 * step)
        elif took > 2 * CHECK_SECONDS:
            step = max(1, step // 2)
    return n


@register_method("gauss", options=GaussOptions, needs_product_structure=False,
                 handles_singletons=True, proves_optimality=False)
def gauss(table: Table, cost: np.ndarray, *, time_limit: float | None = None,
          progress: Callable[[str, float], None] | None = None, singleton: bool = True,
          dependent: str = "largest", kernel: str = "auto",
          python_below_cells: int = 3_000, python_seconds: float = 0.4,
          python_warning_cells: int = 50_000,
          widths: str = "general", widths_share: float = 0.7, widths_seconds: float = 120.0,
          prune: str = "general", swaps: bool = True,
          prune_seconds: float = 60.0, attack: str = "counts",
          attack_max_component: int = 1_000, attack_together: int = 8,
          attack_share: float = 0.5, attack_seconds: float = 30.0) -> MethodOutcome:
    """Suppress the cheapest cells that keep every primary out of the published span.

    Parameters
    ----------
    cost : suppression cost; candidates are published in decreasing cost order
    singleton : also keep every primary out of reach of the single contributor of any
        suppressed single-contributor cell (see :mod:`.singletons`)
    time_limit : the offers stop at it (checked about every 0.05 s); cells not
        examined in time stay suppressed (safe, not minimal), all of them when a general
        table's relations are not all in; ``solver_status`` is then ``"time_limit"``
        and ``details`` count the relations and cells offered
    widths, widths_share, widths_seconds : the width step before the elimination (see
        :class:`GaussOptions` and :mod:`.widths`): on general tables by default, so that
        the pattern meets the protection levels too, not only no exact disclosure
    attack, attack_max_component, attack_together, attack_share, attack_seconds : the
        attack step after the elimination (see :class:`GaussOptions` and
        :mod:`.attack`): with ``singleton`` on count tables by default, so that the
        pattern meets the levels against each single contributor
    prune, swaps, prune_seconds : the pruning pass after the elimination and the swap
        pass after it (see :class:`GaussOptions`); they run until the time limit
    dependent, kernel, python_below_cells, python_seconds, python_warning_cells : see
        :class:`GaussOptions`; ``details["kernel"]`` says which kernel ran

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> r = Hierarchy.flat(["1", "2"], total="T"); c = Hierarchy.flat(["a", "b"], total="T")
    >>> t = Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2],
    ...                       status=list("SSSSUSSSS"))
    >>> out = gauss(t, t.value.copy())
    >>> sorted(np.flatnonzero(out.status == "M").tolist())
    [5, 7, 8]
    """
    start = time.perf_counter()
    deadline = None if time_limit is None else start + time_limit
    kernel = choose_kernel(kernel, table.n_cells, python_below_cells, python_seconds)
    module = kernel_module(kernel)
    compiled = kernel == "compiled" and NUMBA
    if not compiled and table.n_cells >= python_warning_cells:
        warnings.warn(f"gauss: the elimination runs as plain Python (numba "
                      f"{'not requested' if NUMBA else 'not available'}): slow on "
                      f"{table.n_cells:,} cells", RuntimeWarning, stacklevel=2)
    cost = np.asarray(cost, dtype=float)
    primary = table.status == "U"
    details: dict = {}
    status = table.status.copy()
    width_witnesses: dict = {}
    moves = None
    if widths == "always" or (widths == "general" and not table.dimensions):
        step = _width_step(table, cost, singleton, start, time_limit, widths_share,
                           widths_seconds, details)
        status[step.suppressed & ~np.isin(status, ("U", "M"))] = "M"
        width_witnesses = step.witnesses
        if progress is not None:
            progress("gauss: widths", 0.5)
    if _widths_proven(table, details):
        # every condition has a witness that holds against every single-contributor
        # attacker: no primary is in the published span, the elimination adds nothing
        run = EliminationRun(np.zeros(table.n_cells, bool), 0, False, 0, 0, 0)
        details["elimination_skipped"] = "every condition has a witness"
    else:
        run_on = table if not details else table.replace(status=status)
        t_run = time.perf_counter()
        vectors = cell_vectors(run_on, dependent, compiled)
        run = run_elimination(run_on, cost, vectors, primary, singleton, deadline, module)
        if not compiled:
            add_plain_seconds(time.perf_counter() - t_run)
    status[run.secondary] = "M"
    if singleton and (attack == "always" or (attack == "counts" and "widths_unmet" not in
                                             details and _attacked_counts(table))):
        left = attack_seconds if deadline is None else \
            attack_share * max(0.0, deadline - time.perf_counter())
        # where only the bound asks for the step (attack="counts" below three
        # dimensions), its LPs are for the primaries the bound holds back
        status, moves = _attack_step(table, status, cost, time.perf_counter() + left,
                                     attack_max_component, attack_together, details,
                                     attack == "counts" and len(table.dimensions) < 3)
    if prune == "always" or (prune == "general" and not table.dimensions):
        end = start + (prune_seconds if time_limit is None else time_limit)
        status, proofs = _prune_step(table, status, cost, singleton, width_witnesses, end,
                                     details)
        if swaps and proofs:
            status = _swap_step(table, status, cost, singleton, proofs, end, details)
    if progress is not None:
        progress("gauss", 1.0)
    details.update({"kernel": "compiled" if compiled else "python",
                    "forced_disclosures": run.disclosed, "offers": run.offers,
                    "relations_offered": run.relations_offered, "relations": run.relations,
                    "secondaries": int((status == "M").sum() - (table.status == "M").sum()),
                    "seconds": round(time.perf_counter() - start, 3)})
    timed_out = run.timed_out or details.get("widths_timed_out", False)
    return MethodOutcome(status=status,
                         solver_status="time_limit" if timed_out else "heuristic",
                         details=details, moves=moves)


def _width_step(table: Table, cost: np.ndarray, singleton: bool, start: float,
                time_limit: float | None, share: float, cap: float, details: dict):
    """Run the width step within its share of the time; record what it did."""
    seconds = cap if time_limit is None else share * time_limit
    step = WidthStep(table, cost, singleton).run(
        np.isin(table.status, ("U", "M")), deadline=start + seconds)
    details.update({"widths_added": step.added, "widths_lps": step.lps,
                    "widths_unmet": step.unmet, "widths_timed_out": step.timed_out,
                    "widths_stalls": step.stalls,
                    "widths_seconds": round(time.perf_counter() - start, 3)})
    return step


def _widths_proven(table: Table, details: dict) -> bool:
    """The width step ran and gave every condition a witness, on a magnitude table (a
    witness is a real-valued table: the integer intruder of a frequency table is not
    answered by it, and there the elimination runs as well)."""
    return ("widths_unmet" in details and details["widths_unmet"] == 0
            and not details["widths_timed_out"] and table.kind != "frequency")


def _attacked_counts(table: Table) -> bool:
    """Whether ``attack="counts"`` runs the attack step: a count table of three or more
    dimensions, or one whose primaries have a positive a-priori lower bound (a published
    empty cell makes every other count at least 1, and the elimination alone does not
    see a bound)."""
    if table.kind != "frequency":
        return False
    return len(table.dimensions) >= 3 or bool((table.lb[table.status == "U"] > 0).any())


def _attack_step(table: Table, status: np.ndarray, cost: np.ndarray, deadline: float,
                 max_component: int, together: int, details: dict,
                 bound_only: bool = False):
    """The attack step on the pattern (``bound_only``: see :class:`.AttackStep`); record
    what it did.  Returns the pattern and the step's integral witnesses (for the audit's
    integer intruder of a count table: checked there, they certify most primaries
    against most attackers without an LP)."""
    t0 = time.perf_counter()
    out = AttackStep(table, cost, max_component=max_component, bound_only=bound_only,
                     together=together).run(
        np.isin(status, ("U", "M")), deadline=deadline)
    status = status.copy()
    status[out.suppressed & ~np.isin(status, ("U", "M"))] = "M"
    details.update({"attack_added": out.added, "attack_lps": out.lps,
                    "attack_unmet": out.unmet, "attack_timed_out": out.timed_out,
                    "attack_skipped": out.skipped, "attack_moves": out.moves.shape[0],
                    "attack_seconds": round(time.perf_counter() - t0, 3)})
    return status, out.moves


def _prune_step(table: Table, status: np.ndarray, cost: np.ndarray, singleton: bool,
                witnesses: dict, deadline: float, details: dict
                ) -> tuple[np.ndarray, dict]:
    """The pruning pass on the pattern (it proves every condition on it first, and
    prunes nothing when one has no witness); record what it did.  Returns the pattern
    and its witnesses (empty when it proved nothing)."""
    if time.perf_counter() > deadline:
        details["prune_skipped"] = "deadline"
        return status, {}
    t0 = time.perf_counter()
    out = prune_pattern(table, status, cost, singleton=singleton, deadline=deadline,
                        witnesses=witnesses)
    details.update({"pruned": out.pruned, "prune_tried": out.tried, "prune_lps": out.lps,
                    "prune_timed_out": out.timed_out,
                    "prune_seconds": round(time.perf_counter() - t0, 3)})
    if out.skipped:
        details["prune_skipped"] = out.skipped
    return out.status, out.witnesses


def _swap_step(table: Table, status: np.ndarray, cost: np.ndarray, singleton: bool,
               witnesses: dict, deadline: float, details: dict) -> np.ndarray:
    """The swap pass on the pruned pattern, whose ``witnesses`` prove every condition;
    record what it did."""
    if time.perf_counter() > deadline:
        return status
    t0 = time.perf_counter()
    out = swap(table, status, cost, witnesses, singleton=singleton, deadline=deadline)
    details.update({"swapped": out.swapped, "swap_added": out.added,
                    "swap_tried": out.tried, "swap_lps": out.lps,
                    "swap_timed_out": out.timed_out,
                    "swap_seconds": round(time.perf_counter() - t0, 3)})
    return out.status
