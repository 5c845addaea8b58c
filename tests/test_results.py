"""Every result object shares one protocol, and what it exposes by default is the
published table: no true value of a suppressed cell, no true count beside a rounded one."""
from __future__ import annotations

import inspect

import numpy as np
import pandas as pd
import pytest

from tabprotect.model import Hierarchy, Table
from tabprotect.results import Result, published_table
from tabprotect.rounding import round_table
from tabprotect.secondary import protect

PLANTED = 31337.77   # a distinctive value in a primary cell


def magnitude_table() -> Table:
    r = Hierarchy.flat(["1", "2", "3"], total="T")
    c = Hierarchy.flat(["a", "b", "c"], total="T")
    inner = np.array([[70, 30, 90], [40, PLANTED, 20], [60, 50, 110]], dtype=float)
    v = np.zeros((4, 4))
    v[1:, 1:] = inner
    v[0, 1:] = inner.sum(0)
    v[1:, 0] = inner.sum(1)
    v[0, 0] = inner.sum()
    freq = np.full(16, 4.0)
    top = np.column_stack([v.ravel() * 0.6, v.ravel() * 0.3])
    t = Table.from_arrays({"r": r, "c": c}, v.ravel(), freq=freq, top=top)
    st = t.status.copy()
    st[t.cell("2", "b")] = "U"
    lvl = np.where(st == "U", 0.2 * PLANTED, 0.0)
    return t.replace(status=st, upl=lvl, lpl=lvl)


def count_table() -> Table:
    rows = Hierarchy.flat(["A", "B", "C"], total="Total")
    cols = Hierarchy.flat(["Male", "Female"], total="Total")
    return Table.from_arrays({"r": rows, "c": cols},
                             [39, 16, 23, 1, 1, 0, 6, 3, 3, 32, 12, 20], kind="frequency")


def _no_secret(frame: pd.DataFrame, secrets) -> None:
    numbers = frame.select_dtypes("number").to_numpy(dtype=float).ravel()
    for s in secrets:
        assert not np.isclose(numbers, s).any(), s


def test_protect_result_exposes_the_published_table_by_default():
    t = magnitude_table()
    res = protect(t, method="optimal", cost="value")
    assert res.passed
    hidden = np.isin(res.status, ("U", "M"))
    secrets = t.value[hidden]
    assert np.isclose(secrets, PLANTED).any()
    # the default views: no value, count or contribution of a suppressed cell
    for frame in (res.table.to_frame(), res.table.to_frame(("value", "freq", "status")),
                  res.published(), res.to_frame()):
        _no_secret(frame, secrets)
    assert np.isnan(res.table.value[hidden]).all() and np.isnan(res.table.freq[hidden]).all()
    assert np.isnan(res.table.top[hidden]).all()
    assert (res.table.upl == 0).all()     # levels derive from the contributions
    # which suppressed cells are primary is not published either
    assert set(res.published()["status"][hidden]) == {"X"}
    # the confidential table says so, and holds the true values
    assert res.confidential_table.value[t.cell("2", "b")] == PLANTED
    full = res.to_frame(confidential=True)
    assert np.isclose(full["confidential_value"], PLANTED).any()
    # to_frame() is the shareable view: one letter for suppressed cells; the confidential
    # view has the primaries
    assert set(res.to_frame()["status"][hidden]) == {"X"}
    assert (full["status"][hidden].to_numpy() == res.status[hidden]).all()


def test_every_table_view_shows_one_letter_for_suppressed_cells_unless_confidential():
    from tabprotect.audit import audit
    res = protect(magnitude_table(), method="optimal", cost="value")
    hidden = np.isin(res.status, ("U", "M"))
    assert {"U", "M"} <= set(res.status)
    tables = {"published": res.table, "confidential": res.confidential_table}
    for name, table in tables.items():
        for frame in (table.to_frame(), table.to_frame(("value", "freq", "status")),
                      table.to_columns(("status",)).to_pandas()):
            assert set(frame["status"][hidden]) == {"X"}, name
            assert (frame["status"][~hidden] == "S").all(), name
        full = table.to_frame(("status",), confidential=True)
        assert (full["status"].to_numpy() == res.status).all(), name
        # the repr counts suppressed cells as one letter too
        assert "'U'" not in repr(table) and "'M'" not in repr(table), name
        assert f"'X': {int(hidden.sum())}" in repr(table), name
    a = audit(res.confidential_table)
    assert set(a.to_frame()["status"][hidden]) == {"X"}
    assert (a.to_frame(confidential=True)["status"].to_numpy() == res.status).all()


