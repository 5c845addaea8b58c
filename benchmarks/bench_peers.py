"""Everyday tables (10^2-10^4 cells) against the peers, whole runs, in one command.

Every case runs tabprotect's whole run twice -- the CLI job cold (``tabprotect protect
job.toml`` in a new process: import, reading, tabulation, rules, method, audit, repair,
writing) and the Python call warm (``pipeline.run(job)`` in a process that has imported
tabprotect and protected a small table with the same method) -- and the peer in the same
run: tau-Argus through pytauargus (``pytauargus.protect`` on the same records, in a new
process) for the magnitude tables, GaussSuppression (``SuppressSmallCounts`` through
``Rscript``) for the count tables. Each pattern, tabprotect's and the peer's, is then judged
by the same independent exact interval audit (:func:`tabprotect.audit.audit`, mode
``intervals``; count tables with the single-contributor attack), with tabprotect's
protection levels and, for the magnitude tables, with tau-Argus' own levels too.

    python benchmarks/bench_peers.py --data ../shared/benchmarks/peers \\
        --peer-python /opt/peers/bin/python --rscript Rscript --base /path/to/old/checkout
    python benchmarks/bench_peers.py --data DIR --cases ent-2d-p-mod cnt-2d --profile

``--from-json`` writes one table from the rows of several runs (``--json``), e.g. the
short cases cold and warm and the long ones cold only, run side by side.

``--profile`` adds the stages of each whole run (import, reading + tabulation, rules,
method, audit + repair, information loss, writing) from the warm call and the cold
start-up. A peer that is not installed gives a row saying so (``--peer-figures`` then
quotes the README's figures, labelled as such). ``--base`` runs a second tabprotect code
tree (e.g. an older commit's ``git worktree``) in the same run, for before/after ratios.
``--warm-repeat N`` and ``--peer-repeat N`` (like ``--cold-repeat N``) take the median of N
warm calls in one process (each stage of the profile and the writing too) and of N peer
runs: on a loaded machine one run's wall time is noise. ``--complete-peer`` makes a peer pattern that fails the audit safe with tabprotect (its
cells kept, the case's method, audit and repair on top) and reports that pattern's cost.
The table is written to ``--out`` (Markdown) with the command that made it.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


@dataclass(frozen=True)
class Case:
    """One row of the comparison: a table, its rules, tabprotect's method and the peer's."""
    name: str
    kind: str                     # "enterprise" (magnitude, tau-Argus) or "counts" (Gauss)
    dims: tuple[str, ...]
    method: str
    rules: str = ""               # enterprise: "p" or "nk"
    source: str = ""              # counts: CSV file name in counts/ ("" = generated)
    peer: str = ""                # tau-Argus suppression spec, or "gauss"
    time_limit: float = 600.0
    cells: int = 0                # for the table's label only


CASES = [
    Case("ent-2d-p-opt", "enterprise", ("region", "industry"), "optimal", "p",
         peer="OPT(1,10)", cells=962),
    Case("ent-2d-nk-opt", "enterprise", ("region", "industry"), "optimal", "nk",
         peer="OPT(1,10)", cells=962),
    Case("ent-2d-p-mod", "enterprise", ("region", "industry"), "modular", "p",
         peer="MOD(1,5,1,1,1)", cells=962),
    Case("ent-2d-nk-mod", "enterprise", ("region", "industry"), "modular", "nk",
         peer="MOD(1,5,1,1,1)", cells=962),
    Case("ent-3d-p-mod", "enterprise", ("region", "industry", "size"), "modular", "p",
         peer="MOD(1,5,1,1,1)", cells=4810),
    Case("cnt-2d", "counts", ("dim1", "dim2"), "gauss", source="medium2d.csv",
         peer="gauss", cells=625),
    Case("cnt-3d", "counts", ("dim1", "dim2", "dim3"), "gauss", source="medium3d.csv",
         peer="gauss", cells=2197),
    Case("cnt-25^3", "counts", ("dim1", "dim2", "dim3"), "gauss", source="",
         peer="gauss", cells=15625),
]
RULES = {"p": ("FREQ(3,10)|P(10,1)", "[[rules.p]]\np = 10\nm = 1\n"),
         "nk": ("FREQ(3,10)|NK(1,80)", "[[rules.dominance]]\nn = 1\nk = 80\n")}
#: the independent audit: intervals up to this many cells, the verdict's LPs above
INTERVAL_AUDIT_MAX_CELLS = 2500
#: seconds for each independent audit (a primary not judged in time is "undecided")
AUDIT_SECONDS = 1800.0
#: the README's figures (wall s, CPU s, secondaries) where a peer cannot run here
PEER_FIGURES = {"ent-2d-p-opt": (18, 9, None), "ent-2d-nk-opt": (835, 369, None),
                "ent-2d-p-mod": (1.5, 0.5, None),
                "ent-2d-nk-mod": (2.4, 0.9, None), "ent-3d-p-mod": (395, 223, None),
                "cnt-2d": (0.84, 0.59, 83), "cnt-3d": (10.9, 5.5, 313),
                "cnt-25^3": (402, 197, None)}


# ---------------------------------------------------------------- inputs
def write_inputs(case: Case, data: Path, work: Path) -> Path:
    """The case's job file (and, for count tables, its cells file) in ``work``."""
    work.mkdir(parents=True, exist_ok=True)
    if case.kind == "enterprise":
        ent = data / "enterprise"
        hier = {"region": ent / "region.hrc", "industry": ent / "industry.hrc"}
        lines = ["[microdata]", f'file = "{ent / "micro.csv.gz"}"',
                 f"dimensions = {json.dumps(list(case.dims))}", 'response = "turnover"', ""]
        for d in case.dims:
            lines += [f"[hierarchies.{d}]"] + (
                [f'hrc = "{hier[d]}"'] if d in hier else ["flat = true"]) + [""]
        lines += ["[rules.frequency]", "n = 3", "safety_range = 10", "",
                  RULES[case.rules][1]]
        # the audit judges the outside intruder on magnitude tables, as tau-Argus does
        protect = {"cost": "value", "singleton": "false"}
    else:
        cells = count_cells(case, data, work)
        lines = ["[input]", f'cells = "{cells}"', f"dimensions = {json.dumps(list(case.dims))}",
                 'value = "freq"', 'freq = "freq"', 'status = "status"', 'upl = "upl"',
                 'lpl = "lpl"', 'spl = "spl"', 'kind = "frequency"', ""]
        for k, d in enumerate(case.dims):
            lines += [f"[hierarchies.{d}]", f'file = "{cells.with_name("leaves.csv")}"',
                      f'columns = ["grp{k + 1}", "{d}"]', ""]
        protect = {"cost": "freq", "singleton": "true"}
    lines += ["[protect]", f'method = "{case.method}"', f'cost = "{protect["cost"]}"',
              f"singleton = {protect['singleton']}", f"time_limit = {case.time_limit}", ""]
    job = work / "job.toml"
    job.write_text("\n".join(lines))
    return job


