"""Reports: one self-contained HTML file per run, plus a machine-readable JSON audit trail.

The HTML report (``docs/report.md``) has a summary, the published table with status
colours, the audit table (feasibility intervals), the information-loss table and plots made
with matplotlib (Agg backend, embedded as base64 PNG): information loss by method (or by
hierarchy level for a single run), the distribution of audit interval widths, and the R-U
map for microdata runs.  The JSON trail records the inputs' SHA-256 checksums, the
parameters, the software versions and the results -- counts and measures only, never a
cell value.

A run is described by a :class:`Run`; :func:`run_job` executes a job file's steps (primary
rules, protection or rounding, audit, information loss, comparison) and returns one;
:func:`write_report` writes ``report.html`` and ``report.json``.
"""
from __future__ import annotations

import base64
import datetime as _dt
import hashlib
import html
import io
import json
import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from tabprotect.errors import InputError
from tabprotect.model.status import is_suppressed
from tabprotect.model.table import Table

Progress = Callable[[str, float], None]

STATUS_COLOURS = {"S": "#ffffff", "U": "#f4a6a6", "M": "#f9d59b", "P": "#b9d7f5",
                  "Z": "#e6e6e6"}
STATUS_NAMES = {"S": "safe (published)", "U": "primary unsafe (suppressed)",
                "M": "secondary (suppressed)", "P": "protected (published)",
                "Z": "empty (published)"}
MAX_TABLE_ROWS = 400      # cells shown in the HTML tables; the CSV files hold all of them
MAX_CROSS_COLUMNS = 40

__all__ = ["Run", "run_job", "write_report", "audit_trail", "render_html", "sha256_file",
           "MAX_TABLE_ROWS"]


@dataclass
class Run:
    """Everything a report shows about one protection run.

    Attributes
    ----------
    table : the original table (primary statuses and protection levels set)
    kind : ``"audit"``, ``"suppression"``, ``"rounding"``, ``"compare"`` or ``"risk"``
    published : the table as published (final status) for suppression/audit runs
    rounded : the published (rounded) values for rounding runs
    audit : the audit result (``lower``/``upper`` per cell, ``passed``, ``summary()``)
    info : the :class:`tabprotect.infoloss.InfoLoss` of the published table
    comparison : one row per method of :func:`tabprotect.compare.compare`
    ru_map : microdata R-U map frame (``label, method``, a loss and a risk column)
    parameters : the job spec or call parameters (goes into the trail as is)
    inputs : input files (their checksums go into the trail)
    timings : seconds per step
    results : method-specific numbers (cost, optimality, solver status, ...)
    outputs : files written by the run
    """

    table: Table
    title: str = "tabprotect report"
    kind: str = "audit"
    method: str | None = None
    published: Table | None = None
    rounded: np.ndarray | None = None
    audit: Any = None
    info: Any = None
    comparison: pd.DataFrame | None = None
    ru_map: pd.DataFrame | None = None
    parameters: dict[str, Any] = field(default_factory=dict)
    inputs: list[Path] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    results: dict[str, Any] = field(default_factory=dict)
    outputs: dict[str, Path] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def status(self) -> np.ndarray:
        return (self.published if self.published is not None else self.table).status

    @property
    def passed(self) -> bool | None:
        return None if self.audit is None else bool(self.audit.passed)


# ---------------------------------------------------------------- running a job
def _timed(timings: dict, name: str, progress: Progress | None, fraction: float):
    class _T:
        def __enter__(self):
            if progress:
                progress(name, fraction)
            self.t = time.perf_counter()
            return self

        def __exit__(self, *exc):
            timings[name] = round(time.perf_counter() - self.t, 4)
    return _T()


