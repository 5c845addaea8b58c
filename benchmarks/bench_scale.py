"""Secondary suppression at scale: modular, hypercube, gauss and greedy on generated
hierarchical tables (10k, 100k, 1M cells; 3-D and 4-D) and on Castro's tables.

Each (method, table) runs in its own process (clean peak-memory numbers, a hard timeout):
the method through :func:`tabprotect.secondary.protect` (method, then full-table audit and
repair -- verdict-mode audit and local repair from 50k cells -- within ``--audit-limit``
seconds); tables up to ``--audit-max`` cells are audited a second time (intervals mode).  Reported: method seconds, audit+repair seconds, peak RSS,
number and value of secondaries, audit verdict, and the cost ratio to the optimum where
an optimum is known.  With ``--tau-mod``, tau-Argus' modular method (MOD) runs on the same
tables through pytauargus' batch engine (its Linux HiTaS library), its pattern judged by
OUR audit: on a generated table from the records behind it (drawn again), on a Castro
table from the table itself (tabular input: a ``.tab`` file with codes, value, cost,
status and protection levels, ``.hrc`` hierarchies) when the table is a product of
hierarchies; the row says "not available" (with the reason) when pytauargus is missing
or the table is no such product.  Castro tables are used in their integer version
(``bench_optimal.integer_table``, the version tau-Argus' engines can read) by every
method of the run, so all patterns protect the same table.

Usage::

    python benchmarks/bench_scale.py --quick            # 10k tables only
    python benchmarks/bench_scale.py --tables 1m-3d --methods gauss hypercube
    python benchmarks/bench_scale.py --out benchmarks/results/scale.md
    python benchmarks/bench_scale.py --tables 10k-3d --methods modular hypercube --tau-mod
    python benchmarks/bench_scale.py --tables --castro TARGUS TABLE8 --methods modular \
        --tau-mod --optimum castro:TARGUS castro:TABLE8
    python benchmarks/bench_scale.py --tables 100k-4d --methods modular --audit-workers 1 \
        --independent-verdict --time-limit 600 --audit-limit 300
    python benchmarks/bench_scale.py --tables 1k-3d 10k-3d --methods modular --base BASE \
        --option subtable_milp=true   # before/after in one run, with a method option
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: the code tree measured: this one, or in a child process of ``--base`` the base tree
CODE = Path(os.environ.get("BENCH_SCALE_CODE") or HERE.parent)
sys.path.insert(0, str(CODE))
sys.path.insert(0, str(HERE))

GENERATED = ["10k-3d", "10k-4d", "100k-3d", "100k-4d", "1m-3d", "1m-4d"]
METHODS = ["greedy", "hypercube", "gauss", "modular"]
TAU_MOD = "tau-mod"  # tau-Argus' modular method through pytauargus (--tau-mod)


def load(name: str):
    if name.startswith("castro:"):
        from bench_optimal import integer_table
        from castro import load_castro
        return integer_table(load_castro(name.split(":", 1)[1]))
    import gen_tables
    return gen_tables.preset(name, seed=2024)


def run_one(method: str, name: str, time_limit: float, audit_max: int,
            audit_limit: float, cost_name: str = "value", audit_workers: int = 1,
            independent_verdict: bool = False, options: dict | None = None) -> dict:
    """One measurement in this process (called in a child process).

    ``independent_verdict``: the final pattern judged again by a separate
    ``audit(..., mode="verdict")`` call (``verdict_again``, its seconds).
    ``options``: the method's options, as keywords of protect()."""
    import numpy as np
    from tabprotect.audit import audit
    from tabprotect.secondary import METHODS as REG, protect
    from tabprotect.secondary.base import cost_vector

    audit_budget = audit_limit or None   # 0: protect()'s default
    t0 = time.perf_counter()
    table = load(name)
    load_s = time.perf_counter() - t0
    cost = cost_vector(table, cost_name)
    row = {"table": name, "method": method, "cells": table.n_cells, "cost_function": cost_name,
           "primaries": int((table.status == "U").sum()), "load_s": round(load_s, 2)}
    if method not in REG:
        row["error"] = "method not registered"
        return row
    try:
        # protect(): the method, then the audit (verdict mode from 50k cells) and repair
        # (local from 50k cells), all within time_limit + --audit-limit seconds (the
        # budget of the whole call; protect() gives the method its share)
        res = protect(table, method=method, cost=cost_name,
                      time_limit=time_limit + (audit_budget or 0.0),
                      singleton=False, audit_workers=audit_workers, **(options or {}))
        status = res.status
        finished = res.audit.complete
        row.update(total_s=round(res.seconds, 2), method_s=round(res.method_seconds, 2),
                   audit_s=round(res.audit_seconds, 2), repaired=int(len(res.repaired)),
                   audit_mode=res.audit.mode,
                   verdict=("PASSED" if res.passed else
                            f"FAILED ({len(res.audit.shortfalls)} short)" if finished else
                            "audit unfinished in its time limit"),
                   solver_status=res.solver_status, stages=res.stage_seconds)
        if method == "modular":
            d = res.solver
            row["modular"] = {k: d.get(k) for k in (
                "budget_seconds", "solves", "skipped", "fast", "late", "unsolved",
                "backtracks", "margin_retries", "waves", "wave_seconds")}
        if os.environ.get("BENCH_SAVE_STATUS"):
            # the final pattern, for audits after the run
            import numpy as np
            out_dir = Path(os.environ["BENCH_SAVE_STATUS"])
            out_dir.mkdir(parents=True, exist_ok=True)
            np.save(out_dir / f"{name.replace(':', '_')}_{method}.npy", status)
        if independent_verdict:
            t1 = time.perf_counter()
            again = audit(res.confidential_table, singleton=False, mode="verdict",
                          time_limit=audit_budget)
            row["verdict_again"] = ("passed" if again.passed else
                                    f"FAILED ({len(again.shortfalls)} short)" if again.complete
                                    else "unfinished in its time limit")
            row["verdict_again_s"] = round(time.perf_counter() - t1, 1)
        if table.n_cells <= audit_max:
            # judged again by an independent audit call (intervals mode)
            # (same attacker as the protection, and a time limit: with single-contributor
            # attackers and no limit, the interval audit of a 10k-4d modular pattern takes
            # several times as long as protect() and the verdict audit together)
            again = audit(res.confidential_table, singleton=False, time_limit=audit_budget)
            row["audit_again"] = bool(again.passed) if again.complete else None
        sec = status == "M"
        row["secondaries"] = int(sec.sum())
        row["cost"] = float(cost[sec].sum())
        row["value_secondary"] = float(np.abs(table.value[sec]).sum())
    except Exception as exc:  # recorded, not hidden: the table shows the failure
        row["error"] = f"{type(exc).__name__}: {exc}"[:200]
    row["peak_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return row


def run_optimal(name: str, time_limit: float, cost_name: str = "value") -> dict:
    """The optimal method's cost on a (small) table, for the ratio column."""
    from tabprotect.secondary.base import cost_vector
    from tabprotect.secondary.optimal import optimal
    table = load(name)
    c = cost_vector(table, cost_name)
    out = optimal(table, c, time_limit=time_limit, singleton=False)
    return {"table": name, "method": "optimal", "cost": float(c[out.status == "M"].sum()),
            "proven": bool(out.proven_optimal),
            "lower_bound": out.details.get("lower_bound")}


def generated_microdata(name: str, seed: int = 2024):
    """The enterprise records behind a generated table (``gen_tables.generate`` draws
    them before aggregating; the same random draws in the same order give them back).

    Returns (table, columns dict: one leaf code per dimension + ``turnover``).  Raises
    ValueError when the records do not add up to the table (generator changed)."""
    import numpy as np
    import gen_tables
    from tabprotect.model import aggregate_leaves

    table = gen_tables.preset(name, seed=seed)
    branchings = gen_tables.PRESETS[name]
    # the same draws as gen_tables.generate (defaults: 6 enterprises, dispersion 0.8)
    rng = np.random.default_rng(seed)
    hs = [d.hierarchy for d in table.dimensions]
    inner = np.ones(1, dtype=bool)
    for h in hs:
        inner = np.logical_and.outer(inner, h.is_leaf).ravel()
    inner_idx = np.flatnonzero(inner)
    lam = rng.gamma(0.8, 6.0 / 0.8, size=len(inner_idx))
    counts = rng.poisson(lam)
    owner = np.repeat(np.arange(len(inner_idx)), counts)
    turnover = np.round(rng.lognormal(4.0, 1.3, size=len(owner)), 0) + 1.0
    value = np.zeros(table.n_cells)
    value[inner_idx] = np.bincount(owner, weights=turnover, minlength=len(inner_idx))
    if len(branchings) != len(hs) or not np.allclose(aggregate_leaves(value, hs),
                                                     table.value):
        raise ValueError(f"records do not add up to {name} (gen_tables changed?)")
    cell = inner_idx[owner]
    cols = {}
    for d, dim in enumerate(table.dimensions):
        codes = np.asarray([tau_code(c) for c in dim.hierarchy.codes], dtype=object)
        cols[dim.name] = list(codes[table.positions[d][cell]])
    cols["turnover"] = turnover.tolist()
    return table, cols


def tau_code(code: str) -> str:
    """A code as given to tau-Argus: its modular method (HiTaS) crashes (segmentation
    fault, pytauargus 0.6) on codes containing a dot, e.g. ``R1.2``."""
    return code.replace(".", "_")


def write_hrc_file(hierarchy, path: Path, lead: str = "@") -> None:
    """A tau-Argus ``.hrc`` file: every code below the total, depth-first, indented by
    one ``lead`` per level below the first."""
    import numpy as np
    depth = hierarchy.depth
    lines = []

    def walk(p: int) -> None:
        for c in hierarchy.children[p]:
            lines.append(lead * (int(depth[c]) - 1) + tau_code(hierarchy.codes[c]))
            walk(c)

    walk(int(np.flatnonzero(np.asarray(depth) == 0)[0]))
    path.write_text("\n".join(lines) + "\n")


def tauargus_tabular(table, cost, work: Path, max_minutes: int):
    """tau-Argus MOD on a table given as a table (no records): a general table whose
    relations are a product of hierarchies (``product_structure``), written as a tau-Argus
    tabular input -- ``.tab`` (one line per non-empty cell: codes, value, frequency, cost,
    status ``S``/``U``/``P``, lower and upper protection level of primaries), ``.rda``
    (``<HIERARCHICAL>`` variables with ``.hrc`` code lists), ``.arb`` (``<READTABLE>``,
    ``<SAFETYRULE>`` empty = the given statuses, ``<SUPPRESS> MOD``, ``<WRITETABLE>``).

    Returns the status array in ``table``'s cell order.  Raises ``InputError`` when the
    table is no product of hierarchies (HiTaS needs explanatory variables with code
    hierarchies).  Not passed on: a-priori bounds (pytauargus 0.6 does not implement
    the ``AB`` a-priori change; tau-Argus assumes its own cell bounds), contributor counts
    (the Castro files have none: 10 each, singleton options off)."""
    import numpy as np
    from pytauargus.engine import run_batch
    from tabprotect.model.structure import product_structure

    prod = product_structure(table)
    source = prod.extra["source_cell"]
    names = [f"v{d}" for d in range(len(prod.dimensions))]

    def code(d: int, k: int) -> str:
        h = prod.dimensions[d].hierarchy
        return "Total" if h.depth[k] == 0 else f"c{h.codes[k]}"

    rda = ['<SEPARATOR> ";"', "<SAFE> S", "<UNSAFE> U", "<PROTECT> P"]
    for d, dim in enumerate(prod.dimensions):
        h = dim.hierarchy
        rda += [f'{names[d]} "" ""', "  <RECODABLE>", '  <TOTCODE> "Total"']
        if int(h.depth.max()) >= 2:
            lines: list[str] = []

            def walk(k: int) -> None:
                for child_code in h.children[k]:
                    lines.append("@" * (int(h.depth[child_code]) - 1) + code(d, child_code))
                    walk(child_code)

            walk(int(np.flatnonzero(h.depth == 0)[0]))
            hrc = work / f"{names[d]}.hrc"
            hrc.write_text("\n".join(lines) + "\n")
            rda += ["  <HIERARCHICAL>", f'  <HIERCODELIST> "{hrc}"', '  <HIERLEADSTRING> "@"']
    rda += ['value "" ""', "  <NUMERIC>", "  <DECIMALS> 0", 'freq "" ""', "  <FREQUENCY>",
            'cost "" ""', "  <NUMERIC> <COSTVAR>", 'status "" ""', "  <STATUS>",
            'lpl "" ""', "  <NUMERIC> <LOWERPL>", 'upl "" ""', "  <NUMERIC> <UPPERPL>"]
    (work / "table.rda").write_text("\n".join(rda) + "\n")
    lines = []
    for i in range(prod.n_cells):
        j = int(source[i])
        st = str(table.status[j])
        if st == "Z" or (table.value[j] == 0 and st != "U"):
            continue  # empty cell: not submitted (tau-Argus skips value-0 cells too)
        letter = "U" if st == "U" else "P" if (st == "P" or table.lb[j] == table.ub[j]) \
            else "S"
        codes = [code(d, int(prod.positions[d][i])) for d in range(len(names))]
        lpl = f"{table.lpl[j]:.0f}" if st == "U" else ""
        upl = f"{table.upl[j]:.0f}" if st == "U" else ""
        lines.append(";".join(codes + [f"{table.value[j]:.0f}", "10",
                                       f"{max(float(cost[j]), 1e-4):.10g}", letter, lpl, upl]))
    (work / "table.tab").write_text("\n".join(lines) + "\n")
    out = work / "out.tab"
    arb = [f'<OPENTABLEDATA> "{work / "table.tab"}"', f'<OPENMETADATA> "{work / "table.rda"}"',
           "<SPECIFYTABLE> " + "".join(f'"{v}"' for v in names) + '|"value"||"cost"',
           "<SAFETYRULE>", "<READTABLE> 0", f"<SUPPRESS> MOD(1,{max_minutes},0,0,0)",
           f'<WRITETABLE> (1,5,SO+,"{out}")']
    (work / "batch.arb").write_text("\n".join(arb) + "\n")
    run_batch(str(work / "batch.arb"))
    # the written table: codes, value, freq, cost, status, ... per cell
    lookup = [{code(d, k): k for k in range(len(dim.hierarchy.codes))}
              for d, dim in enumerate(prod.dimensions)]
    strides = np.cumprod((1,) + tuple(prod.shape[::-1]))[:-1][::-1]
    status = table.status.copy()
    for line in out.read_text().splitlines():
        fields = [f.strip().strip('"').strip() for f in line.split(";")]
        if len(fields) < len(names) + 4:
            continue
        i = sum(int(strides[d]) * lookup[d][fields[d]] for d in range(len(names)))
        j = int(source[i])
        if fields[len(names) + 3] == "M" and status[j] != "U":
            status[j] = "M"
    return status


def run_tauargus(name: str, audit_limit: float = 300.0, max_minutes: int = 1,
                 cost_name: str = "value") -> dict:
    """tau-Argus' modular method (MOD) through pytauargus' batch engine; its pattern
    judged by OUR audit (our protection levels, no repair).

    Generated tables: on their records, with the generator's rules -- p%-rule p=15
    against one contributor (``P(15,1)``) and minimum frequency 3 with a 10 % range
    (``FREQ(3,10)``); tau-Argus computes its own protection levels from them.  Castro
    tables: tabular input with our statuses and protection levels
    (:func:`tauargus_tabular`).  ``max_minutes``: MOD's time limit per sub-table."""
    import tempfile
    import numpy as np
    row = {"table": name, "method": "tau-Argus MOD (pytauargus)"}
    try:
        import pytauargus
    except ImportError as exc:
        row["error"] = f"not available: pytauargus not installed ({exc.name})"
        return row
    from tabprotect.audit import audit
    from tabprotect.errors import InputError
    from tabprotect.secondary.base import cost_vector
    work = Path(tempfile.mkdtemp(prefix="tau_mod_"))
    # (a child process) the native engines write their logs into the working directory
    os.chdir(work)
    if name.startswith("castro:"):
        table = load(name)
        cost = cost_vector(table, cost_name)
        row.update(cells=table.n_cells, primaries=int((table.status == "U").sum()),
                   cost_function=cost_name)
        t0 = time.perf_counter()
        try:
            status = tauargus_tabular(table, cost, work, max_minutes)
        except InputError as exc:
            row["error"] = f"not available: no product of hierarchies ({exc})"[:300]
            return row
        except Exception as exc:  # recorded, not hidden
            row["error"] = f"tau-Argus failed: {type(exc).__name__}: {exc}"[:200]
            return row
        row["method_s"] = round(time.perf_counter() - t0, 2)
        row["tau_primaries"] = int((status == "U").sum())
    else:
        try:
            table, cols = generated_microdata(name)
        except ValueError as exc:
            row["error"] = f"not available: {exc}"
            return row
        cost = cost_vector(table, cost_name)
        row.update(cells=table.n_cells, primaries=int((table.status == "U").sum()))
        dims = [d.name for d in table.dimensions]
        hrc = {}
        for d in table.dimensions:
            if int(d.hierarchy.depth.max()) >= 2:  # flat dimensions need no hierarchy file
                path = work / f"{d.name}.hrc"
                write_hrc_file(d.hierarchy, path)
                hrc[d.name] = str(path)
        t0 = time.perf_counter()
        try:
            res = pytauargus.protect(cols, tables=[dims], response="turnover",
                                     safety_rules="P(15,1)|FREQ(3,10)",
                                     suppress=f"MOD(1,{max_minutes},0,0,0)",
                                     hrc=hrc or None, hierleadstring="@", totcode="Total",
                                     workdir=str(work))
            rows = res.tables[0].rows
        except Exception as exc:  # recorded, not hidden
            row["error"] = f"tau-Argus failed: {type(exc).__name__}: {exc}"[:200]
            return row
        row["method_s"] = round(time.perf_counter() - t0, 2)
        # tau-Argus' statuses mapped back onto our cells by their codes
        status = table.status.copy()
        tau_primary = np.zeros(table.n_cells, bool)
        lookup = [{tau_code(c): i for i, c in enumerate(d.hierarchy.codes)}
                  for d in table.dimensions]
        strides = np.cumprod((1,) + tuple(table.shape[::-1]))[:-1][::-1]
        for r in rows:
            try:
                idx = sum(int(strides[k]) * lookup[k][str(r[dname]).strip()]
                          for k, dname in enumerate(dims))
            except KeyError:
                continue
            if r["status"] == "M" and status[idx] != "U":
                status[idx] = "M"
            tau_primary[idx] = r["status"] == "U"
        row["tau_primaries"] = int(tau_primary.sum())
        row["primaries_differ"] = int((tau_primary != (table.status == "U")).sum())
    t1 = time.perf_counter()
    protected = table.replace(status=status)
    mode = "verdict" if table.n_cells >= 50_000 else "intervals"
    a = audit(protected, singleton=False, mode=mode, time_limit=audit_limit)
    row["audit_s"] = round(time.perf_counter() - t1, 2)
    row["audit_mode"] = mode
    row["verdict"] = ("PASSED" if a.passed else
                      f"FAILED ({len(a.shortfalls)} short)" if a.complete else
                      f"audit unfinished in {audit_limit:.0f}s")
    sec = status == "M"
    row["secondaries"] = int(sec.sum())
    row["cost"] = float(cost[sec].sum())
    row["value_secondary"] = float(np.abs(table.value[sec]).sum())
    row["peak_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return row


def child(args) -> None:
    if args.one[0] == "optimal":
        out = run_optimal(args.one[1], args.time_limit, args.cost)
    elif args.one[0] == TAU_MOD:
        out = run_tauargus(args.one[1], args.audit_limit, args.tau_minutes, args.cost)
    else:
        out = run_one(args.one[0], args.one[1], args.time_limit, args.audit_max,
                      args.audit_limit, args.cost, args.audit_workers,
                      args.independent_verdict, options(args.option))
    print("RESULT " + json.dumps(out))


def options(pairs: list[str] | None) -> dict:
    """``KEY=VALUE`` pairs (values read as JSON, else kept as strings) as a dict."""
    out = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"--option {pair!r}: expected KEY=VALUE")
        try:
            out[key] = json.loads(value)
        except ValueError:
            out[key] = value
    return out


def measure(method: str, name: str, args, code: str | None = None) -> dict:
    """One (method, table) in a child process; ``code``: the code tree it imports
    (default this one)."""
    cmd = [sys.executable, __file__, "--one", method, name, "--time-limit",
           str(args.time_limit), "--audit-max", str(args.audit_max), "--audit-limit",
           str(args.audit_limit), "--tau-minutes", str(args.tau_minutes), "--cost", args.cost,
           "--audit-workers", str(args.audit_workers)]
    if args.independent_verdict:
        cmd.append("--independent-verdict")
    for pair in (args.base_option if code else args.option) or []:
        cmd += ["--option", pair]
    env = dict(os.environ, BENCH_SCALE_CODE=str(code or HERE.parent))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout,
                              env=env)
    except subprocess.TimeoutExpired:
        return {"table": name, "method": method, "error": f"killed after {args.timeout}s"}
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            row = json.loads(line[7:])
            row["wall_s"] = round(wall, 1)
            row["cpu_s"] = round((after.ru_utime + after.ru_stime)
                                 - (before.ru_utime + before.ru_stime), 1)
            return row
    if proc.returncode < 0:  # e.g. tau-Argus' native code crashing (SIGSEGV)
        return {"table": name, "method": method,
                "error": f"process ended by signal {-proc.returncode}"}
    return {"table": name, "method": method,
            "error": (proc.stderr.strip().splitlines() or ["no output"])[-1][:200]}


