"""The results of the LP audit (:func:`tabprotect.audit.audit`): two types, one per kind of
answer.

* :class:`IntervalAudit` (``mode="intervals"``): the exact feasibility interval
  ``[lower, upper]`` of every unpublished cell -- what an intruder can derive.
* :class:`VerdictAudit` (``mode="verdict"`` and ``"screen"``): only whether each primary
  cell is protected. Its figures are *bounds* on the interval's ends, never the interval:
  ``min_at_most`` / ``max_at_least`` are values some feasible table attains (the interval
  holds ``[min_at_most, max_at_least]``), ``min_at_least`` / ``max_at_most`` are limits
  it cannot pass. Where both bounds of an end agree the end is exact.

Both share :class:`AuditResult`: the verdict (``passed``, ``protected``, ``shortfalls``),
the requirements, the attacker settings and the work counters.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from tabprotect.model.columns import Columns
from tabprotect.model.table import Table

if TYPE_CHECKING:
    import pandas as pd

    from tabprotect.audit.settings import AuditSettings

#: relative tolerance of every comparison of an interval with a requirement
TOL = 1e-6


def meets_requirement(lo: np.ndarray, hi: np.ndarray, req_lo: np.ndarray,
                      req_hi: np.ndarray, req_w: np.ndarray, value: np.ndarray
                      ) -> np.ndarray:
    """Whether the interval ``[lo, hi]`` reaches the required one
    (:func:`tabprotect.audit.required_interval`)
    and is more than a point, within the relative tolerance ``TOL``; False where the
    requirement is nan (not a primary).

    Examples
    --------
    >>> meets_requirement(np.array([0.0, 1.0]), np.array([2.0, 2.0]), np.array([1.0, 1.0]),
    ...                   np.array([2.0, 2.0]), np.array([2.0, 2.0]), np.ones(2)).tolist()
    [True, False]
    """
    tol = TOL * np.maximum(1.0, np.abs(value))
    with np.errstate(invalid="ignore"):
        return ((hi >= req_hi - tol) & (lo <= req_lo + tol)
                & (hi - lo >= req_w - tol) & (hi - lo > tol))


@dataclass
class AuditResult:
    """The protection verdict of a suppression pattern (common to both audit types).

    Arrays have one entry per cell of the table.

    Attributes
    ----------
    required_lower, required_upper : the interval a primary cell's protection levels ask
        for (``value - LPL`` capped at ``lb``, ``value + UPL``); nan for other cells
    required_width : the sliding protection level (nan for other cells)
    unpublished : mask of cells the intruder does not see
    primary : mask of primary cells (status ``U``)
    protected : per cell, True unless it is a primary cell whose interval falls short
        (for the outside intruder or, in ``singleton`` audits, for some single
        contributor)
    exact : unpublished cells whose interval is a single point (exact disclosure; a
        :class:`VerdictAudit` decides it for primary cells only)
    attacked : primary cells that some attacker among the contributors (the contributor
        of another suppressed cell with ``freq == 1``, or a coalition) can narrow below
        their requirement
    mode : ``"intervals"``, ``"verdict"`` or ``"screen"``
    table : the audited table (true values: the audit's input, not for publication)

    Both types follow the result protocol of :mod:`tabprotect.results`: ``passed``,
    ``published()``, ``params``, ``seconds``, ``notes``, ``summary()`` and ``to_frame()``.
    """

    required_lower: np.ndarray
    required_upper: np.ndarray
    required_width: np.ndarray
    unpublished: np.ndarray
    primary: np.ndarray
    protected: np.ndarray
    exact: np.ndarray
    integer: bool
    singleton: bool
    n_components: int
    n_lp: int
    n_lp_skipped: int
    runtime: float
    n_determined: int = 0
    incomplete: np.ndarray | None = None  # bounds not computed within the time limit
    attacker_notes: list[str] = field(default_factory=list)
    mode: str = "intervals"
    attacked: np.ndarray | None = None
    n_certified: int = 0   # primary cells proven protected by witnesses, without own LP
    n_local_lp: int = 0    # small LPs around primary cells (verdict mode, large components)
    n_block_lp: int = 0    # LPs over regions of huge components (verdict mode)
    n_block_passes_skipped: int = 0  # screen: larger block passes left out (low yield)
    n_moves_used: int = 0      # candidate moves (``moves``) that passed the check
    n_moves_rejected: int = 0  # candidate moves that failed it (ignored)
    n_attacker_groups: int = 0  # witness passes against groups of attackers at once
    n_attacker_moves: int = 0   # least moves that certify primaries against attackers
    table: Table | None = field(default=None, repr=False)
    settings: "AuditSettings | None" = field(default=None, repr=False)  # tuning applied
    coalition: int = 0   # size of the coalitions of contributors audited against (0: none)

    #: what the figures of this result are: exact intervals or bounds on them
    figures = "intervals"

    @property
    def seconds(self) -> float:
        return self.runtime

    @property
    def notes(self) -> list[str]:
        return self.attacker_notes

    @property
    def params(self) -> dict:
        """The settings the audit applied (``settings``: its :class:`AuditSettings`)."""
        return {"mode": self.mode, "singleton": self.singleton, "integer": self.integer,
                "coalition": self.coalition,
                "empty": None if self.table is None else self.table.empty,
                "settings": None if self.settings is None else self.settings.as_dict()}

    def published(self) -> "pd.DataFrame":
        """What the intruder was given: codes, ``value`` (NaN where unpublished) and
        ``status`` (:data:`~tabprotect.results.SUPPRESSED_LETTER` where unpublished)."""
        from tabprotect.results import SUPPRESSED_LETTER
        if self.table is None:
            raise ValueError("this audit holds no table")
        out = self.table.to_frame(("value", "status"))
        out["value"] = np.where(self.unpublished, np.nan, self.table.value)
        out["status"] = np.where(self.unpublished, SUPPRESSED_LETTER, self.table.status)
        return out

    @property
    def complete(self) -> bool:
        return self.incomplete is None or not self.incomplete.any()

    @property
    def passed(self) -> bool:
        return bool(self.protected.all()) and self.complete

    @property
    def shortfalls(self) -> np.ndarray:
        """Indices of primary cells that are not protected."""
        return np.flatnonzero(~self.protected)

    def summary(self) -> dict:
        """Counts for reports and the CLI."""
        return {
            "mode": self.mode,
            "figures": self.figures,
            "unpublished": int(self.unpublished.sum()),
            "primary": int(self.primary.sum()),
            "unprotected_primary": int((~self.protected).sum()),
            "exactly_disclosed": int(self.exact.sum()),
            "short_against_a_single_contributor": (
                0 if self.attacked is None else int(self.attacked.sum())),
            "passed": self.passed,
            "components": self.n_components,
            "lp_solved": self.n_lp,
            "lp_skipped": self.n_lp_skipped,
            "determined_without_lp": self.n_determined,
            "certified_by_witness": self.n_certified,
            "local_lp": self.n_local_lp,
            "block_lp": self.n_block_lp,
            "block_passes_skipped": self.n_block_passes_skipped,
            "moves_used": self.n_moves_used,
            "moves_rejected": self.n_moves_rejected,
            "attacker_group_passes": self.n_attacker_groups,
            "attacker_moves": self.n_attacker_moves,
            "complete": self.complete,
            "integer": self.integer,
            "singleton_attack": self.singleton,
            "coalition_size": self.coalition,
            "seconds": round(self.runtime, 3),
        }

    def columns(self) -> dict[str, np.ndarray]:
        """The figures per cell by column name (intervals or bounds, see the types)."""
        raise NotImplementedError

    def to_frame(self, confidential: bool = False, *, table: Table | None = None,
                 only_unpublished: bool = False) -> "pd.DataFrame":
        """Cells with this result's figures (``lower, upper`` for an
        :class:`IntervalAudit`; the four bound columns for a :class:`VerdictAudit`),
        ``required_lower, required_upper, protected, exact``.

        ``value`` and ``freq`` are blank (NaN) for unpublished cells and ``status`` is
        :data:`~tabprotect.results.SUPPRESSED_LETTER` for every suppressed cell unless
        ``confidential=True``. ``table`` labels the rows (default: the audited table);
        ``only_unpublished`` keeps the rows of unpublished cells only."""
        return self.to_columns(confidential, table=table,
                               only_unpublished=only_unpublished).to_pandas()

    def to_columns(self, confidential: bool = False, *, table: Table | None = None,
                   only_unpublished: bool = False) -> Columns:
        """:meth:`to_frame` as :class:`~tabprotect.model.columns.Columns` (the writer's
        input)."""
        table = self.table if table is None else table
        if table is None:
            raise ValueError("this audit holds no table: call to_frame(table=...)")
        out = table.to_columns(("value", "freq", "status"), confidential=confidential)
        if not confidential:
            out["value"] = np.where(self.unpublished, np.nan, out["value"])
            out["freq"] = np.where(self.unpublished, np.nan, out["freq"])
        for name, col in self.columns().items():
            out[name] = col
        out["required_lower"] = self.required_lower
        out["required_upper"] = self.required_upper
        out["protected"] = self.protected
        out["exact"] = self.exact
        if only_unpublished:
            out = out.rows(self.unpublished)
        return out


@dataclass
class IntervalAudit(AuditResult):
    """An exact interval audit: ``lower``/``upper`` are the feasibility interval of every
    cell (the cell's value for published cells; for an interval not computed within the
    time limit, ``-inf``/``inf`` and the cell is flagged ``incomplete``)."""

    lower: np.ndarray = None
    upper: np.ndarray = None

    figures = "intervals"

    def columns(self) -> dict[str, np.ndarray]:
        return {"lower": self.lower, "upper": self.upper}


@dataclass
class VerdictAudit(AuditResult):
    """A verdict audit: whether each primary is protected, and bounds on the interval
    ends that decided it (never the interval itself).

    Attributes
    ----------
    min_at_most, max_at_least : values some feasible table attains: the intruder's
        interval holds ``[min_at_most, max_at_least]`` (a protected primary's requirement
        lies inside it)
    min_at_least, max_at_most : limits the interval's ends cannot pass (the a-priori
        bounds unless an LP proved more); equal to ``min_at_most`` / ``max_at_least``
        where that end is exact
    outer_lower, outer_upper : ends bounded by an LP with far relations dropped (set only
        where that bound proves a primary short)
    """

    min_at_most: np.ndarray = None
    min_at_least: np.ndarray = None
    max_at_least: np.ndarray = None
    max_at_most: np.ndarray = None
    outer_lower: np.ndarray | None = None
    outer_upper: np.ndarray | None = None

    figures = "bounds"

    @property
    def exact_lower(self) -> np.ndarray:
        """Cells whose interval minimum is known exactly."""
        return self.min_at_least >= self.min_at_most

    @property
    def exact_upper(self) -> np.ndarray:
        """Cells whose interval maximum is known exactly."""
        return self.max_at_most <= self.max_at_least

    @property
    def width_at_least(self) -> np.ndarray:
        """A lower bound of each interval's width."""
        return self.max_at_least - self.min_at_most

    @property
    def width_at_most(self) -> np.ndarray:
        """An upper bound of each interval's width."""
        return self.max_at_most - self.min_at_least

    def columns(self) -> dict[str, np.ndarray]:
        return {"min_at_least": self.min_at_least, "min_at_most": self.min_at_most,
                "max_at_least": self.max_at_least, "max_at_most": self.max_at_most}