def _input_files(job) -> list[Path]:
    files: list[Path] = []
    if job.path is not None:
        files.append(job.path)

    def walk(obj):
        if isinstance(obj, dict):
            for v in obj.values():
                walk(v)
        elif isinstance(obj, list):
            for v in obj:
                walk(v)
        elif isinstance(obj, str) and ("." in obj or "/" in obj) and len(obj) < 400:
            try:
                p = job.resolve(obj)
            except (OSError, ValueError):
                return
            if p.is_file() and p not in files:
                files.append(p)
    walk(job.spec)
    return files


def run_job(job, *, output_dir: str | Path | None = None, method: str | None = None,
            progress: Progress | None = None,
            protect_options: dict[str, Any] | None = None) -> Run:
    """Run a job file's steps and write the published table and the audit.

    Steps, each when the job asks for it: build the table (cells file or microdata);
    apply ``[rules]`` (primary); protect with ``[protect]`` (or ``method``) -- or round
    with ``[round]`` -- and audit; otherwise audit the status given in the cells file;
    information loss; ``[compare]``.  Writes ``published.csv`` (suppressed values blank),
    ``cells.csv`` (all values, status) and ``audit.csv`` into the output folder.

    Parameters
    ----------
    job : a :class:`tabprotect.io.job.Job` (see :func:`tabprotect.io.job.load_job`)
    output_dir : overrides ``[output] dir``
    method : protection method overriding ``[protect] method``
    protect_options : options overriding the ``[protect]`` section (e.g. ``time_limit``)
    progress : called as ``progress(step, fraction_done)``
    """
    from tabprotect.infoloss import info_loss
    from tabprotect.io.job import build_table, write_frame

    timings: dict[str, float] = {}
    out = job.output_dir(output_dir)
    spec = job.spec
    title = job.section("job").get("title") or job.section("report").get("title") \
        or f"tabprotect report: {job.label}"
    with _timed(timings, "build table", progress, 0.0):
        table = build_table(job)
    run = Run(table=table, title=str(title), parameters=spec, inputs=_input_files(job),
              timings=timings)
    if "rules" in spec or "primary" in spec:
        with _timed(timings, "primary rules", progress, 0.1):
            table = _apply_job_rules(job, table)
            run.table = table
    protect_opts = job.section("protect")
    if method is not None or "protect" in spec:
        _protect_step(run, job, method or protect_opts.get("method", "optimal"), progress,
                      protect_options or {})
    elif "round" in spec:
        _round_step(run, job, progress)
    else:
        _audit_step(run, job, progress)
    with _timed(timings, "information loss", progress, 0.8):
        if run.kind == "rounding":
            run.info = info_loss(table, run.rounded, **_infoloss_options(job))
        else:
            run.info = info_loss(table, run.published)
    if "compare" in spec:
        from tabprotect.compare import compare_job
        with _timed(timings, "compare", progress, 0.85):
            run.comparison = compare_job(job, table, progress=progress).frame
    with _timed(timings, "write outputs", progress, 0.95):
        if run.kind == "rounding":
            pub = table.to_frame(("value", "freq"))
            pub["value"] = run.rounded
            pub = pub.drop(columns=["freq"])
            run.outputs["published"] = write_frame(pub, out / "published.csv")
        else:
            published = run.published
            frame = published.to_frame(("value", "status"))
            frame["value"] = np.where(is_suppressed(published.status), np.nan, published.value)
            run.outputs["published"] = write_frame(frame, out / "published.csv")
            run.outputs["cells"] = write_frame(published.to_frame(("value", "freq", "status")),
                                               out / "cells.csv")
        if run.audit is not None and hasattr(run.audit, "to_frame"):
            audited = run.published if run.published is not None else table
            run.outputs["audit"] = write_frame(run.audit.to_frame(audited), out / "audit.csv")
        if run.comparison is not None:
            run.outputs["comparison"] = write_frame(run.comparison, out / "compare.csv")
    return run


def _infoloss_options(job) -> dict:
    opts = job.section("report")
    return {k: opts[k] for k in ("by", "cells", "zero", "rows", "cols") if k in opts}