def count_leaves(case: Case, data: Path):
    """The leaf rows of a count table: the README's file, or a generated 25^3 table of the
    same kind (20 leaves in 4 groups per dimension, many small counts; seeded)."""
    import numpy as np
    import pandas as pd
    if case.source:
        return pd.read_csv(data / "counts" / case.source, dtype=str)
    rng = np.random.default_rng(27)
    letters = "abc"
    codes = [[f"{letters[k]}g{g}l{g * 5 + i - 4:02d}" for g in range(1, 5) for i in range(5)]
             for k in range(3)]
    grid = np.stack(np.meshgrid(*[np.arange(20)] * 3, indexing="ij"), -1).reshape(-1, 3)
    lam = rng.gamma(0.6, 12.0 / 0.6, size=len(grid))
    freq = rng.poisson(lam)
    frame = pd.DataFrame({f"dim{k + 1}": np.asarray(codes[k])[grid[:, k]] for k in range(3)})
    frame["value"] = (freq * 50.0).round(2).astype(str)
    frame["freq"] = freq.astype(str)
    for k in range(3):
        frame[f"grp{k + 1}"] = frame[f"dim{k + 1}"].str[:3]
    return frame


def count_table(case: Case, data: Path, leaves=None):
    """The count table of ``case`` (totals included) with GaussSuppression's problem: a
    primary is a count 1-2 (totals too; zeros published), protected when an intruder's
    upper bound reaches count + 1 and the interval is at least 2 wide (UPL 1, SPL 2)."""
    import numpy as np
    from tabprotect.model import Hierarchy, Table
    leaves = count_leaves(case, data) if leaves is None else leaves
    hs = {d: Hierarchy.from_columns(leaves, [f"grp{k + 1}", d], total="Total")
          for k, d in enumerate(case.dims)}
    frame = leaves[list(case.dims) + ["freq"]].copy()
    frame["freq"] = frame["freq"].astype(float)
    t = Table.from_frame(frame, hs, value="freq", freq="freq", compute_totals=True,
                         kind="frequency")
    primary = (t.freq > 0) & (t.freq <= 2)
    return t.replace(status=np.where(primary, "U", t.status), upl=np.where(primary, 1.0, 0.0),
                     lpl=np.zeros(t.n_cells), spl=np.where(primary, 2.0, 0.0))


def count_cells(case: Case, data: Path, work: Path) -> Path:
    """:func:`count_table` as the job's cells file (and its leaves as ``leaves.csv``)."""
    import numpy as np
    leaves = count_leaves(case, data)
    leaves.to_csv(work / "leaves.csv", index=False)
    table = count_table(case, data, leaves)
    out = table.to_frame(("freq", "upl", "lpl", "spl"))
    out["status"] = np.where(table.status == "U", "U", "")
    path = work / "cells.csv"
    out.to_csv(path, index=False)
    return path