def fmt(x, nd=0):
    if x is None:
        return ""
    if isinstance(x, float):
        return f"{x:,.{nd}f}"
    return str(x)


def to_markdown(rows: list[dict], optimum: dict, command: str) -> str:
    lines = ["# Secondary suppression at scale (bench_scale.py)", "",
             f"- command: `{command}`",
             f"- machine: {platform.machine()}, {os.cpu_count()} cores, 24 GiB; Python "
             f"{platform.python_version()}; {time.strftime('%Y-%m-%d')}",
             "- cost function `" + (rows[0].get("cost_function", "value") if rows else "value")
             + "`; `singleton=False` (the generated tables contain "
             "totals equal to one single-contributor cell, which no pattern protects "
             "against that contributor); generated tables: seed 2024, rules p% (p=15) and "
             "minimum frequency 3 (benchmarks/gen_tables.py)", "",
             "| table | cells | primaries | method | total s | process CPU s | method s | "
             "audit+repair s | peak MB | secondaries | cost | cost / optimum | verdict | "
             "independent verdict audit | note |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        opt = optimum.get(r["table"])
        ratio = ""
        if opt and opt.get("cost") and r.get("cost") is not None:
            ratio = f"{r['cost'] / opt['cost']:.3f}" + ("" if opt.get("proven") else " (vs best known)")
        note = r.get("error", "")
        if r.get("repaired"):
            note = (note + f" repair added {r['repaired']}").strip()
        if r.get("audit_mode") == "verdict":
            note = (note + " verdict-mode audit").strip()
        if r.get("tau_primaries") is not None:
            note = (note + " tau-Argus' own pattern judged by our audit, no repair").strip()
        if r.get("primaries_differ"):
            note = (note + f" tau-Argus' primaries differ in {r['primaries_differ']} "
                    "cells").strip()
        again = ""
        if r.get("verdict_again"):
            again = f"{r['verdict_again']} ({r.get('verdict_again_s', 0):.0f} s)"
        if r.get("audit_again") is False:
            note = (note + " SECOND AUDIT FAILED").strip()
        lines.append(
            f"| {r['table']} | {fmt(r.get('cells'))} | {fmt(r.get('primaries'))} | "
            f"{r['method']} | {fmt(r.get('total_s'), 1)} | {fmt(r.get('cpu_s'), 1)} | "
            f"{fmt(r.get('method_s'), 1)} | "
            f"{fmt(r.get('audit_s'), 1)} | {fmt(r.get('peak_mb'))} | "
            f"{fmt(r.get('secondaries'))} | {fmt(r.get('cost'))} | {ratio} | "
            f"{r.get('verdict', '')} | {again} | {note} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--one", nargs=2, metavar=("METHOD", "TABLE"), help=argparse.SUPPRESS)
    ap.add_argument("--tables", nargs="*", default=None)
    ap.add_argument("--methods", nargs="*", default=METHODS)
    ap.add_argument("--castro", nargs="*", default=[],
                    help="Castro tables (names from benchmarks/castro.py)")
    ap.add_argument("--optimum", nargs="*", default=[],
                    help="tables whose optimum to compute for the ratio column")
    ap.add_argument("--quick", action="store_true", help="10k tables only")
    ap.add_argument("--time-limit", type=float, default=600.0)
    ap.add_argument("--timeout", type=float, default=1500.0)
    ap.add_argument("--audit-max", type=int, default=20_000,
                    help="tables up to this size are audited a second time (intervals)")
    ap.add_argument("--audit-limit", type=float, default=300.0,
                    help="seconds for protect()'s audit and repair (0: its default, the "
                         "method's time limit)")
    ap.add_argument("--audit-workers", type=int, default=1,
                    help="protect()'s audit_workers (processes for the audit's components)")
    ap.add_argument("--independent-verdict", action="store_true",
                    help="judge every final pattern again with a separate "
                         "audit(mode='verdict') call")
    ap.add_argument("--cost", default="value", help="cost function (value, unity, ...)")
    ap.add_argument("--tau-mod", action="store_true",
                    help="also run tau-Argus' modular method (MOD) through pytauargus on "
                         "each table (a 'not available' row when it cannot run)")
    ap.add_argument("--tau-minutes", type=int, default=1,
                    help="MOD's time limit per sub-table, minutes")
    ap.add_argument("--base", default=None, metavar="BASE",
                    help="a second code tree: every method also runs with it, same tables, "
                         "same run (rows marked 'base')")
    ap.add_argument("--option", action="append", default=None, metavar="KEY=VALUE",
                    help="a method option passed to protect() (value read as JSON); "
                         "repeatable; every method of this code tree")
    ap.add_argument("--base-option", action="append", default=None, metavar="KEY=VALUE",
                    help="the same for the --base tree")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    if args.one:
        child(args)
        return
    if args.tables is None:
        args.tables = [] if args.castro else (GENERATED[:2] if args.quick else GENERATED)
    tables = args.tables
    tables = list(tables) + [f"castro:{c}" for c in args.castro]
    rows = []
    optimum = {}
    for name in args.optimum:
        r = measure("optimal", name, args)
        optimum[name] = r
        print(json.dumps(r), flush=True)
    for name in tables:
        for m in args.methods:
            for code, label in ((None, ""), (args.base, " (base)")):
                if label and not code:
                    continue
                r = measure(m, name, args, code)
                r["method"] = r["method"] + label
                rows.append(r)
                print(json.dumps(r), flush=True)
        if args.tau_mod:
            r = measure(TAU_MOD, name, args)
            r["method"] = "tau-Argus MOD (pytauargus)"
            rows.append(r)
            print(json.dumps(r), flush=True)
    md = to_markdown(rows, optimum, "python benchmarks/bench_scale.py " + " ".join(
        a for a in (argv if argv is not None else sys.argv[1:])))
    if args.out:
        Path(args.out).write_text(md)
    print(md)


if __name__ == "__main__":
    main()
