"""Columns, the CSV reader and writer: a file read without pandas gives the columns
pandas' reader gives; a table or tabulation from a file equals the one from the same data
as a DataFrame (errors included); the CSV writer writes pandas' bytes; and a protect job
on CSV files never imports pandas."""
from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tabprotect.errors import InputError
from tabprotect.io.output import format_frame, write_csv
from tabprotect.model import Hierarchy, Table
from tabprotect.model.columns import Columns, factorize, parse_numbers, read_columns

#: read_columns' two readers: the csv module (the default for small files) and pandas'
#: C reader (the default above ``PANDAS_READ_BYTES``)
READERS = {"csv module": {}, "pandas": {"pandas_above": -1}}
from tabprotect.tabulate import tabulate

ROOT = Path(__file__).resolve().parents[1]

#: CSV texts the reader must read as pandas does (text columns, its missing fields)
TEXTS = {
    "plain": "g,x\na,1\nb,2.5\n",
    "missing": "g,x,y\na,,NA\nNULL,3,n/a\n  c ,nan,-1e3\n",
    "quoted": 'g,x\n"a, b",1\n"say ""hi""",2\n"two\nlines",3\n',
    "header spaces": " g , x \na,1\n",
    "short row": "g,x,y\na,1\nb,2,3\n",
    "blank lines": "g,x\na,1\n\nb,2\n",
    "bom": "\ufeffg,x\na,1\n",
    "mixed line ends": "g,x\r\na,1\nb,2\r\n\r\nc,3",
    "no missing field": "g,x\r\na,1\r\nb,2\r\n",
}


def _pandas_text(path: Path) -> dict:
    frame = pd.read_csv(path, dtype=str, keep_default_na=True)
    frame.columns = [str(c).strip() for c in frame.columns]
    return {c: [None if pd.isna(v) else v for v in frame[c]] for c in frame.columns}


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("name", sorted(TEXTS))
def test_reader_gives_pandas_text_columns(tmp_path, name, reader):
    path = tmp_path / "t.csv"
    path.write_text(TEXTS[name], encoding="utf-8")
    ours = read_columns(path, **READERS[reader])
    assert {c: ours[c].tolist() for c in ours.columns} == _pandas_text(path)


@pytest.mark.parametrize("seed", range(12))
def test_reader_agrees_with_pandas_on_random_files(tmp_path, seed):
    """Random fields (codes, numbers, missing tokens, spaces, commas and quotes that need
    quoting), CRLF or LF line ends: the same text columns as pandas' reader."""
    rng = np.random.default_rng(seed)
    pool = ["a", "b1", " c ", "NA", "", "nan", "1.5", "-0", "x,y", 'q"q', "N/A", "7"]
    width = int(rng.integers(1, 5))
    quoted = rng.random() < 0.5

    def field(v: str) -> str:
        return '"' + v.replace('"', '""') + '"' if "," in v or '"' in v else v
    rows = [[f"c{j}" for j in range(width)]]
    for _ in range(int(rng.integers(1, 30))):
        row = [str(rng.choice(pool if quoted else pool[:8])) for _ in range(width)]
        if width == 1 and row[0] == "":
            row[0] = "a"                    # a lone empty field is a blank line
        rows.append([field(v) for v in row])
    end = "\r\n" if rng.random() < 0.5 else "\n"
    path = tmp_path / "r.csv"
    path.write_bytes(end.join(",".join(r) for r in rows).encode() + end.encode())
    for reader in READERS.values():
        ours = read_columns(path, **reader)
        assert {c: ours[c].tolist() for c in ours.columns} == _pandas_text(path)


def test_reader_reads_gzip_like_plain(tmp_path):
    plain = tmp_path / "t.csv"
    plain.write_text(TEXTS["missing"])
    packed = tmp_path / "t.csv.gz"
    packed.write_bytes(gzip.compress(TEXTS["missing"].encode()))
    a, b = read_columns(plain), read_columns(packed)
    assert a.columns == b.columns and all(a[c].tolist() == b[c].tolist() for c in a.columns)


@pytest.mark.parametrize("text, words", [
    ("", "empty file"), ("g,x\n", "no data rows"), ("g,x\na,1,2\n", "line 2: 3 fields"),
    ("g,g\na,1\n", "appears twice"), (b"g,x\n\xff,1\n", "not UTF-8")])
