"""The HTTP service, served by uvicorn on localhost and called with a real HTTP client."""
import contextlib
import hashlib
import io
import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from pathlib import Path

import httpx
import numpy as np
import pandas as pd
import pytest

from tabprotect.audit import audit
from tabprotect.io.job import build_table, load_job
from tabprotect.service.app import create_app
from tabprotect.service.config import load_config

import service_server

TOKEN = "test-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
DEMO = resources.files("tabprotect") / "data" / "demo_audit"
TIMEOUT = 60.0


@contextlib.contextmanager
def serve(store: Path, **settings):
    """Run the app with uvicorn in a background thread; yield its base URL."""
    with service_server.serve(store, TOKEN, **{"workers": 2, "pool": "process", **settings}) as url:
        yield url


def demo_files(status_changes: dict | None = None) -> list:
    """The bundled demo job's spec and files, optionally with changed statuses."""
    cells = (DEMO / "cells.csv").read_bytes()
    if status_changes:
        frame = pd.read_csv(io.BytesIO(cells), dtype={"region": str, "activity": str})
        for (r, a), s in status_changes.items():
            frame.loc[(frame.region == r) & (frame.activity == a), "status"] = s
        cells = frame.to_csv(index=False).encode()
    return [("spec", ("job.toml", (DEMO / "job.toml").read_bytes(), "application/toml")),
            ("files", ("cells.csv", cells, "text/csv")),
            ("files", ("region.csv", (DEMO / "region.csv").read_bytes(), "text/csv"))]


def wait_finished(client: httpx.Client, job_id: str) -> dict:
    deadline = time.monotonic() + TIMEOUT
    seen_progress = []
    while time.monotonic() < deadline:
        rec = client.get(f"/jobs/{job_id}").json()
        seen_progress.append(rec["progress"])
        assert 0 <= rec["progress"] <= 1
        if rec["state"] in ("finished", "failed"):
            return rec
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} did not finish in {TIMEOUT} s")


def local_audit(cells_bytes: bytes | None = None, tmp: Path | None = None):
    """The independent audit of the same table, computed here."""
    if cells_bytes is not None:
        for name in ("job.toml", "region.csv"):
            (tmp / name).write_bytes((DEMO / name).read_bytes())
        (tmp / "cells.csv").write_bytes(cells_bytes)
        table = build_table(load_job(tmp / "job.toml"))
    else:
        with resources.as_file(DEMO / "job.toml") as job:
            table = build_table(load_job(job))
    return table, audit(table)


@pytest.fixture
def store(tmp_path):
    return tmp_path / "service" / "jobs.sqlite"


@pytest.fixture(scope="module")
def shared_url(tmp_path_factory):
    """One server with a process pool for several tests (worker start-up is the cost)."""
    with serve(tmp_path_factory.mktemp("shared") / "jobs.sqlite") as url:
        yield url


def test_submit_poll_fetch(shared_url):
    with httpx.Client(base_url=shared_url, headers=AUTH, timeout=30) as client:
        assert client.get("/health").json()["status"] == "ok"
        resp = client.post("/jobs", files=demo_files())
        assert resp.status_code == 202, resp.text
        job_id = resp.json()["id"]
        assert resp.json()["state"] in ("queued", "running", "finished")
        rec = wait_finished(client, job_id)
        assert rec["state"] == "finished", rec["error"]
        assert rec["progress"] == 1.0 and rec["result"]["audit_passed"] is True
        assert set(rec["links"]) >= {"table", "audit", "report", "trail"}

        table_csv = client.get(f"/jobs/{job_id}/table")
        assert table_csv.status_code == 200
        assert table_csv.headers["content-type"].startswith("text/csv")
        published = pd.read_csv(io.StringIO(table_csv.text), dtype={"region": str})
        hidden = published["status"] == "X"     # primary and secondary alike
        assert hidden.sum() == 8 and published.loc[hidden, "value"].isna().all()

        # the served audit equals an independent audit computed here
        table, expected = local_audit()
        served = pd.read_csv(io.StringIO(client.get(f"/jobs/{job_id}/audit").text))
        assert np.allclose(served["lower"], expected.lower[expected.unpublished])
        assert np.allclose(served["upper"], expected.upper[expected.unpublished])

        report = client.get(f"/jobs/{job_id}/report")
        assert report.headers["content-type"].startswith("text/html")
        assert '<table id="audit">' in report.text and "data:image/png;base64," in report.text
        trail = client.get(f"/jobs/{job_id}/trail").json()
        uploaded = {i["file"]: i for i in trail["inputs"]}
        assert uploaded["cells.csv"] == {"file": "cells.csv", "confidential": True}
        assert trail["outputs"]["published"]["sha256"] == hashlib.sha256(
            client.get(f"/jobs/{job_id}/table").content).hexdigest()
        assert any(j["id"] == job_id for j in client.get("/jobs").json())
        # a deleted job is gone
        assert client.delete(f"/jobs/{job_id}").json()["deleted"] is True
        assert client.get(f"/jobs/{job_id}").status_code == 404
        assert client.get("/openapi.json").json()["paths"]["/jobs"]["post"]


