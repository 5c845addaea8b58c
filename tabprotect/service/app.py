"""The HTTP service: submit a job, poll it, fetch its results (FastAPI).

Endpoints (all but ``/health`` need ``Authorization: Bearer <token>``; a token belongs to
one principal, and a principal sees only its own jobs -- another's job is a 404):

* ``POST /jobs`` -- multipart form: ``spec`` (a job file, TOML or JSON) and ``files`` (the
  CSV/Parquet/hierarchy files the spec names, by file name).  202 with the job's record.
* ``GET /jobs`` -- the caller's recent jobs (an admin principal: ``?all=true`` lists
  everyone's); ``GET /jobs/{id}`` -- state, progress, step, public result summary.
* ``GET /jobs/{id}/table`` (published table, suppressed values blank) and ``/cells``
  (confidential values) -- only when the audit passed, else 409 with the verdict;
  ``/audit`` (intervals), ``/report`` (HTML), ``/trail`` (JSON audit trail),
  ``/summary`` (counts, verdict and released figures; shareable).
* ``DELETE /jobs/{id}`` -- remove an ended job and its files.
* ``GET /health`` -- liveness and the worker pool; ``/openapi.json`` and ``/docs`` -- the
  OpenAPI schema and a plain HTML list of the endpoints (token needed).

Errors are JSON ``{"detail": ...}`` with 400 (malformed request), 401 (no or wrong
token), 404 (no such job of the caller), 409 (result not ready, job failed, or audit not
passed), 413 (request too large), 422 (bad spec or file, tables above ``max_cells``, an
unknown query parameter or form field), 429 (too many jobs queued).
No error body holds a request's content, a data value or a server path.
"""
from __future__ import annotations

import hmac
import html
import json
import logging
import re
import shutil
import threading
import uuid
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import Depends, FastAPI, File, HTTPException, Query, Request, UploadFile
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.exceptions import HTTPException as StarletteHTTPException

from tabprotect import __version__
from tabprotect.errors import InputError
from tabprotect.service.config import Principal, ServiceConfig, hash_token
from tabprotect.service.pool import WorkerPool
from tabprotect.service.store import private_dir
from tabprotect.service.validate import check_files, check_spec, parse_spec, save_uploads
from tabprotect.service.worker import OUT, RESULT_FILES, strip_paths

log = logging.getLogger("tabprotect.service")

_JOB_ID = re.compile(r"^[0-9a-f]{32}$")
SAFE_PARAMETER = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
MEDIA_TYPES = {"table": "text/csv", "audit": "text/csv", "cells": "text/csv",
               "report": "text/html", "trail": "application/json",
               "summary": "application/json"}
#: results that are publishable or confidential values: served only after a passed audit
VERDICT_FIRST = ("table", "cells")


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


async def known_parameters(request: Request) -> None:
    """Refuse (422, naming them) query parameters and form fields the endpoint does not
    read: an option the service does not know is an error, never silently ignored."""
    dependant = getattr(request.scope.get("route"), "dependant", None)
    if dependant is None:
        return
    query, fields = _parameters(dependant)
    where, known = "query parameter", query
    unknown = set(request.query_params) - query
    if not unknown and fields and \
            request.headers.get("content-type", "").startswith("multipart/form-data"):
        where, known = "form field", fields
        unknown = set((await request.form()).keys()) - fields   # parsed once, cached
    if unknown:
        named = ", ".join(f"'{u}'" if SAFE_PARAMETER.match(u) else "(unprintable)"
                          for u in sorted(unknown)[:5])
        raise HTTPException(422, f"unknown {where}(s) {named} (known: "
                                 f"{', '.join(sorted(known)) or 'none'})")


def _parameters(dependant) -> tuple[set[str], set[str]]:
    """The query parameters and body fields an endpoint and its dependencies read."""
    query, body, stack = set(), set(), [dependant]
    while stack:
        d = stack.pop()
        query |= {p.alias for p in d.query_params}
        body |= {p.alias for p in d.body_params}
        stack.extend(d.dependencies)
    return query, body


def _verdict(rec: dict) -> str | None:
    """Why a finished job's table may not be served (None: its audit passed)."""
    result = rec["result"] or {}
    passed = result.get("audit_passed")
    if passed is True:
        return None
    if passed is None:
        return "the job has no audit verdict: nothing is served as publishable"
    missed = (result.get("audit") or {}).get("unprotected_primary")
    count = f" ({missed} primary cell(s) not protected)" if missed is not None else ""
    return (f"the audit FAILED{count}: the pattern is not for publication; see "
            f"/audit and /report")


