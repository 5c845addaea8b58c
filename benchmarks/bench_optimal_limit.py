"""Wall time of ``protect(method="optimal")`` against its ``time_limit`` on general tables
(tables given by their relations only), and the cost of the result against the gauss
start's.

    PYTHONPATH=. python benchmarks/bench_optimal_limit.py --case 10k-3d --time-limit 20

Cases: a synthetic preset re-expressed by its relations (``1k-3d``, ``10k-3d``, ...), or
a Castro table (``castro:NINENEW``; needs ../shared/benchmarks/castro).  The gauss start
is forced on (``gauss_start_min_candidates = 0``) so that the start and the search share
the limit.  One line per case: wall seconds of the whole call, of the method stage, the
start's seconds, the verdict of protect()'s audit, the cost and the start's cost.

``--given-start``: the method alone (no audit), given the gauss start computed without a
limit beforehand, under ``--time-limit``: the wall time of the call, the oracle LPs it
ran, the verdict of the independent audit on its pattern and its cost against the start's.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from tabprotect.audit import audit
from tabprotect.model import Table, synthetic
from tabprotect.secondary import cost_vector, protect
from tabprotect.secondary.candidates import candidate_cells
from tabprotect.secondary.optimal import OptimalOptions, optimal
from tabprotect.secondary.optimal.start import gauss_start
from tabprotect.secondary.attack_requirements import Requirements


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
    ap.add_argument("--given-start", action="store_true")
    args = ap.parse_args()
    if args.given_start:
        given_start(args)
        return
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


def given_start(args) -> None:
    print("| case | cells | time_limit | wall s | oracle LPs | audit passed | cost | "
          "start cost | status |")
    print("|---|---:|---:|---:|---:|---|---:|---:|---|")
    for case in args.case:
        t = general(case)
        cost = cost_vector(t, "value")
        req = Requirements.from_table(t, singleton=args.singleton)
        found = gauss_start(t, cost, req, candidate_cells(t), singleton=args.singleton,
                            time_limit=None)
        if found is None or not found.protected:
            print(f"| {case} | {t.n_cells} | no finished start |")
            continue
        start_cost = float(cost[found.pattern & (t.status != "U")].sum())
        t0 = time.perf_counter()
        out = optimal(t, cost, start=found.pattern, time_limit=args.time_limit,
                      singleton=args.singleton, options=OptimalOptions(engine="benders"))
        wall = time.perf_counter() - t0
        ok = audit(t.replace(status=out.status), singleton=args.singleton).passed
        c = float(cost[np.asarray(out.status) == "M"].sum())
        print(f"| {case} | {t.n_cells} | {args.time_limit:g} | {wall:.2f} | "
              f"{out.details.get('lp_solves', 0)} | {ok} | {c:.6g} | {start_cost:.6g} | "
              f"{out.solver_status} |", flush=True)


if __name__ == "__main__":
    main()
