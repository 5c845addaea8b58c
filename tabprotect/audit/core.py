"""The audit's entry point: validate the input, cut the pattern into independent
components, solve them, and judge every primary."""
from __future__ import annotations

import dataclasses
import time
from typing import Callable

import numpy as np
import scipy.sparse as sp

from tabprotect.audit_result import AuditResult, VerdictAudit
from tabprotect.audit.assemble import Figures, interval_result, verdict_result
from tabprotect.audit.component import ComponentTask
from tabprotect.audit.contributors import (Attacker, Contributions, coalitions,
                                           single_contributors)
from tabprotect.audit.dispatch import solve_components
from tabprotect.audit.moves import split_moves
from tabprotect.audit.settings import AuditSettings
from tabprotect.audit.system import SystemBuilder
from tabprotect.errors import InputError
from tabprotect.model.relations import linked_components
from tabprotect.model.scale import scaled_table, value_scale
from tabprotect.model.status import is_suppressed
from tabprotect.model.table import Table
from tabprotect.requirements import attacker_name, protection_requirements

#: the audit modes (see :func:`audit`)
MODES = ("intervals", "verdict", "screen")


def audit(table: Table, unpublished: np.ndarray | None = None, *, integer: bool | None = None,
          singleton: bool = False, time_limit: float | None = None,
          progress: Callable[[int, int], None] | None = None, mode: str = "intervals",
          workers: int = 1, previous: AuditResult | None = None,
          moves: sp.spmatrix | None = None, coalition: int | None = None,
          settings: AuditSettings | None = None) -> AuditResult:
    """The protection verdict of a pattern, with the feasibility interval of every
    unpublished cell (``mode="intervals"``: an :class:`IntervalAudit`) or bounds on the
    interval ends that decided the verdict (``"verdict"``, ``"screen"``: a
    :class:`VerdictAudit`).

    Parameters
    ----------
    table : the table; its ``status`` says what is suppressed (U and M), unless
        ``unpublished`` is given
    unpublished : boolean mask of cells the intruder does not see (e.g. everything but
        the margins); overrides the status
    integer : integer min/max (frequency tables); default True for frequency tables
    singleton : also audit against every single-contributor attacker: the contributor
        of a suppressed cell with ``freq == 1`` knows that cell's value exactly, so each
        primary must stay protected with that cell fixed (each attacker is judged on
        its own interval; ``attacked`` flags the primaries some attacker breaks)
    coalition : also audit against every coalition of up to ``coalition`` (>= 2)
        contributors pooling their own contributions (it includes the single
        contributors; see :mod:`tabprotect.audit.contributors` and docs/audit.md)
    time_limit : seconds for the whole audit (a cell whose bound was not computed in time
        gets the trivially safe interval and the audit fails)
    progress : called as ``progress(done_components, total_components)``
    mode : ``"intervals"`` computes the exact interval of every unpublished cell;
        ``"verdict"`` decides only whether each primary cell is protected (same verdict,
        far fewer LPs on large patterns; bounds instead of intervals, see
        :class:`VerdictAudit`); ``"screen"``
        only certifies: like verdict mode, but on large components a primary cell that
        no witness certifies counts as not protected without the LPs that would prove
        it short (a pass is a real pass; a failure may be unproven -- for repair loops)
    workers : processes for independent components (1 = in this process)
    previous : (verdict and screen modes) an audit of the same table with a pattern
        that this one only extends (every cell unpublished there is unpublished here).
        Suppressing more only widens the intruder's polytope, for every attacker, so a
        primary cell protected there is protected here: it keeps that audit's bounds and
        costs no LP. For audit-and-repair loops; ignored in intervals mode
    moves : (verdict and screen modes) candidate witnesses, one per row of a sparse
        ``(m, n_cells)`` matrix: a deviation ``d`` such that ``value + d`` should be a
        table the intruder cannot rule out (e.g. the cubes of a repair). The audit does
        not trust them: a row is used only if it moves unpublished cells alone and keeps
        every relation (``A d = 0``); it is then shrunk into the a-priori bounds and used
        like an LP solution (with its mirror image ``value - t d``). Rows that fail the
        check are ignored (counted in ``moves_rejected``). Ignored in intervals mode
    settings : how the audit spends its LPs (:class:`AuditSettings`; the defaults when
        omitted); recorded in the result's ``params``. No setting changes the verdict

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> r = Hierarchy.flat(["1", "2"], total="T"); c = Hierarchy.flat(["a", "b"], total="T")
    >>> t = Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2])
    >>> st = t.status.copy(); st[[4, 5, 7, 8]] = ["U", "M", "M", "M"]
    >>> t = t.replace(status=st, upl=np.where(st == "U", 1.0, 0.0),
    ...               lpl=np.where(st == "U", 1.0, 0.0))
    >>> res = audit(t)
    >>> float(res.lower[4]), float(res.upper[4])
    (1.0, 5.0)
    >>> res.passed, audit(t, mode="verdict").passed
    (True, True)
    """
    start = time.monotonic()
    settings = AuditSettings() if settings is None else settings
    if not isinstance(settings, AuditSettings):
        raise InputError(f"audit: settings must be an AuditSettings, not "
                         f"{type(settings).__name__}")
    if mode not in MODES:
        raise InputError(f"audit: mode must be one of {', '.join(MODES)}, not {mode!r}")
    if coalition is not None and (isinstance(coalition, bool) or not isinstance(
            coalition, (int, np.integer)) or coalition < 2):
        raise InputError(f"audit: coalition must be an integer >= 2 (the number of "
                         f"contributors pooling their data), not {coalition!r}")
    coalition = 0 if coalition is None else int(coalition)
    unpublished = _unpublished_mask(table, unpublished)
    if integer is None:
        integer = table.kind == "frequency"
    scale = 1.0 if integer else value_scale(table)
    if scale != 1.0:
        return _scaled_audit(table, scale, start, unpublished=unpublished, integer=integer,
                             singleton=singleton, time_limit=time_limit, progress=progress,
                             mode=mode, workers=workers, previous=previous, moves=moves,
                             coalition=coalition or None, settings=settings)
    run = _AuditRun(table, unpublished, bool(integer), singleton, coalition, mode, settings,
                    start, time_limit)
    return run.result(previous, moves, workers, progress)


