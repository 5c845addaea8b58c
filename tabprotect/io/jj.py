"""tau-Argus JJ format and the cells + relations CSV pair (general tables).

JJ (tau-Argus 4.1 manual sec. 5.5), free format, whitespace separated::

    0
    <number of cells>
    <index> <value> <cost> <status> <lower bound> <upper bound> <lpl> <upl> <spl>
    ...
    <number of relations>
    0 <k> : <total> (-1) <part> (1) <part> (1) ...

Status letters: ``s`` safe, ``u`` primary, ``m`` secondary, ``z`` protected or empty.
sdcTable's writer puts the cell frequency after the value (10 fields per cell line); both
layouts are read, the manual's is written.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from tabprotect.errors import InputError, read_input_text
from tabprotect.model.relations import relations_from_triplets
from tabprotect.model.columns import row_place
from tabprotect.model.table import Table, parse_status, read_frame

if TYPE_CHECKING:
    import pandas as pd

_JJ_STATUS_IN = {"s": "S", "u": "U", "m": "M", "z": "Z", "p": "P"}
#: a cell line's fields by their count: the manual's 9, sdcTable's 10 (with freq)
_JJ_FIELDS = {9: ("index", "value", "cost", "status", "lb", "ub", "lpl", "upl", "spl"),
              10: ("index", "value", "freq", "cost", "status", "lb", "ub", "lpl", "upl",
                   "spl")}


#: relative tolerance of the additivity check: a relation fails when ``|total - sum(parts)|``
#: exceeds it times ``max(1, |total|)`` (rounding in a written file stays inside it)
ADDITIVITY_TOLERANCE = 1e-6


def read_jj(path: str | Path, tolerance: float = ADDITIVITY_TOLERANCE) -> Table:
    """Read a JJ file into a general :class:`Table`.

    ``z`` cells with a non-zero value become ``P`` (protected); with value 0, ``Z``.
    The table is checked like a cells + relations pair: every relation additive within
    ``tolerance`` (relative to the total), every value inside its own bounds, no cell
    given twice or listed twice in one relation, no relation naming an unknown cell;
    each failure is one :class:`InputError` line naming the line, relation or cell.

    Examples
    --------
    >>> import tempfile, os
    >>> text = "0\\n3\\n0 5 1 s 0 10 0 0 0\\n1 2 1 u 0 10 1 1 0\\n2 3 1 s 0 10 0 0 0\\n1\\n0 3 : 0 (-1) 1 (1) 2 (1)\\n"
    >>> p = os.path.join(tempfile.mkdtemp(), "t.jj"); _ = open(p, "w").write(text)
    >>> read_jj(p).status.tolist()
    ['S', 'U', 'S']
    """
    path = Path(path)
    lines = _jj_lines(path)
    n = _jj_cell_count(path, lines)
    cells = _JJCells(n)
    pos = 2
    for _ in range(n):
        if pos >= len(lines):
            raise InputError(f"{path.name}: file ends after {pos - 2} of {n} cells")
        cells.read(path.name, *lines[pos])
        pos += 1
    status = cells.status
    z = status == "Z"
    status[z & (cells.value != 0)] = "P"
    rel, cell, coef, rel_line = _jj_relations(path.name, lines, pos, n)
    # JJ writes total (-1) parts (1); the model uses +1 on the total: flip the sign.
    A, total = relations_from_triplets(np.asarray(rel, dtype=np.int64),
                                       np.asarray(cell, dtype=np.int64), -np.asarray(coef), n)
    table = Table.from_relations(cells.value, A, relation_total=total, freq=cells.freq,
                                 cost=cells.cost, status=status, lb=cells.lb, ub=cells.ub,
                                 lpl=cells.lpl, upl=cells.upl, spl=cells.spl, name=path.stem)
    check_general(table, path.name, tolerance,
                  relation_name=lambda r: f"relation {r} (line {rel_line[r]})",
                  cell_name=lambda i: f"cell {i} (line {cells.line[i]})")
    return table


def _jj_lines(path: Path) -> list[tuple[int, str]]:
    """The non-blank lines of a JJ file with their line numbers."""
    if not path.exists():
        raise InputError(f"{path}: file not found")
    lines = [ln.strip() for ln in read_input_text(path, "JJ file").splitlines()]
    lines = [(i + 1, ln) for i, ln in enumerate(lines) if ln]
    if len(lines) < 2:
        raise InputError(f"{path.name}: empty or truncated JJ file")
    return lines


def _jj_cell_count(path: Path, lines: list[tuple[int, str]]) -> int:
    """The number of cells (the line after the leading "0"), checked against the file
    before any array of that many cells is made: a huge count is not memory to take."""
    pos = 1  # line 0 is the leading "0"
    try:
        n = int(lines[pos][1].split()[0])
    except (ValueError, IndexError):
        raise InputError(f"{path.name} line {lines[pos][0]}: expected the number of cells") from None
    if n < 0:
        raise InputError(f"{path.name} line {lines[pos][0]}: the number of cells is negative")
    if n > len(lines) - pos - 1:
        raise InputError(f"{path.name}: file ends after {len(lines) - pos - 1} of {n} cells")
    return n


class _JJCells:
    """The cell fields of a JJ file, per cell index, and the line each cell is on."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.value = np.zeros(n)
        self.freq = np.full(n, np.nan)
        self.cost = np.zeros(n)
        self.status = np.full(n, "S", dtype="<U1")
        self.lb = np.zeros(n)
        self.ub = np.full(n, np.inf)
        self.lpl = np.zeros(n)
        self.upl = np.zeros(n)
        self.spl = np.zeros(n)
        self.seen = np.zeros(n, dtype=bool)
        self.line = np.zeros(n, dtype=np.int64)

    def read(self, name: str, lineno: int, ln: str) -> None:
        """One cell line: ``index value [freq] cost status lb ub lpl upl spl``; a field
        that is not a number is named (its text is not quoted: it is a cell's figure)."""
        f = dict(zip(_JJ_FIELDS.get(len(ln.split()), ()), ln.split()))
        if not f:
            raise InputError(f"{name} line {lineno}: expected 9 or 10 fields "
                             f"(index value [freq] cost status lb ub lpl upl spl)")

        def number(field: str, kind=float):
            try:
                return kind(f[field])
            except ValueError:
                raise InputError(f"{name} line {lineno}: the {field} field is not "
                                 f"{'a whole' if kind is int else 'a'} number") from None

        idx = number("index", int)
        if not 0 <= idx < self.n:
            raise InputError(f"{name} line {lineno}: cell index {idx} out of range")
        if self.seen[idx]:
            raise InputError(f"{name} line {lineno}: cell {idx} is duplicated")
        self.seen[idx] = True
        self.line[idx] = lineno
        self.value[idx] = number("value")
        if "freq" in f:
            self.freq[idx] = number("freq")
        self.cost[idx] = number("cost")
        letter = f["status"].lower()
        if letter not in _JJ_STATUS_IN:
            # the field is not quoted: in a line with a field too few or too many it
            # holds a number of the cell
            raise InputError(f"{name} line {lineno}: the status field is not one of s, u, "
                             f"m, z, p")
        self.status[idx] = _JJ_STATUS_IN[letter]
        self.lb[idx], self.ub[idx] = number("lb"), number("ub")
        self.lpl[idx], self.upl[idx], self.spl[idx] = (number("lpl"), number("upl"),
                                                       number("spl"))


