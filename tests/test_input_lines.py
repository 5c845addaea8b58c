"""A bad row of an input file -- a table's cells, a hierarchy's pairs or .hrc lines, a
correspondence table, a relations file -- is named by the line an editor shows (the header
is line 1), from the command line and from the service; a DataFrame's row by its 0-based
position and index label."""
import json
import sys
import time
from pathlib import Path

import httpx
import pandas as pd
import pytest

from tabprotect.cli import main
from tabprotect.errors import InputError
from tabprotect.model import Hierarchy, Table

sys.path.insert(0, str(Path(__file__).parent))
import service_server  # noqa: E402

PLANTED = "31337.77"


def _line(path: Path, text: str) -> int:
    """The editor's line (1-based) of the one line of ``path`` holding ``text``."""
    hits = [n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line]
    assert len(hits) == 1
    return hits[0]


def _job(tmp_path, cells: str, hierarchy: str = '[hierarchies.region]\npairs = "region.csv"\n'):
    (tmp_path / "cells.csv").write_text(cells)
    (tmp_path / "job.toml").write_text(
        '[input]\ncells = "cells.csv"\ndimensions = ["region"]\ncompute_totals = true\n'
        + hierarchy + '[output]\ndir = "out"\n')
    return tmp_path / "job.toml"


def _err(capsys, *argv):
    code = main(list(argv))
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err
    return err


def test_a_pairs_file_names_the_line_of_a_code_with_two_parents(tmp_path, capsys):
    (tmp_path / "region.csv").write_text("parent,child\nT,N\nT,S\nN,a\nS,b\nS,a\n")
    job = _job(tmp_path, "region,value\na,3\nb,4\n")
    err = _err(capsys, "audit", str(job))
    assert f"region.csv line {_line(tmp_path / 'region.csv', 'S,a')}: code 'a' has two" in err


def test_an_hrc_file_names_the_line_of_a_code_with_two_parents(tmp_path, capsys):
    (tmp_path / "region.hrc").write_text("N\n@a\n\nS\n@b\n\n@a\n")
    job = _job(tmp_path, "region,value\na,3\nb,4\n",
               '[hierarchies.region]\nhrc = "region.hrc"\ntotal = "T"\n')
    err = _err(capsys, "audit", str(job))
    assert "region.hrc line 7: code 'a' has two parents" in err     # blank lines counted


def test_a_cells_file_names_the_line_of_a_value_that_is_no_number(tmp_path, capsys):
    (tmp_path / "region.csv").write_text("parent,child\nT,a\nT,b\nT,c\n")
    job = _job(tmp_path, f"region,value\na,3\nb,{PLANTED}x\nc,4\n")
    err = _err(capsys, "audit", str(job))
    line = _line(tmp_path / "cells.csv", PLANTED)
    assert f"cells.csv line {line}: value column 'value'" in err and "31337" not in err


def test_a_correspondence_file_names_the_line_of_an_empty_code(tmp_path, capsys):
    (tmp_path / "corr.csv").write_text("l1,l2\nA,a1\nA,a2\nB,\nB,b1\n")
    job = _job(tmp_path, "region,value\na1,3\n",
               '[hierarchies.region]\nfile = "corr.csv"\ncolumns = ["l1", "l2"]\n')
    err = _err(capsys, "audit", str(job))
    assert "file corr.csv line 4: empty code in column 'l2'" in err


def test_dataframes_name_position_and_index_label():
    reg = Hierarchy.flat(["a", "b"], total="T")
    frame = pd.DataFrame({"region": ["a", "b"], "value": [3.0, None]}, index=["p", "q"])
    with pytest.raises(InputError, match=r"cells row 1 \(0-based position; index label 'q'\): "
                                         r"value column 'value'"):
        Table.from_frame(frame, {"region": reg}, compute_totals=True)
    pairs = pd.DataFrame({"parent": ["T", "T", "a"], "child": ["a", "b", "b"]},
                         index=[10, 11, 12])
    with pytest.raises(InputError, match=r"row 2 \(0-based position; index label 12\): code "
                                         r"'b' has two parents"):
        Hierarchy.from_pairs(pairs)
    with pytest.raises(InputError, match=r"pair 2 \(0-based position\): code 'b' has two"):
        Hierarchy.from_pairs([("T", "a"), ("T", "b"), ("a", "b")])


def test_the_service_names_the_line_of_a_bad_uploaded_value(tmp_path):
    token = "lines-token-0123456789"
    spec = {"input": {"cells": "cells.csv", "dimensions": ["region"], "compute_totals": True},
            "hierarchies": {"region": {"codes": ["a", "b", "c"], "total": "T"}}}
    cells = f"region,value\na,3\nb,4\nc,{PLANTED}x\n"
    files = [("spec", ("job.json", json.dumps(spec).encode(), "application/json")),
             ("files", ("cells.csv", cells.encode(), "text/csv"))]
    with service_server.serve(tmp_path / "jobs.sqlite", token, workers=1, pool="thread") \
            as url, httpx.Client(base_url=url, timeout=60,
                                 headers={"Authorization": f"Bearer {token}"}) as http:
        r = http.post("/jobs", files=files)
        if r.status_code == 202:            # read by the worker: the job's stored error
            job = r.json()["id"]
            for _ in range(600):
                rec = http.get(f"/jobs/{job}").json()
                if rec["state"] in ("finished", "failed"):
                    break
                time.sleep(0.1)
            detail = rec["error"]
        else:
            detail = r.json()["detail"]
    assert "cells.csv line 4: value column 'value'" in detail and "31337" not in detail


def test_blank_lines_and_quoted_line_breaks_are_counted_as_an_editor_counts(tmp_path, capsys):
    (tmp_path / "region.csv").write_text("parent,child\nT,a\nT,b\nT,c\n")
    # a blank line and a quoted field over two lines before the bad value
    job = _job(tmp_path, f'region,value\n\na,3\n"b",4\n"c\n",{PLANTED}x\n')
    err = _err(capsys, "audit", str(job))
    assert "cells.csv line 5:" in err, err        # the record begins on line 5
    (tmp_path / "m.csv").write_text(f"region,value\na,3\n\n\nb,{PLANTED}x\nc,4\n")
    (tmp_path / "m.toml").write_text(
        '[microdata]\nfile = "m.csv"\ndimensions = ["region"]\nresponse = "value"\n'
        '[hierarchies.region]\npairs = "region.csv"\n[output]\ndir = "out"\n')
    err = _err(capsys, "audit", str(tmp_path / "m.toml"))
    assert f"m.csv line {_line(tmp_path / 'm.csv', PLANTED)}: value of 'value'" in err, err
