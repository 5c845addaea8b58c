"""What "protected" means: one definition for the audit, every method and the repair.

A primary cell ``s`` with value ``x``, a-priori bounds ``[lb, ub]`` and protection levels
``UPL``, ``LPL``, ``SPL`` is protected against an attacker when the interval the attacker
can derive for it reaches

    [max(lb, x - LPL), min(ub, x + UPL)]   and is at least max(SPL, w_min) wide,

where ``w_min > 0`` is the *no exact disclosure* width: a primary is never protected when
its value can be derived exactly, whatever its levels say (zero levels included).
``w_min`` is 1 for integer (frequency) tables -- an integer interval that is not a point
is at least 1 wide -- and ``MIN_WIDTH_REL * max(1, |x|)`` for magnitude tables: ten times
the audit's tolerance, so a pattern a method calls protected also passes the audit.

Attacker models:

``"intruder"``
    an outside intruder who sees the published cells, the relations and the bounds;
``"single-contributor"``
    that intruder and, besides, the contributor of every single-contributor cell
    (``freq == 1``), who knows that cell's value exactly;
``"coalition"``
    that intruder and, besides, every coalition of up to ``coalition_size`` (>= 2)
    contributors pooling their own contributions: it knows each suppressed cell all of
    whose contributors it holds, and that a cell where it holds some is at least their
    sum (:mod:`tabprotect.audit.contributors`). It includes the single contributors.

The required interval is the same against every attacker; the attacker model says whose
knowledge the interval is computed with.

This module depends on the table model only, so the audit, every method and the repair
import it without cycles.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tabprotect.errors import InputError

#: the attacker models a requirement can name (see the module docstring)
ATTACKERS = ("intruder", "single-contributor", "coalition")
#: no-exact-disclosure width of a magnitude-table primary, relative to max(1, |value|);
#: ten times the audit's tolerance (1e-6), so "protected" by a method's LP (tolerance
#: 1e-7) is "protected" for the audit too
MIN_WIDTH_REL = 1e-5


def attacker_name(singleton: bool) -> str:
    """The attacker model of the ``singleton`` flag the methods and the audit take."""
    return "single-contributor" if singleton else "intruder"


@dataclass(frozen=True)
class ProtectionRequirements:
    """The interval every primary cell must keep, and against whom.

    Arrays are per primary cell, in the order of ``primary`` (increasing cell index).

    Attributes
    ----------
    primary : indices of the primary cells (status ``U``)
    value : their values
    required_lower, required_upper : the interval the attacker must not narrow:
        ``max(lb, x - LPL)`` and ``min(ub, x + UPL)``
    need_up, need_down : ``required_upper - x`` and ``x - required_lower`` (never < 0)
    need_width : ``max(SPL, min_width)``: the attacker's interval must be at least this
        wide (the sliding level, and never a point)
    min_width : the no-exact-disclosure width (see the module docstring)
    attacker : ``"intruder"``, ``"single-contributor"`` or ``"coalition"``
    coalition_size : the most contributors in a coalition (``"coalition"``; else 0)
    integer : the attacker reasons in integers (frequency tables)
    room_up : ``ub - x``: how far each primary can move up at all
    sliding : the sliding protection levels ``SPL`` themselves
    """

    primary: np.ndarray
    value: np.ndarray
    required_lower: np.ndarray
    required_upper: np.ndarray
    need_up: np.ndarray
    need_down: np.ndarray
    need_width: np.ndarray
    min_width: np.ndarray
    attacker: str
    integer: bool
    room_up: np.ndarray
    sliding: np.ndarray
    coalition_size: int = 0

    @property
    def binding_width(self) -> np.ndarray:
        """``need_width`` where the levels do not imply it, else the sliding level: a
        primary that can move ``need_up`` up and ``need_down`` down has an interval at
        least ``need_up + need_down`` wide, so a separate width condition there is
        redundant (methods then solve no LP for it)."""
        implied = self.need_up + self.need_down >= self.need_width
        return np.where(implied, self.sliding, self.need_width)

    @property
    def singleton(self) -> bool:
        """Single-contributor attackers are part of the model."""
        return self.attacker == "single-contributor"

    def per_cell(self, n_cells: int, mask: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(required_lower, required_upper, need_width)`` with one entry per cell: nan
        for cells that are not primary (or not in ``mask``)."""
        lo = np.full(n_cells, np.nan)
        hi = np.full(n_cells, np.nan)
        w = np.full(n_cells, np.nan)
        lo[self.primary] = self.required_lower
        hi[self.primary] = self.required_upper
        w[self.primary] = self.need_width
        if mask is not None:
            keep = np.asarray(mask, dtype=bool)
            lo[~keep] = hi[~keep] = w[~keep] = np.nan
        return lo, hi, w

    def moves(self, n_cells: int) -> tuple[np.ndarray, np.ndarray]:
        """Per cell, how far a primary must be able to move up and down (0 elsewhere),
        for methods that search one move per primary (cubes): the levels, with the
        upward amount raised where the sliding width (or the no-exact-disclosure
        width) asks for more than ``need_up + need_down``, as far as ``ub`` allows."""
        up = np.zeros(n_cells)
        down = np.zeros(n_cells)
        u, d = self.need_up, self.need_down
        room_up = self.room_up
        short = self.need_width > u + d
        u = np.where(short, np.minimum(self.need_width - d, room_up), u)
        up[self.primary] = np.maximum(u, 0.0)
        down[self.primary] = np.maximum(d, 0.0)
        return up, down


