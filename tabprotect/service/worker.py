"""Running one submitted job (in a worker process or thread).

The job's folder holds ``input/`` (the uploaded files, which the spec's relative paths
name) and ``out/`` (results: ``published.csv``, ``cells.csv``, ``audit.csv``,
``report.html``, ``report.json``).  Progress and the outcome go to the job store.  What
is logged or stored as an error is the one-line :class:`~tabprotect.errors.InputError`
message (which never holds a cell value) or only the exception's type.
"""
from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger("tabprotect.service")

RESULT_FILES = {"table": "published.csv", "audit": "audit.csv", "report": "report.html",
                "trail": "report.json", "cells": "cells.csv"}


def execute(store_path: str, job_id: str) -> str:
    """Run job ``job_id`` of the store at ``store_path``; returns its final state."""
    from tabprotect.errors import InputError
    from tabprotect.io.job import load_job
    from tabprotect.report import audit_trail, run_job, write_report
    from tabprotect.service.store import JobStore

    store = JobStore(store_path)
    record = store.get(job_id)
    if record is None or record["state"] not in ("queued", "running"):
        return "skipped"
    store.start(job_id)
    folder = Path(record["folder"])
    out = folder / "out"
    try:
        job = load_job(spec=record["spec"], base=folder / "input")
        job.name = f"job {job_id[:8]}"
        run = run_job(job, output_dir=out,
                      progress=lambda step, frac: store.progress(job_id, step, 0.9 * frac))
        store.progress(job_id, "report", 0.95)
        write_report(run, out / "report.html")
        trail = audit_trail(run)
        result = {"kind": run.kind, "method": run.method, "audit_passed": run.passed,
                  "results": {k: v for k, v in trail["results"].items()
                              if k not in ("comparison",)},
                  "timings_seconds": trail["timings_seconds"]}
        store.finish(job_id, result)
        log.info("job %s finished (%s, audit %s)", job_id, run.kind,
                 {None: "none", True: "passed", False: "failed"}[run.passed])
        return "finished"
    except InputError as exc:
        store.fail(job_id, str(exc))
        log.info("job %s failed: bad input", job_id)
        return "failed"
    except Exception as exc:  # noqa: BLE001 -- a job must never take the service down
        # the message of an unexpected error might quote data: store only its type
        store.fail(job_id, f"internal error ({type(exc).__name__}); see the server log")
        log.error("job %s failed with %s", job_id, type(exc).__name__)
        return "failed"
