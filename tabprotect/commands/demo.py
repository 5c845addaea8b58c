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
  tabprotect demo --job demo_audit      writes ./tabprotect-demo_audit/
  tabprotect demo --output demo-run
"""

# Bundled demo jobs: the full pipeline on the synthetic business survey (primary rules ->
# secondary suppression -> audit), and the audit of a small pre-suppressed table.
DEMO_JOBS = ("demo", "demo_audit")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", metavar="FOLDER", default=None,
                   help="output folder (default ./tabprotect-demo, or ./tabprotect-JOB for "
                   "--job JOB)")
    p.add_argument("--job", choices=DEMO_JOBS, default=DEMO_JOBS[0],
                   help="which bundled demo job to run")
    p.add_argument("--method", help="secondary-suppression method (overrides the job's "
                   "[protect] method)")
    p.add_argument("--time-limit", type=float, default=None,
                   help="seconds for the protection method (overrides [protect] time_limit)")
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


def _protects(folder) -> bool:
    """Whether the bundled job in ``folder`` has a ``[protect]`` section."""
    import tomllib
    return "protect" in tomllib.loads((folder / "job.toml").read_text(encoding="utf-8"))


def run(args) -> int:
    from tabprotect.commands.common import execute
    from tabprotect.io.job import load_job

    start = time.perf_counter()
    name, folder = bundled_job(args.job)
    if (args.method or args.time_limit is not None) and not _protects(folder):
        raise InputError(f"demo --job {name}: --method and --time-limit set [protect] keys; "
                         f"this job has no [protect] (it audits a given pattern)")
    out = Path(args.output or ("tabprotect-demo" if name == "demo"
                               else f"tabprotect-{name}")).resolve()
    job_dir = out / "job"
    _copy_tree(folder, job_dir)
    print(f"demo job '{name}' copied to {job_dir} (re-run it with any command, e.g. "
          f"tabprotect report {job_dir / 'job.toml'})")
    job = load_job(job_dir / "job.toml")
    overrides = None
    if "protect" in job.spec and (args.method or args.time_limit is not None):
        overrides = {"protect": {"method": args.method, "time_limit": args.time_limit}}
    args.output = str(out)
    result, code = execute(args, "demo", task="auto", overrides=overrides, report=True,
                           job=job)
    table = result.published if result.published is not None else result.table
    print(f"table: {table.n_cells} cells, {int((table.status == 'U').sum())} primary unsafe, "
          f"{int((table.status == 'M').sum())} secondary suppressions"
          + (f" ({result.method})" if result.method else ""))
    if result.audit is not None:
        _print_intervals(table, result.audit)
    print(f"report: {result.outputs['report']}  (open it in a browser)")
    print(f"done in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return code


def _print_intervals(table, audit, limit: int = 12) -> None:
    from tabprotect.io.output import column_decimals, format_number
    # primary cells first: they are the ones the protection is for
    cells = sorted((i for i in range(table.n_cells) if audit.unpublished[i]),
                   key=lambda i: table.status[i] != "U")
    d = column_decimals(table.value)    # numbers at the table's precision

    def num(x):
        return format_number(x, d)
    bounds = getattr(audit, "figures", "intervals") == "bounds"
    print("bounds on the feasibility intervals of the suppressed cells (verdict audit: "
          "the interval holds [min at most, max at least])" if bounds else
          "feasibility intervals of the suppressed cells (what an intruder can derive):")
    for i in cells[:limit]:
        req = ""
        if table.status[i] == "U":
            req = (f"  needs [{num(audit.required_lower[i])}, {num(audit.required_upper[i])}]"
                   f"  {'protected' if audit.protected[i] else 'NOT PROTECTED'}")
        shown = (f"interval holds [{num(audit.min_at_most[i])}, {num(audit.max_at_least[i])}]"
                 if bounds else f"interval [{num(audit.lower[i])}, {num(audit.upper[i])}]")
        print(f"  {table.status[i]} {table.cell_name(i):<32} value {num(table.value[i]):>10}  "
              f"{shown}{req}")
    if len(cells) > limit:
        print(f"  ... {len(cells) - limit} more in the audit file")


COMMANDS = {"demo": (add_arguments, run, "run the bundled demo job and write its HTML report",
                     EXAMPLES)}
