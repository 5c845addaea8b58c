"""Audit modes on method patterns of generated 3-D count tables: verdict and time of each
mode, and what protect()'s repair adds.

Count tables: flat hierarchies (``side - 1`` codes and a total per dimension, ``side^3``
cells), Poisson(4) inner counts, primaries the cells with count 1 or 2, an upper
protection level of 1 (the interval must reach count + 1) and a sliding width of 2.

For each table and method: the method's pattern (``METHODS[method]``) is audited in every
mode (``intervals`` only up to ``--intervals-max`` cells: one LP pair per suppressed cell
and attacker), then ``protect()`` runs end to end with each ``--protect-modes`` audit mode
(the verdict, the time, the cells its repair added; ``--pre-repair off`` without the cube
pass before the first audit); printed and written as a Markdown
table. ``--code DIR`` imports tabprotect from another checkout (e.g. a ``git worktree``
of an older commit), for a before/after run on the same machine.

Usage::

    python benchmarks/bench_audit_modes.py --sides 10 22 --methods gauss modular \\
        --out benchmarks/results/audit_modes.md
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

_CODE = sys.argv[sys.argv.index("--code") + 1] if "--code" in sys.argv else None
sys.path.insert(0, _CODE or str(Path(__file__).resolve().parents[1]))  # run from a checkout

from tabprotect.audit import audit  # noqa: E402
from tabprotect.model import Hierarchy, Table, aggregate_leaves  # noqa: E402
from tabprotect.secondary import protect  # noqa: E402
from tabprotect.secondary.base import METHODS, cost_vector  # noqa: E402
from tabprotect.secondary.protect_settings import ProtectSettings  # noqa: E402


def count_table(side: int, seed: int = 0, mean: float = 4.0) -> Table:
    """A ``side^3`` count table with frequency 1-2 primaries (see the module docstring)."""
    rng = np.random.default_rng(seed)
    hs = [Hierarchy.flat([f"{d}{i}" for i in range(side - 1)], total="T") for d in "abc"]
    inner = np.ones(1, bool)
    for h in hs:
        inner = np.logical_and.outer(inner, h.is_leaf).ravel()
    v = np.zeros(side ** 3)
    v[inner] = rng.poisson(mean, int(inner.sum()))
    v = aggregate_leaves(v, hs)
    prim = (v >= 1) & (v <= 2)
    status = np.where(v == 0, "Z", "S").astype("<U1")
    status[prim] = "U"
    return Table.from_arrays(dict(zip("abc", hs)), v, v.copy(), status=status,
                             upl=np.where(prim, 1.0, 0.0), spl=np.where(prim, 2.0, 0.0),
                             kind="frequency", name=f"count {side}^3")


def peer_table(name: str, data: Path) -> Table:
    """A count table of ``benchmarks/bench_peers.py`` (``cnt-2d``, ``cnt-3d``, ...) with
    GaussSuppression's problem: primaries the counts 1-2, upper level 1, sliding level 2."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import bench_peers
    case = next(c for c in bench_peers.CASES if c.name == name)
    return bench_peers.count_table(case, data).replace(name=name)


def hier_table(case: str) -> Table:
    """``hier:GxL``: ``synthetic.count_table([(G, L)] * 3, seed=1)``, the hierarchical count
    table of ``benchmarks/bench_repair.py`` (``counts:GxL``)."""
    from tabprotect.model.synthetic import count_table as hierarchical_counts
    g, leaves = (int(x) for x in case.split(":")[1].split("x"))
    return hierarchical_counts([(g, leaves)] * 3, seed=1)


def finished(res, seconds: float, time_limit: float) -> str:
    """The ``complete`` column: ``yes`` only for an audit that decided every primary
    before the time limit.  An audit stopped by the limit can count primaries it did not
    decide as short, so a run that reached the limit is ``no (time limit)`` whatever the
    audit's flags say."""
    if seconds >= 0.98 * time_limit:
        return "no (time limit)"
    return "yes" if res.complete else "no"