def test_rounding_result_holds_rounded_values_only_by_default():
    t = count_table()
    res = round_table(t, 5, "controlled")
    changed = res.rounded != t.value
    assert changed.any()
    for table in (res.table, res.rounded_table):
        assert np.array_equal(table.value, res.rounded)
        assert np.array_equal(table.freq, res.rounded)   # a count table's freq is the count
        frame = table.to_frame(("value", "freq"))
        assert np.array_equal(frame["value"], res.rounded)
        assert np.array_equal(frame["freq"], res.rounded)
    assert list(res.published().columns) == ["r", "c", "value"]
    assert "confidential_value" not in res.to_frame().columns
    assert np.array_equal(res.confidential_table.value, t.value)


@pytest.mark.parametrize("make", ["protect", "round"])
def test_results_share_one_protocol(make):
    res = protect(magnitude_table(), cost="unity") if make == "protect" else \
        round_table(count_table(), 5, "controlled")
    assert isinstance(res, Result)
    assert isinstance(res.passed, bool) and res.passed
    assert isinstance(res.published(), pd.DataFrame)
    assert isinstance(res.params, dict) and res.params
    assert isinstance(res.seconds, float) and res.seconds >= 0
    assert isinstance(res.notes, list)
    assert isinstance(res.summary(), dict)
    sig = inspect.signature(res.to_frame)
    assert list(sig.parameters) == ["confidential"]
    assert sig.parameters["confidential"].default is False


def test_published_table_of_a_rounding_has_no_true_count_of_a_magnitude_table():
    t = magnitude_table()
    rounded = np.round(t.value / 10) * 10
    pub = published_table(t, rounded)
    assert np.isnan(pub.freq).all() and pub.top is None and pub.cost is None


def test_rounded_audit_follows_the_protocol():
    t = count_table()
    res = round_table(t, 5, "controlled")
    audit = res.audit
    assert isinstance(audit, Result) and audit.passed
    assert audit.params["base"] == 5 and audit.params["method"] == "controlled"
    assert isinstance(audit.seconds, float) and isinstance(audit.summary(), dict)
    pub = audit.published()
    assert np.array_equal(pub["value"], res.rounded)
    frame = audit.to_frame()
    assert "confidential_value" not in frame.columns and "value" not in frame.columns
    full = audit.to_frame(confidential=True)
    assert np.array_equal(full["confidential_value"], t.value)
    full = audit.to_frame(True, table=res.confidential_table)
    assert np.array_equal(full["confidential_value"], t.value)


def test_a_verdict_audit_figure_is_labelled_as_a_bound():
    res = protect(magnitude_table(), cost="unity", audit_mode="verdict")
    assert res.audit.mode == "verdict"
    cols = set(res.to_frame().columns)
    # either the bounds are named as bounds or every row says whether it is exact
    assert {"min_at_most", "max_at_least"} <= cols or "interval_exact" in cols


@pytest.mark.parametrize("mode", ["intervals", "verdict"])
def test_audits_follow_the_protocol_and_blank_unpublished_values(mode):
    from tabprotect.audit import audit
    res = protect(magnitude_table(), cost="unity")
    a = audit(res.confidential_table, mode=mode)
    assert isinstance(a, Result) and a.passed and a.params["mode"] == mode
    assert isinstance(a.seconds, float) and isinstance(a.notes, list)
    hidden = a.unpublished
    for frame in (a.published(), a.to_frame()):
        assert frame["value"][hidden].isna().all()
        _no_secret(frame[["value"]], res.confidential_table.value[hidden])
    full = a.to_frame(confidential=True)
    assert np.isclose(full["value"], PLANTED).any()


def _every_result_type() -> dict:
    """One result of each type of the protocol, from the same small tables."""
    from tabprotect.audit import audit
    from tabprotect.audit_rounded import audit_rounded
    prot = protect(magnitude_table(), cost="unity")
    rounded = round_table(count_table(), 5, "controlled")
    return {"protect": prot, "round": rounded,
            "interval audit": audit(prot.confidential_table),
            "verdict audit": audit(prot.confidential_table, mode="verdict"),
            "rounded audit": audit_rounded(rounded)}


def test_every_result_type_takes_the_same_to_frame_call():
    results = _every_result_type()
    for name, res in results.items():
        params = list(inspect.signature(res.to_frame).parameters.values())
        # confidential first and alone positional; the rest keyword-only
        assert params[0].name == "confidential" and params[0].default is False, name
        assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params[1:]), name
        plain, by_position, by_keyword = (res.to_frame(), res.to_frame(True),
                                          res.to_frame(confidential=True))
        assert len(plain) == len(by_keyword) == res.published().shape[0], name
        pd.testing.assert_frame_equal(by_position, by_keyword)
        # the confidential frame says more than the plain one (true values)
        assert not plain.equals(by_keyword), name
