"""protect()'s audit-and-repair with and without the MILP repair, same tree, same run.

Per case: the method's pattern (no time limit, so the same in every variant), then
protect()'s audit-and-repair loop (``AuditRepair``, as protect() runs it) on that pattern
within ``--time-limit`` seconds, once per variant, each in its own process, back to
back (``--variants``): ``lp`` with ``MilpRepairSettings(enabled=False)`` (the LP repair
alone: whole-table attacker LPs on small tables; deviation LPs, then leaf cubes for the
primaries they do not reach in time, on large ones), ``milp`` with ``enabled=True`` (the
MILP repair first, the LP repair for what it leaves), ``cubes`` as ``lp`` with
``repair_lp_relative_seconds=0`` (a large table's rounds start with leaf cubes), and
``default`` with the defaults (the MILP repair on frequency tables).  Columns: the
method's cells and cost (the pattern before repair, the same in every variant), the
cells and cost the repair added, the final verdict and short primaries, and the loop's
seconds (audits and repair).  ``--code NAME=PATH`` runs another checkout (e.g. a
baseline worktree) as a further variant with its own defaults.

Cases: ``counts:GxL[:s]`` is ``synthetic.count_table([(G, L)] * 3, seed=1)`` with gauss
(``:s`` = single-contributor attack on); ``castro:NAME`` a Castro table
(``../shared/benchmarks/castro``) with the method given by ``--method``.

Usage::

    python benchmarks/bench_repair.py counts:3x4:s counts:4x5 castro:HIER13 \\
        --variants lp milp default --time-limit 60 --code base=../wt-base
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
    """One variant, one case: the method's pattern (no time limit: the same in every
    variant), then protect()'s audit-and-repair loop on it within ``--time-limit``."""
    sys.path.insert(0, str(Path(args.code).resolve()))
    sys.path.insert(1, str(ROOT))
    import numpy as np
    from tabprotect.budget import Budget
    from tabprotect.secondary import ProtectSettings
    import importlib
    protect_module = importlib.import_module("tabprotect.secondary.protect")
    from tabprotect.secondary.audit_repair import AuditRepair, StageClock
    from tabprotect.secondary.base import METHODS, cost_vector
    from tabprotect.secondary.candidates import candidate_cells
    from tabprotect.secondary.attack_requirements import Requirements
    settings = ProtectSettings()
    if args.variant in ("lp", "milp", "cubes"):
        from tabprotect.secondary.milp_repair import MilpRepairSettings
        settings = ProtectSettings(milp_repair=MilpRepairSettings(
            enabled=args.variant == "milp"))
    if args.variant == "cubes":
        settings = ProtectSettings(milp_repair=settings.milp_repair,
                                   repair_lp_relative_seconds=0.0)
    if args.large_table is not None:
        import dataclasses
        settings = dataclasses.replace(settings, large_table=args.large_table)
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
    cost = cost_vector(t, "value")
    t0 = time.perf_counter()
    status = np.asarray(METHODS[method](t, cost.copy(), singleton=singleton).status)
    method_s = time.perf_counter() - t0
    large = t.n_cells >= settings.large_table
    mode = "verdict" if large else protect_module._auto_mode(
        t, status, settings, [], singleton, 0)
    stages: dict = {}
    notes: list = []
    t0 = time.perf_counter()
    loop = AuditRepair(t, cost, status, req=Requirements.from_table(t, singleton=singleton),
                       cand=candidate_cells(t), settings=settings,
                       budget=Budget(args.time_limit), singleton=singleton, mode=mode,
                       large=large, repair=True, workers=1, progress=None, notes=notes,
                       stage=StageClock(stages))
    loop.pre_audit(method, t)
    res = loop.run()
    seconds = time.perf_counter() - t0
    rep = np.concatenate(loop.repaired) if loop.repaired else np.zeros(0, np.int64)
    before = status == "M"
    print(json.dumps({
        "case": args.case, "variant": args.variant, "cells": t.n_cells, "method": method,
        "primaries": int((t.status == "U").sum()), "method_s": round(method_s, 1),
        "method_cells": int(before.sum()), "method_cost": float(cost[before].sum()),
        "added": int(len(rep)), "added_cost": float(cost[rep].sum()),
        "passed": bool(res.passed), "short": int(len(res.shortfalls)),
        "seconds": round(seconds, 1), "audit_mode": mode,
        "stages": {k: round(v, 1) for k, v in stages.items()}, "notes": notes}))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cases", nargs="+")
    ap.add_argument("--method", default="gauss", help="method on the Castro tables")
    ap.add_argument("--time-limit", type=float, default=None,
                    help="seconds for the audit-and-repair loop (default: none)")
    ap.add_argument("--code", action="append", default=[],
                    help="NAME=PATH: another checkout, run with its defaults")
    ap.add_argument("--variants", nargs="*", default=["lp", "milp"],
                    choices=["lp", "milp", "cubes", "default"],
                    help="this checkout's variants (see the module docstring)")
    ap.add_argument("--large-table", type=int, default=None,
                    help="ProtectSettings.large_table (e.g. below the table's cells: the "
                         "large-table path, screening audits and local repair)")
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
        for name, code in [(v, str(ROOT)) for v in args.variants] + variants:
            cmd = [sys.executable, __file__, "--child", "--case", case, "--variant", name,
                   "--code", code, "--method", args.method, "x"]
            if args.time_limit is not None:
                cmd += ["--time-limit", str(args.time_limit)]
            if args.large_table is not None:
                cmd += ["--large-table", str(args.large_table)]
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
            "added cost | final cost | passed | short | loop s |\n|" + "---|" * 11 + "\n")
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
