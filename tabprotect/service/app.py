"""The HTTP service: submit a job, poll it, fetch its results (FastAPI).

Endpoints (all but ``/health`` need ``Authorization: Bearer <token>``):

* ``POST /jobs`` -- multipart form: ``spec`` (a job file, TOML or JSON) and ``files`` (the
  CSV/Parquet/hierarchy files the spec names, by file name).  202 with the job's id.
* ``GET /jobs`` -- recent jobs; ``GET /jobs/{id}`` -- state, progress, step, result summary.
* ``GET /jobs/{id}/table`` (published table, suppressed values blank), ``/audit``
  (intervals), ``/report`` (HTML), ``/trail`` (JSON audit trail), ``/cells``.
* ``DELETE /jobs/{id}`` -- remove a finished job and its files.
* ``GET /health`` -- liveness; ``/openapi.json`` and ``/docs`` -- the OpenAPI schema.

Errors are JSON ``{"detail": "..."}`` with 400 (malformed request), 401 (no or wrong
token), 404 (no such job), 409 (result not ready), 413 (request too large), 422 (bad spec
or file).
"""
from __future__ import annotations

import hmac
import json
import logging
import re
import shutil
import threading
import time
import tomllib
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import Depends, FastAPI, File, HTTPException, Request, UploadFile
from fastapi.responses import FileResponse, JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from tabprotect import __version__
from tabprotect.errors import InputError
from tabprotect.service.config import ServiceConfig
from tabprotect.service.store import JobStore
from tabprotect.service.worker import RESULT_FILES, execute

log = logging.getLogger("tabprotect.service")

DATA_SUFFIXES = {".csv", ".parquet", ".pq"}
FILE_SUFFIXES = DATA_SUFFIXES | {".hrc", ".txt", ".toml", ".json"}
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_JOB_ID = re.compile(r"^[0-9a-f]{32}$")
VALIDATE_TABLE_BYTES = 4 * 2**20   # cells jobs this small are built at submission (422 early)
MEDIA_TYPES = {"table": "text/csv", "audit": "text/csv", "cells": "text/csv",
               "report": "text/html", "trail": "application/json"}


class RequestTooLarge(Exception):
    pass


class BodySizeLimit:
    """ASGI middleware: refuse request bodies above ``limit`` bytes with 413, whether the
    client announces the size (Content-Length) or streams it."""

    def __init__(self, app, limit: int):
        self.app = app
        self.limit = limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        for name, value in scope.get("headers", []):
            if name == b"content-length" and value.isdigit() and int(value) > self.limit:
                return await self._reject(send)
        seen = 0
        started = False

        async def limited_receive():
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise RequestTooLarge()
            return message

        async def tracking_send(message):
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except RequestTooLarge:
            if not started:
                await self._reject(send)

    async def _reject(self, send):
        body = json.dumps({"detail": f"request larger than {self.limit} bytes"}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})


