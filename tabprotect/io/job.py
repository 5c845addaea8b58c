"""Job files: one TOML format shared by every command (``tabprotect audit|primary|protect|
round|compare|risk ... JOB.toml``) and the service, and the table a job describes.

A job names its input (a cells file or a microdata file), the dimensions and their
hierarchies, and one section per step.  Paths are relative to the job file.  A job is
checked against the schema (:mod:`tabprotect.io.schema`) when it is loaded, before any
work; :func:`build_table` reads its cells file or tabulates its microdata.  See
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

import copy
import math
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from tabprotect.errors import InputError, TooLargeError, column_names
from tabprotect.io.schema import check_job, file_keys
from tabprotect.model import Hierarchy, Table, read_frame
from tabprotect.model.columns import factorize, parse_numbers, read_table_columns, \
    row_place, text_values
from tabprotect.io.output import write_frame  # noqa: F401  (the one writer; re-exported)
from tabprotect.tabulate.correspondence import hierarchy_from_correspondence
from tabprotect.tabulate.spec import MICRODATA_KEYS

@dataclass
class Job:
    """A parsed, checked job file: its sections and the folder its paths are relative to."""

    spec: dict[str, Any]
    base: Path
    path: Path | None = None
    name: str = "job"
    # when set, every path of the job must resolve (symlinks followed) inside this folder
    root: Path | None = None
    # when set, a job whose tables would hold more cells is refused before they are made
    max_cells: int | None = None

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

    def output_folder(self, override: str | Path | None = None) -> Path:
        """The output folder: ``override`` (e.g. ``-o``) or ``[output] dir``."""
        return Path(override) if override else self.resolve(
            self.section("output").get("dir", "out"))

    def merged(self, overrides: dict[str, dict[str, Any]]) -> "Job":
        """This job with the keys of ``overrides`` replaced (checked like the file)."""
        spec = copy.deepcopy(self.spec)
        for section, keys in overrides.items():
            if keys is None:
                spec.pop(section, None)
                continue
            given = {k: v for k, v in keys.items() if v is not None}
            if given:
                spec.setdefault(section, {}).update(given)
        check_job(spec, self.label)
        return replace(self, spec=spec)

    def input_files(self) -> list[Path]:
        """The job file and every file its keys name (their checksums go into the trail)."""
        files = [self.path] if self.path is not None else []
        for value in file_keys(self.spec):
            p = self.resolve(value)
            if p.is_file() and p not in files:
                files.append(p)
        return files


def load_job(path: str | Path | None = None, spec: dict | None = None,
             base: str | Path | None = None) -> Job:
    """Read a TOML job file (or wrap an already parsed ``spec`` dict), checked against the
    schema (:mod:`tabprotect.io.schema`) before any work.

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
        if not path.is_file():
            raise InputError(f"{path}: job file not found")
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"{path.name}: not UTF-8 text (byte {exc.start})") from None
        try:
            spec = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise InputError(f"{path.name}: not valid TOML ({exc})") from None
        base = path.parent
    label = Path(path).name if path else "job"
    check_job(spec, label)
    return Job(spec=spec, base=Path(base or "."), path=Path(path) if path else None)


#: largest contributions per cell that a tabulation keeps without counting extra cells
TOPS_PER_CELL = 3


def check_cells(job: Job, tables: list[dict[str, Hierarchy]], where: str,
                top_k: int = 0) -> None:
    """Refuse (one :class:`~tabprotect.errors.TooLargeError` line naming ``where``, the
    job's key, and the limit) a job whose ``tables`` -- product tables given by their
    hierarchies, linked tables summed -- would hold more than ``job.max_cells`` cells.
    Computed from the hierarchies' sizes before any array of cells is made.  A tabulation
    keeping ``top_k`` > 3 largest contributions per cell counts each cell top_k/3 times.

    Examples
    --------
    >>> job = load_job(spec={"input": {"cells": "c.csv", "dimensions": ["r"]}}, base=".")
    >>> job.max_cells = 8
    >>> h = Hierarchy.flat(["a", "b"], total="T")
    >>> check_cells(job, [{"r": h}, {"s": h}], "[input] dimensions")
    >>> check_cells(job, [{"r": h, "s": h}], "[input] dimensions")
    Traceback (most recent call last):
    ...
    tabprotect.errors.TooLargeError: job [input] dimensions: the table(s) would have 9 cells (r 3 x s 3 codes), more than the limit of 8 cells (max_cells)
    """
    if job.max_cells is None:
        return
    cells = sum(math.prod(len(h) for h in hs.values()) for hs in tables)
    weighted = cells * max(top_k, TOPS_PER_CELL) / TOPS_PER_CELL
    if weighted > job.max_cells:
        sizes = "; ".join(" x ".join(f"{d} {len(h)}" for d, h in hs.items()) + " codes"
                          for hs in tables)
        tops = (f", each with top_k = {top_k} largest contributions (counted "
                f"{top_k}/{TOPS_PER_CELL} times)" if top_k > TOPS_PER_CELL else "")
        raise TooLargeError(f"{job.label} {where}: the table(s) would have {cells} cells "
                            f"({sizes}){tops}, more than the limit of {job.max_cells} "
                            f"cells (max_cells)")


