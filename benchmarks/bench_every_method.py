"""The 1,000-cell target for the methods outside secondary suppression: rounding, controlled
tabular adjustment and the cell key method, cold and warm, on the everyday tables.

The target: a 1,000-cell table through the command line cold in under 3 s, the Python call
warm in under 0.5 s. Each case is one job file built from the everyday tables of
``bench_peers.py`` (``--data``, the folder of ``enterprise/`` and ``counts/``):

* ``round-<method>`` -- ``tabprotect round`` with base 5 (random: seed 7; small-count: threshold 5)
  on the 625-cell and 2,197-cell count tables, and on the 962-cell region x industry
  frequency table of the enterprise microdata; the rounded-table audit on (the default);
  controlled and small-count rounding also on generated 3-D count tables of 2,744, 3,375
  4,913 and 15,625 cells (:data:`GENERATED`), for how they scale beyond 1,000 cells;
* ``cta`` -- ``tabprotect protect`` with method ``cta`` on the 962-cell p% magnitude table
  and on the 625-cell count table (the count table's small-count problem);
* ``cellkey`` -- ``tabprotect cellkey`` on the enterprise microdata (region x industry,
  962 cells; D 3, V 2, js 2).

Cold: the command in a new process (``python -m tabprotect``), wall and CPU seconds of the
process tree, and the audit's verdict (exit code 0 or 1). Warm: ``pipeline.run(job)`` in one process after a first run of the same job,
the median of ``--warm-repeat`` runs, wall and CPU, and the audit's verdict (of the first
run). ``--base`` runs a second code tree
interleaved with this one (each case: this tree, then the base), for CPU ratios on a loaded
machine. A case that runs longer than ``--timeout`` seconds is reported as such.

    python benchmarks/bench_every_method.py --data ../shared/benchmarks/peers \\
        --base /path/to/old/checkout --out benchmarks/results/every_method.md
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from bench_peers import CASES, timed_process, write_inputs  # noqa: E402

#: the tables: name -> (bench_peers case whose job gives the table, cells)
TABLES = {"ent-2d": ("ent-2d-p-opt", 962), "cnt-2d": ("cnt-2d", 625),
          "cnt-3d": ("cnt-3d", 2197)}
#: 3-D count tables beyond the shared ones, for how rounding scales: name -> (leaves per
#: group in each of the three dimensions, generator seed); written by ``peer_variants``
GENERATED = {"cnt-3d-2744": ((3, 3, 4), 61), "cnt-3d-3375": ((3, 4, 4), 62),
             "cnt-3d-4913": ((4, 4, 5), 63), "cnt-3d-15625": ((5, 5, 5, 5), 64)}
ROUNDING = ("deterministic", "random", "controlled", "small-count")
#: the cases: (table, command, method)
RUNS = ([(t, "round", m) for t in ("cnt-2d", "ent-2d", "cnt-3d") for m in ROUNDING]
        + [(t, "round", m) for t in GENERATED for m in ("controlled", "small-count")]
        + [("ent-2d", "protect", "cta"), ("cnt-2d", "protect", "cta"),
           ("ent-2d", "cellkey", "cellkey")])


def jobs(data: Path, work: Path) -> dict[tuple, Path]:
    """One job file per case of :data:`RUNS`."""
    by_name = {c.name: c for c in CASES}
    base = {}
    for table, (case, _) in TABLES.items():
        base[table] = write_inputs(by_name[case], data, work / table).read_text()
    for table, case in generated_cases(work / "generated").items():
        base[table] = write_inputs(case, work / "generated", work / table).read_text()
    out = {}
    for table, command, method in RUNS:
        text = base[table]
        head = text.split("[rules.frequency]")[0] if "[rules.frequency]" in text \
            else text.split("[protect]")[0]
        if command == "round":
            body = head.replace('response = "turnover"\n', "") + (
                f'[round]\nbase = 5\nmethod = "{method}"\n'
                + ("seed = 7\n" if method == "random" else "")
                + ("threshold = 5\n" if method == "small-count" else ""))
        elif command == "cellkey":
            body = head.replace('response = "turnover"\n', "") + (
                "[cellkey]\nD = 3\nV = 2.0\njs = 2\nseed = 11\n")
        else:
            # cta publishes adjusted values: the single-contributor attack is suppression's
            body = text.replace('method = "optimal"', f'method = "{method}"').replace(
                'method = "gauss"', f'method = "{method}"').replace(
                "singleton = false\n", "").replace("singleton = true\n", "")
        path = work / table / f"{command}-{method}.toml"
        path.write_text(body)
        out[(table, command, method)] = path
    return out


def generated_cases(folder: Path) -> dict:
    """The :data:`GENERATED` tables' leaf files in ``folder/counts`` and their cases (count
    tables with the shared 3-D table's columns)."""
    from bench_peers import Case
    from peer_variants import CountShape, write_counts
    cases = {}
    for table, (groups, seed) in GENERATED.items():
        shape = CountShape((groups,) * 3, 0.2)
        write_counts(shape, seed, folder / "counts" / f"{table}.csv")
        cases[table] = Case(table, "counts", ("dim1", "dim2", "dim3"), "gauss",
                            source=f"{table}.csv", cells=shape.cells())
    return cases


