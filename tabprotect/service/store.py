"""Job records in an embedded SQLite database that survives a restart.

One row per job: its owner (a principal's name), state (``queued``, ``running``,
``finished``, ``failed``), progress, timestamps, the spec, the error message, the public
result summary (counts and figures that passed :func:`tabprotect.public_summary`) and the
**lease** of the worker running it. A worker claims a queued job and renews the lease
(``lease_owner``, ``heartbeat``) while it runs; every write of a running job checks the
lease in the same statement, so a job is run by at most one worker at a time and a worker
that lost its lease cannot record a result. Each call opens its own connection, so the
store is safe to use from the web server's threads and from worker processes at once
(WAL journal). The database file is created readable by its owner only.
"""
from __future__ import annotations

import json
import os
import sqlite3
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

STATES = ("queued", "running", "finished", "failed")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL DEFAULT '',
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
    uploads_deleted INTEGER NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0,
    lease_owner TEXT,
    heartbeat REAL
)
"""
# columns added to stores written before principals and leases existed
_ADDED = {"owner": "TEXT NOT NULL DEFAULT ''", "attempts": "INTEGER NOT NULL DEFAULT 0",
          "lease_owner": "TEXT", "heartbeat": "REAL"}


def private_dir(path: str | Path) -> Path:
    """Create ``path`` (and missing parents) with mode 0700; existing folders are kept."""
    path = Path(path)
    if not path.is_dir():
        if not path.parent.is_dir():
            private_dir(path.parent)
        path.mkdir(mode=0o700, exist_ok=True)
        os.chmod(path, 0o700)
    return path


class JobStore:
    """SQLite-backed job records.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> store = JobStore(pathlib.Path(tempfile.mkdtemp()) / "jobs.sqlite")
    >>> job_id = store.create({"input": {}}, ["cells.csv"], "jobs/x", owner="alice")
    >>> store.get(job_id)["state"], store.get(job_id, owner="bob")
    ('queued', None)
    >>> store.claim("w1") == job_id, store.claim("w2")
    (True, None)
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        private_dir(self.path.parent)
        if not self.path.exists():
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600)
            os.close(fd)
        con = sqlite3.connect(self.path, timeout=30.0)
        try:
            con.execute("PRAGMA journal_mode=WAL")   # outside any transaction
        finally:
            con.close()
        with self._connect() as con:
            con.execute(_SCHEMA)
            have = {r["name"] for r in con.execute("PRAGMA table_info(jobs)")}
            for col, decl in _ADDED.items():
                if col not in have:
                    con.execute(f"ALTER TABLE jobs ADD COLUMN {col} {decl}")

    @contextmanager
    def _connect(self, write: bool = True) -> Iterator[sqlite3.Connection]:
        """One transaction; a writing one takes the write lock at its start, so that what
        it reads (a lease, a count) cannot change before it writes."""
        con = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        con.row_factory = sqlite3.Row
        try:
            con.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield con
            except BaseException:
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")
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

    # ------------------------------------------------------------ the API's side
    def create(self, spec: dict, files: list[str], folder: str | Path, owner: str,
               job_id: str | None = None) -> str:
        job_id = job_id or uuid.uuid4().hex
        with self._connect() as con:
            con.execute("INSERT INTO jobs (id, owner, state, created, spec, files, folder) "
                        "VALUES (?, ?, 'queued', ?, ?, ?, ?)",
                        (job_id, owner, time.time(), json.dumps(spec), json.dumps(files),
                         str(folder)))
        return job_id

    def get(self, job_id: str, owner: str | None = None) -> dict[str, Any] | None:
        """The job, or None (also when ``owner`` is given and is not the job's owner)."""
        with self._connect(write=False) as con:
            row = con.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
        rec = self._record(row)
        if rec is not None and owner is not None and rec["owner"] != owner:
            return None
        return rec

    def list(self, owner: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        """Newest first; only ``owner``'s jobs unless ``owner`` is None."""
        with self._connect(write=False) as con:
            if owner is None:
                rows = con.execute("SELECT * FROM jobs ORDER BY created DESC LIMIT ?",
                                   (limit,)).fetchall()
            else:
                rows = con.execute("SELECT * FROM jobs WHERE owner = ? ORDER BY created DESC "
                                   "LIMIT ?", (owner, limit)).fetchall()
        return [self._record(r) for r in rows]

    def pending(self, owner: str) -> int:
        """Jobs of ``owner`` queued or running."""
        with self._connect() as con:
            return con.execute("SELECT COUNT(*) FROM jobs WHERE owner = ? AND state IN "
                               "('queued', 'running')", (owner,)).fetchone()[0]

    def counts(self) -> dict[str, int]:
        with self._connect(write=False) as con:
            rows = con.execute("SELECT state, COUNT(*) AS n FROM jobs GROUP BY state")
            return {r["state"]: r["n"] for r in rows}

    def delete(self, job_id: str, owner: str | None = None) -> bool:
        """Delete an ended job's record; False if it is queued, running or not there."""
        with self._connect() as con:
            cur = con.execute("DELETE FROM jobs WHERE id = ? AND state IN ('finished', "
                              "'failed')" + (" AND owner = ?" if owner is not None else ""),
                              (job_id,) if owner is None else (job_id, owner))
            return cur.rowcount == 1

    # ------------------------------------------------------------ the workers' side
    def claim(self, worker: str) -> str | None:
        """Take the oldest queued job: it becomes ``running`` under ``worker``'s lease."""
        now = time.time()
        with self._connect() as con:
            row = con.execute(
                "UPDATE jobs SET state='running', lease_owner=?, heartbeat=?, started=?, "
                "attempts=attempts+1, progress=0, step='started' WHERE id = (SELECT id FROM "
                "jobs WHERE state='queued' ORDER BY created LIMIT 1) AND state='queued' "
                "RETURNING id", (worker, now, now)).fetchone()
        return None if row is None else row["id"]

    def heartbeat(self, job_id: str, worker: str) -> bool:
        """Renew the lease; False when ``worker`` no longer holds it."""
        with self._connect() as con:
            cur = con.execute("UPDATE jobs SET heartbeat=? WHERE id=? AND state='running' "
                              "AND lease_owner=?", (time.time(), job_id, worker))
            return cur.rowcount == 1

    def progress(self, job_id: str, worker: str, step: str, fraction: float) -> bool:
        with self._connect() as con:
            cur = con.execute("UPDATE jobs SET progress=?, step=?, heartbeat=? WHERE id=? "
                              "AND state='running' AND lease_owner=?",
                              (float(fraction), step, time.time(), job_id, worker))
            return cur.rowcount == 1

    def finish(self, job_id: str, worker: str, result: dict,
               commit: Callable[[], None]) -> bool:
        """Record the result if ``worker`` still holds the lease: ``commit`` (which moves
        the results into place) runs inside the same transaction, before the state
        change; a lost lease or a failing ``commit`` leaves the job as it was."""
        with self._connect() as con:
            held = con.execute("SELECT 1 FROM jobs WHERE id=? AND state='running' AND "
                               "lease_owner=?", (job_id, worker)).fetchone()
            if held is None:
                return False
            commit()
            con.execute("UPDATE jobs SET state='finished', progress=1, step='done', ended=?, "
                        "result=?, lease_owner=NULL WHERE id=?",
                        (time.time(), json.dumps(result), job_id))
        return True

    def fail(self, job_id: str, error: str, worker: str | None = None) -> bool:
        """Fail the job (only if ``worker`` holds its lease, when given)."""
        with self._connect() as con:
            if worker is None:
                cur = con.execute("UPDATE jobs SET state='failed', ended=?, error=?, "
                                  "step='failed', lease_owner=NULL WHERE id=? AND state IN "
                                  "('queued', 'running')", (time.time(), error, job_id))
            else:
                cur = con.execute("UPDATE jobs SET state='failed', ended=?, error=?, "
                                  "step='failed', lease_owner=NULL WHERE id=? AND "
                                  "state='running' AND lease_owner=?",
                                  (time.time(), error, job_id, worker))
            return cur.rowcount == 1

    def release(self, worker: str, reason: str, max_attempts: int,
                count_attempt: bool = True) -> list[tuple[str, str]]:
        """The jobs leased by ``worker`` (which is gone): queued again while they have
        attempts left, else failed with ``reason``. Returns ``(id, new state)`` pairs."""
        return self._release("lease_owner = ?", (worker,), reason, max_attempts,
                             count_attempt)

    def release_expired(self, lease_seconds: float, reason: str, max_attempts: int,
                        keep: tuple[str, ...] = ()) -> list[tuple[str, str]]:
        """Like :meth:`release` for running jobs whose lease was not renewed for
        ``lease_seconds`` (their worker is gone), except those leased by ``keep``."""
        marks = ",".join("?" * len(keep)) or "''"
        return self._release(f"heartbeat < ? AND lease_owner NOT IN ({marks})",
                             (time.time() - lease_seconds, *keep), reason, max_attempts,
                             True)

    def _release(self, where: str, args: tuple, reason: str, max_attempts: int,
                 count_attempt: bool) -> list[tuple[str, str]]:
        out = []
        with self._connect() as con:
            rows = con.execute(f"SELECT id, attempts FROM jobs WHERE state='running' AND "
                               f"{where}", args).fetchall()
            for row in rows:
                attempts = row["attempts"] - (0 if count_attempt else 1)
                if attempts < max_attempts:
                    con.execute("UPDATE jobs SET state='queued', progress=0, step=?, "
                                "started=NULL, lease_owner=NULL, heartbeat=NULL, attempts=? "
                                "WHERE id=?", (f"queued again ({reason})", attempts,
                                               row["id"]))
                    out.append((row["id"], "queued"))
                else:
                    con.execute("UPDATE jobs SET state='failed', ended=?, error=?, "
                                "step='failed', lease_owner=NULL WHERE id=?",
                                (time.time(), f"{reason}; not run again (started "
                                 f"{attempts} times)", row["id"]))
                    out.append((row["id"], "failed"))
        return out

    def leased_by(self, worker: str) -> list[dict[str, Any]]:
        with self._connect(write=False) as con:
            rows = con.execute("SELECT * FROM jobs WHERE state='running' AND lease_owner=?",
                               (worker,)).fetchall()
        return [self._record(r) for r in rows]

    # ------------------------------------------------------------ retention
    def ended_before(self, when: float) -> list[dict[str, Any]]:
        with self._connect(write=False) as con:
            rows = con.execute("SELECT * FROM jobs WHERE state IN ('finished', 'failed') "
                               "AND ended < ?", (when,)).fetchall()
        return [self._record(r) for r in rows]

    def ids(self) -> set[str]:
        with self._connect(write=False) as con:
            return {r["id"] for r in con.execute("SELECT id FROM jobs")}

    def mark_uploads_deleted(self, job_id: str) -> None:
        with self._connect() as con:
            con.execute("UPDATE jobs SET uploads_deleted=1 WHERE id=?", (job_id,))
