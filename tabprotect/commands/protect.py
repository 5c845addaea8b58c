"""``tabprotect protect JOB.toml``: primary rules + secondary suppression + audit.

Writes ``<output.dir>/protected.csv`` (the published table: suppressed values blanked,
status letters, the intruder's interval for every suppressed cell) and
``<output.dir>/protect_summary.json``; prints the summary.  Exit code 0 when the audit
passed, 1 when it did not (the table must then not be published), 2 on bad input.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from tabprotect.errors import InputError
from tabprotect.io.job import build_table, load_job, write_frame

EXAMPLES = """  tabprotect protect job.toml                          rules, optimal suppression, audit
  tabprotect protect job.toml --time-limit 60          best pattern within 60 s (audited)
  tabprotect protect job.toml --method modular --cost unity
  tabprotect protect job.toml --flag                   keep a 'published' column
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("job", help="TOML job file: [input] (or [microdata]), [rules] unless the "
                   "cells file has a status column, optional [protect]")
    p.add_argument("-o", "--output", help="published table (CSV/Parquet; default "
                   "<output.dir>/protected.csv)")
    p.add_argument("--method", help="secondary method (default: [protect] method or optimal)")
    p.add_argument("--cost", help="unity, freq, value, log or column (default: value)")
    p.add_argument("--time-limit", type=float, default=None,
                   help="seconds for the secondary method (the best pattern is returned)")
    p.add_argument("--no-singleton", action="store_true",
                   help="do not model single-contributor attackers")
    p.add_argument("--flag", action="store_true",
                   help="add a 'published' column next to the blanked values")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.add_argument("--report", action="store_true",
                   help="also write report.html and its JSON audit trail (report.json)")


def run(args) -> int:
    job = load_job(args.job)
    opts = job.section("protect")
    say = _progress_printer(args.quiet)
    table = build_table(job)
    primary_note = ""
    if (table.status == "U").any():
        primary_note = "primary cells from the status column (rules not applied)"
    elif "rules" in job.spec:
        from tabprotect.primary import apply_rules  # imported lazily: another module
        result = apply_rules(table, job.section("rules"), base=job.base)
        table = result.table
        primary_note = "primary cells from [rules]"
    else:
        raise InputError(f"{job.label}: no primary cells: give a [rules] section or a status "
                         f"column with U cells in [input]")
    from tabprotect.secondary import protect

    method = args.method or opts.get("method", "optimal")
    cost = args.cost or opts.get("cost", "value")
    time_limit = args.time_limit if args.time_limit is not None else opts.get("time_limit")
    singleton = not args.no_singleton and bool(opts.get("singleton", True))
    # the method's options (checked by protect(): an unknown key is an input error)
    extra = {k: v for k, v in opts.items()
             if k not in ("method", "cost", "time_limit", "singleton", "cost_column",
                          "empty", "output", "flag")}
    t0 = time.perf_counter()
    res = protect(table, method=method, cost=cost, time_limit=time_limit, progress=say,
                  singleton=singleton, cost_column=opts.get("cost_column"),
                  empty=opts.get("empty", "publish"), options=extra)
    if say is not None:
        say("done", 1.0)
    out = Path(args.output) if args.output else job.output_dir() / opts.get(
        "output", "protected.csv")
    frame = res.to_frame()
    if not (args.flag or bool(opts.get("flag", False))):
        frame = frame.drop(columns="published")
    write_frame(frame, out)
    summary = res.summary()
    summary["primary_source"] = primary_note
    summary["notes"] = res.notes
    summary["solver"] = {k: v for k, v in res.solver.items()
                         if isinstance(v, (int, float, str, bool))}
    summary["wall_seconds"] = round(time.perf_counter() - t0, 3)
    summary_path = out.with_name(out.stem + "_summary.json")
    summary_path.write_text(json.dumps(summary, indent=2, default=float))
    print_summary(summary)
    print(f"published table written to {out}")
    print(f"summary written to {summary_path}")
    if args.report:
        from tabprotect.report import Run, write_report
        html, trail = write_report(Run(table, title=job.spec.get("job", {}).get(
            "title", "tabprotect protect"), kind="suppression", method=method,
            published=res.confidential_table, audit=res.audit, parameters=job.spec,
            results={k: v for k, v in summary.items() if not isinstance(v, dict)}),
            out.parent)
        print(f"report written to {html} (audit trail {trail})")
    return 0 if res.passed else 1


def print_summary(s: dict) -> None:
    gap = "" if s["proven_optimal"] or s["mip_gap"] is None else f" (gap {s['mip_gap']:.2%})"
    print(f"cells: {s['cells']}   primary: {s['primary']}   secondary: {s['secondary']}   "
          f"method: {s['method']}")
    print(f"cost: {s['cost']:.6g}   value suppressed: {s['value_suppressed']:.6g} "
          f"({s['share_value_suppressed']:.2%} of the table's total value)")
    print(f"optimal: {'proven' if s['proven_optimal'] else 'not proven'}{gap}   "
          f"solver: {s['solver_status']}   method {s['method_seconds']:.2f} s, "
          f"audit {s['audit_seconds']:.2f} s")
    print(f"audit: {s['audit']}   unprotected primary cells: {s['unprotected_primary']}"
          + (f"   repaired: {s['repaired']} cell(s)" if s["repaired"] else ""))
    for note in s.get("notes", []):
        print(f"note: {note}")


def _progress_printer(quiet: bool):
    if quiet or not sys.stderr.isatty():
        return None
    start = time.perf_counter()

    def say(message: str, fraction: float) -> None:
        print(f"\rprotect [{time.perf_counter() - start:7.1f} s] {message[:70]:<70}",
              end="" if fraction < 1 else "\n", file=sys.stderr, flush=True)
    return say


COMMANDS = {"protect": (add_arguments, run, "primary rules + secondary suppression + audit: "
                        "write the publishable table", EXAMPLES)}