# a 3 x 3 table as a JJ file: cell 4 (value 2) is primary with protection levels 3
JJ_VALUES = [60, 25, 35, 30, 2, 28, 30, 23, 7]
JJ_RELATIONS = [(0, [1, 2]), (3, [4, 5]), (6, [7, 8]), (0, [3, 6]), (1, [4, 7]), (2, [5, 8])]


def jj_text() -> str:
    lines = ["0", str(len(JJ_VALUES))]
    lines += [f"{i} {v} 1 {'u' if i == 4 else 's'} 0 1000 {'3 3' if i == 4 else '0 0'} 0"
              for i, v in enumerate(JJ_VALUES)]
    lines.append(str(len(JJ_RELATIONS)))
    lines += [f"0 {len(p) + 1} : {t} (-1) " + " ".join(f"{c} (1)" for c in p)
              for t, p in JJ_RELATIONS]
    return "\n".join(lines) + "\n"


def test_jj_job_runs_as_on_the_command_line(shared_url, tmp_path):
    """A general table in tau-Argus' JJ format is accepted as an upload, and the service's
    pattern is the command line's, passing an independent audit."""
    from tabprotect.cli import main
    from tabprotect.io.jj import read_jj
    spec = b'[input]\njj = "t.jj"\n\n[protect]\nmethod = "gauss"\n'
    (tmp_path / "t.jj").write_text(jj_text())
    (tmp_path / "job.toml").write_bytes(spec + b"\n[output]\ndir = \"out\"\n")
    assert main(["protect", str(tmp_path / "job.toml"), "--quiet"]) == 0
    local = pd.read_csv(tmp_path / "out" / "published.csv")
    with httpx.Client(base_url=shared_url, headers=AUTH, timeout=30) as client:
        resp = client.post("/jobs", files=[("spec", ("job.toml", spec, "application/toml")),
                                           ("files", ("t.jj", jj_text().encode(), "text/plain"))])
        assert resp.status_code == 202, resp.text
        rec = wait_finished(client, resp.json()["id"])
        assert rec["state"] == "finished", rec["error"]
        served = pd.read_csv(io.StringIO(client.get(f"/jobs/{rec['id']}/table").text))
    pd.testing.assert_frame_equal(served, local)
    table = read_jj(tmp_path / "t.jj")
    hidden = (served["status"] == "X").to_numpy()
    assert hidden.sum() >= 4
    st = np.where(hidden, "M", "S")
    st[4] = "U"
    assert audit(table.replace(status=st)).passed


def test_auth_failures(shared_url):
    with httpx.Client(base_url=shared_url, timeout=30) as client:
        assert client.get("/health").status_code == 200
        missing = client.get("/jobs")
        assert missing.status_code == 401
        assert missing.headers["www-authenticate"] == "Bearer"
        assert client.get("/jobs", headers={"Authorization": "Bearer wrong-token-xx"}) \
            .status_code == 401
        assert client.post("/jobs", files=demo_files()).status_code == 401
        assert client.get("/jobs", headers=AUTH).status_code == 200


def test_no_token_no_service(store):
    from tabprotect.errors import InputError
    with pytest.raises(InputError, match="token"):
        create_app(load_config(store=store))


def test_bad_uploads(store):
    with serve(store, max_request_bytes=200_000) as url, \
            httpx.Client(base_url=url, headers=AUTH, timeout=30) as client:
        files = demo_files()
        # a file the spec names is missing
        r = client.post("/jobs", files=[files[0], files[1]])
        assert r.status_code == 422 and "region.csv" in r.json()["detail"]
        # spec that is not TOML
        r = client.post("/jobs", files=[("spec", ("job.toml", b"[input\ncells=", "text/plain"))]
                        + files[1:])
        assert r.status_code == 422 and "TOML" in r.json()["detail"]
        # an unknown section
        r = client.post("/jobs", files=[("spec", ("job.json", json.dumps(
            {"input": {"cells": "cells.csv", "dimensions": ["region"]}, "bogus": {}}).encode(),
            "application/json"))] + files[1:])
        assert r.status_code == 422 and "bogus" in r.json()["detail"]
        # a cells file whose code is not in the hierarchy
        bad = (DEMO / "cells.csv").read_bytes().replace(b"S2,C", b"S9,C")
        r = client.post("/jobs", files=[files[0], ("files", ("cells.csv", bad, "text/csv")),
                                        files[2]])
        assert r.status_code == 422 and "column 'region'" in r.json()["detail"]
        assert "S9" not in r.json()["detail"]      # a data field is named, not quoted
        # a negative protection level: named, not quoted, and no job runs on it
        bad = (DEMO / "cells.csv").read_bytes().replace(b"N1,B,310,2,U,46.5", b"N1,B,310,2,U,-46.5")
        r = client.post("/jobs", files=[files[0], ("files", ("cells.csv", bad, "text/csv")),
                                        files[2]])
        assert r.status_code == 422 and "upl column 'upl'" in r.json()["detail"]
        assert "46.5" not in r.json()["detail"]
        # a time limit beyond the service's maximum: refused, and the message states the
        # range it checks (0 itself is outside it)
        spec = (DEMO / "job.toml").read_bytes() + b"\n[protect]\nmethod = \"gauss\"\ntime_limit = 1e6\n"
        r = client.post("/jobs", files=[("spec", ("job.toml", spec, "application/toml"))]
                        + files[1:])
        assert r.status_code == 422 and "above 0 and at most" in r.json()["detail"]
        # not a file name we accept
        r = client.post("/jobs", files=files + [("files", ("../evil.sh", b"x", "text/plain"))])
        assert r.status_code == 422
        # too large
        big = [("files", ("big.csv", b"a,b\n" + b"1,2\n" * 100_000, "text/csv"))]
        assert client.post("/jobs", files=files + big).status_code == 413
        # unknown job, result of a job that does not exist
        assert client.get("/jobs/" + "0" * 32).status_code == 404
        assert client.get("/jobs/not-an-id/table").status_code == 404
        # nothing was stored for the refused submissions
        assert client.get("/jobs").json() == []


