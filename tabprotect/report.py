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

from tabprotect.io.output import column_decimals, format_number
from tabprotect.model.table import Table
from tabprotect.report_plots import (plot_interval_widths, plot_loss_by_level,
                                     plot_loss_by_method, plot_protection, plot_ru)

if TYPE_CHECKING:
    import pandas as pd

    from tabprotect.pipeline import Run

STATUS_COLOURS = {"S": "#ffffff", "U": "#f4a6a6", "M": "#f9d59b", "P": "#b9d7f5",
                  "Z": "#e6e6e6"}
STATUS_NAMES = {"S": "safe (published)", "U": "primary unsafe (suppressed)",
                "M": "secondary (suppressed)", "P": "protected (published)",
                "Z": "empty (published)"}
MAX_TABLE_ROWS = 400      # cells shown in the HTML tables; the CSV files hold all of them
MAX_CROSS_COLUMNS = 40

__all__ = ["render_html", "run_verdict", "MAX_TABLE_ROWS"]


# ---------------------------------------------------------------- verdict
def run_verdict(run: Run) -> str:
    """``PASSED``, ``FAILED``, ``NOT PROVEN`` or ``no audit``: :attr:`Run.verdict
    <tabprotect.pipeline.Run.verdict>`."""
    return run.verdict


def audit_proves(run: Run) -> str:
    """One paragraph: how the audit computed the intervals and what its verdict proves."""
    audit = run.audit
    if audit is None:
        if run.kind == "cellkey":
            return "No audit: the cell key method perturbs every cell."
        return "No audit: the run applies the primary rules only."
    if hasattr(audit, "additivity_error"):   # an adjusted table (cta)
        return ("Audit of the adjusted table, from the published values alone: every "
                "sensitive cell lies outside (value - lower level, value + upper level), "
                "every relation holds (relative tolerance "
                f"{audit.tolerance:g}), published values keep their bounds and fixed cells "
                "their true values. PASSED proves that no sensitive cell is published "
                "within its protection levels of its true value.")
    if hasattr(audit, "range_lower"):   # a rounded table
        return ("Audit of the rounded table: for every cell the integer minimum and maximum "
                "of its true value over all integer, additive tables that the published "
                "values, the base and the rounding rule allow (exact intervals, by LP and "
                "integer programs). PASSED proves that no cell the method promises to "
                "protect can be derived exactly and that no small count (1 or 2) is "
                "pinned down.")
    integer = " integer" if getattr(audit, "integer", False) else ""
    if getattr(audit, "mode", "intervals") == "intervals":
        how = ("Exact intervals: for every unpublished cell the minimum and maximum of its "
               f"value over all{integer} tables consistent with the published cells, the "
               "table's additivity and the a-priori bounds, each computed by LP")
    else:
        how = ("Verdict mode: every primary cell is proven protected by feasible tables "
               "(witnesses) that spread it over its required interval; the intervals shown "
               "are therefore bounds -- the true interval is at least as wide -- except "
               "where the exactness column says exact")
    return (f"{how}. PASSED proves that every primary cell's interval covers the "
            "interval its protection levels require, so the intruder described above "
            "cannot narrow any primary cell below its protection level.")


def _verdict_html(run: Run) -> str:
    verdict = run_verdict(run)
    css = {"PASSED": "pass", "FAILED": "fail", "NOT PROVEN": "unproven"}.get(verdict, "none")
    lines = [f'<div class="banner-verdict">{html.escape(verdict)}</div>']
    what = {"PASSED": "The protected table may be published.",
            "FAILED": "Nothing from this run may be published.",
            "NOT PROVEN": "The audit stopped at its time limit before proving every primary "
                          "cell protected: nothing may be published until a complete audit "
                          "passes.",
            "no audit": "Primary rules only: no protection was applied or audited."}[verdict]
    if run.kind == "compare" and verdict != "PASSED" and run.comparison is not None:
        what = "No method passed the audit: nothing is publishable."
    if run.kind == "cellkey":
        what = ("Cell key method: every cell is published with noise from the ptable, so "
                "there is no suppression pattern to audit; what an intruder can infer from "
                "a published count is the posterior in summary.json (cellkey.posterior).")
    lines.append(f"<p><b>{html.escape(what)}</b></p>")
    if run.audit is not None:
        summ = run.audit.summary() if hasattr(run.audit, "summary") else {}
        if verdict == "FAILED":
            failed = []
            for key, label in (("unprotected_primary", "primary cells not protected"),
                               ("exactly_disclosed", "cells disclosed exactly"),
                               ("pinned_small_values", "small counts pinned down")):
                if summ.get(key):
                    failed.append(f"{summ[key]:,} {label}")
            if failed:
                lines.append("<p>What failed: " + html.escape(", ".join(failed))
                             + " (listed first in the audit table).</p>")
        lines.append(f"<p><b>Attacker model:</b> {html.escape(run.attacker)}.</p>")
        lines.append(f"<p><b>Audit:</b> {html.escape(audit_proves(run))}</p>")
    if run.method:
        lines.append(f"<p><b>Method:</b> {html.escape(str(run.method))}</p>")
    return f'<div id="verdict" class="verdict {css}">{"".join(lines)}</div>'


