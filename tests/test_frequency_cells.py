"""A frequency table's cells file: its counts are whole numbers (the first that is not is
one line naming file, row and column, never the number), and without a freq column the
value column is the count."""
from __future__ import annotations

import pandas as pd

from tabprotect.cli import main

JOB = """[input]
cells = "cells.csv"
dimensions = ["r", "c"]
compute_totals = true
kind = "frequency"

[hierarchies.r]
codes = ["r1", "r2", "r3"]

[hierarchies.c]
codes = ["a", "b", "c"]

[rules.frequency]
n = 3

[protect]
method = "optimal"
cost = "unity"

[output]
dir = "out"
"""

ROWS = [("r1", "a", 1), ("r1", "b", 2), ("r1", "c", 20), ("r2", "a", 2), ("r2", "b", 1),
        ("r2", "c", 30), ("r3", "a", 40), ("r3", "b", 50), ("r3", "c", 60)]


def _write(tmp_path, text: str) -> str:
    (tmp_path / "job.toml").write_text(JOB)
    (tmp_path / "cells.csv").write_text(text)
    return str(tmp_path / "job.toml")


def test_a_fractional_freq_is_one_line_naming_file_row_and_column(tmp_path, capsys):
    lines = ["r,c,value,freq"] + [f"{r},{c},{v},{v}" for r, c, v in ROWS]
    lines[5] = "r2,b,1,1.75"                # line 6 of the file (the header is line 1)
    job = _write(tmp_path, "\n".join(lines) + "\n")
    assert main(["protect", job, "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "cells.csv line 6, column 'freq'" in err and "whole number" in err
    assert "1.75" not in err


def test_without_a_freq_column_the_value_is_the_count(tmp_path, capsys):
    lines = ["r,c,value"] + [f"{r},{c},{v}" for r, c, v in ROWS]
    job = _write(tmp_path, "\n".join(lines) + "\n")
    assert main(["protect", job, "--quiet"]) == 0, capsys.readouterr().err
    capsys.readouterr()
    cells = pd.read_csv(tmp_path / "out" / "cells.csv", dtype={"r": str, "c": str})
    # the counts 1 and 2 (below n = 3) are the primaries, read from the value column
    assert (cells["freq"] == cells["value"]).all()
    primaries = set(zip(cells.loc[cells["status"] == "U", "r"],
                        cells.loc[cells["status"] == "U", "c"]))
    assert primaries == {("r1", "a"), ("r1", "b"), ("r2", "a"), ("r2", "b")}