@pytest.mark.parametrize("reader", sorted(READERS))
def test_reader_rejects_bad_files_in_one_line(tmp_path, text, words, reader):
    path = tmp_path / "bad.csv"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(InputError) as err:
        read_columns(path, **READERS[reader])
    assert "bad.csv" in str(err.value) and words in str(err.value)
    assert "\n" not in str(err.value)


def test_numbers_follow_pandas_to_numeric():
    raw = np.array(["1.5", None, "x", " 2 ", "1_000", "1e3", "-0", "inf"], dtype=object)
    ours, bad = parse_numbers(raw)
    theirs = pd.to_numeric(pd.Series(raw), errors="coerce").to_numpy(dtype=float)
    np.testing.assert_array_equal(ours, theirs)
    assert bad.tolist() == [False, False, True, False, True, False, False, False]


@pytest.mark.parametrize("pandas_min", [0, 10**9])
def test_factorize_keeps_first_appearance(pandas_min):
    codes, uniques = factorize(np.array(["b", "a", None, "b", "c"], dtype=object),
                               pandas_min=pandas_min)
    assert codes.tolist() == [0, 1, -1, 0, 2] and uniques.tolist() == ["b", "a", "c"]


@pytest.mark.parametrize("seed", range(6))
def test_factorize_by_pandas_equals_numpy(seed):
    """pandas' hash table and numpy's sort number random codes alike (missing values,
    padded codes that strip to the same text, mixed types)."""
    rng = np.random.default_rng(seed)
    pool = np.array(["a", " a", "b", "10", "1", None, "c ", float("nan")], dtype=object)
    if seed % 2:
        pool = np.append(pool, np.array([10], dtype=object))   # not all text: numpy's path
    values = pool[rng.integers(0, len(pool), int(rng.integers(1, 60)))]
    codes_p, uniq_p = factorize(values, pandas_min=0)
    codes_n, uniq_n = factorize(values, pandas_min=10**9)
    assert codes_p.tolist() == codes_n.tolist() and uniq_p.tolist() == uniq_n.tolist()


def test_microdata_are_read_for_the_columns_the_tabulation_uses(tmp_path):
    """The tabulation reads the spec's columns of a microdata file (the others are not
    converted), and all of them when the spec names one the file lacks (the check's
    message lists the file's columns)."""
    from tabprotect.tabulate.files import read_microdata
    from tabprotect.tabulate.spec import MicrodataSpec
    path = tmp_path / "m.csv"
    path.write_text("id,g,x,note\n1,a,5,NA\n2,b,,n/a\n", encoding="utf-8")
    dims = {"g": Hierarchy.flat(["a", "b"], total="T")}
    read = read_microdata(path, MicrodataSpec.make(dims, "x", None, None, None, None, None,
                                                   None, 2, None, "zero"))
    assert read.columns == ["g", "x"] and read["x"].tolist() == ["5", None]
    absent = read_microdata(path, MicrodataSpec.make(dims, "y", None, None, None, None,
                                                     None, None, 2, None, "zero"))
    assert absent.columns == ["id", "g", "x", "note"]
    with pytest.raises(InputError, match="columns: id, g, x, note"):
        tabulate(path, dims, "y")


# ---------------------------------------------------------------- file = frame
def _cells_frame() -> pd.DataFrame:
    return pd.DataFrame({"r": ["T", "T", "T", "1", "1", "1", "2", "2", "2"],
                         "c": ["T", "a", "b"] * 3,
                         "value": [10, 6, 4, 5, 3, 2, 5, 3, 2],
                         "freq": [9, 5, 4, 5, 3, 2, 4, 2, 2],
                         "status": ["", "", "", "", "u", "", "", "", "S"],
                         "upl": [0, 0, 0, 0, 1.5, 0, 0, 0, 0]})


def _dims():
    return {"r": Hierarchy.flat(["1", "2"], total="T"),
            "c": Hierarchy.flat(["a", "b"], total="T")}


def _same_table(a: Table, b: Table) -> None:
    for f in ("value", "freq", "upl", "lpl", "spl", "lb", "ub"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f)
    assert a.status.tolist() == b.status.tolist() and a.kind == b.kind


