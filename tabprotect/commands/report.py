"""``tabprotect report|compare|serve``: reports, method comparison and the HTTP service."""
from __future__ import annotations

import argparse
import sys

from tabprotect.commands.common import add_job_arguments, execute
from tabprotect.errors import InputError

REPORT_EXAMPLES = """  tabprotect report job.toml                 run the job's steps, write report.html + outputs
  tabprotect report job.toml --method modular   protect with another method
  tabprotect report job.toml -o out/modular     another output folder
"""

COMPARE_EXAMPLES = """  tabprotect compare job.toml                      methods from [compare] (default: all)
  tabprotect compare job.toml --methods optimal,modular,hypercube --time-limit 30
  tabprotect compare job.toml --report             also write report.html
"""

SERVE_EXAMPLES = """  TABPROTECT_TOKENS=secret-token tabprotect serve --port 8000
  tabprotect serve --config service.toml      principals (token hashes), store, limits
"""


# ---------------------------------------------------------------- report
def add_report_arguments(p: argparse.ArgumentParser) -> None:
    add_job_arguments(p, "TOML job file")
    p.add_argument("--method", help="protection method (overrides [protect] method)")


def run_report(args) -> int:
    overrides = {"protect": {"method": args.method}} if args.method else None
    _, code = execute(args, "report", task="protect" if args.method else "auto",
                      overrides=overrides, report=True)
    return code


# ---------------------------------------------------------------- compare
def add_compare_arguments(p: argparse.ArgumentParser) -> None:
    add_job_arguments(p, "TOML job file (methods in [compare])")
    p.add_argument("--methods", help="comma-separated methods (overrides [compare] methods)")
    p.add_argument("--time-limit", type=float, help="seconds per method")
    p.add_argument("--report", action="store_true", help="also write report.html")


def run_compare(args) -> int:
    methods = [m.strip() for m in args.methods.split(",")] if args.methods else None
    overrides = {"compare": {"methods": methods, "time_limit": args.time_limit}}
    result, code = execute(args, "compare", task="compare", overrides=overrides,
                           report=args.report)
    print(result.comparison.to_string(index=False))
    return code


# ---------------------------------------------------------------- serve
def add_serve_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="service TOML file ([service] section)")
    p.add_argument("--host", help="interface (default 127.0.0.1)")
    p.add_argument("--port", type=int, help="port (default 8000)")
    p.add_argument("--store", help="SQLite store path (default ./tabprotect-service/jobs.sqlite)")
    p.add_argument("--workers", type=int, help="jobs run at the same time (default 2)")
    p.add_argument("--dask", metavar="ADDRESS", help="run the jobs' parallel work on the "
                   "Dask scheduler at ADDRESS, e.g. tcp://10.0.0.5:8786 (docs/scale-out.md)")


def run_serve(args) -> int:
    try:
        import uvicorn
    except ImportError:
        raise InputError("the service needs fastapi and uvicorn: pip install "
                         "'tabprotect[service]'") from None
    from tabprotect.service.app import create_app
    from tabprotect.service.config import load_config
    overrides = {k: v for k, v in (("host", args.host), ("port", args.port),
                                   ("store", args.store), ("workers", args.workers),
                                   ("dask", args.dask))
                 if v is not None}
    config = load_config(args.config, **overrides)
    app = create_app(config)
    print(f"tabprotect service on http://{config.host}:{config.port} "
          f"(store {config.store}, {config.workers} worker(s), "
          f"{len(config.principals)} principal(s)"
          f"{'; parallel work on ' + config.dask if config.dask else ''}); endpoints at "
          f"/docs (token needed)",
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