def _jj_relations(name: str, lines: list[tuple[int, str]], pos: int, n: int):
    """The relations from line ``pos`` on: (relation, cell, coefficient) triplets and
    each relation's line."""
    if pos >= len(lines):
        raise InputError(f"{name}: missing the number of relations")
    try:
        m = int(lines[pos][1].split()[0])
    except ValueError:
        raise InputError(f"{name} line {lines[pos][0]}: expected the number of "
                         f"relations") from None
    pos += 1
    rel, cell, coef, rel_line = [], [], [], []
    for r in range(m):
        if pos >= len(lines):
            raise InputError(f"{name}: file ends after {r} of {m} relations")
        lineno, ln = lines[pos]
        for c, cf in _jj_terms(name, lineno, ln, r, n):
            rel.append(r)
            cell.append(c)
            coef.append(cf)
        rel_line.append(lineno)
        pos += 1
    return rel, cell, coef, rel_line


_TERM = re.compile(r"(\d+)\s*\(\s*([-+]?\d+(?:\.\d*)?)\s*\)")


def _jj_terms(name: str, lineno: int, ln: str, r: int, n: int) -> list[tuple[int, float]]:
    """The (cell, coefficient) terms of relation ``r``'s line ``0 k : c (coef) ...``."""
    if ":" not in ln:
        raise InputError(f"{name} line {lineno}: relation without ':'")
    head, body = ln.split(":", 1)
    terms = _TERM.findall(body)
    try:
        k = int(head.split()[1])
    except (IndexError, ValueError):
        raise InputError(f"{name} line {lineno}: expected '0 k : ...'") from None
    if len(terms) != k:
        raise InputError(f"{name} line {lineno}: relation says {k} cells but lists "
                         f"{len(terms)} of the form 'cell (coefficient)'")
    listed: set[int] = set()
    out = []
    for c, cf in terms:
        c = int(c)
        if not 0 <= c < n:
            raise InputError(f"{name} line {lineno}: cell {c} out of range")
        if c in listed:
            raise InputError(f"{name} line {lineno}: relation {r} lists cell {c} twice")
        listed.add(c)
        out.append((c, float(cf)))
    return out


