"""``tabprotect report|compare|serve``: reports, method comparison and the HTTP service."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tabprotect.errors import InputError

REPORT_EXAMPLES = """  tabprotect report job.toml                 run the job's steps, write report.html + report.json
  tabprotect report job.toml --method modular   protect with another method
  tabprotect report job.toml -o out/my-report.html
"""

COMPARE_EXAMPLES = """  tabprotect compare job.toml                      methods from [compare] (default: all)
  tabprotect compare job.toml --methods optimal,modular,hypercube --time-limit 30
  tabprotect compare job.toml --report             also write compare_report.html
"""

SERVE_EXAMPLES = """  TABPROTECT_TOKENS=secret-token tabprotect serve --port 8000
  tabprotect serve --config service.toml      tokens, store path, limits, retention
"""


def print_progress(step: str, fraction: float) -> None:
    """Progress of long runs on stderr: ``[ 40%] protect (optimal)``."""
    print(f"[{100 * fraction:3.0f}%] {step}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- report
def add_report_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("job", help="TOML job file")
    p.add_argument("-o", "--output", help="report file (default: <output.dir>/report.html)")
    p.add_argument("--output-dir", help="folder for every output (overrides [output] dir)")
    p.add_argument("--method", help="protection method (overrides [protect] method)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")


def run_report(args) -> int:
    from tabprotect.io.job import load_job
    from tabprotect.report import run_job, write_report
    job = load_job(args.job)
    run = run_job(job, output_dir=args.output_dir, method=args.method,
                  progress=None if args.quiet else print_progress)
    target = Path(args.output) if args.output else job.output_dir(args.output_dir)
    html_path, json_path = write_report(run, target)
    verdict = {None: "no audit", True: "PASSED", False: "FAILED"}[run.passed]
    print(f"audit: {verdict}")
    for name, path in run.outputs.items():
        print(f"{name}: {path}")
    return 0 if run.passed in (None, True) else 1


# ---------------------------------------------------------------- compare
def add_compare_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("job", help="TOML job file (methods in [compare])")
    p.add_argument("--methods", help="comma-separated methods (overrides [compare] methods)")
    p.add_argument("--time-limit", type=float, help="seconds per method")
    p.add_argument("--output-dir", help="folder for compare.csv/json (overrides [output] dir)")
    p.add_argument("--report", action="store_true", help="also write compare_report.html + .json")
    p.add_argument("--quiet", action="store_true", help="no progress lines")


def run_compare(args) -> int:
    from tabprotect.compare import compare_job
    from tabprotect.io.job import build_table, load_job, write_frame
    from tabprotect.report import Run, _input_files, write_report
    job = load_job(args.job)
    progress = None if args.quiet else print_progress
    table = build_table(job)
    methods = [m.strip() for m in args.methods.split(",")] if args.methods else None
    result = compare_job(job, table, methods=methods, time_limit=args.time_limit,
                         progress=progress)
    out = job.output_dir(args.output_dir)
    csv_path = write_frame(result.frame, out / "compare.csv")
    json_path = result.write_json(out / "compare.json")
    print(result.frame.to_string(index=False))
    print(f"comparison written to {csv_path} and {json_path}")
    if args.report:
        run = Run(table=result.table, title=f"Method comparison: {job.label}", kind="compare",
                  comparison=result.frame, parameters=job.spec, inputs=_input_files(job),
                  timings={"compare": float(result.frame["seconds"].sum())})
        best = result.best()
        if best is not None:
            run.method = best.label
            run.published = best.published
            run.audit = best.audit
            run.notes.append(f"published table and audit shown for '{best.label}', the "
                             f"passing method with the least information loss")
        html_path, trail = write_report(run, out / "compare_report.html")
        print(f"report: {html_path}\naudit trail: {trail}")
    return 0 if result.frame["audit_passed"].fillna(False).astype(bool).all() else 1


# ---------------------------------------------------------------- serve
def add_serve_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="service TOML file ([service] section)")
    p.add_argument("--host", help="interface (default 127.0.0.1)")
    p.add_argument("--port", type=int, help="port (default 8000)")
    p.add_argument("--store", help="SQLite store path (default ./tabprotect-service/jobs.sqlite)")
    p.add_argument("--workers", type=int, help="jobs run at the same time (default 2)")


def run_serve(args) -> int:
    try:
        import uvicorn
    except ImportError:
        raise InputError("the service needs fastapi and uvicorn: pip install "
                         "'tabprotect[service]'") from None
    from tabprotect.service.app import create_app
    from tabprotect.service.config import load_config
    overrides = {k: v for k, v in (("host", args.host), ("port", args.port),
                                   ("store", args.store), ("workers", args.workers))
                 if v is not None}
    config = load_config(args.config, **overrides)
    app = create_app(config)
    print(f"tabprotect service on http://{config.host}:{config.port} "
          f"(store {config.store}, {config.workers} worker(s), "
          f"{len(config.principals)} principal(s)); endpoints at /docs (token needed)",
          file=sys.stderr)
    uvicorn.run(app, host=config.host, port=config.port, log_level=config.log_level)
    return 0


COMMANDS = {
    "report": (add_report_arguments, run_report,
               "run a job and write a self-contained HTML report plus a JSON audit trail",
               REPORT_EXAMPLES),
    "compare": (add_compare_arguments, run_compare,
                "run several protection methods on one table and compare their loss, risk, "
                "time and audit", COMPARE_EXAMPLES),
    "serve": (add_serve_arguments, run_serve, "run the HTTP service (FastAPI)",
              SERVE_EXAMPLES),
}
