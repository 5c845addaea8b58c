"""The command line on general tables: ``[input] jj`` and ``[input] cells`` + ``relations``
jobs, their protected patterns checked by an independent audit, and each bad input one
line with exit code 2."""
from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from tabprotect.audit import audit
from tabprotect.cli import main
from tabprotect.io.jj import read_cells_relations, read_jj

# a 4 x 4 product table numbered row-major, code 0 of each dimension its total: cell
# 4 * i + j; inner cells i, j in 1..3.  The primary is cell 10 (value 1).
INNER = [[20, 31, 14], [17, 1, 25], [12, 19, 28]]
PRIMARY = 10


def _cells_and_relations():
    grid = np.zeros((4, 4))
    grid[1:, 1:] = INNER
    grid[1:, 0] = grid[1:, 1:].sum(1)
    grid[0, :] = grid[1:, :].sum(0)
    rel = [(4 * i, [4 * i + j for j in range(1, 4)]) for i in range(4)]
    rel += [(j, [4 * i + j for i in range(1, 4)]) for j in range(4)]
    return list(grid.ravel()), rel


def write_jj_file(path, value, rel, freq=False, status=None):
    status = status or {PRIMARY: "u"}
    lines = ["0", str(len(value))]
    for i, v in enumerate(value):
        s = status.get(i, "s")
        pl = "3 3" if s == "u" else "0 0"
        f = f" {max(1, int(v) // 5)}" if freq else ""
        lines.append(f"{i} {v:g}{f} 1 {s} 0 1000 {pl} 0")
    lines.append(str(len(rel)))
    for total, parts in rel:
        lines.append(f"0 {len(parts) + 1} : {total} (-1) " + " ".join(f"{p} (1)" for p in parts))
    path.write_text("\n".join(lines) + "\n")


def write_pair(tmp, value, rel, value_column="amount"):
    cells = pd.DataFrame({"cell": [f"c{i}" for i in range(len(value))], value_column: value,
                          "status": ["U" if i == PRIMARY else "" for i in range(len(value))],
                          "upl": [3.0 if i == PRIMARY else 0.0 for i in range(len(value))]})
    cells["lpl"] = cells["upl"]
    cells.to_csv(tmp / "cells.csv", index=False)
    rows = [(k, f"c{t}", -1) for k, (t, parts) in enumerate(rel)]
    rows += [(k, f"c{p}", 1) for k, (t, parts) in enumerate(rel) for p in parts]
    pd.DataFrame(rows, columns=["rel", "cell", "coef"]).to_csv(tmp / "relations.csv",
                                                                index=False)


JJ_JOB = '[input]\njj = "t.jj"\n\n[protect]\nmethod = "{method}"\n\n[output]\ndir = "out"\n'
PAIR_JOB = ('[input]\ncells = "cells.csv"\nrelations = "relations.csv"\nvalue = "amount"\n'
            'status = "status"\nupl = "upl"\nlpl = "lpl"\n\n[protect]\nmethod = "{method}"\n\n'
            '[output]\ndir = "out"\n')


def _audited(table, tmp):
    """The pattern the CLI wrote, audited independently on the table read again."""
    out = pd.read_csv(tmp / "out" / "cells.csv", dtype={"cell": str})
    status = out["status"].to_numpy().astype("<U1")
    assert len(status) == table.n_cells
    return audit(table.replace(status=status)), status


@pytest.mark.parametrize("freq", [False, True], ids=["manual-layout", "sdctable-layout"])
def test_jj_job_protects_and_the_audit_agrees(tmp_path, capsys, freq):
    value, rel = _cells_and_relations()
    write_jj_file(tmp_path / "t.jj", value, rel, freq=freq)
    (tmp_path / "job.toml").write_text(JJ_JOB.format(method="hypercube"))
    assert main(["protect", str(tmp_path / "job.toml")]) == 0
    assert "PASSED" in capsys.readouterr().out
    result, status = _audited(read_jj(tmp_path / "t.jj"), tmp_path)
    assert result.passed and status[PRIMARY] == "U" and (status == "M").sum() >= 3


def test_cells_relations_job_protects_and_the_audit_agrees(tmp_path, capsys):
    value, rel = _cells_and_relations()
    write_pair(tmp_path, value, rel)
    (tmp_path / "job.toml").write_text(PAIR_JOB.format(method="modular"))
    assert main(["protect", str(tmp_path / "job.toml")]) == 0
    cells = pd.read_csv(tmp_path / "cells.csv").rename(columns={"amount": "value"})
    table = read_cells_relations(cells, tmp_path / "relations.csv")
    result, status = _audited(table, tmp_path)
    assert result.passed and status[PRIMARY] == "U" and (status == "M").sum() >= 3