def test_a_table_from_a_file_equals_the_table_from_its_frame(tmp_path):
    frame = _cells_frame()
    path = tmp_path / "cells.csv"
    frame.to_csv(path, index=False)
    kw = dict(status="status", upl="upl", source="cells.csv")
    _same_table(Table.from_csv(path, _dims(), **kw), Table.from_frame(frame, _dims(), **kw))


@pytest.mark.parametrize("column, bad, words", [
    ("value", "3x", ": value column 'value' of cell (r=1, c=a) is not a number"),
    ("r", "9", ": the code in column 'r' is not in its hierarchy"),
    ("status", "Q", ", column 'status': not a status")])
def test_a_file_and_its_frame_fail_alike(tmp_path, column, bad, words):
    """The same message; the file's names the line an editor shows, the frame's the row's
    0-based position and index label."""
    frame = _cells_frame().astype({column: object})
    frame.loc[4, column] = bad
    frame.index = [f"k{i}" for i in range(len(frame))]
    path = tmp_path / "cells.csv"
    frame.to_csv(path, index=False)
    errors = []
    for make in (lambda: Table.from_csv(path, _dims(), status="status", source="cells.csv"),
                 lambda: Table.from_frame(frame, _dims(), status="status",
                                          source="cells.csv")):
        with pytest.raises(InputError) as err:
            make()
        errors.append(str(err.value))
    assert path.read_text().splitlines()[5].count(bad) == 1      # line 6 of the file
    assert errors[0] == "cells.csv line 6" + words + errors[0].split(words, 1)[1]
    assert errors[1] == ("cells.csv row 4 (0-based position; index label 'k4')" + words
                         + errors[1].split(words, 1)[1])


def _micro() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    return pd.DataFrame({"r": rng.choice(["1", "2"], 40), "c": rng.choice(["a", "b"], 40),
                         "x": rng.integers(1, 90, 40).astype(float),
                         "h": rng.choice(["h1", "h2", "", "h3"], 40)})


def test_tabulating_a_file_equals_tabulating_its_frame(tmp_path):
    frame = _micro()
    path = tmp_path / "micro.csv"
    frame.to_csv(path, index=False)
    kw = dict(top_k=2, holding="h")
    a = tabulate(path, _dims(), "x", **kw)
    b = tabulate(frame.replace({"h": {"": None}}), _dims(), "x", **kw)
    _same_table(a, b)
    np.testing.assert_array_equal(a.top, b.top)
    for key in a.extra:
        np.testing.assert_array_equal(a.extra[key], b.extra[key], err_msg=key)


def test_tabulating_a_bad_file_names_its_line(tmp_path):
    frame = _micro().astype({"x": object})
    frame.loc[7, "x"] = "n.a."
    path = tmp_path / "micro.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(InputError, match=r"micro.csv line 9: value of 'x' is not a number"):
        tabulate(path, _dims(), "x")
    with pytest.raises(InputError,
                       match=r"microdata row with index label 7: value of 'x' is not a number"):
        tabulate(frame, _dims(), "x")


# ---------------------------------------------------------------- writing
WRITTEN = [
    pd.DataFrame({"code": ["a", "b, c", 'q"q'], "value": [2000.0, 437272.80000000005, np.nan],
                  "lower": [-0.0, np.inf, -np.inf], "freq": [3, 4, 5],
                  "published": [True, False, True], "status": ["S", "U", "M"]}),
    pd.DataFrame({"cell": [0, 1], "share": [1 / 3, 2.0], "note": [None, "x"]}),
    pd.DataFrame({"only": ["", "a"]}),
    # no field to quote (the lines joined without the csv module): text with spaces and
    # missing fields, a row of empty fields, numbers, booleans, integers
    pd.DataFrame({"code": [" a", "b b", None, "é"], "value": [1.5, np.nan, -0.0, 2e20],
                  "flag": [True, False, True, False], "n": [1, -2, 3, 0],
                  "note": ["x", None, None, "it's"]}),
    pd.DataFrame({"a": [None, "1"], "b": [None, "2"]}),
    pd.DataFrame({"a": ["1", "2\r3"], "b": ["x", "y"]}),
]


@pytest.mark.parametrize("k", range(len(WRITTEN)))
def test_the_csv_writer_writes_pandas_bytes(tmp_path, k):
    frame = WRITTEN[k]
    ours = write_csv(Columns.from_frame(frame), tmp_path / "ours.csv").read_bytes()
    format_frame(frame).to_csv(tmp_path / "pandas.csv", index=False)
    assert ours == (tmp_path / "pandas.csv").read_bytes()


