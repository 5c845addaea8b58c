"""Job files: one TOML format shared by every command (``tabprotect audit|primary|protect|
round|compare|risk ... JOB.toml``).

A job names its input (a cells file or a microdata file), the dimensions and their
hierarchies, and one section per step.  Paths are relative to the job file.  See
``docs/jobs.md`` for the full reference; a minimal job::

    [input]
    cells = "cells.csv"            # long CSV/Parquet: one column per dimension + value, freq
    dimensions = ["region", "nace"]
    value = "value"
    freq = "freq"
    compute_totals = true          # totals absent from the file are computed

    [hierarchies.region]
    pairs = "region_pairs.csv"     # or hrc = "region.hrc", levels = [1, 3], flat = true
    total = "Total"

    [output]
    dir = "out"
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from tabprotect.errors import InputError
from tabprotect.model import Hierarchy, Table, read_frame
from tabprotect.io.output import write_frame  # noqa: F401  (the one writer; re-exported)

KNOWN_SECTIONS = {"input", "hierarchies", "microdata", "rules", "primary", "protect",
                  "audit", "round", "compare", "risk", "perturb", "output", "report", "job",
                  "tables"}


@dataclass
class Job:
    """A parsed job file: its sections and the folder its paths are relative to."""

    spec: dict[str, Any]
    base: Path
    path: Path | None = None
    name: str = "job"
    # when set, every path of the job must resolve (symlinks followed) inside this folder
    root: Path | None = None

    def section(self, name: str) -> dict[str, Any]:
        value = self.spec.get(name, {})
        if not isinstance(value, dict):
            raise InputError(f"{self.label}: [{name}] must be a table")
        return value

    @property
    def label(self) -> str:
        return self.path.name if self.path else self.name

    def resolve(self, relative: str | Path) -> Path:
        """A path of the job, relative to the job file's folder."""
        p = Path(relative)
        p = p if p.is_absolute() else self.base / p
        if self.root is not None:
            root = Path(self.root).resolve()
            if not p.resolve().is_relative_to(root):
                raise InputError(f"{self.label}: a path of the job is outside its folder "
                                 f"(give the plain name of an uploaded file)")
        return p

    def output_dir(self, override: str | Path | None = None) -> Path:
        out = Path(override) if override else self.resolve(self.section("output").get("dir", "out"))
        out.mkdir(parents=True, exist_ok=True)
        return out


def load_job(path: str | Path | None = None, spec: dict | None = None,
             base: str | Path | None = None) -> Job:
    """Read a TOML job file (or wrap an already parsed ``spec`` dict).

    Examples
    --------
    >>> job = load_job(spec={"input": {"cells": "c.csv", "dimensions": ["r"]}}, base=".")
    >>> job.section("input")["dimensions"]
    ['r']
    """
    if spec is None:
        if path is None:
            raise InputError("no job file given")
        path = Path(path)
        if not path.exists():
            raise InputError(f"{path}: job file not found")
        try:
            spec = tomllib.loads(path.read_text())
        except tomllib.TOMLDecodeError as exc:
            raise InputError(f"{path.name}: not valid TOML ({exc})") from None
        base = path.parent
    unknown = set(spec) - KNOWN_SECTIONS
    if unknown:
        raise InputError(f"{Path(path).name if path else 'job'}: unknown section(s) "
                         f"{sorted(unknown)} (known: {', '.join(sorted(KNOWN_SECTIONS))})")
    return Job(spec=spec, base=Path(base or "."), path=Path(path) if path else None)


def build_hierarchy(job: Job, name: str, codes_in_data: pd.Series | None = None) -> Hierarchy:
    """The hierarchy of dimension ``name`` from ``[hierarchies.NAME]`` (flat when absent)."""
    spec = job.section("hierarchies").get(name, {"flat": True})
    total = str(spec.get("total", "Total"))
    label = f"{job.label} [hierarchies.{name}]"
    if "pairs" in spec:
        pairs = read_frame(job.resolve(spec["pairs"]), dtype_str=["parent", "child"])
        return Hierarchy.from_pairs(pairs, name=name, source=Path(spec["pairs"]).name)
    if "hrc" in spec:
        return Hierarchy.from_hrc(job.resolve(spec["hrc"]), total=total,
                                  lead=spec.get("lead", "@"), name=name)
    if "levels" in spec:
        if codes_in_data is None:
            raise InputError(f"{label}: 'levels' needs the codes from the data")
        codes = codes_in_data.astype(str).str.strip().unique()
        codes = [c for c in codes if c != total]
        return Hierarchy.from_levels(codes, spec["levels"], total=total, name=name)
    if "columns" in spec:
        frame = read_frame(job.resolve(spec["file"]), dtype_str=spec["columns"])
        return Hierarchy.from_columns(frame, spec["columns"], total=total, name=name)
    if "codes" in spec:
        return Hierarchy.flat([str(c) for c in spec["codes"]], total=total, name=name)
    if spec.get("flat", False) or not spec:
        if codes_in_data is None:
            raise InputError(f"{label}: a flat hierarchy needs codes (give 'codes')")
        codes = pd.unique(codes_in_data.astype(str).str.strip())
        return Hierarchy.flat([c for c in codes if c != total], total=total, name=name)
    raise InputError(f"{label}: give one of pairs, hrc, levels, columns, codes or flat")


def build_table(job: Job, progress=None) -> Table:
    """The job's table: from ``[input] cells`` or, with ``[microdata]``, by tabulation."""
    if "microdata" in job.spec:
        from tabprotect.tabulate import tabulate_job  # the tabulation module owns this path
        return tabulate_job(job, progress=progress)
    spec = job.section("input")
    label = f"{job.label} [input]"
    if "cells" not in spec:
        raise InputError(f"{label}: give 'cells' (a cells file) or a [microdata] section")
    dims = spec.get("dimensions")
    if not dims:
        raise InputError(f"{label}: give 'dimensions' (the code columns)")
    path = job.resolve(spec["cells"])
    frame = read_frame(path, dtype_str=dims)
    for d in dims:
        if d not in frame.columns:
            raise InputError(f"{path.name}: dimension column '{d}' not found "
                             f"(columns: {', '.join(frame.columns)})")
    hierarchies = {d: build_hierarchy(job, d, frame[d]) for d in dims}
    freq = spec.get("freq", "freq")
    return Table.from_frame(
        frame, hierarchies, value=spec.get("value", "value"),
        freq=freq if freq in frame.columns else None,
        top=spec.get("top"), cost=spec.get("cost"), lb=spec.get("lb"), ub=spec.get("ub"),
        status=spec.get("status"), upl=spec.get("upl"), lpl=spec.get("lpl"),
        spl=spec.get("spl"), extra=list(spec.get("extra", [])), compute_totals=bool(spec.get("compute_totals", False)),
        tolerance=float(spec.get("tolerance", 1e-6)), kind=spec.get("kind"),
        name=spec.get("name", path.stem), source=path.name)


def as_float_or_none(x) -> float | None:
    return None if x is None else float(x)
