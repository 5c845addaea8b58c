"""A long frame of cells placed on a product table's grid, for :meth:`Table.from_frame`.

:class:`FrameCells` finds each row's cell (one column of codes per dimension), refuses codes
outside a hierarchy and duplicated cells, reads the numeric columns spread over the grid,
and settles the totals (computed from the leaves, or checked as given).  Every error names
the row (its place in the file) and its cell, never a confidential value.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from tabprotect.errors import InputError
from tabprotect.model.columns import Columns, parse_numbers, row_place, text_values
from tabprotect.model.matrix import ModelMatrix
from tabprotect.model.relations import RelationArrays, product_relation_arrays
from tabprotect.model.status import parse_status


def check_columns(frame: Columns, required: Sequence[str], optional, source: str) -> None:
    """Refuse a frame without a ``required`` column or a named ``(column, label)`` of
    ``optional``."""
    from tabprotect.errors import column_names
    for col in required:
        if col not in frame.columns:
            raise InputError(f"{source}: column '{col}' not found "
                             f"({column_names(frame.columns)})")
    for opt, label in optional:
        if opt is not None and opt not in frame.columns:
            raise InputError(f"{source}: {label} column '{opt}' not found")


class FrameCells:
    """The rows of ``frame`` on the grid of the product of ``dims``: ``pos`` (per
    dimension, each row's code), ``flat`` (each row's cell) and ``present`` (per cell)."""

    def __init__(self, frame: Columns, dims, source: str) -> None:
        self.frame, self.dims, self.source = frame, dims, source
        self.shape = tuple(len(d.hierarchy) for d in dims)
        self.n = int(np.prod(self.shape))
        self.pos = [self._positions(d) for d in dims]
        self.flat = np.ravel_multi_index(tuple(self.pos), self.shape) if dims else \
            np.zeros(len(frame), int)
        self._check_duplicates()
        self.present = np.zeros(self.n, dtype=bool)
        self.present[self.flat] = True

    def _positions(self, d) -> np.ndarray:
        """Each row's code in dimension ``d``; every code in its hierarchy."""
        p = d.hierarchy.lookup(text_values(self.frame[d.name]))
        bad = np.flatnonzero(p < 0)
        if len(bad):
            more = f"; {len(bad)} such rows" if len(bad) > 1 else ""
            # the code is a data field (it may be a shifted value): named, not quoted
            raise InputError(f"{row_place(self.source, self.frame, int(bad[0]))}: the code "
                             f"in column '{d.name}' is not in its hierarchy{more}")
        return p

    def _check_duplicates(self) -> None:
        flat = self.flat
        dup = np.ones(len(flat), dtype=bool)
        dup[np.unique(flat, return_index=True)[1]] = False
        if dup.any():
            r = int(np.flatnonzero(dup)[0])
            first = int(np.flatnonzero(flat == flat[r])[0])
            first_at = row_place("", self.frame, first).strip()
            raise InputError(f"{row_place(self.source, self.frame, r)}: cell "
                             f"{self.cell_name(r)} is duplicated (first at {first_at})")

    def cell_name(self, row: int) -> str:
        """The cell of ``row`` by its codes."""
        return row_cell_name(self.dims, self.pos, row)

    def column(self, col: str, what: str, allow_nan: bool = False,
               allow_negative: bool = True) -> np.ndarray:
        """Column ``col`` as numbers, per row (``what`` names it in errors)."""
        arr, bad = parse_numbers(self.frame[col])
        if bad.any():
            self._refuse(col, what, int(np.flatnonzero(bad)[0]), "is not a number")
        if not allow_nan and np.isnan(arr).any():
            self._refuse(col, what, int(np.flatnonzero(np.isnan(arr))[0]), "is missing")
        if np.isinf(arr).any() and not (what == "ub" and (arr[np.isinf(arr)] > 0).all()):
            self._refuse(col, what, int(np.flatnonzero(np.isinf(arr))[0]),
                         "is not a finite number")
        if not allow_negative and (arr < 0).any():
            self._refuse(col, what, int(np.flatnonzero(arr < 0)[0]), "is negative")
        return arr

    def _refuse(self, col: str, what: str, r: int, why: str) -> None:
        raise InputError(f"{row_place(self.source, self.frame, r)}: {what} column '{col}' of "
                         f"cell {self.cell_name(r)} {why}")

    def scatter(self, vals: np.ndarray, fill: float) -> np.ndarray:
        """Per-row ``vals`` over the grid, ``fill`` where no row is."""
        out = np.full(self.n, fill, dtype=float)
        out[self.flat] = vals
        return out

    def options(self, columns: dict[str, str | None], top_cols: list[str] | None,
                status: str | None) -> dict:
        """The optional columns over the grid, keyed by the table's field names
        (``status_given``: the statuses given, "" elsewhere)."""
        fills = {"cost": 1.0, "lb": 0.0, "ub": np.inf, "upl": 0.0, "lpl": 0.0, "spl": 0.0}
        kw: dict = {}
        for key, col in columns.items():
            if col is not None:
                # protection levels and costs are sizes: a negative one is a wrong column
                kw[key] = self.scatter(self.column(col, key, allow_nan=(key == "ub"),
                                                   allow_negative=key in ("lb", "ub")),
                                       fills[key])
                if key == "ub":
                    kw[key] = np.where(np.isnan(kw[key]), np.inf, kw[key])
        if top_cols:
            t = np.zeros((self.n, len(top_cols)))
            for j, c in enumerate(top_cols):
                t[self.flat, j] = np.nan_to_num(self.column(c, "top", allow_nan=True), nan=0.0)
            kw["top"] = t
        if status is not None:
            st = np.full(self.n, "", dtype="<U1")
            st[self.flat] = parse_status(self.frame[status], self.source, status,
                                         rows=self.frame)
            kw["status_given"] = st
        return kw

    def totals(self, v: np.ndarray, f: np.ndarray | None, kw: dict, compute_totals: bool,
               tolerance: float) -> tuple[RelationArrays, np.ndarray, np.ndarray,
                                          np.ndarray | None]:
        """The relations and the values and counts with their totals: computed from the
        leaves (the totals given checked against them, ``kw["top"]`` aggregated), or the
        given ones checked for additivity."""
        dims, shape, source = self.dims, self.shape, self.source
        hierarchies = [d.hierarchy for d in dims]
        A, rel_total = product_relation_arrays(hierarchies)
        matrix = ModelMatrix(hierarchies)
        leaf_mask = matrix.leaf_cells
        # a sum beyond the largest float is reported below as one line, not as a warning
        with np.errstate(over="ignore", invalid="ignore"):
            if compute_totals:
                computed_v = matrix.aggregate(v)
                computed_f = matrix.aggregate(f) if f is not None else None
                check = self.present & ~leaf_mask
                compare_totals(source, dims, shape, "value", v, computed_v, check, tolerance)
                if f is not None:
                    compare_totals(source, dims, shape, "freq", f, computed_f, check,
                                   tolerance)
                v, f = computed_v, computed_f
                if kw.get("top") is not None:
                    kw["top"] = aggregate_top(kw["top"], hierarchies, leaf_mask)
            else:
                check_additive(source, dims, shape, "value", A.matrix(), rel_total, v,
                               tolerance)
                if f is not None:
                    check_additive(source, dims, shape, "freq", A.matrix(), rel_total, f,
                                   tolerance)
        for what, arr in (("value", v), ("freq", f)):
            if arr is not None and not np.isfinite(arr).all():
                i = int(np.flatnonzero(~np.isfinite(arr))[0])
                raise InputError(f"{source}: the {what} of a total overflows (cell "
                                 f"{cell_name_flat(dims, shape, i)} is not finite)")
        return A, rel_total, v, f


