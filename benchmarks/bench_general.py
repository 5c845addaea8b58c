"""General and linked tables: loading and preparing them, and protecting them by every
general method beside tau-Argus' OPT, each pattern judged by the independent audit.

Tables: Castro's ten (../shared/benchmarks/castro, made additive by ``load_castro``, in
their integer version for the protection part, as tau-Argus' engine needs) and generated
linked tables (:mod:`benchmarks.linked_tables`: three 3-D tables sharing their 2-D
margins, 10^3-10^5 cells).

Part ``load`` (per table): "source s" (reading the Castro CSVs and making them
additive, or generating the linked table), "JJ write s" / "JJ read s" (``write_jj`` and
``read_jj``: parse, build the relations, check additivity and bounds), and what
``protect()`` does before a method runs: "structure s" (``product_structure``:
recovering a product of hierarchies, or finding there is none), "requirements s"
(``Requirements.from_table``), "feasibility s" (the up-front feasibility check, skipped
from ``large_table`` cells on) and "gauss rows s" (the relations as the elimination's
integer rows); "prepare s" is their sum.

Part ``protect`` (per table and method): ``protect(table, method, cost="value",
time_limit=T)``; "protect" is its own verdict, "audit" the benchmark's independent
audit of the returned pattern (``tabprotect.audit.audit``, verdict mode, its own time
limit; UNDECIDED when it runs out), then secondaries, cost, wall seconds and CPU
seconds (the call's, every thread of the process; with ``--repeat N`` the medians of N
calls).  gauss's compiled kernel is loaded
(or compiled) once before the first row.  The row "tau-Argus OPT" is pytauargus'
optimal engine (FullJJ on the JJ file of the same table, ``max_time`` in whole minutes,
a child process of ``--peer-python``; its seconds are the child's whole run, start-up
and import included) with its pattern judged by the same audit.  The engine is given no
single contributors (``benchmarks/bench_optimal.write_jj``), so on a table with cells of
one contributor it solves a weaker problem than ``protect()``'s default; ``--plain``
adds for such tables each method's row with ``singleton=False`` (method "... (no
single-contributor attack)", judged by the audit without that attack): the like-for-like
comparison with the engine.

Usage::

    python benchmarks/bench_general.py --part load --out benchmarks/results/general.md
    python benchmarks/bench_general.py --part protect --tables TARGUS HIER13 \\
        --linked 1k --time-limit 60 --peer-python /path/to/venv/bin/python
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.castro import CASTRO_TABLES, load_castro  # noqa: E402
from benchmarks.linked_tables import LINKED_SIZES, linked_table  # noqa: E402
from tabprotect.audit import audit  # noqa: E402
from tabprotect.budget import Budget  # noqa: E402
from tabprotect.errors import InputError  # noqa: E402
from tabprotect.io.jj import read_jj, write_jj  # noqa: E402
from tabprotect.model.structure import product_structure  # noqa: E402
from tabprotect.secondary import cost_vector, protect  # noqa: E402
from tabprotect.secondary.base import METHODS  # noqa: E402
from tabprotect.secondary.candidates import candidate_cells  # noqa: E402
from tabprotect.secondary.feasibility import feasibility_stage  # noqa: E402
from tabprotect.secondary.gauss import gauss  # noqa: E402
from tabprotect.secondary.gauss.vectors import cell_vectors  # noqa: E402
from tabprotect.secondary.protect_settings import ProtectSettings  # noqa: E402
from tabprotect.secondary.attack_requirements import Requirements  # noqa: E402


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def _source(name: str):
    """(table, seconds to read or generate it)."""
    if name.startswith("linked-"):
        return _timed(lambda: linked_table(name.split("-", 1)[1]))
    return _timed(lambda: load_castro(name))


# ---------------------------------------------------------------- part load
def measure_load(name: str, folder: Path) -> dict:
    table, t_src = _source(name)
    row = {"table": name, "cells": table.n_cells, "relations": table.n_relations,
           "source s": t_src}
    path, row["JJ write s"] = _timed(lambda: write_jj(table, folder / f"{name}.jj"))
    back, row["JJ read s"] = _timed(lambda: read_jj(path))
    assert back.n_cells == table.n_cells
    found, row["structure s"] = _timed(lambda: _structure(back))
    row["structure"] = "product" if found else "general"
    _, row["requirements s"] = _timed(lambda: Requirements.from_table(back, singleton=True))
    settings = ProtectSettings()
    large = back.n_cells >= settings.large_table
    _, row["feasibility s"] = _timed(lambda: feasibility_stage(
        back, candidate_cells(back, "publish"), Budget(None), settings, large, []))
    _, row["gauss rows s"] = _timed(lambda: cell_vectors(back).forced_csr())
    row["prepare s"] = sum(row[k] for k in ("structure s", "requirements s",
                                             "feasibility s", "gauss rows s"))
    return row


def _structure(table) -> bool:
    """Whether a product structure is found (the time of finding there is none counts)."""
    try:
        product_structure(table)
    except InputError:
        return False
    return True


LOAD_COLUMNS = ["table", "cells", "relations", "source s", "JJ write s", "JJ read s",
                "structure", "structure s", "requirements s", "feasibility s",
                "gauss rows s", "prepare s"]


# ---------------------------------------------------------------- part protect
def integer_version(name: str, table):
    """The table tau-Argus' engine can run on (Castro: integer values, levels capped at
    the bounds; see benchmarks/bench_optimal.py); generated tables already are."""
    if name.startswith("linked-"):
        return table
    from benchmarks.bench_optimal import integer_table
    return integer_table(table)


def judge(table, status, seconds: float, singleton: bool = True) -> str:
    res = audit(table.replace(status=status), mode="verdict", singleton=singleton,
                time_limit=seconds)
    if res.passed:
        return "PASSED"
    short = int((~res.protected & (table.status == "U")).sum())
    return f"FAILED ({short} short)" if res.complete else f"UNDECIDED ({short} short)"


def run_method(table, method: str, limit: float, audit_seconds: float,
               repeat: int = 1, singleton: bool = True) -> dict:
    """One row: the call ``repeat`` times, its median wall and CPU seconds (calls of a
    tenth of a second vary by more than the changes measured on them), the last
    call's pattern judged (every call must give the same cost); ``singleton``: the
    call's and the audit's single-contributor attack."""
    c = cost_vector(table, "value")
    walls, cpus, costs = [], [], set()
    for _ in range(repeat):
        t0, cpu0 = time.perf_counter(), time.process_time()
        try:
            res = protect(table, method=method, cost="value", time_limit=limit,
                          singleton=singleton)
        except Exception as err:  # noqa: BLE001 - a method's failure is a row of the result
            return {"verdict": f"error: {str(err).splitlines()[0][:80]}",
                    "seconds": time.perf_counter() - t0}
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - cpu0)
        costs.add(round(res.cost, 6))
    wall, cpu = float(np.median(walls)), float(np.median(cpus))
    status = res.confidential_table.status
    if len(costs) > 1:
        return {"verdict": f"{len(costs)} different costs in {repeat} calls",
                "seconds": wall, "CPU s": cpu}
    return {"protect": "PASSED" if res.passed else "FAILED",
            "verdict": judge(table, status, audit_seconds, singleton=singleton),
            "secondaries": int((status == "M").sum()), "cost": float(c[status == "M"].sum()),
            "seconds": wall, "CPU s": cpu}


TAU_SCRIPT = r"""
import json, os, sys, time
import pytauargus._tauargus as native
work, minutes = sys.argv[1], int(sys.argv[2])
os.chdir(work)
t0 = time.perf_counter()
code = native.HiTaSCtrl().full_jj(os.path.join(work, "JJ.IN"), os.path.join(work, "JJ.OUT"),
                                  minutes)
