"""The service's workers: each claims queued jobs from the store and runs them.

A worker is a process of its own (or a thread, for tests). It claims a job atomically in
SQLite (its **lease**: the worker's id and a heartbeat it renews while the job runs) and
records the outcome only while it still holds the lease, so a job runs at most once at a
time. A worker process dies with the server that started it: it asks Linux to kill it
when its parent dies (``PR_SET_PDEATHSIG``) and, everywhere, checks its parent's pid with
every heartbeat.

The job's folder holds ``input/`` (the uploaded files, which the spec's plain file names
name) and ``out/`` (results: the files of :data:`tabprotect.io.results.OUTPUT_FILES`,
written by the same pipeline and writer as the command line). Results are written to
``work-<worker>/`` and renamed to ``out/`` in the same store transaction that marks the
job finished; the trail, written last, lists every other output (the public ones with
their SHA-256). What is stored as an error
is the one-line :class:`~tabprotect.errors.InputError` message with folders stripped
from any path, or only the exception's type.
"""
from __future__ import annotations

import ctypes
import json
import logging
import os
import re
import shutil
import signal
import sys
import threading
import time
from pathlib import Path

log = logging.getLogger("tabprotect.service")

def _result_files() -> dict[str, str]:
    from tabprotect.io.results import OUTPUT_FILES
    return {"table": OUTPUT_FILES["published"][0], "audit": OUTPUT_FILES["audit"][0],
            "report": OUTPUT_FILES["report"][0], "trail": OUTPUT_FILES["trail"][0],
            "cells": OUTPUT_FILES["cells"][0], "summary": OUTPUT_FILES["summary"][0]}


RESULT_FILES = _result_files()
OUT = "out"
_PR_SET_PDEATHSIG = 1
# absolute paths in messages: keep the last component only
_ABS_PATH = re.compile(r"(?<![\w.~-])(?:[A-Za-z]:)?[/\\](?:[^\s'\"/\\:]+[/\\])+")


def strip_paths(text: str) -> str:
    """A message with the folders of every absolute path removed.

    Examples
    --------
    >>> strip_paths("/srv/store/jobs/ab12/input/cells.csv: not found")
    'cells.csv: not found'
    """
    return _ABS_PATH.sub("", text)


def public_step(step: str) -> str:
    """The stage a progress message names, without what follows its colon: a method's
    messages carry figures of the pattern (the optimal method's cost bound and best cost
    are the value of the secondaries, which the public summary withholds), and the job's
    step is listed to the admin principal too.

    >>> public_step("LP round 3: bound 40074.8")
    'LP round 3'
    """
    return step.split(":", 1)[0].strip()


class LeaseLost(Exception):
    """The store no longer lists this worker as running the job."""


class Lease:
    """One claimed job: heartbeat, progress and the final write, all under the lease."""

    def __init__(self, store, job_id: str, worker: str):
        self.store, self.job_id, self.worker = store, job_id, worker
        self.lock = threading.Lock()
        self.active = True
        self.lost = False

    def beat(self) -> bool:
        with self.lock:
            if self.active and not self.store.heartbeat(self.job_id, self.worker):
                self.lost = True
        return not self.lost

    def progress(self, step: str, fraction: float) -> None:
        step = public_step(step)
        if self.lost or not self.store.progress(self.job_id, self.worker, step, fraction):
            self.lost = True
            raise LeaseLost(self.job_id)

    def finish(self, result: dict, commit) -> bool:
        with self.lock:
            self.active = False
            return self.store.finish(self.job_id, self.worker, result, commit)

    def fail(self, error: str) -> bool:
        with self.lock:
            self.active = False
            return self.store.fail(self.job_id, error, self.worker)


def run_claimed(lease: Lease, dask: str | None = None, max_cells: int | None = None) -> str:
    """Run the job ``lease`` holds (its parallel work on the Dask scheduler at ``dask``,
    if given; tables of more than ``max_cells`` cells refused before they are made);
    returns its final state (or ``"lost"``)."""
    from tabprotect.errors import InputError

    store, job_id, worker = lease.store, lease.job_id, lease.worker
    record = store.get(job_id)
    folder = Path(record["folder"])
    work = folder / f"work-{worker}"
    for stale in folder.glob("work-*"):     # left by a worker that died in this job
        shutil.rmtree(stale, ignore_errors=True)
    try:
        result = _run(record, folder, work, lease, dask, max_cells)
        done = lease.finish(result, commit=lambda: _move_into_place(work, folder / OUT))
        if not done:
            raise LeaseLost(job_id)
        log.info("job %s finished (audit %s)", job_id,
                 {None: "none", True: "passed", False: "failed"}[result["audit_passed"]])
        return "finished"
    except LeaseLost:
        log.warning("job %s: worker %s lost its lease; result discarded", job_id, worker)
        return "lost"
    except InputError as exc:
        lease.fail(strip_paths(str(exc)))
        log.info("job %s failed: bad input", job_id)
        return "failed"
    except Exception as exc:  # noqa: BLE001 -- a job must never take the worker down
        # the message of an unexpected error might quote data: store only its type
        lease.fail(f"internal error ({type(exc).__name__}); see the server log")
        log.error("job %s failed with %s", job_id, type(exc).__name__)
        return "failed"
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run(record: dict, folder: Path, work: Path, lease: Lease, dask: str | None,
         max_cells: int | None) -> dict:
    from tabprotect.io.job import load_job
    from tabprotect.io.results import write_outputs
    from tabprotect.pipeline import run as run_pipeline
    from tabprotect.service.store import private_dir

    private_dir(work)
    spec = dict(record["spec"])
    if dask:
        # the server's cluster (a submitted job may name none: check_spec refuses it)
        spec["cluster"] = {"scheduler": dask}
    job = load_job(spec=spec, base=folder / "input")
    job.name = f"job {record['id'][:8]}"
    job.root = folder / "input"
    job.max_cells = max_cells
    run = run_pipeline(job, progress=lambda step, frac: lease.progress(step, 0.9 * frac))
    lease.progress("report", 0.95)
    written = write_outputs(run, work, report=True)
    result = public_result(run, json.loads(written["summary"].read_text()))
    for path in work.rglob("*"):
        os.chmod(path, 0o700 if path.is_dir() else 0o600)
    return result