def test_restart_keeps_finished_job(store):
    # the store is what must survive; a thread pool keeps this test quick
    with serve(store, pool="thread") as url, httpx.Client(base_url=url, headers=AUTH, timeout=30) as client:
        job_id = client.post("/jobs", files=demo_files()).json()["id"]
        assert wait_finished(client, job_id)["state"] == "finished"
        first_table = client.get(f"/jobs/{job_id}/table").text
    with serve(store, pool="thread") as url, \
            httpx.Client(base_url=url, headers=AUTH, timeout=30) as client:
        rec = client.get(f"/jobs/{job_id}").json()
        assert rec["state"] == "finished" and rec["result"]["audit_passed"] is True
        assert client.get(f"/jobs/{job_id}/table").text == first_table
        assert client.get(f"/jobs/{job_id}/report").status_code == 200


def test_two_concurrent_jobs(shared_url, tmp_path):
    # the second job publishes S1|A: then S2|A and the primary S2|B follow from the margins
    changes = {("S1", "A"): "S"}
    with httpx.Client(base_url=shared_url, headers=AUTH, timeout=30) as client:
        with ThreadPoolExecutor(2) as pool:
            posted = list(pool.map(lambda f: client.post("/jobs", files=f),
                                   [demo_files(), demo_files(changes)]))
        ids = [r.json()["id"] for r in posted]
        assert all(r.status_code == 202 for r in posted) and ids[0] != ids[1]
        with ThreadPoolExecutor(2) as pool:
            recs = list(pool.map(lambda j: wait_finished(client, j), ids))
        assert [r["state"] for r in recs] == ["finished", "finished"]
        # each verdict agrees with an independent audit of its own table
        bad_cells = demo_files(changes)[1][1][1]
        (tmp_path / "bad").mkdir()
        _, expected_bad = local_audit(bad_cells, tmp_path / "bad")
        assert expected_bad.passed is False
        assert recs[0]["result"]["audit_passed"] is True
        assert recs[1]["result"]["audit_passed"] is False
        served = pd.read_csv(io.StringIO(client.get(f"/jobs/{ids[1]}/audit").text))
        assert np.allclose(served["lower"], expected_bad.lower[expected_bad.unpublished])
        # a failed pattern is not published under its usual name
        assert client.get(f"/jobs/{ids[1]}/table").status_code != 200


def test_uploads_deleted_after_retention(store):
    with serve(store, pool="thread", upload_retention_seconds=0.0,
               cleanup_interval_seconds=0.2) as url, \
            httpx.Client(base_url=url, headers=AUTH, timeout=30) as client:
        job_id = client.post("/jobs", files=demo_files()).json()["id"]
        assert wait_finished(client, job_id)["state"] == "finished"
        deadline = time.monotonic() + 10
        while not client.get(f"/jobs/{job_id}").json()["uploads_deleted"]:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        folder = store.parent / "jobs" / job_id
        assert not (folder / "input").exists()
        assert client.get(f"/jobs/{job_id}/table").status_code == 200


def test_folder_without_a_record_is_deleted(store):
    # what a submission cut off by a crash of the server leaves behind
    with serve(store, pool="thread", cleanup_interval_seconds=0.2) as url:
        orphan = store.parent / "jobs" / ("f" * 32)
        (orphan / "input").mkdir(parents=True)
        (orphan / "input" / "cells.csv").write_text("x\n")
        old = time.time() - 2 * 3600
        os.utime(orphan, (old, old))
        deadline = time.monotonic() + 10
        while orphan.exists():
            assert time.monotonic() < deadline, "the orphan folder stayed"
            time.sleep(0.1)
        assert httpx.get(url + "/health").json()["status"] == "ok"