@pytest.mark.parametrize("method", ["gauss", "optimal"])
def test_linked_table_job_protects_and_the_audit_agrees(tmp_path, capsys, method):
    """A table that is no product (the grand total broken down a second way, as a linked
    table sharing its total) protected through a JJ job by the general methods."""
    value, rel = _cells_and_relations()
    value += [100.0, 67.0]
    rel.append((0, [16, 17]))
    write_jj_file(tmp_path / "t.jj", value, rel, status={PRIMARY: "u", 17: "u"})
    (tmp_path / "job.toml").write_text(JJ_JOB.format(method=method))
    assert main(["protect", str(tmp_path / "job.toml")]) == 0
    result, status = _audited(read_jj(tmp_path / "t.jj"), tmp_path)
    assert result.passed and status[PRIMARY] == "U" and status[17] == "U"
    assert status[16] == "M"


def _off_by_one_percent(value):
    value = list(value)
    value[0] = value[0] * 1.01
    return value


JJ_BAD = {
    "total 1 % off": (lambda v, r: (_off_by_one_percent(v), r), r"t.jj: relation 0 \(line 20\) is not additive"),
    "value above its bound": (lambda v, r: ([2000.0 if i == 2 else x for i, x in enumerate(v)], r),
                              r"cell 2 \(line 5\) has a value above its upper bound"),
    "unknown cell": (lambda v, r: (v, r[:-1] + [(15, [12, 13, 99])]), r"line 27: cell 99 out of range"),
    "cell twice in a relation": (lambda v, r: (v, r[:-1] + [(15, [12, 13, 13])]), r"line 27: relation 7 lists cell 13 twice"),
    "value not a number": (lambda v, r: ([float("nan") if i == 2 else x for i, x in enumerate(v)], r),
                           r"t.jj: the value of cell 2 \(line 5\) is not finite"),
}


@pytest.mark.parametrize("case", list(JJ_BAD))
def test_bad_jj_job_is_one_line_exit_2(tmp_path, capsys, case):
    change, pattern = JJ_BAD[case]
    value, rel = change(*_cells_and_relations())
    write_jj_file(tmp_path / "t.jj", value, rel)
    (tmp_path / "job.toml").write_text(JJ_JOB.format(method="hypercube"))
    _assert_one_line(capsys, main(["protect", str(tmp_path / "job.toml")]), pattern)


def test_duplicated_jj_cell_is_one_line_exit_2(tmp_path, capsys):
    value, rel = _cells_and_relations()
    write_jj_file(tmp_path / "t.jj", value, rel)
    text = (tmp_path / "t.jj").read_text().replace("\n3 ", "\n2 ", 1)
    (tmp_path / "t.jj").write_text(text)
    (tmp_path / "job.toml").write_text(JJ_JOB.format(method="hypercube"))
    _assert_one_line(capsys, main(["protect", str(tmp_path / "job.toml")]),
                     r"t.jj line 6: cell 2 is duplicated")


def test_negative_jj_protection_level_is_one_line_exit_2(tmp_path, capsys):
    value, rel = _cells_and_relations()
    write_jj_file(tmp_path / "t.jj", value, rel)
    text = (tmp_path / "t.jj").read_text().replace(" u 0 1000 3 3 0", " u 0 1000 -3 -3 0")
    (tmp_path / "t.jj").write_text(text)
    (tmp_path / "job.toml").write_text(JJ_JOB.format(method="hypercube"))
    _assert_one_line(capsys, main(["protect", str(tmp_path / "job.toml")]),
                     r"t.jj: the lpl of cell 10 \(line 13\) is negative")


