"""The service attacked as issue-style attackers would, against a real server.

``tabprotect serve`` runs as a subprocess on 127.0.0.1 (a free port) with principals
alice, bob, an admin and one ``TABPROTECT_TOKENS`` token; a distinctive value is planted in
a primary cell. Each test is one attack that must now fail: reading another principal's
job, reading server files through a spec, fetching a table whose audit failed, deriving
the planted value from a summary, finding data or server paths in error bodies, killing
the server or a worker to make a job run twice, leaving uploads behind, and reaching the
API description without a token.
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from scipy.optimize import linprog

from tabprotect.errors import InputError
from tabprotect.io.job import load_job
from tabprotect.service.config import hash_token
from tabprotect.service.worker import RESULT_FILES

import service_server

TOKENS = {"alice": "alice-token-0123456789", "bob": "bob-token-0123456789",
          "ops": "ops-token-0123456789"}
LEGACY = "legacy-token-0123456789"
PLANTED = "31337.77"
START_SECONDS = 60.0


def auth(name: str) -> dict:
    token = LEGACY if name == "legacy" else TOKENS[name]
    return {"Authorization": f"Bearer {token}"}


def children(pid: int) -> list[int]:
    """Processes whose parent is ``pid`` (Linux /proc)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return out


def is_worker(pid: int) -> bool:
    try:
        return b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