def _numbers(column, source: str, name: str, cell_name, blank: bool = True,
             rows=None) -> np.ndarray:
    """A numeric column of a general table's file; one :class:`InputError` line naming the
    line (``rows``: the DataFrame, whose row it names) and cell of the first entry that is
    not a number (or is blank when ``blank`` is False).  The entry itself is not quoted:
    it may be a confidential value."""
    from tabprotect.model.columns import parse_numbers
    arr, bad = parse_numbers(column.to_numpy(dtype=object))
    if not blank:
        bad = bad | np.isnan(arr)
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        raise InputError(f"{row_place(source, rows, r)}: column '{name}' of {cell_name(r)} is "
                         f"{'missing or ' if not blank else ''}not a number")
    return arr


def _check_numbers(table: Table, source: str, cell_name) -> None:
    """Finite values; finite, non-negative costs, protection levels and counts; bounds that
    are numbers (an upper bound may be infinite)."""
    checks = (("value", table.value, False), ("cost", table.cost, True),
              ("lpl", table.lpl, True), ("upl", table.upl, True), ("spl", table.spl, True),
              ("freq", np.nan_to_num(table.freq, nan=0.0), True),
              ("lb", table.lb, False), ("ub", np.where(table.ub == np.inf, 0.0, table.ub), False))
    for name, arr, sized in checks:
        if arr is None:
            continue
        bad = ~np.isfinite(arr) | ((arr < 0) if sized else False)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            what = "negative or not finite" if sized else "not finite"
            raise InputError(f"{source}: the {name} of {cell_name(i)} is {what} "
                             f"({int(bad.sum())} such cell(s))")


def check_general(table: Table, source: str, tolerance: float = ADDITIVITY_TOLERANCE,
                  relation_name=None, cell_name=None) -> None:
    """Raise one :class:`InputError` line for the first cell outside its bounds or the first
    relation whose total differs from the sum of its parts by more than ``tolerance`` times
    ``max(1, |total|)``.  No value appears in the message (values may be confidential)."""
    relation_name = relation_name or (lambda r: f"relation {r}")
    cell_name = cell_name or table.cell_name
    _check_numbers(table, source, cell_name)
    bad_bounds = table.lb > table.ub
    if bad_bounds.any():
        i = int(np.flatnonzero(bad_bounds)[0])
        raise InputError(f"{source}: {cell_name(i)} has a lower bound above its upper bound")
    slack = 1e-9 * np.maximum(1.0, np.abs(table.value))
    outside = (table.value < table.lb - slack) | (table.value > table.ub + slack)
    if outside.any():
        i = int(np.flatnonzero(outside)[0])
        side = "below its lower" if table.value[i] < table.lb[i] else "above its upper"
        raise InputError(f"{source}: {cell_name(i)} has a value {side} bound "
                         f"({int(outside.sum())} cell(s) outside their bounds)")
    if table.n_relations == 0:
        return
    A = table.relations
    resid = np.abs(A @ table.value)
    # the scale of a relation: its largest |value| (the total's, for non-negative tables)
    scale = np.ones(A.shape[0])
    filled = np.diff(A.indptr) > 0
    if A.nnz:
        scale[filled] = np.maximum(1.0, np.maximum.reduceat(np.abs(table.value[A.indices]),
                                                            A.indptr[:-1][filled]))
    bad = resid > tolerance * scale
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        raise InputError(f"{source}: {relation_name(r)} is not additive: its total differs from "
                         f"the sum of its parts by more than the relative tolerance {tolerance:g} "
                         f"({int(bad.sum())} non-additive relation(s))")