# ---------------------------------------------------------------- no pandas
CHILD = ("import sys; from tabprotect.cli import main; code = main(sys.argv[1:]); "
         "print(json.dumps({'code': code, 'pandas': 'pandas' in sys.modules}))")


def _job(tmp_path: Path, microdata: bool, method: str = "modular") -> Path:
    rng = np.random.default_rng(5)
    if microdata:
        frame = _micro()
        frame.loc[frame["r"] == "2", "c"] = "a"
        frame.loc[[0, 1], ["r", "c"]] = "2", "b"      # (2, b): two contributors, unsafe
        frame.to_csv(tmp_path / "micro.csv", index=False)
        spec = ('[microdata]\nfile = "micro.csv"\ndimensions = ["r", "c"]\nresponse = "x"\n'
                '[rules.frequency]\nn = 3\n[[rules.p]]\np = 10\n')
    else:
        t = Table.from_arrays(_dims(), [10, 6, 4, 5, 3, 2, 5, 3, 2],
                              freq=rng.integers(3, 9, 9))
        frame = t.to_frame(("value",))
        frame["status"] = np.where(np.arange(9) == 4, "U", "")
        frame.to_csv(tmp_path / "cells.csv", index=False)
        spec = ('[input]\ncells = "cells.csv"\ndimensions = ["r", "c"]\nstatus = "status"\n'
                'compute_totals = true\nkind = "frequency"\n')
    for d in ("r", "c"):
        spec += f'[hierarchies.{d}]\nflat = true\ntotal = "T"\n'
    if method in ("random", "controlled"):
        spec += f'[round]\nbase = 3\nmethod = "{method}"\n'
        spec += "seed = 1\n" if method == "random" else ""
    else:
        spec += f'[protect]\nmethod = "{method}"\nseed = 1\n' if method == "cta" \
            else f'[protect]\nmethod = "{method}"\n'
    path = tmp_path / "job.toml"
    path.write_text(spec)
    return path


@pytest.mark.parametrize("microdata, method", [(False, "modular"), (True, "modular"),
                                               (True, "cta"), (True, "random"),
                                               (False, "controlled")],
                         ids=["cells", "microdata", "cta", "random", "controlled"])
def test_a_csv_protect_or_round_job_never_imports_pandas(tmp_path, microdata, method):
    # cta's and a rounding's audits are written from their Columns
    # (AdjustedAudit.to_columns, RoundedAuditResult.to_columns), as suppression's
    job = _job(tmp_path, microdata, method)
    command = "round" if method in ("random", "controlled") else "protect"
    out = subprocess.run([sys.executable, "-c", "import json; " + CHILD, command, str(job),
                          "-o", str(tmp_path / "out"), "--quiet"], capture_output=True,
                         text=True, cwd=ROOT, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result == {"code": 0, "pandas": False}
    assert (tmp_path / "out" / "published.csv").is_file()


@pytest.mark.parametrize("only_flagged", [False, True])
def test_the_rounded_audit_file_from_columns_is_what_pandas_writes_of_the_frame(
        tmp_path, only_flagged):
    # the CLI writes a rounded table's audit from its Columns (no pandas); the bytes and
    # the flagged rows' positions are those of the audit's DataFrame
    from tabprotect.audit_rounded import audit_rounded
    from tabprotect.rounding import round_table
    t = Table.from_arrays(_dims(), [10, 6, 4, 5, 3, 2, 5, 3, 2], freq=[5] * 9)
    audit = audit_rounded(round_table(t, base=5, method="random", seed=1))
    flagged = audit.narrower | audit.exact | audit.pinned_small
    assert flagged.any() and not flagged.all()
    frame = audit.to_frame(table=t, only_flagged=only_flagged)
    columns = audit.to_columns(table=t, only_flagged=only_flagged)
    assert frame.index.tolist() == (np.flatnonzero(flagged).tolist() if only_flagged
                                    else list(range(t.n_cells)))
    ours = write_csv(columns, tmp_path / "ours.csv").read_bytes()
    format_frame(frame).to_csv(tmp_path / "pandas.csv", index=False)
    assert ours == (tmp_path / "pandas.csv").read_bytes()
