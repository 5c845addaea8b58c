"""Checks of a submission before anything runs: the spec, its paths, the uploads.

Every path a service job names must be the plain name of a file uploaded with it, so
that it resolves inside the job's own upload folder; every ``*time_limit`` stays within
the configured maximum; each uploaded data file stays within the column and row limits
(its header is read before anything parses it). A refusal is an :class:`HTTPException`
whose detail names the key or the file, never a data value or a server path.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import tomllib
from pathlib import Path

from fastapi import HTTPException, UploadFile

from tabprotect.errors import InputError
from tabprotect.io.schema import SECTIONS
from tabprotect.service.worker import strip_paths

DATA_SUFFIXES = {".csv", ".parquet", ".pq"}
FILE_SUFFIXES = DATA_SUFFIXES | {".hrc", ".jj", ".txt", ".toml", ".json"}
#: keys whose value is a file of the job (whatever its suffix): the schema's path keys
PATH_KEYS = frozenset(k.name for s in SECTIONS.values() for k in s.keys if k.path)
#: sections whose ``time_limit`` the service fills in when the spec gives none
TIMED_SECTIONS = ("protect", "round")
SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
VALIDATE_TABLE_BYTES = 4 * 2**20   # cells jobs this small are built at submission (422 early)
_HEADER_BYTES = 1 << 20
MAX_SPEC_DEPTH = 32                # a job file is a few levels deep


def parse_spec(name: str, raw: bytes) -> dict:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise HTTPException(400, "spec: not UTF-8 text") from None
    suffix = Path(name or "").suffix.lower()
    try:
        if suffix == ".json" or (suffix != ".toml" and text.lstrip().startswith("{")):
            spec = json.loads(text)
        else:
            spec = tomllib.loads(text)
    except json.JSONDecodeError as exc:
        raise HTTPException(422, f"spec: not valid JSON (line {exc.lineno}, column "
                                 f"{exc.colno})") from None
    except tomllib.TOMLDecodeError as exc:   # its messages give line and column only
        raise HTTPException(422, f"spec: not valid TOML ({exc})") from None
    except RecursionError:
        raise HTTPException(422, "spec: nested too deeply") from None
    if not isinstance(spec, dict):
        raise HTTPException(422, "spec: must be a table/object of sections")
    if _depth(spec) > MAX_SPEC_DEPTH:
        raise HTTPException(422, "spec: nested too deeply")
    return spec


def _depth(obj) -> int:
    """Nesting depth of tables and lists (without recursion)."""
    deepest, stack = 0, [(obj, 1)]
    while stack:
        item, d = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, d)
            stack.extend((v, d + 1) for v in (item.values() if isinstance(item, dict)
                                              else item))
    return deepest


def _strings(obj, where: tuple[str, ...] = ()):
    """``(key path, value)`` of every string in the spec."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _strings(v, where + (str(k),))
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v, where)
    elif isinstance(obj, str):
        yield where, obj


def _key_name(where: tuple[str, ...]) -> str:
    if len(where) <= 1:
        return f"'{where[0]}'" if where else "spec"
    return f"[{'.'.join(where[:-1])}] {where[-1]}"


def _escapes(value: str, folder: Path) -> bool:
    """The value, read as a path, leaves ``folder`` (or is no usable path at all)."""
    p = Path(value)
    if p.is_absolute() or ".." in p.parts or value.startswith("~") or "\0" in value:
        return True
    root = folder.resolve()
    try:
        return not (root / p).resolve().is_relative_to(root)
    except (OSError, ValueError):
        return True


def check_spec(spec: dict, uploaded: set[str], folder: Path, max_time_limit: float) -> None:
    """Structure, confinement of paths and time limits (``folder``: the upload folder)."""
    from tabprotect.io.job import load_job
    try:
        load_job(spec=spec, base=".")
    except InputError as exc:
        raise HTTPException(422, f"spec: {strip_paths(str(exc))}") from None
    if "input" not in spec and "microdata" not in spec:
        raise HTTPException(422, "spec: give an [input] section (cells file) or [microdata]")
    if "cluster" in spec:
        # a job must not send its data to a scheduler of its choosing
        raise HTTPException(422, "spec: [cluster] is not accepted by the service (the "
                                 "server's --dask option decides where jobs run)")
    for where, value in _strings(spec):
        key = where[-1] if where else ""
        names_file = key in PATH_KEYS or Path(value).suffix.lower() in FILE_SUFFIXES
        if _escapes(value, folder) or (names_file and ("/" in value or "\\" in value)):
            raise HTTPException(422, f"spec: {_key_name(where)} must be the plain name of "
                                     f"an uploaded file (paths stay inside the job's folder)")
        if names_file and value not in uploaded:
            named = f"'{value}'" if SAFE_NAME.match(value) else "a file"
            raise HTTPException(422, f"spec: {_key_name(where)} names {named}, which was not "
                                     f"uploaded (uploaded: "
                                     f"{', '.join(sorted(uploaded)) or 'none'})")
    named = {value for _, value in _strings(spec)}
    unused = sorted(name for name in uploaded if name not in named)
    if unused:
        shown = ", ".join(f"'{n}'" if SAFE_NAME.match(n) else "(unprintable)"
                          for n in unused[:5])
        raise HTTPException(422, f"file(s) {shown} uploaded but named by no key of the spec "
                                 f"(it would be ignored)")
    _check_time_limits(spec, (), max_time_limit)
    for section in TIMED_SECTIONS:
        if isinstance(spec.get(section), dict):
            spec[section].setdefault("time_limit", max_time_limit)
    if not any(s in spec for s in TIMED_SECTIONS) and "microdata" not in spec:
        audit = spec.setdefault("audit", {})
        if isinstance(audit, dict):
            audit.setdefault("time_limit", max_time_limit)


