"""Benchmark of controlled rounding and of the rounded-table audit.

Cases (each in its own subprocess, so peak memory is per case):

* ``2d-200``: 200 x 200 inner cells with margins (40 401 cells), base 5
* ``2d-1000``: 1000 x 1000 inner cells with margins (1 002 001 cells), base 5
* ``3d-100k``: 3-D table, every dimension a two-level hierarchy (total, 5 groups, 40
  leaves: 46 codes), 97 336 cells, base 5

Counts are negative binomial (many small counts and zeros, like real frequency tables).
For each case: tabprotect's controlled rounding (time, peak RSS, deviation, additivity
and zero-restriction re-checked from the inner cells), the audit of the rounded table, and
same-run baselines: the whole LP relaxation without sifting (``lp-nosift``, the 2-D path
without sifting), the audit with an LP for every bound (``audit-lp``, without move
certificates), audits of deterministic and random rounding (``audit-deterministic``,
``audit-random``: the true table is the feasible start), the plain MILP on the whole
table (no network/LP path, no partition),
CtrlRound (PyPI ``ctrlround``) and pytauargus' RND (PyPI ``pytauargus``, tau-Argus engine
with HiGHS), each with a time limit.

Run::

    python benchmarks/bench_rounding.py                   # every case
    python benchmarks/bench_rounding.py --cases 2d-200 --timeout 300
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tabprotect.model import Hierarchy, Table  # noqa: E402
from tabprotect.model.table import aggregate_leaves  # noqa: E402

BASE = 5
MIP_GAP = 1e-2  # relative gap for every MILP (tabprotect's and the plain-MILP baseline)


def make_table(case: str) -> Table:
    rng = np.random.default_rng(2024)
    if case.startswith("2d-"):
        n = int(case[3:])
        hs = [Hierarchy.flat([f"r{i}" for i in range(n)], total="T"),
              Hierarchy.flat([f"c{i}" for i in range(n)], total="T")]
        names = ["row", "col"]
    elif case == "3d-100k":
        hs = []
        for d in "xyz":
            pairs = [("T", f"{d}G{g}") for g in range(5)]
            pairs += [(f"{d}G{i // 8}", f"{d}{i}") for i in range(40)]
            hs.append(Hierarchy.from_pairs(pairs))
        names = ["x", "y", "z"]
    else:
        raise SystemExit(f"unknown case {case}")
    leaf = np.ones(1, dtype=bool)
    for h in hs:
        leaf = np.logical_and.outer(leaf, h.is_leaf).ravel()
    v = np.zeros(len(leaf))
    v[leaf] = rng.negative_binomial(1, 0.15, size=int(leaf.sum()))
    return Table.from_arrays(dict(zip(names, hs)), aggregate_leaves(v, hs), kind="frequency")


def leaf_mask(table: Table) -> np.ndarray:
    mask = np.ones(1, dtype=bool)
    for d in table.dimensions:
        mask = np.logical_and.outer(mask, d.hierarchy.is_leaf).ravel()
    return mask


def check(table: Table, rounded: np.ndarray) -> dict:
    """Independent checks: totals recomputed from the rounded inner cells; adjacency."""
    leaf = leaf_mask(table)
    full = aggregate_leaves(np.where(leaf, rounded, 0.0), [d.hierarchy for d in table.dimensions])
    x = table.value
    low = np.floor(x / BASE) * BASE
    adj = np.where(x % BASE == 0, rounded == x, (rounded == low) | (rounded == low + BASE))
    return {"additive": bool(np.array_equal(full, rounded)),
            "zero_restricted": bool(adj.all()),
            "total_abs_dev": float(np.abs(rounded - x).sum()),
            "inner_abs_dev": float(np.abs(rounded - x)[leaf].sum()),
            "margin_abs_dev": float(np.abs(rounded - x)[~leaf].sum()),
            "max_abs_dev": float(np.abs(rounded - x).max())}


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# ---------------------------------------------------------------- workers
def run_tabprotect(case: str, mode: str, timeout: float) -> dict:
    from tabprotect.rounding import round_table
    table = make_table(case)
    t0 = time.perf_counter()
    if mode == "default":
        res = round_table(table, BASE, "controlled", audit=False, k_step=1,
                          time_limit=timeout, mip_gap=MIP_GAP)
    elif mode == "plain-milp":
        # same formulation, forced through branch and bound on the whole table
        from tabprotect.rounding import ControlledRounder
        r = ControlledRounder(table, BASE, np.ones(table.n_cells), time_limit=timeout,
                              mip_gap=MIP_GAP, threads=1)
        everything = np.ones(table.n_cells, dtype=bool)
        vals, _, path, optimal = r._solve_part(everything, np.zeros_like(everything),
                                               np.zeros(0), False, 0, 0.0, [], "the table")
        secs = time.perf_counter() - t0
        return {"seconds": secs, "path": path, "proven_optimal": optimal,
                **check(table, vals), "peak_mb": peak_mb()}
    elif mode == "lp-nosift":
        # baseline: the whole LP relaxation, forced simplex, no sifting
        from tabprotect.rounding import RoundingSettings
        res = round_table(table, BASE, "controlled", audit=False, k_step=1,
                          time_limit=timeout, mip_gap=MIP_GAP,
                          settings=RoundingSettings(sifting_min_columns=10**12))
    elif mode == "whole":
        res = round_table(table, BASE, "controlled", audit=False, k_step=1, partition=False,
                          time_limit=timeout, mip_gap=MIP_GAP)
    secs = time.perf_counter() - t0
    return {"seconds": secs, "path": res.solver_path, "proven_optimal": res.proven_optimal,
            "notes": res.notes, **check(table, res.rounded), "peak_mb": peak_mb(),
            "cells": table.n_cells}


def run_audit(case: str, timeout: float, method: str = "controlled",
              certificates: bool = True, round_limit: float | None = None) -> dict:
    from tabprotect.audit_rounded import audit_rounded
    from tabprotect.rounding import round_table
    table = make_table(case)
    # the rounding being audited gets its own limit (not counted in the audit's seconds)
    round_limit = timeout if round_limit is None else round_limit
    res = round_table(table, BASE, method, audit=False, k_step=1, time_limit=round_limit,
                      mip_gap=MIP_GAP, seed=2024)
    t0 = time.perf_counter()
    a = audit_rounded(res, time_limit=timeout, certificates=certificates)
    secs = time.perf_counter() - t0
    s = a.summary()
    return {"seconds": secs, "lp": s["lp_solved"], "local_lp": s["local_lp_solved"],
            "mip": s["mip_solved"], "certified": s["bounds_certified_without_lp"],
            "bounds": 2 * int((a.range_lower < a.range_upper).sum()),
            "narrower": s["narrower_than_method"], "exact": s["exactly_disclosed"],
            "pinned_small": s["pinned_small_values"], "true_inside": bool(a.true_inside.all()),
            "complete": not any("time limit" in n for n in a.notes), "peak_mb": peak_mb(),
            "rounding_path": res.solver_path}


def run_ctrlround(case: str, timeout: float) -> dict:
    import pandas as pd
    from CtrlRound import ctrl_round
    table = make_table(case)
    leaf = leaf_mask(table)
    labels = table.labels[leaf].astype(str).reset_index(drop=True)
    df = labels.copy()
    df["value"] = table.value[leaf]
    by = list(labels.columns)
    t0 = time.perf_counter()
    # all margins controlled (the default; an explicit margins=[] crashes in 0.6.0)
    out = ctrl_round(df, by=by, var="value", rounding_base=BASE)
    secs = time.perf_counter() - t0
    rt = out["rounded_table"]
    # map back to cells; CtrlRound publishes totals as sums of its rounded inner cells
    idx = [table.cell(*row) for row in rt[by].astype(str).itertuples(index=False)]
    rounded = np.zeros(table.n_cells)
    rounded[idx] = rt["value"].to_numpy(dtype=float)
    full = aggregate_leaves(np.where(leaf, rounded, 0.0), [d.hierarchy for d in table.dimensions])
    return {"seconds": secs, **check(table, full), "peak_mb": peak_mb()}


def run_tauargus(case: str, timeout: float) -> dict:
    from pytauargus import protect
    table = make_table(case)
    leaf = leaf_mask(table)
    labels = table.labels[leaf].astype(str).reset_index(drop=True)
    # one record per inner cell carrying its count as the response
    micro = {c: labels[c].tolist() for c in labels.columns}
    micro["count"] = table.value[leaf].tolist()
    t0 = time.perf_counter()
    res = protect(micro, list(labels.columns), response="count", safety_rules=None,
                  suppress=f"RND(1,{BASE},0,{int(timeout)},0,2)")
    secs = time.perf_counter() - t0
    tab = res.tables[0]
    rows = tab.rows() if callable(getattr(tab, "rows", None)) else tab.rows
    rounded = np.full(table.n_cells, np.nan)
    names = list(labels.columns)
    for r in rows:
        codes = [str(r[c]).strip() for c in names]  # the engine pads codes
        codes = [table.dimensions[k].hierarchy.root if c in ("Total", "") else c
                 for k, c in enumerate(codes)]
        rounded[table.cell(*codes)] = float(r["count"])
    return {"seconds": secs, **check(table, rounded), "peak_mb": peak_mb()}


WORKERS = {"tabprotect": lambda c, t: run_tabprotect(c, "default", t),
           "lp-nosift": lambda c, t: run_tabprotect(c, "lp-nosift", t),
           "whole": lambda c, t: run_tabprotect(c, "whole", t),
           "plain-milp": lambda c, t: run_tabprotect(c, "plain-milp", t),
           "audit": run_audit,
           # the audit before certificates: LPs for every bound
           "audit-lp": lambda c, t: run_audit(c, t, certificates=False),
           # audits of non-additive roundings: the true table is the feasible start
           "audit-deterministic": lambda c, t: run_audit(c, t, method="deterministic"),
           "audit-random": lambda c, t: run_audit(c, t, method="random"),
           "ctrlround": run_ctrlround, "tauargus": run_tauargus}


def child(case: str, what: str, timeout: float) -> None:
    try:
        out = WORKERS[what](case, timeout)
        out["ok"] = True
    except Exception as exc:  # report, never fake
        out = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:400]}
    print("RESULT " + json.dumps(out))


def spawn(case: str, what: str, timeout: float, budget: float | None = None) -> dict:
    cmd = [sys.executable, __file__, "--child", case, what, "--timeout", str(timeout),
           "--base", str(BASE)]
    t0 = time.perf_counter()
    try:
        budget = timeout if budget is None else budget
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=budget + 60,
                           env={**os.environ, "OMP_NUM_THREADS": "1"})
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"no result within {budget + 60:.0f} s (killed)",
                "seconds": time.perf_counter() - t0}
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    return {"ok": False, "error": (p.stderr.strip().splitlines() or ["no output"])[-1][:400]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", nargs="*", default=["2d-200", "2d-1000", "3d-100k"])
    ap.add_argument("--what", nargs="*",
                    default=["tabprotect", "lp-nosift", "plain-milp", "whole", "audit",
                             "audit-lp", "ctrlround", "tauargus"])
    ap.add_argument("--timeout", type=float, default=600,
                    help="seconds for tabprotect's rounding (tabprotect, whole)")
    ap.add_argument("--baseline-timeout", type=float, default=150,
                    help="seconds for the audit and the baselines")
    ap.add_argument("--child", nargs=2, metavar=("CASE", "WHAT"))
    ap.add_argument("--base", type=int, default=5,
                    help="rounding base (tau-Argus RND needs >= 10^(digits of the largest "
                         "cell - 1))")
    args = ap.parse_args()
    global BASE
    BASE = args.base
    if args.child:
        child(args.child[0], args.child[1], args.timeout)
        return
    results = {}
    for case in args.cases:
        for what in args.what:
            if what == "whole" and not case.startswith("3d"):
                continue  # 2-D tables are never partitioned: same as tabprotect
            limit = args.timeout if what in ("tabprotect", "whole", "lp-nosift") \
                else args.baseline_timeout
            # the audit child rounds first, then audits: two limits
            r = spawn(case, what, limit,
                      budget=2 * limit if what.startswith("audit") else limit)
            results[f"{case}/{what}"] = r
            print(f"{case:8s} {what:11s} " + json.dumps(r), flush=True)
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