def run(side: int | str, method: str, singleton: bool, intervals_max: int,
        time_limit: float, protect_modes=("auto",), audit_modes=("verdict", "screen",
                                                                 "intervals"),
        integers=(False, True), data: Path | None = None,
        pre_repair: str = "auto") -> list[dict]:
    t = (peer_table(side, data) if isinstance(side, str) and not side.startswith("hier:")
         else hier_table(side) if isinstance(side, str) else count_table(side))
    cost = cost_vector(t, "value")
    t0 = time.perf_counter()
    spec = METHODS[method]
    shared = {"time_limit": time_limit, "singleton": singleton, "empty": "publish"}
    out = spec(t, cost, **{k: v for k, v in shared.items() if k in spec.shared})
    method_s = time.perf_counter() - t0
    pattern = t.replace(status=np.asarray(out.status).astype("<U1"))
    n_sec = int((pattern.status == "M").sum())
    rows = []
    modes = [m for m in audit_modes if m != "intervals" or t.n_cells <= intervals_max]
    # the exact audit first: every other mode's shortfalls are compared with the cells
    # of the first exact audit (intervals or verdict; a screen's may be unproven)
    modes = sorted(modes, key=lambda m: m != "intervals")
    for integer in integers:
        exact = None
        for mode in modes:
            cpu = time.process_time()
            res = audit(pattern, singleton=singleton, integer=integer, mode=mode,
                        time_limit=time_limit)
            cpu = time.process_time() - cpu
            short = set(np.asarray(res.shortfalls).tolist())
            if exact is None and res.complete and mode != "screen":
                exact, agree = (mode, short), "reference"
            elif exact is None:
                agree = ""   # no exact audit finished before it: nothing to compare
            else:
                differ = len(short ^ exact[1])
                agree = f"= {exact[0]}" if differ == 0 else f"{differ} cells differ"
            rows.append({"cells": t.n_cells, "method": method, "singleton": singleton,
                         "what": f"audit {mode}{' integer' if integer else ''}",
                         "short": len(res.shortfalls),
                         "complete": finished(res, res.runtime, time_limit),
                         "seconds": round(res.runtime, 1), "cpu": round(cpu, 1),
                         "secondaries": n_sec,
                         "added": "", "cost": "", "agree": agree})
    for mode in protect_modes:
        if mode == "intervals" and t.n_cells > intervals_max:
            continue
        t0, cpu = time.perf_counter(), time.process_time()
        res = protect(t, method=method, cost="value", singleton=singleton,
                      time_limit=time_limit, audit_mode=mode,
                      settings=ProtectSettings(pre_repair=pre_repair))
        rows.append({"cells": t.n_cells, "method": method, "singleton": singleton,
                     "what": f"protect(audit_mode={mode!r}"
                             + (f", pre_repair={pre_repair!r}" if pre_repair != "auto"
                                else "") + f"): {res.audit.mode} audit",
                     "short": len(res.audit.shortfalls),
                     "complete": finished(res.audit, time.perf_counter() - t0, time_limit),
                     "seconds": round(time.perf_counter() - t0, 1),
                     "cpu": round(time.process_time() - cpu, 1),
                     "secondaries": n_sec, "added": len(res.repaired),
                     "cost": f"{float(cost[pattern.status == 'M'].sum()):.0f} -> "
                             f"{res.cost:.0f}",
                     "agree": "",
                     "stages": ", ".join(f"{k} {v:.1f}"
                                         for k, v in res.stage_seconds.items()),
                     "method_seconds": round(method_s, 1), "mode": mode})
    return rows


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sides", type=int, nargs="*", default=[10, 22])
    ap.add_argument("--methods", nargs="+", default=["gauss", "modular"])
    ap.add_argument("--singleton", choices=["on", "off", "both"], default="both")
    ap.add_argument("--intervals-max", type=int, default=3000)
    ap.add_argument("--time-limit", type=float, default=600.0)
    ap.add_argument("--protect-modes", nargs="*", default=["auto"],
                    choices=["auto", "verdict", "intervals"])
    ap.add_argument("--audit-modes", nargs="*", default=["verdict", "screen", "intervals"],
                    choices=["verdict", "screen", "intervals"])
    ap.add_argument("--pre-repair", choices=["auto", "off"], default="auto",
                    help="ProtectSettings.pre_repair of the protect() rows ('off': no cube "
                         "pass before the first audit)")
    ap.add_argument("--integer", choices=["on", "off", "both"], default="both",
                    help="the audits of the method's pattern: integer, LP or both")
    ap.add_argument("--peer-cases", nargs="*", default=[],
                    help="count tables of bench_peers.py (cnt-2d, cnt-3d) before the sides")
    ap.add_argument("--hier", nargs="*", default=[],
                    help="hierarchical count tables hier:GxL (bench_repair.py's counts:GxL; "
                         "hier:5x8 has 97,336 cells) before the sides")
    ap.add_argument("--data", type=Path,
                    default=Path(__file__).resolve().parents[2] / "shared" / "benchmarks"
                    / "peers", help="the peers' tables (for --peer-cases)")
    ap.add_argument("--code", default=None,
                    help="import tabprotect from this checkout (a before/after run)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    flags = {"on": [True], "off": [False], "both": [True, False]}[args.singleton]
    head = ("| cells | method | singleton | run | short | same cells | complete | s | "
            "CPU s | secondaries | repair added | cost method -> final |")
    lines = [head, "|" + "---|" * 12]
    notes = []
    for side in [*args.peer_cases, *args.hier, *args.sides]:
        for method in args.methods:
            for singleton in flags:
                for r in run(side, method, singleton, args.intervals_max, args.time_limit,
                             args.protect_modes, args.audit_modes,
                             {"on": [True], "off": [False], "both": [False, True]}[
                                 args.integer], args.data, args.pre_repair):
                    line = (f"| {r['cells']:,} | {r['method']} | {r['singleton']} | "
                            f"{r['what']} | {r['short']} | {r['agree']} | {r['complete']} | "
                            f"{r['seconds']} | {r['cpu']} | {r['secondaries']} | {r['added']} | "
                            f"{r['cost']} |")
                    print(line, flush=True)
                    lines.append(line)
                    if "stages" in r:
                        notes.append(f"- {r['cells']:,} cells, {r['method']}, singleton "
                                     f"{r['singleton']}, audit_mode {r['mode']!r}: method alone "
                                     f"{r['method_seconds']} s; protect() stages: "
                                     f"{r['stages']}")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        cmd = "python benchmarks/bench_audit_modes.py " + " ".join(
            argv if argv is not None else sys.argv[1:])
        args.out.write_text(
            "# Audit modes on method patterns of generated count tables\n\n"
            f"Made by `{cmd}` (single process).\n\n"
            "`short`: primaries the audit finds short on the method's pattern (every mode "
            "must agree); `same cells`: whether they are the cells the first complete exact "
            "audit of the row group (intervals, else verdict) finds; protect() rows: the "
            "final audit, the cells its repair added and the cost of the method's pattern "
            "against the final one.\n\n"
            + "\n".join(lines) + "\n\n" + "\n".join(notes) + "\n")


if __name__ == "__main__":
    main()
