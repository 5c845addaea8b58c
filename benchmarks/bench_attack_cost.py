"""What the single-contributor attack costs the audit: LPs and CPU seconds of one audit of
a method's pattern with and without the attack, per table.

The tables are ``bench_audit_modes.count_table(side)`` (flat 3-D count tables,
frequency 1-2 primaries); the pattern is the method's with the attack on, so both audits
judge the same cells. CPU seconds (``time.process_time``) rather than wall time: the
machine is shared, and the LP count is the figure that load does not change.
``--code DIR`` imports tabprotect from another checkout, for a same-run comparison.

Usage::

    python benchmarks/bench_attack_cost.py --sides 10 12 --integer on --mode verdict
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

_CODE = sys.argv[sys.argv.index("--code") + 1] if "--code" in sys.argv else None
sys.path.insert(0, _CODE or str(Path(__file__).resolve().parents[1]))  # run from a checkout
sys.path.insert(1, str(Path(__file__).resolve().parent))

from bench_audit_modes import count_table  # noqa: E402
from tabprotect.audit import audit  # noqa: E402
from tabprotect.secondary.base import METHODS, cost_vector  # noqa: E402


def rows(side: int, method: str, integer: bool, mode: str, time_limit: float) -> list[dict]:
    t = count_table(side)
    spec = METHODS[method]
    shared = {"time_limit": time_limit, "singleton": True, "empty": "publish"}
    out = spec(t, cost_vector(t, "value"),
               **{k: v for k, v in shared.items() if k in spec.shared})
    pattern = t.replace(status=np.asarray(out.status).astype("<U1"))
    found = []
    for singleton in (False, True):
        cpu, wall = time.process_time(), time.perf_counter()
        res = audit(pattern, singleton=singleton, integer=integer, mode=mode,
                    time_limit=time_limit)
        found.append({"cells": t.n_cells, "secondaries": int((pattern.status == "M").sum()),
                      "attack": singleton, "short": len(res.shortfalls),
                      "complete": res.complete, "lps": res.n_lp,
                      "cpu": time.process_time() - cpu,
                      "wall": time.perf_counter() - wall})
    return found


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sides", type=int, nargs="+", default=[10, 12])
    ap.add_argument("--method", default="gauss")
    ap.add_argument("--integer", choices=["on", "off"], default="on")
    ap.add_argument("--mode", choices=["verdict", "screen", "intervals"], default="verdict")
    ap.add_argument("--time-limit", type=float, default=600.0)
    ap.add_argument("--code", default=None,
                    help="import tabprotect from this checkout (a before/after run)")
    args = ap.parse_args(argv)
    print("| cells | secondaries | attack | short | complete | LPs | CPU s | wall s |")
    print("|---:|---:|---|---:|---|---:|---:|---:|")
    for side in args.sides:
        for r in rows(side, args.method, args.integer == "on", args.mode, args.time_limit):
            print(f"| {r['cells']:,} | {r['secondaries']} | {'on' if r['attack'] else 'off'} "
                  f"| {r['short']} | {r['complete']} | {r['lps']:,} | {r['cpu']:.1f} | "
                  f"{r['wall']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
