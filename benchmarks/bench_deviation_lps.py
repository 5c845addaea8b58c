"""The repair's deviation LPs (``greedy_repair``) on primaries the audit left open, in
several checkouts side by side: seconds, LPs, cells and cost added.

The table is ``hier:GxL`` (``synthetic.count_table([(G, L)] * 3, seed=1)``), its pattern
gauss's; a verdict audit stopped at once leaves every primary it looked at open (as a
first audit stopped at its share of a budget does), and ``greedy_repair`` takes the
first ``--primaries`` of them in cell order, as protect()'s large-table round does.
Each checkout runs in its own process, all at once (``--code NAME=PATH``, e.g. a base
worktree), so that the machine's load falls on each alike.

Usage::

    python benchmarks/bench_deviation_lps.py --hier 4x8 --primaries 600 \\
        --code base=../wt-base --code tree=.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path


def child(code: str, hier: str, primaries: int) -> None:
    sys.path.insert(0, str(Path(code).resolve()))
    import numpy as np
    from tabprotect.audit import audit
    from tabprotect.model.synthetic import count_table
    from tabprotect.secondary.base import METHODS, cost_vector
    from tabprotect.secondary.greedy import RepairStats, greedy_repair
    g, leaves = (int(x) for x in hier.split("x"))
    t = count_table([(g, leaves)] * 3, seed=1)
    cost = cost_vector(t, "value")
    pattern = t.replace(status=METHODS["gauss"](t, cost.copy(), singleton=False).status)
    res = audit(pattern, singleton=False, mode="verdict", time_limit=0.0)
    cells = np.sort(np.asarray(res.shortfalls))[:primaries]
    stats = RepairStats()
    t0 = time.perf_counter()
    new = greedy_repair(pattern, cost, cells, audit_result=res, stats=stats)
    seconds = time.perf_counter() - t0
    added = (new == "M") & (pattern.status != "M")
    print(json.dumps({"cells": t.n_cells, "primaries": len(cells),
                      "seconds": round(seconds, 2), "lps": stats.lps,
                      "reach_lps": getattr(stats, "reach_lps", 0),
                      "already_protected": getattr(stats, "already_protected", 0),
                      "added": int(added.sum()), "added_cost": float(cost[added].sum())}))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hier", default="4x8")
    ap.add_argument("--primaries", type=int, default=600)
    ap.add_argument("--code", action="append", default=[], help="NAME=PATH")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args.child, args.hier, args.primaries)
    codes = [c.split("=", 1) for c in args.code] or [["tree", "."]]
    procs = {name: subprocess.Popen(
        [sys.executable, __file__, "--child", path, "--hier", args.hier,
         "--primaries", str(args.primaries)], stdout=subprocess.PIPE, text=True)
        for name, path in codes}
    print("| code | cells | primaries | s | deviation LPs | reach LPs | already protected "
          "| cells added | cost added |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, proc in procs.items():
        out, _ = proc.communicate()
        r = json.loads(out.strip().splitlines()[-1])
        print(f"| {name} | {r['cells']:,} | {r['primaries']} | {r['seconds']} | {r['lps']} "
              f"| {r['reach_lps']} | {r['already_protected']} | {r['added']} "
              f"| {r['added_cost']:,.0f} |")


if __name__ == "__main__":
    main()
