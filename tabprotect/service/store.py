"""Job records in an embedded SQLite database that survives a restart.

One row per job: its state (``queued``, ``running``, ``finished``, ``failed``), progress,
timestamps, the spec, the error message and the result summary (counts and measures, never
a cell value).  Each call opens its own connection, so the store is safe to use from the
web server's threads and from worker processes at once (WAL journal).
"""
from __future__ import annotations

import json
import sqlite3
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

STATES = ("queued", "running", "finished", "failed")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    progress REAL NOT NULL DEFAULT 0,
    step TEXT NOT NULL DEFAULT '',
    created REAL NOT NULL,
    started REAL,
    ended REAL,
    spec TEXT NOT NULL,
    files TEXT NOT NULL,
    folder TEXT NOT NULL,
    error TEXT,
    result TEXT,
    uploads_deleted INTEGER NOT NULL DEFAULT 0
)
"""


class JobStore:
    """SQLite-backed job records.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> store = JobStore(pathlib.Path(tempfile.mkdtemp()) / "jobs.sqlite")
    >>> job_id = store.create({"input": {}}, ["cells.csv"], "/tmp/x")
    >>> store.get(job_id)["state"]
    'queued'
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as con:
            con.execute("PRAGMA journal_mode=WAL")
            con.execute(_SCHEMA)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        con = sqlite3.connect(self.path, timeout=30.0)
        con.row_factory = sqlite3.Row
        try:
            with con:
                yield con
        finally:
            con.close()

    @staticmethod
    def _record(row: sqlite3.Row | None) -> dict[str, Any] | None:
        if row is None:
            return None
        rec = dict(row)
        rec["spec"] = json.loads(rec["spec"])
        rec["files"] = json.loads(rec["files"])
        rec["result"] = json.loads(rec["result"]) if rec["result"] else None
        rec["uploads_deleted"] = bool(rec["uploads_deleted"])
        return rec

    def create(self, spec: dict, files: list[str], folder: str | Path,
               job_id: str | None = None) -> str:
        job_id = job_id or uuid.uuid4().hex
        with self._connect() as con:
            con.execute("INSERT INTO jobs (id, state, created, spec, files, folder) "
                        "VALUES (?, 'queued', ?, ?, ?, ?)",
                        (job_id, time.time(), json.dumps(spec), json.dumps(files),
                         str(folder)))
        return job_id

    def get(self, job_id: str) -> dict[str, Any] | None:
        with self._connect() as con:
            row = con.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return self._record(row)

    def list(self, limit: int = 100) -> list[dict[str, Any]]:
        with self._connect() as con:
            rows = con.execute("SELECT * FROM jobs ORDER BY created DESC LIMIT ?",
                               (limit,)).fetchall()
        return [self._record(r) for r in rows]

    def start(self, job_id: str) -> None:
        with self._connect() as con:
            con.execute("UPDATE jobs SET state='running', started=?, progress=0, step='started'"
                        " WHERE id=?", (time.time(), job_id))

    def progress(self, job_id: str, step: str, fraction: float) -> None:
        with self._connect() as con:
            con.execute("UPDATE jobs SET progress=?, step=? WHERE id=? AND state='running'",
                        (float(fraction), step, job_id))

    def finish(self, job_id: str, result: dict) -> None:
        with self._connect() as con:
            con.execute("UPDATE jobs SET state='finished', progress=1, step='done', ended=?, "
                        "result=? WHERE id=?", (time.time(), json.dumps(result), job_id))

    def fail(self, job_id: str, error: str) -> None:
        with self._connect() as con:
            con.execute("UPDATE jobs SET state='failed', ended=?, error=?, step='failed' "
                        "WHERE id=?", (time.time(), error, job_id))

    def unfinished(self) -> list[str]:
        """Jobs queued or running (e.g. when the service stopped): to run again."""
        with self._connect() as con:
            rows = con.execute("SELECT id FROM jobs WHERE state IN ('queued', 'running') "
                               "ORDER BY created").fetchall()
        return [r["id"] for r in rows]

    def requeue(self, job_id: str) -> None:
        with self._connect() as con:
            con.execute("UPDATE jobs SET state='queued', progress=0, step='queued (restart)', "
                        "started=NULL WHERE id=?", (job_id,))

    def ended_before(self, when: float) -> list[dict[str, Any]]:
        with self._connect() as con:
            rows = con.execute("SELECT * FROM jobs WHERE state IN ('finished', 'failed') "
                               "AND ended < ?", (when,)).fetchall()
        return [self._record(r) for r in rows]

    def mark_uploads_deleted(self, job_id: str) -> None:
        with self._connect() as con:
            con.execute("UPDATE jobs SET uploads_deleted=1 WHERE id=?", (job_id,))

    def delete(self, job_id: str) -> None:
        with self._connect() as con:
            con.execute("DELETE FROM jobs WHERE id=?", (job_id,))
