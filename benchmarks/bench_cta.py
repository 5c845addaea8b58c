"""Controlled tabular adjustment on Castro's ten benchmark tables
(../shared/benchmarks/castro; loaded and made additive by benchmarks/castro.py).

Four runs per table, each ``cta(table, cost="relative", time_limit=T, margin=0, ...)``
(weights 1 / |value|, the weights of Castro's L2 instances; the files' levels exactly;
bounds from the files' deviation bounds; fixed cells: zero cells and lb == ub):

* ``L1 heuristic``: the default directions (``auto``): the rounded relaxation's or the
  balanced directions, improved by single flips; gap against the relaxation's bound;
* ``L1 free``: the MILP over every sensitive cell's direction, started from the heuristic;
  objective, proven optimal or the gap against HiGHS' bound at the time limit;
* ``L2 heuristic``: the QP relaxation's directions improved by single flips; gap against
  the relaxation's bound;
* ``L2 up``: every sensitive cell up -- the direction Castro's L2 instances fix -- one
  convex QP, solved to optimality (the known optimum of that problem).

Columns: objective (weighted distance in the table's units), lower bound and gap where a
bound is known, solver status, seconds of the call, the unweighted L1 (sum of absolute
changes) and L2 (Euclidean norm) of the changes, and the audit verdict
(:func:`tabprotect.audit_adjusted.audit_adjusted`).

Usage::

    python benchmarks/bench_cta.py --time-limit 120 --out benchmarks/results/cta.md
    python benchmarks/bench_cta.py --tables TARGUS TABLE7 --runs "L1 free"
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.castro import CASTRO_TABLES, load_castro  # noqa: E402
from tabprotect.adjust import cta  # noqa: E402
from tabprotect.errors import InputError  # noqa: E402

#: label -> CTAOptions fields
RUNS = {"L1 heuristic": {"distance": "L1", "directions": "heuristic"},
        "L1 free": {"distance": "L1", "directions": "free"},
        "L2 heuristic": {"distance": "L2", "directions": "heuristic"},
        "L2 up": {"distance": "L2", "directions": "up"}}


def measure(table, label: str, time_limit: float) -> dict:
    t0 = time.perf_counter()
    try:
        # margin 0: the files' levels exactly, the problem whose optima Castro reports
        res = cta(table, cost="relative", time_limit=time_limit, margin=0, **RUNS[label])
    except InputError as exc:
        return {"run": label, "error": str(exc), "seconds": time.perf_counter() - t0}
    s = res.summary()
    return {"run": label, "objective": res.objective,
            "lower bound": res.solver.get("lower_bound"), "gap": res.mip_gap,
            "status": res.solver_status, "seconds": time.perf_counter() - t0,
            "L1": s["l1"], "L2": s["l2"], "max rel change": s["max_rel_change"],
            "audit": s["audit"]}


def _fmt(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.4g}" if abs(v) < 1e5 else f"{v:.4e}"
    return str(v)


def table_markdown(rows: list[dict]) -> str:
    cols = ["table", "cells", "sensitive", "run", "objective", "lower bound", "gap",
            "status", "seconds", "L1", "L2", "max rel change", "audit"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['table']} | {r['cells']} | {r['sensitive']} | {r['run']} | "
                         f"error: {r['error']} |" + " |" * (len(cols) - 5))
            continue
        lines.append("| " + " | ".join(_fmt(r.get(c)) if c != "gap" or r.get(c) is None
                                        else f"{100 * r[c]:.2f} %" for c in cols) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", nargs="*", default=list(CASTRO_TABLES))
    ap.add_argument("--runs", nargs="*", default=list(RUNS), choices=list(RUNS))
    ap.add_argument("--time-limit", type=float, default=120.0,
                    help="seconds per run (the whole cta call)")
    ap.add_argument("--out", type=Path, help="write the markdown table here")
    args = ap.parse_args(argv)
    rows = []
    for name in args.tables:
        table = load_castro(name)
        n_sens = int((table.status == "U").sum())
        for label in args.runs:
            row = {"table": name, "cells": table.n_cells, "sensitive": n_sens,
                   **measure(table, label, args.time_limit)}
            rows.append(row)
            print(" ".join(f"{k}={_fmt(v)}" for k, v in row.items()), flush=True)
    text = table_markdown(rows)
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