PAIR_BAD = {
    "total 1 % off": (lambda c, r: (c.assign(amount=_off_by_one_percent(c.amount)), r),
                      r"cells.csv: relation '0' is not additive"),
    "value above its bound": (lambda c, r: (c.assign(ub=[5.0 if i == 2 else 1e6 for i in range(len(c))]), r),
                              r"cells.csv: cell 'c2' has a value above its upper bound"),
    "duplicated cell": (lambda c, r: (c.assign(cell=["c1" if i == 2 else x for i, x in enumerate(c.cell)]), r),
                        r"cells.csv: cell 'c1' is duplicated"),
    "unknown cell": (lambda c, r: (c, r.assign(cell=["c99" if i == 3 else x for i, x in enumerate(r.cell)])),
                     r"relations.csv line 5: cell 'c99' is not in cells.csv"),
    "cell twice in a relation": (lambda c, r: (c, pd.concat([r, r.iloc[[-1]]])),
                                 r"relations.csv line 34: relation '7' lists cell 'c15' twice"),
    "coefficient not a number": (lambda c, r: (c, r.assign(coef=r.coef.astype(object).where(
        r.index != 3, "one"))), r"relations.csv line 5: column 'coef' of relation '\d+' is missing or not a number"),
    "coefficient missing": (lambda c, r: (c, r.assign(coef=r.coef.where(r.index != 3))),
                            r"relations.csv line 5: column 'coef' of relation '\d+' is missing"),
    "protection level not a number": (lambda c, r: (c.assign(upl=c.upl.astype(object).where(
        c.index != 10, "3x")), r), r"cells.csv line 12: column 'upl' of cell 'c10' is (missing or )?not a number"),
    "negative protection level": (lambda c, r: (c.assign(upl=-c.upl), r),
                                  r"cells.csv: the upl of cell 'c10' is negative"),
    "infinite value": (lambda c, r: (c.assign(amount=[float("inf") if i == 5 else x
                                                      for i, x in enumerate(c.amount)]), r),
                       r"cells.csv: the value of cell 'c5' is not finite"),
}


@pytest.mark.parametrize("case", list(PAIR_BAD))
def test_bad_cells_relations_job_is_one_line_exit_2(tmp_path, capsys, case):
    change, pattern = PAIR_BAD[case]
    value, rel = _cells_and_relations()
    write_pair(tmp_path, value, rel)
    cells = pd.read_csv(tmp_path / "cells.csv", dtype={"cell": str})
    rels = pd.read_csv(tmp_path / "relations.csv", dtype={"cell": str})
    cells, rels = change(cells, rels)
    cells.to_csv(tmp_path / "cells.csv", index=False)
    rels.to_csv(tmp_path / "relations.csv", index=False)
    job = PAIR_JOB.format(method="hypercube")
    if "ub" in cells.columns:
        job = job.replace('lpl = "lpl"\n', 'lpl = "lpl"\nub = "ub"\n')
    (tmp_path / "job.toml").write_text(job)
    _assert_one_line(capsys, main(["protect", str(tmp_path / "job.toml")]), pattern)


@pytest.mark.parametrize("extra,pattern", [
    ('dimensions = ["r"]\n', r"'dimensions' is not read with 'relations'"),
    ('compute_totals = true\n', r"'compute_totals' is not read with 'relations'"),
    ('value = "amount"\n', None),
])
def test_product_keys_are_errors_on_general_input(tmp_path, capsys, extra, pattern):
    value, rel = _cells_and_relations()
    write_pair(tmp_path, value, rel)
    job = PAIR_JOB.format(method="hypercube").replace('value = "amount"\n', extra)
    (tmp_path / "job.toml").write_text(job)
    rc = main(["protect", str(tmp_path / "job.toml")])
    if pattern is None:
        assert rc == 0
    else:
        _assert_one_line(capsys, rc, pattern)


def test_jj_with_cells_keys_is_an_error(tmp_path, capsys):
    value, rel = _cells_and_relations()
    write_jj_file(tmp_path / "t.jj", value, rel)
    (tmp_path / "job.toml").write_text(JJ_JOB.format(method="hypercube").replace(
        'jj = "t.jj"\n', 'jj = "t.jj"\nvalue = "amount"\n'))
    _assert_one_line(capsys, main(["protect", str(tmp_path / "job.toml")]),
                     r"'value' is not read with 'jj'")
    (tmp_path / "job.toml").write_text(JJ_JOB.format(method="hypercube").replace(
        'jj = "t.jj"\n', 'jj = "t.jj"\njj_bogus = 1\n'))
    _assert_one_line(capsys, main(["protect", str(tmp_path / "job.toml")]),
                     r"jj_bogus")


def test_bad_jj_through_the_console_script_has_no_traceback(tmp_path):
    value, rel = _cells_and_relations()
    write_jj_file(tmp_path / "t.jj", _off_by_one_percent(value), rel)
    (tmp_path / "job.toml").write_text(JJ_JOB.format(method="hypercube"))
    proc = subprocess.run([sys.executable, "-m", "tabprotect.cli", "protect",
                           str(tmp_path / "job.toml")], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "is not additive" in proc.stderr


def _assert_one_line(capsys, rc, pattern):
    err = capsys.readouterr().err.strip()
    assert rc == 2, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert re.search(pattern, err), err
    # no value of the table in the message
    for v in ("168.67", "2000", "167"):
        assert v not in err, err