class JobRunner:
    """The worker pool, the store and retention (one per app)."""

    def __init__(self, config: ServiceConfig):
        self.config = config
        self.store = JobStore(config.store)
        config.jobs_dir.mkdir(parents=True, exist_ok=True)
        self.executor: Executor | None = None
        self._stop = threading.Event()
        self._cleaner: threading.Thread | None = None

    def start(self) -> None:
        if self.config.pool == "process":
            import multiprocessing
            # spawn: a fresh interpreter per worker (forking a threaded server is unsafe)
            self.executor = ProcessPoolExecutor(
                max_workers=self.config.workers,
                mp_context=multiprocessing.get_context("spawn"))
        else:
            self.executor = ThreadPoolExecutor(max_workers=self.config.workers,
                                               thread_name_prefix="tabprotect-job")
        for job_id in self.store.unfinished():
            self.store.requeue(job_id)
            self.submit(job_id)
            log.info("job %s re-queued after restart", job_id)
        self.enforce_retention()
        self._cleaner = threading.Thread(target=self._clean_loop, daemon=True,
                                         name="tabprotect-retention")
        self._cleaner.start()

    def stop(self) -> None:
        self._stop.set()
        if self.executor is not None:
            self.executor.shutdown(wait=False, cancel_futures=True)
        if self._cleaner is not None:
            self._cleaner.join(timeout=5)

    def submit(self, job_id: str) -> None:
        future = self.executor.submit(execute, str(self.store.path), job_id)

        def done(fut):
            if fut.cancelled():
                return
            exc = fut.exception()
            if exc is not None:   # e.g. a worker process died
                self.store.fail(job_id, f"worker error ({type(exc).__name__})")
                log.error("job %s: worker error %s", job_id, type(exc).__name__)
        future.add_done_callback(done)

    def _clean_loop(self) -> None:
        while not self._stop.wait(self.config.cleanup_interval_seconds):
            try:
                self.enforce_retention()
            except Exception as exc:  # noqa: BLE001 -- keep cleaning on the next tick
                log.error("retention: %s", type(exc).__name__)

    def enforce_retention(self, now: float | None = None) -> None:
        """Delete uploads (and old jobs) whose retention has passed."""
        now = time.time() if now is None else now
        for rec in self.store.ended_before(now - self.config.upload_retention_seconds):
            if not rec["uploads_deleted"]:
                shutil.rmtree(Path(rec["folder"]) / "input", ignore_errors=True)
                self.store.mark_uploads_deleted(rec["id"])
                log.info("job %s: uploads deleted (retention)", rec["id"])
        if self.config.result_retention_seconds > 0:
            for rec in self.store.ended_before(now - self.config.result_retention_seconds):
                shutil.rmtree(rec["folder"], ignore_errors=True)
                self.store.delete(rec["id"])
                log.info("job %s deleted (retention)", rec["id"])


# ---------------------------------------------------------------- validation
def _parse_spec(name: str, raw: bytes) -> dict:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise HTTPException(400, "spec: not UTF-8 text") from None
    suffix = Path(name or "").suffix.lower()
    try:
        if suffix == ".json" or (suffix != ".toml" and text.lstrip().startswith("{")):
            spec = json.loads(text)
        else:
            spec = tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        raise HTTPException(422, f"spec: not valid {'JSON' if suffix == '.json' else 'TOML'}"
                                 f" ({exc})") from None
    if not isinstance(spec, dict):
        raise HTTPException(422, "spec: must be a table/object of sections")
    return spec


def _file_references(obj, found: list[str]) -> list[str]:
    """Strings of the spec that name a file (by their suffix)."""
    if isinstance(obj, dict):
        for v in obj.values():
            _file_references(v, found)
    elif isinstance(obj, list):
        for v in obj:
            _file_references(v, found)
    elif isinstance(obj, str) and Path(obj).suffix.lower() in FILE_SUFFIXES:
        found.append(obj)
    return found


def _check_spec(spec: dict, uploaded: set[str]) -> None:
    from tabprotect.io.job import load_job
    try:
        load_job(spec=spec, base=".")
    except InputError as exc:
        raise HTTPException(422, f"spec: {exc}") from None
    if "input" not in spec and "microdata" not in spec:
        raise HTTPException(422, "spec: give an [input] section (cells file) or [microdata]")
    for ref in _file_references({k: v for k, v in spec.items() if k != "output"}, []):
        if "/" in ref or "\\" in ref or ref.startswith("."):
            raise HTTPException(422, f"spec: file '{ref}' must be a plain file name (the "
                                     f"uploaded files share one folder)")
        if ref not in uploaded:
            raise HTTPException(422, f"spec names file '{ref}' but no such file was uploaded "
                                     f"(uploaded: {', '.join(sorted(uploaded)) or 'none'})")


