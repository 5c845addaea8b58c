"""The engine interface: what a tabulation engine receives and what it returns.

An engine reduces the records to **leaf cells** (one combination of lowest-level codes);
everything above the leaves (totals, subtotals, the largest contributions of aggregates,
holdings across leaves) is computed once, by :mod:`tabprotect.tabulate.assemble`, the same
for every engine.  An engine is a function::

    leaves(source, spec, settings, say) -> Leaves

* ``source``: a ``pandas.DataFrame``, :class:`~tabprotect.model.columns.Columns` or the
  ``Path`` of a CSV/Parquet file (existing);
* ``spec``: the validated :class:`~tabprotect.tabulate.spec.MicrodataSpec` (columns,
  hierarchies, ``top_k``, missing-value policy, unknown-code positions);
* ``settings``: the :class:`EngineSettings` of the call;
* ``say``: a progress callback taking a short message.

It raises :class:`~tabprotect.errors.InputError` on bad records, with one line naming the
file or frame, the column and the first rows, and the same checks as the other engines
(see :mod:`tabprotect.tabulate.checks`).  Engines are listed in
:mod:`tabprotect.tabulate.engines`.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Union

import numpy as np

from tabprotect.tabulate.spec import MicrodataSpec

__all__ = ["Leaves", "EngineSettings", "Engine", "Source", "Progress"]

#: a DataFrame (pandas or Dask), :class:`~tabprotect.model.columns.Columns` or a path
Source = Union[Any, Path]
Progress = Callable[[str], None]


@dataclass
class Leaves:
    """An engine's result: per-leaf-cell aggregates, one entry per row of ``cell``.

    ``cell`` holds flat cell ids in the full product shape ``spec.shape`` (every hierarchy
    position, totals included; ``numpy.ravel_multi_index`` of the leaf positions).  A cell id
    may repeat (e.g. two code spellings sent to one ``unknown_code``): repeated rows are
    summed, their candidates merged.  Cells absent from ``cell`` are empty.
    """

    cell: np.ndarray                 # int64 flat cell ids
    value: np.ndarray                # (weighted) sum of the response; (weighted) count if none
    freq: np.ndarray                 # records counted (unweighted)
    wsum: np.ndarray                 # sum of the weights (= freq without weights)
    shadow: np.ndarray | None        # (weighted) sum of the shadow variable
    cost: np.ndarray | None          # (weighted) sum of the cost variable
    n_missing: np.ndarray            # records with a missing response/shadow/cost
    request_max: np.ndarray | None   # largest rule-variable contribution flagged by request
    cand_x: np.ndarray | None        # (rows x K) largest rule-variable contributions, largest
    #                                  first, covering the first top_k units of weight
    cand_w: np.ndarray | None        # their weights (0 where no candidate)
    holdings: tuple[np.ndarray, np.ndarray, np.ndarray] | None  # (cell, holding id, sum of
    #                                  the rule variable) per leaf cell and holding


@dataclass(frozen=True)
class EngineSettings:
    """Resources an engine may use; an engine ignores the fields it has no use for."""

    #: worker threads (duckdb ``SET threads``); None: the engine's default (all cores)
    threads: int | None = None
    #: memory held before spilling to disk (duckdb ``SET memory_limit``, e.g. "2GB")
    memory_limit: str | None = None


@dataclass(frozen=True)
class Engine:
    """A named tabulation engine."""

    #: the name given as ``engine=`` and in job files
    name: str
    #: ``leaves(source, spec, settings, say) -> Leaves``
    leaves: Callable[[Source, MicrodataSpec, EngineSettings, Progress], Leaves]
    #: whether the optional packages it needs are importable (``engine="auto"`` skips it
    #: when not)
    available: Callable[[], bool]