def build_hierarchy(job: Job, name: str, codes_in_data: np.ndarray | None = None) -> Hierarchy:
    """The hierarchy of dimension ``name`` from ``[hierarchies.NAME]`` (flat when absent)."""
    spec = job.section("hierarchies").get(name, {"flat": True})
    total = str(spec.get("total", "Total"))
    label = f"{job.label} [hierarchies.{name}]"
    if "pairs" in spec:
        pairs = read_table_columns(job.resolve(spec["pairs"]))
        h = Hierarchy.from_pairs(pairs, name=name, source=Path(spec["pairs"]).name)
        if "total" in spec and h.root != total:     # the pairs name their own root
            raise InputError(f"{label} total: the root of {Path(spec['pairs']).name} is "
                             f"not '{total}' (the pairs name the total: leave total out)")
        return h
    if "hrc" in spec:
        return Hierarchy.from_hrc(job.resolve(spec["hrc"]), total=total,
                                  lead=spec.get("lead", "@"), name=name)
    if "levels" in spec:
        if codes_in_data is None:
            raise InputError(f"{label}: 'levels' needs the codes from the data")
        codes = [c for c in _distinct(codes_in_data) if c != total]
        odd = sum(len(c) not in spec["levels"] for c in codes)
        if odd:     # the codes are the data's: counted, not quoted
            raise InputError(f"{label} levels: {odd} code(s) of the data's column '{name}' "
                             f"have none of the level lengths {list(spec['levels'])}")
        return Hierarchy.from_levels(codes, spec["levels"], total=total, name=name)
    if "columns" in spec:
        frame = read_table_columns(job.resolve(spec["file"]))
        return Hierarchy.from_columns(frame, spec["columns"], total=total, name=name,
                                      label=f"{label} file {Path(spec['file']).name}")
    if "codes" in spec:
        return Hierarchy.flat([str(c) for c in spec["codes"]], total=total, name=name)
    if spec.get("flat", False) or not spec:
        if codes_in_data is None:
            raise InputError(f"{label}: a flat hierarchy needs codes (give 'codes')")
        codes = _distinct(codes_in_data)
        return Hierarchy.flat([c for c in codes if c != total], total=total, name=name)
    raise InputError(f"{label}: give one of pairs, hrc, levels, columns, codes or flat")


def _distinct(codes) -> list[str]:
    """The distinct codes of a data column, stripped, in order of first appearance
    (missing codes are left out: the table names their row)."""
    _, uniques = factorize(np.asarray(codes))
    return list(dict.fromkeys(uniques))


