"""The tabulation engines by name, and the choice of ``engine="auto"``.

A new engine is a module with a ``leaves(source, spec, settings, say) -> Leaves`` function
(see :mod:`tabprotect.tabulate.engine`) and one entry in :data:`ENGINES`; ``auto`` chooses
only among the engines listed in :data:`AUTO_FOR_FILES` / :data:`AUTO_FOR_FRAMES`.
An engine's module is imported when the engine runs (or is asked whether it is available):
the duckdb and dask engines and what they import stay out of a job that tabulates in
memory.
"""
from __future__ import annotations

import importlib
from pathlib import Path
from typing import Sequence

import numpy as np

from tabprotect.errors import InputError, column_names
from tabprotect.model.columns import read_table_columns, text_values
from tabprotect.tabulate.engine import Engine, Source
from tabprotect.tabulate.frames import is_dask_frame

__all__ = ["ENGINES", "ENGINE_NAMES", "AUTO_FOR_FILES", "AUTO_FOR_FRAMES", "AUTO_SMALL_FILE_BYTES",
           "auto_order", "choose_engine", "distinct_codes"]


def _always() -> bool:
    return True


class _Deferred:
    """A function of an engine's module, imported at its first call."""

    def __init__(self, module: str, name: str):
        self.module, self.name = module, name

    def __call__(self, *args):
        return getattr(importlib.import_module(self.module), self.name)(*args)


ENGINES: dict[str, Engine] = {
    "memory": Engine("memory", _Deferred("tabprotect.tabulate.memory_engine", "memory_leaves"),
                     _always),
    "duckdb": Engine("duckdb", _Deferred("tabprotect.tabulate.duckdb_engine", "duckdb_leaves"),
                     _Deferred("tabprotect.tabulate.duckdb_engine", "duckdb_available")),
    "dask": Engine("dask", _Deferred("tabprotect.tabulate.dask_engine", "dask_leaves"),
                   _Deferred("tabprotect.tabulate.dask_engine", "dask_available")),
}
#: other names of engines (``pandas``: the in-memory engine, which reads DataFrames and
#: tabulates with numpy, under the name job files and calls give it)
ENGINE_NAMES = {"pandas": "memory"}

#: ``auto`` for a file: the first available of these (duckdb streams files larger than memory)
AUTO_FOR_FILES = ("duckdb", "memory")
#: ``auto`` for a file of at most this many bytes: in memory (reading it whole takes a fraction
#: of a second, where importing and starting duckdb costs more than the tabulation)
AUTO_SMALL_FILE_BYTES = 16 * 2**20
#: ``auto`` for a DataFrame: the first available of these (the frame is in memory already)
AUTO_FOR_FRAMES = ("memory",)


def choose_engine(name: str, source: Source) -> Engine:
    """The engine named ``name``; for ``"auto"`` the first available for the source."""
    if name == "auto":
        return next(ENGINES[e] for e in auto_order(source) if ENGINES[e].available())
    name = ENGINE_NAMES.get(name, name)
    if name not in ENGINES:
        raise InputError(f"unknown tabulation engine {name!r} ({', '.join(ENGINES)}, auto)")
    return ENGINES[name]


def auto_order(source: Source) -> tuple[str, ...]:
    """The engines ``auto`` tries for ``source``, in order: a DataFrame and a small file
    (at most :data:`AUTO_SMALL_FILE_BYTES`) are read in memory, a larger file to duckdb first, a
    Dask DataFrame to dask."""
    if is_dask_frame(source):
        return ("dask",)
    if not isinstance(source, (str, Path)):     # a DataFrame or Columns
        return AUTO_FOR_FRAMES
    try:
        small = Path(source).stat().st_size <= AUTO_SMALL_FILE_BYTES
    except OSError:               # not found: the engine reports it, naming the file
        small = False
    return AUTO_FOR_FRAMES if small else AUTO_FOR_FILES


def distinct_codes(path: Path, dims: Sequence[str], engine: str = "auto"
                   ) -> dict[str, np.ndarray]:
    """Distinct codes of each dimension column, sorted (to build 'levels'/'flat'
    hierarchies): read in memory where the in-memory engine reads the file, by duckdb
    otherwise."""
    in_memory = ENGINE_NAMES.get(engine, engine) == "memory" or (engine == "auto" and
                                       auto_order(Path(path)) == AUTO_FOR_FRAMES)
    if not in_memory:
        from tabprotect.tabulate.duckdb_engine import distinct_codes as duckdb_distinct_codes
        return duckdb_distinct_codes(path, dims)
    columns = read_table_columns(path)
    missing = [d for d in dims if d not in columns]
    if missing:
        raise InputError(f"{Path(path).name}: dimension column(s) {missing} not found "
                         f"({column_names(columns.columns)})")
    return {d: np.array(sorted({c for c in text_values(columns[d]) if c is not None}),
                        dtype=object) for d in dims}
