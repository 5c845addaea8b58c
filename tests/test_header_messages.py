"""Input files whose first line is not the header (a file without one, a ragged file read
by DuckDB's sniffer): one line naming the file and the missing columns, exit code 2, no
traceback and no field of the file quoted."""
from __future__ import annotations

import pytest

from tabprotect.cli import main

SECRET = "73519.37"

CELLS_JOB = """[input]
cells = "cells.csv"
dimensions = ["r", "c"]
compute_totals = true

[rules.frequency]
n = 3

[protect]
method = "gauss"
"""

MICRO_JOB = """[microdata]
file = "micro.csv"
dimensions = ["region", "size"]
response = "turnover"
engine = "{engine}"

[hierarchies.region]
flat = true

[hierarchies.size]
flat = true

[rules.frequency]
n = 3
"""

RECORDS = [f"{i},R{i % 3},{'small' if i % 2 else 'large'},{10 + i}.5" for i in range(12)]


def run_cli(tmp_path, capsys, job: str) -> str:
    (tmp_path / "job.toml").write_text(job)
    code = main(["primary", str(tmp_path / "job.toml"), "-o", str(tmp_path / "out"),
                 "--quiet"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert SECRET not in err
    return err


@pytest.mark.parametrize("sep", [",", ";"])
def test_cells_file_without_header(tmp_path, capsys, sep):
    rows = [["r1", "a", SECRET, "1"], ["r1", "b", "10", "10"], ["r2", "a", "5", "5"]]
    (tmp_path / "cells.csv").write_text("".join(sep.join(r) + "\n" for r in rows))
    err = run_cli(tmp_path, capsys, CELLS_JOB)
    assert "cells.csv" in err and "'r'" in err


@pytest.mark.parametrize("engine", ["pandas", "duckdb"])
def test_microdata_without_header(tmp_path, capsys, engine):
    records = RECORDS + [f"99,R1,large,{SECRET}"]
    (tmp_path / "micro.csv").write_text("\n".join(records) + "\n")
    err = run_cli(tmp_path, capsys, MICRO_JOB.format(engine=engine))
    assert "micro.csv" in err and "region" in err and "header" in err


def test_ragged_microdata_read_by_duckdb(tmp_path, capsys):
    records = ["id,region,size,turnover"] + RECORDS
    records[3] += f",{SECRET},x"
    (tmp_path / "micro.csv").write_text("\n".join(records) + "\n")
    err = run_cli(tmp_path, capsys, MICRO_JOB.format(engine="duckdb"))
    assert "micro.csv" in err


@pytest.mark.parametrize("bad", ["extra_field", "open_quote"])
def test_malformed_rows_read_by_duckdb_are_named_as_such(tmp_path, capsys, bad):
    records = ["id,region,size,turnover"] + RECORDS
    records[3] += f",{SECRET}" if bad == "extra_field" else f',"{SECRET}'
    (tmp_path / "micro.csv").write_text("\n".join(records) + "\n")
    err = run_cli(tmp_path, capsys, MICRO_JOB.format(engine="duckdb"))
    assert "micro.csv" in err and "header line" in err and 'engine = "memory"' in err
    assert "not found" not in err      # every column the job names is in the header


@pytest.mark.parametrize("sep", [";", "\t"])
def test_cells_file_of_another_separator_is_said_to_be(tmp_path, capsys, sep):
    # a spreadsheet's export with its header: the missing column and the separator named
    rows = [["r", "c", "value", "freq"], ["r1", "a", SECRET, "1"], ["r1", "b", "10", "10"]]
    (tmp_path / "cells.csv").write_text("".join(sep.join(r) + "\n" for r in rows))
    err = run_cli(tmp_path, capsys, CELLS_JOB)
    assert "cells.csv" in err and "'r'" in err and f"separated by {sep!r}" in err


@pytest.mark.parametrize("header", [True, False])
def test_headerless_or_semicolon_file_quotes_no_field(tmp_path, capsys, header):
    rows = [["r1", "a", SECRET, "1"], ["r1", "b", "10", "10"]]
    if header:
        rows.insert(0, ["r", "c", "value", "freq"])
    (tmp_path / "cells.csv").write_text("".join(";".join(r) + "\n" for r in rows))
    err = run_cli(tmp_path, capsys, CELLS_JOB)
    assert "separated by ';'" in err