def cold(code: str, command: str, job: Path, out: Path, timeout: float) -> dict:
    """The command in a new process: wall and CPU seconds (process tree)."""
    env = dict(os.environ, PYTHONPATH=code)
    cmd = [sys.executable, "-m", "tabprotect", command, str(job), "-o", str(out), "--quiet"]
    p, row = timed_process(cmd, env, code, timeout)
    if p is None:
        return {"error": f"over {timeout:.0f} s"}
    if p.returncode not in (0, 1):
        row["error"] = (p.stderr.strip().splitlines() or ["?"])[-1][:160]
    elif command != "cellkey":
        row["passed"] = p.returncode == 0  # exit code 1: the audit failed
    return row


CHILD = """
import json, statistics, sys, time
from tabprotect import pipeline
from tabprotect.io.job import load_job
job = load_job(sys.argv[1])
run = pipeline.run(job)
passed = getattr(getattr(run, "audit", None), "passed", None)
walls, cpus = [], []
for _ in range(int(sys.argv[2])):
    t0, c0 = time.perf_counter(), time.process_time()
    pipeline.run(job)
    walls.append(time.perf_counter() - t0)
    cpus.append(time.process_time() - c0)
print(json.dumps({"wall": statistics.median(walls), "cpu": statistics.median(cpus),
                  "passed": None if passed is None else bool(passed)}))
"""


def warm(code: str, job: Path, repeat: int, timeout: float) -> dict:
    """``pipeline.run(job)`` after a first run in the same process: the median of
    ``repeat`` runs (wall and CPU seconds of the process)."""
    try:
        p = subprocess.run([sys.executable, "-c", CHILD, str(job), str(repeat)],
                           env=dict(os.environ, PYTHONPATH=code), cwd=code,
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"over {timeout:.0f} s"}
    if p.returncode != 0:
        return {"error": (p.stderr.strip().splitlines() or ["?"])[-1][:160]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def fmt(row: dict | None) -> str:
    if row is None:
        return "-"
    if "error" in row:
        return row["error"]
    verdict = {True: ", audit passed", False: ", audit FAILED"}.get(row.get("passed"), "")
    return f"{row['wall']:.2f} ({row['cpu']:.2f}){verdict}"


def render(rows: list[dict], command: str, has_base: bool) -> str:
    head = ["table", "cells", "command", "method", "cold wall (CPU) s", "warm wall (CPU) s"]
    if has_base:
        head += ["BASE cold", "BASE warm"]
    lines = ["## Every method on the everyday tables", "",
             "The target: cold under 3 s, warm under 0.5 s for 1,000 cells. Wall seconds, CPU "
             "seconds in brackets; compare CPU seconds (the machine is shared).", "",
             f"    {command}", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["table"], str(r["cells"]), r["command"], r["method"], fmt(r.get("cold")),
                 fmt(r.get("warm"))]
        if has_base:
            cells += [fmt(r.get("base_cold")), fmt(r.get("base_warm"))]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "benchmarks" / "peers"))
    ap.add_argument("--base", default=None, help="a second code tree, run interleaved")
    ap.add_argument("--cases", nargs="*", default=None,
                    help="only these cases: TABLE:METHOD, e.g. cnt-3d:controlled")
    ap.add_argument("--modes", nargs="+", choices=["cold", "warm"], default=["cold", "warm"])
    ap.add_argument("--warm-repeat", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--work", default=None)
    ap.add_argument("--out", default=None, help="Markdown file for the table")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    work = Path(args.work or tempfile.mkdtemp(prefix="every-"))
    files = jobs(Path(args.data), work)
    codes = {"": str(ROOT)} | ({"base_": args.base} if args.base else {})
    rows = []
    for (table, command, method), job in files.items():
        if args.cases and f"{table}:{method}" not in args.cases:
            continue
        cells = TABLES[table][1] if table in TABLES else \
            (1 + len(GENERATED[table][0]) + sum(GENERATED[table][0])) ** 3
        row = {"table": table, "cells": cells, "command": command,
               "method": method}
        for prefix, code in codes.items():
            if "cold" in args.modes:
                row[prefix + "cold"] = cold(code, command, job,
                                            work / f"out-{prefix}{table}-{method}",
                                            args.timeout)
            if "warm" in args.modes:
                row[prefix + "warm"] = warm(code, job, args.warm_repeat, args.timeout)
        print(json.dumps(row), flush=True)
        rows.append(row)
    command = "python benchmarks/bench_every_method.py " + " ".join(
        a if not a.startswith("/") else Path(a).name for a in (argv or sys.argv[1:]))
    text = render(rows, command, bool(args.base))
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