# ---------------------------------------------------------------- tabprotect
def child_tabprotect(args) -> None:
    """(child process) Import, warm up on a small table with the same method, then time
    ``pipeline.run(job)`` and the writing of its outputs; stage times and the pattern
    go to ``args.result``."""
    t0 = time.perf_counter()
    sys.path.insert(0, args.code)
    from tabprotect import pipeline
    from tabprotect.io.job import load_job
    from tabprotect.io.results import write_outputs
    import tabprotect.secondary as secondary
    t_import = time.perf_counter() - t0
    import numpy as np
    from tabprotect.model.synthetic import preset
    job = load_job(args.job)
    opts = job.section("protect")
    small = preset("2d-small", seed=1)
    # gauss runs a table this small as plain Python: ask for the compiled kernel, so
    # that numba is loaded before the timed call, as in any warm process
    compiled = {"kernel": "compiled"} if opts["method"] == "gauss" else {}
    tw = time.perf_counter()
    try:
        secondary.protect(small, method=opts["method"], singleton=opts["singleton"],
                          time_limit=60, **compiled)
    except Exception:             # noqa: BLE001 -- a primary the attack makes unprotectable
        secondary.protect(small, method=opts["method"], singleton=False, time_limit=60,
                          **compiled)
    warm_up = time.perf_counter() - tw
    captured = {"stages": []}
    original = secondary.protect

    def recording(*a, **k):       # keeps protect()'s own stage times for the profile
        res = original(*a, **k)
        captured["stages"].append(dict(getattr(res, "stage_seconds", {}) or {}))
        captured["method_seconds"] = res.method_seconds
        captured["audit_seconds"] = res.audit_seconds
        return res
    secondary.protect = recording
    calls, cpus, timings = [], [], []
    for _ in range(max(1, args.warm_repeat)):   # the median of the calls (a loaded machine)
        cpu0 = time.process_time()
        ts = time.perf_counter()
        result = pipeline.run(job)
        calls.append(time.perf_counter() - ts)
        cpus.append(time.process_time() - cpu0)
        timings.append(dict(result.timings))
    call, call_cpu = statistics.median(calls), statistics.median(cpus)
    from tabprotect.io import results as results_io
    writes, summaries = [], []
    for _ in range(max(1, args.warm_repeat)):   # the median, as for the calls
        tw = time.perf_counter()
        with tempfile.TemporaryDirectory() as out:
            write_outputs(result, out)
        writes.append(time.perf_counter() - tw)
        tw = time.perf_counter()
        results_io.run_summary(result)          # the writing's public summary alone
        summaries.append(time.perf_counter() - tw)
    writing, summary = statistics.median(writes), statistics.median(summaries)
    secondary.protect = original
    import tabprotect.parallel as parallel
    pool = getattr(parallel, "_DEFAULT_POOL", None)
    methods = {}
    if args.all_methods:          # protect() warm with every method on the same table
        table = pipeline.run(job, task="primary").table if "rules" in job.spec \
            else result.table
        table = table.replace(status=np.where(table.status == "M", "S", table.status))
        for name in sorted(secondary.METHODS):
            if getattr(secondary.METHODS[name].capabilities, "adjusts_values", False):
                continue          # cta publishes adjusted values: no suppression pattern
            secondary.protect(small, method=name, singleton=False, time_limit=60,
                              **({"kernel": "compiled"} if name == "gauss" else {}))
            c0, t1 = time.process_time(), time.perf_counter()
            res = secondary.protect(table, method=name, cost=opts.get("cost", "value"),
                                    singleton=opts["singleton"], time_limit=120)
            methods[name] = {"wall": time.perf_counter() - t1, "cpu": time.process_time() - c0,
                             "secondary": res.n_secondary, "cost": res.cost,
                             "passed": res.passed}
    status = result.status
    json.dump({"import": t_import, "warm_up": warm_up, "call": call, "writing": writing,
               "summary": summary,
               "cpu": call_cpu, "call_runs": [round(c, 3) for c in calls],
               "cpu_runs": [round(c, 3) for c in cpus], "timings": _median_stages(timings),
               "stages": _median_stages(captured["stages"]),
               "method_seconds": captured.get("method_seconds"),
               "audit_seconds": captured.get("audit_seconds"),
               "passed": result.passed, "status": "".join(status.tolist()),
               "pool_started": bool(pool is not None and pool._executor is not None),
               "methods": methods,
               "n_cells": int(len(status))}, open(args.result, "w"))


def _median_stages(runs: list[dict]) -> dict:
    """Per stage, the median of its seconds over the calls (a stage missing from a call
    counts as 0 there)."""
    keys = dict.fromkeys(k for r in runs for k in r)
    return {k: statistics.median(float(r.get(k, 0.0)) for r in runs) for k in keys}


def install(code: str, dest: Path, methods: list[str]) -> str:
    """A copy of the code tree's packages as an installation has them: bytecode compiled
    (as pip does; the cold runs then do not compile sources, whatever
    PYTHONDONTWRITEBYTECODE says) and the compiled-kernel cache filled by one small run
    of each method (a user's first run; gauss asked for its compiled kernel, which it
    does not use on so small a table by default). Returns the copy's path."""
    import shutil
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for package in ("tabprotect", "solvers"):
        shutil.copytree(Path(code) / package, dest / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(dest)], check=True,
                   capture_output=True)
    first = ("import sys\nfrom tabprotect.model.synthetic import preset\n"
             "from tabprotect.secondary import protect\n"
             "for m in sys.argv[1:]:\n"
             "    kw = {'kernel': 'compiled'} if m == 'gauss' else {}\n"
             "    protect(preset('2d-small', seed=1), method=m, singleton=False, "
             "time_limit=60, **kw)\n")
    subprocess.run([sys.executable, "-c", first, *methods], check=True, cwd=dest,
                   env=dict(os.environ, PYTHONPATH=str(dest)), capture_output=True)
    return str(dest)