def build_table(job: Job, progress=None) -> Table:
    """The job's table: from ``[input] cells`` or, with ``[microdata]``, by tabulation."""
    if "microdata" in job.spec:
        return tabulate_job(job, progress=progress)
    spec = job.section("input")
    label = f"{job.label} [input]"
    if "jj" in spec or "relations" in spec:
        return general_table(job)
    if "cells" not in spec:
        raise InputError(f"{label}: give 'cells' (a cells file), 'jj' or a [microdata] "
                         f"section")
    dims = spec.get("dimensions")
    if not dims:
        raise InputError(f"{label}: give 'dimensions' (the code columns)")
    path = job.resolve(spec["cells"])
    frame = read_table_columns(path)
    for d in dims:
        if d not in frame.columns:
            raise InputError(f"{path.name}: dimension column '{d}' not found "
                             f"({column_names(frame.columns)})")
    hierarchies = {d: build_hierarchy(job, d, frame[d]) for d in dims}
    check_cells(job, [hierarchies], "[input] dimensions")
    freq = spec.get("freq", "freq")
    if "freq" in spec and freq not in frame.columns:    # named in the job: not optional
        raise InputError(f"{path.name}: freq column '{freq}' not found "
                         f"({column_names(frame.columns)})")
    value = spec.get("value", "value")
    if spec.get("kind") == "frequency":
        # a frequency table's value is its count: the freq column defaults to it
        freq = freq if freq in frame.columns else value
        check_counts(frame, path.name, [c for c in dict.fromkeys((value, freq))
                                        if c in frame.columns])
    return check_top(Table.from_frame(
        frame, hierarchies, value=value,
        freq=freq if freq in frame.columns else None,
        top=spec.get("top"), cost=spec.get("cost"), lb=spec.get("lb"), ub=spec.get("ub"),
        status=spec.get("status"), upl=spec.get("upl"), lpl=spec.get("lpl"),
        spl=spec.get("spl"), extra=list(spec.get("extra", [])), compute_totals=spec.get("compute_totals", False),
        tolerance=float(spec.get("tolerance", 1e-6)), kind=spec.get("kind"),
        name=spec.get("name", path.stem), source=path.name), path.name)


def check_top(table: Table, source: str) -> Table:
    """A cells file's largest contributions come largest first, and on a table without
    negative values none exceeds its cell's value (the rules would read them as given);
    the first cell that breaks this is named by its codes, never by a value."""
    top = table.top
    if top is None or top.shape[1] == 0:
        return table
    rising = (np.diff(top, axis=1) > 1e-9 * np.maximum(1.0, np.abs(top[:, :-1]))).any(1)
    if rising.any():
        i = _first(rising, table)
        raise InputError(f"{source}: cell {table.cell_name(i)}: the top columns must hold "
                         f"the largest contributions first ({int(rising.sum())} cell(s) "
                         f"with a later one larger)")
    if (table.lb >= 0).all():
        above = top[:, 0] > table.value + 1e-9 * np.maximum(1.0, np.abs(table.value))
        if above.any():
            i = _first(above, table)
            raise InputError(f"{source}: cell {table.cell_name(i)}: its largest contribution "
                             f"is above its value ({int(above.sum())} such cell(s))")
    return table


def _first(mask: np.ndarray, table: Table) -> int:
    """The first cell of ``mask``, an inner cell (a row of the file) where one is in it."""
    inner = mask & table.is_inner
    return int(np.flatnonzero(inner if inner.any() else mask)[0])


def check_counts(frame, source: str, columns: list[str]) -> None:
    """The columns of a frequency table's counts hold whole numbers: the first that does
    not is named by file, row and column (never by its value)."""
    for col in columns:
        numbers, bad = parse_numbers(np.asarray(frame[col]))
        fraction = ~bad & np.isfinite(numbers) & (numbers != np.round(numbers))
        if fraction.any():
            row = int(np.flatnonzero(fraction)[0])
            raise InputError(f"{row_place(source, frame, row)}, column '{col}': not a whole "
                             f"number (a "
                             f"frequency table holds counts)")


#: [input] keys naming a column of a cells + relations pair, read under the reader's names
_GENERAL_COLUMNS = ("value", "freq", "cost", "lb", "ub", "status", "upl", "lpl", "spl")
#: [input] keys of a product table only (a general table has no dimensions)
_PRODUCT_ONLY = ("dimensions", "top", "extra", "compute_totals")


