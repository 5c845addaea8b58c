"""The table model shared by every tabprotect module.

A :class:`Table` is a set of cells held in flat numpy arrays (index 0..n-1) plus the
sparse matrix of linear relations between them.  A *product* table is the cartesian
product of its dimensions' codes (totals and subtotals included); a *general* table is
given by its relations only (tau-Argus JJ files, Castro's benchmark tables, linked tables).
Nothing mutates a Table: :meth:`Table.replace` returns a new one.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np

from tabprotect.errors import InputError
from tabprotect.model.columns import Columns, as_columns, read_table_columns
from tabprotect.model.frame_cells import (FrameCells, cell_name_flat, check_additive,
                                          check_columns, top_columns)
from tabprotect.model.hierarchy import Hierarchy
from tabprotect.model.matrix import ModelMatrix
from tabprotect.model.relations import (RelationArrays, product_relation_arrays,
                                        relations_from_triplets)
# parse_status: other modules read it from here
from tabprotect.model.status import (EMPTY, SAFE, SUPPRESSED_LETTER, check_status,  # noqa: F401
                                     is_suppressed, parse_status)

if TYPE_CHECKING:
    import pandas as pd
    import scipy.sparse as sp

Number = float | int


@dataclass(frozen=True)
class Dimension:
    """A named dimension of a product table and its hierarchy."""

    name: str
    hierarchy: Hierarchy


def _as_float(x, n: int, default: float, what: str) -> np.ndarray:
    if x is None:
        return np.full(n, default, dtype=float)
    arr = np.asarray(x, dtype=float)
    if arr.ndim == 0:
        return np.full(n, float(arr))
    if arr.shape != (n,):
        raise InputError(f"{what}: expected {n} values, got {arr.shape[0]}")
    return arr


class _Relations:
    """The ``relations`` field of :class:`Table`: a scipy matrix, or the
    :class:`~tabprotect.model.relations.RelationArrays` of one, whose matrix is made when
    the field is first read (a table built and checked by rules alone never imports
    scipy.sparse).  No default: the class-level read is refused."""

    def __get__(self, table, owner=None):
        if table is None:
            raise AttributeError("relations")
        given = table.__dict__["relations"]
        return given.matrix() if isinstance(given, RelationArrays) else given

    def __set__(self, table, value):
        table.__dict__["relations"] = value


@dataclass(frozen=True, eq=False)
class Table:
    """Cells as flat arrays plus the sparse relation matrix ``A`` (``A @ value == 0``).

    Attributes
    ----------
    value : cell values (magnitude; the count for frequency tables)
    freq : number of contributors per cell
    relations : csr_matrix (relations x cells), +1 on the total and -1 on each part (given
        as a matrix or as its :class:`~tabprotect.model.relations.RelationArrays`)
    relation_total : the total cell of each relation (-1 if unknown)
    dimensions : the dimensions of a product table (empty for a general table)
    top : (cells x k) largest contributions, descending, or None
    cost : suppression cost per cell or None (the method's cost function decides)
    lb, ub : attacker's a-priori bounds (default 0 and +inf; ``lb`` raised by :meth:`known_lb`)
    status : tau-Argus letters S U M P Z per cell
    upl, lpl, spl : upper, lower and sliding protection levels (value units)
    kind : ``"magnitude"`` or ``"frequency"``
    empty : ``"publish"`` (empty cells shown ``Z``) or ``"suppress"`` (they may be ``X``)
    extra : further per-cell arrays (e.g. shadow variable, holding-level top contributions)

    Examples
    --------
    >>> import pandas as pd
    >>> from tabprotect.model import Hierarchy, Table
    >>> rows = Hierarchy.flat(["r1", "r2"], total="T")
    >>> t = Table.from_frame(pd.DataFrame({"row": ["r1", "r2"], "value": [3.0, 4.0]}),
    ...                      {"row": rows}, compute_totals=True)
    >>> t.value.tolist()
    [7.0, 3.0, 4.0]
    """

    value: np.ndarray
    freq: np.ndarray
    relations: sp.csr_matrix = _Relations()
    relation_total: np.ndarray
    dimensions: tuple[Dimension, ...] = ()
    general_labels: "pd.DataFrame | None" = None
    top: np.ndarray | None = None
    cost: np.ndarray | None = None
    lb: np.ndarray | None = None
    ub: np.ndarray | None = None
    status: np.ndarray | None = None
    upl: np.ndarray | None = None
    lpl: np.ndarray | None = None
    spl: np.ndarray | None = None
    kind: str = "magnitude"
    name: str = ""
    # the intruder's knowledge of empty cells: with "publish" a suppressed count is >= 1
    empty: str = "publish"
    extra: Mapping[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self):
        n = len(self.value)
        set_ = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731 (frozen dataclass)
        set_("value", np.asarray(self.value, dtype=float))
        set_("freq", _as_float(self.freq, n, 0.0, "freq"))
        set_("lb", _as_float(self.lb, n, 0.0, "lb"))
        set_("ub", _as_float(self.ub, n, np.inf, "ub"))
        set_("upl", _as_float(self.upl, n, 0.0, "upl"))
        set_("lpl", _as_float(self.lpl, n, 0.0, "lpl"))
        set_("spl", _as_float(self.spl, n, 0.0, "spl"))
        if self.cost is not None:
            set_("cost", _as_float(self.cost, n, 1.0, "cost"))
        if self.status is None:
            st = np.full(n, SAFE, dtype="<U1")
            st[(self.freq == 0) & (self.value == 0)] = EMPTY
            set_("status", st)
        else:
            set_("status", check_status(self.status, n))
        if self.top is not None:
            top = np.asarray(self.top, dtype=float)
            if top.ndim == 1:
                top = top[:, None]
            set_("top", top)
        given = self.__dict__["relations"]
        if not isinstance(given, RelationArrays):
            import scipy.sparse as sp
            if not sp.isspmatrix_csr(given):
                set_("relations", sp.csr_matrix(given))
        if self.relation_shape[1] != n:
            raise InputError(f"relations have {self.relation_shape[1]} columns for {n} cells")
        set_("relation_total", np.asarray(self.relation_total, dtype=np.int64))
        if self.kind not in ("magnitude", "frequency"):
            raise InputError(f"table kind must be 'magnitude' or 'frequency', not {self.kind!r}")
        if self.empty not in ("publish", "suppress"):
            raise InputError(f"empty must be 'publish' or 'suppress', not {self.empty!r}")
        self.__dict__["_given_lb"] = self.lb
        set_("lb", self.known_lb(self.lb))

    @property
    def given_lb(self) -> np.ndarray:
        """The a-priori lower bounds as given, before :meth:`known_lb` raised them."""
        return self.__dict__["_given_lb"]

    def known_lb(self, lb: np.ndarray) -> np.ndarray:
        """The intruder's lower bounds from the given ``lb``: in a count table whose empty
        cells are published, a cell not ``Z`` with a count of at least 1 is at least 1;
        magnitude tables, ``empty="suppress"`` and non-``Z`` zeros keep their bounds."""
        raise_ = ((self.status != EMPTY) & (self.value >= 1) & (lb < 1)
                  & (self.kind == "frequency") & (self.empty == "publish"))
        return np.where(raise_, 1.0, lb) if raise_.any() else lb

    # ------------------------------------------------------------ constructors
    @classmethod
    def from_frame(cls, frame: "pd.DataFrame | Columns",
                   dimensions: Mapping[str, Hierarchy] | Sequence[Dimension],
                   value: str = "value", freq: str | None = "freq",
                   top: Sequence[str] | str | None = None, cost: str | None = None,
                   lb: str | None = None, ub: str | None = None, status: str | None = None,
                   upl: str | None = None, lpl: str | None = None, spl: str | None = None,
                   extra: Sequence[str] = (), compute_totals: bool = False,
                   tolerance: float = 1e-6, kind: str | None = None, name: str = "",
                   source: str = "cells") -> "Table":
        """Build a product table from a long frame of cells, one column per dimension.

        Parameters
        ----------
        frame : one row per cell (a DataFrame or :class:`Columns`); the dimension
            columns hold codes
        dimensions : ``{column: Hierarchy}`` (order = dimension order)
        value, freq : column names (``freq=None`` when absent; a missing optional
            column named by default is simply not used)
        top : a column prefix (``"top"`` -> ``top1, top2, ...``) or list of columns
        compute_totals : compute every total/subtotal from the leaf cells; totals present
            in ``frame`` are then checked against them.  Otherwise cells absent from the
            frame are empty (0) and every relation is checked.
        tolerance : absolute tolerance of the additivity check, relative to
            ``max(1, |total|)`` (decimals in files)
        kind : ``"magnitude"`` or ``"frequency"`` (default: frequency when ``value`` is
            integral and equals ``freq``)
        source : name used in error messages (e.g. the file name)

        Examples
        --------
        >>> import pandas as pd
        >>> reg = Hierarchy.flat(["a", "b"], total="T")
        >>> df = pd.DataFrame({"reg": ["a", "b", "T"], "value": [1, 2, 3], "freq": [1, 1, 2]})
        >>> Table.from_frame(df, {"reg": reg}).n_cells
        3
        """
        dims = _as_dimensions(dimensions)
        frame = as_columns(frame)
        if len(frame) == 0:
            raise InputError(f"{source}: no cells (empty file or frame)")
        named = {"cost": cost, "lb": lb, "ub": ub, "upl": upl, "lpl": lpl, "spl": spl}
        check_columns(frame, [d.name for d in dims] + [value], (
            (cost, "cost"), (lb, "lb"), (ub, "ub"), (status, "status"), (upl, "upl"),
            (lpl, "lpl"), (spl, "spl"), *[(e, "extra") for e in extra]), source)
        if freq is not None and freq not in frame.columns:
            freq = None
        top_cols = top_columns(frame, top, source)
        cells = FrameCells(frame, dims, source)
        v = cells.scatter(cells.column(value, "value"), 0.0)
        f = cells.scatter(cells.column(freq, "freq", allow_negative=False), 0.0) if freq \
            else None
        kw = cells.options(named, top_cols, status)
        ex = {c: cells.scatter(cells.column(c, c, allow_nan=True), np.nan) for c in extra}
        A, rel_total, v, f = cells.totals(v, f, kw, compute_totals, tolerance)
        if kind is None:
            kind = ("frequency" if f is not None and np.allclose(v, f) and
                    np.allclose(v, np.round(v)) and (top_cols is None or not top_cols)
                    else "magnitude")
        n = cells.n
        status_given = kw.pop("status_given", None)
        table = cls(value=v, freq=f if f is not None else np.where(v != 0, np.nan, 0.0),
                    relations=A, relation_total=rel_total, dimensions=tuple(dims),
                    kind=kind, name=name, extra=ex, **kw)
        if f is None:
            # unknown contributor counts: nan, except where the cell is empty
            table = table.replace(freq=np.where(v != 0, np.nan, 0.0))
        table._check_bounds(source)
        if status_given is not None:
            st = table.status.copy()
            has = status_given != ""
            st[has] = status_given[has]
            table = table.replace(status=check_status(st, n, source=source))
        return table

    @classmethod
    def from_csv(cls, path: str | Path, dimensions, **kwargs) -> "Table":
        """:meth:`from_frame` on a CSV file (:func:`read_table_columns`: codes as text)."""
        frame = read_table_columns(path)
        kwargs.setdefault("source", Path(path).name)
        return cls.from_frame(frame, dimensions, **kwargs)

    @classmethod
    def from_arrays(cls, dimensions: Mapping[str, Hierarchy] | Sequence[Dimension],
                    value, freq=None, **kwargs) -> "Table":
        """Build a product table from full arrays in cell order (C order over dimensions,
        every code of every hierarchy included).

        Examples
        --------
        >>> h = Hierarchy.flat(["a", "b"], total="T")
        >>> Table.from_arrays({"x": h}, [3, 1, 2]).n_cells
        3
        """
        dims = _as_dimensions(dimensions)
        A, rel_total = product_relation_arrays([d.hierarchy for d in dims])
        value = np.asarray(value, dtype=float).ravel()
        if freq is None:
            freq = np.where(value != 0, np.nan, 0.0)
        return cls(value=value, freq=np.asarray(freq, dtype=float).ravel(), relations=A,
                   relation_total=rel_total, dimensions=tuple(dims), **kwargs)

    @classmethod
    def from_relations(cls, value, relations: sp.spmatrix, relation_total=None,
                       labels: "pd.DataFrame | Sequence | None" = None, freq=None,
                       **kwargs) -> "Table":
        """A general table: cells plus explicit linear relations (``A @ value == 0``).

        Examples
        --------
        >>> import scipy.sparse as sp
        >>> A = sp.csr_matrix([[1.0, -1.0, -1.0]])
        >>> Table.from_relations([5.0, 2.0, 3.0], A).n_relations
        1
        """
        import pandas as pd
        import scipy.sparse as sp
        value = np.asarray(value, dtype=float)
        A = sp.csr_matrix(relations, dtype=float)
        if relation_total is None:
            coo = A.tocoo()
            _, relation_total = relations_from_triplets(coo.row, coo.col, coo.data, len(value))
        if labels is None:
            labels = pd.DataFrame({"cell": np.arange(len(value))})
        elif not isinstance(labels, pd.DataFrame):
            labels = pd.DataFrame({"cell": list(labels)})
        if freq is None:
            freq = np.where(value != 0, np.nan, 0.0)
        return cls(value=value, freq=freq, relations=A, relation_total=relation_total,
                   general_labels=labels.reset_index(drop=True), **kwargs)

    # ------------------------------------------------------------ properties
    @property
    def n_cells(self) -> int:
        return len(self.value)

    @property
    def n_relations(self) -> int:
        return self.relation_shape[0]

    @property
    def relation_shape(self) -> tuple[int, int]:
        """(relations, cells): the shape of :attr:`relations`, read without making its
        scipy matrix."""
        return self.__dict__["relations"].shape

    @property
    def shape(self) -> tuple[int, ...] | None:
        """Number of codes per dimension for a product table; None for a general table."""
        if not self.dimensions:
            return None
        return tuple(len(d.hierarchy) for d in self.dimensions)

    @property
    def dimension_names(self) -> list[str]:
        if self.dimensions:
            return [d.name for d in self.dimensions]
        return list(self.general_labels.columns)

    def hierarchy(self, name: str) -> Hierarchy:
        for d in self.dimensions:
            if d.name == name:
                return d.hierarchy
        raise InputError(f"table has no dimension '{name}'")

    @cached_property
    def positions(self) -> tuple[np.ndarray, ...]:
        """Per dimension, the code position of every cell (product tables)."""
        if not self.dimensions:
            raise InputError("a general table has no dimension positions")
        return tuple(np.unravel_index(np.arange(self.n_cells), self.shape))

    @cached_property
    def labels(self) -> "pd.DataFrame":
        """One row per cell, one categorical column of codes per dimension."""
        import pandas as pd
        if not self.dimensions:
            return self.general_labels
        cols = {}
        for d, p in zip(self.dimensions, self.positions):
            cols[d.name] = pd.Categorical.from_codes(p, categories=list(d.hierarchy.codes))
        return pd.DataFrame(cols)

    @property
    def index(self) -> "pd.MultiIndex":
        """A pandas MultiIndex of the cells' codes (for users)."""
        import pandas as pd
        return pd.MultiIndex.from_frame(self.labels)

    @cached_property
    def model_matrix(self) -> ModelMatrix:
        """The cells as sums of the leaf cells (product tables; see
        :mod:`tabprotect.model.matrix`); with :attr:`relations`, the table's model."""
        if not self.dimensions:
            raise InputError("a general table has no model matrix over leaf cells (only "
                             "its relations); give a table with dimensions")
        return ModelMatrix([d.hierarchy for d in self.dimensions])

    @cached_property
    def is_inner(self) -> np.ndarray:
        """True for cells that are no relation's total (leaf in every dimension)."""
        mask = np.ones(self.n_cells, dtype=bool)
        mask[self.relation_total[self.relation_total >= 0]] = False
        return mask

    @cached_property
    def depth(self) -> np.ndarray:
        """Sum over dimensions of the code depths (0 = grand total) for product tables."""
        if not self.dimensions:
            return np.zeros(self.n_cells, dtype=np.int64)
        return sum(d.hierarchy.depth[p] for d, p in zip(self.dimensions, self.positions))

    @property
    def suppressed(self) -> np.ndarray:
        """Mask of suppressed cells (status U or M)."""
        return np.isin(self.status, ("U", "M"))

    @property
    def primary(self) -> np.ndarray:
        return self.status == "U"

    def cell(self, *codes: str, **by_name: str) -> int:
        """Index of the cell with the given codes (positional or by dimension name).

        Examples
        --------
        >>> h = Hierarchy.flat(["a", "b"], total="T")
        >>> Table.from_arrays({"x": h}, [3, 1, 2]).cell("b")
        2
        """
        if not self.dimensions:
            if len(codes) != 1:
                raise InputError("a general table's cell is addressed by one label")
            col = self.general_labels.columns[0]
            hit = np.flatnonzero(self.general_labels[col].astype(str).to_numpy() == str(codes[0]))
            if len(hit) != 1:
                raise InputError(f"cell '{codes[0]}' not found")
            return int(hit[0])
        if by_name:
            codes = tuple(by_name.get(d.name, d.hierarchy.root) for d in self.dimensions)
        if len(codes) != len(self.dimensions):
            raise InputError(f"expected {len(self.dimensions)} codes, got {len(codes)}")
        pos = tuple(d.hierarchy.index(str(c)) for d, c in zip(self.dimensions, codes))
        return int(np.ravel_multi_index(pos, self.shape))

    def cell_name(self, i: int) -> str:
        """Readable name of cell ``i``, e.g. ``(region=R1, nace=A01)``."""
        if not self.dimensions:
            row = self.general_labels.iloc[int(i)]
            return "(" + ", ".join(f"{k}={v}" for k, v in row.items()) + ")"
        return cell_name_flat(self.dimensions, self.shape, int(i))

    def replace(self, **changes) -> "Table":
        """A new Table with some fields replaced (the original is unchanged); ``lb`` is
        :attr:`given_lb` unless given, so the raised bounds follow the new fields."""
        changes.setdefault("lb", self.given_lb)
        changes.setdefault("relations", self.__dict__["relations"])   # no matrix made
        new = dataclasses.replace(self, **changes)
        for attr in ("positions", "labels", "is_inner", "depth"):
            if attr in self.__dict__ and "dimensions" not in changes \
                    and "general_labels" not in changes:
                new.__dict__[attr] = self.__dict__[attr]
        return new

    def to_frame(self, columns: Sequence[str] = ("value", "freq", "status"), *,
                 confidential: bool = False) -> "pd.DataFrame":
        """Cells as a long DataFrame: code columns, then the requested arrays.

        ``status`` is :data:`~tabprotect.model.status.SUPPRESSED_LETTER` for every
        suppressed cell, primary and secondary alike (which are primaries is
        confidential); ``confidential=True`` shows the letters U and M (a cells file to
        read back as a job's input needs them)."""
        return self.to_columns(columns, confidential=confidential).to_pandas()

    def to_columns(self, columns: Sequence[str] = ("value", "freq", "status"), *,
                   confidential: bool = False) -> Columns:
        """Cells as :class:`Columns`: code columns (text), then the requested arrays
        (``status`` as in :meth:`to_frame`)."""
        if self.dimensions:
            out = Columns({d.name: np.asarray(d.hierarchy.codes, dtype=object)[p]
                           for d, p in zip(self.dimensions, self.positions)})
        else:
            out = Columns.from_frame(self.general_labels.reset_index(drop=True))
            out.index = None
        for c in columns:
            if c == "top" and self.top is not None:
                for j in range(self.top.shape[1]):
                    out[f"top{j + 1}"] = self.top[:, j]
            elif c in self.extra:
                out[c] = self.extra[c]
            elif c == "status" and not confidential:
                out[c] = np.where(is_suppressed(self.status), SUPPRESSED_LETTER, self.status)
            else:
                out[c] = getattr(self, c)
        return out

    def check_additivity(self, tolerance: float = 1e-6, what: str = "value",
                         values: np.ndarray | None = None) -> None:
        """Raise :class:`InputError` naming the first relation whose total differs from the
        sum of its parts."""
        vals = getattr(self, what) if values is None else values
        check_additive(self.name or "table", self.dimensions, self.shape, what,
                       self.relations, self.relation_total, vals, tolerance, table=self)

    def _check_bounds(self, source: str) -> None:
        low = self.value < self.lb - 1e-9
        if low.any():
            # an inner cell when one is low: a computed total is low through its parts
            inner_low = low & self.is_inner
            i = int(np.flatnonzero(inner_low if inner_low.any() else low)[0])
            what = ("has a negative value" if self.lb[i] == 0
                    else "is below its a-priori lower bound")
            hint = "; give a lower bound (lb column) to allow it" if self.lb[i] == 0 else ""
            raise InputError(f"{source}: cell {self.cell_name(i)} {what} "
                             f"({int(low.sum())} such cell(s)){hint}")
        high = self.value > self.ub + 1e-9
        if high.any():
            i = int(np.flatnonzero(high)[0])
            raise InputError(f"{source}: cell {self.cell_name(i)} is above its a-priori "
                             f"upper bound")

    def __repr__(self) -> str:
        dims = " x ".join(f"{d.name}[{len(d.hierarchy)}]" for d in self.dimensions) or "general"
        shown = np.where(is_suppressed(self.status), SUPPRESSED_LETTER, self.status)
        counts = {s: int((shown == s).sum()) for s in "SXPZ" if (shown == s).any()}
        return (f"Table({self.name + ': ' if self.name else ''}{dims}, {self.kind}, "
                f"cells={self.n_cells}, relations={self.n_relations}, status={counts})")


# ---------------------------------------------------------------- helpers
def _as_dimensions(dimensions) -> list[Dimension]:
    if isinstance(dimensions, Mapping):
        dims = []
        for k, h in dimensions.items():
            if not isinstance(h, Hierarchy):
                raise InputError(f"dimension '{k}': expected a Hierarchy")
            if not h.name:
                object.__setattr__(h, "name", k)
            dims.append(Dimension(k, h))
        return dims
    return list(dimensions)


def aggregate_leaves(values: np.ndarray, hierarchies: Sequence[Hierarchy]) -> np.ndarray:
    """Every total and subtotal computed from the leaf cells (other cells ignored):
    ``ModelMatrix(hierarchies).aggregate(values)``."""
    return ModelMatrix(hierarchies).aggregate(values)


def read_frame(path: str | Path, dtype_str: Sequence[str] = ()) -> "pd.DataFrame":
    """Read a CSV or Parquet file into pandas with clear errors; code columns stay strings
    (the DataFrame edge: a job's cells, microdata and hierarchy files are read by
    :func:`~tabprotect.model.columns.read_table_columns`)."""
    import pandas as pd
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: file not found")
    try:
        if path.suffix.lower() in (".parquet", ".pq"):
            frame = pd.read_parquet(path)
            for c in dtype_str:
                if c in frame.columns:
                    frame[c] = frame[c].astype(str)
        else:
            frame = pd.read_csv(path, dtype={c: str for c in dtype_str}, keep_default_na=True)
    except pd.errors.EmptyDataError:
        raise InputError(f"{path.name}: empty file") from None
    except ImportError:
        raise InputError(f"{path.name}: reading Parquet needs pyarrow: pip install "
                         f"'tabprotect[files]'") from None
    except UnicodeDecodeError:
        raise InputError(f"{path.name}: not UTF-8 text") from None
    except (ValueError, OSError) as exc:
        raise InputError(f"{path.name}: cannot read ({exc})") from None
    if len(frame) == 0:
        raise InputError(f"{path.name}: no data rows")
    frame.columns = [str(c).strip() for c in frame.columns]
    return frame
