"""Benchmark of optimal secondary suppression (tabprotect.secondary.protect, method optimal).

For every Castro table (../shared/benchmarks/castro) with cost = value and cost = unity
(lower level = upper level): secondaries, cost, time, proven optimal or gap, audit
verdict; then generated 2-D and 3-D hierarchical tables.  In the same run, the same Castro
tables through pytauargus' optimal solver (FullJJ on a tau-Argus JJ file, HiGHS inside),
each in a child process so that a crash of the native engine is reported, not fatal
(``--peer-python``: a process of another Python that has pytauargus).

    python benchmarks/bench_optimal.py --time-limit 600                 # the full run
    python benchmarks/bench_optimal.py --tables TARGUS TABLE7 --time-limit 60
    python benchmarks/bench_optimal.py --generated-only --sizes 1000 5000
    python benchmarks/bench_optimal.py --tables TARGUS TABLE8 --peer-python /opt/peers/bin/python

Results are printed as a markdown table (and written with --out).
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scipy.sparse.linalg import lsqr  # noqa: E402

from benchmarks.castro import CASTRO_TABLES, load_castro  # noqa: E402
from tabprotect.audit import audit  # noqa: E402
from tabprotect.model import Hierarchy, Table  # noqa: E402
from tabprotect.model.table import aggregate_leaves  # noqa: E402
from tabprotect.secondary import cost_vector, protect  # noqa: E402


# ---------------------------------------------------------------- generated tables
def generated_table(n_target: int, dims: int, seed: int = 0,
                    primary_share: float = 0.05) -> Table:
    """A hierarchical product table of about ``n_target`` cells: each dimension has a
    2-level hierarchy (total -> groups -> leaves); skewed leaf values; ``primary_share``
    of the inner cells primary (a (1,70)-dominance-like level of 15% of the value)."""
    rng = np.random.default_rng(seed)
    per_dim = max(4, int(round(n_target ** (1 / dims))))
    hs = []
    for d in range(dims):
        groups = max(2, int(np.sqrt(per_dim)))
        leaves_per = max(2, (per_dim - 1 - groups) // groups)
        pairs = []
        for g in range(groups):
            pairs.append(("T", f"d{d}g{g}"))
            for k in range(leaves_per):
                pairs.append((f"d{d}g{g}", f"d{d}g{g}l{k}"))
        hs.append(Hierarchy.from_pairs(pairs))
    shape = tuple(len(h) for h in hs)
    leaf = np.round(rng.lognormal(4, 1.2, size=shape)).ravel() + 1
    value = aggregate_leaves(leaf, hs)
    freq = aggregate_leaves(rng.integers(1, 12, size=shape).ravel().astype(float), hs)
    t = Table.from_arrays({f"v{d}": h for d, h in enumerate(hs)}, value, freq=freq)
    inner = np.flatnonzero(t.is_inner)
    prim = rng.choice(inner, size=max(1, int(len(inner) * primary_share)), replace=False)
    st = t.status.copy()
    st[prim] = "U"
    level = np.where(st == "U", np.ceil(0.15 * value), 0.0)
    # freq >= 2 everywhere keeps the benchmark about the solver, not singleton rules
    return t.replace(status=st, upl=level, lpl=level, freq=np.maximum(t.freq, 2.0))


# ---------------------------------------------------------------- tabprotect
def run_tabprotect(table: Table, cost: str, time_limit: float, search: str = "bc",
                   audit_mode: str = "intervals", support_cuts: bool = False,
                   options=None, settings=None) -> dict:
    t0 = time.perf_counter()
    res = protect(table, method="optimal", cost=cost, time_limit=time_limit,
                  singleton=False, search=search, support_cuts=support_cuts,
                  options=options, settings=settings)
    wall = time.perf_counter() - t0
    independent = audit(res.confidential_table, mode=audit_mode)  # the judge, recomputed here
    # the method's own counters (rounds, nodes, heuristic seconds, ...) for the log
    print("  details:", {k: (round(v, 2) if isinstance(v, float) else v)
                         for k, v in res.solver.items() if k != "options"}, flush=True)
    return {"secondary": res.n_secondary, "cost": res.cost, "seconds": wall,
            "method_seconds": res.method_seconds, "proven": res.proven_optimal,
            "gap": res.mip_gap, "audit": "PASSED" if independent.passed else "FAILED",
            "repaired": len(res.repaired), "engine": res.solver.get("engine", ""),
            "bound": res.solver.get("lower_bound"), "nodes": res.solver.get("nodes"),
            "audit_seconds": res.audit_seconds}


# ---------------------------------------------------------------- pytauargus
def integer_table(table: Table) -> Table:
    """The table with integer values, still exactly additive, and the protection levels
    stated the way tau-Argus' optimal engine needs them; both solvers get this version.

    * The Castro values are least-squares reconstructions with 6 decimals; the FullJJ
      engine loops ("not possible to solve with NETOPT / dualopt") on them.  Cells that
      are no relation's total are rounded; totals are recomputed from them.
    * A level reaching past an a-priori bound: tabprotect (like the audit) asks the
      interval to reach the bound; tau-Argus' own JJ writer instead moves the bound out
      to ``value - LPL``.  Giving FullJJ a level beyond the bound made it loop too; the
      levels are therefore capped at the bounds (``min(UPL, ub - a)``, ``min(LPL, a -
      lb)``), which is what tabprotect protects anyway -- the same problem for both.
    * Levels are rounded up to integers.
    """
    A = table.relations.tocsr()
    is_total = np.zeros(table.n_cells, bool)
    is_total[table.relation_total] = True
    x = table.value.copy()
    x[~is_total] = np.round(x[~is_total])
    sol = lsqr(A[:, is_total], -(A[:, ~is_total] @ x[~is_total]), atol=1e-14, btol=1e-14,
               iter_lim=100_000)[0]
    x[is_total] = np.round(sol)
    if np.abs(A @ x).max() > 1e-6:
        raise ValueError(f"{table.name}: no additive integer version")
    pinned = table.lb == table.ub
    lb = np.where(pinned, x, np.where(np.isfinite(table.lb), np.minimum(np.floor(table.lb), x),
                                      table.lb))
    ub = np.where(pinned, x, np.where(np.isfinite(table.ub), np.maximum(np.ceil(table.ub), x),
                                      table.ub))
    upl = np.minimum(np.ceil(table.upl), ub - x)
    lpl = np.minimum(np.ceil(table.lpl), x - lb)
    return table.replace(value=x, lb=lb, ub=ub, upl=upl, lpl=lpl)


def write_jj(table: Table, cost: np.ndarray, path: Path) -> None:
    """tau-Argus JJ format (tau-Argus 4.1 manual sec. 5.5, as its WriteJJFormat writes
    it), plus the ``<file>.frq`` companion (frequency and holding frequency per cell)
    that WriteJJFormat writes next to it.  Costs are integers, as tau-Argus writes them
    (the engine crashes on fractional costs)."""
    letter = {"U": "u", "S": "s", "Z": "z", "P": "z", "M": "m"}
    A = table.relations.tocsr()
    lines = ["0", str(table.n_cells)]
    for i in range(table.n_cells):
        ub = table.ub[i] if np.isfinite(table.ub[i]) else 2.0e9
        lines.append(f"{i} {table.value[i]:.0f} {max(1, int(round(cost[i])))} "
                     f"{letter[table.status[i]]} {table.lb[i]:.0f} {ub:.0f} "
                     f"{table.lpl[i]:.0f} {table.upl[i]:.0f} {table.spl[i]:.0f}")
    lines.append(str(A.shape[0]))
    for r in range(A.shape[0]):
        cells = A.indices[A.indptr[r]:A.indptr[r + 1]]
        total = int(table.relation_total[r])
        parts = " ".join(f"{j} (1)" for j in cells if j != total)
        lines.append(f"0 {len(cells)} : {total} (-1) {parts}")
    path.write_text("\n".join(lines) + "\n")
    # no contributor counts in the Castro files: a count that never triggers the
    # engine's singleton handling (tabprotect runs with singleton=False too)
    freq = np.nan_to_num(table.freq, nan=10.0).clip(min=3).astype(int)
    Path(str(path) + ".frq").write_text("".join(f"{f} {f}\n" for f in freq))


def _tau_child(workdir: str, minutes: int, queue) -> None:
    import os
    import pytauargus._tauargus as native
    os.chdir(workdir)  # the engine writes its logs into the working directory
    t0 = time.perf_counter()
    code = native.HiTaSCtrl().full_jj(os.path.join(workdir, "JJ.IN"),
                                      os.path.join(workdir, "JJ.OUT"), minutes)
    queue.put((int(code), time.perf_counter() - t0))


def _tau_statistics(path: Path) -> dict:
    """FullJJ's last statistics line (cspSCIP.sta): objective 'opt' and 'BestLB'."""
    try:
        lines = [ln.split() for ln in path.read_text().splitlines() if ln.strip()]
        head = next(ln for ln in lines if "BestLB" in ln)
        last = lines[-1]
        return {"opt": float(last[head.index("opt")]),
                "best_lb": float(last[head.index("BestLB")]),
                "nodes": int(float(last[head.index("nodes")]))}
    except (OSError, StopIteration, ValueError, IndexError):
        return {}


