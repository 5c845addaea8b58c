"""protect()'s audit-and-repair loop: the passes before the first audit (large
tables), then audit, repair what falls short, audit again -- until the audit passes,
the rounds or the budget run out, or no cell can be added.  Nothing is reported safe
that has not passed the audit."""
from __future__ import annotations

import time
from typing import Callable

import numpy as np
import scipy.sparse as sp

from tabprotect.audit import AuditResult, AuditSettings, audit
from tabprotect.budget import Budget
from tabprotect.model.relations import linked_components
from tabprotect.model.table import Table
from tabprotect.results import PrimaryCountNote
from tabprotect.secondary.attack_repair import attack_round, decide
from tabprotect.secondary.coalition_repair import coalition_round
from tabprotect.secondary.cubes import _move_matrix
from tabprotect.secondary.feasibility import SingletonCheck, refuse
from tabprotect.secondary.milp_repair import MilpRepair
from tabprotect.secondary.protect_settings import ProtectSettings
from tabprotect.secondary.attack_requirements import Requirements
from tabprotect.secondary.repair import GreedyRepair

#: methods whose patterns only avoid exact disclosure (no interval protection): on large
#: product tables protect() gives their primaries cubes before the first audit, so the
#: audit does not have to prove tens of thousands of shortfalls one by one
INTERVAL_BLIND_METHODS = ("gauss",)


class StageClock:
    """Wall-clock seconds per stage, in order: each call closes the stage that ran since
    the previous call."""

    def __init__(self, stages: dict[str, float]):
        self.stages = stages
        self.lap = time.perf_counter()

    def __call__(self, name: str) -> None:
        now = time.perf_counter()
        self.stages[name] = self.stages.get(name, 0.0) + now - self.lap
        self.lap = now


class MoveStack:
    """The cubes and deviations found so far, handed to the audit as candidate moves (it
    checks each one and certifies the primaries they move without an LP); stacked once
    per repair round, not once per audit."""

    def __init__(self):
        self.parts: list[sp.csr_matrix] = []
        self._stacked = 0
        self._matrix: sp.csr_matrix | None = None

    def append(self, moves: sp.csr_matrix) -> None:
        self.parts.append(moves)

    def matrix(self) -> sp.csr_matrix | None:
        if len(self.parts) != self._stacked:
            self._stacked, self._matrix = len(self.parts), sp.vstack(self.parts, format="csr")
        return self._matrix