def endpoint_page(schema: dict) -> str:
    """A self-contained HTML page listing the endpoints of an OpenAPI schema."""
    rows = []
    for path, ops in schema.get("paths", {}).items():
        for method, op in ops.items():
            rows.append(f"<tr><td><code>{html.escape(method.upper())}</code></td>"
                        f"<td><code>{html.escape(path)}</code></td>"
                        f"<td>{html.escape(op.get('summary', ''))}</td>"
                        f"<td>{html.escape(op.get('description', ''))}</td></tr>")
    info = schema.get("info", {})
    return ("<!doctype html><html><head><meta charset='utf-8'><title>"
            f"{html.escape(info.get('title', ''))} API</title></head><body>"
            f"<h1>{html.escape(info.get('title', ''))} {html.escape(info.get('version', ''))}"
            "</h1><p>Every endpoint but <code>/health</code> needs "
            "<code>Authorization: Bearer &lt;token&gt;</code>. The machine-readable schema "
            "is <code>/openapi.json</code>.</p><table border='1' cellpadding='4'>"
            "<tr><th>method</th><th>path</th><th>summary</th><th>description</th></tr>"
            + "".join(rows) + "</table></body></html>")


def create_app(config: ServiceConfig) -> FastAPI:
    """The FastAPI application for ``config`` (which must hold at least one principal).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from tabprotect.service.config import load_config
    >>> cfg = load_config(tokens=["a-long-token-0123"],
    ...                   store=pathlib.Path(tempfile.mkdtemp()) / "jobs.sqlite")
    >>> sorted(r.path for r in create_app(cfg).routes if "{job_id}" in r.path)[:2]
    ['/jobs/{job_id}', '/jobs/{job_id}']
    """
    config = config.check()
    pool = WorkerPool(config)

    @asynccontextmanager
    async def lifespan(app):
        pool.start()
        try:
            yield
        finally:
            pool.stop()

    app = FastAPI(title="tabprotect", version=__version__, lifespan=lifespan,
                  docs_url=None, redoc_url=None, openapi_url=None,
                  description="Statistical disclosure control for tables: submit a job "
                              "(spec + files), poll it, fetch the protected table, the audit "
                              "and the report.")
    app.state.pool = pool
    caller = _caller(list(config.principals))
    jobs = _Jobs(config, pool.store)
    _service_routes(app, pool, caller)
    _job_routes(app, jobs, caller)
    _result_routes(app, jobs, caller)
    _delete_route(app, jobs, caller)
    _install_error_handlers(app)
    app.add_middleware(BodySizeLimit, limit=config.max_request_bytes)
    return app


def _caller(principals: list[Principal]):
    """The dependency that finds the caller's principal by its bearer token (401 without)."""
    bearer = HTTPBearer(auto_error=False)

    async def caller(request: Request,
                     credentials: HTTPAuthorizationCredentials | None = Depends(bearer)
                     ) -> Principal:
        given = hash_token(credentials.credentials).encode() if credentials else b""
        # compare with every principal's hash, in constant time, so timing reveals nothing
        found = None
        for p in principals:
            if hmac.compare_digest(given, p.token_sha256.encode()):
                found = p
        if credentials is None or found is None:
            raise HTTPException(401, "missing or invalid bearer token",
                                headers={"WWW-Authenticate": "Bearer"})
        await known_parameters(request)     # after the token: names are for callers only
        return found

    return caller


