"""The worker pool of the service: starts workers, replaces dead ones, enforces retention.

Workers claim jobs from the store themselves (see :mod:`tabprotect.service.worker`). The
supervisor thread here watches them: a worker process that died is replaced at once and
its job queued again (or failed once it was started ``max_attempts`` times); a job
running longer than ``max_job_seconds`` is failed and its worker killed; a lease that a
worker of an earlier server stopped renewing (the server was killed) is released after
``lease_seconds``. When the server stops, its workers are stopped and their jobs queued
again without counting the attempt.
"""
from __future__ import annotations

import logging
import multiprocessing
import os
import shutil
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from tabprotect.service.config import ServiceConfig
from tabprotect.service.store import JobStore, private_dir
from tabprotect.service.worker import process_main, work_loop

log = logging.getLogger("tabprotect.service")

POLL_SECONDS = 0.2          # an idle worker looks for a queued job this often
SUPERVISE_SECONDS = 0.25    # the supervisor checks the workers this often
ORPHAN_SECONDS = 3600.0     # a job folder without a record this old is deleted


@dataclass
class _Slot:
    """One place in the pool and the worker currently filling it."""

    worker: str
    process: multiprocessing.Process | None = None
    thread: threading.Thread | None = None
    started: float = 0.0
    died: float | None = None
    quick_deaths: int = 0          # deaths in a row soon after start (backoff)

    def alive(self) -> bool:
        if self.process is not None:
            return self.process.is_alive()
        return self.thread is not None and self.thread.is_alive()