def _check_time_limits(obj, where: tuple[str, ...], limit: float) -> None:
    if isinstance(obj, dict):
        for k, v in obj.items():
            here = where + (str(k),)
            if str(k).endswith("time_limit"):
                ok = isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v <= limit
                if not ok:
                    raise HTTPException(422, f"spec: {_key_name(here)} must be a number of "
                                             f"seconds above 0 and at most {limit:g} (the "
                                             f"service's maximum)")
            else:
                _check_time_limits(v, here, limit)
    elif isinstance(obj, list):
        for v in obj:
            _check_time_limits(v, where, limit)


def save_uploads(files: list[UploadFile], folder: Path, max_files: int) -> dict[str, int]:
    """Write the uploads into ``folder`` (files 0600, created new, never followed)."""
    if len(files) > max_files:
        raise HTTPException(422, f"at most {max_files} files per job")
    sizes: dict[str, int] = {}
    for upload in files:
        name = Path(upload.filename or "").name
        if not SAFE_NAME.match(name) or Path(name).suffix.lower() not in FILE_SUFFIXES:
            raise HTTPException(422, f"file #{len(sizes) + 1}: give a plain name (letters, "
                                     f"digits, '.', '_', '-') ending in "
                                     f"{', '.join(sorted(FILE_SUFFIXES))}")
        if name in sizes:
            raise HTTPException(422, f"file '{name}' uploaded twice")
        fd = os.open(folder / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                     0o600)
        with os.fdopen(fd, "wb") as fh:
            shutil.copyfileobj(upload.file, fh, 1 << 20)
        sizes[name] = (folder / name).stat().st_size
        if sizes[name] == 0:
            raise HTTPException(422, f"file '{name}' is empty")
    return sizes


def check_shape(path: Path, max_columns: int, max_rows: int) -> None:
    """Columns and rows of a data file within the limits, read without parsing it."""
    name = path.name
    if path.suffix.lower() in (".parquet", ".pq"):
        try:
            import pyarrow.parquet as pq
            meta = pq.ParquetFile(path).metadata
            columns, rows = meta.num_columns, meta.num_rows
        except ImportError:
            raise HTTPException(422, f"file '{name}': Parquet needs pyarrow on the "
                                     f"server") from None
        except Exception:  # noqa: BLE001 -- any unreadable file is the client's error
            raise HTTPException(422, f"file '{name}': not a readable Parquet file") from None
    else:
        with open(path, "rb") as fh:
            header = fh.readline(_HEADER_BYTES + 1)
            if len(header) > _HEADER_BYTES:
                raise HTTPException(422, f"file '{name}': header line longer than "
                                         f"{_HEADER_BYTES} bytes")
            columns = header.count(b",") + 1
            rows = 0
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                rows += chunk.count(b"\n")
    if columns > max_columns:
        raise HTTPException(422, f"file '{name}': {columns} columns, more than the "
                                 f"service's limit of {max_columns}")
    if rows > max_rows:
        raise HTTPException(422, f"file '{name}': more than {max_rows} rows (the "
                                 f"service's limit)")


def check_files(folder: Path, sizes: dict[str, int], spec: dict, max_columns: int,
                max_rows: int, max_cells: int | None = None) -> None:
    """Shape limits first, then parse the data files (and small tables) for early 422s;
    a small job whose tables would exceed ``max_cells`` is refused before they are made."""
    from tabprotect.io.job import build_table, check_microdata_cells, load_job
    from tabprotect.model.columns import read_table_columns
    for name in sizes:
        if Path(name).suffix.lower() in DATA_SUFFIXES:
            check_shape(folder / name, max_columns, max_rows)
    try:
        for name in sizes:
            if Path(name).suffix.lower() in DATA_SUFFIXES:
                read_table_columns(folder / name)     # the command line's reader
        if sum(sizes.values()) <= VALIDATE_TABLE_BYTES:
            job = load_job(spec=spec, base=folder)
            job.root = folder
            job.max_cells = max_cells
            if "microdata" in spec:
                check_microdata_cells(job)
            elif "input" in spec:
                build_table(job)
    except InputError as exc:
        raise HTTPException(422, strip_paths(str(exc))) from None
