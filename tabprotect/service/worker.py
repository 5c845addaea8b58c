"""Running one submitted job (in a worker process or thread).

The job's folder holds ``input/`` (the uploaded files, which the spec's relative paths
name) and ``out/`` (results: the files of :data:`tabprotect.io.results.OUTPUT_FILES`,
written by the same pipeline as the command line).  Progress and the outcome go to the
job store.  What is logged or stored as an error is the one-line :class:`~tabprotect.errors.InputError`
message (which never holds a cell value) or only the exception's type.
"""
from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger("tabprotect.service")

def _result_files() -> dict[str, str]:
    from tabprotect.io.results import OUTPUT_FILES
    return {"table": OUTPUT_FILES["published"][0], "audit": OUTPUT_FILES["audit"][0],
            "report": OUTPUT_FILES["report"][0], "trail": OUTPUT_FILES["trail"][0],
            "cells": OUTPUT_FILES["cells"][0]}


RESULT_FILES = _result_files()


def execute(store_path: str, job_id: str) -> str:
    """Run job ``job_id`` of the store at ``store_path``; returns its final state."""
    from tabprotect.errors import InputError
    from tabprotect.io.job import load_job
    from tabprotect.io.results import public_summary, write_outputs
    from tabprotect.pipeline import run as run_pipeline
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
        run = run_pipeline(job, progress=lambda step, frac: store.progress(job_id, step,
                                                                           0.9 * frac))
        store.progress(job_id, "report", 0.95)
        write_outputs(run, out, report=True)
        result = {"kind": run.kind, "method": run.method, "audit_passed": run.passed,
                  "results": public_summary(run), "timings_seconds": run.timings}
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