def _apply_job_rules(job, table: Table) -> Table:
    from tabprotect import primary
    rules_from_job = getattr(primary, "rules_from_job", None)
    if rules_from_job is None:
        raise InputError(f"{job.label}: [rules] needs tabprotect.primary.rules_from_job")
    result = primary.apply_rules(table, rules_from_job(job))
    return result.table


PROTECT_KEYS = ("cost", "time_limit", "singleton", "repair", "mip_gap", "empty",
                "cost_column", "engine")


def _protect_step(run: Run, job, method: str, progress: Progress | None,
                  overrides: dict[str, Any]) -> None:
    from tabprotect.secondary import protect
    opts = {**job.section("protect"), **overrides}
    unknown = set(opts) - set(PROTECT_KEYS) - {"method"}
    if unknown:
        raise InputError(f"{job.label} [protect]: unknown key(s) {sorted(unknown)} "
                         f"(known: method, {', '.join(PROTECT_KEYS)})")
    table = run.table
    if not (table.status == "U").any():
        raise InputError(f"{job.label}: no primary unsafe cells (status U) to protect; give "
                         f"[rules] or a status column")
    kwargs = {k: opts[k] for k in PROTECT_KEYS if k in opts}
    with _timed(run.timings, f"protect ({method})", progress, 0.2):
        result = protect(table, method=method, progress=_scaled(progress, 0.2, 0.75),
                         **kwargs)
    run.kind = "suppression"
    run.method = method
    run.published = result.confidential_table
    run.audit = result.audit
    summary = result.summary() if hasattr(result, "summary") else _result_numbers(result)
    run.results = {k: v for k, v in summary.items() if k not in ("cells", "method", "audit")}
    run.notes.extend(getattr(result, "notes", []) or [])
    if not getattr(result, "proven_optimal", False) and method == "optimal":
        run.notes.append("the optimal method stopped before proving optimality (time "
                         "limit): the pattern is the best found, and it is audited")


def _scaled(progress: Progress | None, start: float, end: float) -> Progress | None:
    """Map a step's own progress (0..1) into [start, end] of the whole run."""
    if progress is None:
        return None
    return lambda step, frac: progress(step, start + (end - start) * max(0.0, min(1.0, frac)))


def _result_numbers(result) -> dict:
    out = {}
    for key in ("method", "cost", "proven_optimal", "solver_status", "mip_gap", "timings",
                "repairs", "runtime"):
        v = getattr(result, key, None)
        if v is not None and not callable(v):
            out[key] = v
    return out


def _round_step(run: Run, job, progress: Progress | None) -> None:
    from tabprotect.rounding import round_table
    opts = dict(job.section("round"))
    if "base" not in opts:
        raise InputError(f"{job.label} [round]: give 'base' (the rounding base)")
    keys = ("method", "seed", "margins_from_interior", "weights", "k_step", "step_penalty",
            "threshold", "time_limit", "mip_gap")
    with _timed(run.timings, "round and audit", progress, 0.2):
        result = round_table(run.table, int(opts["base"]),
                             **{k: opts[k] for k in keys if k in opts})
    run.kind = "rounding"
    run.method = f"{result.method} rounding, base {result.base}"
    run.rounded = np.asarray(_rounded_values(result), dtype=float)
    summary = result.summary() if hasattr(result, "summary") else _result_numbers(result)
    run.results = {k: v for k, v in summary.items() if k not in ("cells",)}
    run.notes.extend(getattr(result, "notes", []) or [])
    run.audit = getattr(result, "audit", None)


def _rounded_values(result) -> np.ndarray:
    for attr in ("rounded", "values"):
        v = getattr(result, attr, None)
        if v is not None and not callable(v):
            return np.asarray(v, dtype=float)
    if isinstance(getattr(result, "table", None), Table):
        return result.table.value
    raise InputError("rounding result carries no rounded values")


