"""The report's plots: matplotlib figures drawn on an Agg canvas (the session's backend
untouched) and returned as base64 PNG for embedding in the HTML report."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from tabprotect.figures import new_figure, png_base64
from tabprotect.model.table import Table

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["plot_loss_by_method", "plot_loss_by_level", "interval_widths",
           "plot_interval_widths", "plot_protection", "plot_ru"]


PASS_COLOUR, FAIL_COLOUR, OTHER_COLOUR = "#3a7d44", "#c0392b", "#5b8bd0"


def plot_loss_by_method(comparison: pd.DataFrame) -> str | None:
    """Each method's share of the value suppressed (%) and its secondary suppressions,
    bars green when the method passed the audit and red when it failed; base64 PNG."""
    if comparison is None or len(comparison) == 0:
        return None
    col = next((c for c in ("share_value", "value_suppressed", "suppressed")
                if c in comparison.columns and comparison[c].notna().any()), None)
    if col is None:
        return None
    labels = comparison["label"].astype(str) if "label" in comparison else \
        comparison.index.astype(str)
    passed = comparison["audit_passed"].fillna(False).astype(bool).to_numpy() \
        if "audit_passed" in comparison else np.ones(len(comparison), bool)
    colours = [PASS_COLOUR if ok else FAIL_COLOUR for ok in passed]
    fig = new_figure((8, 3.6))
    axes = fig.subplots(1, 2)
    axes[0].barh(labels, comparison[col].fillna(0.0), color=colours)
    axes[0].set_xlabel("% of the value suppressed" if col == "share_value" else col)
    axes[0].set_title("information loss")
    second = "secondary" if "secondary" in comparison else "seconds"
    if second in comparison:
        axes[1].barh(labels, comparison[second].fillna(0.0), color=colours)
        axes[1].set_xlabel("secondary suppressions" if second == "secondary" else "seconds")
        axes[1].set_title("secondary suppressions" if second == "secondary" else "time")
        axes[1].set_yticklabels([])
    for ax in axes:
        ax.invert_yaxis()
        ax.grid(axis="x", alpha=0.3)
    axes[0].text(0.99, 0.01, "green: passed the audit, red: failed", fontsize=7,
                 ha="right", va="bottom", transform=axes[0].transAxes)
    fig.tight_layout()
    return png_base64(fig)


def plot_loss_by_level(info) -> str | None:
    """Information loss by hierarchy level (single run): % of the cells and % of the
    value suppressed (deviation runs: mean absolute deviation); base64 PNG."""
    if info is None:
        return None
    frame = info.by_level.drop(index="all", errors="ignore")
    if len(frame) == 0:
        return None
    fig = new_figure((7, 3.6))
    ax = fig.subplots()
    x = np.arange(len(frame))
    if info.kind == "suppression" and "share_value" in frame:
        ax.bar(x - 0.2, frame["share_cells"].fillna(0.0), 0.4, color="#9bbbe6",
               label="% of the cells")
        ax.bar(x + 0.2, frame["share_value"].fillna(0.0), 0.4, color=OTHER_COLOUR,
               label="% of the value")
        ax.set_ylabel("% suppressed")
        ax.set_ylim(0, 100)
        ax.legend(fontsize=8, loc="upper left")
    else:
        col = next((c for c in ("mean_abs_deviation", "sum_abs_deviation") if c in frame),
                   None)
        if col is None:
            return None
        ax.bar(x, frame[col].fillna(0.0), color=OTHER_COLOUR)
        ax.set_ylabel(col.replace("_", " "))
    ax.set_xticks(x)
    ax.set_xticklabels(frame.index.astype(str), fontsize=8)
    ax.set_title("information loss by hierarchy level")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return png_base64(fig)


def interval_widths(table: Table, audit) -> np.ndarray:
    """Relative width ``(upper - lower) / |value|`` in percent of each unpublished cell
    (a verdict audit: a lower bound of the width, ``max_at_least - min_at_most``)."""
    unpublished = getattr(audit, "unpublished", None)
    if getattr(audit, "figures", "intervals") == "bounds":
        width = audit.width_at_least[unpublished]
    else:
        if unpublished is None:
            unpublished = np.isfinite(audit.lower) & (audit.upper > audit.lower)
        width = (audit.upper - audit.lower)[unpublished]
    value = np.abs(table.value[unpublished])
    with np.errstate(divide="ignore", invalid="ignore"):
        return 100 * width / np.where(value > 0, value, np.nan)


def plot_interval_widths(table: Table, audit) -> str | None:
    """Histogram of the audit interval widths relative to the cell value, on a log
    scale (widths span several orders of magnitude); cells of zero width and of
    unbounded width are counted in the legend; base64 PNG."""
    if audit is None:
        return None
    unpublished = getattr(audit, "unpublished", np.ones(table.n_cells, bool))
    rel = interval_widths(table, audit)
    primary = (table.status == "U")[unpublished]
    finite = np.isfinite(rel)
    positive = finite & (rel > 0)
    if not positive.any():
        return None
    lo, hi = np.log10(rel[positive].min()), np.log10(rel[positive].max())
    edges = np.logspace(np.floor(lo), max(np.ceil(hi), np.floor(lo) + 1), 25)
    fig = new_figure((7, 3.6))
    ax = fig.subplots()
    ax.hist([rel[positive & primary], rel[positive & ~primary]], bins=edges, stacked=True,
            color=[FAIL_COLOUR, "#e6a23c"], edgecolor="#555555",
            label=[f"primary ({int((positive & primary).sum())})",
                   f"secondary ({int((positive & ~primary).sum())})"])
    ax.set_xscale("log")
    bounds = getattr(audit, "figures", "intervals") == "bounds"
    ax.set_xlabel(("lower bound of the interval width" if bounds else "interval width")
                  + ", % of the cell value (log scale)")
    ax.set_ylabel("cells")
    ax.set_title("what an intruder can derive: interval widths"
                 + (" (verdict audit: lower bounds)" if bounds else ""))
    extra = []
    if (finite & (rel == 0)).any():
        extra.append(f"{int((finite & (rel == 0)).sum())} of zero width (exactly known)")
    if (~finite).any():
        extra.append(f"{int((~finite).sum())} unbounded or of value 0")
    ax.legend(fontsize=8, title="; ".join(extra) or None, title_fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return png_base64(fig)


def plot_protection(table: Table, audit) -> str | None:
    """Required against achieved protection of every primary cell: the width of the
    interval its protection levels ask for and of the interval the audit found, both in %
    of the value, log-log; a primary below the diagonal is short (red); base64 PNG."""
    req_lo = getattr(audit, "required_lower", None)
    if audit is None or req_lo is None:
        return None
    prim = np.flatnonzero(table.status == "U")
    if len(prim) == 0:
        return None
    value = np.abs(table.value[prim])
    with np.errstate(divide="ignore", invalid="ignore"):
        need = 100 * (audit.required_upper[prim] - req_lo[prim]) / value
        # (a verdict audit: a lower bound of the achieved width)
        width = audit.width_at_least if getattr(audit, "figures", "") == "bounds" else \
            audit.upper - audit.lower
        got = 100 * width[prim] / value
    ok = np.asarray(audit.protected)[prim]
    show = np.isfinite(need) & (need > 0) & np.isfinite(got)
    if not show.any():
        return None
    floor = 0.5 * float(need[show].min())
    got_shown = np.maximum(got, floor)           # zero width drawn at the bottom edge
    fig = new_figure((7, 4))
    ax = fig.subplots()
    for mask, colour, label in ((show & ok, PASS_COLOUR, "protected"),
                                (show & ~ok, FAIL_COLOUR, "NOT protected")):
        if mask.any():
            ax.scatter(need[mask], got_shown[mask], s=30, color=colour,
                       label=f"{label} ({int(mask.sum())})", alpha=0.8)
    lim = [floor, 2 * float(need[show].max())]   # the diagonal over the required widths
    ax.plot(lim, lim, color="#555555", lw=1, ls="--", label="achieved = required")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("required interval width, % of value")
    ax.set_ylabel("achieved interval width, % of value"
                  + (" (at least)" if getattr(audit, "figures", "") == "bounds" else ""))
    ax.set_title("protection of each primary cell")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both")
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
    fig = new_figure((7, 4))
    ax = fig.subplots()
    ax.plot(frame[loss], frame[risk], "o", color=OTHER_COLOUR)
    for _, row in frame.iterrows():
        ax.annotate(str(row.get("label", row.get("method", ""))), (row[loss], row[risk]),
                    fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel(f"information loss ({loss})")
    ax.set_ylabel(f"disclosure risk ({risk})")
    ax.set_title("R-U map")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return png_base64(fig)