def top_columns(frame: Columns, top, source: str) -> list[str] | None:
    """The columns of the largest contributions: ``top`` a prefix (``top1, top2, ...``)
    or a list of columns."""
    if top is None:
        return None
    if isinstance(top, str):
        cols = []
        k = 1
        while f"{top}{k}" in frame.columns:
            cols.append(f"{top}{k}")
            k += 1
        if not cols:
            raise InputError(f"{source}: no columns '{top}1', '{top}2', ... found")
        return cols
    missing = [c for c in top if c not in frame.columns]
    if missing:
        raise InputError(f"{source}: top-contribution column(s) {missing} not found")
    return list(top)


def row_cell_name(dims, pos, row: int) -> str:
    """The cell of ``row`` by its codes (``pos``: per dimension, each row's code)."""
    return "(" + ", ".join(f"{d.name}={d.hierarchy.codes[p[row]]}" for d, p in zip(dims, pos)) + ")"


def cell_name_flat(dims, shape, i: int, table=None) -> str:
    if table is not None:
        return table.cell_name(i)
    if not dims:
        return f"#{i}"
    pos = np.unravel_index(i, shape)
    return "(" + ", ".join(f"{d.name}={d.hierarchy.codes[p]}" for d, p in zip(dims, pos)) + ")"


def aggregate_top(top: np.ndarray, hierarchies, leaf_mask) -> np.ndarray:
    """Largest contributions of aggregates from their leaves' largest contributions."""
    shape = tuple(len(h) for h in hierarchies)
    k = top.shape[1]
    arr = np.where(leaf_mask[:, None], top, 0.0).reshape(shape + (k,)).copy()
    for d, h in enumerate(hierarchies):
        moved = np.moveaxis(arr, d, 0)
        depth = h.depth
        for p in sorted((p for p, _ in h.edges()), key=lambda p: -depth[p]):
            stacked = np.concatenate([moved[c] for c in h.children[p]], axis=-1)
            moved[p] = -np.sort(-stacked, axis=-1)[..., :k]
    return arr.reshape(-1, k)


def compare_totals(source, dims, shape, what, given, computed, check, tolerance) -> None:
    scale = np.maximum(1.0, np.abs(computed))
    bad = check & (np.abs(given - computed) > tolerance * scale)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"{source}: total cell {cell_name_flat(dims, shape, i)} is not the "
                         f"sum of its parts ({what}; {int(bad.sum())} non-additive total(s))")


def check_additive(source, dims, shape, what, A, rel_total, values, tolerance,
                    table=None) -> None:
    if A.shape[0] == 0:
        return
    resid = A @ values
    scale = np.maximum(1.0, np.abs(values[np.maximum(rel_total, 0)]))
    bad = np.abs(resid) > tolerance * scale
    bad &= ~np.isnan(resid)
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        t = int(rel_total[r])
        name = cell_name_flat(dims, shape, t, table) if t >= 0 else f"relation {r}"
        raise InputError(f"{source}: total cell {name} is not the sum of its parts ({what}; "
                         f"{int(bad.sum())} non-additive relation(s); missing totals can be "
                         f"computed with compute_totals)")
