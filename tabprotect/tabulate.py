"""Microdata -> :class:`~tabprotect.model.Table`: counts, sums and the largest contributions.

One row of the microdata is one contributor (an enterprise, a person).  ``tabulate`` gives,
for every cell of the cartesian product of the dimensions' hierarchies (every total and
subtotal included):

* ``value``  - the sum of the response (weighted: ``sum w x``), or the (weighted) count for a
  frequency table;
* ``freq``   - the number of contributors (records, unweighted);
* ``top``    - the ``top_k`` largest contributions of the variable the sensitivity rules look
  at (the *shadow* variable when given, else the response).  With sampling weights a
  contribution ``x`` of weight ``w`` counts as ``w`` copies of ``x`` (tau-Argus semantics): a
  record of 100 with weight 4 gives ``top1 = ... = top4 = 100``.  A fractional weight counts
  fractionally: ``top_j`` is the mass of the ``j``-th unit of weight when the contributions are
  laid out largest first (so ``top1 + ... + topn`` is the largest total that ``n`` units of
  weight can carry);
* ``cost``   - the (weighted) sum of a cost variable;
* ``extra``  - ``shadow`` (the shadow variable's cell total), ``weighted_freq`` (sum of
  weights), ``holding_freq`` and ``holding_top1..k`` (contributions summed per holding first:
  a holding is a group of contributors, e.g. an enterprise group, and it can span several
  cells), ``request_max`` (the largest contribution of a contributor who asked for
  protection), ``n_missing`` (records whose response was missing, see ``missing``).

Two engines give identical tables: ``pandas`` (in-memory frames and files that fit in
memory; numpy ``bincount``/``lexsort`` on factorized codes) and ``duckdb`` (CSV/Parquet files,
also larger than memory: one ``GROUP BY`` pass over the file).  Both first reduce the records
to leaf cells, then aggregate leaves to every level of every hierarchy; the largest
contributions of an aggregate are the largest of the union of its leaves' contributions.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from tabprotect.errors import InputError
from tabprotect.model.hierarchy import Hierarchy
from tabprotect.model.relations import product_relations
from tabprotect.model.table import Dimension, Table, aggregate_leaves

__all__ = ["tabulate", "hierarchy_from_correspondence", "MISSING_POLICIES", "MICRODATA_KEYS",
           "read_table_file", "distinct_codes"]

MISSING_POLICIES = ("error", "zero", "drop")
_MAX_CANDIDATES = 256  # per-cell (value, weight) pairs kept to derive weighted top-k


# ====================================================================== public API
def tabulate(microdata: pd.DataFrame | str | Path,
             dimensions: Mapping[str, Hierarchy],
             response: str | None = None, *,
             kind: str | None = None,
             weight: str | None = None,
             holding: str | None = None,
             shadow: str | None = None,
             cost: str | None = None,
             request: str | None = None,
             top_k: int = 3,
             unknown_code: str | Mapping[str, str] | None = None,
             missing: str = "error",
             engine: str = "auto",
             name: str = "",
             threads: int | None = None,
             memory_limit: str | None = None,
             progress: Callable[[str], None] | None = None) -> Table:
    """Tabulate microdata (one row per contributor) into a product :class:`Table`.

    Parameters
    ----------
    microdata : a DataFrame, or the path of a CSV or Parquet file
    dimensions : ``{column: Hierarchy}``; each column holds leaf codes of its hierarchy
    response : the variable summed in a magnitude table; None for a frequency table
    kind : ``"magnitude"`` (default when ``response`` is given) or ``"frequency"``
    weight : sampling-weight column (> 0): values are ``sum w x``, a contribution counts as
        ``w`` copies for the largest contributions (tau-Argus)
    holding : contributor-group column (e.g. enterprise group).  Holding-level data (the
        contributions summed per holding in each cell) go to ``extra["holding_freq"]`` and
        ``extra["holding_top1..k"]``.  Records with an empty holding are their own holding.
        Cannot be combined with ``weight`` (as in tau-Argus).
    shadow : the variable the sensitivity rules look at, when it is not the response; its
        totals go to ``extra["shadow"]`` and its largest contributions to ``top``
    cost : a cost variable summed (weighted) per cell into ``table.cost``
    request : a column flagging contributors that asked for protection (1/true/yes/y);
        ``extra["request_max"]`` is the largest flagged contribution per cell
    top_k : how many largest contributions to keep (enough for every rule you apply:
        ``n`` of an (n,k)-dominance rule, ``m + 1`` of a p%-rule)
    unknown_code : code (one for all dimensions, or ``{column: code}``) that receives
        records whose code is not in the hierarchy; default: such codes are an error
    missing : what a missing response (or shadow/cost) means: ``"error"`` (default),
        ``"zero"`` (a contributor with value 0) or ``"drop"`` (the record is left out of the
        cell).  With ``zero``/``drop`` the records concerned are counted per cell in
        ``extra["n_missing"]`` and a warning gives the total, so nothing disappears silently.
    engine : ``"pandas"``, ``"duckdb"`` or ``"auto"`` (duckdb for files when installed,
        pandas for frames)
    threads, memory_limit : duckdb settings (e.g. ``threads=1``, ``memory_limit="2GB"``);
        duckdb spills to disk beyond the memory limit, so files larger than memory work
    progress : called with short messages while the work proceeds

    Returns
    -------
    Table with every cell of every hierarchy level; ``kind`` as requested.

    Raises
    ------
    InputError : unknown or missing codes (naming the code and its first rows), missing or
        non-numeric values, negative contributions, non-positive weights.

    Examples
    --------
    >>> h = Hierarchy.flat(["a", "b"], total="T")
    >>> df = pd.DataFrame({"g": ["a", "a", "b"], "x": [5.0, 1.0, 2.0]})
    >>> t = tabulate(df, {"g": h}, "x", top_k=2)
    >>> t.value.tolist(), t.freq.tolist(), t.top[0].tolist()
    ([8.0, 6.0, 2.0], [3.0, 2.0, 1.0], [5.0, 2.0])
    """
    spec = _Spec.make(dimensions, response, kind, weight, holding, shadow, cost, request,
                      top_k, unknown_code, missing)
    say = progress or (lambda msg: None)
    if isinstance(microdata, (str, Path)):
        path = Path(microdata)
        if not path.exists():
            raise InputError(f"{path}: microdata file not found")
        if engine == "auto":
            try:
                import duckdb  # noqa: F401  (optional: the 'files' extra)
                engine = "duckdb"
            except ImportError:
                engine = "pandas"
        if engine == "duckdb":
            leaves = _leaves_duckdb(path, spec, threads, memory_limit, say)
        elif engine == "pandas":
            frame = _read_microdata(path, spec)
            leaves = _leaves_pandas(frame, spec, say, source=path.name, file_rows=True)
        else:
            raise InputError(f"unknown tabulation engine {engine!r} (pandas, duckdb, auto)")
        name = name or path.stem
    elif isinstance(microdata, pd.DataFrame):
        if engine == "duckdb":
            leaves = _leaves_duckdb(microdata, spec, threads, memory_limit, say)
        elif engine in ("auto", "pandas"):
            leaves = _leaves_pandas(microdata, spec, say, source="microdata", file_rows=False)
        else:
            raise InputError(f"unknown tabulation engine {engine!r} (pandas, duckdb, auto)")
    else:
        raise InputError("microdata must be a pandas DataFrame or the path of a CSV/Parquet "
                         f"file, not {type(microdata).__name__}")
    say("aggregating to every hierarchy level")
    return _assemble(leaves, spec, name)


def hierarchy_from_correspondence(frame: pd.DataFrame, columns: Sequence[str],
                                  total: str = "Total", name: str = "") -> Hierarchy:
    """A hierarchy from a correspondence table (one column per level, coarse to fine).

    Unlike :meth:`Hierarchy.from_columns`, a code repeated at the next level (a level with
    no subdivision, e.g. ``AZ, X, X`` in INSEE's activity table) is one node, not a cycle.

    Examples
    --------
    >>> df = pd.DataFrame({"a10": ["AZ", "AZ", "BE"], "a21": ["A", "X", "B"],
    ...                    "a88": ["01", "X", "06"]})
    >>> h = hierarchy_from_correspondence(df, ["a10", "a21", "a88"])
    >>> h.children_of("AZ"), h.leaves
    (('A', 'X'), ('01', 'X', '06'))
    """
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InputError(f"correspondence table for {name or 'hierarchy'}: column(s) "
                         f"{missing} not found (columns: {', '.join(map(str, frame.columns))})")
    pairs: list[tuple[str, str]] = []
    seen: dict[str, str] = {}
    for row_no, row in enumerate(frame[list(columns)].itertuples(index=False), start=2):
        prev = str(total)
        for code in row:
            if pd.isna(code):
                raise InputError(f"correspondence table for {name or 'hierarchy'} line "
                                 f"{row_no}: empty code")
            code = str(code).strip()
            if code == prev:          # no subdivision at this level: same node
                continue
            if code in seen:
                if seen[code] != prev:
                    raise InputError(f"correspondence table for {name or 'hierarchy'} line "
                                     f"{row_no}: code '{code}' has two parents "
                                     f"('{seen[code]}' and '{prev}')")
            else:
                seen[code] = prev
                pairs.append((prev, code))
            prev = code
    return Hierarchy.from_pairs(pairs, name=name, source=f"correspondence table {name}")


# ====================================================================== job files
MICRODATA_KEYS = {"file", "dimensions", "response", "kind", "weight", "holding", "shadow",
                  "cost", "request", "top_k", "unknown_code", "missing", "engine", "name",
                  "threads", "memory_limit"}


# ====================================================================== internals
@dataclass
class _Spec:
    dims: list[Dimension]
    response: str | None
    kind: str
    weight: str | None
    holding: str | None
    shadow: str | None
    cost: str | None
    request: str | None
    top_k: int
    unknown: dict[str, int]   # column -> hierarchy position receiving unknown codes
    missing: str

    @classmethod
    def make(cls, dimensions, response, kind, weight, holding, shadow, cost, request, top_k,
             unknown_code, missing) -> "_Spec":
        if not isinstance(dimensions, Mapping) or not dimensions:
            raise InputError("dimensions must be a non-empty {column: Hierarchy} mapping")
        dims = []
        for col, h in dimensions.items():
            if not isinstance(h, Hierarchy):
                raise InputError(f"dimension '{col}': expected a Hierarchy, got "
                                 f"{type(h).__name__}")
            dims.append(Dimension(str(col), h))
        if kind is None:
            kind = "magnitude" if response is not None else "frequency"
        if kind not in ("magnitude", "frequency"):
            raise InputError(f"kind must be 'magnitude' or 'frequency', not {kind!r}")
        if kind == "magnitude" and response is None:
            raise InputError("a magnitude table needs a response variable")
        if kind == "frequency" and (response is not None or shadow is not None):
            raise InputError("a frequency table counts records: give no response/shadow "
                             "(or kind='magnitude')")
        if holding is not None and weight is not None:
            raise InputError("holdings cannot be combined with sampling weights (as in "
                             "tau-Argus): a holding's contribution would mix weighted records")
        if missing not in MISSING_POLICIES:
            raise InputError(f"missing must be one of {', '.join(MISSING_POLICIES)}, "
                             f"not {missing!r}")
        try:
            top_k = int(top_k)
        except (TypeError, ValueError):
            raise InputError(f"top_k must be an integer, not {top_k!r}") from None
        if not 1 <= top_k <= 64:
            raise InputError(f"top_k must be between 1 and 64, not {top_k}")
        unknown: dict[str, int] = {}
        if unknown_code is not None:
            codes = (unknown_code if isinstance(unknown_code, Mapping)
                     else {d.name: unknown_code for d in dims})
            for d in dims:
                if d.name not in codes:
                    continue
                code = str(codes[d.name])
                if code not in d.hierarchy:
                    raise InputError(f"unknown_code '{code}' is not a code of dimension "
                                     f"'{d.name}'s hierarchy")
                pos = d.hierarchy.index(code)
                if not d.hierarchy.is_leaf[pos]:
                    raise InputError(f"unknown_code '{code}' of dimension '{d.name}' must be "
                                     f"a leaf (lowest-level) code")
                unknown[d.name] = pos
        return cls(dims, response, kind, weight, holding, shadow, cost, request, top_k,
                   unknown, missing)

    @property
    def rule_var(self) -> str | None:
        """The variable whose contributions feed the rules."""
        return self.shadow or self.response

    @property
    def numeric_columns(self) -> list[str]:
        cols = [c for c in (self.response, self.shadow, self.cost) if c is not None]
        return list(dict.fromkeys(cols))

    @property
    def columns(self) -> list[str]:
        cols = [d.name for d in self.dims] + self.numeric_columns
        cols += [c for c in (self.weight, self.holding, self.request) if c is not None]
        return list(dict.fromkeys(cols))

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(d.hierarchy) for d in self.dims)


@dataclass
class _Leaves:
    """Per leaf cell (flat ids in the full product shape; duplicates allowed)."""

    cell: np.ndarray
    value: np.ndarray
    freq: np.ndarray
    wsum: np.ndarray
    shadow: np.ndarray | None
    cost: np.ndarray | None
    n_missing: np.ndarray
    request_max: np.ndarray | None
    cand_x: np.ndarray | None       # (cells x K) largest rule-variable contributions
    cand_w: np.ndarray | None       # their weights
    holdings: tuple[np.ndarray, np.ndarray, np.ndarray] | None  # (cell, holding, sum)


def _row_label(rows: np.ndarray, index, file_rows: bool) -> str:
    if file_rows:
        return ", ".join(f"line {int(r) + 2}" for r in rows)
    return ", ".join(f"row {index[int(r)]!r}" for r in rows)


def _code_positions(values: pd.Series, dim: Dimension, spec: _Spec, source: str,
                    file_rows: bool) -> np.ndarray:
    """Hierarchy position of every record's code (factorized: each distinct code once)."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        codes = values.cat.codes.to_numpy()
        uniques = pd.Index(values.cat.categories)
    else:
        codes, uniques = pd.factorize(values, use_na_sentinel=True)
    uniq = pd.Series(uniques.astype(str), dtype=object).str.strip()
    pos_u = dim.hierarchy.lookup(uniq)
    h = dim.hierarchy
    leaf = h.is_leaf
    total_like = (pos_u >= 0) & ~leaf[np.maximum(pos_u, 0)]
    if total_like.any():    # unused categories of a categorical column do not count
        used = np.bincount(codes[codes >= 0], minlength=len(uniq)) > 0
        total_like &= used
    if total_like.any():
        j = int(np.flatnonzero(total_like)[0])
        rows = np.flatnonzero(codes == j)[:3]
        raise InputError(f"{source} {_row_label(rows[:1], values.index, file_rows)}: code "
                         f"'{uniq.iloc[j]}' of '{dim.name}' is a total/subtotal of its "
                         f"hierarchy; microdata must carry lowest-level codes "
                         f"({_row_label(rows, values.index, file_rows)})")
    fallback = spec.unknown.get(dim.name, -1)
    pos_u = np.where(pos_u < 0, fallback, pos_u)
    pos = np.append(pos_u, fallback)[codes]      # code -1 (missing) -> fallback
    bad = np.flatnonzero(pos < 0)
    if len(bad):
        r0 = int(bad[0])
        code = values.iloc[r0]
        what = (f"the code of '{dim.name}' is empty" if pd.isna(code) else
                f"the code in column '{dim.name}' is not in its hierarchy")
        same = bad[codes[bad] == codes[r0]][:3]
        raise InputError(f"{source} {_row_label(same[:1], values.index, file_rows)}: "
                         f"{what} ({int(np.sum(codes == codes[r0]))} record(s), "
                         f"first: {_row_label(same, values.index, file_rows)}; "
                         f"{len(bad)} record(s) with unknown codes in all); fix the data, add "
                         f"the code to the hierarchy or set unknown_code")
    return pos.astype(np.int64)


def _numeric(frame: pd.DataFrame, col: str, what: str, source: str, file_rows: bool,
             allow_missing: bool) -> np.ndarray:
    raw = frame[col]
    if pd.api.types.is_numeric_dtype(raw.dtype) and not pd.api.types.is_bool_dtype(raw.dtype):
        arr = raw.to_numpy(dtype=float, na_value=np.nan)
    else:
        num = pd.to_numeric(raw, errors="coerce")
        bad = num.isna().to_numpy() & ~raw.isna().to_numpy()
        if bad.any():
            rows = np.flatnonzero(bad)[:3]
            raise InputError(f"{source} {_row_label(rows[:1], frame.index, file_rows)}: "
                             f"{what} '{col}' is not a number "
                             f"({int(bad.sum())} record(s): {_row_label(rows, frame.index, file_rows)})")
        arr = num.to_numpy(dtype=float, na_value=np.nan)
    if np.isinf(arr).any():
        rows = np.flatnonzero(np.isinf(arr))[:3]
        raise InputError(f"{source} {_row_label(rows[:1], frame.index, file_rows)}: {what} "
                         f"'{col}' is infinite")
    nan = np.isnan(arr)
    if nan.any() and not allow_missing:
        rows = np.flatnonzero(nan)[:3]
        raise InputError(f"{source} {_row_label(rows[:1], frame.index, file_rows)}: {what} "
                         f"'{col}' is missing ({int(nan.sum())} record(s): "
                         f"{_row_label(rows, frame.index, file_rows)}); fill it or set "
                         f"missing='zero' or 'drop'")
    neg = arr < 0
    if neg.any():
        rows = np.flatnonzero(neg)[:3]
        raise InputError(f"{source} {_row_label(rows[:1], frame.index, file_rows)}: {what} "
                         f"'{col}' is negative ({int(neg.sum())} record(s): "
                         f"{_row_label(rows, frame.index, file_rows)}); the sensitivity rules "
                         f"need non-negative contributions")
    return arr


def _flags(series: pd.Series) -> np.ndarray:
    if pd.api.types.is_bool_dtype(series.dtype):
        return series.fillna(False).to_numpy(dtype=bool)
    if pd.api.types.is_numeric_dtype(series.dtype):
        return series.fillna(0).to_numpy(dtype=float) != 0
    s = series.astype(str).str.strip().str.lower()
    return s.isin(["1", "true", "yes", "y", "t"]).to_numpy() & ~series.isna().to_numpy()


def _check_columns(columns, spec: _Spec, source: str) -> None:
    missing = [c for c in spec.columns if c not in columns]
    if missing:
        raise InputError(f"{source}: column(s) {missing} not found "
                         f"(columns: {', '.join(map(str, columns))})")


def _leaves_pandas(frame: pd.DataFrame, spec: _Spec, say, source: str,
                   file_rows: bool) -> _Leaves:
    _check_columns(frame.columns, spec, source)
    if len(frame) == 0:
        raise InputError(f"{source}: no records")
    say(f"{len(frame)} records: coding dimensions")
    pos = [_code_positions(frame[d.name], d, spec, source, file_rows) for d in spec.dims]
    cell = np.ravel_multi_index(tuple(pos), spec.shape).astype(np.int64)
    del pos
    n_rec = len(frame)
    keep = np.ones(n_rec, dtype=bool)
    n_missing_rec = np.zeros(n_rec, dtype=bool)
    vals: dict[str, np.ndarray] = {}
    for col in spec.numeric_columns:
        arr = _numeric(frame, col, "value of", source, file_rows,
                       allow_missing=spec.missing != "error")
        nan = np.isnan(arr)
        if nan.any():
            n_missing_rec |= nan
            if spec.missing == "drop":
                keep &= ~nan
            arr = np.where(nan, 0.0, arr)
        vals[col] = arr
    w = None
    if spec.weight is not None:
        w = _numeric(frame, spec.weight, "weight", source, file_rows, allow_missing=False)
        if (w <= 0).any():
            rows = np.flatnonzero(w <= 0)[:3]
            raise InputError(f"{source} {_row_label(rows[:1], frame.index, file_rows)}: weight "
                             f"'{spec.weight}' must be positive")
    req = _flags(frame[spec.request]) if spec.request is not None else None
    hold = None
    if spec.holding is not None:
        hcodes, _ = pd.factorize(frame[spec.holding], use_na_sentinel=True)
        hcodes = hcodes.astype(np.int64)
        lone = hcodes < 0                      # no holding: a holding of its own
        hcodes[lone] = hcodes.max(initial=-1) + 1 + np.arange(int(lone.sum()))
        hold = hcodes
    if req is not None and spec.kind != "magnitude":
        raise InputError("the request variable applies to magnitude tables (give a response)")
    say("summing cells")
    # every record's cell, dropped ones included, so that n_missing reaches its cell;
    # leaf arrays are indexed by the flat cell id directly (no sort needed)
    g = int(np.prod(spec.shape))
    ucell = np.arange(g, dtype=np.int64)
    inv = cell
    kept = keep.astype(float)
    freq = np.bincount(inv, weights=kept, minlength=g)
    wk = kept * w if w is not None else kept
    wsum = np.bincount(inv, weights=wk, minlength=g)

    def wsum_of(x):
        return np.bincount(inv, weights=x * wk, minlength=g)

    value = wsum_of(vals[spec.response]) if spec.response else wsum.copy()
    shadow_sum = wsum_of(vals[spec.shadow]) if spec.shadow else None
    cost_sum = wsum_of(vals[spec.cost]) if spec.cost else None
    nm = np.bincount(inv, weights=n_missing_rec.astype(float), minlength=g)
    cand_x = cand_w = req_max = None
    holdings = None
    if spec.kind == "magnitude":
        say("largest contributions")
        sel = np.flatnonzero(keep) if not keep.all() else None
        x = vals[spec.rule_var]
        ww = w if w is not None else np.ones(len(x))
        gi = inv
        if sel is not None:
            x, ww, gi = x[sel], ww[sel], inv[sel]
        K = _candidates_needed(spec.top_k, float(ww.min()) if len(ww) else 1.0)
        cand_x, cand_w = _leaf_candidates(gi, x, ww, g, spec.top_k, K)
        if req is not None:
            r = req if sel is None else req[sel]
            req_max = np.zeros(g)
            if r.any():
                np.maximum.at(req_max, gi[r], x[r])
        if hold is not None:
            hh = hold if sel is None else hold[sel]
            holdings = _holding_sums(ucell[gi], hh, x)
    return _Leaves(ucell, value, freq, wsum, shadow_sum, cost_sum, nm, req_max, cand_x,
                   cand_w, holdings)


def _leaf_candidates(gi: np.ndarray, x: np.ndarray, w: np.ndarray, g: int, k: int, K: int):
    """Per group, the largest contributions (and weights) covering the first k weight units.

    For small K, K rounds of "largest remaining value per group" (``np.maximum.at`` is a
    linear pass) beat sorting millions of records; otherwise one lexsort.
    """
    cand_x = np.zeros((g, K))
    cand_w = np.zeros((g, K))
    if K <= 8:
        work = np.asarray(x, dtype=float).copy()
        for j in range(K):
            best = np.full(g, -np.inf)
            np.maximum.at(best, gi, work)
            at_best = best[gi]
            hit = np.flatnonzero((work == at_best) & (at_best > -np.inf))
            if len(hit) == 0:
                break
            groups, first = np.unique(gi[hit], return_index=True)
            rec = hit[first]
            cand_x[groups, j] = x[rec]
            cand_w[groups, j] = w[rec]
            work[rec] = -np.inf
        before = np.cumsum(cand_w, axis=1) - cand_w
        drop = before >= k - 1e-12
        cand_x[drop] = 0.0
        cand_w[drop] = 0.0
        return cand_x, cand_w
    order = np.lexsort((-x, gi))
    gs = gi[order]
    xs = x[order]
    ws = w[order]
    del order
    starts = np.flatnonzero(np.r_[True, gs[1:] != gs[:-1]])
    group_start = np.repeat(starts, np.diff(np.r_[starts, len(gs)]))
    rank = np.arange(len(gs)) - group_start
    cw = np.cumsum(ws)
    before = cw - ws - (cw[group_start] - ws[group_start])
    take = (before < k - 1e-12) & (rank < K)
    cand_x[gs[take], rank[take]] = xs[take]
    cand_w[gs[take], rank[take]] = ws[take]
    return cand_x, cand_w


def _holding_sums(cell: np.ndarray, hold: np.ndarray, x: np.ndarray):
    """Sum of the rule variable per (leaf cell, holding)."""
    key = pd.MultiIndex.from_arrays([cell, hold])
    codes, uniq = pd.factorize(key)
    sums = np.bincount(codes, weights=x, minlength=len(uniq))
    arr = uniq.to_frame(index=False).to_numpy()
    return arr[:, 0].astype(np.int64), arr[:, 1].astype(np.int64), sums


def _candidates_needed(k: int, w_min: float) -> int:
    """How many (value, weight) pairs per cell can cover the first k units of weight."""
    if w_min >= 1.0:
        return k
    need = int(math.ceil(k / w_min)) + 1
    if need > _MAX_CANDIDATES:
        raise InputError(f"sampling weights as small as {w_min:.3g} would need {need} "
                         f"contributions per cell to find the {k} largest weighted "
                         f"contributions; weights should be >= {k / _MAX_CANDIDATES:.3g}")
    return need


# ---------------------------------------------------------------------- duckdb engine
def _quote(name: str) -> str:
    return '"' + str(name).replace('"', '""') + '"'


def _duckdb_connect(threads, memory_limit):
    try:
        import duckdb
    except ImportError:  # pragma: no cover - duckdb is in the 'files' extra
        raise InputError("the duckdb engine needs duckdb (pip install tabprotect[files]); "
                         "or use engine='pandas'") from None
    con = duckdb.connect()
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    if memory_limit:
        con.execute(f"SET memory_limit = '{memory_limit}'")
    con.execute("SET preserve_insertion_order = false")
    con.execute("SET enable_progress_bar = false")
    return con


def _source_sql(con, src, spec: _Spec | None, dims: Sequence[str]) -> str:
    if isinstance(src, pd.DataFrame):
        con.register("microdata_frame", src)
        return "microdata_frame"
    path = str(src).replace("'", "''")
    if Path(src).suffix.lower() in (".parquet", ".pq"):
        return f"read_parquet('{path}')"
    types = ", ".join(f"'{d}': 'VARCHAR'" for d in dims)
    return f"read_csv('{path}', header = true, types = {{{types}}})"


def _columns_of(con, source_sql: str) -> list[str]:
    return [r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {source_sql}").fetchall()]


def _leaves_duckdb(src, spec: _Spec, threads, memory_limit, say) -> _Leaves:
    con = _duckdb_connect(threads, memory_limit)
    label = src.name if isinstance(src, Path) else "microdata"
    try:
        source = _source_sql(con, src, spec, [d.name for d in spec.dims])
        try:
            cols = _columns_of(con, source)
        except Exception as exc:  # duckdb raises its own error types
            raise InputError(f"{label}: cannot read ({str(exc).splitlines()[0]})") from None
        _check_columns(cols, spec, label)
        q = _quote
        keys = [f"trim(CAST({q(d.name)} AS VARCHAR)) AS k{i}" for i, d in enumerate(spec.dims)]
        num = []
        for j, c in enumerate(spec.numeric_columns):
            num.append(f"TRY_CAST({q(c)} AS DOUBLE) AS v{j}")
            num.append(f"({q(c)} IS NOT NULL AND TRY_CAST({q(c)} AS DOUBLE) IS NULL) AS bad{j}")
        wexpr = f"TRY_CAST({q(spec.weight)} AS DOUBLE)" if spec.weight else "CAST(1 AS DOUBLE)"
        inner = ", ".join(keys + num + [f"{wexpr} AS w"] + (
            [f"lower(trim(CAST({q(spec.request)} AS VARCHAR))) IN ('1','true','yes','y','t',"
             f"'1.0') AS req"] if spec.request else []))
        kcols = ", ".join(f"k{i}" for i in range(len(spec.dims)))
        ncol = {c: f"v{j}" for j, c in enumerate(spec.numeric_columns)}
        anymiss = " OR ".join(f"{v} IS NULL" for v in ncol.values()) or "false"
        drop = spec.missing == "drop"
        use = f"NOT ({anymiss})" if drop else "true"

        def zero(v):
            return f"coalesce({v}, 0)"

        aggs = [f"count(*) FILTER (WHERE {use}) AS freq",
                f"sum(w) FILTER (WHERE {use}) AS wsum",
                f"count(*) FILTER (WHERE {anymiss}) AS n_missing",
                "min(w) AS wmin", "count(*) FILTER (WHERE w IS NULL) AS wnull",
                "count(*) FILTER (WHERE w <= 0 OR isinf(w)) AS wbad"]
        for c, v in ncol.items():
            aggs.append(f"count(*) FILTER (WHERE bad{list(ncol).index(c)}) AS bad_{v}")
            aggs.append(f"count(*) FILTER (WHERE {v} < 0 OR isinf({v})) AS neg_{v}")
            aggs.append(f"sum(w * {zero(v)}) FILTER (WHERE {use}) AS sum_{v}")
        rv = ncol.get(spec.rule_var) if spec.rule_var else None
        if rv and spec.request:
            aggs.append(f"max({zero(rv)}) FILTER (WHERE req AND {use}) AS req_max")
        elif spec.request:
            raise InputError("the request variable applies to magnitude tables (give a "
                             "response)")

        def run(K: int):
            extra = []
            if rv is not None:
                extra.append(f"max_by({{'x': {zero(rv)}, 'w': w}}, {zero(rv)}, {K}) "
                             f"FILTER (WHERE {use}) AS cand")
            sql = (f"SELECT {kcols}, {', '.join(aggs + extra)} FROM (SELECT {inner} FROM "
                   f"{source}) GROUP BY {kcols}")
            say("duckdb: one pass over the file")
            try:
                relation = con.sql(sql)
                fetch = getattr(relation, "to_arrow_table", None) or relation.arrow
                arrow = fetch()
            except Exception as exc:
                raise InputError(f"{label}: cannot tabulate ({str(exc).splitlines()[0]})") \
                    from None
            if hasattr(arrow, "read_all"):      # duckdb >= 1.4 returns a reader
                arrow = arrow.read_all()
            cand = arrow.column("cand").combine_chunks() if rv is not None else None
            frame = arrow.drop_columns(["cand"]).to_pandas() if rv is not None \
                else arrow.to_pandas()
            return frame, cand

        res, cand = run(spec.top_k)
        _duck_checks(res, spec, ncol, src, label)
        if rv is not None and len(res):
            wmin = float(res["wmin"].min())
            K = _candidates_needed(spec.top_k, wmin)
            if K > spec.top_k:
                res, cand = run(K)
        else:
            K = spec.top_k
        # map codes -> positions, per distinct code
        pos = []
        for i, d in enumerate(spec.dims):
            col = res[f"k{i}"]
            pos.append(_duck_positions(col, d, spec, src, label))
        cell = np.ravel_multi_index(tuple(pos), spec.shape).astype(np.int64)
        freq = res["freq"].to_numpy(dtype=float)
        wsum = res["wsum"].fillna(0).to_numpy(dtype=float)
        if spec.weight is None:
            wsum = freq.copy()

        def col_sum(c):
            return res[f"sum_{ncol[c]}"].fillna(0).to_numpy(dtype=float)

        value = col_sum(spec.response) if spec.response else wsum.copy()
        shadow_sum = col_sum(spec.shadow) if spec.shadow else None
        cost_sum = col_sum(spec.cost) if spec.cost else None
        nm = res["n_missing"].to_numpy(dtype=float)
        req_max = None
        if spec.request:
            req_max = res["req_max"].fillna(0).to_numpy(dtype=float)
        cand_x = cand_w = None
        if rv is not None:
            import pyarrow.compute as pc
            lengths = pc.list_value_length(cand).fill_null(0).to_numpy(zero_copy_only=False)
            flat = cand.flatten()
            xs = flat.field("x").to_numpy(zero_copy_only=False).astype(float)
            ws = flat.field("w").to_numpy(zero_copy_only=False).astype(float)
            row = np.repeat(np.arange(len(res)), lengths)
            cand_x, cand_w = _leaf_candidates(row, xs, ws, len(res), spec.top_k, K)
        holdings = None
        if spec.holding is not None and rv is not None:
            say("duckdb: holding sums")
            hq = q(spec.holding)
            sql = (f"SELECT {kcols}, h, sum({zero(rv)}) AS s FROM (SELECT {inner}, "
                   f"CAST({hq} AS VARCHAR) AS h, row_number() OVER () AS rid FROM {source}) "
                   f"WHERE {use} GROUP BY {kcols}, h, CASE WHEN h IS NULL THEN rid END")
            hres = con.execute(sql).df()
            hpos = [_duck_positions(hres[f"k{i}"], d, spec, src, label)
                    for i, d in enumerate(spec.dims)]
            hcell = np.ravel_multi_index(tuple(hpos), spec.shape).astype(np.int64)
            hcodes, _ = pd.factorize(hres["h"], use_na_sentinel=True)
            hcodes = hcodes.astype(np.int64)
            lone = hcodes < 0
            hcodes[lone] = hcodes.max(initial=-1) + 1 + np.arange(int(lone.sum()))
            holdings = _holding_sums(hcell, hcodes, hres["s"].to_numpy(dtype=float))
    finally:
        con.close()
    return _Leaves(cell, value, freq, wsum, shadow_sum, cost_sum, nm, req_max, cand_x, cand_w,
                   holdings)


def _duck_positions(col: pd.Series, dim: Dimension, spec: _Spec, src, label: str) -> np.ndarray:
    """Positions of the grouped codes; on an unknown code, find its first rows in the file."""
    try:
        return _code_positions(col.astype(object).reset_index(drop=True), dim, spec, label,
                               file_rows=False)
    except InputError:
        values = col.astype(object)
        h = dim.hierarchy
        pos = h.lookup(values.fillna(""))
        bad = (pos < 0) if dim.name not in spec.unknown else np.zeros(len(pos), bool)
        bad |= (pos >= 0) & ~h.is_leaf[np.maximum(pos, 0)]
        code = values[bad].iloc[0] if bad.any() else None
        rows = _first_rows(src, dim.name, lambda s: (s.astype(str).str.strip() == str(code))
                           if code is not None and not pd.isna(code) else s.isna())
        where = _rows_text(src, rows)
        if code is None or pd.isna(code):
            raise InputError(f"{label} {where}: code of '{dim.name}' is empty; fix the data "
                             f"or set unknown_code") from None
        if code in h and not h.is_leaf[h.index(code)]:
            raise InputError(f"{label} {where}: code '{code}' of '{dim.name}' is a "
                             f"total/subtotal of its hierarchy; microdata must carry "
                             f"lowest-level codes") from None
        raise InputError(f"{label} {where}: the code in column '{dim.name}' is not in its "
                         f"hierarchy; fix the data, add the code to the hierarchy or set "
                         f"unknown_code") from None


def _rows_text(src, rows: list[int]) -> str:
    if isinstance(src, pd.DataFrame):
        return ", ".join(f"row {src.index[r]!r}" for r in rows)
    return ", ".join(f"line {r + 2}" for r in rows)


def _first_rows(src, column: str, predicate, limit: int = 3) -> list[int]:
    """Record numbers (0-based) of the first records of ``column`` matching ``predicate``;
    reads the file in chunks (only on the error path)."""
    found: list[int] = []
    if isinstance(src, pd.DataFrame):
        hits = np.flatnonzero(predicate(src[column]).to_numpy())
        return [int(i) for i in hits[:limit]]
    path = Path(src)
    offset = 0
    if path.suffix.lower() in (".parquet", ".pq"):
        import pyarrow.parquet as pq
        for batch in pq.ParquetFile(path).iter_batches(columns=[column], batch_size=1 << 20):
            s = batch.to_pandas()[column]
            hits = np.flatnonzero(predicate(s).to_numpy())
            found += [offset + int(i) for i in hits[:limit - len(found)]]
            offset += len(s)
            if len(found) >= limit:
                break
        return found
    for chunk in pd.read_csv(path, usecols=[column], dtype=str, chunksize=1 << 20):
        s = chunk[column]
        hits = np.flatnonzero(predicate(s).to_numpy())
        found += [offset + int(i) for i in hits[:limit - len(found)]]
        offset += len(s)
        if len(found) >= limit:
            break
    return found


def _duck_checks(res: pd.DataFrame, spec: _Spec, ncol: dict, src, label: str) -> None:
    if len(res) == 0:
        raise InputError(f"{label}: no records")
    for c, v in ncol.items():
        if res[f"bad_{v}"].sum():
            rows = _first_rows(src, c, lambda s: pd.to_numeric(s, errors="coerce").isna()
                               & s.notna())
            raise InputError(f"{label} {_rows_text(src, rows[:1])}: value of '{c}' is not a "
                             f"number ({int(res[f'bad_{v}'].sum())} record(s): "
                             f"{_rows_text(src, rows)})")
        if res[f"neg_{v}"].sum():
            rows = _first_rows(src, c, lambda s: pd.to_numeric(s, errors="coerce") < 0)
            raise InputError(f"{label} {_rows_text(src, rows[:1])}: value of '{c}' is "
                             f"negative ({int(res[f'neg_{v}'].sum())} record(s)); the "
                             f"sensitivity rules need non-negative contributions")
    if spec.missing == "error" and res["n_missing"].sum():
        for c in ncol:
            rows = _first_rows(src, c, lambda s: s.isna())
            if rows:
                raise InputError(f"{label} {_rows_text(src, rows[:1])}: value of '{c}' is "
                                 f"missing ({int(res['n_missing'].sum())} record(s) with a "
                                 f"missing value: {_rows_text(src, rows)}); fill it or set "
                                 f"missing='zero' or 'drop'")
    if spec.weight:
        if res["wnull"].sum():
            rows = _first_rows(src, spec.weight, lambda s: pd.to_numeric(s, errors="coerce").isna())
            raise InputError(f"{label} {_rows_text(src, rows[:1])}: weight '{spec.weight}' is "
                             f"missing or not a number")
        if res["wbad"].sum():
            rows = _first_rows(src, spec.weight, lambda s: pd.to_numeric(s, errors="coerce") <= 0)
            raise InputError(f"{label} {_rows_text(src, rows[:1])}: weight '{spec.weight}' "
                             f"must be positive")


# ---------------------------------------------------------------------- assembly
def _scatter(cells: np.ndarray, vals: np.ndarray, n: int) -> np.ndarray:
    return np.bincount(cells, weights=vals, minlength=n).astype(float)


def _merge_sorted(x: np.ndarray, w: np.ndarray, k: int, K: int) -> tuple[np.ndarray, np.ndarray]:
    """Keep, along the last axis, the largest values that cover the first k units of weight."""
    order = np.argsort(-x, axis=-1, kind="stable")
    x = np.take_along_axis(x, order, axis=-1)
    w = np.take_along_axis(w, order, axis=-1)
    before = np.cumsum(w, axis=-1) - w
    keep = (before < k - 1e-12) & (w > 0)
    x = np.where(keep, x, 0.0)[..., :K]
    w = np.where(keep, w, 0.0)[..., :K]
    return x, w


def _aggregate_candidates(cx: np.ndarray, cw: np.ndarray, hierarchies: Sequence[Hierarchy],
                          k: int) -> tuple[np.ndarray, np.ndarray]:
    """Candidate (value, weight) lists of every aggregate from its leaves' lists."""
    shape = tuple(len(h) for h in hierarchies)
    K = cx.shape[1]
    ax = cx.reshape(shape + (K,)).copy()
    aw = cw.reshape(shape + (K,)).copy()
    for d, h in enumerate(hierarchies):
        mx = np.moveaxis(ax, d, 0)
        mw = np.moveaxis(aw, d, 0)
        depth = h.depth
        for p in sorted((p for p, _ in h.edges()), key=lambda p: -depth[p]):
            kids = list(h.children[p])
            xs = np.concatenate([mx[c] for c in kids], axis=-1)
            ws = np.concatenate([mw[c] for c in kids], axis=-1)
            mx[p], mw[p] = _merge_sorted(xs, ws, k, K)
    return ax.reshape(-1, K), aw.reshape(-1, K)


def _unit_tops(cx: np.ndarray, cw: np.ndarray, k: int) -> np.ndarray:
    """top_j = mass of the j-th unit of weight, contributions laid out largest first."""
    end = np.cumsum(cw, axis=1)
    start = end - cw
    out = np.zeros((cx.shape[0], k))
    for j in range(k):
        overlap = np.clip(np.minimum(end, j + 1) - np.maximum(start, j), 0.0, None)
        out[:, j] = (cx * overlap).sum(axis=1)
    return out


def _aggregate_max(values: np.ndarray, hierarchies: Sequence[Hierarchy]) -> np.ndarray:
    shape = tuple(len(h) for h in hierarchies)
    arr = values.reshape(shape).copy()
    for d, h in enumerate(hierarchies):
        moved = np.moveaxis(arr, d, 0)
        depth = h.depth
        for p in sorted((p for p, _ in h.edges()), key=lambda p: -depth[p]):
            moved[p] = np.max(np.stack([moved[c] for c in h.children[p]]), axis=0)
    return arr.ravel()


def _ancestor_table(h: Hierarchy) -> np.ndarray:
    """For each code, its chain of ancestors (itself first), padded with -1."""
    depth = h.depth
    out = np.full((len(h), int(depth.max()) + 1), -1, dtype=np.int64)
    for i in range(len(h)):
        j, c = 0, i
        while c >= 0:
            out[i, j] = c
            c = int(h.parent[c])
            j += 1
    return out


def _holding_levels(cells: np.ndarray, holds: np.ndarray, sums: np.ndarray,
                    hierarchies: Sequence[Hierarchy], k: int, n: int):
    """Holding frequency and top-k holding contributions of every cell, every level.

    A holding can span leaves, so its contribution to an aggregate is the sum over those
    leaves: the (cell, holding) sums are regrouped at every level, one dimension at a time.
    """
    shape = tuple(len(h) for h in hierarchies)
    strides = np.array([int(np.prod(shape[d + 1:])) for d in range(len(shape))], dtype=np.int64)
    for d, h in enumerate(hierarchies):
        anc = _ancestor_table(h)
        pos = (cells // strides[d]) % shape[d]
        parts_c, parts_h, parts_s = [], [], []
        for j in range(anc.shape[1]):
            a = anc[pos, j]
            ok = a >= 0
            parts_c.append(cells[ok] + (a[ok] - pos[ok]) * strides[d])
            parts_h.append(holds[ok])
            parts_s.append(sums[ok])
        c = np.concatenate(parts_c)
        hh = np.concatenate(parts_h)
        s = np.concatenate(parts_s)
        cells, holds, sums = _holding_sums(c, hh, s)
    hfreq = np.bincount(cells, minlength=n).astype(float)
    order = np.lexsort((-sums, cells))
    cs, ss = cells[order], sums[order]
    starts = np.flatnonzero(np.r_[True, cs[1:] != cs[:-1]])
    rank = np.arange(len(cs)) - np.repeat(starts, np.diff(np.r_[starts, len(cs)]))
    take = rank < k
    tops = np.zeros((n, k))
    tops[cs[take], rank[take]] = ss[take]
    return hfreq, tops


def _assemble(lv: _Leaves, spec: _Spec, name: str) -> Table:
    hierarchies = [d.hierarchy for d in spec.dims]
    n = int(np.prod(spec.shape))
    cells = lv.cell

    def agg(vals):
        return aggregate_leaves(_scatter(cells, vals, n), hierarchies)

    value = agg(lv.value)
    freq = agg(lv.freq)
    extra: dict[str, np.ndarray] = {}
    if spec.weight is not None:
        extra["weighted_freq"] = agg(lv.wsum)
    if lv.shadow is not None:
        extra["shadow"] = agg(lv.shadow)
    cost = agg(lv.cost) if lv.cost is not None else None
    if lv.n_missing.any():
        extra["n_missing"] = agg(lv.n_missing)
        total = int(lv.n_missing.sum())
        warnings.warn(f"{total} record(s) with a missing value were "
                      f"{'left out' if spec.missing == 'drop' else 'counted as 0'} "
                      f"(missing='{spec.missing}'); per cell in extra['n_missing']",
                      stacklevel=3)
    if lv.request_max is not None:
        rm = np.zeros(n)
        np.maximum.at(rm, cells, lv.request_max)
        extra["request_max"] = _aggregate_max(rm, hierarchies)
    top = None
    if lv.cand_x is not None:
        K = lv.cand_x.shape[1]
        cx = np.zeros((n, K))
        cw = np.zeros((n, K))
        _, first = np.unique(cells, return_index=True)
        cx[cells[first]] = lv.cand_x[first]
        cw[cells[first]] = lv.cand_w[first]
        dup = np.setdiff1d(np.arange(len(cells)), first)
        for r in dup:   # several code spellings mapped to one cell (unknown_code)
            c = cells[r]
            cx[c], cw[c] = _merge_sorted(np.r_[cx[c], lv.cand_x[r]], np.r_[cw[c], lv.cand_w[r]],
                                         spec.top_k, K)
        cx, cw = _aggregate_candidates(cx, cw, hierarchies, spec.top_k)
        top = _unit_tops(cx, cw, spec.top_k)
    if lv.holdings is not None:
        hfreq, htop = _holding_levels(*lv.holdings, hierarchies, spec.top_k, n)
        extra["holding_freq"] = hfreq
        for j in range(spec.top_k):
            extra[f"holding_top{j + 1}"] = htop[:, j]
    A, rel_total = product_relations(hierarchies)
    return Table(value=value, freq=freq, relations=A, relation_total=rel_total,
                 dimensions=tuple(spec.dims), top=top, cost=cost, kind=spec.kind, name=name,
                 extra=extra)


# ---------------------------------------------------------------------- files
def read_table_file(path: Path, str_columns: Sequence[str]) -> pd.DataFrame:
    from tabprotect.model import read_frame
    return read_frame(path, dtype_str=list(str_columns))


def _read_microdata(path: Path, spec: _Spec) -> pd.DataFrame:
    cols = spec.columns
    try:
        if path.suffix.lower() in (".parquet", ".pq"):
            frame = pd.read_parquet(path)
        else:
            str_cols = [d.name for d in spec.dims] + ([spec.holding] if spec.holding else [])
            frame = pd.read_csv(path, dtype={c: str for c in str_cols},
                                usecols=lambda c: c.strip() in cols)
    except ImportError:
        raise InputError(f"{path.name}: reading Parquet needs pyarrow: pip install "
                         f"'tabprotect[files]'") from None
    except (ValueError, OSError) as exc:
        raise InputError(f"{path.name}: cannot read ({exc})") from None
    frame.columns = [str(c).strip() for c in frame.columns]
    return frame


def distinct_codes(path: Path, dims: Sequence[str]) -> dict[str, pd.Series]:
    """Distinct codes of each dimension column (to build 'levels'/'flat' hierarchies)."""
    con = _duckdb_connect(None, None)
    try:
        source = _source_sql(con, path, None, dims)
        cols = _columns_of(con, source)
        missing = [d for d in dims if d not in cols]
        if missing:
            raise InputError(f"{path.name}: dimension column(s) {missing} not found "
                             f"(columns: {', '.join(cols)})")
        out = {}
        for d in dims:
            rows = con.execute(f"SELECT DISTINCT trim(CAST({_quote(d)} AS VARCHAR)) FROM "
                               f"{source} WHERE {_quote(d)} IS NOT NULL ORDER BY 1").fetchall()
            out[d] = pd.Series([r[0] for r in rows], dtype=object)
        return out
    finally:
        con.close()
