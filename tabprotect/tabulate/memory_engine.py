"""The in-memory engine (``memory``; ``pandas`` names it too): DataFrames and files read into memory, both as
:class:`~tabprotect.model.columns.Columns` (a CSV file never goes through pandas).

Codes are factorized once per dimension, the leaf cell id of a record is
``ravel_multi_index`` of its positions, sums are ``np.bincount`` over the flat cell ids, and
the largest contributions come from :func:`~tabprotect.tabulate.contributions.leaf_candidates`.
The leaf arrays are indexed by the flat cell id directly (every cell of the product, no sort).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from tabprotect.errors import InputError
from tabprotect.model.columns import Columns, as_columns
from tabprotect.tabulate.checks import check_columns, code_positions, flags, numeric_column, \
    records_error, row_label
from tabprotect.tabulate.contributions import candidates_needed, holding_codes, \
    holding_sums, leaf_candidates
from tabprotect.tabulate.engine import EngineSettings, Leaves, Progress, Source
from tabprotect.tabulate.files import read_microdata
from tabprotect.tabulate.spec import MicrodataSpec

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["memory_leaves"]


def memory_leaves(source: Source, spec: MicrodataSpec, settings: EngineSettings,
                  say: Progress) -> Leaves:
    """The engine function (see :mod:`tabprotect.tabulate.engine`)."""
    if isinstance(source, Path):
        return frame_leaves(read_microdata(source, spec), spec, say, source.name,
                            file_rows=source)
    return frame_leaves(as_columns(source), spec, say, "microdata", file_rows=False)


@dataclass
class _Records:
    """Per record: its leaf cell and checked values."""

    cell: np.ndarray               # flat leaf cell id
    values: dict[str, np.ndarray]  # numeric column -> values (missing ones as 0)
    keep: np.ndarray               # counted (False: dropped for a missing value)
    missing: np.ndarray            # had a missing value
    weight: np.ndarray | None
    request: np.ndarray | None
    holding: np.ndarray | None     # holding ids


def frame_leaves(frame: "Columns | pd.DataFrame", spec: MicrodataSpec, say: Progress,
                 source: str, file_rows: "bool | Path") -> Leaves:
    """Leaf aggregates of a frame; ``source`` and ``file_rows`` (the file whose lines name
    the rows; False: a DataFrame's index labels) say how errors name rows."""
    rec = _records(as_columns(frame), spec, say, source, file_rows)
    say("summing cells")
    g = int(np.prod(spec.shape))
    kept = rec.keep.astype(float)
    freq = np.bincount(rec.cell, weights=kept, minlength=g)
    wk = kept * rec.weight if rec.weight is not None else kept
    wsum = np.bincount(rec.cell, weights=wk, minlength=g)

    def wsum_of(x):
        return np.bincount(rec.cell, weights=x * wk, minlength=g)

    value = wsum_of(rec.values[spec.response]) if spec.response else wsum.copy()
    shadow_sum = wsum_of(rec.values[spec.shadow]) if spec.shadow else None
    cost_sum = wsum_of(rec.values[spec.cost]) if spec.cost else None
    nm = np.bincount(rec.cell, weights=rec.missing.astype(float), minlength=g)
    leaves = Leaves(np.arange(g, dtype=np.int64), value, freq, wsum, shadow_sum, cost_sum,
                    nm, None, None, None, None)
    if spec.kind == "magnitude":
        say("largest contributions")
        _contributions(leaves, rec, spec, g)
    return leaves


def _records(frame: Columns, spec: MicrodataSpec, say: Progress, source: str,
             file_rows: bool) -> _Records:
    check_columns(frame.columns, spec, source)
    if len(frame) == 0:
        raise InputError(f"{source}: no records")
    say(f"{len(frame)} records: coding dimensions")
    pos = [code_positions(frame[d.name], d, spec, source, file_rows, frame.index)
           for d in spec.dims]
    cell = np.ravel_multi_index(tuple(pos), spec.shape).astype(np.int64)
    del pos
    keep = np.ones(len(frame), dtype=bool)
    missing = np.zeros(len(frame), dtype=bool)
    vals: dict[str, np.ndarray] = {}
    for col in spec.numeric_columns:
        arr = numeric_column(frame, col, "value of", source, file_rows,
                             allow_missing=spec.missing != "error")
        nan = np.isnan(arr)
        if nan.any():
            missing |= nan
            if spec.missing == "drop":
                keep &= ~nan
            arr = np.where(nan, 0.0, arr)
        vals[col] = arr
    w = None
    if spec.weight is not None:
        w = numeric_column(frame, spec.weight, "weight", source, file_rows, allow_missing=False)
        if (w <= 0).any():
            rows = np.flatnonzero(w <= 0)[:3]
            raise InputError(f"{source} {row_label(rows[:1], frame.index, file_rows)}: weight "
                             f"'{spec.weight}' must be positive")
    req = None
    if spec.request is not None:
        req, bad = flags(frame[spec.request])
        if bad.any():
            raise records_error(source, bad, frame.index, file_rows,
                                f"request '{spec.request}' is not a flag",
                                "; give 1/true/yes or 0/false/no (or leave it empty)")
    hold = holding_codes(frame[spec.holding]) if spec.holding is not None else None
    if req is not None and spec.kind != "magnitude":
        raise InputError("the request variable applies to magnitude tables (give a response)")
    return _Records(cell, vals, keep, missing, w, req, hold)


def _contributions(leaves: Leaves, rec: _Records, spec: MicrodataSpec, g: int) -> None:
    """Fill the candidates, request maxima and holding sums of the counted records."""
    sel = np.flatnonzero(rec.keep) if not rec.keep.all() else None
    x = rec.values[spec.rule_var]
    ww = rec.weight if rec.weight is not None else np.ones(len(x))
    gi = rec.cell
    if sel is not None:
        x, ww, gi = x[sel], ww[sel], gi[sel]
    K = candidates_needed(spec.top_k, float(ww.min()) if len(ww) else 1.0)
    leaves.cand_x, leaves.cand_w = leaf_candidates(gi, x, ww, g, spec.top_k, K)
    if rec.request is not None:
        r = rec.request if sel is None else rec.request[sel]
        leaves.request_max = np.zeros(g)
        if r.any():
            np.maximum.at(leaves.request_max, gi[r], x[r])
    if rec.holding is not None:
        hh = rec.holding if sel is None else rec.holding[sel]
        leaves.holdings = holding_sums(gi, hh, x)
