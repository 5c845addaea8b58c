"""tabulate(..., engine="dask"): the same Table as the in-memory engine, cell by cell, from a
Dask DataFrame or a CSV/Parquet dataset, on a LocalCluster of two workers."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

from test_tabulate import NACE, REGION  # noqa: E402

from tabprotect.errors import InputError  # noqa: E402
from tabprotect.io.job import build_table, load_job  # noqa: E402
from tabprotect.parallel import use_executor  # noqa: E402
from tabprotect.parallel_dask import DaskExecutor  # noqa: E402
from tabprotect.tabulate import tabulate  # noqa: E402
from tabprotect.tabulate.engines import auto_order  # noqa: E402

DEMO = Path(__file__).resolve().parents[1] / "tabprotect" / "data" / "demo"
DIMS = {"region": REGION, "nace": NACE}


@pytest.fixture(scope="module")
def cluster():
    """Two workers (threads of this process: the engine's tasks are pandas/numpy work)."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as lc, \
            distributed.Client(lc, set_as_default=False) as client, \
            use_executor(DaskExecutor(client)):
        yield client


def generated(n: int, seed: int) -> pd.DataFrame:
    """Records whose sums are exact in binary (integer values, weights of 1/4 steps),
    so any summation order gives the same doubles."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "region": rng.choice(["N1", "N2", "S1"], n),
        "nace": rng.choice(["A011", "A012", "A021", "B011"], n),
        "x": rng.integers(0, 5000, n).astype(float),
        "s": rng.integers(0, 80, n).astype(float),
        "c": rng.integers(1, 9, n).astype(float),
        "h": rng.choice(["g1", "g2", "g3", "g4", None, None], n),
        "w": rng.choice([1.0, 2.0, 3.5, 0.75, 0.5], n),
        "r": rng.choice([0, 1], n, p=[0.9, 0.1])})


def assert_same(a, b, rtol: float = 0.0) -> None:
    """Every figure of every cell equal (sums within ``rtol``: summation order)."""
    assert a.n_cells == b.n_cells and a.kind == b.kind
    np.testing.assert_array_equal(b.freq, a.freq)
    np.testing.assert_allclose(b.value, a.value, rtol=rtol, atol=0)
    for name in ("top", "cost"):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None), name
        if x is not None:
            np.testing.assert_allclose(y, x, rtol=rtol, atol=0, err_msg=name)
    assert set(b.extra) == set(a.extra)
    for key in a.extra:
        np.testing.assert_allclose(b.extra[key], a.extra[key], rtol=rtol, atol=0,
                                   err_msg=key)


def test_holdings_shadow_cost_and_request_equal_pandas(cluster):
    df = generated(3000, 1)
    ddf = dd.from_pandas(df, npartitions=7)
    keys = dict(holding="h", shadow="s", cost="c", request="r", top_k=3)
    a = tabulate(df, DIMS, "x", engine="memory", **keys)
    b = tabulate(ddf, DIMS, "x", engine="dask", **keys)
    assert "holding_top3" in b.extra and "request_max" in b.extra
    assert_same(a, b)


def test_weights_and_counts_equal_pandas(cluster):
    df = generated(3000, 2)
    ddf = dd.from_pandas(df, npartitions=5)
    # weights of 0.5 need more than top_k candidates per cell: merged across partitions
    assert_same(tabulate(df, DIMS, "x", weight="w", shadow="s", cost="c", top_k=3),
                tabulate(ddf, DIMS, "x", weight="w", shadow="s", cost="c", top_k=3,
                         engine="dask"))
    assert_same(tabulate(df, DIMS, kind="frequency", weight="w"),
                tabulate(ddf, DIMS, kind="frequency", weight="w"))


def test_missing_values_are_counted_per_cell(cluster):
    df = generated(800, 3)
    df.loc[df.index % 7 == 0, "x"] = np.nan
    ddf = dd.from_pandas(df, npartitions=4)
    for policy in ("zero", "drop"):
        with pytest.warns(UserWarning, match="missing value"):
            a = tabulate(df, DIMS, "x", missing=policy)
        with pytest.warns(UserWarning, match="missing value"):
            b = tabulate(ddf, DIMS, "x", missing=policy, engine="dask")
        assert_same(a, b)


def _demo_dataset(folder: Path, suffix: str) -> Path:
    """The demo microdata cut into three files of one folder (three partitions)."""
    src = pd.read_csv(DEMO / "business_survey.csv", dtype=str, keep_default_na=False)
    src = src.replace("", None)
    folder.mkdir()
    for i, rows in enumerate(np.array_split(np.arange(len(src)), 3)):
        part = src.iloc[rows]
        if suffix == ".csv":
            part.to_csv(folder / f"part{i}.csv", index=False)
        else:
            part = part.astype({c: float for c in ("employment", "turnover", "weight")})
            part.to_parquet(folder / f"part{i}.parquet", index=False)
    return folder


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_demo_job_on_a_dataset_folder_equals_pandas(cluster, tmp_path, suffix):
    job = load_job(DEMO / "job.toml")
    a = build_table(job)
    folder = _demo_dataset(tmp_path / "survey", suffix)
    b = build_table(job.merged({"microdata": {"engine": "dask", "file": str(folder)}}))
    # the demo's turnover has decimals: cell sums are added partition by partition, so
    # they may differ in the last bits (as with duckdb); counts and tops are equal
    assert_same(a, b, rtol=1e-12)
    np.testing.assert_array_equal(b.top, a.top)
    np.testing.assert_array_equal(b.extra["holding_freq"], a.extra["holding_freq"])


def test_a_bad_code_names_the_partition_and_row(cluster):
    df = generated(400, 4)
    df.loc[250, "region"] = "ZZ9"
    ddf = dd.from_pandas(df, npartitions=4)
    with pytest.raises(InputError, match=r"microdata \(partition 3 of 4\) row with index label "
                                         r"250: the code in column 'region'"):
        tabulate(ddf, DIMS, "x", engine="dask")


def test_engine_choice_and_bad_sources(cluster, tmp_path):
    ddf = dd.from_pandas(generated(50, 5), npartitions=2)
    assert auto_order(ddf) == ("dask",)
    assert tabulate(ddf, DIMS, "x").freq.max() == 50              # auto: dask
    with pytest.raises(InputError, match="engine 'dask', not 'pandas'"):
        tabulate(ddf, DIMS, "x", engine="pandas")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no CSV or Parquet files"):
        tabulate(tmp_path / "empty", DIMS, "x", engine="dask")
    with pytest.raises(InputError, match="no records"):
        tabulate(ddf[ddf.x < -1], DIMS, "x", engine="dask")


def test_the_job_tabulates_on_its_cluster(cluster, tmp_path):
    """[microdata] engine = "dask" in a job with [cluster]: the table of the in-memory engine."""
    from tabprotect.pipeline import run
    folder = tmp_path / "job"
    shutil.copytree(DEMO, folder)
    text = (folder / "job.toml").read_text()
    plain = run(folder / "job.toml", task="primary")
    (folder / "job.toml").write_text(
        text.replace('missing = "error"', 'missing = "error"\nengine = "dask"')
        + f'\n[cluster]\nscheduler = "{cluster.scheduler.address}"\n')
    clustered = run(folder / "job.toml", task="primary")
    assert_same(plain.table, clustered.table, rtol=1e-12)
    np.testing.assert_array_equal(clustered.table.status, plain.table.status)
