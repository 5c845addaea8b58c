"""The cell key method: published value = original + noise looked up by the cell key.

Counts: the noise of a cell with original count ``n`` and cell key ``ck`` is the ptable entry
of row ``min(n, imax)`` whose interval holds ``ck`` (:meth:`PTable.lookup`).

Magnitudes (sums): the noise is scaled by the cell's largest contribution, as in the ABS
approach and the ``cellKey`` package: ``published = x + m * top1 * v / D`` where ``v`` comes
from a magnitude noise table (zero mean, variance ``V``, ``1 <= |v| <= D``: ``v = 0`` never
occurs) looked up with the second cell key.  Hence

* the noise variance of a cell is ``(m * top1)**2 * V / D**2``;
* the largest contributor is protected: whoever knows every other contribution still sees
  ``top1`` off by ``m * top1 * |v| / D``, i.e. a relative error between ``m / D`` and ``m``.

A cell with no contributors stays zero.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Mapping

import numpy as np
import pandas as pd

from tabprotect.errors import InputError
from tabprotect.model.hierarchy import Hierarchy
from tabprotect.model.table import Table
from tabprotect.tabulate import tabulate

from .keys import cell_keys, check_record_keys, magnitude_keys
from .ptable import PTable, count_ptable

__all__ = ["CellKeySettings", "MagnitudeNoise", "CellKeyResult", "tabulate_keys", "perturb"]

KEY_SUM = "cellkey_sum"   # Table.extra entry: the cell's sum of record keys


@dataclass(frozen=True)
class MagnitudeNoise:
    """Noise for sums: ``m * top1 * v / D`` with ``v`` from a zero-free maximum-entropy table."""

    m: float = 0.1   # noise scale as a share of the largest contribution (the protection)
    D: int = 5       # steps of the noise: |v| / D in {1/D, ..., 1}
    V: float = 3.0   # variance of v: Var(noise) = (m top1)^2 V / D^2

    def __post_init__(self):
        if not (np.isfinite(self.m) and 0 < self.m <= 1):
            raise InputError("magnitude noise: m must lie in (0, 1] (a share of the largest "
                             "contribution; m <= 1 keeps sums of non-negative values >= 0)")

    def table(self) -> PTable:
        return count_ptable(self.D, self.V, js=0, pstay=0.0)


@dataclass(frozen=True)
class CellKeySettings:
    """Settings of one cell key run (recorded in the result)."""

    D: int = 3                 # largest change of a count: bounds the damage to any cell
    V: float = 2.0             # variance of the count noise: what the intruder must see through
    js: int = 0                # counts 1..js are never published (e.g. 2: no 1s and 2s)
    pstay: float | None = None  # P(count unchanged); None: the maximum-entropy value
    mono: bool = False         # ptable's monotony: noise probabilities fall with |noise|
    key: str = "rkey"          # microdata column of the record keys (add_record_keys)
    magnitude: MagnitudeNoise = field(default_factory=MagnitudeNoise)  # noise of sums
    ptable_file: str | None = None  # a tau-Argus ptable file instead of (D, V, js, pstay)

    def ptable(self) -> PTable:
        if self.ptable_file is not None:
            from .ptable import read_ptable
            return read_ptable(self.ptable_file)
        return count_ptable(self.D, self.V, self.js, self.pstay, self.mono)


@dataclass(eq=False)
class CellKeyResult:
    """Published values of a table perturbed by the cell key method.

    ``table`` holds the original (confidential) values; ``published`` the values to release.
    """

    table: Table
    published: np.ndarray
    noise: np.ndarray
    cell_key: np.ndarray
    ptable: PTable
    settings: CellKeySettings

    @property
    def published_table(self) -> Table:
        """The table with the published values (counts: also ``freq``)."""
        if self.table.kind == "frequency":
            return self.table.replace(value=self.published.astype(float),
                                      freq=self.published.astype(float))
        return self.table.replace(value=self.published.astype(float))

    def non_additivity(self) -> dict:
        from .disclosure import non_additivity
        return non_additivity(self.table, self.published)

    def summary(self) -> dict:
        """Counts of cells and relations only: no cell value (original or published); what
        a table's user needs (every cell perturbed, the largest change of a count, the
        ptable's row variances) with them."""
        changed = self.noise != 0
        out = {"method": "cellkey", "kind": self.table.kind, "cells": int(self.published.size),
               "cells_changed": int(changed.sum()), "every_cell_perturbed": True,
               "settings": _settings_dict(self.settings)}
        if self.table.kind == "frequency":
            out["max_deviation"] = int(np.abs(self.ptable.v).max())
            out["row_variance"] = [round(float(x), 6) for x in self.ptable.variance]
        else:
            mag = self.settings.magnitude
            out["noise"] = {"sd_per_top1": round(mag.m * float(np.sqrt(mag.V)) / mag.D, 6),
                            "top1_relative_error_min": round(mag.m / mag.D, 6),
                            "top1_relative_error_max": mag.m}
        out["additivity"] = self.non_additivity()
        return out