def _audit_step(run: Run, job, progress: Progress | None) -> None:
    from tabprotect.audit import audit
    table = run.table
    opts = job.section("audit")
    if not table.suppressed.any():
        raise InputError(f"{job.label}: nothing to report: no [protect] or [round] step and "
                         f"no suppressed cells (status U or M) to audit")
    with _timed(run.timings, "audit", progress, 0.3):
        run.audit = audit(table, integer=opts.get("integer"),
                          singleton=bool(opts.get("singleton", False)),
                          time_limit=opts.get("time_limit"))
    run.kind = "audit"
    run.published = table


# ---------------------------------------------------------------- audit trail
def sha256_file(path: str | Path) -> str:
    """SHA-256 checksum of a file, hex."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _versions() -> dict[str, str]:
    from tabprotect import __version__
    out = {"tabprotect": __version__, "python": platform.python_version()}
    for name in ("numpy", "pandas", "scipy", "highspy", "matplotlib"):
        mod = sys.modules.get(name)
        if mod is None:
            try:
                mod = __import__(name)
            except ImportError:
                continue
        out[name] = str(getattr(mod, "__version__", "unknown"))
    return out


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [_jsonable(v) for v in obj.tolist()]
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        f = float(obj)
        return f if np.isfinite(f) else None
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, (str, int)) or obj is None:
        return obj
    return str(obj)


def audit_trail(run: Run) -> dict[str, Any]:
    """The machine-readable record of a run: inputs' checksums, parameters, versions,
    results.  Holds counts and measures only, never a cell value."""
    table = run.table
    status = run.status
    counts = {s: int((status == s).sum()) for s in "SUMPZ"}
    results: dict[str, Any] = {
        "kind": run.kind, "method": run.method, "cells": table.n_cells,
        "relations": table.n_relations, "status_counts": counts,
        "audit_passed": run.passed, **run.results,
    }
    if run.audit is not None and hasattr(run.audit, "summary"):
        results["audit"] = run.audit.summary()
    if run.info is not None:
        results["information_loss"] = run.info.to_dict()
    if run.comparison is not None:
        results["comparison"] = run.comparison.to_dict(orient="records")
    if run.ru_map is not None:
        results["ru_map"] = run.ru_map.to_dict(orient="records")
    return _jsonable({
        "title": run.title,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "versions": _versions(),
        "inputs": [{"path": str(p), "bytes": Path(p).stat().st_size, "sha256": sha256_file(p)}
                   for p in run.inputs if Path(p).is_file()],
        "parameters": run.parameters,
        "timings_seconds": run.timings,
        "outputs": {k: str(v) for k, v in run.outputs.items()},
        "results": results,
        "notes": run.notes,
    })


# ---------------------------------------------------------------- plots
def _figure_png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    import matplotlib.pyplot as plt
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def plot_loss_by_method(comparison: pd.DataFrame) -> str | None:
    """Bar chart of each method's information loss (and suppressions); base64 PNG."""
    if comparison is None or len(comparison) == 0:
        return None
    plt = _pyplot()
    col = next((c for c in ("share_value", "hellinger", "value_suppressed", "suppressed")
                if c in comparison.columns and comparison[c].notna().any()), None)
    if col is None:
        return None
    labels = comparison["label"].astype(str) if "label" in comparison else \
        comparison.index.astype(str)
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    axes[0].bar(labels, comparison[col].fillna(0.0), color="#5b8bd0")
    axes[0].set_title(f"information loss ({col})")
    second = "suppressed" if col != "suppressed" and "suppressed" in comparison else "seconds"
    if second in comparison:
        axes[1].bar(labels, comparison[second].fillna(0.0), color="#d08b5b")
        axes[1].set_title(second)
    for ax in axes:
        ax.tick_params(axis="x", rotation=30, labelsize=8)
        ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return _figure_png(fig)