def _save_uploads(files: list[UploadFile], folder: Path, max_files: int) -> dict[str, int]:
    if len(files) > max_files:
        raise HTTPException(422, f"at most {max_files} files per job")
    folder.mkdir(parents=True, exist_ok=True)
    sizes: dict[str, int] = {}
    for upload in files:
        name = Path(upload.filename or "").name
        if not _SAFE_NAME.match(name) or Path(name).suffix.lower() not in FILE_SUFFIXES:
            raise HTTPException(422, f"file '{name}': give a plain name ending in "
                                     f"{', '.join(sorted(FILE_SUFFIXES))}")
        if name in sizes:
            raise HTTPException(422, f"file '{name}' uploaded twice")
        with open(folder / name, "wb") as fh:
            shutil.copyfileobj(upload.file, fh, 1 << 20)
        sizes[name] = (folder / name).stat().st_size
        if sizes[name] == 0:
            raise HTTPException(422, f"file '{name}' is empty")
    return sizes


def _check_files(folder: Path, sizes: dict[str, int], spec: dict) -> None:
    from tabprotect.io.job import build_table, load_job
    from tabprotect.model import read_frame
    try:
        for name in sizes:
            if Path(name).suffix.lower() in DATA_SUFFIXES:
                read_frame(folder / name)
        if "input" in spec and "microdata" not in spec and \
                sum(sizes.values()) <= VALIDATE_TABLE_BYTES:
            build_table(load_job(spec=spec, base=folder))
    except InputError as exc:
        raise HTTPException(422, str(exc)) from None


