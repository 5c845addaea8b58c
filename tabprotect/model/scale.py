"""Value units the solvers handle: tables with values from 1e-3 to 1e12 are solved in
scaled units.

HiGHS works with absolute feasibility tolerances (1e-7) and rejects coefficients and bounds
beyond 1e15-1e20; a table of values around 1e11 (national accounts in euros) makes big-M
rows and bounds overflow, and one of values around 1e-3 falls inside the tolerances.  The
methods and the audit therefore run on the table divided by :func:`value_scale`, an exact
power of two (so scaling and unscaling lose no bits), which brings the largest value into
``[2**16, 2**17)``.  Tables whose largest value lies in ``[1, 2**26]`` are not scaled: they
are in the range the solvers handle and keep their exact numbers.  Frequency tables are
never scaled (their counts are integers, and integrality does not survive scaling).
"""
from __future__ import annotations

import math

import numpy as np

from tabprotect.errors import InputError
from tabprotect.model.table import Table

#: the largest absolute value of a table left unscaled lies in [LOW, HIGH]
UNSCALED_LOW, UNSCALED_HIGH = 1.0, 2.0 ** 26
#: a scaled table's largest absolute value lies in [2**TARGET_EXPONENT, 2**(TARGET_EXPONENT+1))
TARGET_EXPONENT = 16
#: the smallest exponent of a scale: its inverse, 2**-MIN_EXPONENT, is a finite float
MIN_EXPONENT = -1000


def value_scale(table: Table) -> float:
    """The power of two the table's values are divided by before solving (1.0: none).

    Examples
    --------
    >>> value_scale(Table.from_relations([3e11, 1e11, 2e11], [[1.0, -1.0, -1.0]]))
    4194304.0
    >>> value_scale(Table.from_relations([300.0, 100.0, 200.0], [[1.0, -1.0, -1.0]]))
    1.0
    """
    if table.kind == "frequency":
        return 1.0
    v = np.abs(table.value[np.isfinite(table.value)])
    top = float(v.max()) if len(v) else 0.0
    if top == 0.0 or UNSCALED_LOW <= top <= UNSCALED_HIGH:
        return 1.0
    exponent = math.floor(math.log2(top)) - TARGET_EXPONENT
    if exponent < MIN_EXPONENT:
        raise InputError(f"{table.name or 'table'}: every value is below 2**"
                         f"{MIN_EXPONENT + TARGET_EXPONENT} in absolute value, too small "
                         f"to solve in any unit: give the values in larger units")
    return 2.0 ** exponent


def scaled_table(table: Table, factor: float) -> Table:
    """The table with every value-unit field (values, a-priori bounds, protection levels,
    top contributions) multiplied by ``factor``; counts, statuses and costs unchanged."""
    changes = {k: getattr(table, k) * factor for k in ("value", "lb", "ub", "upl", "lpl",
                                                        "spl")}
    if table.top is not None:
        changes["top"] = table.top * factor
    return table.replace(**changes)