def general_table(job: Job) -> Table:
    """The general table of ``[input] jj`` or ``[input] cells`` + ``relations``, checked by
    :func:`~tabprotect.io.jj.check_general` within ``[input] tolerance``."""
    from tabprotect.io.jj import read_cells_relations, read_jj

    spec = job.section("input")
    label = f"{job.label} [input]"
    tolerance = float(spec.get("tolerance", 1e-6))
    if "jj" in spec:
        other = sorted(set(spec) - {"jj", "tolerance", "kind", "name"})
        if other:
            raise InputError(f"{label}: '{other[0]}' is not read with 'jj' (a JJ file carries "
                             f"its cells and relations; give tolerance, kind, name)")
        table = read_jj(job.resolve(spec["jj"]), tolerance=tolerance)
    else:
        if "cells" not in spec:
            raise InputError(f"{label}: 'relations' needs 'cells' (the cells file)")
        other = sorted(set(spec) & set(_PRODUCT_ONLY))
        if other or "hierarchies" in job.spec:
            what = f"'{other[0]}'" if other else "[hierarchies]"
            raise InputError(f"{label}: {what} is not read with 'relations' (a general table "
                             f"has no dimensions)")
        cells_path = job.resolve(spec["cells"])
        id_column = spec.get("id", "cell")
        frame = read_frame(cells_path, dtype_str=[id_column])
        renamed = {}
        for key in _GENERAL_COLUMNS:
            column = spec.get(key)
            if column is None:
                continue
            if column not in frame.columns:
                if key == "freq":
                    continue
                raise InputError(f"{cells_path.name}: column '{column}' ([input] {key}) not "
                                 f"found")
            renamed[column] = key
        frame = frame.drop(columns=[k for k in renamed.values() if k in frame.columns
                                    and k not in renamed])
        table = read_cells_relations(frame.rename(columns=renamed),
                                     job.resolve(spec["relations"]), id_column=id_column,
                                     source=cells_path.name, tolerance=tolerance,
                                     cells_file_rows=True)
    if job.max_cells is not None and table.n_cells > job.max_cells:
        key = "jj" if "jj" in spec else "cells"
        raise TooLargeError(f"{label} {key}: the table has {table.n_cells} cells, more than "
                            f"the limit of {job.max_cells} cells (max_cells)")
    changes = {}
    if "kind" in spec:
        changes["kind"] = spec["kind"]
    if "name" in spec:
        changes["name"] = spec["name"]
    return table.replace(**changes) if changes else table


#: ``[microdata]`` keys of the risk command (the section is shared by every command of a
#: job): known, and not read by the tabulation
RISK_KEYS = {"keys", "household", "sampling_fraction", "pi_key"}


def tabulate_job(job: Job, progress=None) -> Table:
    """The table of a job with a ``[microdata]`` section (see ``docs/tabulate.md``).

    ``top_k`` defaults to what the job's ``[rules]`` need.  Hierarchies come from the
    ``[hierarchies.NAME]`` sections (as for cells input; ``columns`` specs use
    :func:`hierarchy_from_correspondence`).

    Examples
    --------
    >>> job = load_job(spec={"microdata": {"file": "m.csv", "dimensions": ["g"]}}, base=".")
    >>> sorted(job.section("microdata"))
    ['dimensions', 'file']
    """
    from tabprotect.tabulate import tabulate
    spec = job.section("microdata")
    label = f"{job.label} [microdata]"
    unknown = set(spec) - MICRODATA_KEYS - RISK_KEYS
    if unknown:
        raise InputError(f"{label}: unknown key(s) {sorted(unknown)} "
                         f"(known: {', '.join(sorted(MICRODATA_KEYS))})")
    if "file" not in spec:
        raise InputError(f"{label}: give 'file' (the microdata CSV/Parquet file)")
    dims = spec.get("dimensions")
    if not dims or not isinstance(dims, list):
        raise InputError(f"{label}: give 'dimensions' (a list of code columns)")
    path = job.resolve(spec["file"])
    hierarchies = microdata_hierarchies(job, dims)
    top_k = tops_kept(job)
    check_cells(job, [hierarchies], "[microdata] dimensions", top_k=top_k)
    return tabulate(path, hierarchies, spec.get("response"), kind=spec.get("kind"),
                    weight=spec.get("weight"), holding=spec.get("holding"),
                    shadow=spec.get("shadow"), cost=spec.get("cost"),
                    request=spec.get("request"), top_k=top_k,
                    unknown_code=spec.get("unknown_code"), missing=spec.get("missing", "error"),
                    engine=spec.get("engine", "auto"), name=spec.get("name", path.stem),
                    threads=spec.get("threads"), memory_limit=spec.get("memory_limit"),
                    progress=progress)


