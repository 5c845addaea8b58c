"""What every result object shares (protection, rounding, audits), and the published table.

Every result has

``passed``
    the audit passed (a result whose audit failed must not be published);
``published()``
    the publishable pandas frame: code columns, ``value`` (blank -- NaN -- for a
    suppressed cell; the rounded value for a rounded table) and, for suppression, the
    ``status`` letter.  Nothing confidential: no value, contributor count or largest
    contribution of a suppressed cell, no true count beside a rounded one;
``params``
    the settings that were applied (nothing that was not);
``seconds``
    wall-clock seconds of the call;
``notes``
    plain-language remarks;
``summary()``
    a dict of counts and figures for reports;
``to_frame(confidential=False, *, ...)``
    one row per cell with the result's details; the true values of unpublished cells
    only with ``confidential=True``.  ``confidential`` is the only positional parameter
    of every result type; anything else a type offers (the audits' ``table`` for row
    labels, filters such as ``only_unpublished``) is keyword-only, so
    ``to_frame()``, ``to_frame(True)`` and ``to_frame(confidential=True)`` mean the same
    on every result.

Results that hold a table expose the *published* one as ``table`` and the table with the
true values as ``confidential_table``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from tabprotect.model.status import SUPPRESSED_LETTER as _SUPPRESSED_LETTER, is_suppressed
from tabprotect.model.table import Table

if TYPE_CHECKING:
    import pandas as pd


class PrimaryCountNote(str):
    """A note that counts primary cells (how many a repair round found short, how many
    the witnesses reached, the primaries a check multiplies by the candidates): the
    terminal and the confidential report show it; the trail and any public output
    withhold it (beside the number of suppressed cells a count can say that every
    suppressed cell is a primary).  A plain ``str`` everywhere else.

    >>> n = PrimaryCountNote("3 short primaries")
    >>> n, isinstance(n, str), isinstance(str(n), PrimaryCountNote)
    ('3 short primaries', True, False)
    """

    __slots__ = ()


@runtime_checkable
class Result(Protocol):
    """The protocol of :mod:`tabprotect.results` (see the module docstring)."""

    params: dict[str, Any]
    notes: list[str]

    @property
    def passed(self) -> bool: ...

    @property
    def seconds(self) -> float: ...

    def published(self) -> pd.DataFrame: ...

    def summary(self) -> dict[str, Any]: ...

    def to_frame(self, confidential: bool = False) -> pd.DataFrame: ...


def published_table(table: Table, values: np.ndarray | None = None) -> Table:
    """``table`` as it may be published: suppressed cells (status U or M) without value,
    contributor count or largest contributions (NaN), and nothing derived from the
    confidential data (protection levels 0, no cost column, no extra arrays).

    ``values``: publish these values instead (a rounded table); then no cell keeps its
    true value or count (a frequency table's ``freq`` is its rounded count).

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> t = Table.from_arrays({"x": Hierarchy.flat(["a", "b"], total="T")}, [9, 4, 5],
    ...                       status=["S", "U", "M"])
    >>> published_table(t).value.tolist()
    [9.0, nan, nan]
    """
    n = table.n_cells
    if values is None:
        hidden = is_suppressed(table.status)
        value = np.where(hidden, np.nan, table.value)
        freq = np.where(hidden, np.nan, table.freq)
        top = None
        if table.top is not None:
            top = np.where(hidden[:, None], np.nan, table.top)
    else:
        value = np.asarray(values, dtype=float)
        if value.shape != (n,):
            raise ValueError(f"published_table: {value.size} values for {n} cells")
        freq = value.copy() if table.kind == "frequency" else np.full(n, np.nan)
        top = None
    return table.replace(value=value, freq=freq, top=top, upl=np.zeros(n), lpl=np.zeros(n),
                         spl=np.zeros(n), cost=None, extra={})


#: the status of a suppressed cell in a published table (see
#: :data:`tabprotect.model.status.SUPPRESSED_LETTER`)
SUPPRESSED_LETTER = _SUPPRESSED_LETTER


def publication_frame(table: Table, with_status: bool = True) -> pd.DataFrame:
    """The published frame of a table made by :func:`published_table`: code columns,
    ``value`` (NaN where suppressed) and ``status`` (:data:`SUPPRESSED_LETTER` where
    suppressed, primary or secondary).

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> t = Table.from_arrays({"x": Hierarchy.flat(["a", "b"], total="T")}, [9, 4, 5],
    ...                       status=["S", "U", "M"])
    >>> publication_frame(published_table(t))["status"].tolist()
    ['S', 'X', 'X']
    """
    return table.to_frame(("value", "status") if with_status else ("value",))
