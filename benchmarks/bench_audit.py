"""Benchmark of the LP audit (tabprotect.audit) against the naive approach.

Cases:

* a generated 3-D magnitude table (two hierarchical dimensions, >= 50,000 cells) with a
  suppression pattern of >= 2,000 cells (primaries of the generator + random secondaries);
* the same table with a real secondary-suppression pattern (``-gauss``): 1,000 of its
  primaries protected by ``method="gauss"`` (no repair), which leaves no cell exactly
  disclosed, so nearly every bound needs an LP;
* every Castro table (../shared/benchmarks/castro) with a generated pattern: its sensitive
  cells plus 10 % of its other non-empty cells, drawn with a fixed seed, then closed.

Baseline ("naive"): one fresh LP per bound on the full table (every cell a variable,
published cells fixed by their bounds), solved from scratch with HiGHS through
``solvers.solve``.  On the large cases that would take hours, so the naive time is measured
on a random sample of bounds and extrapolated linearly (the column says how many were
timed); both approaches are timed in the same run, on the same machine.  Both also have to
agree on the sampled bounds (checked).

Each case runs in a fresh child process so that its peak resident memory (ru_maxrss) is its
own.

Usage::

    python benchmarks/bench_audit.py                 # all cases, markdown table on stdout
    python benchmarks/bench_audit.py --quick         # smaller generated table, 3 Castro tables
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import platform
import resource
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def close_pattern(table, suppressed: np.ndarray, rng) -> np.ndarray:
    """Add random suppressions until no relation has exactly one suppressed cell.

    A random pattern leaves many cells alone in a relation; those are pinned down without
    any LP.  Real protection patterns never do that, so the benchmark closes the pattern
    the way a secondary-suppression method would (a second cell in every such relation) to
    make the audit solve its LPs.
    """
    A = table.relations.tocsr()
    out = suppressed.copy()
    allowed = (table.lb < table.ub) & (table.value != 0)
    for _ in range(100):
        counts = np.diff(A[:, np.flatnonzero(out)].tocsr().indptr)
        lonely = np.flatnonzero(counts == 1)
        if len(lonely) == 0:
            break
        for r in lonely:
            cells = A.indices[A.indptr[r]:A.indptr[r + 1]]
            options = cells[~out[cells] & allowed[cells]]
            if len(options):
                out[rng.choice(options)] = True
    return out


def build_case(name: str, seed: int = 0):
    """(table with status U/M set, description)."""
    rng = np.random.default_rng(seed)
    if name.startswith("generated"):
        from benchmarks.gen_tables import generate as generate_table
        # 3-D: region (4 levels) x industry (3 levels) x size (flat): 57 x 106 x 9 = 54,378
        table = generate_table(((3, 4, 4), (5, 4, 4), (8,)), seed=seed)
        status = table.status.copy()
        candidates = np.flatnonzero((status == "S") & (table.value > 0))
        extra = max(0, 2200 - int((status == "U").sum()))
        status[rng.choice(candidates, size=min(extra, len(candidates)), replace=False)] = "M"
        if name.endswith("gauss"):
            # 1,000 of the generator's primaries protected by the gauss method (no repair):
            # a real secondary-suppression pattern, with no exact disclosure, in which
            # nearly every bound needs an LP
            from tabprotect.secondary import METHODS, cost_vector
            primaries = np.flatnonzero(status == "U")
            keep = rng.choice(primaries, size=min(1000, len(primaries)), replace=False)
            status = np.where(np.isin(status, ("U", "M")), "S", status)
            status[keep] = "U"
            table = table.replace(status=status)
            status = METHODS["gauss"](table, cost_vector(table, "value"), time_limit=None,
                                      progress=None).status
        return table.replace(status=status)
    from benchmarks.castro import load_castro
    table = load_castro(name)
    status = table.status.copy()
    candidates = np.flatnonzero((status == "S") & (table.value != 0) & (table.lb < table.ub))
    k = int(round(0.10 * len(candidates)))
    status[rng.choice(candidates, size=k, replace=False)] = "M"
    closed = close_pattern(table, np.isin(status, ("U", "M")), rng)
    status[closed & (status == "S")] = "M"
    return table.replace(status=status)


def naive_bound(table, unpublished: np.ndarray, cell: int, sense: str) -> float:
    """One bound by a fresh LP over every cell of the table (the naive audit)."""
    from solvers import LinearProgram, solve
    lb = np.where(unpublished, table.lb, table.value)
    ub = np.where(unpublished, table.ub, table.value)
    c = np.zeros(table.n_cells)
    c[cell] = 1.0
    # the same minimal relaxation the audit uses for values that add up only to rounding
    # error (Castro's reconstructed values)
    tol = 1.5 * np.abs(table.relations @ table.value)
    res = solve(LinearProgram(c=c, A=table.relations, row_lower=-tol, row_upper=tol,
                              col_lower=lb, col_upper=ub, sense=sense))
    if res.x is None:
        return np.nan  # the fresh LP failed (HiGHS "error"): counted, not compared
    if res.status == "unbounded":
        return -np.inf if sense == "min" else np.inf
    return float(res.x[cell])


def run_case(name: str, naive_samples: int, seed: int, queue) -> None:
    from tabprotect.audit import audit
    table = build_case(name, seed)
    unpublished = table.suppressed
    t0 = time.perf_counter()
    res = audit(table, integer=False)
    t_audit = time.perf_counter() - t0
    rss_audit = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rng = np.random.default_rng(seed + 1)
    cells = np.flatnonzero(unpublished)
    n_bounds = 2 * len(cells)
    sample = min(naive_samples, n_bounds)
    picks = rng.choice(n_bounds, size=sample, replace=False)
    t0 = time.perf_counter()
    mismatches = 0
    naive_failures = 0
    for p in picks:
        cell = int(cells[p // 2])
        sense = "min" if p % 2 == 0 else "max"
        val = naive_bound(table, unpublished, cell, sense)
        ref = res.lower[cell] if sense == "min" else res.upper[cell]
        if np.isnan(val):
            naive_failures += 1
        elif not (np.isinf(val) and np.isinf(ref)) and \
                abs(val - ref) > 1e-6 * max(1.0, abs(ref)):
            mismatches += 1
    t_naive_sample = time.perf_counter() - t0
    t_naive = t_naive_sample * n_bounds / sample
    queue.put(dict(case=name, cells=table.n_cells, relations=table.n_relations,
                   suppressed=int(unpublished.sum()), primaries=int((table.status == "U").sum()),
                   components=res.n_components, lp_solved=res.n_lp, lp_skipped=res.n_lp_skipped,
                   audit_s=t_audit, rss_mib=rss_audit, naive_sampled=sample,
                   naive_s=t_naive, naive_exact=(sample == n_bounds),
                   speedup=t_naive / t_audit if t_audit > 0 else np.inf,
                   mismatches=mismatches, naive_failures=naive_failures,
                   passed=res.passed))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--naive-samples", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cases", nargs="*", help="run only these cases")
    args = ap.parse_args()
    cases = ["generated-3d", "generated-3d-gauss"] + (["TARGUS", "TABLE7", "HIE1372D"] if args.quick else
                                ["TARGUS", "TABLE7", "HIE1372D", "TABLE8", "HIER13",
                                 "HIER133D", "TABLE3", "NINENEW", "OSORIO", "CBS"])
    if args.cases:
        cases = args.cases
    ctx = mp.get_context("spawn")
    rows = []
    for name in cases:
        q = ctx.Queue()
        p = ctx.Process(target=run_case, args=(name, args.naive_samples, args.seed, q))
        p.start()
        row = q.get()
        p.join()
        rows.append(row)
        print(f"{name}: audit {row['audit_s']:.2f} s, naive {row['naive_s']:.1f} s "
              f"(x{row['speedup']:.0f})", file=sys.stderr)
    print(f"Machine: {platform.machine()}, {mp.cpu_count()} cores, Python "
          f"{platform.python_version()}; date {time.strftime('%Y-%m-%d')}\n")
    print("| table | cells | relations | suppressed (primary) | components | LPs solved / "
          "skipped | audit s | peak RSS MiB | naive s (bounds timed) | speed-up | "
          "mismatches | audit verdict |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        naive = (f"{r['naive_s']:.1f} ({'all' if r['naive_exact'] else r['naive_sampled']})")
        print(f"| {r['case']} | {r['cells']:,} | {r['relations']:,} | {r['suppressed']:,} "
              f"({r['primaries']:,}) | {r['components']:,} | {r['lp_solved']:,} / "
              f"{r['lp_skipped']:,} | {r['audit_s']:.2f} | {r['rss_mib']:.0f} | {naive} | "
              f"{r['speedup']:.0f}x | {r['mismatches']} ({r['naive_failures']} naive LPs "
              f"failed) | "
              f"{'passed' if r['passed'] else 'shortfalls'} |")


if __name__ == "__main__":
    main()