def microdata_hierarchies(job: Job, dims: list[str]) -> dict[str, Hierarchy]:
    """The hierarchies of the microdata's columns ``dims`` (``[hierarchies.NAME]``;
    ``levels`` and flat ones from the distinct codes of the file)."""
    from tabprotect.tabulate import distinct_codes
    spec = job.section("microdata")
    path = job.resolve(spec["file"])
    if not path.exists():
        raise InputError(f"{job.label} [microdata]: microdata file {path} not found")
    hier_specs = job.section("hierarchies")
    hierarchies: dict[str, Hierarchy] = {}
    codes_cache: dict[str, np.ndarray] | None = None
    for d in dims:
        hs = hier_specs.get(d, {"flat": True})
        if "columns" in hs:
            corr = job.resolve(hs.get("file", spec["file"]))
            frame = read_table_columns(corr)
            hierarchies[d] = hierarchy_from_correspondence(
                frame, hs["columns"], total=str(hs.get("total", "Total")), name=d)
            continue
        codes = None
        if "levels" in hs or hs.get("flat", False) or not hs:
            if codes_cache is None:
                codes_cache = distinct_codes(path, dims, spec.get("engine", "auto"))
            codes = codes_cache[d]
        hierarchies[d] = build_hierarchy(job, d, codes)
    return hierarchies


def tops_kept(job: Job) -> int:
    """The largest contributions per cell the tabulation keeps: ``[microdata] top_k``, or
    what the job's ``[rules]`` need (at least 3)."""
    top_k = job.section("microdata").get("top_k")
    if top_k is None:
        from tabprotect.primary import rules_from_spec, top_k_needed
        rules = rules_from_spec(job.section("rules"), job) if "rules" in job.spec else []
        top_k = max(3, top_k_needed(rules))
    return int(top_k)


def check_microdata_cells(job: Job) -> None:
    """:func:`check_cells` for a ``[microdata]`` job before anything is tabulated: its
    table and, for the cell key method, the linked ``[cellkey] tables``."""
    dims = job.section("microdata").get("dimensions")
    tables = job.section("cellkey").get("tables", []) if "cellkey" in job.spec else []
    if not isinstance(dims, list) or not all(isinstance(t, list) for t in tables):
        return      # the run reports the malformed section
    hierarchies = microdata_hierarchies(job, list(dict.fromkeys(dims + sum(tables, []))))
    check_cells(job, [{d: hierarchies[d] for d in t} for t in [dims] + tables],
                "[microdata] dimensions" + (" and [cellkey] tables" if tables else ""),
                top_k=0 if "cellkey" in job.spec else tops_kept(job))


def published_table(job: Job) -> Table:
    """The published (rounded) table of a job, for ``audit-rounded``.

    Rounded tables need not be additive (deterministic or random rounding), so the
    structure comes from the inner rows and the published values of every cell are put
    in afterwards; with totals absent from the file they are computed (additive methods).
    """
    spec = job.section("input")
    label = f"{job.label} [input]"
    if "jj" in spec or "relations" in spec:
        raise InputError(f"{label}: a published rounded table is read as a product table "
                         f"(give 'cells' and 'dimensions', not 'jj' or 'relations')")
    if "cells" not in spec:
        raise InputError(f"{label}: give 'cells' (the published rounded table)")
    dims = spec.get("dimensions")
    if not dims:
        raise InputError(f"{label}: give 'dimensions' (the code columns)")
    path = job.resolve(spec["cells"])
    frame = read_table_columns(path)
    value = spec.get("value", "value")
    for col in list(dims) + [value]:
        if col not in frame.columns:
            raise InputError(f"{path.name}: column '{col}' not found")
    hierarchies = {d: build_hierarchy(job, d, frame[d]) for d in dims}
    check_cells(job, [hierarchies], "[input] dimensions")
    leaf_rows = np.ones(len(frame), dtype=bool)
    for d, h in hierarchies.items():
        pos = h.lookup(text_values(frame[d]))
        if (pos < 0).any():
            r = int(np.flatnonzero(pos < 0)[0])
            raise InputError(f"{row_place(path.name, frame, r)}: the code in column '{d}' "
                             f"is not in its hierarchy")
        leaf_rows &= h.is_leaf[pos]
    base = Table.from_frame(frame.rows(leaf_rows), hierarchies, value=value,
                            freq=None, compute_totals=True, kind="frequency", name=path.stem,
                            source=path.name)
    published = base.value.copy()
    pos = tuple(h.lookup(text_values(frame[d])) for d, h in hierarchies.items())
    flat = np.ravel_multi_index(pos, base.shape)
    vals = parse_numbers(frame[value])[0]
    if not np.isfinite(vals).all():
        r = int(np.flatnonzero(~np.isfinite(vals))[0])
        raise InputError(f"{row_place(path.name, frame, r)}, column '{value}': missing or not a "
                         f"finite number")
    published[flat] = vals
    return base.replace(value=published)
