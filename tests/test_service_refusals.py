"""The service probed as an attacker would: a few-byte upload whose
hierarchies (or distinct codes, linked tables, kept contributions) would make a table of
10^9 cells is refused by ``max_cells`` before the table is made, with one line naming the
job's key and the limit and no value of the data; request values that are no flag and
options the service does not know are errors, never ignored."""
from __future__ import annotations

import contextlib
import hashlib
import json
import time
from pathlib import Path

import httpx
import pytest

from tabprotect.cli import main
from tabprotect.errors import InputError
from tabprotect.io.job import build_table, load_job
from tabprotect.service.config import load_config
from tabprotect.service.store import JobStore

import service_server

TOKEN = "limits-token-0123456789"
PLANTED = "31337.77"


@contextlib.contextmanager
def client(store: Path, **settings):
    """The app (a thread pool) served by uvicorn on localhost; yields an httpx client."""
    with service_server.serve(store, TOKEN, **{"workers": 1, "pool": "thread", **settings}) as url, \
            httpx.Client(base_url=url, timeout=60,
                         headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        yield http


def parts(spec: dict, uploads: dict[str, str | bytes]) -> list:
    out = [("spec", ("job.json", json.dumps(spec).encode(), "application/json"))]
    for name, content in uploads.items():
        data = content.encode() if isinstance(content, str) else content
        out.append(("files", (name, data, "text/csv")))
    return out


def cube_spec(codes: int, dims: int = 3) -> dict:
    """A cells job of ``dims`` dimensions with ``codes`` codes (and a total) each."""
    names = [f"d{k}" for k in range(dims)]
    listed = [f"c{i}" for i in range(codes)]
    return {"input": {"cells": "cells.csv", "dimensions": names, "compute_totals": True},
            "hierarchies": {d: {"codes": listed, "total": "T"} for d in names}}


def cube_cells(dims: int = 3) -> str:
    names = [f"d{k}" for k in range(dims)]
    return ",".join(names + ["value"]) + "\n" + ",".join(["c0"] * dims + [PLANTED]) + "\n"


def refused(r: httpx.Response, key: str, limit: int) -> str:
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert isinstance(detail, str) and "\n" not in detail
    assert key in detail and f"limit of {limit} cells (max_cells)" in detail, detail
    assert "31337" not in detail
    return detail


@pytest.fixture
def store(tmp_path):
    return tmp_path / "service" / "jobs.sqlite"


def test_a_billion_cells_from_a_tiny_upload_are_refused_before_any_table(store):
    with client(store, max_cells=1_000_000) as http:
        r = http.post("/jobs", files=parts(cube_spec(999), {"cells.csv": cube_cells()}))
        detail = refused(r, "[input] dimensions", 1_000_000)
        assert "would have 1000000000 cells" in detail        # (999 codes + total)^3
        # many dimensions of two codes: 2^40 cells
        r = http.post("/jobs", files=parts(cube_spec(1, dims=40),
                                           {"cells.csv": cube_cells(dims=40)}))
        refused(r, "[input] dimensions", 1_000_000)
        assert http.get("/jobs").json() == []                 # nothing stored
    assert list((store.parent / "jobs").iterdir()) == []    # nothing left on disk


def test_the_limit_is_the_number_of_cells_of_the_table(store, tmp_path):
    spec = cube_spec(2, dims=3)
    (tmp_path / "cells.csv").write_text(cube_cells())
    n = build_table(load_job(spec=spec, base=tmp_path)).n_cells   # made without a limit
    assert n == 27
    with client(store, max_cells=n - 1) as http:
        refused(http.post("/jobs", files=parts(spec, {"cells.csv": cube_cells()})),
                "[input] dimensions", n - 1)
    with client(store, max_cells=n) as http:
        assert http.post("/jobs", files=parts(spec, {"cells.csv": cube_cells()})
                         ).status_code == 202


def test_microdata_codes_linked_tables_and_kept_contributions_count(store):
    rows = "".join(f"x{i},y{i},z{i},{PLANTED}\n" for i in range(40))
    micro = {"m.csv": "a,b,c,v\n" + rows}
    with client(store, max_cells=2000) as http:
        # flat hierarchies from 40 distinct codes each: 41^3 cells
        spec = {"microdata": {"file": "m.csv", "dimensions": ["a", "b", "c"],
                              "response": "v"}}
        refused(http.post("/jobs", files=parts(spec, micro)), "[microdata] dimensions", 2000)
        # three linked tables of 41^2 = 1681 cells each: within the limit one by one, not
        # summed
        spec = {"microdata": {"file": "m.csv", "dimensions": ["a", "b"]},
                "cellkey": {"tables": [["a", "c"], ["b", "c"]]}}
        detail = refused(http.post("/jobs", files=parts(spec, micro)),
                         "[microdata] dimensions and [cellkey] tables", 2000)
        assert "would have 5043 cells" in detail
        spec = {"microdata": {"file": "m.csv", "dimensions": ["a", "b"]}, "cellkey": {}}
        assert http.post("/jobs", files=parts(spec, micro)).status_code == 202
        # 41 cells, each keeping a million largest contributions
        spec = {"microdata": {"file": "m.csv", "dimensions": ["a"], "response": "v",
                              "top_k": 1_000_000}}
        detail = refused(http.post("/jobs", files=parts(spec, micro)),
                         "[microdata] dimensions", 2000)
        assert "top_k = 1000000" in detail


def test_a_general_table_counts_its_cells(store):
    jj = ("0\n3\n0 5 1 s 0 99 0 0 0\n1 2 1 u 0 99 1 1 0\n2 3 1 s 0 99 0 0 0\n1\n"
          "0 3 : 0 (-1) 1 (1) 2 (1)\n")
    spec = {"input": {"jj": "t.jj"}}
    with client(store, max_cells=2) as http:
        detail = refused(http.post("/jobs", files=parts(spec, {"t.jj": jj})), "[input] jj", 2)
        assert "has 3 cells" in detail
    with client(store, max_cells=3) as http:
        assert http.post("/jobs", files=parts(spec, {"t.jj": jj})).status_code == 202


def test_a_large_job_is_failed_by_the_worker_before_its_table_is_made(store):
    # uploads above the size built at submission (a long column no key reads): the worker
    # refuses the table
    lines = cube_cells().splitlines()
    padded = f"{lines[0]},pad\n{lines[1]},{'x' * (5 * 2**20)}\n"
    with client(store, max_cells=1_000_000) as http:
        r = http.post("/jobs", files=parts(cube_spec(999), {"cells.csv": padded}))
        assert r.status_code == 202, r.text
        job_id = r.json()["id"]
        deadline = time.monotonic() + 60
        while (rec := http.get(f"/jobs/{job_id}").json())["state"] not in ("finished",
                                                                            "failed"):
            assert time.monotonic() < deadline, "job did not end"
            time.sleep(0.05)
        assert rec["state"] == "failed"
        assert "[input] dimensions" in rec["error"] and "max_cells" in rec["error"]
        assert "31337" not in json.dumps(rec)
        assert http.get(f"/jobs/{job_id}/table").status_code == 409


def test_max_cells_setting_is_checked(tmp_path):
    config = tmp_path / "service.toml"
    config.write_text('[service]\nmax_cells = 0\n[service.principals.a]\n'
                      f'token_sha256 = "{"0" * 64}"\n')
    with pytest.raises(InputError, match="max_cells must be at least 1"):
        load_config(config).check()
    config.write_text(config.read_text().replace("max_cells = 0", "max_cells = 1234"))
    assert load_config(config).check().max_cells == 1234


@pytest.mark.parametrize("line,key", [('workers = "2"', "workers"),
                                      ("max_cells = 1e12", "max_cells"),
                                      ('max_request_mb = "lots"', "max_request_mb"),
                                      ("lease_seconds = true", "lease_seconds")])
def test_service_setting_of_the_wrong_type_is_one_line(tmp_path, capsys, line, key):
    config = tmp_path / "service.toml"
    config.write_text(f'[service]\n{line}\n[service.principals.a]\n'
                      f'token_sha256 = "{"0" * 64}"\n')
    assert main(["serve", "--config", str(config)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and key in err and "must be" in err, err


def test_request_value_that_is_no_flag_is_refused_by_the_cli(tmp_path, capsys):
    (tmp_path / "m.csv").write_text(f"g,x,req\na,{PLANTED},yes\na,2,maybe\nb,3,no\n")
    (tmp_path / "job.toml").write_text('[microdata]\nfile = "m.csv"\ndimensions = ["g"]\n'
                                       'response = "x"\nrequest = "req"\n'
                                       '[rules.frequency]\nn = 2\n')
    assert main(["primary", str(tmp_path / "job.toml"), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "request 'req' is not a flag" in err and "line 3" in err
    assert "maybe" not in err and "31337" not in err and len(err.strip().splitlines()) == 1


def test_unknown_query_parameters_and_form_fields_are_errors(store):
    spec = cube_spec(2, dims=1)
    with client(store) as http:
        r = http.get("/jobs", params={"al": "true"})          # a typo of 'all'
        assert r.status_code == 422 and "unknown query parameter(s) 'al'" in r.text
        assert http.get("/health", params={"verbose": "1"}).status_code == 422
        # an option sent as a form field is not taken silently, and no job is made
        r = http.post("/jobs", files=parts(spec, {"cells.csv": cube_cells(dims=1)}),
                      data={"time_limit": "5"})
        assert r.status_code == 422 and "unknown form field(s) 'time_limit'" in r.text
        r = http.post("/jobs", files=parts(spec, {"cells.csv": cube_cells(dims=1)})
                      + [("file", ("x.csv", b"a\n1\n", "text/csv"))])  # 'file' for 'files'
        assert r.status_code == 422 and "'file'" in r.text
        assert http.get("/jobs").json() == []
        assert http.post("/jobs", files=parts(spec, {"cells.csv": cube_cells(dims=1)})
                         ).status_code == 202
        # a caller without a token learns no parameter names
        r = httpx.get(str(http.base_url) + "/jobs", params={"al": "true"})
        assert r.status_code == 401 and "all" not in r.text


@pytest.mark.parametrize("hierarchy", ['levels = [1, 2]', 'columns = ["nuts1", "region"]'])
def test_hierarchy_from_the_data_quotes_no_field(tmp_path, capsys, hierarchy):
    # a record with a field missing puts its value into a code column; the hierarchy built
    # from the data's codes names the column (and line), never the code
    (tmp_path / "m.csv").write_text(f"nuts1,region,v\nA,A1,10\nA,A2,20\nB,B1,30\n"
                                    f"{PLANTED},B1,5\nB,{PLANTED}\n")
    (tmp_path / "job.toml").write_text('[microdata]\nfile = "m.csv"\ndimensions = ["region"]\n'
                                       'response = "v"\nmissing = "zero"\n'
                                       f'[hierarchies.region]\n{hierarchy}\ntotal = "T"\n'
                                       '[rules.frequency]\nn = 2\n')
    assert main(["primary", str(tmp_path / "job.toml"), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "column 'region'" in err and "31337" not in err, err


TRAIL_SPEC = {"input": {"cells": "cells.csv", "dimensions": ["region", "size"],
                        "status": "status", "upl": "upl", "lpl": "lpl",
                        "compute_totals": True},
              "hierarchies": {"region": {"codes": ["A", "B"], "total": "T"},
                              "size": {"codes": ["s1", "s2"], "total": "T"}}}
TRAIL_CELLS = ("region,size,value,status,upl,lpl\nA,s1,31337,U,400,400\nA,s2,500,M,0,0\n"
               "B,s1,800,M,0,0\nB,s2,600,M,0,0\n")


def test_trail_is_no_oracle_for_suppressed_values(store):
    # the attacker holds the published table and the trail (archivable with it) and hashes
    # every candidate of the one free suppressed value in the formats of the input and of
    # the confidential cells.csv: no digest in the trail confirms a guess
    with client(store) as http:
        job_id = http.post("/jobs", files=parts(TRAIL_SPEC, {"cells.csv": TRAIL_CELLS})
                           ).json()["id"]
        deadline = time.monotonic() + 120
        while http.get(f"/jobs/{job_id}").json()["state"] not in ("finished", "failed"):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        published = http.get(f"/jobs/{job_id}/table").text
        trail = http.get(f"/jobs/{job_id}/trail").text
    rows = published.splitlines()
    assert "A,s1,," in published and "31337" not in published + trail
    head = [r for r in rows if ",T," in r or r.startswith("T,")]
    value = {tuple(r.split(",")[:2]): r.split(",")[2] for r in head}
    a_total, s1_total, b_total = (float(value[k]) for k in (("A", "T"), ("T", "s1"),
                                                            ("B", "T")))
    found = []
    for x in range(int(a_total) + 1):
        a2, b1 = int(a_total - x), int(s1_total - x)
        b2 = int(b_total - b1)
        cells = {("A", "s1"): (x, "U"), ("A", "s2"): (a2, "M"), ("B", "s1"): (b1, "M"),
                 ("B", "s2"): (b2, "M")}
        inner = [f"{r},{s},{v},{st}" for (r, s), (v, st) in cells.items()]
        given = TRAIL_CELLS.splitlines()[0] + "\n" + "".join(
            f"{r},{s},{v},{st},{400 if st == 'U' else 0},{400 if st == 'U' else 0}\n"
            for (r, s), (v, st) in cells.items())
        output = "\n".join(rows[0:1] + [r if ",," not in r else
                                        next(c for c in inner if c.startswith(r[:5]))
                                        for r in rows[1:]]) + "\n"
        for text in (given, output):
            if hashlib.sha256(text.encode()).hexdigest() in trail:
                found.append(x)
    assert found == []


def _finished(http: httpx.Client, job_id: str) -> dict:
    deadline = time.monotonic() + 120
    while (rec := http.get(f"/jobs/{job_id}").json())["state"] not in ("finished", "failed"):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    return rec


def test_an_upload_no_key_names_is_refused(store):
    with client(store) as http:
        r = http.post("/jobs", files=parts(TRAIL_SPEC, {"cells.csv": TRAIL_CELLS,
                                                        "notes.csv": "a\n1\n"}))
        assert r.status_code == 422, r.text
        detail = r.json()["detail"]
        assert "'notes.csv'" in detail and "named by no key" in detail
        assert "31337" not in detail and http.get("/jobs").json() == []


def test_a_bad_row_is_the_command_lines_one_line(store, tmp_path, capsys):
    bad = TRAIL_CELLS.replace("A,s2,500,M,0,0", "A,s2,500,M,0,0,31337")
    with client(store) as http:
        r = http.post("/jobs", files=parts(TRAIL_SPEC, {"cells.csv": bad}))
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert "\n" not in detail and "31337" not in detail
    # the same words as the command line's
    (tmp_path / "cells.csv").write_text(bad)
    (tmp_path / "job.toml").write_text(
        '[input]\ncells = "cells.csv"\ndimensions = ["region", "size"]\nstatus = "status"\n'
        'upl = "upl"\nlpl = "lpl"\ncompute_totals = true\n[hierarchies.region]\n'
        'codes = ["A", "B"]\ntotal = "T"\n[hierarchies.size]\ncodes = ["s1", "s2"]\n'
        'total = "T"\n')
    assert main(["audit", str(tmp_path / "job.toml"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(detail), (err, detail)


def test_a_failed_pattern_releases_no_value_figure(store):
    # the planted primary is the one suppressed cell: any value figure of the pattern is
    # its value, and a failed pattern has no published table for the checks to hold to
    spec = {**TRAIL_SPEC, "input": {**TRAIL_SPEC["input"]}}
    cells = TRAIL_CELLS.replace(",M,", ",S,")
    with client(store) as http:
        rec = _finished(http, http.post("/jobs", files=parts(spec, {"cells.csv": cells})
                                        ).json()["id"])
        summary = http.get(f"/jobs/{rec['id']}/summary").json()
    assert rec["state"] == "finished" and rec["result"]["audit_passed"] is False
    for public in (rec["result"]["summary"], summary["figures"]):
        assert "value_suppressed" not in public and "share_value_suppressed" not in public
        assert set(public["withheld"]) == {"value_suppressed", "share_value_suppressed"}
    assert "31337" not in json.dumps(rec) + json.dumps(summary)


class StepLog(JobStore):
    """A store that keeps every step a worker records (the listing shows the last)."""

    def __init__(self, path):
        super().__init__(path)
        self.steps: list[str] = []

    def progress(self, job_id, worker, step, fraction):
        self.steps.append(step)
        return super().progress(job_id, worker, step, fraction)


def test_the_listed_step_carries_no_figure_of_the_pattern(tmp_path):
    # the optimal method reports its cost bound and best cost (the secondaries' value) in
    # its progress messages; the step the listing shows (also to the admin) names the stage
    from tabprotect.service.worker import Lease, run_claimed
    folder = tmp_path / "job"
    (folder / "input").mkdir(parents=True)
    (folder / "input" / "cells.csv").write_text(
        "region,size,value,freq\nN1,small,120,12\nN1,large,800,5\nN2,small,45,6\n"
        "N2,large,300,2\nS1,small,210,20\nS1,large,7331.19,1\nS2,small,95,9\n"
        "S2,large,640,7\n")
    (folder / "input" / "region.hrc").write_text("N\n@N1\n@N2\nS\n@S1\n@S2\n")
    spec = {"input": {"cells": "cells.csv", "dimensions": ["region", "size"],
                      "compute_totals": True},
            "hierarchies": {"region": {"hrc": "region.hrc"}},
            "rules": {"frequency": {"n": 3, "safety_range": 30}},
            "protect": {"method": "optimal"}}
    store = StepLog(tmp_path / "jobs.sqlite")
    job_id = store.create(spec, ["cells.csv", "region.hrc"], folder, owner="tester")
    assert store.claim("w") == job_id and run_claimed(Lease(store, job_id, "w")) == "finished"
    assert any(s.startswith("LP round") for s in store.steps)     # the method reported
    assert not [s for s in store.steps if ":" in s or "bound" in s or "best" in s]


@pytest.mark.parametrize("token, message", [("x" * 15, "at least 16 characters"),
                                            ("change-me-0123456789", "placeholder")])
def test_short_and_placeholder_tokens_are_refused(tmp_path, token, message, capsys):
    from tabprotect.service.config import load_config
    with pytest.raises(InputError, match=message):
        load_config(tokens=(token,))
    (tmp_path / "tokens.txt").write_text(token + "\n")
    (tmp_path / "service.toml").write_text('[service]\ntokens_file = "tokens.txt"\n')
    assert main(["serve", "--config", str(tmp_path / "service.toml")]) == 2
    err = capsys.readouterr().err
    assert message in err and token not in err and "Traceback" not in err
    assert load_config(tokens=("x" * 16,)).principals