class AuditRepair:
    """The pattern being audited and repaired, and what the loop records.

    ``screening`` (large tables in verdict mode): the repair rounds are judged by
    screening audits (certify what the witnesses can; what they cannot counts as short
    without the whole-table LPs that would prove it); a pass is a real pass, and a
    pattern that never passes the screen gets a full verdict audit at the end.

    ``verdict_first`` (intervals mode): the first audit decides only the verdict, which
    is all a repair round needs; a pattern that passes it is audited again for its
    intervals (for methods whose patterns mostly need a repair round).

    ``coalition`` (n >= 2, or 0): the audit judges coalitions of up to n contributors,
    and each repair round ends with the coalition repair
    (:mod:`~tabprotect.secondary.coalition_repair`)."""

    def __init__(self, table: Table, cost: np.ndarray, status: np.ndarray, *,
                 req: Requirements, cand: np.ndarray, settings: ProtectSettings,
                 budget: Budget, singleton: bool, mode: str, large: bool, repair: bool,
                 workers: int, progress: Callable[[str, float], None] | None,
                 notes: list[str], stage: StageClock, coalition: int = 0,
                 verdict_first: bool = False, attack_check: SingletonCheck | None = None):
        self.table, self.cost, self.req, self.cand = table, cost, req, cand
        self.attack_check = attack_check
        self.settings, self.budget, self.singleton = settings, budget, singleton
        self.mode, self.large, self.repair, self.workers = mode, large, repair, workers
        self.progress, self.notes, self.stage = progress, notes, stage
        self.coalition = coalition
        self.verdict_first = verdict_first
        self.screening = large and mode == "verdict"
        self.status = status
        self.protected_table = table.replace(status=status)
        self.repaired: list[np.ndarray] = []
        self.moves = MoveStack()
        self.rounds = 0
        self.milp_tried = np.zeros(0, np.int64)     # primaries the MILP repair took
        self.integer_tried = np.zeros(0, np.int64)  # ... with integral witnesses
        self.lp_tried = np.zeros(0, np.int64)       # primaries a round's deviation LPs took
        self._verdict_noted = False
        self.screened: AuditResult | None = None   # the screen before a cube pass
        self.reserve = 0.0      # seconds kept back for the final audit (see repair_left)
        self._first: Budget | None = None   # the first audit's share (first_limit)
        self.milp = settings.milp_repair.applies(table, singleton, large)  # MILPs first
        self._check: Budget | None = None   # the attacker round's feasibility share
        self.attack_tried = np.zeros(0, np.int64)   # primaries an attacker round took

    def left(self) -> float | None:
        return self.budget.limit(self.settings.audit_floor_seconds)

    def first_limit(self) -> float | None:
        """The first audit's time limit (with the screen before it, if any, one share):
        ``first_audit_share`` of what is left when the call repairs within a budget, so
        that a first audit slower than expected (a loaded machine) still leaves the
        witness search, the repair and the final audit their time; what it does not
        decide in time the repair takes as short and the later audits judge."""
        if not self.repair or self.budget.total is None:
            return self.left()
        if self._first is None:
            self._first = self.budget.share(self.settings.first_audit_share)
        return self._first.limit(self.settings.audit_floor_seconds)

    def repair_left(self) -> float | None:
        """What a repair stage may spend: what is left less the final audit's reserve."""
        left = self.budget.remaining()
        if left is None:
            return None
        return max(self.settings.audit_floor_seconds, left - self.reserve)

    def _repair_spent(self) -> bool:
        """Only the final audit's reserve is left: a further repair round (a repair at
        its floor, a re-audit that decides little) would take the final audit's time."""
        left = self.budget.remaining()
        return left is not None and self.rounds > 0 and \
            left - self.reserve <= self.settings.audit_floor_seconds

    def _keep_reserve(self, audit_seconds: float) -> None:
        """Keep back for the final audit about what the first audit took (at most
        ``final_audit_reserve`` of what is left): the repair's stages end earlier, so
        that the call's last audit still finishes within the budget."""
        left = self.budget.remaining()
        if left is not None:
            self.reserve = min(audit_seconds, self.settings.final_audit_reserve * left)

    def open_primaries(self, result: AuditResult) -> np.ndarray:
        """The primaries ``result`` leaves open rather than proven short: a screen's
        uncertified primaries, a verdict's undecided ones."""
        if result.mode == "screen":
            return np.asarray(result.shortfalls, dtype=np.int64)
        if result.incomplete is None:
            return np.zeros(0, np.int64)
        return np.flatnonzero(result.incomplete & (self.table.status == "U"))

    def search_witnesses(self, open_: np.ndarray, integer: bool, known: bool = False
                         ) -> np.ndarray:
        """Integral witnesses inside the pattern for the ``open_`` primaries of an
        integer audit (:mod:`~tabprotect.secondary.witness_search`), before any cell is
        added, within ``witness_search.share`` of what the repair may spend: the moves go
        to the next audit, which checks each.  Product tables; with the
        single-contributor attack, moves that leave each attacker's cells alone
        (:mod:`~tabprotect.secondary.attack_witnesses`; with ``known``, the moves found
        so far serve first, e.g. gauss's attack step's before the first audit: after an
        audit, the primaries it left open despite them are the search's), without
        coalitions.  Returns
        the primaries the moves reach by the search's own count (what the audit is
        expected to certify)."""
        ws = self.settings.witness_search
        if (not integer or not self.repair or self.coalition
                or not self.table.dimensions or ws.share <= 0 or len(open_) == 0):
            return np.zeros(0, np.int64)
        left = self.repair_left()
        deadline = None if left is None else time.perf_counter() + ws.share * left
        from tabprotect.secondary.attack_witnesses import attack_witnesses
        from tabprotect.secondary.witness_search import integral_witnesses
        if self.singleton:
            # against each attacker some move that leaves its cells alone
            out = attack_witnesses(self.protected_table, open_, deadline, settings=ws,
                                   known=self.moves.matrix() if known else None)
        else:
            out = integral_witnesses(self.protected_table, open_, deadline, settings=ws)
        self.moves.append(out.moves)
        against = " against the attackers" if self.singleton else ""
        self.notes.append(PrimaryCountNote(
            f"integral witnesses{against}: {out.moves.shape[0]} move(s) inside the "
            f"pattern ({out.milps} MILPs) reach {len(out.reached)} of {len(open_)} open "
            f"primaries"))
        self.stage("integral witnesses")
        return out.reached

    def witness_pass(self, result: AuditResult) -> AuditResult:
        """The integral witnesses for the primaries ``result`` leaves open, then the
        re-audit of those primaries when the moves reach at least
        ``witness_search.min_hit_rate`` of them (within what the repair may spend: the
        final audit's reserve stays)."""
        if result.passed:
            return result
        open_ = self.open_primaries(result)
        reached = self.search_witnesses(open_, result.integer)
        if len(reached) < max(1.0, self.settings.witness_search.min_hit_rate * len(open_)):
            # a re-audit costs about the first audit's time: worth it when the moves
            # reach a share of the open primaries (hier 36^3 under load: 5 of 2,467
            # reached, an 11.6 s re-audit, no time left for the repair); else the moves
            # wait for the audit after the repair round
            return result
        result = self.judge(previous=result, limit=self.repair_left())
        self.stage("audit 1 (witnesses)")
        return result

    def _suppress(self, cells: np.ndarray) -> None:
        """Add ``cells`` to the pattern (as repaired cells)."""
        self.repaired.append(cells)
        self.status = self.status.copy()
        self.status[cells] = "M"
        self.protected_table = self.table.replace(status=self.status)

    def judge(self, final: bool = False, previous: AuditResult | None = None,
              screen: bool = False, verdict: bool = False,
              limit: float | None = None) -> AuditResult:
        """Audit the current pattern.  Repair only adds suppressions, so what a previous
        round's audit found protected stays protected: that audit is passed on and those
        primaries cost no LP (verdict and screen modes).  ``verdict``: the verdict only,
        whatever the mode.  ``limit``: seconds (default: what is left of the budget)."""
        screen = screen or (self.screening and not final)
        mode = "screen" if screen else "verdict" if verdict else self.mode
        if mode == "intervals" and previous is not None and self.budget.total is not None:
            # within a time limit the re-audits decide only the verdict: the primaries a
            # previous audit found protected cost no LP and the repair's witnesses
            # certify most of the rest (an interval audit recomputes every interval)
            mode = "verdict"
            if not self._verdict_noted:
                self.notes.append("re-audits after repair in verdict mode (time limit): "
                                  "the final audit gives bounds, not intervals")
                self._verdict_noted = True
        limit = self.left() if limit is None else limit
        return audit(self.protected_table, singleton=self.singleton, time_limit=limit,
                     mode=mode, workers=self.workers,
                     previous=previous if mode != "intervals" else None,
                     moves=self.moves.matrix(), coalition=self.coalition or None,
                     progress=None if self.progress is None else self._components_done,
                     settings=self.settings.audit)

    def _components_done(self, done: int, total: int) -> None:
        self.progress(f"audit: {done} of {total} components", done / max(total, 1))

    # ---- before the first audit
    def pre_audit(self, method: str, run_table: Table) -> None:
        """The passes before the first audit: integral witnesses against the attackers
        (:meth:`_attack_search`), then cubes for an interval-blind method's primaries
        (the hypercube method on 4-D and more), or the cubes a large pattern already has
        as moves."""
        s, table = self.settings, self.table
        self._attack_search()
        view = None
        if self.repair and s.pre_repair == "auto" and method in INTERVAL_BLIND_METHODS:
            if self.large and table.dimensions and table.n_cells >= s.pre_repair_min_cells:
                view = table
                if len(table.dimensions) >= s.hypercube_pass_min_dims:
                    self._hypercube_pass()
                    view = None
            elif not self.large and self.mode == "verdict":
                # a small table whose pattern has components too large for the interval
                # audit (TABLE3): without cubes the verdict audit must prove each
                # shortfall with whole-component LPs and the repair needs whole-table
                # LPs; a general table gets them on its recovered product structure
                from tabprotect.secondary.passes import product_view
                view = product_view(table, run_table)
        if (view is None and self.repair and self.large and table.dimensions
                and table.n_cells >= s.certify_pass_min_cells):
            self._certify_pass()
        if view is not None and self.large:
            self._cube_pass(view)
        elif view is not None:
            unproven = self._screen()
            if len(unproven):
                self._cube_pass(view, unproven)

    def _attack_search(self) -> None:
        """An integer audit with the single-contributor attack: integral witnesses
        against the attackers for the primaries of the components from
        ``witness_search.attack_min_cells`` cells, before the first audit. There each
        attacker's pass costs LPs over the whole component whose vertices are mostly
        fractional (no integral witness), and the audit decides few primaries in time;
        the moves, checked by the audit per attacker, certify most without an LP (a
        22^3 count table: 250 moves, 2,011 of 2,013 primaries)."""
        if not (self.singleton and self.table.kind == "frequency"):
            return
        least = self.settings.witness_search.attack_min_cells
        large = [c for c in linked_components(self.table.relations,
                                              self.protected_table.suppressed)
                 if len(c) >= least]
        if large:
            cells = np.concatenate(large)
            self.search_witnesses(cells[self.status[cells] == "U"], True, known=True)

    def _screen(self) -> np.ndarray:
        """A small table in verdict mode: the cubes of the cube pass (a proof of
        protection, not a need) go only to primaries in components too large for the
        verdict's exact LPs (``AuditSettings.local_min_vars``) that a screening audit
        leaves uncertified; the repair's LPs take the proven shortfalls with fewer
        cells.  The first audit starts from the screen's certificates."""
        local_min = (self.settings.audit or AuditSettings()).local_min_vars
        large = [c for c in linked_components(self.table.relations,
                                              self.protected_table.suppressed)
                 if len(c) >= local_min]
        if not large:
            return np.zeros(0, dtype=np.int64)
        self.screened = self.judge(screen=True, limit=self.first_limit())
        self.stage("screen")
        short = self.screened.shortfalls
        unproven = short[np.isin(short, np.concatenate(large))]
        # the witnesses' moves go to the first audit, which judges them: no re-screen
        reached = self.search_witnesses(unproven, self.screened.integer)
        return np.setdiff1d(unproven, reached)

    def _hypercube_pass(self) -> None:
        """Cubes in every sub-table with carried requirements: the pattern then reads
        like a hypercube pattern, and goes on as one (certify pass)."""
        from tabprotect.secondary.passes import hypercube_pass
        pre = hypercube_pass(self.table, self.status, self.cost, self.singleton,
                             self.left(), workers=self.workers,
                             parallel_min=self.settings.cube_pass_parallel_min)
        if len(pre):
            self._suppress(pre)
        self.notes.append(f"hypercube pass before the audit added {len(pre)} cell(s)")
        self.stage("hypercube pass")

    def _certify_pass(self) -> None:
        """The leaf cubes a pattern already has (all corners suppressed), handed to the
        audit as moves: they certify most primaries of a hypercube pattern without an
        LP."""
        from tabprotect.secondary.cubes import cube_repair
        _, _, found = cube_repair(self.protected_table, self.cost,
                                  np.flatnonzero(self.status == "U"),
                                  singleton=self.singleton, time_limit=self.left(),
                                  chains=False, certify_only=True, return_moves=True,
                                  product_limits=self.settings.product_search)
        self.moves.append(found)
        self.notes.append(f"{found.shape[0]} cube move(s) of the pattern handed to the audit")
        self.stage("certify pass")

    def _cube_pass(self, view: Table, primaries: np.ndarray | None = None) -> None:
        """A leaf cube (a move of the whole table) per primary (of ``primaries``, default
        all) that has none yet: cheap, no LP, and it leaves the first audit few
        shortfalls to prove."""
        from tabprotect.secondary.passes import cube_pass
        pre_status, pre_moves = cube_pass(view, self.table, self.status, self.cost,
                                          self.singleton, self.left(), workers=self.workers,
                                          parallel_min=self.settings.cube_pass_parallel_min,
                                          primaries=primaries,
                                          product_limits=self.settings.product_search)
        self.moves.append(pre_moves)
        pre = np.flatnonzero((pre_status == "M") & (self.status != "M"))
        if len(pre):
            self.repaired.append(pre)
            self.status = pre_status
            self.protected_table = self.table.replace(status=self.status)
            self.notes.append(f"leaf-cube pass before the audit added {len(pre)} cell(s)")
        self.stage("cube pass")

    # ---- the loop
    def run(self) -> AuditResult:
        """Audit, repair and audit again; returns the last audit."""
        first = self.verdict_first and self.mode == "intervals" and self.screened is None
        t1 = time.perf_counter()
        result = self.judge(previous=self.screened, verdict=first, limit=self.first_limit())
        self.stage("audit 1")
        self._keep_reserve(time.perf_counter() - t1)
        result = self.witness_pass(result)
        if first and result.passed:
            # the pattern passes as it is: the intervals the audit mode asks for
            result = self.judge()
            self.stage("audit 1 (intervals)")
        integer = result.integer
        while not result.passed and self.repair and \
                self.rounds < self.settings.max_repair_rounds:
            if self.budget.expired() or self._repair_spent():
                self.notes.append("time limit reached: repair stopped")
                break
            if not result.complete and len(self._targets(result)) == 0:
                self.notes.append("the audit did not finish within its time limit")
                break
            self.rounds += 1
            before = self.protected_table.suppressed
            short, witnessed = self._milp_round(result)
            suppressed = self.protected_table.suppressed
            new_mask = suppressed
            if len(short) and self._local(short):
                new_mask = self._local_round(result, suppressed, short)
                new_mask, found = self._attack_round(result, new_mask, short)
                witnessed = witnessed or found
            elif len(short):
                new_mask = self._whole_round(result, suppressed, integer, short)
            if self.coalition:
                new_mask = self._coalition_round(result, new_mask, integer)
            added = np.flatnonzero(new_mask & ~suppressed & self.cand)
            if len(added):
                self._suppress(added)
            elif not (witnessed or (suppressed & ~before).any()):
                if (not self.milp and self.table.kind == "frequency"
                        and self.settings.milp_repair.enabled == "auto"):
                    # the LP repair's witnesses hold already where an integer intruder
                    # still narrows a primary: the MILP repair's witnesses take over
                    self.milp = True
                    self.notes.append(f"repair round {self.rounds}: no cell could be "
                                      f"added; the MILP repair takes the next round")
                    continue
                self.notes.append(f"repair round {self.rounds}: no cell could be added")
                break
            # a screen's re-audit leaves the final audit its reserve
            result = self.judge(previous=result,
                                limit=self.repair_left() if self.screening else None)
            self.stage(f"audit {self.rounds + 1}")
        if self.screening and not result.passed:
            result = self.judge(final=True, previous=result)
            self.stage("final audit")
        return result

    def _local(self, short: np.ndarray) -> bool:
        """Whether the round takes the large path's repair (deviation LPs on the
        primaries' sub-tables, leaf cubes): on the large path, and on a small product
        table whose short primaries times cells pass ``whole_repair_max_work`` (the
        whole-table attacker LPs of :meth:`_whole_round` then settle few in the time)."""
        if self.large:
            return True
        return bool(self.table.dimensions) and \
            len(short) * self.table.n_cells > self.settings.whole_repair_max_work

    def _targets(self, result: AuditResult) -> np.ndarray:
        """The primaries a repair round takes: the audit's shortfalls, and with the
        MILP repair also the primaries the audit did not decide in time (their free
        witnesses, one LP each on a small region, settle most without a cell)."""
        short = np.asarray(result.shortfalls, dtype=np.int64)
        if result.incomplete is None or not self.milp:
            return short
        open_ = np.flatnonzero(result.incomplete & (self.table.status == "U"))
        return np.union1d(short, open_)

    def _milp_round(self, result: AuditResult) -> tuple[np.ndarray, bool]:
        """The MILP repair (:mod:`~tabprotect.secondary.milp_repair`) of the round's
        shortfalls, within its share of the budget: the cheapest cells that give each
        short primary witnesses on its neighbourhood.  Its cells are suppressed and its
        witnesses handed to the audit as moves.

        Witnesses are continuous at first, also on integer tables (whose integer
        intervals mostly reach as far: integral witnesses cost several times the
        cells); a primary short again after that gets integral witnesses.  On other
        tables a primary short again goes to the LP repair (the audit and the witnesses
        disagree).  Returns the primaries left for the LP repair (also those with no
        witness in reach or out of time), and whether the MILP found witnesses that
        added no cell (the next audit takes them as moves)."""
        s = self.settings.milp_repair
        if not self.milp:
            return np.asarray(result.shortfalls, dtype=np.int64), False
        short = self._targets(result)
        if len(short) == 0 or len(short) > s.max_primaries:
            # the LP repair takes them all, the undecided ones too (a deviation LP or a
            # cube gives each a witness the next audit checks)
            return short, False
        again = np.isin(short, self.milp_tried)
        if result.integer:
            rest = short[again & np.isin(short, self.integer_tried)]
            runs = [(False, short[~again]),
                    (True, short[again & ~np.isin(short, self.integer_tried)])]
        else:
            rest, runs = short[again], [(False, short[~again])]
        left = self.repair_left()
        seconds = min(s.round_seconds,
                      max(s.min_seconds, s.relative_seconds * self.budget.elapsed()))
        # a tight time limit: quick answers give every primary witnesses in time;
        # otherwise the primaries the MILPs do not reach go to the (cheaper) LP repair
        tight = left is not None and s.round_share * left < seconds
        if tight:
            seconds = s.round_share * left
        now = time.perf_counter()
        deadline = now + seconds
        quick_after = now + s.milp_share * seconds if tight else None
        free = False
        for integer, cells in runs:
            if len(cells) == 0:
                continue
            rep = MilpRepair(self.protected_table, self.cost, self.cand, self.req,
                             integer=integer, settings=s)
            out = rep.run(self.status, cells, deadline=deadline, quick_after=quick_after,
                          quick_when_late=tight)
            added = np.asarray(out.added, dtype=np.int64)
            if len(added):
                self._suppress(added)
            self.moves.append(_move_matrix(out.moves, self.table.n_cells))
            self.milp_tried = np.union1d(self.milp_tried, cells)
            if integer:
                self.integer_tried = np.union1d(self.integer_tried, cells)
            free = free or len(out.free) > 0
            self.notes.append(PrimaryCountNote(
                f"repair round {self.rounds}: {out.milps} MILP(s) "
                f"({'integral' if integer else 'continuous'} witnesses) settled "
                f"{len(cells) - len(out.unresolved)} of {len(cells)} short primaries with "
                f"{len(added)} cell(s)"))
            rest = np.concatenate([rest, np.asarray(out.unresolved, dtype=np.int64)])
        self.stage(f"repair {self.rounds} MILPs")
        return rest, free

    def _local_round(self, result: AuditResult, suppressed: np.ndarray,
                     short: np.ndarray) -> np.ndarray:
        """The large path's repair (:meth:`_local`): deviation LPs on the short
        primaries' neighbourhoods while their time lasts (below
        ``pre_repair_min_cells``), then leaf cubes (no LP; each a move of the whole
        table) for the primaries not reached, then deviation LPs again for what the
        cubes cannot settle (a whole-table LP per shortfall does not scale to 10^5-10^6
        cells)."""
        s, n = self.settings, self.table.n_cells
        table = self.protected_table
        if n < s.pre_repair_min_cells and s.repair_lp_relative_seconds > 0:
            table, short = self._deviations_first(result, short)
        from tabprotect.secondary.cubes import cube_repair
        from tabprotect.secondary.greedy import greedy_repair
        new_status, rest, new_moves = cube_repair(
            table, self.cost, short, singleton=self.singleton,
            time_limit=self.repair_left(), chains=n >= s.pre_repair_min_cells, return_moves=True)
        self.moves.append(new_moves)
        self.stage(f"repair {self.rounds} cubes")
        if len(rest):
            new_status, lp_moves = greedy_repair(
                table.replace(status=new_status), self.cost, rest,
                audit_result=result, time_limit=self.repair_left(), return_moves=True,
                block_sizes=s.repair_block_sizes if n >= s.pre_repair_min_cells else (),
                workers=self.workers, options=s.repair_lps)
            self.moves.append(lp_moves)
            self.stage(f"repair {self.rounds} LPs")
        return np.isin(new_status, ("U", "M")) | suppressed

    def _attack_round(self, result: AuditResult, mask: np.ndarray, short: np.ndarray
                      ) -> tuple[np.ndarray, bool]:
        """The local round's part against single-contributor attackers
        (:mod:`~tabprotect.secondary.attack_repair`): the primaries ``result`` proves
        short (against one of them, or the outside intruder where the round's
        deviation LPs and cubes did not serve them) get deviations that keep the
        attacker's cell still, on the
        pattern ``mask`` the round has so far; a primary none serves is decided by the
        whole-table LP within ``feasibility_share`` of the budget, and one no pattern
        protects is refused (:class:`InfeasibleRulesError` naming it).  Returns the
        mask with the deviations' cells, and whether they found any (the next audit
        takes them as moves)."""
        if not self.singleton:
            return mask, False
        cells = short
        if result.incomplete is not None:
            cells = cells[~result.incomplete[cells]]
        if len(cells) == 0:
            return mask, False
        s = self.settings.attack_repair
        left = self.repair_left()
        deadline = None if left is None else time.perf_counter() + s.share * left
        table = self.table.replace(status=np.where(mask & (self.status != "U"), "M",
                                                   self.status))
        out = attack_round(table, self.cost, self.cand, self.req, cells,
                           deadline=deadline, settings=s, integer=result.integer,
                           tried=self.attack_tried)
        self.attack_tried = np.union1d(self.attack_tried, cells)
        self.moves.append(_move_matrix(out.moves, self.table.n_cells))
        mask = mask.copy()
        mask[out.added] = True
        self.notes.append(PrimaryCountNote(
            f"repair round {self.rounds}: deviations against single contributors for "
            f"{len(cells)} primaries short against one added {len(out.added)} cell(s), "
            f"{len(out.unresolved)} primaries not served in their neighbourhoods"))
        self.stage(f"repair {self.rounds} attackers")
        found = len(out.moves) > 0
        if len(out.unresolved):
            open_ = set(out.unresolved.tolist())
            table = table.replace(status=np.where(mask & (self.status != "U"), "M",
                                                  self.status))
            more = self._whole_table(table, [v for v in out.violated if v[0] in open_])
            mask[more] = True
            found = found or len(more) > 0
        return mask, found

    def _whole_table(self, table: Table, violated: list) -> np.ndarray:
        """The conditions no neighbourhood served, on the whole table within
        ``feasibility_share`` of the budget (:func:`~tabprotect.secondary.attack_repair.
        decide`): the cells of their deviations, or InfeasibleRulesError for a primary
        no pattern protects."""
        if self._check is None:
            self._check = self.budget.share(self.settings.feasibility_share) \
                if self.budget.total is not None else \
                Budget(self.settings.feasibility_check_seconds)
        out, bad = decide(table, self.cost, self.cand, self.req, violated,
                          deadline=self._check.deadline)
        self.moves.append(_move_matrix(out.moves, self.table.n_cells))
        self.stage("feasibility check (single-contributor)")
        if bad:
            kinds = {"up": "up", "down": "down", "width": "sliding"}
            why = {kinds[k] for _, k, _ in bad}
            if any(j >= 0 for _, _, j in bad):
                why.add("single-contributor")
            refuse(self.table, sorted({s for s, _, _ in bad}), why, self.singleton)
        return out.added

    def _deviations_first(self, result: AuditResult, short: np.ndarray
                          ) -> tuple[Table, np.ndarray]:
        """The cheapest deviation of each short primary (:func:`greedy_repair`), batch
        by batch in cell order (neighbours share suppressions) for at most
        ``repair_lp_relative_seconds`` times the call's time so far (and
        ``repair_lp_share`` of what the repair may spend of a budget).  A primary an earlier round's deviation LPs took goes
        to the cubes: it is short again where the deviation does not reach (e.g. a
        single-contributor attacker, whom the deviation LPs do not model), and the same
        LP would add nothing.  Returns the table with the deviations' cells suppressed
        and the primaries not reached (for the cubes)."""
        s = self.settings
        seconds = s.repair_lp_relative_seconds * self.budget.elapsed()
        left = self.repair_left()
        if left is not None:
            seconds = min(seconds, s.repair_lp_share * left)
        end = time.perf_counter() + seconds
        short = np.sort(short)
        again = np.isin(short, self.lp_tried)
        table, order = self.protected_table, short[~again]
        size = s.repair_lp_batch * max(1, self.workers)   # a batch per worker
        done = 0
        from tabprotect.secondary.greedy import greedy_repair
        while done < len(order) and (done == 0 or time.perf_counter() < end):
            # the round's seconds only decide whether a further batch starts: the first
            # batch always runs and each runs to its end, within what the repair may
            # spend of a time limit (else the pattern depends on the machine's speed)
            batch = order[done:done + size]
            status, moves = greedy_repair(table, self.cost, batch, audit_result=result,
                                          time_limit=self.repair_left(),
                                          return_moves=True,
                                          workers=self.workers, options=s.repair_lps)
            self.moves.append(moves)
            table = table.replace(status=status)
            done += len(batch)
        self.lp_tried = np.union1d(self.lp_tried, order[:done])
        if done:
            self.notes.append(PrimaryCountNote(
                f"repair round {self.rounds}: deviation LPs for {done} of {len(short)} "
                f"short primaries"
                + (", leaf cubes for the rest" if done < len(short) else "")))
            self.stage(f"repair {self.rounds} deviation LPs")
        return table, np.union1d(order[done:], short[again])

    def _whole_round(self, result: AuditResult, suppressed: np.ndarray, integer: bool,
                     short: np.ndarray) -> np.ndarray:
        """A small table's repair: attacker LPs on the whole table.  Each round asks a
        little more than the levels, in case the audit's integer intervals (frequency
        tables) are narrower than the LP the repair reasons with."""
        if self.attack_check is not None and result.attacked is not None and \
                result.attacked.any():
            # a table no pattern protects against the attackers is refused before the
            # round's attacker LPs (InfeasibleRulesError)
            self.stage(f"repair {self.rounds}")
            self.attack_check(self.budget.share(self.settings.feasibility_share))
            self.stage("feasibility check (single-contributor)")
        margin = (self.rounds - 1) * (1.0 if integer else 1e-4)
        rq = _with_margin(self.req, margin, self.table.value)
        rep = GreedyRepair(self.protected_table, rq, self.cost, self.cand & ~suppressed)
        deadline = None if self.budget.deadline is None else \
            self.budget.deadline - self.reserve
        new_mask, unmet = rep.run(suppressed, primaries=short, deadline=deadline)
        if unmet and deadline is not None and time.perf_counter() > deadline:
            self.notes.append(f"repair round {self.rounds}: stopped at its share of the "
                              f"time limit")
        self.stage(f"repair {self.rounds}")
        return new_mask


    def _coalition_round(self, result: AuditResult, mask: np.ndarray, integer: bool
                         ) -> np.ndarray:
        """Attacker LPs with each coalition's knowledge, on the pattern the round has
        so far (with the round's margin, as in :meth:`_whole_round`)."""
        margin = (self.rounds - 1) * (1.0 if integer else 1e-4)
        rq = _with_margin(self.req, margin, self.table.value)
        limit = (self.settings.audit or AuditSettings()).max_coalitions
        new_mask = coalition_round(self.table.replace(status=np.where(
            mask & (self.status != "U"), "M", self.status)), rq, self.cost, self.cand,
            mask, result.shortfalls, self.coalition, limit,
            None if self.budget.deadline is None else self.budget.deadline - self.reserve)
        self.stage(f"repair {self.rounds} coalitions")
        return new_mask


def _with_margin(req: Requirements, margin: float, value: np.ndarray) -> Requirements:
    if margin <= 0:
        return req
    s_val = np.abs(value[req.primary])
    extra = margin * (1.0 if margin >= 1 else np.maximum(1.0, s_val))

    def bump(need: np.ndarray) -> np.ndarray:
        return np.where(need > 0, need + extra, need)

    return Requirements(up=req.up, down=req.down, primary=req.primary,
                        need_up=np.minimum(bump(req.need_up), req.up[req.primary]),
                        need_down=np.minimum(bump(req.need_down), req.down[req.primary]),
                        need_width=bump(req.need_width), singleton=req.singleton, tol=req.tol,
                        record=req.record)