def public_result(run, shared: dict) -> dict:
    """What the job listing may show: the verdict, counts (cells, suppressed), solver
    state, timings and the figures that
    :func:`~tabprotect.public_summary.public_summary` released for the run's shareable
    summary ``shared`` (``summary.json``)."""
    from tabprotect.io.results import published_mask
    # the cells published.csv leaves blank (every X; a rounding audited with only the
    # margins published: the inner cells): which of them are primaries stays confidential
    hidden = int((~published_mask(run)).sum())
    summary = {"cells": int(run.table.n_cells), "suppressed": hidden,
               **shared.get("figures", {"withheld": {}})}
    out = {"kind": run.kind, "method": run.method, "audit_passed": run.passed,
           "summary": summary}
    if run.audit is not None and hasattr(run.audit, "summary"):
        audit = run.audit.summary()
        out["audit"] = {k: audit[k] for k in ("unprotected_primary", "exactly_disclosed",
                                              "complete", "integer", "singleton_attack")
                        if k in audit}
    out["solver"] = {k: run.results[k] for k in ("proven_optimal", "solver_status",
                                                 "repaired", "base", "additive")
                     if k in run.results}
    out["timings_seconds"] = dict(run.timings)
    return json.loads(json.dumps(out, default=_plain))


def _plain(obj):
    if hasattr(obj, "item"):
        return obj.item()
    return str(obj)


def _move_into_place(work: Path, out: Path) -> None:
    if out.exists():     # left by a run that stopped between this rename and its commit
        shutil.rmtree(out)
    os.rename(work, out)


# ---------------------------------------------------------------- the worker loop
class _Current:
    lease: Lease | None = None


def work_loop(store_path: str, worker: str, heartbeat_seconds: float, poll_seconds: float,
              stop: threading.Event | None = None, parent_pid: int | None = None,
              dask: str | None = None, max_cells: int | None = None) -> None:
    """Claim and run jobs until ``stop`` is set (threads) or the parent dies (processes)."""
    from tabprotect.service.store import JobStore

    store = JobStore(store_path)
    current = _Current()
    stop = stop or threading.Event()
    watch = threading.Thread(target=_watch, args=(current, heartbeat_seconds, stop,
                                                  parent_pid), daemon=True,
                             name=f"tabprotect-heartbeat-{worker}")
    watch.start()
    while not stop.is_set():
        job_id = store.claim(worker)
        if job_id is None:
            stop.wait(poll_seconds)
            continue
        current.lease = Lease(store, job_id, worker)
        try:
            run_claimed(current.lease, dask, max_cells)
        finally:
            current.lease = None


def _watch(current: _Current, heartbeat_seconds: float, stop: threading.Event,
           parent_pid: int | None) -> None:
    last = 0.0
    while not stop.wait(min(0.2, heartbeat_seconds)):
        if parent_pid is not None and os.getppid() != parent_pid:
            os._exit(0)            # the server is gone: so is this worker
        lease = current.lease
        if lease is not None and time.monotonic() - last >= heartbeat_seconds:
            last = time.monotonic()
            if not lease.beat() and parent_pid is not None:
                os._exit(3)        # another worker may hold the job now: stop at once


def process_main(store_path: str, worker: str, parent_pid: int, heartbeat_seconds: float,
                 poll_seconds: float, log_level: str = "info",
                 dask: str | None = None, max_cells: int | None = None) -> None:
    """Entry point of a worker process."""
    _die_with_parent(parent_pid)
    os.umask(0o077)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # the server decides when workers stop
    logging.basicConfig(level=log_level.upper(), stream=sys.stderr,
                        format="%(levelname)s: %(message)s")
    work_loop(store_path, worker, heartbeat_seconds, poll_seconds, parent_pid=parent_pid,
              dask=dask, max_cells=max_cells)


def _die_with_parent(parent_pid: int) -> None:
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):   # no prctl: the parent-pid check remains
            pass
    if os.getppid() != parent_pid:          # the parent died before prctl took effect
        os._exit(0)
