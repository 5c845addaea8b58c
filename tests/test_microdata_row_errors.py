"""A bad value in a row of the microdata is named where the user finds it: the file's line
as an editor shows it (the header is line 1) from a command, the 0-based position and the
index label from the Python API; never the value."""
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tabprotect.cli import main
from tabprotect.microdata import (RowError, TargetedSwapSettings, individual_risk,
                                  key_frequencies, swap, swap_targeted)

DEMO = Path(__file__).resolve().parents[1] / "tabprotect" / "data" / "demo"


def _people(n=12):
    return pd.DataFrame({"age": np.arange(n) % 4, "sex": np.arange(n) % 2,
                         "region": list("NSEW") * (n // 4), "w": np.linspace(20, 40, n)})


def _cli(tmp_path, capsys, data, section):
    data.to_csv(tmp_path / "people.csv", index=False)
    (tmp_path / "job.toml").write_text(
        '[microdata]\nfile = "people.csv"\nkeys = ["age", "sex"]\nweight = "w"\n'
        '[output]\ndir = "out"\n' + section)
    code = main([section.split("]")[0].strip("["), str(tmp_path / "job.toml"), "--quiet"])
    return code, capsys.readouterr().err


def _line_of(path, row):
    """The editor's line of the data row ``row`` (0-based) of a CSV written by pandas."""
    lines = Path(path).read_text().splitlines()
    return row + 2, lines[row + 1]


def test_risk_command_names_the_file_line_of_a_bad_weight(tmp_path, capsys):
    data = _people()
    data.loc[6, "w"] = -3.25
    code, err = _cli(tmp_path, capsys, data, "[risk]\n")
    line, text = _line_of(tmp_path / "people.csv", 6)
    assert "-3.25" in text                      # the line the message names holds the value
    assert code == 2 and f"people.csv line {line}: weight column 'w'" in err
    assert "-3.25" not in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_perturb_command_names_the_file_line_of_a_missing_swap_value(tmp_path, capsys):
    data = _people()
    data["region"] = data["region"].astype(object)
    data.loc[9, "region"] = None
    code, err = _cli(tmp_path, capsys, data,
                     '[perturb]\nmethod = "swap"\nvariable = "region"\nseed = 1\n')
    line, text = _line_of(tmp_path / "people.csv", 9)
    assert text.split(",")[2] == ""
    assert code == 2 and f"people.csv line {line}: swap variable 'region' is missing" in err


def test_swap_command_names_the_file_line_of_a_code_outside_the_geography(tmp_path, capsys):
    for name in ("census_persons.csv", "region.hrc"):
        shutil.copy(DEMO / name, tmp_path / name)
    persons = tmp_path / "census_persons.csv"
    lines = persons.read_text().splitlines()
    head = lines[0].split(",")
    col = head.index("region")
    fields = lines[4].split(",")
    fields[col] = "ZZ9"                          # line 5 of the file: the fourth record
    lines[4] = ",".join(fields)
    persons.write_text("\n".join(lines) + "\n")
    (tmp_path / "job.toml").write_text(
        '[microdata]\nfile = "census_persons.csv"\ndimensions = ["region", "sex"]\n'
        'household = "household_id"\n[hierarchies.region]\nhrc = "region.hrc"\n'
        'total = "Total"\n[swap]\ngeography = "region"\nrisk_variables = ["sex"]\nseed = 1\n')
    code = main(["swap", str(tmp_path / "job.toml"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "census_persons.csv line 5: geography 'region'" in err, err
    assert "ZZ9" not in err


def test_api_names_the_position_and_the_index_label():
    data = _people().set_index(pd.Index([f"p{i}" for i in range(12)]))
    data.loc["p7", "w"] = np.nan
    with pytest.raises(RowError, match=r"row 7 \(0-based position; index label 'p7'\): "
                                       r"weight column 'w'") as e:
        key_frequencies(data, ["age"], weights="w")
    assert e.value.position == 7
    with pytest.raises(ValueError, match="index label 'p7'"):
        individual_risk(data, ["age"], weights="w")
    data = _people()
    data["region"] = data["region"].astype(object)
    data.index = data.index + 100
    data.loc[103, "region"] = None
    with pytest.raises(RowError, match=r"row 3 \(0-based position; index label 103\)"):
        swap(data, "region", seed=1)
    data = _people().assign(hh=[1, 1, 2, 2, None, 3, 3, 4, 4, 5, 5, 6])
    with pytest.raises(RowError, match=r"row 4 \(0-based position; index label 4\): "
                                       r"targeted swap: household column 'hh' is empty"):
        swap_targeted(data, TargetedSwapSettings(levels=("region",), risk_variables=("sex",),
                                                 household="hh", seed=1))


def test_perturb_command_names_the_line_of_a_category_outside_the_matrix(tmp_path, capsys):
    data = _people()
    data["region"] = data["region"].astype(object)
    data.loc[5, "region"] = "Q7"
    matrix = ", ".join(f'{a} = {{{", ".join(f"{b} = {1.0 if a == b else 0.0}" for b in "NSEW")}}}'
                       for a in "NSEW")
    code, err = _cli(tmp_path, capsys, data,
                     f'[perturb]\nmethod = "pram"\nvariables = ["region"]\nseed = 1\n'
                     f'matrix = {{region = {{{matrix}}}}}\n')
    line, text = _line_of(tmp_path / "people.csv", 5)
    assert "Q7" in text and "Q7" not in err
    assert code == 2 and f"people.csv line {line}: column 'region': the category is not" in err


def test_a_household_variable_that_differs_names_the_record():
    data = _people().assign(hh=np.arange(12) // 2, region=list("NNSSEEWWNNSS"))
    data.loc[9, "region"] = "E"                  # its household's first record says N
    with pytest.raises(RowError, match=r"row 9 \(0-based position; index label 9\): targeted "
                                       r"swap: household variable 'region' differs"):
        swap_targeted(data, TargetedSwapSettings(levels=("region",), risk_variables=("sex",),
                                                 household="hh", seed=1))