def plot_loss_by_level(info) -> str | None:
    """Bar chart of the information loss by hierarchy level (single run); base64 PNG."""
    if info is None:
        return None
    frame = info.by_level.drop(index="all", errors="ignore")
    col = "share_value" if info.kind == "suppression" else "sum_abs_deviation"
    if len(frame) == 0 or col not in frame:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.4))
    ax.bar(frame.index.astype(str), frame[col].fillna(0.0), color="#5b8bd0")
    ax.set_ylabel("% of value suppressed" if col == "share_value" else "sum |deviation|")
    ax.set_title("information loss by hierarchy level")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return _figure_png(fig)


def interval_widths(table: Table, audit) -> np.ndarray:
    """Relative width ``(upper - lower) / |value|`` in percent of each unpublished cell."""
    unpublished = getattr(audit, "unpublished", None)
    if unpublished is None:
        unpublished = np.isfinite(audit.lower) & (audit.upper > audit.lower)
    width = (audit.upper - audit.lower)[unpublished]
    value = np.abs(table.value[unpublished])
    with np.errstate(divide="ignore", invalid="ignore"):
        return 100 * width / np.where(value > 0, value, np.nan)


def plot_interval_widths(table: Table, audit) -> str | None:
    """Histogram of the audit interval widths relative to the cell value; base64 PNG."""
    if audit is None:
        return None
    rel = interval_widths(table, audit)
    primary = (table.status == "U")[getattr(audit, "unpublished", np.ones(table.n_cells, bool))]
    rel_f = np.where(np.isfinite(rel), rel, np.nan)
    if not np.isfinite(rel_f).any():
        return None
    cap = float(np.nanpercentile(rel_f, 99)) if np.isfinite(rel_f).sum() > 5 else \
        float(np.nanmax(rel_f))
    shown = np.clip(rel_f, 0, max(cap, 1.0))
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.4))
    bins = min(30, max(5, int(np.sqrt(np.isfinite(shown).sum())) + 1))
    ax.hist([shown[primary & np.isfinite(shown)], shown[~primary & np.isfinite(shown)]],
            bins=bins, stacked=True, color=[STATUS_COLOURS["U"], STATUS_COLOURS["M"]],
            edgecolor="#555555", label=["primary", "other unpublished"])
    ax.set_xlabel("interval width, % of the cell value")
    ax.set_ylabel("cells")
    ax.set_title("audit: feasibility interval widths")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return _figure_png(fig)