def write_jj(table: Table, path: str | Path, cost: np.ndarray | None = None) -> Path:
    """Write a table (product or general) in the JJ layout of the tau-Argus manual.

    Infinite upper bounds are written as the sum of absolute values times 10 (a finite
    number tau-Argus accepts); relations in the model's form ``total - parts``.
    """
    path = Path(path)
    n = table.n_cells
    c = cost if cost is not None else (table.cost if table.cost is not None else np.ones(n))
    big = 10.0 * max(1.0, float(np.abs(table.value).sum()))
    ub = np.where(np.isfinite(table.ub), table.ub, big)
    lb = np.where(np.isfinite(table.lb), table.lb, -big)
    letters = {"S": "s", "U": "u", "M": "m", "Z": "z", "P": "z"}
    out = ["0", str(n)]
    for i in range(n):
        out.append(f"{i} {_fmt(table.value[i])} {_fmt(c[i])} {letters[table.status[i]]} "
                   f"{_fmt(lb[i])} {_fmt(ub[i])} {_fmt(table.lpl[i])} {_fmt(table.upl[i])} "
                   f"{_fmt(table.spl[i])}")
    A = table.relations
    out.append(str(A.shape[0]))
    for r in range(A.shape[0]):
        lo, hi = A.indptr[r], A.indptr[r + 1]
        cols, vals = A.indices[lo:hi], A.data[lo:hi]
        tot = table.relation_total[r]
        order = sorted(range(len(cols)), key=lambda j: (cols[j] != tot, cols[j]))
        terms = " ".join(f"{cols[j]} ({_fmt_coef(-vals[j])})" for j in order)
        out.append(f"0 {len(cols)} : {terms}")
    path.write_text("\n".join(out) + "\n")
    return path


def _fmt(x: float) -> str:
    return repr(float(x)) if not float(x).is_integer() else f"{x:.1f}"


