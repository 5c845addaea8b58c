"""The Dask engine: microdata larger than one machine (``pip install "tabprotect[dask]"``).

The source is a ``dask.dataframe.DataFrame`` or the path of a CSV/Parquet file or of a
folder of them (a dataset).  Each partition is reduced on a worker by the in-memory engine's
own code (:func:`~tabprotect.tabulate.memory_engine.frame_leaves`: the same checks, sums
and candidates) to a :class:`_Partial`, one row per non-empty leaf cell; the partials are
combined in a tree (:data:`FAN_IN` at a time, on the workers) and the caller receives one
partial of at most one row per leaf cell.  What crosses the network is therefore per-cell,
never per-record, except the reading of the partitions themselves.

The sums of a cell are added partition by partition instead of record by record: with
integer data (and weights that are sums of powers of two) every figure equals the pandas
engine's bit for bit; otherwise sums may differ in the last bits of a double.  The
largest contributions are the same: a cell's candidates are the largest of the union of
its partitions' candidates.  Holdings are matched across partitions by their code, and a
record with an empty holding stays a holding of its own.

The work runs on the Dask cluster of the current :class:`~tabprotect.parallel_dask.
DaskExecutor` (a job's ``[cluster]``), else on Dask's default scheduler (a
``distributed.Client`` made the default, or local threads).  A bad record is one
:class:`~tabprotect.errors.InputError` naming the source, the partition and the row
within it.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from tabprotect.errors import InputError
from tabprotect.model.columns import factorize
from tabprotect.parallel import active_executor
from tabprotect.tabulate.contributions import holding_sums, leaf_candidates
from tabprotect.tabulate.engine import EngineSettings, Leaves, Progress, Source
from tabprotect.tabulate.files import is_parquet
from tabprotect.tabulate.frames import is_dask_frame
from tabprotect.tabulate.memory_engine import frame_leaves
from tabprotect.tabulate.spec import MicrodataSpec

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["dask_leaves", "dask_available", "is_dask_frame", "FAN_IN"]

#: partials combined per task of the reduction tree
FAN_IN = 8


def dask_available() -> bool:
    try:
        import dask.dataframe  # noqa: F401  (optional: the 'dask' extra)
    except ImportError:
        return False
    return True


@dataclass
class _Partial:
    """Per non-empty leaf cell (``cell`` sorted, unique) of some partitions: the figures of
    :class:`~tabprotect.tabulate.engine.Leaves`, and holdings as (cell, code, sum) for
    named holdings and (cell, sum) for records with an empty holding."""

    cell: np.ndarray
    value: np.ndarray
    freq: np.ndarray
    wsum: np.ndarray
    shadow: np.ndarray | None
    cost: np.ndarray | None
    n_missing: np.ndarray
    request_max: np.ndarray | None
    cand_x: np.ndarray | None
    cand_w: np.ndarray | None
    hold: tuple[np.ndarray, np.ndarray, np.ndarray] | None
    lone: tuple[np.ndarray, np.ndarray] | None


def _quiet(message: str) -> None:
    """Progress of a partition: not reported (the caller reports the whole pass)."""


def _partition(frame: pd.DataFrame, spec: MicrodataSpec, source: str) -> _Partial | None:
    """One partition reduced by the in-memory engine, kept to its non-empty leaf cells."""
    if len(frame) == 0:
        return None
    lv = frame_leaves(frame, spec, _quiet, source, file_rows=False)
    rows = np.flatnonzero((lv.freq > 0) | (lv.n_missing > 0))

    def pick(a):
        return None if a is None else a[rows]
    hold = lone = None
    if lv.holdings is not None:
        cells, ids, sums = lv.holdings
        _, uniques = factorize(frame[spec.holding].to_numpy(dtype=object))
        named = ids < len(uniques)
        codes = np.asarray(uniques, dtype=object)
        hold = (cells[named], codes[ids[named]], sums[named])
        lone = (cells[~named], sums[~named])
    return _Partial(lv.cell[rows], lv.value[rows], lv.freq[rows], lv.wsum[rows],
                    pick(lv.shadow), pick(lv.cost), lv.n_missing[rows], pick(lv.request_max),
                    pick(lv.cand_x), pick(lv.cand_w), hold, lone)


def _combine(parts: list[_Partial | None], top_k: int) -> _Partial | None:
    """The partial of the union of the records of ``parts``."""
    parts = [p for p in parts if p is not None]
    if len(parts) <= 1:
        return parts[0] if parts else None
    cells, inv = np.unique(np.concatenate([p.cell for p in parts]), return_inverse=True)
    n = len(cells)

    def total(name):
        if getattr(parts[0], name) is None:
            return None
        return np.bincount(inv, weights=np.concatenate([getattr(p, name) for p in parts]),
                           minlength=n)
    request = None
    if parts[0].request_max is not None:
        request = np.zeros(n)
        np.maximum.at(request, inv, np.concatenate([p.request_max for p in parts]))
    cand_x = cand_w = None
    if parts[0].cand_x is not None:
        width = max(p.cand_x.shape[1] for p in parts)
        rows = np.repeat(inv, np.concatenate([np.full(len(p.cell), p.cand_x.shape[1])
                                              for p in parts]))
        xs = np.concatenate([p.cand_x.ravel() for p in parts])
        ws = np.concatenate([p.cand_w.ravel() for p in parts])
        has = ws > 0
        cand_x, cand_w = leaf_candidates(rows[has], xs[has], ws[has], n, top_k, width)
    hold = lone = None
    if parts[0].hold is not None:
        hc = np.concatenate([p.hold[0] for p in parts])
        codes, uniques = factorize(np.concatenate([p.hold[1] for p in parts]))
        c, h, s = holding_sums(hc, codes.astype(np.int64),
                               np.concatenate([p.hold[2] for p in parts]))
        hold = (c, np.asarray(uniques, dtype=object)[h], s)
        lone = (np.concatenate([p.lone[0] for p in parts]),
                np.concatenate([p.lone[1] for p in parts]))
    return _Partial(cells, total("value"), total("freq"), total("wsum"), total("shadow"),
                    total("cost"), total("n_missing"), request, cand_x, cand_w, hold, lone)


def _leaves(part: _Partial) -> Leaves:
    """The engine's result from the combined partial: named holdings numbered in code
    order, then each record with an empty holding a holding of its own."""
    holdings = None
    if part.hold is not None:
        codes, _ = factorize(part.hold[1])
        lone_ids = int(codes.max(initial=-1)) + 1 + np.arange(len(part.lone[0]),
                                                              dtype=np.int64)
        holdings = (np.r_[part.hold[0], part.lone[0]].astype(np.int64),
                    np.r_[codes.astype(np.int64), lone_ids],
                    np.r_[part.hold[2], part.lone[1]].astype(float))
    return Leaves(part.cell.astype(np.int64), part.value, part.freq, part.wsum, part.shadow,
                  part.cost, part.n_missing, part.request_max, part.cand_x, part.cand_w,
                  holdings)


def _read(path: Path, spec: MicrodataSpec):
    """A Dask DataFrame of the columns ``spec`` needs from a file or a folder of files."""
    import dask.dataframe as dd
    cols = set(spec.columns)
    files = sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else [path]
    parquet = [p for p in files if is_parquet(p)]
    try:
        if parquet:
            frame = dd.read_parquet([str(p) for p in parquet])
            frame = frame[[c for c in frame.columns if str(c).strip() in cols]]
        else:
            text = [str(p) for p in files if p.suffix.lower() in (".csv", ".txt", ".gz")] \
                if path.is_dir() else [str(path)]
            if not text:
                raise InputError(f"{path.name}: no CSV or Parquet files in the folder")
            str_cols = [d.name for d in spec.dims] + ([spec.holding] if spec.holding else [])
            frame = dd.read_csv(text, dtype={c: str for c in str_cols}, assume_missing=True,
                                usecols=lambda c: c.strip() in cols)
    except ImportError:
        raise InputError(f"{path.name}: reading Parquet needs pyarrow: pip install "
                         f"'tabprotect[files]'") from None
    except (ValueError, OSError) as exc:
        raise InputError(f"{path.name}: cannot read ({exc})") from None
    return frame.rename(columns={c: str(c).strip() for c in frame.columns})


def dask_leaves(source: Source, spec: MicrodataSpec, settings: EngineSettings,
                say: Progress) -> Leaves:
    """The engine function (see :mod:`tabprotect.tabulate.engine`)."""
    import dask
    if is_dask_frame(source):
        frame, name = source, "microdata"
    else:
        frame, name = _read(Path(source), spec), Path(source).name
    parts = frame.to_delayed()
    say(f"{len(parts)} partition(s) on Dask")
    nodes = [dask.delayed(_partition)(p, spec, f"{name} (partition {i + 1} of {len(parts)})")
             for i, p in enumerate(parts)]
    while len(nodes) > 1:
        nodes = [dask.delayed(_combine)(nodes[i:i + FAN_IN], spec.top_k)
                 for i in range(0, len(nodes), FAN_IN)]
    client = getattr(active_executor(), "client", None)
    try:
        (total,) = dask.compute(nodes[0], scheduler=client) if client is not None \
            else dask.compute(nodes[0])
    except InputError:
        raise
    except (ValueError, OSError) as exc:   # reading: a file's rows do not parse
        # (the message of the reader may quote a value: only its type is given)
        raise InputError(f"{name}: cannot read ({type(exc).__name__}: a row does not "
                         f"parse, or a column's type differs between partitions)") from None
    if total is None:
        raise InputError(f"{name}: no records")
    return _leaves(total)