def protection_requirements(table, attacker: str = "single-contributor", *,
                            integer: bool | None = None,
                            coalition_size: int | None = None) -> ProtectionRequirements:
    """The protection every primary cell of ``table`` needs against ``attacker``.

    Parameters
    ----------
    table : a :class:`~tabprotect.model.table.Table`; primaries have status ``U``
    attacker : ``"intruder"``, ``"single-contributor"`` or ``"coalition"`` (see
        :data:`ATTACKERS`)
    integer : the attacker reasons in integers (default: frequency tables)
    coalition_size : (``"coalition"`` only, required there) the most contributors in a
        coalition, at least 2

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> t = Table.from_arrays({"x": Hierarchy.flat(["a", "b"], total="T")}, [50, 47, 3],
    ...                       status=["S", "U", "S"])
    >>> req = protection_requirements(t, "intruder")
    >>> req.need_up.tolist(), req.need_down.tolist(), req.need_width.round(8).tolist()
    ([0.0], [0.0], [0.00047])
    """
    if attacker not in ATTACKERS:
        raise InputError(f"attacker must be one of {', '.join(ATTACKERS)}, not {attacker!r}")
    if attacker == "coalition":
        if isinstance(coalition_size, bool) or not isinstance(
                coalition_size, (int, np.integer)) or coalition_size < 2:
            raise InputError(f"the coalition attacker needs coalition_size, an integer >= 2 "
                             f"(contributors pooling their data), not {coalition_size!r}")
    elif coalition_size is not None:
        raise InputError(f"coalition_size applies to the coalition attacker only, not to "
                         f"{attacker!r}")
    if integer is None:
        integer = table.kind == "frequency"
    primary = np.flatnonzero(table.status == "U")
    x = table.value[primary].astype(float)
    lb, ub = table.lb[primary], table.ub[primary]
    req_lo = np.maximum(lb, x - table.lpl[primary])
    req_hi = np.minimum(ub, x + table.upl[primary])
    min_width = np.ones(len(primary)) if integer else MIN_WIDTH_REL * np.maximum(1.0, np.abs(x))
    need_width = np.maximum(table.spl[primary].astype(float), min_width)
    return ProtectionRequirements(
        primary=primary, value=x, required_lower=req_lo, required_upper=req_hi,
        need_up=np.maximum(req_hi - x, 0.0), need_down=np.maximum(x - req_lo, 0.0),
        need_width=need_width, min_width=min_width, attacker=attacker, integer=bool(integer),
        room_up=np.maximum(ub - x, 0.0), sliding=table.spl[primary].astype(float),
        coalition_size=int(coalition_size or 0))


def cell_moves(table, cell: int, integer: bool | None = None) -> tuple[float, float]:
    """``(up, down)`` of :meth:`ProtectionRequirements.moves` for one primary cell,
    without building the requirements of the whole table."""
    if integer is None:
        integer = table.kind == "frequency"
    x = float(table.value[cell])
    room_up = max(float(table.ub[cell]) - x, 0.0)
    up = max(min(float(table.upl[cell]), float(table.ub[cell]) - x), 0.0)
    down = max(min(float(table.lpl[cell]), x - float(table.lb[cell])), 0.0)
    min_width = 1.0 if integer else MIN_WIDTH_REL * max(1.0, abs(x))
    width = max(float(table.spl[cell]), min_width)
    if width > up + down:
        up = max(min(width - down, room_up), 0.0)
    return up, down