def plot_ru(frame: pd.DataFrame | None) -> str | None:
    """R-U map (risk against information loss) of microdata runs; base64 PNG."""
    if frame is None or len(frame) == 0:
        return None
    loss = next((c for c in ("hellinger", "aad", "rad") if c in frame), None)
    risk = next((c for c in frame.columns if "tau" in c or "risk" in c), None)
    if loss is None or risk is None:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(frame[loss], frame[risk], "o", color="#5b8bd0")
    for _, row in frame.iterrows():
        ax.annotate(str(row.get("label", row.get("method", ""))), (row[loss], row[risk]),
                    fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel(f"information loss ({loss})")
    ax.set_ylabel(f"disclosure risk ({risk})")
    ax.set_title("R-U map")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return _figure_png(fig)


# ---------------------------------------------------------------- HTML
CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em;
color:#222;max-width:1200px}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;font-size:0.85em;margin:0.5em 0}
td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}
th{background:#f2f2f2}td.code,th.code{text-align:left}
.pass{color:#176b2c;font-weight:bold}.fail{color:#a31515;font-weight:bold}
.note{color:#666;font-size:0.85em}.legend span{padding:2px 8px;margin-right:6px;
border:1px solid #aaa}img{max-width:100%}
"""


def _fmt(x) -> str:
    if x is None:
        return ""
    if isinstance(x, (bool, np.bool_)):
        return "yes" if x else "no"
    if isinstance(x, (int, np.integer)):
        return f"{int(x):,}"
    if isinstance(x, (float, np.floating)):
        f = float(x)
        if np.isnan(f):
            return ""
        if np.isinf(f):
            return "inf" if f > 0 else "-inf"
        if f == round(f) and abs(f) < 1e15:
            return f"{f:,.0f}"
        return f"{f:,.4g}" if abs(f) < 1 else f"{f:,.2f}"
    return html.escape(str(x))


def _frame_html(frame: pd.DataFrame, table_id: str, code_columns=(), row_class=None,
                max_rows: int = MAX_TABLE_ROWS) -> str:
    shown = frame.iloc[:max_rows]
    head = "".join(f'<th class="{"code" if c in code_columns else ""}">{html.escape(str(c))}'
                   f"</th>" for c in shown.columns)
    body = []
    for i, (_, row) in enumerate(shown.iterrows()):
        cls = f' style="background:{row_class[i]}"' if row_class is not None else ""
        cells = "".join(f'<td class="{"code" if c in code_columns else ""}">{_fmt(v)}</td>'
                        for c, v in row.items())
        body.append(f"<tr{cls}>{cells}</tr>")
    note = (f'<p class="note">{max_rows} of {len(frame)} rows shown; the CSV output holds '
            f"all of them.</p>" if len(frame) > max_rows else "")
    return (f'<table id="{table_id}"><thead><tr>{head}</tr></thead><tbody>'
            f'{"".join(body)}</tbody></table>{note}')


def _published_html(run: Run) -> str:
    table = run.published if run.published is not None else run.table
    status = table.status
    if run.rounded is not None:
        shown_value = [_fmt(v) for v in run.rounded]
    else:
        shown_value = ["&times;" if s in ("U", "M") else _fmt(v)
                       for s, v in zip(status, table.value)]
    legend = "".join(f'<span style="background:{c}">{s}: {STATUS_NAMES[s]}</span>'
                     for s, c in STATUS_COLOURS.items() if (status == s).any())
    legend = f'<p class="legend">{legend}</p>'
    dims = table.dimensions
    if len(dims) == 2 and len(dims[1].hierarchy) <= MAX_CROSS_COLUMNS:
        rows_h, cols_h = dims[0].hierarchy, dims[1].hierarchy
        shape = table.shape
        depth = rows_h.depth
        head = '<th class="code">' + html.escape(f"{dims[0].name} \\ {dims[1].name}") + "</th>"
        head += "".join(f"<th>{html.escape(c)}</th>" for c in cols_h.codes)
        body = []
        for r in range(min(shape[0], MAX_TABLE_ROWS)):
            cells = []
            for c in range(shape[1]):
                i = r * shape[1] + c
                cells.append(f'<td style="background:{STATUS_COLOURS[status[i]]}" '
                             f'title="{status[i]}">{shown_value[i]}</td>')
            label = "&nbsp;&nbsp;" * int(depth[r]) + html.escape(rows_h.codes[r])
            body.append(f'<tr><td class="code">{label}</td>{"".join(cells)}</tr>')
        note = (f'<p class="note">{MAX_TABLE_ROWS} of {shape[0]} rows shown.</p>'
                if shape[0] > MAX_TABLE_ROWS else "")
        return (legend + f'<table id="published"><thead><tr>{head}</tr></thead><tbody>'
                f'{"".join(body)}</tbody></table>{note}')
    frame = table.to_frame(("status",))
    frame.insert(len(frame.columns) - 1, "published", shown_value)
    codes = list(table.dimension_names)
    rows = []
    for i, (_, row) in enumerate(frame.iloc[:MAX_TABLE_ROWS].iterrows()):
        tds = "".join(f'<td class="code">{html.escape(str(row[c]))}</td>' for c in codes)
        rows.append(f'<tr style="background:{STATUS_COLOURS[status[i]]}">{tds}'
                    f'<td>{row["published"]}</td><td class="code">{status[i]}</td></tr>')
    head = "".join(f'<th class="code">{html.escape(c)}</th>' for c in codes)
    note = (f'<p class="note">{MAX_TABLE_ROWS} of {len(frame)} cells shown.</p>'
            if len(frame) > MAX_TABLE_ROWS else "")
    return (legend + f'<table id="published"><thead><tr>{head}<th>published</th>'
            f'<th class="code">status</th></tr></thead><tbody>{"".join(rows)}</tbody>'
            f"</table>{note}")


def _audit_html(run: Run) -> str:
    audit = run.audit
    if audit is None:
        return '<p class="note">No audit for this run.</p>'
    table = run.published if run.published is not None else run.table
    unpublished = getattr(audit, "unpublished", None)
    if unpublished is None:
        unpublished = audit.upper > audit.lower
    frame = table.to_frame(("status", "value"))
    frame["lower"] = audit.lower
    frame["upper"] = audit.upper
    req_lo = getattr(audit, "required_lower", None)
    req_hi = getattr(audit, "required_upper", None)
    if req_lo is not None:
        frame["required lower"] = req_lo
        frame["required upper"] = req_hi
    with np.errstate(divide="ignore", invalid="ignore"):
        frame["width % of value"] = 100 * (audit.upper - audit.lower) / np.where(
            np.abs(table.value) > 0, np.abs(table.value), np.nan)
    protected = np.asarray(getattr(audit, "protected", np.ones(table.n_cells, bool)))
    frame["protected"] = np.where(table.status == "U", protected, None)
    frame = frame[unpublished]
    order = np.argsort(np.where(frame["protected"].to_numpy() == False, 0, 1),  # noqa: E712
                       kind="stable")
    frame = frame.iloc[order]
    colours = [STATUS_COLOURS.get(s, "#ffffff") for s in frame["status"]]
    colours = ["#ff7b7b" if p is False else c for p, c in zip(frame["protected"], colours)]
    return _frame_html(frame, "audit", code_columns=set(table.dimension_names) | {"status"},
                       row_class=colours)


def _summary_html(run: Run) -> str:
    table = run.table
    status = run.status
    items = [("cells", table.n_cells), ("relations", table.n_relations),
             ("kind of table", table.kind), ("run", run.kind)]
    if run.method:
        items.append(("method", run.method))
    for s in "UMPZ":
        if (status == s).any():
            items.append((STATUS_NAMES[s], int((status == s).sum())))
    if run.audit is not None:
        verdict = ('<span class="pass">PASSED</span>' if run.passed
                   else '<span class="fail">FAILED</span>')
        items.append(("audit", verdict))
        summ = run.audit.summary() if hasattr(run.audit, "summary") else {}
        for key in ("unprotected_primary", "exactly_disclosed", "lp_solved"):
            if key in summ:
                items.append((key.replace("_", " "), summ[key]))
    for k, v in run.results.items():
        if not isinstance(v, (dict, list)):
            items.append((k.replace("_", " "), v))
    items.append(("total time, s", round(sum(run.timings.values()), 3)))
    rows = "".join(f'<tr><th class="code">{html.escape(str(k))}</th>'
                   f'<td class="code">{v if isinstance(v, str) and v.startswith("<span") else _fmt(v)}'
                   f"</td></tr>" for k, v in items)
    return f'<table id="summary">{rows}</table>'


def _info_html(run: Run) -> str:
    info = run.info
    if info is None:
        return '<p class="note">No information-loss measures for this run.</p>'
    measures = pd.DataFrame({"measure": list(info.measures), "value": list(info.measures.values())})
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in info.notes)
    by_level = info.by_level.reset_index()
    return (_frame_html(measures, "infoloss", code_columns={"measure"})
            + "<h3>By hierarchy level</h3>"
            + _frame_html(by_level, "infoloss-levels", code_columns={"level"})
            + (f'<ul class="note">{notes}</ul>' if notes else ""))


def render_html(run: Run) -> str:
    """The report as one self-contained HTML document (no external files)."""
    table = run.published if run.published is not None else run.table
    images = []
    if run.comparison is not None:
        images.append(("Information loss by method", plot_loss_by_method(run.comparison)))
    else:
        images.append(("Information loss by hierarchy level", plot_loss_by_level(run.info)))
    images.append(("Audit interval widths", plot_interval_widths(table, run.audit)
                   if run.audit is not None and hasattr(run.audit, "lower") else None))
    if run.ru_map is not None:
        images.append(("R-U map", plot_ru(run.ru_map)))
    figs = "".join(f'<figure><img alt="{html.escape(t)}" src="data:image/png;base64,{png}">'
                   f"<figcaption>{html.escape(t)}</figcaption></figure>"
                   for t, png in images if png)
    sections = [
        f"<h1>{html.escape(run.title)}</h1>",
        f'<p class="note">Generated {_dt.datetime.now().strftime("%Y-%m-%d %H:%M")} by '
        f"tabprotect {_versions()['tabprotect']}. This report shows confidential cell values "
        f"(audit table): it is for the people who decide what gets published, not for "
        f"publication.</p>",
        "<h2>Summary</h2>", _summary_html(run),
        "<h2>Published table</h2>", _published_html(run),
        "<h2>Audit</h2>",
        '<p class="note">What an intruder can derive: the feasibility interval of every '
        "unpublished cell given the published cells, the table's additivity and the a-priori "
        "bounds; required = the interval the protection levels ask for.</p>",
        _audit_html(run),
        "<h2>Information loss</h2>", _info_html(run),
    ]
    if run.comparison is not None:
        sections += ["<h2>Method comparison</h2>",
                     _frame_html(run.comparison, "comparison", code_columns={"label", "method"})]
    if run.ru_map is not None:
        sections += ["<h2>Risk-utility map</h2>",
                     _frame_html(run.ru_map, "ru-map", code_columns={"label", "method"})]
    sections += ["<h2>Plots</h2>", figs or '<p class="note">No plots for this run.</p>']
    if run.notes:
        sections += ["<h2>Notes</h2>",
                     "<ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in run.notes) + "</ul>"]
    sections += ["<h2>Timings</h2>",
                 _frame_html(pd.DataFrame({"step": list(run.timings),
                                           "seconds": list(run.timings.values())}),
                             "timings", code_columns={"step"})]
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>{html.escape(run.title)}</title><style>{CSS}</style></head><body>"
            + "\n".join(sections) + "</body></html>")


def write_report(run: Run, path: str | Path) -> tuple[Path, Path]:
    """Write ``report.html`` and its JSON audit trail ``report.json``.

    Parameters
    ----------
    run : what to report
    path : an ``.html`` file, or a folder (``report.html`` in it)

    Returns
    -------
    (html_path, json_path)

    Examples
    --------
    >>> from tabprotect.model import Hierarchy
    >>> from tabprotect.audit import audit
    >>> import tempfile
    >>> r = Hierarchy.flat(["1", "2"], total="T"); c = Hierarchy.flat(["a", "b"], total="T")
    >>> t = Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2])
    >>> st = t.status.copy(); st[[4, 5, 7, 8]] = ["U", "M", "M", "M"]
    >>> t = t.replace(status=st)
    >>> html_path, json_path = write_report(Run(t, audit=audit(t)), tempfile.mkdtemp())
    >>> html_path.name, json_path.name
    ('report.html', 'report.json')
    """
    path = Path(path)
    if path.suffix.lower() not in (".html", ".htm"):
        path = path / "report.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    if run.info is None:
        from tabprotect.infoloss import info_loss
        run.info = (info_loss(run.table, run.rounded) if run.rounded is not None
                    else info_loss(run.table, run.published))
    json_path = path.with_suffix(".json")
    run.outputs.setdefault("report", path)
    run.outputs.setdefault("audit_trail", json_path)
    path.write_text(render_html(run), encoding="utf-8")
    json_path.write_text(json.dumps(audit_trail(run), indent=2), encoding="utf-8")
    return path, json_path