class _Jobs:
    """The jobs of the service's store as its routes see them: a caller's own job, its
    public record, its result files, a submission."""

    def __init__(self, config: ServiceConfig, store) -> None:
        self.config = config
        self.store = store
        # the bound on queued jobs holds for concurrent submissions too
        self.submit_lock = threading.Lock()

    def own_job(self, job_id: str, who: Principal) -> dict[str, Any]:
        rec = self.store.get(job_id, owner=who.name) if _JOB_ID.match(job_id) else None
        if rec is None:
            raise HTTPException(404, "no such job")
        return rec

    @staticmethod
    def public(rec: dict, with_owner: bool = False) -> dict[str, Any]:
        base = f"/jobs/{rec['id']}"      # relative: never built from the Host header
        out = {k: rec[k] for k in ("id", "state", "progress", "step", "created", "started",
                                   "ended", "error", "files", "uploads_deleted", "attempts")}
        out["result"] = rec["result"]
        if with_owner:
            out["owner"] = rec["owner"]
        out["links"] = {"self": base}
        if rec["state"] == "finished":
            served = [k for k in RESULT_FILES
                      if k not in VERDICT_FIRST or _verdict(rec) is None]
            out["links"].update({k: f"{base}/{k}" for k in served})
        return out

    def submit(self, spec: UploadFile, files: list[UploadFile], who: Principal) -> dict:
        """Check and store a job; it leaves nothing behind when refused."""
        config, store = self.config, self.store
        raw = spec.file.read()
        if not raw.strip():
            raise HTTPException(400, "spec: empty")
        parsed = parse_spec(spec.filename or "", raw)
        parsed.pop("output", None)   # results always go to the job's own folder
        job_id = uuid.uuid4().hex
        folder = config.jobs_dir / job_id
        names = {Path(f.filename or "").name for f in files}
        check_spec(parsed, names, folder / "input", config.max_time_limit)
        busy = HTTPException(429, f"{config.max_queued_per_principal} jobs of yours are "
                                  f"queued or running; wait for one to end")
        if store.pending(who.name) >= config.max_queued_per_principal:
            raise busy
        try:
            private_dir(folder / "input")
            sizes = save_uploads(files, folder / "input", config.max_files)
            check_files(folder / "input", sizes, parsed, config.max_columns, config.max_rows,
                        config.max_cells)
            with self.submit_lock:
                if store.pending(who.name) >= config.max_queued_per_principal:
                    raise busy
                store.create(parsed, sorted(sizes), folder, owner=who.name, job_id=job_id)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)   # a refused job leaves nothing
            raise
        log.info("job %s submitted by %s (%d file(s), %d bytes)", job_id, who.name,
                 len(sizes), sum(sizes.values()))
        return self.public(store.get(job_id))

    def result_file(self, job_id: str, what: str, who: Principal) -> FileResponse:
        rec = self.own_job(job_id, who)
        if rec["state"] in ("queued", "running"):
            raise HTTPException(409, f"job {job_id} is {rec['state']}; poll /jobs/{job_id}")
        if rec["state"] == "failed":
            raise HTTPException(409, f"job {job_id} failed: {rec['error']}")
        if what in VERDICT_FIRST:
            why = _verdict(rec)
            if why is not None:
                raise HTTPException(409, {"message": f"job {job_id}: {why}",
                                          "audit_passed": rec["result"].get("audit_passed"),
                                          "audit": rec["result"].get("audit")})
        path = Path(rec["folder"]) / OUT / RESULT_FILES[what]
        if not path.is_file():
            raise HTTPException(404, f"job {job_id} has no {what}")
        return FileResponse(path, media_type=MEDIA_TYPES[what],
                            filename=f"{job_id[:8]}-{RESULT_FILES[what]}")


def _service_routes(app: FastAPI, pool: WorkerPool, caller) -> None:
    """``/health``, ``/openapi.json`` and ``/docs``."""

    @app.get("/health", tags=["service"], dependencies=[Depends(known_parameters)])
    def health() -> dict:
        """Liveness and the worker pool (no token needed)."""
        return {**pool.health(), "version": __version__}

    @app.get("/openapi.json", tags=["service"], include_in_schema=False)
    def openapi(who: Principal = Depends(caller)) -> dict:
        return app.openapi()

    @app.get("/docs", tags=["service"], include_in_schema=False)
    def docs(who: Principal = Depends(caller)) -> HTMLResponse:
        return HTMLResponse(endpoint_page(app.openapi()))