def _settings_dict(s: CellKeySettings) -> dict:
    """The settings as the summary gives them: a ptable file by its name (its folder is
    the server's or the office's, not the table's)."""
    d = asdict(s)
    d["magnitude"] = asdict(s.magnitude)
    if s.ptable_file is not None:
        d["ptable_file"] = Path(s.ptable_file).name
    return d


def tabulate_keys(microdata: pd.DataFrame | str, dimensions: Mapping[str, Hierarchy],
                  response: str | None = None, *, key: str = "rkey", top_k: int = 1,
                  name: str = "", **kwargs) -> Table:
    """:func:`tabulate` the microdata and carry each cell's sum of record keys in
    ``extra["cellkey_sum"]`` (one pass: the key column is tabulated as the cost variable)."""
    if "cost" in kwargs or "weight" in kwargs:
        raise InputError("cell key tables: 'cost' and 'weight' are not available (the key "
                         "sum uses the cost slot; counts are unweighted record counts)")
    if isinstance(microdata, pd.DataFrame):
        if key not in microdata.columns:
            raise InputError(f"microdata has no record key column '{key}' "
                             "(add one with add_record_keys or the job's record_keys)")
        check_record_keys(microdata[key], key)
    t = tabulate(microdata, dimensions, response, cost=key, top_k=top_k, name=name, **kwargs)
    extra = dict(t.extra)
    extra[KEY_SUM] = t.cost
    return t.replace(cost=None, extra=extra)


def perturb(data: Table | pd.DataFrame | str, dimensions: Mapping[str, Hierarchy] | None = None,
            response: str | None = None, *, settings: CellKeySettings | None = None,
            ptable: PTable | None = None, name: str = "", **tabulate_kwargs) -> CellKeyResult:
    """Perturb a table by the cell key method.

    ``data`` is a :class:`Table` made by :func:`tabulate_keys` (it carries the key sums), or
    microdata (a DataFrame with a record-key column, or a file) tabulated here over
    ``dimensions`` (a count table, or the sum of ``response``).

    Examples
    --------
    >>> from tabprotect.cellkey import add_record_keys
    >>> df = add_record_keys(pd.DataFrame({"g": list("aaabbbbbbb")}), seed=3)
    >>> res = perturb(df, {"g": Hierarchy.flat(["a", "b"], total="T")})
    >>> res.published.shape, bool((res.published >= 0).all())
    ((3,), True)
    """
    settings = settings or CellKeySettings()
    if isinstance(data, Table):
        if dimensions is not None or response is not None:
            raise InputError("perturb: give dimensions/response with microdata, not a Table")
        table = data
    else:
        if dimensions is None:
            raise InputError("perturb: microdata needs dimensions")
        table = tabulate_keys(data, dimensions, response, key=settings.key, name=name,
                              **tabulate_kwargs)
    if KEY_SUM not in table.extra:
        raise InputError(f"table {table.name or ''}: no cell keys (tabulate it with "
                         "tabulate_keys from microdata with record keys)".replace("  ", " "))
    sums = np.asarray(table.extra[KEY_SUM])
    pt = ptable or settings.ptable()
    if table.kind == "frequency":
        counts = np.rint(table.freq).astype(np.int64)
        ck = cell_keys(sums)
        noise = pt.lookup(counts, ck)
        published = counts + noise
    else:
        mag = settings.magnitude
        ck = magnitude_keys(sums)
        if table.top is None:
            raise InputError("magnitude cell key: the table needs its largest contributions")
        v = mag.table().lookup(np.full(sums.size, 10 ** 6), ck)
        top1 = table.top[:, 0]
        noise = mag.m * top1 * v / mag.D
        noise[table.freq == 0] = 0.0
        published = table.value + noise
    return CellKeyResult(table, published, noise, ck, pt, settings)