# ---------------------------------------------------------------- HTML
CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:1.5em;
color:#222;max-width:1200px}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ccc}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;font-size:0.85em;margin:0.5em 0}
td,th{border:1px solid #ccc;padding:2px 6px;text-align:right;white-space:nowrap}
th{background:#f2f2f2}td.code,th.code{text-align:left}
td.text{text-align:left;white-space:normal;max-width:28em}
.pass{color:#176b2c;font-weight:bold}.fail{color:#a31515;font-weight:bold}
.verdict{border:2px solid #888;border-radius:6px;padding:0.6em 1em;margin:1em 0}
.verdict.pass{border-color:#2e7d32;background:#eaf6ec;color:#1b4d20;font-weight:normal}
.verdict.fail{border-color:#c62828;background:#fdecea;color:#6d1111;font-weight:normal}
.verdict.unproven{border-color:#b26a00;background:#fff4e0;color:#5c3700}
.banner-verdict{font-size:1.8em;font-weight:bold;letter-spacing:0.05em}
.verdict p{margin:0.3em 0}
.note{color:#666;font-size:0.85em}.legend span{padding:2px 8px;margin-right:6px;
border:1px solid #aaa;display:inline-block;margin-bottom:4px}
figure{margin:1em 0}img{max-width:100%;height:auto}
@media (max-width:700px){body{margin:0.6em}table{font-size:0.75em}}
"""

#: summary keys that are fractions (shown in %); info-loss ``share_*`` are percentages
FRACTION_KEYS = {"share_value_suppressed"}


def _fmt(x, decimals: int | None = None) -> str:
    """A number as the report shows it: thousands separators, the given decimals (the
    table's precision for values in its units), no float noise, no negative zero."""
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
        text = format_number(f, decimals)
        if "e" in text:  # very small or large magnitudes keep their exponent form
            return text
        whole, dot, frac = text.partition(".")
        sign = "-" if whole.startswith("-") else ""
        return f"{sign}{int(whole.lstrip('-')):,}{dot}{frac}"
    return html.escape(str(x))


def _pct(x) -> str:
    """A percentage: three significant digits (one decimal from 10 %)."""
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "" if x is None or np.isnan(x) else "inf"
    f = float(x)
    return f"{f:,.1f} %" if abs(f) >= 10 or f == 0 else f"{f:.3g} %"


def _frame_html(frame: pd.DataFrame, table_id: str, code_columns=(), row_class=None,
                max_rows: int = MAX_TABLE_ROWS, decimals: dict | None = None,
                percent_columns=(), text_columns=()) -> str:
    shown = frame.iloc[:max_rows]
    decimals = decimals or {}

    def cls(c):
        return "code" if c in code_columns else "text" if c in text_columns else ""

    head = "".join(f'<th class="{cls(c)}">{html.escape(str(c))}</th>' for c in shown.columns)
    body = []
    for i, (_, row) in enumerate(shown.iterrows()):
        style = f' style="background:{row_class[i]}"' if row_class is not None else ""
        cells = "".join(
            f'<td class="{cls(c)}">'
            f'{_pct(v) if c in percent_columns and v is not None else _fmt(v, decimals.get(c))}'
            f"</td>" for c, v in row.items())
        body.append(f"<tr{style}>{cells}</tr>")
    note = (f'<p class="note">{max_rows} of {len(frame)} rows shown; the CSV output holds '
            f"all of them.</p>" if len(frame) > max_rows else "")
    return (f'<div class="scroll"><table id="{table_id}"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>{note}')


def _ru_map_html(frame: pd.DataFrame) -> str:
    """The R-U map's rows; the seed of each point's draws as written (an identifier that
    repeats them, not a quantity)."""
    if "seed" in frame:
        frame = frame.assign(seed=["" if s is None or s != s else str(s)
                                   for s in frame["seed"]])
    return _frame_html(frame, "ru-map", code_columns={"label", "method"},
                       text_columns={"seed"})


def _value_decimals(table: Table) -> int:
    return column_decimals(table.value)


def _published_html(run: Run, table_id: str = "published") -> str:
    table = run.published if run.published is not None else run.table
    status = table.status
    d = _value_decimals(run.table)
    if run.rounded is not None:
        digits = max(d, 2) if run.kind == "adjustment" else 0
        shown_value = [_fmt(v, digits) for v in run.rounded]
    else:
        shown_value = ["&times;" if s in ("U", "M") else _fmt(v, d)
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
        return (legend + f'<div class="scroll"><table id="{table_id}"><thead><tr>{head}</tr>'
                f'</thead><tbody>{"".join(body)}</tbody></table></div>{note}')
    frame = table.to_frame(("status",), confidential=True)
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
    return (legend + f'<div class="scroll"><table id="{table_id}"><thead><tr>{head}'
            f'<th>published</th><th class="code">status</th></tr></thead><tbody>'
            f'{"".join(rows)}</tbody></table></div>{note}')


def _exactness(audit, n: int) -> np.ndarray:
    """Per cell: ``exact`` (both ends of the interval are exact) or ``bound`` (the true
    interval is at least as wide as shown: verdict mode, or cut by a time limit)."""
    out = np.full(n, "exact", dtype=object)
    lo, hi = getattr(audit, "exact_lower", None), getattr(audit, "exact_upper", None)
    if getattr(audit, "mode", "intervals") != "intervals" and lo is not None:
        out[~(np.asarray(lo, bool) & np.asarray(hi, bool))] = "bound"
    incomplete = getattr(audit, "incomplete", None)
    if incomplete is not None:
        out[np.asarray(incomplete, bool)] = "bound (time limit)"
    return out


def _audit_html(run: Run) -> str:
    audit = run.audit
    if audit is None:
        return '<p class="note">No audit for this run.</p>'
    if hasattr(audit, "additivity_error"):
        return _adjustments_html(run)
    table = run.published if run.published is not None else run.table
    unpublished = getattr(audit, "unpublished", None)
    if unpublished is None:
        unpublished = audit.upper > audit.lower
    d = _value_decimals(run.table)
    frame = table.to_frame(("status", "value"), confidential=True)
    bounds = getattr(audit, "figures", "intervals") == "bounds"
    if bounds:
        # a verdict audit: bounds on the interval ends, never the interval
        for name, col in audit.columns().items():
            frame[name.replace("_", " ")] = col
    else:
        frame["lower"] = audit.lower
        frame["upper"] = audit.upper
    frame["interval"] = _exactness(audit, table.n_cells)
    req_lo = getattr(audit, "required_lower", None)
    req_hi = getattr(audit, "required_upper", None)
    if req_lo is not None:
        frame["required lower"] = req_lo
        frame["required upper"] = req_hi
    with np.errstate(divide="ignore", invalid="ignore"):
        width = audit.width_at_least if bounds else audit.upper - audit.lower
        frame["width at least, % of value" if bounds else "width, % of value"] = \
            100 * width / np.where(np.abs(table.value) > 0, np.abs(table.value), np.nan)
    protected = np.asarray(getattr(audit, "protected", np.ones(table.n_cells, bool)))
    frame["protected"] = np.where(table.status == "U", protected, None)
    frame = frame[unpublished]
    order = np.argsort(np.where(frame["protected"].to_numpy() == False, 0, 1),  # noqa: E712
                       kind="stable")
    frame = frame.iloc[order]
    colours = [STATUS_COLOURS.get(s, "#ffffff") for s in frame["status"]]
    colours = ["#ff7b7b" if p is False else c for p, c in zip(frame["protected"], colours)]
    units = {c: d for c in ("value", "lower", "upper", "required lower", "required upper",
                            "min at least", "min at most", "max at least", "max at most")}
    return _frame_html(frame, "audit", code_columns=set(table.dimension_names)
                       | {"status", "interval"}, row_class=colours, decimals=units,
                       percent_columns={"width, % of value", "width at least, % of value"})


def _adjustments_html(run: Run) -> str:
    """The adjustments of a cta run: every changed cell with its true and published
    value, the change and, for sensitive cells, the interval it had to leave; sensitive
    cells first, failures on top."""
    table, audit = run.table, run.audit
    d = max(_value_decimals(table), 2)
    frame = table.to_frame(("status", "value"), confidential=True)
    frame["published"] = run.rounded
    change = run.rounded - table.value
    frame["change"] = change
    with np.errstate(divide="ignore", invalid="ignore"):
        frame["change, % of value"] = 100 * change / np.where(table.value != 0,
                                                              np.abs(table.value), np.nan)
    frame["required lower"] = np.where(audit.sensitive, audit.required_lower, np.nan)
    frame["required upper"] = np.where(audit.sensitive, audit.required_upper, np.nan)
    frame["protected"] = np.where(audit.sensitive, audit.protected, None)
    shown = audit.sensitive | (np.abs(change) > 1e-9 * np.maximum(1.0, np.abs(table.value)))
    rank = np.where(~audit.protected, 0, np.where(audit.sensitive, 1, 2))
    order = np.argsort(rank[shown], kind="stable")
    frame = frame[shown].iloc[order]
    colours = [STATUS_COLOURS.get(s, "#ffffff") for s in frame["status"]]
    colours = ["#ff7b7b" if p is False else c for p, c in zip(frame["protected"], colours)]
    units = {c: d for c in ("value", "published", "change", "required lower",
                            "required upper")}
    return _frame_html(frame, "audit", code_columns=set(table.dimension_names) | {"status"},
                       row_class=colours, decimals=units,
                       percent_columns={"change, % of value"})


def _summary_html(run: Run) -> str:
    table = run.table
    status = run.status
    d = _value_decimals(table)
    items: list[tuple[str, str]] = [
        ("verdict", f'<span class="{"pass" if run.passed else "fail"}">'
                    f"{html.escape(run_verdict(run))}</span>"),
        ("cells", _fmt(table.n_cells)), ("relations", _fmt(table.n_relations)),
        ("kind of table", _fmt(table.kind)), ("run", _fmt(run.kind))]
    if run.method:
        items.append(("method", _fmt(run.method)))
    shown = {"primary", "secondary", "cells", "method", "audit", "verdict"}
    for s in "UMPZ":
        if (status == s).any():
            items.append((STATUS_NAMES[s], _fmt(int((status == s).sum()))))
    if run.audit is not None:
        summ = run.audit.summary() if hasattr(run.audit, "summary") else {}
        for key in ("mode", "unprotected_primary", "exactly_disclosed",
                    "narrower_than_method", "pinned_small_values", "lp_solved"):
            if key in summ:
                items.append((("audit " if key == "mode" else "") + key.replace("_", " "),
                              _fmt(summ[key])))
                shown.add(key)
    if run.results.get("value_secondary") == run.results.get("cost"):
        shown.add("value_secondary")        # the cost is the value: one row
    shown.add("seconds")                    # the total time closes the summary
    for k, v in run.results.items():
        if k in shown or v is None or isinstance(v, (dict, list)) or k.startswith("audit"):
            continue
        shown.add(k)
        label = k.replace("_", " ")
        if k in FRACTION_KEYS and v is not None:
            items.append((label.replace("share ", "% of ").replace("share", "%"),
                          _pct(100 * float(v))))
        elif k.startswith("share") and isinstance(v, (float, np.floating)):
            items.append((label + ", %", _pct(v)))
        elif k in ("cost", "value_secondary", "value_suppressed"):
            items.append((label, _fmt(v, d)))
        else:
            items.append((label, _fmt(v)))
    items.append(("total time, s", _fmt(round(sum(run.timings.values()), 1))))
    rows = "".join(f'<tr><th class="code">{html.escape(str(k))}</th>'
                   f'<td class="code">{v}</td></tr>' for k, v in items)
    return f'<div class="scroll"><table id="summary">{rows}</table></div>'


def _info_html(run: Run) -> str:
    info = run.info
    if info is None:
        return '<p class="note">No information-loss measures for this run.</p>'
    d = _value_decimals(run.table)
    rows = []
    for k, v in info.measures.items():
        if k.startswith("share_"):
            rows.append((f"{k} (%)", _pct(v)))
        elif "value" in k:
            rows.append((k, _fmt(v, d)))
        else:
            rows.append((k, _fmt(v)))
    measures = "".join(f'<tr><td class="code">{html.escape(k)}</td><td>{v}</td></tr>'
                       for k, v in rows)
    measures = (f'<div class="scroll"><table id="infoloss"><thead><tr><th class="code">'
                f"measure</th><th>value</th></tr></thead><tbody>{measures}</tbody></table>"
                "</div>")
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in info.notes)
    by_level = info.by_level.reset_index()
    pct = {c for c in by_level.columns if str(c).startswith("share_")}
    by_level = by_level.rename(columns={c: f"{c} (%)" for c in pct})
    return (measures + "<h3>By hierarchy level</h3>"
            + _frame_html(by_level, "infoloss-levels", code_columns={"level"},
                          percent_columns={f"{c} (%)" for c in pct},
                          decimals={c: d for c in by_level.columns if "value" in str(c)})
            + (f'<ul class="note">{notes}</ul>' if notes else ""))


#: the comparison table's columns (compact: one line per method); the CSV has them all
COMPARISON_COLUMNS = (("label", "method"), ("audit_passed", "audit"),
                      ("secondary", "secondary"), ("share_value", "% of value suppressed"),
                      ("share_freq", "% of contributors suppressed"),
                      ("min_width_pct", "min width, % of value"),
                      ("median_width_pct", "median width, % of value"),
                      ("primary_unprotected", "primaries not protected"),
                      ("exactly_disclosed", "exactly disclosed"),
                      ("max_rel_change", "largest relative change (cta)"),
                      ("seconds", "seconds"),
                      ("error", "error"))


def _cellkey_html(summary: dict) -> str:
    """The perturbed tables, what an intruder infers from a published count (the
    posterior from the public ptable) and the swap's risk per level: counts only."""
    import pandas as pd
    rows = [{"table": t["name"], "cells": t["cells"], "changed": t["cells_changed"],
             "relations": t["additivity"]["relations"], "relations off": t["additivity"]["off"],
             "largest deviation": t["additivity"]["largest_deviation"]}
            for t in summary["tables"]]
    parts = ['<p class="note">Every cell is published with noise from the ptable; a cell '
             'shared by several tables has one value in all of them. Relations off: totals '
             'that differ from the sum of their published parts.</p>',
             _frame_html(pd.DataFrame(rows), "cellkey-tables", code_columns={"table"})]
    post = summary.get("posterior")
    if post:
        parts += [f'<p class="note">What an intruder who knows the ptable infers from a '
                  f'published count (prior: {html.escape(post["prior"])}).</p>',
                  _frame_html(pd.DataFrame(post["published"]), "cellkey-posterior",
                              code_columns=set())]
    swap = summary.get("swap")
    if swap:
        parts += [f'<p class="note">Targeted swapping (seed {swap.get("seed")}, which '
                  f'repeats it): {swap["households_moved"]:,} of '
                  f'{swap["households"]:,} households moved; records in rare cells before '
                  'and after, and those still at their true place (at risk).</p>',
                  _frame_html(pd.DataFrame(swap["risk"]), "swap-risk",
                              code_columns={"level"})]
    return "\n".join(parts)


def _comparison_html(comparison: pd.DataFrame) -> str:
    import pandas as pd
    frame = pd.DataFrame()
    for col, name in COMPARISON_COLUMNS:
        if col not in comparison:
            continue
        values = comparison[col]
        if col == "audit_passed":
            values = values.map(lambda v: "no audit" if v is None or v != v
                                else "PASSED" if v is True or v == 1 else "FAILED")
        elif col == "error":
            if not values.notna().any():
                continue
            values = values.map(lambda v: "" if v is None or v != v else str(v)[:120])
        elif col in ("secondary", "primary_unprotected", "exactly_disclosed"):
            values = values.map(lambda v: None if v is None or v != v else int(v))
        elif col == "seconds":
            values = values.map(lambda v: None if v is None or v != v else round(float(v), 1))
        frame[name] = values.to_numpy()
    colours = None
    if "audit" in frame:
        colours = ["#eaf6ec" if v == "PASSED" else "#fdecea" for v in frame["audit"]]
    pct = {name for col, name in COMPARISON_COLUMNS if "%" in name}
    return _frame_html(frame, "comparison", code_columns={"method", "audit"},
                       row_class=colours, percent_columns=pct, text_columns={"error"})


def render_html(run: Run) -> str:
    """The report as one self-contained HTML document (no external files)."""
    import pandas as pd
    from tabprotect import __version__
    table = run.published if run.published is not None else run.table
    verdict = run_verdict(run)
    publishable = verdict in ("PASSED", "no audit")
    has_intervals = run.audit is not None and hasattr(run.audit, "lower")
    images = []
    if run.comparison is not None:
        images.append(("Information loss by method", plot_loss_by_method(run.comparison)))
    if run.info is not None:
        images.append(("Information loss by hierarchy level", plot_loss_by_level(run.info)))
    if has_intervals:
        images.append(("Protection of each primary cell: required against achieved",
                       plot_protection(table, run.audit)))
        images.append(("What an intruder can derive: interval widths",
                       plot_interval_widths(table, run.audit)))
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
        _verdict_html(run),
        "<h2>Summary</h2>", _summary_html(run),
    ]
    if run.rules is not None:
        sections += ["<h2>Primary rules</h2>",
                     _frame_html(pd.DataFrame(run.rules.summary_rows()), "rules",
                                 code_columns={"rule"})]
    if publishable:
        sections += ["<h2>Published table</h2>", _published_html(run)]
    elif run.kind == "compare":
        sections += ["<h2>Nothing to publish</h2>",
                     '<p class="fail">No method passed the audit: no table is publishable. '
                     "The audit below is that of the first method that failed.</p>"]
    else:
        sections += ["<h2>Pattern that failed the audit (not publishable)</h2>",
                     '<p class="fail">Not for publication: shown to find what failed.</p>',
                     _published_html(run, "pattern")]
    if run.audit is not None and run.kind == "adjustment":
        intro = ("The adjustments: every cell published at another value than its true "
                 "one (sensitive cells first); a sensitive cell's published value must lie "
                 "outside required lower .. required upper.")
        sections += ["<h2>Adjustments</h2>", f'<p class="note">{intro}</p>',
                     _audit_html(run)]
    elif run.audit is not None:
        intro = ("What an intruder can derive: the feasibility interval of every unpublished "
                 "cell; <b>interval</b> says whether it is exact or a bound (the true "
                 "interval is at least as wide); required = the interval the protection "
                 "levels ask for; unprotected primaries first.")
        sections += ["<h2>Audit</h2>", f'<p class="note">{intro}</p>', _audit_html(run)]
    if run.info is not None:
        sections += ["<h2>Information loss</h2>", _info_html(run)]
    if run.kind == "cellkey" and run.results.get("cellkey"):
        sections += ["<h2>Cell key method</h2>", _cellkey_html(run.results["cellkey"])]
    if run.comparison is not None:
        sections += ["<h2>Method comparison</h2>", _comparison_html(run.comparison)]
    if run.ru_map is not None:
        sections += ["<h2>Risk-utility map</h2>", _ru_map_html(run.ru_map)]
    sections += ["<h2>Plots</h2>", figs or '<p class="note">No plots for this run.</p>']
    if run.notes:
        sections += ["<h2>Notes</h2>",
                     "<ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in run.notes) + "</ul>"]
    sections += ["<h2>Timings</h2>",
                 _frame_html(pd.DataFrame({"step": list(run.timings),
                                           "seconds": [round(v, 2) for v in
                                                       run.timings.values()]}),
                             "timings", code_columns={"step"})]
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{html.escape(run.title)}</title><style>{CSS}</style></head><body>"
            + "\n".join(sections) + "</body></html>")
