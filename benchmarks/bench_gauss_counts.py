"""gauss with the single-contributor attack on hierarchical count tables: two code trees
(a baseline checkout and this one), same run, each case in its own process.

The tables: :func:`tabprotect.model.synthetic.count_table` with ``side = 1 + g + g*l``
codes per dimension (a total, ``g`` groups of ``l`` leaves; e.g. ``2x5`` is 13 codes,
2,197 cells in 3-D); primaries ``0 < count <= 2``, an intruder's interval reaching
``count + 1`` and 2 wide, empty cells published, the single-contributor attack on
(GaussSuppression's ``SuppressSmallCounts(maxN = 2, protectZeros = FALSE,
protectionIntervals = TRUE)`` setting).  The parent builds each table once and hands its
counts to the children, which rebuild it with their own tree's classes.

Per tree and table: the method alone (seconds, secondaries, cost) and the project's exact
interval audit of its pattern (``mode="intervals"``, single-contributor attack, LP and
integer), then ``protect()`` end to end (seconds, cells the repair added, final cost and
verdict, stage seconds).  Printed and written as a Markdown table.

Usage::

    python benchmarks/bench_gauss_counts.py --tables 2x5 4x5 --code base=../baseline \\
        --code current=. --out benchmarks/results/gauss_counts.md
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def child(args) -> None:
    """One tree, one table: run in a fresh interpreter with that tree first on the path."""
    sys.path.insert(0, str(Path(args.code).resolve()))
    import numpy as np
    from tabprotect.audit import audit
    from tabprotect.model import Table
    from tabprotect.model.synthetic import branching_hierarchy
    from tabprotect.secondary import protect
    from tabprotect.secondary.base import METHODS

    if args.table.endswith(".csv"):
        hs, value = peer_table(args.table)
    else:
        value = np.load(args.counts)["value"]
        g, leaves = (int(x) for x in args.table.split("x"))
        hs = [branching_hierarchy((g, leaves), d) for d in "RIS"]
    primary = (value >= 1) & (value <= 2)
    status = np.where(value == 0, "Z", "S").astype("<U1")
    status[primary] = "U"
    t = Table.from_arrays(dict(zip(("region", "industry", "size"), hs)), value,
                          value.copy(), status=status, upl=np.where(primary, 1.0, 0.0),
                          spl=np.where(primary, 2.0, 0.0), kind="frequency")
    row = {"tree": args.name, "table": Path(args.table).stem, "cells": t.n_cells,
           "primaries": int(primary.sum())}
    METHODS["gauss"](t, t.value.copy(), singleton=True)  # compiled kernels loaded
    t0 = time.perf_counter()
    out = METHODS["gauss"](t, t.value.copy(), singleton=True)
    row["method_s"] = round(time.perf_counter() - t0, 2)
    sec = np.asarray(out.status) == "M"
    row["method_cells"] = int(sec.sum())
    row["method_cost"] = float(t.value[sec].sum())
    pattern = t.replace(status=np.asarray(out.status).astype("<U1"))
    for integer in (False, True):
        t0 = time.perf_counter()
        res = audit(pattern, singleton=True, integer=integer, mode="intervals",
                    time_limit=args.audit_limit)
        key = "int" if integer else "lp"
        row[f"audit_{key}_short"] = len(res.shortfalls) if res.complete else "incomplete"
        row[f"audit_{key}_s"] = round(time.perf_counter() - t0, 1)
    t0 = time.perf_counter()
    res = protect(t, method="gauss", cost="value", singleton=True,
                  time_limit=args.protect_limit)
    row["protect_s"] = round(time.perf_counter() - t0, 1)
    row["repaired"] = int(len(res.repaired))
    row["final_cells"] = int((res.status == "M").sum())
    row["final_cost"] = float(res.cost)
    row["passed"] = bool(res.passed)
    row["audit_mode"] = res.audit.mode
    row["stages"] = getattr(res, "stage_seconds", {})
    print(json.dumps(row), flush=True)


def peer_table(path: str):
    """The hierarchies and counts of a peers' count table (``dim1..3, freq, grp1..3``:
    leaves, their count and their group; totals added)."""
    import numpy as np
    import pandas as pd
    from tabprotect.model import Hierarchy, aggregate_leaves

    df = pd.read_csv(path)
    hs = []
    for d in (1, 2, 3):
        groups = sorted(df[f"grp{d}"].unique())
        pairs = [("Total", g) for g in groups]
        pairs += sorted({(g, c) for g, c in zip(df[f"grp{d}"], df[f"dim{d}"])})
        hs.append(Hierarchy.from_pairs(pairs))
    index = [{c: i for i, c in enumerate(h.codes)} for h in hs]
    shape = tuple(len(h) for h in hs)
    value = np.zeros(shape)
    for a, b, c, f in zip(df.dim1, df.dim2, df.dim3, df.freq):
        value[index[0][a], index[1][b], index[2][c]] = f
    return hs, aggregate_leaves(value.ravel(), hs)


def run_child(name: str, code: str, table: str, counts: Path, args) -> dict:
    cmd = [sys.executable, __file__, "--child", "--name", name, "--code", code,
           "--table", table, "--counts", str(counts), "--audit-limit",
           str(args.audit_limit), "--protect-limit", str(args.protect_limit)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout,
                              cwd=code)
    except subprocess.TimeoutExpired:
        return {"tree": name, "table": table, "error": f"timeout {args.timeout:.0f} s"}
    lines = [x for x in proc.stdout.splitlines() if x.startswith("{")]
    if proc.returncode != 0 or not lines:
        return {"tree": name, "table": table, "error": proc.stderr.strip()[-300:]}
    return json.loads(lines[-1])


COLUMNS = ["table", "cells", "tree", "method_s", "method_cells", "method_cost",
           "audit_lp_short", "audit_int_short", "protect_s", "repaired", "final_cells",
           "final_cost", "passed"]


def markdown(rows: list[dict], command: str) -> str:
    out = ["# gauss with the single-contributor attack on 3-D count tables", "",
           f"Made by `{command}` (single process per case; the trees run back to back "
           "on the same tables: compare ratios).", "",
           "`audit_lp_short` / `audit_int_short`: primaries the exact interval audit "
           "(single-contributor attack, LP / integer) finds short on the method's own "
           "pattern; `protect()` columns: the whole call (method, audit, repair).", "",
           "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in rows:
        if "error" in r:
            out.append(f"| {r['table']} | | {r['tree']} | {r['error']} |")
            continue
        out.append("| " + " | ".join(str(r.get(c, "")) for c in COLUMNS) + " |")
    out += ["", "Stage seconds of protect():", ""]
    out += [f"- {r['table']} {r['tree']}: {r.get('stages')}" for r in rows if "stages" in r]
    return "\n".join(out) + "\n"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", nargs="+", default=["2x5", "4x5"],
                    help="GROUPSxLEAVES per dimension (3-D), or a peers' count table "
                         "(a .csv with dim1..3, freq, grp1..3)")
    ap.add_argument("--code", nargs="+", default=[f"current={ROOT}"],
                    help="NAME=PATH of each code tree, run in this order")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per case")
    ap.add_argument("--audit-limit", type=float, default=600.0)
    ap.add_argument("--protect-limit", type=float, default=900.0)
    ap.add_argument("--out", help="write the Markdown table here")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--name", help=argparse.SUPPRESS)
    ap.add_argument("--table", help=argparse.SUPPRESS)
    ap.add_argument("--counts", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        args.code = args.code[0] if isinstance(args.code, list) else args.code
        child(args)
        return
    sys.path.insert(0, str(ROOT))
    import numpy as np
    from tabprotect.model.synthetic import count_table

    rows = []
    tmp = Path(tempfile.mkdtemp())
    for table in args.tables:
        counts = tmp / f"{Path(table).stem}.npz"
        if not table.endswith(".csv"):
            g, leaves = (int(x) for x in table.split("x"))
            np.savez(counts, value=count_table([(g, leaves)] * 3, seed=args.seed).value)
        for spec in args.code:
            name, code = spec.split("=", 1)
            source = str(Path(table).resolve()) if table.endswith(".csv") else table
            row = run_child(name, str(Path(code).resolve()), source, counts, args)
            print(json.dumps(row), flush=True)
            rows.append(row)
    if args.out:
        command = "python benchmarks/bench_gauss_counts.py " + " ".join(
            a for a in (argv if argv is not None else sys.argv[1:]))
        Path(args.out).write_text(markdown(rows, command))


if __name__ == "__main__":
    main()