print(json.dumps({"code": int(code), "seconds": time.perf_counter() - t0}))
"""


def run_tau(table, limit: float, peer_python: str, audit_seconds: float,
            repeat: int = 1) -> dict:
    """The peer's row: its run ``repeat`` times (median seconds), the last pattern
    judged."""
    from benchmarks.bench_optimal import _read_jj_out
    from benchmarks.bench_optimal import write_jj as write_tau_jj
    c = cost_vector(table, "value")
    minutes = max(1, int(np.ceil(limit / 60)))
    with tempfile.TemporaryDirectory() as tmp:
        write_tau_jj(table, np.maximum(1, np.round(c)), Path(tmp) / "JJ.IN")
        walls, cpus = [], []
        for _ in range(repeat):
            t0, ru0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
            try:
                p = subprocess.run([peer_python, "-c", TAU_SCRIPT, tmp, str(minutes)],
                                   capture_output=True, text=True,
                                   timeout=minutes * 120 + 60)
            except subprocess.TimeoutExpired:
                return {"verdict": "no answer in time", "seconds": time.perf_counter() - t0}
            walls.append(time.perf_counter() - t0)
            ru = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(ru.ru_utime + ru.ru_stime - ru0.ru_utime - ru0.ru_stime)
        wall, cpu = float(np.median(walls)), float(np.median(cpus))
        out = Path(tmp) / "JJ.OUT"
        if p.returncode != 0 or not out.exists():
            tail = (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1]
            return {"verdict": f"engine: {tail[:80]}", "seconds": wall}
        code = json.loads(p.stdout.strip().splitlines()[-1])["code"]
        sec = _read_jj_out(out, table.n_cells)
    if code > 1:
        return {"verdict": f"FullJJ error code {code}", "seconds": wall}
    sec = sec[table.status[sec] == "S"]
    status = table.status.copy()
    status[sec] = "M"
    verdict = judge(table, status, audit_seconds)
    if not verdict.startswith("PASSED") and (table.freq == 1).any():
        # the engine is given no single contributors (benchmarks/bench_optimal.write_jj)
        plain = judge(table, status, audit_seconds, singleton=False)
        verdict += f"; without the single-contributor attack {plain}"
    return {"verdict": verdict, "secondaries": int(len(sec)),
            "cost": float(c[sec].sum()), "seconds": wall, "CPU s": cpu}


def warm_up(methods=()) -> None:
    """Compile (or load from numba's cache) gauss's kernel before any row is timed: a
    cold compile takes minutes on a loaded machine and would count against the first
    table's time limit.  The methods' modules are imported too (a method's module is
    imported at its first call; without cached bytecode, as on the benchmark machine,
    that import compiles its sources and would count against the first table's row:
    about 0.07 s for optimal)."""
    for method in methods:
        METHODS[method]
    table = linked_table("1k")
    gauss(table, cost_vector(table, "value"), widths="never", prune="never",
          kernel="compiled")


PROTECT_COLUMNS = ["table", "cells", "primaries", "method", "protect", "verdict",
                   "secondaries", "cost", "seconds", "CPU s"]


# ---------------------------------------------------------------- output
def _fmt(v) -> str:
    if isinstance(v, float):
        if v != v:
            return "-"
        if abs(v) >= 1e4:
            return f"{v:,.0f}"
        return f"{v:.2e}" if (v != 0 and abs(v) < 1e-2) else f"{v:.2f}"
    return str(v)


def _markdown(rows: list[dict], columns: list[str]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_fmt(r.get(k, float("nan"))) for k in columns) + " |"
              for r in rows]
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=["load", "protect", "all"], default="all")
    ap.add_argument("--tables", nargs="*", default=list(CASTRO_TABLES),
                    help="Castro tables")
    ap.add_argument("--linked", nargs="*", default=None, choices=list(LINKED_SIZES),
                    help="generated linked tables (default: all for load, 1k 10k for "
                         "protect)")
    ap.add_argument("--methods", nargs="*", default=["gauss", "optimal"])
    ap.add_argument("--time-limit", type=float, default=60.0,
                    help="protect()'s time limit per method and table (tau-Argus: whole "
                         "minutes, at least one)")
    ap.add_argument("--audit-seconds", type=float, default=120.0,
                    help="time limit of the independent audit of each pattern")
    ap.add_argument("--peer-python", help="a python with pytauargus (tau-Argus OPT rows)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="protect() calls per row: the median seconds are reported")
    ap.add_argument("--plain", action="store_true",
                    help="on tables with single contributors, also each method without the "
                         "single-contributor attack (the problem tau-Argus' engine is "
                         "given)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    sections = []
    if args.part in ("load", "all"):
        names = args.tables + [f"linked-{s}" for s in (args.linked or list(LINKED_SIZES))]
        rows = []
        with tempfile.TemporaryDirectory() as tmp:
            for name in names:
                rows.append(measure_load(name, Path(tmp)))
                print("  ".join(f"{k}={_fmt(rows[-1].get(k, float('nan')))}"
                                for k in LOAD_COLUMNS), flush=True)
        sections.append(("Loading and preparing", _markdown(rows, LOAD_COLUMNS)))
    if args.part in ("protect", "all"):
        linked = args.linked if args.linked is not None else ["1k", "10k"]
        names = args.tables + [f"linked-{s}" for s in linked]
        rows = []
        warm_up(args.methods)
        for name in names:
            table = integer_version(name, _source(name)[0])
            head = {"table": name, "cells": table.n_cells,
                    "primaries": int((table.status == "U").sum())}
            runs = [(m, lambda m=m: run_method(table, m, args.time_limit, args.audit_seconds,
                                               args.repeat))
                    for m in args.methods]
            if args.plain and (table.freq == 1).any():
                runs += [(f"{m} (no single-contributor attack)",
                          lambda m=m: run_method(table, m, args.time_limit,
                                                 args.audit_seconds, args.repeat,
                                                 singleton=False))
                         for m in args.methods]
            if args.peer_python:
                runs.append(("tau-Argus OPT", lambda: run_tau(
                    table, args.time_limit, args.peer_python, args.audit_seconds,
                    args.repeat)))
            for method, fn in runs:
                rows.append({**head, "method": method, **fn()})
                print("  ".join(f"{k}={_fmt(rows[-1].get(k, ''))}" for k in PROTECT_COLUMNS),
                      flush=True)
        sections.append((f"Protecting (time limit {args.time_limit:g} s per method, "
                         f"independent audit {args.audit_seconds:g} s)",
                         _markdown(rows, PROTECT_COLUMNS)))
    text = "\n\n".join(f"## {title}\n\n{table}" for title, table in sections)
    print(text)
    if args.out:
        cmd = "python benchmarks/bench_general.py " + " ".join(argv or sys.argv[1:])
        intro = __doc__.split("Usage::")[0].strip()
        args.out.write_text(f"# General and linked tables (`benchmarks/bench_general.py`)\n\n"
                            f"{intro}\n\nCommand: `{cmd}` (one process; the peer in a child "
                            f"process; every row of one part in the same run).\n\n{text}\n")


if __name__ == "__main__":
    main()