class WorkerPool:
    """Workers, their supervisor and retention (one per app)."""

    def __init__(self, config: ServiceConfig):
        self.config = config
        self.store = JobStore(config.store)
        private_dir(config.jobs_dir)
        os.chmod(config.jobs_dir, 0o700)
        self.instance = uuid.uuid4().hex[:8]
        self.slots: list[_Slot] = []
        self.replaced = 0
        self._serial = 0
        self._stop = threading.Event()
        self._threads_stop = threading.Event()
        self._supervisor: threading.Thread | None = None
        self._last_clean = 0.0
        self._ready = threading.Event()

    # ------------------------------------------------------------ life cycle
    def start(self) -> None:
        self._supervisor = threading.Thread(target=self._supervise, daemon=True,
                                            name="tabprotect-supervisor")
        self._supervisor.start()
        self._ready.wait(timeout=30)

    def stop(self) -> None:
        self._stop.set()
        if self._supervisor is not None:
            self._supervisor.join(timeout=10)
        self._threads_stop.set()
        for slot in self.slots:
            if slot.process is not None:
                slot.process.terminate()
        for slot in self.slots:
            if slot.process is not None:
                slot.process.join(timeout=5)
                if slot.process.is_alive():
                    slot.process.kill()
                    slot.process.join(timeout=5)
            elif slot.thread is not None:
                slot.thread.join(timeout=1)
            # the job was not at fault: queued again without counting the attempt
            for job_id, state in self.store.release(slot.worker, "the service stopped",
                                                    self.config.max_attempts,
                                                    count_attempt=False):
                log.info("job %s %s (service stopped)", job_id, state)

    def health(self) -> dict:
        alive = sum(slot.alive() for slot in self.slots)
        counts = self.store.counts()
        return {"status": "ok" if alive == self.config.workers else "degraded",
                "pool": self.config.pool, "workers": self.config.workers,
                "workers_alive": alive, "workers_replaced": self.replaced,
                "jobs_queued": counts.get("queued", 0),
                "jobs_running": counts.get("running", 0)}

    # ------------------------------------------------------------ workers
    def _spawn(self) -> _Slot:
        self._serial += 1
        worker = f"{self.instance}-{self._serial}"
        cfg = self.config
        slot = _Slot(worker=worker, started=time.monotonic())
        if cfg.pool == "process":
            ctx = multiprocessing.get_context("spawn")
            slot.process = ctx.Process(
                target=process_main, name=f"tabprotect-worker-{worker}",
                args=(str(self.store.path), worker, os.getpid(), cfg.heartbeat_seconds,
                      POLL_SECONDS, cfg.log_level, cfg.dask, cfg.max_cells))
            slot.process.start()
        else:
            slot.thread = threading.Thread(
                target=work_loop, name=f"tabprotect-worker-{worker}", daemon=True,
                args=(str(self.store.path), worker, cfg.heartbeat_seconds, POLL_SECONDS,
                      self._threads_stop, None, cfg.dask, cfg.max_cells))
            slot.thread.start()
        return slot

    def _supervise(self) -> None:
        # spawned from this thread, which lives as long as the pool: Linux delivers a
        # worker's parent-death signal when the thread that started it ends
        try:
            self.slots = [self._spawn() for _ in range(self.config.workers)]
        finally:
            self._ready.set()
        while not self._stop.wait(SUPERVISE_SECONDS):
            try:
                self._check_workers()
                self._check_leases()
                if time.monotonic() - self._last_clean >= self.config.cleanup_interval_seconds:
                    self._last_clean = time.monotonic()
                    self.enforce_retention()
            except Exception as exc:  # noqa: BLE001 -- keep supervising on the next tick
                log.error("supervisor: %s", type(exc).__name__)

    def _check_workers(self) -> None:
        for k, slot in enumerate(self.slots):
            if self._stop.is_set():
                return
            if slot.alive():
                self._check_time(slot)
                continue
            code = slot.process.exitcode if slot.process is not None else None
            reason = f"the worker running it stopped (exit code {code})"
            for job_id, state in self.store.release(slot.worker, reason,
                                                    self.config.max_attempts):
                log.warning("job %s %s: %s", job_id, state, reason)
            now = time.monotonic()
            if slot.died is None:
                slot.died = now
                slot.quick_deaths = slot.quick_deaths + 1 if now - slot.started < 5 else 0
            # a worker that keeps dying at start-up is restarted ever more slowly
            if slot.quick_deaths and now - slot.died < min(60.0, 2.0 ** slot.quick_deaths):
                continue
            self.slots[k] = self._spawn()
            self.slots[k].quick_deaths = slot.quick_deaths
            self.replaced += 1
            log.warning("worker %s stopped (exit code %s); replaced by %s", slot.worker,
                        code, self.slots[k].worker)

    def _check_time(self, slot: _Slot) -> None:
        limit = self.config.max_job_seconds
        for rec in self.store.leased_by(slot.worker):
            if rec["started"] is not None and time.time() - rec["started"] > limit:
                if self.store.fail(rec["id"], f"stopped: ran longer than the service's "
                                              f"limit of {limit:g} seconds", slot.worker) \
                        and slot.process is not None:
                    slot.process.kill()
                log.warning("job %s stopped after %g s", rec["id"], limit)

    def _check_leases(self) -> None:
        mine = tuple(slot.worker for slot in self.slots)
        for job_id, state in self.store.release_expired(
                self.config.lease_seconds, "its worker stopped renewing the lease (the "
                "service was stopped or killed)", self.config.max_attempts, keep=mine):
            log.warning("job %s %s after an abandoned lease", job_id, state)

    # ------------------------------------------------------------ retention
    def enforce_retention(self, now: float | None = None) -> None:
        """Delete uploads (and old jobs) whose retention has passed."""
        now = time.time() if now is None else now
        for rec in self.store.ended_before(now - self.config.upload_retention_seconds):
            if not rec["uploads_deleted"]:
                shutil.rmtree(Path(rec["folder"]) / "input", ignore_errors=True)
                self.store.mark_uploads_deleted(rec["id"])
                log.info("job %s: uploads deleted (retention)", rec["id"])
        # a folder without a record: a submission cut off by a crash of the server
        known = self.store.ids()
        for folder in self.config.jobs_dir.iterdir():
            if folder.name not in known and folder.stat().st_mtime < now - ORPHAN_SECONDS:
                shutil.rmtree(folder, ignore_errors=True)
                log.info("folder %s without a job record deleted", folder.name)
        if self.config.result_retention_seconds > 0:
            for rec in self.store.ended_before(now - self.config.result_retention_seconds):
                if self.store.delete(rec["id"]):
                    shutil.rmtree(rec["folder"], ignore_errors=True)
                    log.info("job %s deleted (retention)", rec["id"])