def run_cli(code: str, job: Path, out: Path, timeout: float) -> dict:
    """``tabprotect protect job.toml`` in a new process (the user's cold run)."""
    env = dict(os.environ, PYTHONPATH=code)
    cmd = [sys.executable, "-m", "tabprotect.cli", "protect", str(job), "-o", str(out),
           "--quiet"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, env=env, cwd=code, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout:.0f} s"}
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    row = {"wall": wall, "cpu": (after.ru_utime + after.ru_stime) -
           (before.ru_utime + before.ru_stime), "exit": p.returncode}
    summary = out / "summary.json"
    if summary.exists():
        s = json.loads(summary.read_text())
        row["secondary"] = s.get("status_counts", {}).get("M")
        row["verdict"] = s.get("verdict")
    if p.returncode not in (0, 1):
        row["error"] = (p.stderr.strip().splitlines() or ["?"])[-1][:200]
    return row


def median_run(runs: list[dict]) -> dict:
    """One row for repeated cold runs (or peer runs): the median wall, CPU (and a peer's
    call) seconds (each run's CPU seconds kept as ``cpu_runs``); the first failed run
    when any failed."""
    failed = [r for r in runs if "error" in r or "wall" not in r]
    if failed or len(runs) == 1:
        return (failed or runs)[0]
    row = dict(runs[-1])
    row.update(wall=statistics.median(r["wall"] for r in runs),
               cpu=statistics.median(r["cpu"] for r in runs),
               cpu_runs=[round(r["cpu"], 3) for r in runs])
    if all(r.get("call") is not None for r in runs):   # a peer's call after its import
        row["call"] = statistics.median(r["call"] for r in runs)
    return row


def run_startup(code: str) -> float:
    """Seconds to start the CLI: import and build the parser, in a new process."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import tabprotect.cli as c; c.build_parser()"],
                   env=dict(os.environ, PYTHONPATH=code), cwd=code, check=True)
    return time.perf_counter() - t0


def run_warm(code: str, job: Path, work: Path, timeout: float,
             all_methods: bool = False, repeat: int = 1) -> dict:
    result = work / f"warm-{abs(hash(code)) % 10**6}.json"
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--code", code,
           "--job", str(job), "--result", str(result), "--warm-repeat", str(repeat)] + (
        ["--all-methods"] if all_methods else [])
    try:
        p = subprocess.run(cmd, env=dict(os.environ, PYTHONPATH=code), cwd=code,
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout:.0f} s"}
    if p.returncode != 0 or not result.exists():
        return {"error": (p.stderr.strip().splitlines() or ["?"])[-1][:200]}
    return json.loads(result.read_text())


def cli_status(case: Case, table, path: Path):
    """The final statuses of a CLI run (its confidential ``cells.csv``) on our table."""
    import numpy as np
    import pandas as pd
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    mine = table.to_frame(())
    index = {k: i for i, k in
             enumerate("|".join(r) for r in mine[list(case.dims)].itertuples(index=False))}
    st = np.full(table.n_cells, "S")
    for k, s in zip(("|".join(r) for r in frame[list(case.dims)].itertuples(index=False)),
                    frame["status"]):
        if k in index:
            st[index[k]] = s[:1].upper() or "S"
    return st


# ---------------------------------------------------------------- peers
TAU_SCRIPT = r"""
import json, sys, time
t0 = time.perf_counter()
import pandas as pd
from pytauargus import protect
t_import = time.perf_counter() - t0
spec = json.loads(sys.argv[1])
micro = pd.read_csv(spec["micro"], dtype={d: str for d in spec["dims"]})
micro = micro[spec["dims"] + ["turnover"]]
hrc = {d: p for d, p in spec["hrc"].items() if d in spec["dims"]}
t1 = time.perf_counter()
res = protect(micro, spec["dims"], "turnover", safety_rules=spec["rules"],
              suppress=spec["suppress"], hrc=hrc, hierleadstring="@", totcode="Total",
              workdir=spec["work"])
call = time.perf_counter() - t1
tab = res.tables[0]
frame = tab.dataframe()
frame["tau_status"] = tab.status()
frame[spec["dims"] + ["tau_status"]].to_csv(spec["out"], index=False)
print(json.dumps({"import": t_import, "call": call}))
"""

GAUSS_SCRIPT = r"""
t0 <- proc.time()[["elapsed"]]
suppressPackageStartupMessages(library(GaussSuppression))
args <- commandArgs(trailingOnly = TRUE)
dims <- strsplit(args[2], ",")[[1]]
d <- read.csv(args[1], colClasses = "character")
d$freq <- as.numeric(d$freq)
t1 <- proc.time()[["elapsed"]]
dimvar <- as.vector(rbind(dims, paste0("grp", seq_along(dims))))
out <- SuppressSmallCounts(data = d, dimVar = dimvar, freqVar = "freq", maxN = 2,
                           protectZeros = FALSE, protectionIntervals = TRUE,
                           printInc = FALSE)