# ---------------------------------------------------------------- the app
def create_app(config: ServiceConfig) -> FastAPI:
    """The FastAPI application for ``config`` (which must hold at least one token).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from tabprotect.service.config import load_config
    >>> cfg = load_config(tokens=["a-long-token"],
    ...                   store=pathlib.Path(tempfile.mkdtemp()) / "jobs.sqlite")
    >>> sorted(r.path for r in create_app(cfg).routes if "{job_id}" in r.path)[:2]
    ['/jobs/{job_id}', '/jobs/{job_id}']
    """
    config = config.check()
    runner = JobRunner(config)
    tokens = [t.encode() for t in config.tokens]

    @asynccontextmanager
    async def lifespan(app):
        runner.start()
        try:
            yield
        finally:
            runner.stop()

    app = FastAPI(title="tabprotect", version=__version__, lifespan=lifespan,
                  description="Statistical disclosure control for tables: submit a job "
                              "(spec + files), poll it, fetch the protected table, the audit "
                              "and the report.")
    app.state.runner = runner
    bearer = HTTPBearer(auto_error=False)

    def authorised(credentials: HTTPAuthorizationCredentials | None = Depends(bearer)) -> None:
        given = credentials.credentials.encode() if credentials else b""
        # compare with every token, in constant time, so timing reveals nothing
        ok = False
        for t in tokens:
            ok |= hmac.compare_digest(given, t)
        if not credentials or not ok:
            raise HTTPException(401, "missing or invalid bearer token",
                                headers={"WWW-Authenticate": "Bearer"})

    def job_or_404(job_id: str) -> dict[str, Any]:
        rec = runner.store.get(job_id) if _JOB_ID.match(job_id) else None
        if rec is None:
            raise HTTPException(404, f"no job '{job_id[:40]}'")
        return rec

    def public(rec: dict, request: Request) -> dict[str, Any]:
        base = str(request.base_url).rstrip("/") + f"/jobs/{rec['id']}"
        out = {k: rec[k] for k in ("id", "state", "progress", "step", "created", "started",
                                   "ended", "error", "files", "uploads_deleted")}
        out["result"] = rec["result"]
        out["links"] = {"self": base}
        if rec["state"] == "finished":
            out["links"].update({k: f"{base}/{k}" for k in RESULT_FILES
                                 if (Path(rec["folder"]) / "out" / RESULT_FILES[k]).is_file()})
        return out

    @app.get("/health", tags=["service"])
    def health() -> dict:
        """Liveness (no token needed)."""
        return {"status": "ok", "version": __version__}

    @app.post("/jobs", status_code=202, tags=["jobs"], dependencies=[Depends(authorised)])
    def submit(request: Request, spec: UploadFile = File(..., description="job file, TOML "
                                                          "or JSON"),
               files: list[UploadFile] = File(default=[], description="input files named "
                                                                       "by the spec")) -> dict:
        """Submit a job: its spec and the files it names.  Runs in the worker pool."""
        raw = spec.file.read()
        if not raw.strip():
            raise HTTPException(400, "spec: empty")
        parsed = _parse_spec(spec.filename or "", raw)
        parsed.pop("output", None)   # results always go to the job's own folder
        names = {Path(f.filename or "").name for f in files}
        _check_spec(parsed, names)
        import uuid
        job_id = uuid.uuid4().hex
        folder = config.jobs_dir / job_id
        try:
            sizes = _save_uploads(files, folder / "input", config.max_files)
            _check_files(folder / "input", sizes, parsed)
        except HTTPException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        runner.store.create(parsed, sorted(sizes), folder, job_id=job_id)
        runner.submit(job_id)
        log.info("job %s submitted (%d file(s), %d bytes)", job_id, len(sizes),
                 sum(sizes.values()))
        return public(runner.store.get(job_id), request)

    @app.get("/jobs", tags=["jobs"], dependencies=[Depends(authorised)])
    def list_jobs(request: Request, limit: int = 100) -> list[dict]:
        """Recent jobs, newest first."""
        return [public(r, request) for r in runner.store.list(max(1, min(limit, 1000)))]

    @app.get("/jobs/{job_id}", tags=["jobs"], dependencies=[Depends(authorised)])
    def status(job_id: str, request: Request) -> dict:
        """State (queued, running, finished, failed), progress 0..1, step, result summary."""
        return public(job_or_404(job_id), request)

    def result_file(job_id: str, what: str) -> FileResponse:
        rec = job_or_404(job_id)
        if rec["state"] in ("queued", "running"):
            raise HTTPException(409, f"job {job_id} is {rec['state']}; poll /jobs/{job_id}")
        if rec["state"] == "failed":
            raise HTTPException(409, f"job {job_id} failed: {rec['error']}")
        path = Path(rec["folder"]) / "out" / RESULT_FILES[what]
        if not path.is_file():
            raise HTTPException(404, f"job {job_id} has no {what}")
        return FileResponse(path, media_type=MEDIA_TYPES[what],
                            filename=f"{job_id[:8]}-{RESULT_FILES[what]}")

    @app.get("/jobs/{job_id}/table", tags=["results"], dependencies=[Depends(authorised)],
             response_class=FileResponse)
    def table(job_id: str):
        """The published table (CSV; suppressed cells have no value)."""
        return result_file(job_id, "table")

    @app.get("/jobs/{job_id}/audit", tags=["results"], dependencies=[Depends(authorised)],
             response_class=FileResponse)
    def audit(job_id: str):
        """The audit: feasibility interval of every cell (CSV)."""
        return result_file(job_id, "audit")

    @app.get("/jobs/{job_id}/report", tags=["results"], dependencies=[Depends(authorised)],
             response_class=FileResponse)
    def report(job_id: str):
        """The HTML report."""
        return result_file(job_id, "report")

    @app.get("/jobs/{job_id}/trail", tags=["results"], dependencies=[Depends(authorised)],
             response_class=FileResponse)
    def trail(job_id: str):
        """The JSON audit trail (checksums, parameters, versions, results)."""
        return result_file(job_id, "trail")

    @app.get("/jobs/{job_id}/cells", tags=["results"], dependencies=[Depends(authorised)],
             response_class=FileResponse)
    def cells(job_id: str):
        """Every cell with its value and final status (CSV, confidential)."""
        return result_file(job_id, "cells")

    @app.delete("/jobs/{job_id}", tags=["jobs"], dependencies=[Depends(authorised)])
    def delete(job_id: str) -> dict:
        """Delete a finished or failed job and its files."""
        rec = job_or_404(job_id)
        if rec["state"] in ("queued", "running"):
            raise HTTPException(409, f"job {job_id} is {rec['state']}")
        shutil.rmtree(rec["folder"], ignore_errors=True)
        runner.store.delete(job_id)
        return {"id": job_id, "deleted": True}

    @app.exception_handler(InputError)
    async def input_error(request: Request, exc: InputError):
        return JSONResponse(status_code=422, content={"detail": str(exc)})

    app.add_middleware(BodySizeLimit, limit=config.max_request_bytes)
    return app
