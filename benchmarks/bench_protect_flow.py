"""protect() end to end on one table, with a choice of code tree (before/after runs).

One (table, method) per process, as in ``bench_scale.py``'s child mode; prints one line
with the total, method and audit+repair seconds, the verdict, repaired cells, secondaries
and cost, then an independent verdict-mode audit of the final pattern.

    python benchmarks/bench_protect_flow.py --table 100k-3d --method gauss
    python benchmarks/bench_protect_flow.py --table castro:TABLE3 --method hypercube \\
        --time-limit 120
    # the same with another checkout (e.g. ``git archive <rev> | tar -x -C BASE``):
    python benchmarks/bench_protect_flow.py --code BASE --table 100k-3d

``--pre-repair off`` switches protect()'s leaf-cube pass before the first audit off (code
trees that have it); ``--large-from N`` moves protect()'s large-table path threshold.
"""
from __future__ import annotations

import argparse
import importlib
import resource
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", default="100k-3d",
                    help="gen_tables preset, or castro:NAME for a Castro table")
    ap.add_argument("--method", default="gauss")
    ap.add_argument("--time-limit", type=float, default=540.0)
    ap.add_argument("--code", default=str(HERE.parent),
                    help="root of the tabprotect code tree to run (default: this one)")
    ap.add_argument("--pre-repair", choices=["auto", "off"], default=None)
    ap.add_argument("--large-from", type=int, default=None)
    ap.add_argument("--audit-limit", type=float, default=600.0,
                    help="seconds for the independent verdict audit (0: skip it)")
    args = ap.parse_args(argv)
    sys.path.insert(0, args.code)
    sys.path.insert(1, str(HERE))
    pm = importlib.import_module("tabprotect.secondary.protect")
    from tabprotect.audit import audit
    changes = {}
    if args.pre_repair is not None:
        changes["pre_repair"] = args.pre_repair
    if args.large_from is not None:
        changes["large_table"] = args.large_from
    extra = {}
    if changes:
        from tabprotect.secondary import ProtectSettings
        extra["settings"] = ProtectSettings(**changes)
    if args.table.startswith("castro:"):
        from castro import load_castro
        table = load_castro(args.table.split(":", 1)[1])
    else:
        import gen_tables
        table = gen_tables.preset(args.table, seed=2024)
    t0 = time.perf_counter()
    res = pm.protect(table, method=args.method, cost="value", singleton=False,
                     time_limit=args.time_limit, **extra)
    total = time.perf_counter() - t0
    print(f"{args.table} {args.method} code={args.code} pre_repair={args.pre_repair} "
          f"total {total:.1f} s, method {res.method_seconds:.1f} s, audit+repair "
          f"{res.audit_seconds:.1f} s, audit mode {res.audit.mode}, "
          f"{'PASSED' if res.passed else 'FAILED'}, repaired {len(res.repaired)}, "
          f"secondaries {res.n_secondary}, cost {res.cost:,.0f}", flush=True)
    print("  notes:", res.notes, flush=True)
    if args.audit_limit > 0:
        t1 = time.perf_counter()
        a = audit(res.confidential_table, mode="verdict", time_limit=args.audit_limit)
        print(f"  independent verdict audit: {'passed' if a.passed else 'FAILED'} "
              f"({time.perf_counter() - t1:.1f} s)", flush=True)
    print(f"  peak MB {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}",
          flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