t2 <- proc.time()[["elapsed"]]
write.csv(out, args[3], row.names = FALSE)
cat(sprintf('{"import": %.3f, "call": %.3f}\n', t1 - t0, t2 - t1))
"""


def run_peer(case: Case, data: Path, work: Path, args) -> dict:
    """The peer in a new process; its pattern as a CSV of codes and statuses."""
    out = work / "peer.csv"
    if case.kind == "enterprise":
        if not args.peer_python:
            return {"error": "pytauargus not given (--peer-python)"}
        ent = data / "enterprise"
        spec = {"micro": str(ent / "micro.csv.gz"), "dims": list(case.dims),
                "hrc": {"region": str(ent / "region.hrc"),
                        "industry": str(ent / "industry.hrc")},
                "rules": RULES[case.rules][0], "suppress": case.peer,
                "work": str(work / "tau"), "out": str(out)}
        cmd = [args.peer_python, "-c", TAU_SCRIPT, json.dumps(spec)]
    else:
        if not args.rscript:
            return {"error": "R not given (--rscript)"}
        script = work / "gauss.R"
        script.write_text(GAUSS_SCRIPT)
        cmd = [args.rscript, str(script), str(work / "leaves.csv"), ",".join(case.dims),
               str(out)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.peer_timeout,
                           cwd=work)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {args.peer_timeout:.0f} s"}
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0 or not out.exists():
        return {"error": (p.stderr.strip().splitlines() or ["?"])[-1][:200]}
    row = json.loads(p.stdout.strip().splitlines()[-1])
    row.update(wall=wall, cpu=(after.ru_utime + after.ru_stime) -
               (before.ru_utime + before.ru_stime), pattern=str(out))
    return row


def peer_status(case: Case, table, path: str):
    """The peer's pattern on our table: suppressed cells (its primaries and secondaries)."""
    import numpy as np
    import pandas as pd
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    if case.kind == "enterprise":
        suppressed = frame["tau_status"].str.upper().isin(["U", "M", "D", "B", "F", "A"]) | \
            frame["tau_status"].str.lower().str.contains("unsafe|secondary|primary")
    else:
        suppressed = frame["suppressed"].str.upper() == "TRUE"
    keys = ["|".join(r) for r in frame[list(case.dims)].itertuples(index=False)]
    mine = table.to_frame(())
    index = {k: i for i, k in
             enumerate("|".join(r) for r in mine[list(case.dims)].itertuples(index=False))}
    mask = np.zeros(table.n_cells, dtype=bool)
    missing = 0
    for k, s in zip(keys, suppressed.to_numpy()):
        i = index.get(k)
        if i is None:
            missing += int(s)
        elif s:
            mask[i] = True
    return mask, missing


# ---------------------------------------------------------------- audit
def judge(case: Case, table, suppressed, levels=None) -> dict:
    """The independent exact audit of a pattern (intervals; the verdict on large tables)."""
    import numpy as np
    from tabprotect.audit import audit
    from tabprotect.secondary.base import cost_vector
    t = table if levels is None else table.replace(upl=levels[0], lpl=levels[1])
    status = t.status.copy()
    primary = status == "U"
    status[suppressed & ~primary] = "M"
    t = t.replace(status=status)
    # exact either way; past INTERVAL_AUDIT_MAX_CELLS only the verdict's LPs (as protect()
    # itself does on large components), so the judge finishes on a loaded machine
    mode = "intervals" if table.n_cells <= INTERVAL_AUDIT_MAX_CELLS else "verdict"
    res = audit(t, singleton=case.kind == "counts", time_limit=AUDIT_SECONDS, mode=mode)
    cost = cost_vector(table, "value" if case.kind == "enterprise" else "freq")
    sec = status == "M"
    undecided = np.zeros(table.n_cells, bool)
    if getattr(res, "incomplete", None) is not None:
        undecided[np.asarray(res.incomplete, bool)] = True
    return {"passed": bool(res.passed), "mode": mode,
            "short": int((primary & ~res.protected & ~undecided).sum()),
            "undecided": int((primary & undecided).sum()),
            "published_primaries": int((primary & ~suppressed).sum()),
            "secondary": int(sec.sum()), "cost": float(cost[sec].sum())}


def complete_peer(case: Case, table, suppressed) -> dict:
    """The peer's pattern made safe by tabprotect: its cells kept suppressed, the case's
    method and protect()'s audit and repair on top; the result judged independently.
    What a user of the peer would publish after fixing the shortfalls our audit finds."""
    from tabprotect.secondary import protect
    status = table.status.copy()
    status[suppressed & (status != "U")] = "M"
    counts = case.kind == "counts"
    res = protect(table.replace(status=status), method=case.method,
                  cost="freq" if counts else "value", singleton=counts,
                  time_limit=case.time_limit)
    return judge(case, table, (res.status == "U") | (res.status == "M"))


def tau_levels(case: Case, data: Path, table):
    """tau-Argus' own protection levels (``lvl_tau`` of the README's problem files) on our
    cells, or None when the case has no problem file."""
    import numpy as np
    import pandas as pd
    name = {("p", 2): "2d_p", ("nk", 2): "2d_nk", ("p", 3): "3d_p", ("nk", 3): "3d_nk"}
    path = data / "enterprise" / "problems" / name[(case.rules, len(case.dims))] / \
        "cells.csv.gz"
    if not path.exists():
        return None
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    mine = table.to_frame(())
    index = {k: i for i, k in
             enumerate("|".join(r) for r in mine[list(case.dims)].itertuples(index=False))}
    lvl = np.zeros(table.n_cells)
    for k, v in zip(("|".join(r) for r in frame[list(case.dims)].itertuples(index=False)),
                    frame["lvl_tau"].astype(float)):
        if k in index:
            lvl[index[k]] = v
    return lvl, np.minimum(lvl, np.abs(table.value))


# ---------------------------------------------------------------- table
def fmt(x, digits=2) -> str:
    if x is None:
        return ""
    if isinstance(x, str):
        return x
    return f"{x:,.{digits}f}" if abs(x) < 1e5 else f"{x:,.0f}"


