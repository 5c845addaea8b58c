"""protect()'s audit-and-repair with and without the MILP repair, same tree, same run.

Per case: ``protect(table, method, time_limit=T)`` twice, each in its own process, back
to back: ``lp`` with ``ProtectSettings(milp_repair=MilpRepairSettings(enabled=False))``
(the LP repair alone: whole-table attacker LPs on small tables, leaf cubes and local
deviation LPs on large ones) and ``milp`` with the defaults (the MILP repair first, the
LP repair for what it leaves).  Columns: the method's cells and cost (the pattern
before repair, the same in both), the cells and cost the repair added, the final
verdict and short primaries, and seconds.  ``--code`` runs another checkout (e.g. a
baseline worktree) as a third variant ``base`` with its own defaults.

Cases: ``counts:GxL[:s]`` is ``synthetic.count_table([(G, L)] * 3, seed=1)`` with gauss
(``:s`` = single-contributor attack on); ``castro:NAME`` a Castro table
(``../shared/benchmarks/castro``) with the method given by ``--method``.

Usage::

    python benchmarks/bench_repair.py counts:3x4:s counts:4x5 castro:HIER13 \\
        --time-limit 60 --code base=../wt-base --out benchmarks/results/repair.md
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def child(args) -> None:
    sys.path.insert(0, str(Path(args.code).resolve()))
    sys.path.insert(1, str(ROOT))
    import numpy as np
    from tabprotect.secondary import ProtectSettings, protect
    settings = None
    if args.variant == "lp":
        from tabprotect.secondary.milp_repair import MilpRepairSettings
        settings = ProtectSettings(milp_repair=MilpRepairSettings(enabled=False))
    kind, name, *rest = args.case.split(":")
    singleton = "s" in rest
    if kind == "counts":
        from tabprotect.model.synthetic import count_table
        g, leaves = (int(x) for x in name.split("x"))
        t = count_table([(g, leaves)] * 3, seed=1)
        method = "gauss"
    else:
        from benchmarks.castro import load_castro
        t = load_castro(name)
        method = args.method
    t0 = time.perf_counter()
    res = protect(t, method=method, cost="value", singleton=singleton,
                  time_limit=args.time_limit, settings=settings)
    seconds = time.perf_counter() - t0
    rep = np.asarray(res.repaired, dtype=np.int64)
    cost = np.where(np.isfinite(t.value), np.abs(t.value), 0.0)
    final = res.status == "M"
    before = final.copy()
    before[rep] = False
    print(json.dumps({
        "case": args.case, "variant": args.variant, "cells": t.n_cells, "method": method,
        "primaries": int((t.status == "U").sum()),
        "method_cells": int(before.sum()), "method_cost": float(cost[before].sum()),
        "added": int(len(rep)), "added_cost": float(cost[rep].sum()),
        "passed": bool(res.passed), "short": int(len(res.audit.shortfalls)),
        "seconds": round(seconds, 1),
        "stages": {k: round(v, 1) for k, v in res.stage_seconds.items()}}))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cases", nargs="+")
    ap.add_argument("--method", default="gauss", help="method on the Castro tables")
    ap.add_argument("--time-limit", type=float, default=None)
    ap.add_argument("--code", action="append", default=[],
                    help="NAME=PATH: another checkout, run with its defaults")
    ap.add_argument("--timeout", type=float, default=3600.0)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--variant", default="milp", help=argparse.SUPPRESS)
    ap.add_argument("--case", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        args.code = args.code[0]
        return child(args)
    variants = [(c.split("=", 1)[0], c.split("=", 1)[1]) for c in args.code]
    rows = []
    for case in args.cases:
        for name, code in [("lp", str(ROOT)), ("milp", str(ROOT))] + variants:
            cmd = [sys.executable, __file__, "--child", "--case", case, "--variant", name,
                   "--code", code, "--method", args.method, "x"]
            if args.time_limit is not None:
                cmd += ["--time-limit", str(args.time_limit)]
            try:
                out = subprocess.run(cmd, capture_output=True, text=True,
                                     timeout=args.timeout)
                line = [x for x in out.stdout.splitlines() if x.startswith("{")]
                row = json.loads(line[-1]) if line else {
                    "case": case, "variant": name, "error": out.stderr.strip()[-300:]}
            except subprocess.TimeoutExpired:
                row = {"case": case, "variant": name, "error": f"over {args.timeout:.0f} s"}
            print(json.dumps(row), flush=True)
            rows.append(row)
    if args.out:
        args.out.write_text(markdown(rows, args, argv))


def markdown(rows, args, argv) -> str:
    head = ("| case | variant | cells | method cells | method cost | repair added | "
            "added cost | final cost | passed | short | s |\n|" + "---|" * 11 + "\n")
    lines = []
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['case']} | {r['variant']} | error: {r['error']} |")
            continue
        lines.append(
            f"| {r['case']} | {r['variant']} | {r['cells']:,} | {r['method_cells']:,} | "
            f"{r['method_cost']:,.0f} | {r['added']:,} | {r['added_cost']:,.0f} | "
            f"{r['method_cost'] + r['added_cost']:,.0f} | {'yes' if r['passed'] else 'NO'} "
            f"| {r['short']} | {r['seconds']} |")
    cmd = "python benchmarks/bench_repair.py " + " ".join(argv or sys.argv[1:])
    return f"Command: `{cmd}`\n\n" + head + "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