def _unpublished_mask(table: Table, unpublished) -> np.ndarray:
    n = table.n_cells
    if unpublished is None:
        return is_suppressed(table.status)
    unpublished = np.asarray(unpublished, dtype=bool)
    if unpublished.shape != (n,):
        raise InputError(f"audit: 'unpublished' must have {n} entries")
    return unpublished


def _scaled_audit(table: Table, scale: float, start: float, *, previous, moves,
                  **kwargs) -> AuditResult:
    """The audit in scaled units (values far from 1, :mod:`tabprotect.model.scale`),
    rescaled back."""
    inner = audit(scaled_table(table, 1.0 / scale),
                  previous=None if previous is None else rescale_audit(previous, 1.0 / scale),
                  moves=None if moves is None else sp.csr_matrix(moves) * (1.0 / scale),
                  **kwargs)
    return dataclasses.replace(rescale_audit(inner, scale), runtime=time.monotonic() - start,
                               table=table)


class _AuditRun:
    """One audit of one table: the pattern cut into components, their requirements."""

    def __init__(self, table, unpublished, integer, singleton, coalition, mode, settings,
                 start, time_limit):
        self.table, self.unpublished, self.integer = table, unpublished, integer
        self.singleton, self.coalition = singleton, coalition
        self.mode, self.settings, self.start = mode, settings, start
        # the components' deadline is wall-clock time (epoch seconds): it goes with each
        # task to whichever machine runs it (see audit.system.out_of_time)
        self.deadline = None if time_limit is None else \
            time.time() + time_limit - (time.monotonic() - start)
        self.primary = (table.status == "U") & unpublished
        self.req = required_interval(table, self.primary, integer, singleton)
        # cells alone among the unpublished cells of some relation are known exactly;
        # they are as good as published for the intruder (repeat: that may isolate
        # further cells)
        self.determined = determined_cells(table.relations, unpublished)
        self.free = unpublished & ~self.determined
        self.comps = linked_components(table.relations, self.free)
        self.records = None
        if singleton or coalition:
            from tabprotect.records import same_record
            self.records = same_record(table)

    def tasks(self, settled: np.ndarray, move_parts) -> list[ComponentTask]:
        table, (req_lo, req_hi, req_w) = self.table, self.req
        builder = SystemBuilder(table, self.free, self.settings.dual_min_vars,
                                self.settings.integer_nodes)
        # a settled primary is no target of the LPs (it is as good as a non-primary cell)
        open_primary = self.primary & ~settled
        # the relations of a table of at most two dimensions have integral LP vertices
        fractional = self.integer and not (0 < len(table.dimensions) <= 2)
        return [ComponentTask(system=builder.system(cells), primary=open_primary[cells],
                              req_lo=req_lo[cells], req_hi=req_hi[cells], req_w=req_w[cells],
                              attackers=self.attackers(cells, open_primary[cells]),
                              integer=self.integer, mode=self.mode, deadline=self.deadline,
                              settings=self.settings,
                              moves=None if move_parts is None else move_parts[k],
                              fractional_vertices=fractional)
                for k, cells in enumerate(self.comps)]

    def attackers(self, cells: np.ndarray, primary: np.ndarray) -> list[Attacker] | None:
        """The attackers among the contributors of one component."""
        if not (self.singleton or self.coalition):
            return None
        t = self.table
        contrib = Contributions(
            freq=t.freq[cells], value=t.value[cells].astype(float), lb=t.lb[cells],
            ub=t.ub[cells], top=None if t.top is None else t.top[cells],
            counts=t.kind == "frequency", names=_CellNames(t, cells),
            record=self.records[cells])
        if self.coalition:
            return coalitions(contrib, self.coalition, primary,
                              self.settings.max_coalitions)
        return single_contributors(contrib)

    def result(self, previous, moves, workers, progress) -> AuditResult:
        table, verdict_mode = self.table, self.mode != "intervals"
        settled = np.zeros(table.n_cells, dtype=bool)
        if previous is not None and verdict_mode:
            settled = settled_by(previous, table, self.unpublished, self.singleton,
                                 self.integer, self.coalition)
        move_parts, used, rejected = None, 0, 0
        if moves is not None and verdict_mode:
            move_parts, used, rejected = split_moves(table, moves, self.free, self.comps)
        elif not verdict_mode:
            move_parts = self.attacker_moves()
        outcomes = solve_components(self.tasks(settled, move_parts), workers,
                                    self.settings.parallel_min_cells, progress,
                                    (self.settings.stack_max_vars,
                                     self.settings.stack_max_total))
        fig = Figures(table, self.unpublished, self.determined)
        for cells, out in zip(self.comps, outcomes):
            fig.collect(table, cells, out)
        common = self.common(fig)
        if not verdict_mode:
            return interval_result(fig, common, self.unpublished, table, self.req)
        return verdict_result(fig, common, self.unpublished, table, self.req, previous,
                              settled, used, rejected)

    def attacker_moves(self) -> list | None:
        """Intervals mode: sibling cubes of the pattern (product tables), checked and cut
        per component, as candidate witnesses for the attackers' passes (the outside
        intruder's intervals are exact LP bounds, which take none)."""
        per_primary = self.settings.attacker_sibling_cubes
        if not ((self.singleton or self.coalition) and per_primary and self.table.dimensions):
            return None
        from tabprotect.audit.sibling import sibling_cubes
        cubes = sibling_cubes(self.table, self.free, per_primary)
        if cubes.shape[0] == 0:
            return None
        return split_moves(self.table, cubes, self.free, self.comps)[0]

    def common(self, fig: Figures) -> dict:
        """The fields both result types share, but the verdict and the work counters."""
        req_lo, req_hi, req_w = self.req
        return dict(required_lower=req_lo, required_upper=req_hi, required_width=req_w,
                    unpublished=self.unpublished, primary=self.table.status == "U",
                    integer=self.integer, singleton=self.singleton,
                    n_components=len(self.comps), n_determined=int(self.determined.sum()),
                    runtime=time.monotonic() - self.start, attacker_notes=[],
                    mode=self.mode, table=self.table, settings=self.settings,
                    coalition=self.coalition)