def verdict(j: dict | None) -> str:
    if not j:
        return ""
    if j["passed"]:
        return "PASSED"
    if j.get("undecided") and not j["short"]:
        return f"UNDECIDED ({j['undecided']} primaries not judged in {AUDIT_SECONDS:.0f} s)"
    return f"FAILED ({j['short']} short" + (f", {j['undecided']} undecided)"
                                            if j.get("undecided") else ")")


def render(rows: list[dict], command: str, profile: bool) -> str:
    out = ["# Everyday tables against the peers (`benchmarks/bench_peers.py`)", "",
           "```", command, "```", "",
           "Wall seconds (CPU seconds of the process tree in brackets). tabprotect: the CLI "
           "job cold (`tabprotect protect job.toml`, a new process) and the Python call warm "
           "(`pipeline.run(job)` after a warm-up on a small table), each code tree run from "
           "an installed copy (bytecode compiled, compiled-kernel cache filled by one small "
           "run; `--in-place`: the tree as it is). The peer: a new "
           "process (tau-Argus through pytauargus; GaussSuppression through Rscript), its "
           "call time after import in brackets behind the wall time. Secondaries and cost "
           "are counted on our table; the verdicts are tabprotect's exact audit (intervals; the "
           "verdict's LPs above 2,500 cells) of each pattern (magnitude tables: outside intruder, with our levels / with "
           "tau-Argus' `lvl_tau`; count tables: with the single-contributor attack). "
           "Ratio: the peer's time over tabprotect's (above 1: tabprotect faster).", ""]
    repeats = {len(t.get("cli", {}).get("cpu_runs", [])) for r in rows
               for t in r["tab"].values()} - {0}
    if repeats:
        out += [f"The CLI job cold: the median of {'/'.join(map(str, sorted(repeats)))} "
                f"runs per code tree (`--cold-repeat`).", ""]
    warm_repeats = {len(t.get("warm", {}).get("call_runs", [])) for r in rows
                    for t in r["tab"].values()} - {0, 1}
    if warm_repeats:
        out += [f"The warm call: the median of {'/'.join(map(str, sorted(warm_repeats)))} "
                f"calls in its process (`--warm-repeat`).", ""]
    peer_repeats = {len(r.get("peer", {}).get("cpu_runs", [])) for r in rows} - {0}
    if peer_repeats:
        out += [f"The peer: the median of {'/'.join(map(str, sorted(peer_repeats)))} runs "
                f"(`--peer-repeat`).", ""]
    head = ("| case | code | tabprotect cold s (CPU) | warm call s (CPU) | secondaries | cost "
            "| audit | peer | peer s (CPU) [call] | peer secondaries | peer cost | peer audit "
            "| ratio cold | ratio warm/call |")
    out += [head, "|" + "---|" * 14]
    for r in rows:
        for code, tab in r["tab"].items():
            cli, warm, mine = tab.get("cli", {}), tab.get("warm", {}), tab.get("judge")
            peer, pj = r.get("peer", {}), r.get("peer_judge")
            if "error" in cli or "error" in warm or not (cli or warm):
                err = cli.get("error") or warm.get("error")
                out.append(f"| {r['case']} | {code} | {err} |" + " |" * 12)
                continue
            rc = peer["wall"] / cli["wall"] if peer.get("wall") and cli.get("wall") else None
            rw = peer.get("call") / warm["call"] if peer.get("call") and warm.get("call") \
                else None
            peer_time = (f"{fmt(peer['wall'])} ({fmt(peer['cpu'])}) [{fmt(peer['call'])}]"
                         if "wall" in peer else peer.get("error", ""))
            mine_v = verdict(mine) + (f" / {verdict(tab.get('judge_tau'))}"
                                      if tab.get("judge_tau") else "")
            peer_v = verdict(pj) + (f" / {verdict(r.get('peer_judge_tau'))}"
                                    if r.get("peer_judge_tau") else "")
            out.append(
                f"| {r['case']} ({r['cells']:,} cells, {r['method']}) | {code} "
                f"| {fmt(cli.get('wall'))} ({fmt(cli.get('cpu'))}) "
                f"| {fmt(warm.get('call'))} ({fmt(warm.get('cpu'))}) "
                f"| {mine['secondary'] if mine else ''} | {fmt(mine['cost'], 0) if mine else ''} "
                f"| {mine_v} | {r['peer_name']} | {peer_time} "
                f"| {pj['secondary'] if pj else ''} | {fmt(pj['cost'], 0) if pj else ''} "
                f"| {peer_v} | {fmt(rc)} | {fmt(rw)} |")
    completed = [r for r in rows if r.get("peer_completed")]
    if completed:
        out += ["", "## The peer's failing pattern made safe by tabprotect", "",
                "Its cells kept suppressed, the case's method and protect()'s audit and "
                "repair on top (`--complete-peer`), judged by the same independent audit.",
                "", "| case | peer | peer secondaries | peer cost | completed secondaries "
                "| completed cost | completed audit |", "|---|---|---|---|---|---|---|"]
        seen = set()
        for r in completed:
            if r["case"] in seen:
                continue
            seen.add(r["case"])
            pj, pc = r["peer_judge"], r["peer_completed"]
            out.append(f"| {r['case']} | {r['peer_name']} | {pj['secondary']} "
                       f"| {fmt(pj['cost'], 0)} | {pc['secondary']} | {fmt(pc['cost'], 0)} "
                       f"| {verdict(pc)} |")
    method_rows = [(r["case"], code, m, v) for r in rows for code, tab in r["tab"].items()
                   for m, v in (tab.get("warm", {}).get("methods") or {}).items()]
    if method_rows:
        out += ["", "## protect() warm with every method (same table, same process)", "",
                "| case | code | method | wall s | CPU s | secondaries | cost | protect()'s "
                "audit |", "|---|---|---|---|---|---|---|---|"]
        for case, code, m, v in method_rows:
            out.append(f"| {case} | {code} | {m} | {fmt(v['wall'])} | {fmt(v['cpu'])} "
                       f"| {v['secondary']} | {fmt(v['cost'], 0)} "
                       f"| {'PASSED' if v['passed'] else 'FAILED'} |")
    if profile:
        out += ["", "## Profile of the whole run (seconds)", "",
                "Start-up: a new process importing the CLI and building its parser. The "
                "other stages are from the warm call (`Run.timings` and protect()'s own "
                "stages) and the writing of its outputs (of which the public summary: "
                "`run_summary`, its figures checked by LPs).", ""]
        stage_names = []
        for r in rows:
            for tab in r["tab"].values():
                for k in tab.get("warm", {}).get("stages", {}) or {}:
                    if k not in stage_names and not k.startswith("audit "):
                        stage_names.append(k)
        cols = ["start-up", "build table", "primary rules", "protect", *stage_names,
                "audits", "information loss", "writing", "of which summary", "worker pool"]
        out += ["| case | code | " + " | ".join(cols) + " |", "|" + "---|" * (len(cols) + 2)]
        for r in rows:
            for code, tab in r["tab"].items():
                warm = tab.get("warm", {})
                if "error" in warm or not warm:
                    continue
                tm, st = warm.get("timings", {}), warm.get("stages", {}) or {}
                protect = next((v for k, v in tm.items() if k.startswith("protect")), None)
                later = sum(v for k, v in st.items() if k.startswith("audit ")) or None
                vals = [tab.get("startup"), tm.get("build table"), tm.get("primary rules"),
                        protect, *[st.get(k) for k in stage_names], later,
                        tm.get("information loss"), warm.get("writing"),
                        warm.get("summary"), "started" if warm.get("pool_started") else "no"]
                out.append(f"| {r['case']} ({r['method']}) | {code} | " +
                           " | ".join(fmt(v) for v in vals) + " |")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- main
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "benchmarks" / "peers"),
                    help="folder with enterprise/ and counts/ (the peers' README beside)")
    ap.add_argument("--cases", nargs="*", default=None,
                    help=f"cases to run (default all: {', '.join(c.name for c in CASES)})")
    ap.add_argument("--base", default=None,
                    help="a second tabprotect code tree run in the same run (before/after)")
    ap.add_argument("--peer-python", default=None,
                    help="a Python with pytauargus installed (tau-Argus' engine)")
    ap.add_argument("--rscript", default=None,
                    help="Rscript of an R with GaussSuppression installed")
    ap.add_argument("--peer-figures", action="store_true",
                    help="quote the README's peer figures (labelled) where a peer is missing")
    ap.add_argument("--profile", action="store_true", help="add the stage profile")
    ap.add_argument("--methods", nargs="+", default=None,
                    help="tabprotect's methods on every case (default: the case's own); "
                         "the peer runs once per case")
    ap.add_argument("--in-place", action="store_true",
                    help="run the code trees as they are (default: an installed copy of "
                         "each, bytecode compiled and kernels cached, see install())")
    ap.add_argument("--all-methods", action="store_true",
                    help="the warm call: also protect() with every method (a table of their "
                         "wall and CPU seconds)")
    ap.add_argument("--modes", nargs="+", choices=["cold", "warm"], default=["cold", "warm"],
                    help="tabprotect runs: the CLI job cold, the Python call warm (the "
                         "independent audit judges the warm call's pattern, else the CLI's)")
    ap.add_argument("--complete-peer", action="store_true",
                    help="a peer pattern that fails the audit is also completed by "
                         "tabprotect (its cells kept; the case's method, audit and repair "
                         "on top) and judged: the cost of making it safe")
    ap.add_argument("--warm-repeat", type=int, default=1, metavar="N",
                    help="the warm call N times in its process: the median wall and CPU "
                         "seconds (and of each profiled stage and the writing)")
    ap.add_argument("--peer-repeat", type=int, default=1, metavar="N",
                    help="run the peer N times per case: the median wall, CPU and call "
                         "seconds (its pattern from the last run)")
    ap.add_argument("--cold-repeat", type=int, default=1, metavar="N",
                    help="run the CLI job cold N times per code tree and report the median "
                         "wall and CPU seconds (a loaded machine's noise)")
    ap.add_argument("--time-limit", type=float, default=None,
                    help="[protect] time_limit of every case (default: the case's)")
    ap.add_argument("--timeout", type=float, default=1800.0,
                    help="seconds before a tabprotect process is stopped")
    ap.add_argument("--peer-timeout", type=float, default=1800.0)
    ap.add_argument("--work", default=None, help="scratch folder (default: a new temp dir)")
    ap.add_argument("--out", default=str(HERE / "results" / "peers.md"))
    ap.add_argument("--json", default=None, help="also write the raw rows as JSON")
    ap.add_argument("--from-json", nargs="+", default=None, metavar="JSON",
                    help="run nothing: write one table from the rows of earlier runs' "
                         "--json files (each run's command is listed above the table)")
    # child mode
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--code", default=str(ROOT), help=argparse.SUPPRESS)
    ap.add_argument("--job", help=argparse.SUPPRESS)
    ap.add_argument("--result", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child_tabprotect(args)
        return 0
    if args.from_json:
        rows = [r for f in args.from_json for r in json.loads(Path(f).read_text())]
        commands = list(dict.fromkeys(r.get("command", "") for r in rows))
        Path(args.out).write_text(render(rows, "\n".join(c for c in commands if c),
                                         args.profile))
        print(Path(args.out).read_text())
        return 0
    sys.path.insert(0, str(ROOT))
    import dataclasses
    import numpy as np
    from tabprotect import pipeline
    from tabprotect.io.job import build_table, load_job
    data = Path(args.data).resolve()
    work = Path(args.work or tempfile.mkdtemp(prefix="bench_peers_"))
    codes = {"this": str(ROOT)}
    if args.base:
        codes = {"base": str(Path(args.base).resolve()), "this": str(ROOT)}
    chosen = [c for c in CASES if args.cases is None or c.name in args.cases]
    if not args.in_place:
        methods = sorted({m for c in chosen for m in (args.methods or [c.method])})
        codes = {name: install(code, work / f"install-{name}", methods)
                 for name, code in codes.items()}
    rows = []
    command = "python benchmarks/bench_peers.py " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    for case in chosen:
        if args.time_limit is not None:
            case = dataclasses.replace(case, time_limit=args.time_limit)
        cw = work / case.name.replace("^", "")
        job = write_inputs(case, data, cw)
        print(f"[{time.strftime('%H:%M:%S')}] {case.name}", file=sys.stderr, flush=True)
        # the table with tabprotect's primaries and levels (the count jobs give them)
        table = pipeline.run(load_job(job), task="primary").table \
            if case.kind == "enterprise" else build_table(load_job(job))
        levels = tau_levels(case, data, table) if case.kind == "enterprise" else None
        peer_row = {"peer": median_run([run_peer(case, data, cw, args)
                                        for _ in range(args.peer_repeat)])}
        peer_row["peer_name"] = "tau-Argus " + case.peer.split("(")[0] \
            if case.kind == "enterprise" else "GaussSuppression"
        if "error" in peer_row["peer"] and args.peer_figures:
            wall, cpu, sec = PEER_FIGURES[case.name]
            peer_row["peer"] = {"wall": wall, "cpu": cpu, "call": None,
                                "error": f"README figures ({peer_row['peer']['error']})"}
            peer_row["peer_name"] += " (README figures, not run here)"
        peer = peer_row["peer"]
        if "pattern" in peer:
            mask, missing = peer_status(case, table, peer["pattern"])
            peer_row["peer_judge"] = judge(case, table, mask)
            peer_row["peer_missing"] = missing
            if levels is not None:
                peer_row["peer_judge_tau"] = judge(case, table, mask, levels)
            if args.complete_peer and not peer_row["peer_judge"]["passed"]:
                peer_row["peer_completed"] = complete_peer(case, table, mask)
        for method in args.methods or [case.method]:
            rows.append(_run_tabprotect(dataclasses.replace(case, method=method), data,
                                        cw / method, table, levels, peer_row, codes, args))
            rows[-1]["command"] = command
            Path(args.out).write_text(render(rows, command, args.profile))
            if args.json:
                Path(args.json).write_text(json.dumps(rows, indent=1, default=str))
        print(f"  peer: {peer.get('wall')} {peer_row.get('peer_judge')}", file=sys.stderr,
              flush=True)
    print(Path(args.out).read_text())
    return 0


def _run_tabprotect(case: Case, data: Path, cw: Path, table, levels, peer_row: dict,
                    codes: dict[str, str], args) -> dict:
    """One case with one method: each code tree cold and warm, each pattern judged."""
    import numpy as np
    job = write_inputs(case, data, cw)
    row = {"case": case.name, "cells": table.n_cells, "method": case.method,
           "primaries": int((table.status == "U").sum()), "tab": {}, **peer_row}
    for code_name, code in codes.items():
        tab = {"startup": run_startup(code), "cli": {}, "warm": {}}
        out = cw / f"out-{code_name}"
        if "cold" in args.modes:
            tab["cli"] = median_run([run_cli(code, job, out, args.timeout)
                                     for _ in range(args.cold_repeat)])
        if "warm" in args.modes:
            tab["warm"] = run_warm(code, job, cw, args.timeout, args.all_methods,
                                   args.warm_repeat)
        st = None
        if "status" in tab["warm"] and tab["warm"]["n_cells"] == table.n_cells:
            st = np.array(list(tab["warm"].pop("status")))
        elif (out / "cells.csv").exists():
            st = cli_status(case, table, out / "cells.csv")
        if st is not None:
            suppressed = (st == "U") | (st == "M")
            tab["judge"] = judge(case, table, suppressed)
            if levels is not None:
                tab["judge_tau"] = judge(case, table, suppressed, levels)
        row["tab"][code_name] = tab
        print(f"  {case.method} {code_name}: cold {tab['cli'].get('wall')}, warm "
              f"{tab['warm'].get('call')}, {tab.get('judge')}", file=sys.stderr, flush=True)
    return row


if __name__ == "__main__":
    sys.exit(main())
