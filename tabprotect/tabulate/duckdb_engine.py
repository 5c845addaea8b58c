"""The DuckDB engine: CSV/Parquet files, also larger than memory (and DataFrames).

One ``GROUP BY`` over the trimmed code columns streams the source: sums, counts, the
counts of bad records, and ``max_by(..., K)`` candidates per leaf cell; holdings need a
second ``GROUP BY`` by (leaf cell, holding).  DuckDB's memory does not grow with the file:
the group state is one row per leaf-cell combination, and it spills to disk beyond
``memory_limit``.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np

from tabprotect.errors import InputError, column_names
from tabprotect.tabulate.checks import FLAG_SET, FLAG_UNSET, check_columns
from tabprotect.tabulate.contributions import candidates_needed, holding_codes, \
    holding_sums, leaf_candidates
from tabprotect.tabulate.duckdb_checks import check_groups, group_positions
from tabprotect.tabulate.engine import EngineSettings, Leaves, Progress, Source
from tabprotect.tabulate.files import is_parquet
from tabprotect.tabulate.spec import MicrodataSpec
from tabprotect.tabulate.frames import is_pandas_frame

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["duckdb_leaves", "duckdb_available", "distinct_codes"]


def duckdb_available() -> bool:
    try:
        import duckdb  # noqa: F401  (optional: the 'files' extra)
    except ImportError:
        return False
    return True


def _quote(name: str) -> str:
    return '"' + str(name).replace('"', '""') + '"'


def _connect(threads, memory_limit):
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


def _source_sql(con, src, dims: Sequence[str]) -> str:
    if is_pandas_frame(src):
        con.register("microdata_frame", src)
        return "microdata_frame"
    path = str(src).replace("'", "''")
    if is_parquet(src):
        return f"read_parquet('{path}')"
    types = ", ".join(f"'{d}': 'VARCHAR'" for d in dims)
    return f"read_csv('{path}', header = true, types = {{{types}}})"


def _columns_of(con, source_sql: str, label: str, path=None) -> list[str]:
    """The source's column names; a CSV file without a column the job names (the typed
    read fails) is described again untyped, so the caller names what is missing. Where
    that untyped read does not find the file's own header line (``path``), DuckDB could
    not make out the file's rows: one line saying so, never a row's text."""
    for sql in (source_sql, source_sql.split(", types = ")[0] + ")"):
        try:
            cols = [r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {sql}").fetchall()]
        except Exception as exc:  # duckdb raises its own error types
            error = str(exc).splitlines()[0]
            if ", types = " not in source_sql:
                break
            continue
        if sql != source_sql and path is not None and cols != _csv_header(path):
            raise InputError(f"{label}: DuckDB cannot make out its rows as CSV under the "
                             f"header line (a row with another number of fields, or an "
                             f"unclosed quote?); engine = \"memory\" names the row")
        return cols
    raise InputError(f"{label}: cannot read ({error})")


def _csv_header(path) -> list[str]:
    """The names on a CSV file's first line (gzip-compressed files too)."""
    import csv
    import gzip
    import io
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rb") as f:
        line = f.readline()
    text = io.StringIO(line.decode("utf-8-sig", errors="replace"))
    return [name.strip() for name in next(csv.reader(text), [])]


def _zero(v: str) -> str:
    return f"coalesce({v}, 0)"


def _request_columns(column: str) -> list[str]:
    """``req`` (the flag is set) and ``req_bad`` (the value is no flag) of a request
    column, by the rules of :func:`tabprotect.tabulate.checks.flags`."""
    text = f"lower(trim(CAST({column} AS VARCHAR)))"
    number = f"TRY_CAST({text} AS DOUBLE)"
    listed = ", ".join(f"'{v}'" for v in FLAG_SET + FLAG_UNSET)
    return [f"({text} IN ({', '.join(repr(v) for v in FLAG_SET)}) OR {number} = 1) AS req",
            f"({text} IS NOT NULL AND {text} NOT IN ({listed}) AND "
            f"coalesce({number} NOT IN (0, 1), true)) AS req_bad"]


