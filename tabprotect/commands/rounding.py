"""``tabprotect round JOB.toml`` and ``tabprotect audit-rounded JOB.toml``.

Both run the pipeline (tasks ``round`` and ``audit-rounded``) with the job's ``[round]``
section (docs/rounding.md; every key in docs/jobs.md); the options below override its
keys.  ``round`` writes ``published.csv`` (the rounded table; ``UNSAFE-not-for-
publication.csv`` when its audit failed), ``cells.csv``, ``audit.csv``, ``summary.json``
and ``trail.json``; ``audit-rounded`` reads a published rounded table and writes
``audit.csv``, ``summary.json`` and ``trail.json``.
"""
from __future__ import annotations

import argparse

from tabprotect.commands.common import add_job_arguments, execute
from tabprotect.errors import InputError

ROUND_EXAMPLES = """  tabprotect round job.toml                     method and base from [round]
  tabprotect round job.toml --method random --seed 7 --base 3
  tabprotect round job.toml --k-step 1          allow the K-step relaxation (3+ dimensions)
  tabprotect round job.toml --no-audit          skip the rounded-table audit
"""
AUDIT_EXAMPLES = """  tabprotect audit-rounded job.toml             [input] cells hold the published rounded values
  tabprotect audit-rounded job.toml --published margins   only the margins are published
  tabprotect audit-rounded job.toml --method deterministic --base 10
"""


def _common(p: argparse.ArgumentParser) -> None:
    add_job_arguments(p, "TOML job file with [input] and [round]")
    p.add_argument("--base", type=int, default=None, help="rounding base (overrides [round])")
    p.add_argument("--method", default=None,
                   choices=["deterministic", "random", "controlled", "small-count"],
                   help="rounding method (overrides [round])")
    p.add_argument("--k-step", type=int, default=None,
                   help="controlled: extra steps allowed when zero-restricted is infeasible")
    p.add_argument("--threshold", type=int, default=None, help="small-count threshold")
    p.add_argument("--published", choices=["all", "margins"], default=None,
                   help="audit: which cells the intruder sees")
    p.add_argument("--time-limit", type=float, default=None, help="solver seconds")


def add_round_arguments(p: argparse.ArgumentParser) -> None:
    _common(p)
    p.add_argument("--seed", type=int, default=None, help="random rounding seed")
    p.add_argument("--no-audit", action="store_true", help="do not audit the rounded table")
    p.add_argument("--report", action="store_true", help="also write report.html")


def add_audit_arguments(p: argparse.ArgumentParser) -> None:
    _common(p)
    p.add_argument("--flagged-only", action="store_true",
                   help="write only cells flagged narrower / exact / pinned")


def _overrides(args) -> dict:
    keys = {key: getattr(args, key, None) for key in
            ("base", "method", "k_step", "threshold", "published", "time_limit", "seed")}
    if getattr(args, "no_audit", False):
        keys["audit"] = False
    return {"round": keys}


#: [round] keys the audit of the rounded table alone reads
AUDIT_KEYS = ("published", "small_max")


def run_round(args) -> int:
    from tabprotect.io.job import load_job
    job = load_job(args.job)
    overrides = _overrides(args)
    section = {**job.section("round"),
               **{k: v for k, v in overrides["round"].items() if v is not None}}
    if not section.get("audit", True):
        unused = [k for k in AUDIT_KEYS if k in section]
        if unused:
            where = "--no-audit" if getattr(args, "no_audit", False) else "audit = false"
            raise InputError(f"{job.label} [round]: '{unused[0]}' applies to the audit of "
                             f"the rounded table, which {where} skips")
    result, code = execute(args, "round", task="round", overrides=overrides,
                           report=args.report, job=job)
    _print_rounding(result)
    return code


def run_audit(args) -> int:
    result, code = execute(args, "audit-rounded", task="audit-rounded",
                           overrides=_overrides(args), audit_flagged_only=args.flagged_only)
    _print_audit(result.audit)
    for n in result.notes:
        print(f"  note: {n}")
    return code


def _print_rounding(result) -> None:
    s = result.results
    print(f"rounding: {result.method}  cells: {result.table.n_cells}  "
          f"changed: {s.get('changed_cells')}  additive: {s.get('additive')}  "
          f"zero-restricted: {s.get('zero_restricted')}  solver: {s.get('solver_path')}")
    if "param_seed" in s:
        print(f"seed: {s['param_seed']}")
    if result.audit is not None:
        _print_audit(result.audit)
    for n in result.notes:
        print(f"  note: {n}")


def _print_audit(audit) -> None:
    s = audit.summary()
    print(f"narrower than the method: {s['narrower_than_method']}  exactly disclosed: "
          f"{s['exactly_disclosed']}  pinned small values: {s['pinned_small_values']}  "
          f"({s['lp_solved']} LPs, {s['seconds']:.2f} s)")


COMMANDS = {
    "round": (add_round_arguments, run_round,
              "round a frequency table (deterministic, random, controlled, small-count) and "
              "audit the result", ROUND_EXAMPLES),
    "audit-rounded": (add_audit_arguments, run_audit,
                      "what an intruder can derive from a published rounded table",
                      AUDIT_EXAMPLES),
}