class _CellNames:
    """The names of a component's cells by local index, made only when asked for (an
    error message names one cell)."""

    def __init__(self, table: Table, cells: np.ndarray):
        self.table, self.cells = table, cells

    def __getitem__(self, local: int) -> str:
        return self.table.cell_name(int(self.cells[local]))


def rescale_audit(result: AuditResult, factor: float) -> AuditResult:
    """The audit result with its value-unit figures multiplied by ``factor`` (an interval
    audit's intervals, a verdict audit's bounds, the requirements)."""
    names = [*result.columns(), "required_lower", "required_upper", "required_width"]
    return dataclasses.replace(result, **{k: getattr(result, k) * factor for k in names})


def settled_by(previous: AuditResult, table: Table, unpublished: np.ndarray,
               singleton: bool, integer: bool, coalition: int = 0) -> np.ndarray:
    """Primary cells a previous audit of a sub-pattern found protected (see ``audit``'s
    ``previous``); checks that the previous audit is one the monotonicity argument
    covers."""
    n = table.n_cells
    if previous.unpublished.shape != (n,):
        raise InputError(f"audit: 'previous' is an audit of a table with "
                         f"{previous.unpublished.shape[0]} cells, not {n}")
    grown = previous.unpublished & ~unpublished
    if grown.any():
        raise InputError(f"audit: 'previous' must audit a pattern this one extends, but "
                         f"cell {table.cell_name(int(np.flatnonzero(grown)[0]))} is "
                         f"unpublished there and published here")
    if (previous.singleton != singleton or previous.integer != integer
            or previous.coalition != coalition):
        raise InputError("audit: 'previous' was run with other singleton/integer/coalition "
                         "settings")
    settled = (previous.primary & previous.protected & previous.unpublished
               & (table.status == "U") & unpublished)
    if previous.incomplete is not None:
        settled &= ~previous.incomplete
    if isinstance(previous, VerdictAudit):
        # bounds from relaxed LPs are not attained: never reused as witnesses
        settled &= ~(previous.outer_lower | previous.outer_upper)
    return settled


def required_interval(table: Table, primary: np.ndarray | None = None,
                      integer: bool | None = None, singleton: bool = True
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The interval each primary cell must reach, ``[max(lb, X - LPL), min(ub, X + UPL)]``,
    and the width it needs, ``max(SPL, no-exact-disclosure width)``; nan for other cells
    (:func:`tabprotect.requirements.protection_requirements`)."""
    req = protection_requirements(table, attacker_name(singleton), integer=integer)
    return req.per_cell(table.n_cells, primary)


def determined_cells(A: sp.csr_matrix, unpublished: np.ndarray) -> np.ndarray:
    """Unpublished cells that some relation pins down because every other cell of it is
    published (or pinned down itself), found by repeated singleton-row elimination."""
    determined = np.zeros(len(unpublished), dtype=bool)
    free = unpublished.copy()
    A = A.tocsc()
    while free.any():
        cols = np.flatnonzero(free)
        sub = A[:, cols].tocsr()
        singleton_rows = np.flatnonzero(np.diff(sub.indptr) == 1)
        if len(singleton_rows) == 0:
            break
        hit = cols[np.unique(sub.indices[sub.indptr[singleton_rows]])]
        determined[hit] = True
        free[hit] = False
    return determined