@dataclass
class _Query:
    """The SQL pieces of one tabulation of a DuckDB source."""

    source: str              # the FROM source: a registered frame, read_csv or read_parquet
    inner: str               # per-record select list: codes k<i>, values v<j>, w, req
    kcols: str               # the grouping columns k0, k1, ...
    ncol: dict[str, str]     # numeric column -> its value alias v<j>
    use: str                 # predicate of the records that count
    aggs: list[str]          # per-group aggregates
    rv: str | None           # alias of the rule variable; None for a frequency table

    @classmethod
    def make(cls, source: str, spec: MicrodataSpec) -> "_Query":
        q = _quote
        keys = [f"trim(CAST({q(d.name)} AS VARCHAR)) AS k{i}" for i, d in enumerate(spec.dims)]
        num = []
        for j, c in enumerate(spec.numeric_columns):
            num.append(f"TRY_CAST({q(c)} AS DOUBLE) AS v{j}")
            num.append(f"({q(c)} IS NOT NULL AND TRY_CAST({q(c)} AS DOUBLE) IS NULL) AS bad{j}")
        wexpr = f"TRY_CAST({q(spec.weight)} AS DOUBLE)" if spec.weight else "CAST(1 AS DOUBLE)"
        inner = ", ".join(keys + num + [f"{wexpr} AS w"] + (
            _request_columns(q(spec.request)) if spec.request else []))
        kcols = ", ".join(f"k{i}" for i in range(len(spec.dims)))
        ncol = {c: f"v{j}" for j, c in enumerate(spec.numeric_columns)}
        anymiss = " OR ".join(f"{v} IS NULL" for v in ncol.values()) or "false"
        use = f"NOT ({anymiss})" if spec.missing == "drop" else "true"
        aggs = [f"count(*) FILTER (WHERE {use}) AS freq",
                f"sum(w) FILTER (WHERE {use}) AS wsum",
                f"count(*) FILTER (WHERE {anymiss}) AS n_missing",
                "min(w) AS wmin", "count(*) FILTER (WHERE w IS NULL) AS wnull",
                "count(*) FILTER (WHERE w <= 0 OR isinf(w)) AS wbad"]
        for j, (c, v) in enumerate(ncol.items()):
            aggs.append(f"count(*) FILTER (WHERE bad{j}) AS bad_{v}")
            aggs.append(f"count(*) FILTER (WHERE {v} < 0 OR isinf({v})) AS neg_{v}")
            aggs.append(f"sum(w * {_zero(v)}) FILTER (WHERE {use}) AS sum_{v}")
        rv = ncol.get(spec.rule_var) if spec.rule_var else None
        if rv and spec.request:
            aggs.append(f"max({_zero(rv)}) FILTER (WHERE req AND {use}) AS req_max")
            aggs.append("count(*) FILTER (WHERE req_bad) AS req_bad")
        elif spec.request:
            raise InputError("the request variable applies to magnitude tables (give a "
                             "response)")
        return cls(source, inner, kcols, ncol, use, aggs, rv)

    def grouped(self, K: int) -> str:
        """The leaf-cell ``GROUP BY``, with ``K`` candidates per cell when magnitude."""
        cand = []
        if self.rv is not None:
            cand.append(f"max_by({{'x': {_zero(self.rv)}, 'w': w}}, {_zero(self.rv)}, {K}) "
                        f"FILTER (WHERE {self.use}) AS cand")
        return (f"SELECT {self.kcols}, {', '.join(self.aggs + cand)} FROM (SELECT "
                f"{self.inner} FROM {self.source}) GROUP BY {self.kcols}")

    def holdings(self, holding: str) -> str:
        """Sums of the rule variable per (leaf codes, holding); an empty holding is its
        record's own."""
        return (f"SELECT {self.kcols}, h, sum({_zero(self.rv)}) AS s FROM (SELECT "
                f"{self.inner}, CAST({_quote(holding)} AS VARCHAR) AS h, row_number() OVER () "
                f"AS rid FROM {self.source}) WHERE {self.use} "
                f"GROUP BY {self.kcols}, h, CASE WHEN h IS NULL THEN rid END")


def _run(con, query: _Query, K: int, label: str, say: Progress):
    """The grouped frame (without candidates) and the candidates as an arrow list column."""
    say("duckdb: one pass over the file")
    try:
        relation = con.sql(query.grouped(K))
        fetch = getattr(relation, "to_arrow_table", None) or relation.arrow
        arrow = fetch()
    except Exception as exc:
        raise InputError(f"{label}: cannot tabulate ({str(exc).splitlines()[0]})") from None
    if hasattr(arrow, "read_all"):      # duckdb >= 1.4 returns a reader
        arrow = arrow.read_all()
    if query.rv is None:
        return arrow.to_pandas(), None
    return arrow.drop_columns(["cand"]).to_pandas(), arrow.column("cand").combine_chunks()