def _fmt_coef(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def read_cells_relations(cells: "str | Path | pd.DataFrame",
                         relations: "str | Path | pd.DataFrame",
                         id_column: str = "cell", source: str | None = None,
                         tolerance: float = ADDITIVITY_TOLERANCE,
                         cells_file_rows: bool = False) -> Table:
    """A general table from a cells file and a relations file ``rel,cell,coef``.

    The cells file has an id column (``cell``; 0..n-1 or labels), ``value`` and optional
    ``freq, cost, lb, ub, status, upl, lpl, spl``.  Each relation says
    ``total = sum(parts)``; coefficients may be given either as -1 on the total and +1 on
    the parts (Castro's files) or the reverse.  Checked as :func:`read_jj` checks a JJ file
    (:func:`check_general`), errors naming the file's cell ids and relation ids.

    Examples
    --------
    >>> import pandas as pd
    >>> cells = pd.DataFrame({"cell": ["T", "a", "b"], "value": [5, 2, 3]})
    >>> rel = pd.DataFrame({"rel": [0, 0, 0], "cell": ["T", "a", "b"], "coef": [-1, 1, 1]})
    >>> read_cells_relations(cells, rel).n_relations
    1
    """
    import pandas as pd
    cf = cells if isinstance(cells, pd.DataFrame) else read_frame(cells, dtype_str=[id_column])
    rf = relations if isinstance(relations, pd.DataFrame) else read_frame(
        relations, dtype_str=["cell"])
    src = source or (Path(cells).name if not isinstance(cells, pd.DataFrame) else "cells")
    if id_column not in cf.columns:
        raise InputError(f"{src}: id column '{id_column}' not found")
    for col in ("rel", "cell", "coef"):
        if col not in rf.columns:
            raise InputError(f"relations: column '{col}' not found (expected rel,cell,coef)")
    ids = cf[id_column].astype(str)
    if ids.duplicated().any():
        raise InputError(f"{src}: cell '{ids[ids.duplicated()].iloc[0]}' is duplicated")
    position = pd.Series(np.arange(len(cf)), index=ids.to_numpy())
    rsrc = Path(relations).name if not isinstance(relations, pd.DataFrame) else "relations"
    # a file's rows are named by their lines, a DataFrame's by position and index label
    # (``cells_file_rows``: a cells DataFrame read from the file ``source`` row for row)
    crows = cells if isinstance(cells, pd.DataFrame) and not cells_file_rows else None
    rrows = relations if isinstance(relations, pd.DataFrame) else None
    rcell = rf["cell"].astype(str)
    twice = pd.DataFrame({"rel": rf["rel"].astype(str), "cell": rcell}).duplicated()
    if twice.any():
        r = int(np.flatnonzero(twice.to_numpy())[0])
        raise InputError(f"{row_place(rsrc, rrows, r)}: relation '{rf['rel'].iloc[r]}' lists cell "
                         f"'{rcell.iloc[r]}' twice")
    unknown = ~rcell.isin(position.index)
    if unknown.any():
        r = int(np.flatnonzero(unknown.to_numpy())[0])
        raise InputError(f"{row_place(rsrc, rrows, r)}: cell '{rcell.iloc[r]}' is not in {src}")
    coef = _numbers(rf["coef"], rsrc, "coef", lambda r: f"relation '{rf['rel'].iloc[r]}'",
                    rows=rrows,
                    blank=False)
    # which sign marks the total: the sign that occurs once per relation in most relations
    neg_once = rf.assign(neg=coef < 0).groupby("rel")["neg"].sum().eq(1).mean()
    pos_once = rf.assign(pos=coef > 0).groupby("rel")["pos"].sum().eq(1).mean()
    total_sign = -1.0 if neg_once >= pos_once else 1.0
    A, total = relations_from_triplets(rf["rel"].to_numpy(), position[rcell].to_numpy(),
                                       coef, len(cf), total_sign=total_sign)
    # orient every row as +1 on the total
    sign = np.ones(A.shape[0])
    coo = A.tocoo()
    at_total = coo.col == total[coo.row]
    sign[coo.row[at_total & (coo.data < 0)]] = -1.0
    A = sp.csr_matrix(sp.diags(sign) @ A)
    def col(name, default=None):
        if name in cf.columns:
            return _numbers(cf[name], src, name, lambda r: f"cell '{ids.iloc[r]}'", rows=crows,
                            blank=name in ("freq", "ub"))
        return default
    if "value" not in cf.columns:
        raise InputError(f"{src}: column 'value' not found")
    value = col("value")
    if np.isnan(value).any():
        r = int(np.flatnonzero(np.isnan(value))[0])
        raise InputError(f"{row_place(src, crows, r)}: value of cell '{ids.iloc[r]}' is missing")
    kw = {k: col(k) for k in ("cost", "lb", "ub", "upl", "lpl", "spl") if k in cf.columns}
    if "ub" in kw:
        kw["ub"] = np.where(np.isnan(kw["ub"]), np.inf, kw["ub"])
    if "status" in cf.columns:
        st = parse_status(cf["status"], str(src), rows=crows)
        kw["status"] = np.where(st == "", "S", st)
    table = Table.from_relations(value, A, relation_total=total,
                                 labels=pd.DataFrame({id_column: ids.to_numpy()}),
                                 freq=col("freq"), name=Path(str(src)).stem, **kw)
    rel_ids = np.unique(rf["rel"].to_numpy())
    check_general(table, src, tolerance, relation_name=lambda r: f"relation '{rel_ids[r]}'",
                  cell_name=lambda i: f"cell '{ids.iloc[i]}'")
    return table
