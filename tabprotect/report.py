"""Reports: one self-contained HTML file per run (rendering only).

The HTML report (``docs/report.md``) has a summary, the published table with status
colours, the audit table (feasibility intervals), the information-loss table and plots made
with matplotlib (drawn on an Agg canvas without touching the session's backend, embedded
as base64 PNG): information loss by method (or by
hierarchy level for a single run), the distribution of audit interval widths, and the R-U
map for microdata runs.  It renders a :class:`tabprotect.pipeline.Run`; the pipeline
(:func:`tabprotect.pipeline.run`) makes the run and
:func:`tabprotect.io.results.write_outputs` writes ``report.html`` with the other outputs.
"""
from __future__ import annotations

import datetime as _dt
import html
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from tabprotect.figures import new_figure, png_base64
from tabprotect.model.table import Table

if TYPE_CHECKING:
    from tabprotect.pipeline import Run

STATUS_COLOURS = {"S": "#ffffff", "U": "#f4a6a6", "M": "#f9d59b", "P": "#b9d7f5",
                  "Z": "#e6e6e6"}
STATUS_NAMES = {"S": "safe (published)", "U": "primary unsafe (suppressed)",
                "M": "secondary (suppressed)", "P": "protected (published)",
                "Z": "empty (published)"}
MAX_TABLE_ROWS = 400      # cells shown in the HTML tables; the CSV files hold all of them
MAX_CROSS_COLUMNS = 40

__all__ = ["render_html", "MAX_TABLE_ROWS"]


# ---------------------------------------------------------------- plots
def plot_loss_by_method(comparison: pd.DataFrame) -> str | None:
    """Bar chart of each method's information loss (and suppressions); base64 PNG."""
    if comparison is None or len(comparison) == 0:
        return None
    col = next((c for c in ("share_value", "hellinger", "value_suppressed", "suppressed")
                if c in comparison.columns and comparison[c].notna().any()), None)
    if col is None:
        return None
    labels = comparison["label"].astype(str) if "label" in comparison else \
        comparison.index.astype(str)
    fig = new_figure((9, 3.6))
    axes = fig.subplots(1, 2)
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
    return png_base64(fig)


def plot_loss_by_level(info) -> str | None:
    """Bar chart of the information loss by hierarchy level (single run); base64 PNG."""
    if info is None:
        return None
    frame = info.by_level.drop(index="all", errors="ignore")
    col = "share_value" if info.kind == "suppression" else "sum_abs_deviation"
    if len(frame) == 0 or col not in frame:
        return None
    fig = new_figure((6, 3.4))
    ax = fig.subplots()
    ax.bar(frame.index.astype(str), frame[col].fillna(0.0), color="#5b8bd0")
    ax.set_ylabel("% of value suppressed" if col == "share_value" else "sum |deviation|")
    ax.set_title("information loss by hierarchy level")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return png_base64(fig)


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
    fig = new_figure((6, 3.4))
    ax = fig.subplots()
    bins = min(30, max(5, int(np.sqrt(np.isfinite(shown).sum())) + 1))
    ax.hist([shown[primary & np.isfinite(shown)], shown[~primary & np.isfinite(shown)]],
            bins=bins, stacked=True, color=[STATUS_COLOURS["U"], STATUS_COLOURS["M"]],
            edgecolor="#555555", label=["primary", "other unpublished"])
    ax.set_xlabel("interval width, % of the cell value")
    ax.set_ylabel("cells")
    ax.set_title("audit: feasibility interval widths")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return png_base64(fig)


def plot_ru(frame: pd.DataFrame | None) -> str | None:
    """R-U map (risk against information loss) of microdata runs; base64 PNG."""
    if frame is None or len(frame) == 0:
        return None
    loss = next((c for c in ("hellinger", "aad", "rad") if c in frame), None)
    risk = next((c for c in frame.columns if "tau" in c or "risk" in c), None)
    if loss is None or risk is None:
        return None
    fig = new_figure((6, 4))
    ax = fig.subplots()
    ax.plot(frame[loss], frame[risk], "o", color="#5b8bd0")
    for _, row in frame.iterrows():
        ax.annotate(str(row.get("label", row.get("method", ""))), (row[loss], row[risk]),
                    fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel(f"information loss ({loss})")
    ax.set_ylabel(f"disclosure risk ({risk})")
    ax.set_title("R-U map")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return png_base64(fig)


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
    from tabprotect import __version__
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
        f"tabprotect {__version__}. This report shows confidential cell values "
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