def duckdb_leaves(source: Source, spec: MicrodataSpec, settings: EngineSettings,
                  say: Progress) -> Leaves:
    """The engine function (see :mod:`tabprotect.tabulate.engine`)."""
    con = _connect(settings.threads, settings.memory_limit)
    label = source.name if isinstance(source, Path) else "microdata"
    try:
        sql_source = _source_sql(con, source, [d.name for d in spec.dims])
        cols = _columns_of(con, sql_source, label,
                           source if isinstance(source, Path) else None)
        check_columns(cols, spec, label)
        query = _Query.make(sql_source, spec)
        res, cand = _run(con, query, spec.top_k, label, say)
        check_groups(res, spec, query.ncol, source, label)
        K = spec.top_k
        if query.rv is not None and len(res):
            K = candidates_needed(spec.top_k, float(res["wmin"].min()))
            if K > spec.top_k:
                res, cand = _run(con, query, K, label, say)
        cell = _cells(res, spec, source, label)
        leaves = _leaf_sums(res, cell, query, spec)
        if query.rv is not None:
            leaves.cand_x, leaves.cand_w = _candidates(cand, len(res), spec.top_k, K)
        if spec.holding is not None and query.rv is not None:
            say("duckdb: holding sums")
            leaves.holdings = _holding_groups(con, query, spec, source, label)
    finally:
        con.close()
    return leaves


def _cells(res: pd.DataFrame, spec: MicrodataSpec, source, label: str) -> np.ndarray:
    """Flat leaf cell id of every group (codes mapped per distinct code)."""
    pos = [group_positions(res[f"k{i}"], d, spec, source, label)
           for i, d in enumerate(spec.dims)]
    return np.ravel_multi_index(tuple(pos), spec.shape).astype(np.int64)


def _leaf_sums(res: pd.DataFrame, cell: np.ndarray, query: _Query,
               spec: MicrodataSpec) -> Leaves:
    freq = res["freq"].to_numpy(dtype=float)
    wsum = res["wsum"].fillna(0).to_numpy(dtype=float)
    if spec.weight is None:
        wsum = freq.copy()

    def col_sum(c):
        return res[f"sum_{query.ncol[c]}"].fillna(0).to_numpy(dtype=float)

    value = col_sum(spec.response) if spec.response else wsum.copy()
    shadow_sum = col_sum(spec.shadow) if spec.shadow else None
    cost_sum = col_sum(spec.cost) if spec.cost else None
    nm = res["n_missing"].to_numpy(dtype=float)
    req_max = res["req_max"].fillna(0).to_numpy(dtype=float) if spec.request else None
    return Leaves(cell, value, freq, wsum, shadow_sum, cost_sum, nm, req_max, None, None, None)


def _candidates(cand, n_groups: int, k: int, K: int):
    """The arrow list of {x, w} structs per group -> (groups x K) candidate arrays."""
    import pyarrow.compute as pc
    lengths = pc.list_value_length(cand).fill_null(0).to_numpy(zero_copy_only=False)
    flat = cand.flatten()
    xs = flat.field("x").to_numpy(zero_copy_only=False).astype(float)
    ws = flat.field("w").to_numpy(zero_copy_only=False).astype(float)
    row = np.repeat(np.arange(n_groups), lengths)
    return leaf_candidates(row, xs, ws, n_groups, k, K)


def _holding_groups(con, query: _Query, spec: MicrodataSpec, source, label: str):
    hres = con.execute(query.holdings(spec.holding)).df()
    hcell = _cells(hres, spec, source, label)
    return holding_sums(hcell, holding_codes(hres["h"]), hres["s"].to_numpy(dtype=float))


def distinct_codes(path: Path, dims: Sequence[str]) -> dict[str, np.ndarray]:
    """Distinct codes of each dimension column (to build 'levels'/'flat' hierarchies)."""
    con = _connect(None, None)
    try:
        source = _source_sql(con, path, dims)
        cols = _columns_of(con, source, path.name, path)
        missing = [d for d in dims if d not in cols]
        if missing:
            raise InputError(f"{path.name}: dimension column(s) {missing} not found "
                             f"({column_names(cols)})")
        out = {}
        for d in dims:
            rows = con.execute(f"SELECT DISTINCT trim(CAST({_quote(d)} AS VARCHAR)) FROM "
                               f"{source} WHERE {_quote(d)} IS NOT NULL ORDER BY 1").fetchall()
            out[d] = np.array([r[0] for r in rows], dtype=object)
        return out
    finally:
        con.close()
