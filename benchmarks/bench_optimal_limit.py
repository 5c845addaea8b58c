"""Wall time of ``protect(method="optimal")`` against its ``time_limit`` on general tables
(tables given by their relations only), and the cost of the result against the gauss
start's.

    PYTHONPATH=. python benchmarks/bench_optimal_limit.py --case 10k-3d --time-limit 20

Cases: a synthetic preset re-expressed by its relations (``1k-3d``, ``10k-3d``, ...), or
a Castro table (``castro:NINENEW``; needs ../shared/benchmarks/castro).  The gauss start
is forced on (``gauss_start_min_candidates = 0``) so that the start and the search share
the limit.  One line per case: wall seconds of the whole call, of the method stage, the
start's seconds, the verdict of protect()'s audit, the cost and the start's cost.
"""
from __future__ import annotations

import argparse
import time

from tabprotect.model import Table, synthetic
from tabprotect.secondary import protect
from tabprotect.secondary.optimal import OptimalOptions


def general(case: str) -> Table:
    if case.startswith("castro:"):
        from benchmarks.castro import load_castro
        return load_castro(case.split(":", 1)[1])
    t = synthetic.preset(case, seed=1)
    return Table.from_relations(t.value, t.relations, freq=t.freq, status=t.status,
                                upl=t.upl, lpl=t.lpl, spl=t.spl)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", action="append", required=True)
    ap.add_argument("--time-limit", type=float, default=20.0)
    ap.add_argument("--singleton", action="store_true",
                    help="protect against single-contributor attackers as well")
    args = ap.parse_args()
    opts = OptimalOptions(gauss_start_min_candidates=0)
    print("| case | cells | time_limit | wall s | method s | start s | passed | cost | "
          "start cost | status |")
    print("|---|---:|---:|---:|---:|---:|---|---:|---:|---|")
    for case in args.case:
        t = general(case)
        t0 = time.perf_counter()
        r = protect(t, method="optimal", time_limit=args.time_limit, options=opts,
                    singleton=args.singleton)
        wall = time.perf_counter() - t0
        d = r.solver
        start_cost = d.get("start_cost")
        print(f"| {case} | {t.n_cells} | {args.time_limit:g} | {wall:.1f} | "
              f"{r.method_seconds:.1f} | {d.get('gauss_start_seconds', float('nan')):.1f} | "
              f"{r.audit.passed} | {r.cost:.6g} | "
              f"{'-' if start_cost is None else f'{start_cost:.6g}'} | {r.solver_status} |",
              flush=True)


if __name__ == "__main__":
    main()