class Server:
    """``tabprotect serve`` in a subprocess with a config of principals and limits."""

    def __init__(self, folder: Path, **settings):
        self.folder = folder
        self.store = folder / "store" / "jobs.sqlite"
        self.settings = {"workers": 2, "max_queued_per_principal": 5, "max_time_limit": 30,
                         "max_columns": 50, "max_rows": 5000, "heartbeat_seconds": 0.2,
                         "lease_seconds": 1.0, "max_request_mb": 5, **settings}
        self.proc: subprocess.Popen | None = None
        self.seen: set[int] = set()

    def start(self) -> "Server":
        self.port = service_server.free_port()
        lines = ["[service]", 'host = "127.0.0.1"', f"port = {self.port}",
                 f'store = "{self.store}"', 'log_level = "warning"']
        lines += [f"{k} = {json.dumps(v)}" for k, v in self.settings.items()]
        for name, token in TOKENS.items():
            lines += [f"[service.principals.{name}]",
                      f'token_sha256 = "{hash_token(token)}"']
            if name == "ops":
                lines.append("admin = true")
        config = self.folder / "service.toml"
        config.write_text("\n".join(lines) + "\n")
        env = {**os.environ, "TABPROTECT_TOKENS": LEGACY}
        self.log = open(self.folder / "server.log", "ab")
        self.proc = subprocess.Popen([sys.executable, "-m", "tabprotect.cli", "serve",
                                      "--config", str(config)], env=env,
                                     stdout=self.log, stderr=self.log)
        self.url = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + START_SECONDS
        while True:
            assert self.proc.poll() is None, "server exited at start"
            assert time.monotonic() < deadline, "server did not start"
            with contextlib.suppress(httpx.HTTPError):
                health = httpx.get(self.url + "/health", timeout=2).json()
                if health["workers_alive"] == self.settings["workers"]:
                    break
            time.sleep(0.1)
        self.seen |= set(children(self.proc.pid))
        return self

    def client(self, name: str) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers=auth(name), timeout=30)

    def workers(self) -> list[int]:
        pids = [p for p in children(self.proc.pid) if is_worker(p)]
        self.seen |= set(pids)
        return pids

    def stop(self, sig=signal.SIGTERM) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.workers()
            self.proc.send_signal(sig)
            self.proc.wait(timeout=30)
        self.log.close()

    def cleanup(self) -> None:
        """Stop the server and anything it started that is still there (a failed test)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        for pid in self.seen:
            if alive(pid):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("security")).start()
    try:
        yield srv
    finally:
        srv.stop()
        srv.cleanup()


# ---------------------------------------------------------------- jobs
SPEC = """
[input]
cells = "cells.csv"
dimensions = ["region", "size"]
status = "status"
upl = "upl"
lpl = "lpl"
compute_totals = true
[hierarchies.region]
codes = ["A", "B"]
total = "T"
[hierarchies.size]
codes = ["s1", "s2"]
total = "T"
"""


def planted_cells(level: float) -> str:
    """A 2x2 table (totals computed) whose primary A|s1 holds the planted value; its three
    partners are secondaries. The primary's interval is 31337.77 -500/+600: protection
    ``level`` 400 passes, 2000 fails."""
    return ("region,size,value,status,upl,lpl\n"
            f"A,s1,{PLANTED},U,{level},{level}\nA,s2,500,M,0,0\n"
            "B,s1,800,M,0,0\nB,s2,600,M,0,0\n")


def files(cells: str, spec: str = SPEC, extra: list | None = None) -> list:
    return [("spec", ("job.toml", spec.encode(), "application/toml")),
            ("files", ("cells.csv", cells.encode(), "text/csv"))] + (extra or [])


def submit(client: httpx.Client, parts: list) -> str:
    r = client.post("/jobs", files=parts)
    assert r.status_code == 202, r.text
    return r.json()["id"]


def wait(client: httpx.Client, job_id: str, states=("finished", "failed"),
         timeout: float = 90.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rec = client.get(f"/jobs/{job_id}").json()
        if rec["state"] in states:
            return rec
        time.sleep(0.05)
    raise AssertionError(f"job did not reach {states} in {timeout} s")


@pytest.fixture(scope="module")
def alice_job(server):
    with server.client("alice") as alice:
        job_id = submit(alice, files(planted_cells(400)))
        rec = wait(alice, job_id)
    assert rec["state"] == "finished" and rec["result"]["audit_passed"] is True, rec
    return job_id


# ---------------------------------------------------------------- 1. isolation
def test_another_principal_cannot_list_read_fetch_or_delete(server, alice_job):
    with server.client("bob") as bob, server.client("alice") as alice, \
            server.client("ops") as ops, server.client("legacy") as legacy:
        assert alice_job not in [j["id"] for j in bob.get("/jobs").json()]
        assert alice_job not in [j["id"] for j in legacy.get("/jobs").json()]
        for path in ("",) + tuple(f"/{what}" for what in RESULT_FILES):   # every route
            r = bob.get(f"/jobs/{alice_job}{path}")
            assert r.status_code == 404 and PLANTED not in r.text, path
        assert bob.delete(f"/jobs/{alice_job}").status_code == 404
        assert bob.get("/jobs", params={"all": "true"}).status_code == 403
        # the owner still has it, and the planted value only in her confidential cells
        assert alice.get(f"/jobs/{alice_job}").json()["state"] == "finished"
        assert PLANTED in alice.get(f"/jobs/{alice_job}/cells").text
        listed = {j["id"]: j["owner"] for j in ops.get("/jobs", params={"all": "true"}).json()}
        assert listed[alice_job] == "alice"
        assert ops.get(f"/jobs/{alice_job}").status_code == 404   # listing is not reading


# ---------------------------------------------------------------- 2. confinement
@pytest.mark.parametrize("where, value", [
    ("hrc", "/etc/passwd"), ("hrc", "../../../../etc/passwd"), ("pairs", "/etc/hostname"),
    ("pairs", "sub/region.csv"), ("hrc", "~/x.hrc")])
def test_spec_paths_outside_the_upload_folder_are_refused(server, alice_job, where, value):
    other = str(server.store.parent / "jobs" / alice_job / "out" / "report.html")
    for target in (value, other):
        spec = SPEC.replace('codes = ["A", "B"]', f'{where} = "{target}"')
        with server.client("bob") as bob:
            r = bob.post("/jobs", files=files(planted_cells(400), spec))
        assert r.status_code == 422, r.text
        assert f"[hierarchies.region] {where}" in r.json()["detail"]
        assert "passwd" not in r.text and str(server.folder) not in r.text


def test_path_with_a_nul_byte_is_refused(server):
    spec = {"input": {"cells": "cells.csv", "dimensions": ["region", "size"]},
            "hierarchies": {"region": {"hrc": "a\u0000b.hrc"}}}
    parts = files(planted_cells(400))
    parts[0] = ("spec", ("job.json", json.dumps(spec).encode(), "application/json"))
    with server.client("bob") as bob:
        r = bob.post("/jobs", files=parts)
    assert r.status_code == 422 and "[hierarchies.region] hrc" in r.json()["detail"]


def test_deeply_nested_spec_is_refused(server):
    for depth in (900, 100_000):      # below and above the parser's own recursion limit
        deep = b'{"input": ' + b"[" * depth + b"]" * depth + b"}"
        with server.client("bob") as bob:
            r = bob.post("/jobs", files=[("spec", ("job.json", deep, "application/json"))])
        assert r.status_code == 422 and "nested" in r.json()["detail"]


def test_symlink_out_of_the_job_folder_is_refused(tmp_path):
    root = tmp_path / "input"
    root.mkdir()
    (tmp_path / "secret.csv").write_text("parent,child\n")
    (root / "region.csv").symlink_to(tmp_path / "secret.csv")
    job = load_job(spec={"input": {}}, base=root)
    job.root = root
    with pytest.raises(InputError, match="outside its folder"):
        job.resolve("region.csv")


def test_upload_limits(server):
    with server.client("bob") as bob:
        wide = ",".join(f"c{i}" for i in range(60)) + "\n" + ",".join(["1"] * 60) + "\n"
        start = time.monotonic()
        r = bob.post("/jobs", files=files(wide))
        assert r.status_code == 422 and "60 columns" in r.json()["detail"]
        assert time.monotonic() - start < 10
        long = "region,size,value\n" + "A,s1,1\n" * 6000
        r = bob.post("/jobs", files=files(long))
        assert r.status_code == 422 and "rows" in r.json()["detail"]
        many = [("files", (f"f{i}.csv", b"a\n1\n", "text/csv")) for i in range(25)]
        assert bob.post("/jobs", files=files(planted_cells(400), extra=many)).status_code == 422
        big = [("files", ("big.csv", b"a\n" + b"1\n" * 3_000_000, "text/csv"))]
        assert bob.post("/jobs", files=files(planted_cells(400), extra=big)).status_code == 413
        spec = SPEC + '[audit]\ntime_limit = 99999\n'
        r = bob.post("/jobs", files=files(planted_cells(400), spec))
        assert r.status_code == 422 and "[audit] time_limit" in r.json()["detail"]


# ---------------------------------------------------------------- 3. verdict first
def test_failed_audit_serves_no_table(server):
    with server.client("alice") as alice:
        job_id = submit(alice, files(planted_cells(2000)))
        rec = wait(alice, job_id)
        assert rec["state"] == "finished" and rec["result"]["audit_passed"] is False
        assert "table" not in rec["links"] and "cells" not in rec["links"]
        for what in ("table", "cells"):
            r = alice.get(f"/jobs/{job_id}/{what}")
            assert r.status_code == 409, what
            detail = r.json()["detail"]
            assert "FAILED" in detail["message"] and detail["audit_passed"] is False
            assert detail["audit"]["unprotected_primary"] == 1
            assert PLANTED not in r.text
        assert alice.get(f"/jobs/{job_id}/report").status_code == 200


# ---------------------------------------------------------------- 4. summaries
def _primary_interval(extra_rows):
    """Independent LP over the 9 cells of the planted table: published cells fixed, the
    four suppressed ones free; ``extra_rows``: (coefficients over the 4, value)."""
    # suppressed x = (A|s1, A|s2, B|s1, B|s2); published margins
    A = [[1, 1, 0, 0], [0, 0, 1, 1], [1, 0, 1, 0], [0, 1, 0, 1]]
    b = [float(PLANTED) + 500, 1400, float(PLANTED) + 800, 1100]
    for coef, value in extra_rows:
        A.append(coef)
        b.append(value)
    ends = []
    for sign in (1, -1):
        res = linprog([sign, 0, 0, 0], A_eq=A, b_eq=b, bounds=[(0, None)] * 4, method="highs")
        assert res.status == 0
        ends.append(sign * res.fun)
    return tuple(ends)


def test_summaries_disclose_no_value(server, alice_job):
    with server.client("alice") as alice:
        listing = alice.get("/jobs").text
        record = alice.get(f"/jobs/{alice_job}").json()
        trail = alice.get(f"/jobs/{alice_job}/trail").text
        shared = alice.get(f"/jobs/{alice_job}/summary")
        assert shared.status_code == 200
    for text in (listing, json.dumps(record), trail, shared.text):
        assert PLANTED not in text
    summary = record["result"]["summary"]
    # which suppressed cells are primaries is not shared: no count or figure of either
    split = {"primary", "secondary", "value_secondary", "value_primary"}
    assert not split & (set(summary) | set(summary["withheld"]))
    # the released figure, as one more equation, leaves the primary's interval as it was
    released = [([1, 1, 1, 1], summary["value_suppressed"])]
    assert _primary_interval(released) == pytest.approx(_primary_interval([]))
    # the value of the secondaries alone would pin the primary down
    pinned = _primary_interval(released + [([0, 1, 1, 1], 1900.0)])
    assert pinned[0] == pytest.approx(float(PLANTED))


def test_health_tells_a_client_without_a_token_counts_only(server, alice_job):
    # a failed job of bob's with a file name and an error of its own beside alice's job
    with server.client("bob") as bob:
        bad = planted_cells(400).replace("A,s1,", "A,", 1)
        failing = bob.post("/jobs", files=files(bad))
        assert failing.status_code == 422
    health = httpx.get(server.url + "/health", timeout=10)
    assert health.status_code == 200
    body = health.json()
    # liveness, the pool and how many jobs wait or run: no job, owner, file or message
    assert set(body) == {"status", "pool", "workers", "workers_alive", "workers_replaced",
                         "jobs_queued", "jobs_running", "version"}
    assert all(isinstance(v, int) for k, v in body.items()
               if k not in ("status", "pool", "version"))
    for secret in (alice_job, alice_job[:8], "alice", "bob", "cells.csv", "31337",
                   str(server.folder)):
        assert secret not in health.text, secret
    # nor does the server's log hold a value
    assert "31337" not in (server.folder / "server.log").read_text(errors="replace")


# ---------------------------------------------------------------- 5. messages
def test_error_bodies_hold_no_data_and_no_server_path(server):
    bodies = []
    with server.client("alice") as alice:
        # a data row missing a field: its value lands in the 'size' column
        cells = planted_cells(400).replace("A,s1,", "A,", 1)
        r = alice.post("/jobs", files=files(cells))
        assert r.status_code == 422 and "column 'size'" in r.json()["detail"]
        bodies.append(r.text)
        # a CSV sent as a form field instead of a file: FastAPI's own 422
        r = alice.post("/jobs", data={"spec": planted_cells(400)},
                       files=[("files", ("cells.csv", b"a\n1\n", "text/csv"))])
        assert r.status_code == 422
        bodies.append(r.text)
        # a file-valued key without a suffix, not uploaded (was: the server path in 422)
        spec = SPEC.replace('codes = ["A", "B"]', 'pairs = "regionfile"')
        r = alice.post("/jobs", files=files(planted_cells(400), spec))
        assert r.status_code == 422 and "regionfile" in r.json()["detail"]
        bodies.append(r.text)
        for path in ("/jobs/" + "0" * 32, "/jobs/nope/table"):
            bodies.append(alice.get(path).text)
    for body in bodies:
        assert PLANTED not in body and "31337" not in body
        assert str(server.folder) not in body and "/jobs/" not in body.replace(
            "/jobs/" + "0" * 32, "")


# ---------------------------------------------------------------- 7. uploads on disk
def test_refused_submissions_leave_nothing_and_files_are_private(server, alice_job):
    with server.client("ops") as ops:
        ids = {j["id"] for j in ops.get("/jobs", params={"all": "true"}).json()}
    jobs_dir = server.store.parent / "jobs"
    assert {p.name for p in jobs_dir.iterdir()} == ids
    assert (server.store.parent.stat().st_mode & 0o777) == 0o700
    assert (jobs_dir.stat().st_mode & 0o777) == 0o700
    for path in server.store.parent.glob("jobs.sqlite*"):      # the database, WAL, index
        assert (path.stat().st_mode & 0o777) == 0o600, path.name
    folder = jobs_dir / alice_job
    assert (folder.stat().st_mode & 0o777) == 0o700
    for path in folder.rglob("*"):
        assert (path.stat().st_mode & 0o777) == (0o700 if path.is_dir() else 0o600), path
    # the trail lists every other output's checksum and no server path
    trail = json.loads((folder / "out" / "trail.json").read_text())
    outputs = {p.name for p in (folder / "out").iterdir()} - {"trail.json"}
    assert {o["file"] for o in trail["outputs"].values()} == outputs
    assert str(server.folder) not in json.dumps(trail)


# ---------------------------------------------------------------- 9. docs, links
def test_docs_need_a_token_and_work_offline(server, alice_job):
    assert httpx.get(server.url + "/docs").status_code == 401
    assert httpx.get(server.url + "/openapi.json").status_code == 401
    with server.client("bob") as bob:
        page = bob.get("/docs")
        assert page.status_code == 200 and "/jobs/{job_id}/table" in page.text
        assert "<script" not in page.text and "http" not in page.text
        assert bob.get("/openapi.json").json()["paths"]["/jobs"]["post"]
    with server.client("alice") as alice:
        rec = alice.get(f"/jobs/{alice_job}", headers={"Host": "evil.example"}).json()
    assert all(link.startswith(f"/jobs/{alice_job}") for link in rec["links"].values())


# ---------------------------------------------------------------- 6, 7. workers
def _lease_rows(store: Path) -> list[tuple]:
    import sqlite3
    con = sqlite3.connect(store)
    try:
        return con.execute("SELECT id, state, attempts, lease_owner FROM jobs").fetchall()
    finally:
        con.close()


def test_dead_worker_is_replaced_and_its_job_retried(tmp_path):
    srv = Server(tmp_path, workers=1, max_queued_per_principal=2).start()
    try:
        with srv.client("alice") as alice:
            job_id = submit(alice, files(planted_cells(400)))
            wait(alice, job_id, ("running",))
            second = submit(alice, files(planted_cells(400)))
            # the bound on queued jobs per principal
            assert alice.post("/jobs", files=files(planted_cells(400))).status_code == 429
            (worker,) = srv.workers()
            os.kill(worker, signal.SIGKILL)
            rec = wait(alice, job_id)
            assert rec["state"] == "finished" and rec["attempts"] == 2, rec
            assert wait(alice, second)["state"] == "finished"
            health = httpx.get(srv.url + "/health").json()
            assert health["workers_alive"] == 1 and health["workers_replaced"] >= 1
            assert health["status"] == "ok"
    finally:
        srv.stop()
        srv.cleanup()


# SIGKILL is the harder case (no shutdown code runs); SIGTERM restarts are slow-marked
@pytest.mark.parametrize("sig", [pytest.param(signal.SIGTERM, marks=pytest.mark.slow),
                                 signal.SIGKILL])
def test_server_killed_no_orphans_no_second_run(tmp_path, sig):
    srv = Server(tmp_path, workers=1).start()
    try:
        with srv.client("alice") as alice:
            job_id = submit(alice, files(planted_cells(400)))
            wait(alice, job_id, ("running",))
            waiting = submit(alice, files(planted_cells(400)))   # queued behind it
        workers = srv.workers()
        assert workers
        srv.stop(sig)
        deadline = time.monotonic() + 10
        while any(alive(p) for p in srv.seen):
            assert time.monotonic() < deadline, "a worker outlived the server"
            time.sleep(0.05)
        rows = {r[0]: r[1:3] for r in _lease_rows(srv.store)}
        # SIGTERM: queued again at once, the attempt not counted; SIGKILL: the lease
        # stays until it expires under the next server. Nothing runs without a server.
        expected = ("queued", 0) if sig == signal.SIGTERM else ("running", 1)
        assert rows == {job_id: expected, waiting: ("queued", 0)}
        time.sleep(1.0)
        assert {r[0]: r[1:3] for r in _lease_rows(srv.store)} == rows
        srv.start()
        with srv.client("alice") as alice:
            rec = wait(alice, job_id)
            assert rec["state"] == "finished", rec
            assert rec["attempts"] == (1 if sig == signal.SIGTERM else 2)
            assert alice.get(f"/jobs/{job_id}/table").status_code == 200
            assert wait(alice, waiting)["attempts"] == 1
        # the job folder holds its uploads and results, no work folder of the killed run
        folder = srv.store.parent / "jobs" / job_id
        assert sorted(p.name for p in folder.iterdir()) == ["input", "out"]
    finally:
        srv.stop()
        srv.cleanup()


@pytest.mark.slow
def test_job_running_too_long_is_stopped(tmp_path):
    # a fresh worker spends longer than this importing what the job needs
    srv = Server(tmp_path, workers=1, max_job_seconds=0.3).start()
    try:
        with srv.client("alice") as alice:
            job_id = submit(alice, files(planted_cells(400)))
            rec = wait(alice, job_id)
            assert rec["state"] == "failed" and "longer than" in rec["error"], rec
            assert alice.get(f"/jobs/{job_id}/table").status_code == 409
        deadline = time.monotonic() + 30
        while httpx.get(srv.url + "/health").json()["workers_replaced"] < 1:
            assert time.monotonic() < deadline
            time.sleep(0.1)
    finally:
        srv.stop()
        srv.cleanup()
