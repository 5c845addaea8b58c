"""``tabprotect audit JOB.toml``: feasibility intervals of a suppressed table.

The statuses come from the cells file (U and M suppressed) or, with ``[rules]``, from the
rules; the pipeline (task ``audit``) audits them and writes ``audit.csv``,
``published.csv`` (or ``UNSAFE-not-for-publication.csv``), ``cells.csv``, ``summary.json``
and ``trail.json``.
"""
from __future__ import annotations

import argparse

from tabprotect.commands.common import add_job_arguments, execute

EXAMPLES = """  tabprotect audit job.toml                  status column of the cells file says U/M
  tabprotect audit job.toml --integer        integer intervals (frequency tables)
  tabprotect audit job.toml --singleton      also attack as each single contributor
  tabprotect audit job.toml --published-only-margins   audit "only margins published"
  tabprotect audit job.toml --verdict-only --workers 2   large patterns: verdict only
  tabprotect audit job.toml --empty suppress  empty cells were suppressed too (an X may be 0)
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_job_arguments(p, "TOML job file ([input] with a status column)")
    p.add_argument("--integer", action="store_true", default=None,
                   help="integer min/max (default for frequency tables)")
    p.add_argument("--singleton", action="store_true", default=None,
                   help="also audit against each single-contributor attacker")
    p.add_argument("--published-only-margins", action="store_true",
                   help="treat every inner cell as unpublished")
    p.add_argument("--time-limit", type=float, default=None, help="seconds for the audit")
    p.add_argument("--verdict-only", action="store_true",
                   help="decide only whether each primary cell is protected (much faster on "
                        "large patterns; intervals are exact only where flagged)")
    p.add_argument("--workers", type=int, default=None,
                   help="processes for independent components (default 1)")
    p.add_argument("--all-cells", action="store_true", help="write every cell to audit.csv, "
                   "not only the unpublished ones")
    p.add_argument("--empty", choices=("publish", "suppress"), default=None,
                   help="the publication's empty cells (default publish, as protect's): "
                        "shown Z, so a suppressed count is at least 1; or suppressed too")


def run(args) -> int:
    overrides = {"audit": {
        "integer": args.integer, "singleton": args.singleton, "time_limit": args.time_limit,
        "published": "margins" if args.published_only_margins else None,
        "mode": "verdict" if args.verdict_only else None, "workers": args.workers,
        "empty": args.empty}}
    result, code = execute(args, "audit", task="audit", overrides=overrides,
                           audit_all_cells=args.all_cells)
    print_summary(result)
    return code


def print_summary(result) -> None:
    s = result.audit.summary()
    table = result.table
    print(f"cells: {table.n_cells}   unpublished: {s['unpublished']}   "
          f"primary: {s['primary']}")
    print(f"unprotected primary cells: {s['unprotected_primary']}   exactly disclosed: "
          f"{s['exactly_disclosed']}   LPs solved: {s['lp_solved']} (skipped "
          f"{s['lp_skipped']}) in {s['components']} component(s), {s['seconds']:.2f} s")
    if s["mode"] == "verdict":
        print(f"verdict mode: {s['certified_by_witness']} primary cells proven protected "
              f"by feasible tables found, without an LP of their own")
    for i in result.audit.shortfalls[:5]:
        print(f"  not protected: {table.cell_name(i)}")


COMMANDS = {"audit": (add_arguments, run, "audit a suppressed table: feasibility intervals "
                      "and protection verdict", EXAMPLES)}
