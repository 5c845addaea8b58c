"""The audit on large generated tables: interval mode against verdict mode.

For each generated table (``gen_tables`` presets) and secondary method, the method's raw
pattern (no repair, so real shortfalls remain) is audited three ways in the same process:

* ``intervals`` -- the exact interval of every suppressed cell (the baseline; given a time
  limit, after which it is reported unfinished);
* ``verdict`` -- ``audit(..., mode="verdict")`` in one process;
* ``verdict, 2 workers`` -- the same with ``workers=2``.

The verdicts (protected flag of every cell) must agree wherever the baseline finished; the
script checks that and prints a markdown table.

Usage::

    python benchmarks/bench_audit_scale.py --tables 100k-3d 1m-3d --methods gauss hypercube
"""
from __future__ import annotations

import argparse
import platform
import resource
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def run(table_name: str, method: str, interval_limit: float) -> list[dict]:
    import gen_tables
    from tabprotect.audit import audit
    from tabprotect.secondary import METHODS
    from tabprotect.secondary.base import cost_vector

    table = gen_tables.preset(table_name, seed=2024)
    t0 = time.perf_counter()
    out = METHODS[method](table, cost_vector(table, "value"), time_limit=1800, progress=None,
                          singleton=False)
    method_s = time.perf_counter() - t0
    pattern = table.replace(status=out.status)
    rows = []
    reference = None
    for label, kw in [("intervals", dict(mode="intervals", time_limit=interval_limit)),
                      ("verdict", dict(mode="verdict")),
                      ("verdict, 2 workers", dict(mode="verdict", workers=2))]:
        t0 = time.perf_counter()
        res = audit(pattern, **kw)
        seconds = time.perf_counter() - t0
        s = res.summary()
        row = {"table": table_name, "cells": table.n_cells, "method": method,
               "method_s": method_s, "suppressed": s["unpublished"],
               "primaries": s["primary"], "audit": label, "seconds": seconds,
               "lps": s["lp_solved"], "certified": s["certified_by_witness"],
               "complete": s["complete"],
               "short": s["unprotected_primary"] if s["complete"] else None}
        if label == "intervals":
            reference = res if res.complete else None
        elif reference is not None:
            row["agrees"] = bool(np.array_equal(reference.protected, res.protected))
        rows.append(row)
        print(row, file=sys.stderr, flush=True)
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tables", nargs="+", default=["10k-3d", "100k-3d"])
    ap.add_argument("--methods", nargs="+", default=["gauss", "hypercube"])
    ap.add_argument("--interval-limit", type=float, default=300.0,
                    help="time limit of the interval-mode baseline (s)")
    args = ap.parse_args(argv)
    rows = [r for t in args.tables for m in args.methods
            for r in run(t, m, args.interval_limit)]
    print(f"machine: {platform.machine()}, {platform.processor() or 'cpu'}; python "
          f"{platform.python_version()}; peak RSS "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MiB")
    print("| table | cells | method (s) | suppressed (primaries) | audit | seconds | LPs | "
          "primaries certified by witnesses | verdict | same verdict as intervals | "
          "speed-up vs intervals |")
    print("|---|---:|---|---:|---|---:|---:|---:|---|---|---:|")
    base = {}
    for r in rows:
        key = (r["table"], r["method"])
        if r["audit"] == "intervals":
            base[key] = r
        b = base[key]
        speed = b["seconds"] / r["seconds"]
        speed_s = (f"{speed:.1f}x" if b["complete"] else f">= {speed:.1f}x (baseline cut at "
                   f"its limit)")
        verdict = (f"{r['short']:,} primaries short" if r["complete"] else "unfinished")
        print(f"| {r['table']} | {r['cells']:,} | {r['method']} ({r['method_s']:.1f}) | "
              f"{r['suppressed']:,} ({r['primaries']:,}) | {r['audit']} | {r['seconds']:.1f} | "
              f"{r['lps']:,} | {r['certified']:,} | {verdict} | {r.get('agrees', '-')} | "
              f"{speed_s} |")


if __name__ == "__main__":
    main()