#: FullJJ in a separate Python (``--peer-python``): argv = JJ.IN, JJ.OUT, minutes, workdir
_TAU_SCRIPT = r"""
import os, sys, time
import pytauargus._tauargus as native
os.chdir(sys.argv[4])
t0 = time.perf_counter()
code = native.HiTaSCtrl().full_jj(sys.argv[1], sys.argv[2], int(sys.argv[3]))
print(int(code), time.perf_counter() - t0)
"""


def _tau_subprocess(python: str, tmp: str, minutes: int, timeout: float):
    """FullJJ through another Python with pytauargus: (code, seconds) or an error row."""
    import subprocess
    t0 = time.perf_counter()
    try:
        p = subprocess.run([python, "-c", _TAU_SCRIPT, str(Path(tmp) / "JJ.IN"),
                            str(Path(tmp) / "JJ.OUT"), str(minutes), tmp],
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": "no answer in time", "seconds": time.perf_counter() - t0}
    if p.returncode != 0 or not p.stdout.strip():
        return {"status": f"engine crashed (exit code {p.returncode})",
                "seconds": time.perf_counter() - t0}
    code, secs = p.stdout.split()[-2:]
    return int(code), float(secs)


def run_pytauargus(table: Table, cost: str, time_limit: float,
                   peer_python: str | None = None) -> dict:
    if peer_python is None:
        try:
            import pytauargus  # noqa: F401
        except ImportError:
            return {"status": "not installed (pip install tabprotect[bench], or give "
                              "--peer-python)"}
    c = cost_vector(table, cost)
    int_cost = np.maximum(1, np.round(c))
    with tempfile.TemporaryDirectory() as tmp:
        jj_in, jj_out = Path(tmp) / "JJ.IN", Path(tmp) / "JJ.OUT"
        write_jj(table, int_cost, jj_in)
        minutes = max(1, int(np.ceil(time_limit / 60)))
        if peer_python is not None:
            got = _tau_subprocess(peer_python, tmp, minutes, time_limit * 1.5 + 60)
            if isinstance(got, dict):
                return got
            code, secs = got
        else:
            ctx = mp.get_context("spawn")
            q = ctx.Queue()
            p = ctx.Process(target=_tau_child, args=(tmp, minutes, q))
            t0 = time.perf_counter()
            p.start()
            p.join(time_limit * 1.5 + 60)
            wall = time.perf_counter() - t0
            if p.is_alive():
                p.kill()
                p.join()
                return {"status": "no answer in time", "seconds": wall}
            if p.exitcode != 0:
                return {"status": f"engine crashed (exit code {p.exitcode})", "seconds": wall}
            code, secs = q.get()
        if code > 1 or not jj_out.exists():
            return {"status": f"FullJJ error code {code}", "seconds": secs}
        sec = _read_jj_out(jj_out, table.n_cells)
        sec = sec[table.status[sec] == "S"]
        st = table.status.copy()
        st[sec] = "M"
        verdict = audit(table.replace(status=st)).passed
        sta = _tau_statistics(Path(tmp) / "cspSCIP.sta")
        proven = None
        if sta:
            # the engine's objective counts the primaries' costs too
            prim = float(int_cost[table.status == "U"].sum())
            gap = max(0.0, sta["opt"] - sta["best_lb"]) / max(1e-9, sta["opt"] - prim)
            proven = "proven" if gap <= 1e-6 else f"gap {100 * gap:.2f}%"
        return {"status": "ok", "seconds": secs, "secondary": int(len(sec)),
                "cost": float(c[sec].sum()), "audit": "PASSED" if verdict else "FAILED",
                "proven": proven or "-"}


def _read_jj_out(path: Path, n: int) -> np.ndarray:
    """FullJJ's output: the indices of the secondary suppressions, one per line."""
    cells = []
    for line in path.read_text().split("\n"):
        parts = line.split()
        if parts and parts[0].lstrip("-").isdigit():
            i = int(parts[0])
            if 0 <= i < n:
                cells.append(i)
    return np.unique(np.asarray(cells, dtype=np.int64))


# ---------------------------------------------------------------- main
def fmt(x, nd=1):
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.{nd}f}"
    return str(x)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tables", nargs="*", default=None, help="Castro tables (default all)")
    ap.add_argument("--costs", nargs="*", default=["value", "unity"])
    ap.add_argument("--time-limit", type=float, default=600.0, help="seconds per run")
    ap.add_argument("--generated-only", action="store_true")
    ap.add_argument("--no-generated", action="store_true")
    ap.add_argument("--no-tau", action="store_true", help="skip pytauargus")
    ap.add_argument("--peer-python", default=None,
                    help="a Python with pytauargus installed: tau-Argus' engine runs there "
                         "(default: this Python's pytauargus)")
    ap.add_argument("--audit-mode", default="intervals", choices=["intervals", "verdict"],
                    help="mode of the benchmark's own independent audit of our pattern")
    ap.add_argument("--no-ours", action="store_true",
                    help="skip tabprotect (pytauargus only: long runs split into one command "
                         "per solver)")
    ap.add_argument("--skip-protect-check", action="store_true",
                    help="skip protect()'s up-front feasibility check (one attacker LP per "
                         "primary with every candidate suppressed; minutes on TABLE3, see "
                         "results/optimal.md) -- the final audit judges the pattern anyway")
    ap.add_argument("--search", default="bc", choices=["bc", "milp"],
                    help="optimal method's search (branch-and-cut or MILP rounds)")
    ap.add_argument("--support-cuts", action="store_true",
                    help="optimal method's support cuts (off by default; see "
                         "results/optimal.md)")
    ap.add_argument("--original-values", action="store_true",
                    help="Castro tables as loaded (6-decimal values) instead of their integer "
                         "version; pytauargus' engine does not run on them")
    ap.add_argument("--sizes", nargs="*", type=int, default=[1000, 5000, 20000])
    ap.add_argument("--dims", nargs="*", type=int, default=[2, 3],
                    help="dimensions of the generated tables")
    ap.add_argument("--primary-share", type=float, default=0.05,
                    help="share of a generated table's inner cells that are primary (0.26 "
                         "on the 961-cell 2-D table: 162 primaries, the size of the issue's "
                         "tau-Argus OPT reference case)")
    ap.add_argument("--set", nargs="*", default=[], metavar="NAME=VALUE",
                    help="set a field of the optimal method's OptimalOptions for this run "
                         "(A/B probes, e.g. gomory_rounds=5 branching='\"fractional\"')")
    ap.add_argument("--out", help="write the markdown results here")
    args = ap.parse_args(argv)
    options = None
    if args.set:
        import ast
        import dataclasses

        from tabprotect.secondary.optimal import OptimalOptions
        fields = {f.name for f in dataclasses.fields(OptimalOptions)}
        changes = {}
        for item in args.set:
            name, _, value = item.partition("=")
            if name not in fields:
                raise SystemExit(f"--set: OptimalOptions has no field {name}")
            changes[name] = ast.literal_eval(value)
        options = OptimalOptions(**changes)
    settings = None
    if args.skip_protect_check:
        from tabprotect.secondary import ProtectSettings
        settings = ProtectSettings(feasibility_check_max_work=0)

    head = ["table", "cells", "primaries", "cost fn", "secondaries", "cost", "seconds",
            "optimal / gap", "bound", "audit", "tau: secondaries", "tau: cost", "tau: seconds",
            "tau: optimal / gap", "tau: audit", "time ratio tau/ours", "cost ratio tau/ours"]
    rows = []

    def emit(row):
        rows.append(row)
        print("| " + " | ".join(row) + " |", flush=True)

    print(f"# bench_optimal  {time.strftime('%Y-%m-%d %H:%M')}  python {platform.python_version()}"
          f"  time limit {args.time_limit:.0f} s  search {args.search}", flush=True)
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    jobs = []
    if not args.generated_only:
        for name in (args.tables or list(CASTRO_TABLES)):
            if args.original_values:
                jobs.append((name, lambda name=name: load_castro(name)))
            else:
                jobs.append((name, lambda name=name: integer_table(load_castro(name))))
    if not args.no_generated:
        share = args.primary_share
        tag = "" if share == 0.05 else f"-p{share:g}"
        for dims in args.dims:
            for size in args.sizes:
                jobs.append((f"gen{dims}d-{size}{tag}",
                             lambda s=size, d=dims: generated_table(s, d, seed=s + d,
                                                                    primary_share=share)))
    for name, make in jobs:
        table = make()
        n_prim = int((table.status == "U").sum())
        for cost in args.costs:
            if args.no_ours:
                ours = {"secondary": "-", "cost": None, "seconds": None, "proven": None,
                        "gap": None, "audit": "not run", "repaired": 0, "bound": None}
                opt = "-"
            else:
                ours = run_tabprotect(table, cost, args.time_limit, args.search,
                                      args.audit_mode, args.support_cuts, options, settings)
                print(f"  ({name} {cost}: method {ours['method_seconds']:.1f} s, protect's "
                      f"audit {ours['audit_seconds']:.1f} s, nodes {ours['nodes']})", flush=True)
                opt = "proven" if ours["proven"] else f"gap {100 * (ours['gap'] or 0):.2f}%"
            tau = {"status": "skipped"}
            if not args.no_tau:
                # (generated tables are integer and additive already; Castro tables are
                # given in their integer version above)
                tau = run_pytauargus(table, cost, args.time_limit, args.peer_python)
            if tau.get("status") == "ok":
                tr = fmt(tau["seconds"] / max(ours["seconds"], 1e-9), 2) \
                    if ours["seconds"] is not None else "-"
                cr = fmt(tau["cost"] / ours["cost"], 4) if ours["cost"] else "-"
                tau_cols = [fmt(tau["secondary"]), fmt(tau["cost"], 1), fmt(tau["seconds"]),
                            tau["proven"], tau["audit"], tr, cr]
            else:
                tau_cols = [tau["status"], "-", fmt(tau.get("seconds")), "-", "-", "-", "-"]
            emit([name, str(table.n_cells), str(n_prim), cost, str(ours["secondary"]),
                  fmt(ours["cost"], 1), fmt(ours["seconds"]), opt,
                  fmt(ours["bound"], 1) if ours["bound"] is not None else "-",
                  ours["audit"] + (f" (repaired {ours['repaired']})" if ours["repaired"] else ""),
                  *tau_cols])
    if args.out:
        text = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        text += ["| " + " | ".join(r) + " |" for r in rows]
        Path(args.out).write_text("\n".join(text) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