def _job_routes(app: FastAPI, jobs: _Jobs, caller) -> None:
    """Submit a job, list the caller's jobs, a job's state."""

    @app.post("/jobs", status_code=202, tags=["jobs"])
    def submit(spec: UploadFile = File(..., description="job file, TOML or JSON"),
               files: list[UploadFile] = File(default=[], description="input files named "
                                                                       "by the spec"),
               who: Principal = Depends(caller)) -> dict:
        """Submit a job: its spec and the files it names.  Runs in the worker pool."""
        return jobs.submit(spec, files, who)

    @app.get("/jobs", tags=["jobs"])
    def list_jobs(limit: int = 100, everyone: bool = Query(False, alias="all"),
                  who: Principal = Depends(caller)) -> list[dict]:
        """The caller's recent jobs, newest first (``all=true``: everyone's, admin only)."""
        if everyone and not who.admin:
            raise HTTPException(403, "listing every principal's jobs needs an admin token")
        recs = jobs.store.list(None if everyone else who.name, max(1, min(limit, 1000)))
        return [jobs.public(r, with_owner=everyone) for r in recs]

    @app.get("/jobs/{job_id}", tags=["jobs"])
    def status(job_id: str, who: Principal = Depends(caller)) -> dict:
        """State (queued, running, finished, failed), progress 0..1, step, result summary."""
        return jobs.public(jobs.own_job(job_id, who))


def _result_routes(app: FastAPI, jobs: _Jobs, caller) -> None:
    """A finished job's result files."""

    @app.get("/jobs/{job_id}/table", tags=["results"], response_class=FileResponse)
    def table(job_id: str, who: Principal = Depends(caller)):
        """The published table (CSV; suppressed cells have no value); 409 unless the
        audit passed."""
        return jobs.result_file(job_id, "table", who)

    @app.get("/jobs/{job_id}/audit", tags=["results"], response_class=FileResponse)
    def audit(job_id: str, who: Principal = Depends(caller)):
        """The audit: feasibility interval of every cell (CSV, confidential)."""
        return jobs.result_file(job_id, "audit", who)

    @app.get("/jobs/{job_id}/report", tags=["results"], response_class=FileResponse)
    def report(job_id: str, who: Principal = Depends(caller)):
        """The HTML report (confidential)."""
        return jobs.result_file(job_id, "report", who)

    @app.get("/jobs/{job_id}/trail", tags=["results"], response_class=FileResponse)
    def trail(job_id: str, who: Principal = Depends(caller)):
        """The JSON audit trail (checksums of inputs and outputs, parameters, versions,
        public results)."""
        return jobs.result_file(job_id, "trail", who)

    @app.get("/jobs/{job_id}/summary", tags=["results"], response_class=FileResponse)
    def summary(job_id: str, who: Principal = Depends(caller)):
        """Counts, the verdict and the value figures that disclose nothing more than the
        published table (JSON, shareable)."""
        return jobs.result_file(job_id, "summary", who)

    @app.get("/jobs/{job_id}/cells", tags=["results"], response_class=FileResponse)
    def cells(job_id: str, who: Principal = Depends(caller)):
        """Every cell with its value and final status (CSV, confidential); 409 unless the
        audit passed."""
        return jobs.result_file(job_id, "cells", who)


def _delete_route(app: FastAPI, jobs: _Jobs, caller) -> None:
    """Delete an ended job (registered after the result routes)."""

    @app.delete("/jobs/{job_id}", tags=["jobs"])
    def delete(job_id: str, who: Principal = Depends(caller)) -> dict:
        """Delete an ended (finished or failed) job and its files."""
        rec = jobs.own_job(job_id, who)
        if not jobs.store.delete(job_id, owner=who.name):
            raise HTTPException(409, f"job {job_id} is {rec['state']}")
        shutil.rmtree(rec["folder"], ignore_errors=True)
        return {"id": job_id, "deleted": True}


def _install_error_handlers(app: FastAPI) -> None:
    """Error bodies that hold neither the request's content nor a server path."""

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError):
        # FastAPI's default echoes the offending input (a whole CSV sent as a form field)
        problems = [{"loc": [str(x) for x in e.get("loc", ())], "msg": str(e.get("msg", ""))}
                    for e in exc.errors()]
        return JSONResponse(status_code=422, content={"detail": problems})

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):
        detail = exc.detail
        if isinstance(detail, str):
            detail = strip_paths(detail)
        return JSONResponse(status_code=exc.status_code, content={"detail": detail},
                            headers=getattr(exc, "headers", None))

    @app.exception_handler(InputError)
    async def input_error(request: Request, exc: InputError):
        return JSONResponse(status_code=422, content={"detail": strip_paths(str(exc))})

    @app.exception_handler(Exception)
    async def internal_error(request: Request, exc: Exception):
        log.error("request %s %s failed with %s", request.method, request.url.path,
                  type(exc).__name__)
        return JSONResponse(status_code=500, content={"detail": "internal error"})
