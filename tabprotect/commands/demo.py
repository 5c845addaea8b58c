"""``tabprotect demo``: run the bundled demo job and write its report.

The demo data ship inside the package (``tabprotect/data/``, read with
``importlib.resources``), so the demo works from an installed package.  The job files are
copied into the output folder first, so the user can read and re-run them.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import time
from importlib import resources
from pathlib import Path

from tabprotect.errors import InputError

EXAMPLES = """  tabprotect demo                       writes ./tabprotect-demo/
  tabprotect demo --output /tmp/demo
"""

# Bundled demo jobs, best first: the full pipeline on the synthetic business survey
# (primary rules -> secondary suppression -> audit), else the audit of a small
# pre-suppressed table.
DEMO_JOBS = ("demo", "demo_audit")
DEMO_TIME_LIMIT = 20.0   # the demo must finish well under a minute


def demo_method(requested: str | None) -> str:
    """The method the demo uses: modular (HiTaS) scales best; optimal otherwise."""
    if requested:
        return requested
    from tabprotect.secondary import METHODS
    return "modular" if "modular" in METHODS else "optimal"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--output", default="tabprotect-demo",
                   help="output folder (default ./tabprotect-demo)")
    p.add_argument("--job", choices=DEMO_JOBS, help="which bundled demo job to run")
    p.add_argument("--method", help="secondary-suppression method (default: modular when "
                   "available, else optimal with a time limit)")
    p.add_argument("--time-limit", type=float, default=DEMO_TIME_LIMIT,
                   help=f"seconds for the protection method (default {DEMO_TIME_LIMIT:g})")
    p.add_argument("--quiet", action="store_true", help="no progress lines")


def _copy_tree(source, target: Path) -> None:
    """Copy a package-data folder (a Traversable) to a real folder."""
    target.mkdir(parents=True, exist_ok=True)
    for item in source.iterdir():
        if item.name.startswith((".", "__")):
            continue
        if item.is_dir():
            _copy_tree(item, target / item.name)
        else:
            with resources.as_file(item) as real:
                shutil.copyfile(real, target / item.name)


def bundled_job(name: str | None = None) -> tuple[str, object]:
    """The name and package-data folder of the demo job to run."""
    data = resources.files("tabprotect") / "data"
    for candidate in ([name] if name else DEMO_JOBS):
        folder = data / candidate
        if (folder / "job.toml").is_file():
            return candidate, folder
    raise InputError(f"demo job {name or DEMO_JOBS} not found in the installed package")


def run(args) -> int:
    from tabprotect.commands.report import print_progress
    from tabprotect.io.job import load_job
    from tabprotect.report import run_job, write_report

    start = time.perf_counter()
    out = Path(args.output).resolve()
    name, folder = bundled_job(args.job)
    job_dir = out / "job"
    _copy_tree(folder, job_dir)
    print(f"demo job '{name}' copied to {job_dir}")
    job = load_job(job_dir / "job.toml")
    progress = None if args.quiet else print_progress
    method = overrides = None
    if "protect" in job.spec:
        method = demo_method(args.method)
        overrides = {"time_limit": args.time_limit}
        if "singleton" not in job.section("protect"):
            # The bundled survey has single-child hierarchy codes, where a primary cell
            # equals its parent: a single contributor can always recompute it, so the
            # demo protects against outside intruders (said in the report).
            overrides["singleton"] = False
    run_ = run_job(job, output_dir=out, progress=progress, method=method,
                   protect_options=overrides)
    if overrides and overrides.get("singleton") is False:
        run_.notes.append("demo: protection and audit against outside intruders; the "
                          "single-contributor attack is not modelled (singleton = false)")
    table = run_.published if run_.published is not None else run_.table
    print(f"table: {table.n_cells} cells, {int((table.status == 'U').sum())} primary unsafe, "
          f"{int((table.status == 'M').sum())} secondary suppressions"
          + (f" ({run_.method})" if run_.method else ""))
    if run_.audit is not None:
        _print_intervals(table, run_.audit)
    html_path, json_path = write_report(run_, out / "report.html")
    print(f"audit: {'PASSED' if run_.passed else 'FAILED'}")
    for key in ("published", "audit"):
        if key in run_.outputs:
            print(f"{key}: {run_.outputs[key]}")
    print(f"audit trail: {json_path}")
    print(f"report: {html_path}  (open it in a browser)")
    print(f"done in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return 0 if run_.passed in (None, True) else 1


def _print_intervals(table, audit, limit: int = 12) -> None:
    # primary cells first: they are the ones the protection is for
    cells = sorted((i for i in range(table.n_cells) if audit.unpublished[i]),
                   key=lambda i: table.status[i] != "U")
    bounds = getattr(audit, "figures", "intervals") == "bounds"
    print("bounds on the feasibility intervals of the suppressed cells (verdict audit: "
          "the interval holds [min at most, max at least])" if bounds else
          "feasibility intervals of the suppressed cells (what an intruder can derive):")
    for i in cells[:limit]:
        req = ""
        if table.status[i] == "U":
            req = (f"  needs [{audit.required_lower[i]:g}, {audit.required_upper[i]:g}]  "
                   f"{'protected' if audit.protected[i] else 'NOT PROTECTED'}")
        print(f"  {table.status[i]} {table.cell_name(i):<32} value {table.value[i]:>10g}  "
              + (f"interval holds [{audit.min_at_most[i]:g}, {audit.max_at_least[i]:g}]"
                 if bounds else f"interval [{audit.lower[i]:g}, {audit.upper[i]:g}]")
              + req)
    if len(cells) > limit:
        print(f"  ... {len(cells) - limit} more in the audit file")


COMMANDS = {"demo": (add_arguments, run, "run the bundled demo job and write its HTML report",
                     EXAMPLES)}
