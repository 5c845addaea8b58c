"""protect(): the entry point, the audit-and-repair loop, cost functions, results, CLI."""
from __future__ import annotations

import json
import sys

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tabprotect.audit import AuditSettings, audit
from tabprotect.cli import main
from helpers import unprotectable_two_by_two
from tabprotect.errors import InputError
from tabprotect.model import Hierarchy, Table, synthetic
from tabprotect.model.table import aggregate_leaves
from tabprotect.secondary.milp_repair import MilpRepairSettings
from tabprotect.secondary import (METHODS, GreedyOptions, MethodOutcome, ProtectSettings, protect,
                                  register_method)


def a2_table() -> Table:
    """ORACLES A2: inner cells w,x,y,z x a,b,c,d with totals."""
    inner = np.array([[30, 47, 64, 89], [90, 124, 5, 31], [92, 100, 59, 85],
                      [800, 991, 651, 685]], dtype=float)
    rows = Hierarchy.flat(list("wxyz"), total="Total")
    cols = Hierarchy.flat(list("abcd"), total="Total")
    v = np.zeros((5, 5))
    v[1:, 1:] = inner
    v = aggregate_leaves(v.ravel(), [rows, cols])
    return Table.from_arrays({"r": rows, "c": cols}, v, freq=np.full(25, 5.0))


A2_STARRED = [("w", "a"), ("w", "b"), ("w", "c"), ("x", "a"), ("x", "c"), ("y", "b"),
              ("y", "d"), ("z", "b"), ("z", "d")]


def test_a2_pattern_is_repaired_until_the_audit_passes():
    t = a2_table()
    st_ = t.status.copy()
    for code in A2_STARRED:
        st_[t.cell(*code)] = "M"
    wb = t.cell("w", "b")
    st_[wb] = "U"
    lvl = np.where(st_ == "U", 5.0, 0.0)
    t = t.replace(status=st_, upl=lvl, lpl=lvl)
    before = audit(t)
    assert before.lower[wb] == before.upper[wb] == 47  # the oracle: exactly disclosed
    res = protect(t, cost="unity")
    assert res.passed
    check = audit(res.confidential_table, singleton=True)
    assert check.passed and check.upper[wb] >= 52 and check.lower[wb] <= 42
    # the given suppressions stay; "one more suppression fixes it"
    assert (res.status[st_ == "M"] == "M").all()
    assert res.n_secondary == len(A2_STARRED) - 1 + 1


def test_a1_style_block_protects_x11():
    rows = Hierarchy.flat(["1", "2", "3"], total="Total")
    cols = Hierarchy.flat(["1", "2"], total="Total")
    inner = np.array([[4, 3], [2, 1], [3, 3]], dtype=float)  # A1: X11 in [3, 6]
    v = np.zeros((4, 3))
    v[1:, 1:] = inner
    t = Table.from_arrays({"r": rows, "c": cols}, aggregate_leaves(v.ravel(), [rows, cols]),
                          freq=np.full(12, 4.0))
    st_ = t.status.copy()
    x11 = t.cell("1", "1")
    st_[x11] = "U"
    t = t.replace(status=st_, upl=np.where(st_ == "U", 2.0, 0.0),
                  lpl=np.where(st_ == "U", 1.0, 0.0))
    res = protect(t, cost="unity")
    assert res.passed and res.proven_optimal
    assert res.n_secondary == 3  # the smallest block around one inner cell
    a = audit(res.confidential_table)
    assert a.upper[x11] >= 6 and a.lower[x11] <= 3


def test_nothing_to_do_without_primaries():
    t = a2_table()
    res = protect(t)
    assert res.n_secondary == 0 and res.passed and res.solver_status == "nothing to do"


def test_unknown_method_and_cost_are_input_errors():
    t = a2_table()
    with pytest.raises(InputError, match="unknown method"):
        protect(t, method="nope")
    st_ = t.status.copy()
    st_[6] = "U"
    with pytest.raises(InputError, match="unknown cost"):
        protect(t.replace(status=st_, upl=np.where(st_ == "U", 1.0, 0)), cost="weird")


@pytest.mark.parametrize("cost", ["unity", "freq", "value", "log", "column"])
def test_cost_functions_and_p_cells(cost):
    t = a2_table()
    st_ = t.status.copy()
    st_[t.cell("x", "c")] = "U"
    st_[t.cell("x", "d")] = "P"
    st_[t.cell("w", "c")] = "P"
    lvl = np.where(st_ == "U", 3.0, 0.0)
    rng = np.random.default_rng(1)
    t = t.replace(status=st_, upl=lvl, lpl=lvl, cost=rng.uniform(1, 10, t.n_cells),
                  freq=rng.integers(3, 9, t.n_cells).astype(float))
    res = protect(t, cost=cost)
    assert res.passed and audit(res.confidential_table, singleton=True).passed
    assert (res.status[st_ == "P"] == "P").all()
    from tabprotect.secondary import cost_vector
    c = cost_vector(t, cost)
    assert res.cost == pytest.approx(c[res.status == "M"].sum())


def _under_protecting(table, cost, **_):
    """A deliberately wrong method: adds one useless secondary."""
    status = table.status.copy()
    status[int(np.flatnonzero(status == "S")[0])] = "M"
    return MethodOutcome(status=status, proven_optimal=True, solver_status="test")


def test_repair_fixes_an_under_protected_method_result():
    register_method("_test_under")(_under_protecting)
    try:
        t = a2_table()
        st_ = t.status.copy()
        st_[[t.cell("y", "c"), t.cell("z", "a")]] = "U"
        lvl = np.where(st_ == "U", 10.0, 0.0)
        t = t.replace(status=st_, upl=lvl, lpl=lvl)
        unrepaired = protect(t, method="_test_under", repair=False)
        assert not unrepaired.passed and not unrepaired.proven_optimal
        res = protect(t, method="_test_under")
        assert res.passed and len(res.repaired) > 0 and not res.proven_optimal
        assert audit(res.confidential_table, singleton=True).passed
    finally:
        METHODS.pop("_test_under", None)


def test_published_frame_blanks_suppressed_cells():
    t = a2_table()
    st_ = t.status.copy()
    st_[t.cell("y", "c")] = "U"
    t = t.replace(status=st_, upl=np.where(st_ == "U", 5.0, 0.0))
    res = protect(t, cost="value")
    frame = res.to_frame()
    sup = res.table.suppressed
    assert frame["value"][sup].isna().all()
    assert (frame["value"][~sup] == t.value[~sup]).all()
    assert (frame["published"] == ~sup).all()
    assert (frame["upper"][sup] >= frame["lower"][sup]).all()
    s = res.summary()
    assert s["primary"] == 1 and s["secondary"] == res.n_secondary and s["audit"] == "PASSED"


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), n_primary=st.integers(1, 3),
       cost=st.sampled_from(["unity", "value", "log"]))
def test_every_result_passes_an_independent_audit(seed, n_primary, cost):
    rng = np.random.default_rng(seed)
    rows = Hierarchy.from_pairs([("T", "A"), ("T", "B"), ("A", "A1"), ("A", "A2"),
                                 ("B", "B1"), ("B", "B2")])
    cols = Hierarchy.flat(["a", "b", "c"], total="T")
    shape = (len(rows), len(cols))
    v = aggregate_leaves(rng.integers(1, 50, size=shape).ravel().astype(float), [rows, cols])
    f = aggregate_leaves(rng.integers(1, 5, size=shape).ravel().astype(float), [rows, cols])
    t = Table.from_arrays({"r": rows, "c": cols}, v, freq=f)
    st_ = t.status.copy()
    st_[rng.choice(np.flatnonzero(t.is_inner), n_primary, replace=False)] = "U"
    lvl = np.where(st_ == "U", np.round(0.25 * v + 1), 0.0)
    t = t.replace(status=st_, upl=lvl, lpl=lvl)
    res = protect(t, cost=cost)
    assert res.passed
    assert audit(res.confidential_table, singleton=True).passed


# ---------------------------------------------------------------- CLI
def _write_job(tmp_path, with_status: bool) -> str:
    rng = np.random.default_rng(3)
    rows, cols = ["r1", "r2", "r3"], ["c1", "c2", "c3"]
    recs = []
    for r in rows:
        for c in cols:
            recs.append({"row": r, "col": c, "value": float(rng.integers(5, 60)),
                         "freq": int(rng.integers(4, 9))})
    df = pd.DataFrame(recs)
    if with_status:
        df["status"] = "S"
        df.loc[0, "status"] = "U"
        df["upl"] = np.where(df["status"] == "U", 4.0, 0.0)
        df["lpl"] = df["upl"]
    else:
        df.loc[4, "freq"] = 1  # the frequency rule makes this cell unsafe
    df.to_csv(tmp_path / "cells.csv", index=False)
    extra = 'status = "status"\nupl = "upl"\nlpl = "lpl"\n' if with_status else ""
    rules = "" if with_status else "[rules.frequency]\nn = 3\nsafety_range = 10\n"
    (tmp_path / "job.toml").write_text(
        f'[input]\ncells = "cells.csv"\ndimensions = ["row", "col"]\ncompute_totals = true\n'
        f'{extra}\n[hierarchies.row]\ncodes = {json.dumps(rows)}\n'
        f'[hierarchies.col]\ncodes = {json.dumps(cols)}\n\n{rules}\n'
        f'[protect]\ncost = "unity"\n\n[output]\ndir = "out"\n')
    return str(tmp_path / "job.toml")


@pytest.mark.parametrize("with_status", [True, False])
def test_cli_protect_writes_published_table_and_summary(tmp_path, capsys, with_status):
    job = _write_job(tmp_path, with_status)
    code = main(["protect", job, "--time-limit", "30"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "audit: PASSED" in out
    pub = pd.read_csv(tmp_path / "out" / "published.csv")
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    sup = pub["status"] == "X"      # primary and secondary alike
    cells = pd.read_csv(tmp_path / "out" / "cells.csv")
    assert (cells["status"] == "U").sum() >= 1 and (cells["status"] == "M").sum() >= 1
    assert summary["status_counts"]["X"] == int(sup.sum()) == int(cells["status"].isin(
        ["U", "M"]).sum())
    assert set(pub["status"]) <= {"S", "X", "P", "Z"}
    assert pub.loc[sup, "value"].isna().all() and pub.loc[~sup, "value"].notna().all()
    assert summary["verdict"] == "PASSED"


def test_cli_without_primaries_is_an_input_error(tmp_path, capsys):
    (tmp_path / "cells.csv").write_text("row,value\nr1,3\nr2,4\n")
    (tmp_path / "job.toml").write_text('[input]\ncells = "cells.csv"\ndimensions = ["row"]\n'
                                      'compute_totals = true\n')
    assert main(["protect", str(tmp_path / "job.toml")]) == 2
    assert "no primary unsafe cells" in capsys.readouterr().err


def test_cli_protect_report_option(tmp_path, capsys):
    job = _write_job(tmp_path, True)
    assert main(["protect", job, "--time-limit", "30", "--report"]) == 0
    html = (tmp_path / "out" / "report.html").read_text()
    trail = json.loads((tmp_path / "out" / "trail.json").read_text())
    assert "PASSED" in html and "<img" in html
    assert trail["outputs"]["report"]["file"] == "report.html"
    assert "report: " in capsys.readouterr().out


@pytest.mark.parametrize("local_lps", [False, True])
def test_large_table_path_verdict_audit_and_local_repair(local_lps):
    # the path protect() takes from large_table cells on, forced on a small table:
    # screening audits (verdict audit if the screen never passes), local repair, no
    # up-front check; the independent interval audit must agree
    from tabprotect.audit import AuditSettings
    # local_lps: the screen's local LPs, normally for large components only
    settings = ProtectSettings(large_table=10,
                               audit=AuditSettings(local_min_vars=0) if local_lps else None)
    t = synthetic.preset("3d-small", seed=3)
    # (a budget that a loaded machine does not exhaust: the path is what is tested)
    res = protect(t, method="gauss", cost="value", singleton=False, time_limit=180,
                  settings=settings)
    assert res.params["audit_mode"] == "verdict"
    assert res.params["settings"]["large_table"] == 10
    assert (res.params["settings"]["audit"] is not None) == local_lps
    if local_lps:   # the audits were given those settings
        assert res.audit.settings.local_min_vars == 0
    assert res.audit.mode in ("screen", "verdict")
    assert len(res.repaired) > 0  # gauss leaves shortfalls: the local repair ran
    assert res.passed
    assert audit(res.confidential_table).passed  # intervals mode, independent of the verdict path


def test_large_path_deviation_lps_before_cubes_add_fewer_cells():
    # the large-table path forced on a 1,331-cell count table (gauss leaves 21 primaries
    # short): the round's deviation LPs come before the leaf cubes (their time cap: the
    # call's time so far) and settle every shortfall with fewer, cheaper cells than
    # cubes first; both patterns pass the independent interval audit
    t = synthetic.count_table([(2, 4)] * 3, seed=1)
    out = {}
    for rel in (1.0, 0.0):
        settings = ProtectSettings(large_table=10, repair_lp_relative_seconds=rel,
                                   milp_repair=MilpRepairSettings(enabled=False))
        res = protect(t, method="gauss", cost="value", singleton=False, settings=settings)
        assert res.passed and audit(res.confidential_table).passed
        assert res.params["settings"]["repair_lp_relative_seconds"] == rel
        out[rel] = res
    assert any("deviation LPs for" in n for n in out[1.0].notes)
    assert "repair 1 deviation LPs" in out[1.0].stage_seconds
    assert not any("deviation LPs for" in n for n in out[0.0].notes)
    assert 0 < len(out[1.0].repaired) < len(out[0.0].repaired)
    assert out[1.0].cost < out[0.0].cost


def test_large_path_deviation_lps_do_not_depend_on_the_machines_speed():
    # the large path forced on a 1,040-cell table whose gauss pattern leaves fewer short
    # primaries than one batch of deviation LPs: the round's time cap (the call's time
    # so far, a twentieth of it here) decides only whether a further batch starts, so
    # the pattern is the one an ample cap gives (a cap that cut the batch, or skipped
    # it, gave the cut-off primaries cubes or a second round); both patterns pass the
    # independent interval audit
    t = synthetic.preset("1k-3d", seed=2024)
    out = {}
    for rel in (0.05, 1.0):
        settings = ProtectSettings(large_table=10, repair_lp_relative_seconds=rel)
        res = protect(t, method="gauss", cost="value", singleton=False, time_limit=120,
                      settings=settings)
        assert res.passed and audit(res.confidential_table).passed
        notes = [n for n in res.notes if "deviation LPs for" in n]
        assert len(notes) == 1
        done, of = (int(w) for w in notes[0].split("for ")[1].split()[:3:2])
        assert 0 < done == of <= settings.repair_lp_batch
        out[rel] = res
    np.testing.assert_array_equal(out[0.05].status, out[1.0].status)
    assert out[0.05].cost == out[1.0].cost


def test_large_path_deviation_lps_with_single_contributor_attackers():
    # the deviation LPs do not model the single-contributor attackers: a primary they
    # took that the next audit finds short again goes to the cubes (the same LP would
    # add nothing); the pattern must pass the independent audit with the attackers
    # (gauss without its attack step, which leaves the repair nothing to do here)
    t = synthetic.count_table([(2, 4)] * 3, seed=1)
    settings = ProtectSettings(large_table=10, feasibility_check_max_work=0,
                               milp_repair=MilpRepairSettings(enabled=False))
    res = protect(t, method="gauss", cost="value", singleton=True, settings=settings,
                  attack="never")
    assert any("deviation LPs for" in n for n in res.notes)
    assert len(res.repaired) > 0
    assert res.passed and audit(res.confidential_table, singleton=True).passed


def test_audit_mode_is_validated_and_intervals_can_be_forced():
    t = synthetic.preset("2d-small", seed=1)
    with pytest.raises(InputError, match="audit_mode"):
        protect(t, method="gauss", audit_mode="fast", singleton=False)
    res = protect(t, method="gauss", audit_mode="verdict", singleton=False)
    assert res.passed == audit(res.confidential_table).passed


def test_feasibility_check_skipped_above_its_work_limit_final_audit_still_judges():
    # (generated tables hold totals equal to one single-contributor child, which no
    # pattern protects against its contributor: singleton attacks off, as in bench_scale)
    t = synthetic.preset("3d-small", seed=2024)
    res = protect(t, method="hypercube", cost="value", singleton=False,
                  settings=ProtectSettings(feasibility_check_max_work=0))
    assert any("feasibility check skipped" in n for n in res.notes)
    assert res.passed and audit(res.confidential_table).passed


@pytest.mark.parametrize("method", ["hypercube", "modular"])
def test_product_methods_recover_the_structure_of_a_general_table(method):
    t = synthetic.preset("3d-small", seed=7)
    # the same table as cells + relations only, cells shuffled (no dimensions at all)
    perm = np.random.default_rng(1).permutation(t.n_cells)
    new_index = np.empty_like(perm)
    new_index[perm] = np.arange(t.n_cells)
    general = Table.from_relations(t.value[perm], t.relations[:, perm],
                                   new_index[t.relation_total], freq=t.freq[perm],
                                   status=t.status[perm], upl=t.upl[perm],
                                   lpl=t.lpl[perm], spl=t.spl[perm])
    with pytest.raises(InputError, match="product"):
        # shuffled cells follow no row-major numbering: a clear error, not a guess
        protect(general, method=method, singleton=False)
    # numbered row-major (as JJ files and Castro's tables are): recovered and protected
    general = Table.from_relations(t.value, t.relations, t.relation_total, freq=t.freq,
                                   status=t.status, upl=t.upl, lpl=t.lpl, spl=t.spl)
    res = protect(general, method=method, singleton=False)
    assert any("recovered" in n for n in res.notes)
    assert res.passed and audit(res.confidential_table, singleton=False).passed
    direct = protect(t, method=method, singleton=False)
    np.testing.assert_array_equal(res.status, direct.status)


def test_feasibility_check_stops_at_its_share_of_the_time_limit():
    t = synthetic.preset("3d-small", seed=3)
    res = protect(t, method="gauss", cost="value", singleton=False, time_limit=1e-6)
    assert any("feasibility check stopped" in n for n in res.notes)
    # the budget is the whole call's: the audit had no time left, so it cannot pass
    assert not res.passed
    assert res.seconds <= 2.0


def test_feasibility_check_is_timed_as_a_stage():
    t = synthetic.preset("3d-small", seed=3)
    res = protect(t, method="gauss", cost="value", singleton=False)
    stages = list(res.stage_seconds)
    assert stages[:3] == ["setup", "feasibility check", "method"]
    # (each stage rounded to ms)
    assert sum(res.stage_seconds.values()) <= res.seconds + 0.001 * len(stages)
    assert res.passed == audit(res.confidential_table).passed


@pytest.mark.parametrize("pre_repair", ["auto", "off"])
def test_large_path_leaf_cube_pass_before_the_audit(pre_repair):
    # gauss on the large-table path: a leaf-cube pass gives the primaries interval
    # protection before the first audit (or not, "off"); either way the pattern must
    # pass the independent interval audit.  Two worker processes: "auto" searches the
    # cube pass's cubes in them, "off" leaves many shortfalls, whose deviation LPs run
    # in them (the MILP repair, which would settle them first, is off here)
    settings = ProtectSettings(large_table=10, pre_repair=pre_repair,
                               pre_repair_min_cells=10, cube_pass_parallel_min=8,
                               repair_lps=GreedyOptions(parallel_min_primaries=8),
                               milp_repair=MilpRepairSettings(enabled=False))
    t = synthetic.preset("1k-3d", seed=2024)
    res = protect(t, method="gauss", cost="value", singleton=False, time_limit=120,
                  audit_workers=2, settings=settings)
    assert res.params["settings"]["pre_repair"] == pre_repair
    assert res.params["settings"]["repair_lps"]["parallel_min_primaries"] == 8
    assert any("leaf-cube pass" in n for n in res.notes) == (pre_repair == "auto")
    assert res.passed
    assert audit(res.confidential_table).passed
    stages = res.stage_seconds
    assert list(stages)[:3] == (["setup", "method", "cube pass"] if pre_repair == "auto"
                                else ["setup", "method", "audit 1"])
    assert sum(stages.values()) <= res.seconds + 0.001 * len(stages)  # rounded to ms
    if pre_repair == "off":
        assert "repair 1 LPs" in stages
    if pre_repair == "auto":
        # the cubes reach the audit as candidate moves, and it accepts them
        assert res.audit.n_moves_used > 0 and res.audit.n_moves_rejected == 0
    assert (res.status[t.status == "U"] == "U").all()


@pytest.mark.parametrize("workers", [1, 2])
def test_large_path_hypercube_pass_on_four_dimensions(workers):
    # gauss on a large 4-D product table: the pass before the first audit is the
    # hypercube method run on the gauss pattern (with 2 workers: the primaries cut into
    # two runs searched in worker processes); the result must pass the independent
    # interval audit, keep every gauss suppression and leave the primaries U
    from tabprotect.secondary.passes import hypercube_in_worker, hypercube_pass

    settings = ProtectSettings(large_table=10, pre_repair_min_cells=10,
                               certify_pass_min_cells=10, cube_pass_parallel_min=4)
    t = synthetic.generate(((2, 3), (3,), (3,), (2,)), seed=7)
    assert len(t.dimensions) == 4
    raw = protect(t, method="gauss", cost="value", singleton=False, repair=False)
    if workers == 2:
        # the union of the runs' cubes holds every cube a run found
        primaries = np.flatnonzero(raw.status == "U")
        assert len(primaries) >= 4
        halves = [hypercube_in_worker((t, raw.status, primaries, run,
                                       raw.confidential_table.value, False, None))
                  for run in (primaries[:round(len(primaries) / 2)],
                              primaries[round(len(primaries) / 2):])]
        united = hypercube_pass(t, raw.status, raw.confidential_table.value, False, None,
                                workers=2, parallel_min=4)
        np.testing.assert_array_equal(united, np.unique(np.concatenate(halves)))
    res = protect(t, method="gauss", cost="value", singleton=False, time_limit=120,
                  audit_workers=workers, settings=settings)
    stages = list(res.stage_seconds)
    assert stages[:4] == ["setup", "method", "hypercube pass", "certify pass"]
    assert any("hypercube pass before the audit added" in n for n in res.notes)
    assert res.passed
    assert audit(res.confidential_table).passed
    assert (res.status[raw.status == "M"] == "M").all()
    assert (res.status[t.status == "U"] == "U").all()
    assert not (res.status[t.status != "U"] == "U").any()


@pytest.mark.parametrize("as_general", [False, True])
def test_gauss_with_large_components_gets_the_cube_pass(as_general):
    # a small table whose gauss pattern has components too large for the interval audit
    # and the verdict's exact LPs (TABLE3; here "large" from 10 cells): leaf and chain
    # cubes before the first audit for the primaries a screen leaves uncertified, on the
    # recovered product structure for a general table; the cubes reach the audit as
    # moves, and the pattern passes the independent interval audit
    t = synthetic.preset("1k-3d", seed=2024)
    if as_general:
        t = Table.from_relations(t.value, t.relations, t.relation_total, freq=t.freq,
                                 status=t.status, upl=t.upl, lpl=t.lpl, spl=t.spl)
    # the elimination alone (gauss' width step on general tables would leave the cube
    # pass nothing to do)
    res = protect(t, method="gauss", cost="value", singleton=False, time_limit=120,
                  settings=ProtectSettings(interval_audit_max_work=0,
                                           audit=AuditSettings(local_min_vars=10)),
                  widths="never")
    assert any("leaf-cube pass" in n for n in res.notes)
    assert "screen" in res.stage_seconds
    assert res.audit.n_moves_used > 0 and res.audit.n_moves_rejected == 0
    assert res.passed and audit(res.confidential_table, singleton=False).passed


@pytest.mark.parametrize("name,seed", [("2d-small", 2024), ("3d-small", 3)])
def test_verdict_mode_on_small_components_adds_no_cubes_the_audit_does_not_ask_for(
        name, seed):
    # the verdict audit is exact on small components: a primary it finds protected gets
    # no cube, and the repair adds no more than with the interval audit (a cube pass
    # before the audit added 1 cell to a safe pattern and 6 where 2 suffice)
    t = synthetic.preset(name, seed=seed)
    runs = {mode: protect(t, method="gauss", cost="value", singleton=False,
                          time_limit=120, audit_mode=mode)
            for mode in ("intervals", "verdict")}
    assert not any("leaf-cube pass" in n for n in runs["verdict"].notes)
    assert len(runs["verdict"].repaired) <= len(runs["intervals"].repaired)
    for res in runs.values():
        assert res.passed and audit(res.confidential_table, singleton=False).passed


def test_auto_audit_mode_counts_the_attackers_and_the_integer_bounds():
    # the interval audit's work grows with the single-contributor attackers (an LP pair
    # per attacker and primary) and with integer bounds (a MILP per fractional LP
    # bound): auto mode weighs both
    from tabprotect.secondary.protect import interval_audit_work
    t = synthetic.count_table([(2, 3), (3, 2)], seed=4)
    method = protect(t, method="gauss", cost="freq", repair=False, audit_mode="intervals")
    plain = interval_audit_work(t, method.status, False, 0, 1.0)
    attacked = interval_audit_work(t, method.status, True, 0, 1.0)
    assert attacked > plain > 0
    assert interval_audit_work(t, method.status, True, 0, 10.0) == 10 * attacked
    for weight, mode in ((1.0, "verdict"), (0.5 * plain / attacked, "intervals")):
        res = protect(t, method="gauss", cost="freq", settings=ProtectSettings(
            interval_audit_max_work=int(plain), interval_audit_integer_weight=weight))
        assert res.params["audit_mode"] == mode
        assert res.passed and audit(res.confidential_table, singleton=True).passed


def test_auto_audit_mode_switches_to_verdict_for_large_components():
    t = synthetic.preset("3d-small", seed=2024)
    res = protect(t, method="hypercube", cost="value", singleton=False,
                  settings=ProtectSettings(interval_audit_max_work=0))
    assert res.params["audit_mode"] == "verdict" and res.audit.mode == "verdict"
    assert any("verdict mode" in n for n in res.notes)
    assert res.passed and audit(res.confidential_table).passed
    # the default threshold keeps small patterns on the interval audit
    assert protect(t, method="hypercube", cost="value",
                   singleton=False).audit.mode == "intervals"


@pytest.mark.parametrize("method", ["gauss", "hypercube", "optimal"])
def test_primary_unprotectable_against_its_single_contributor_neighbour_is_refused(method):
    from tabprotect.errors import InfeasibleRulesError
    # T = a + b with T published: b's only contributor subtracts b from T and learns a
    h = Hierarchy.flat(["a", "b"], total="T")
    t = Table.from_arrays({"x": h}, [10, 6, 4], freq=[2, 1, 1])
    st_ = np.array(["P", "U", "S"])
    t = t.replace(status=st_, upl=np.where(st_ == "U", 1.0, 0.0))
    res = protect(t, method=method, cost="unity", singleton=False)
    assert res.passed and audit(res.confidential_table, singleton=False).passed
    assert not audit(res.confidential_table, singleton=True).passed
    with pytest.raises(InfeasibleRulesError,
                       match=r"^primary cell\(s\) \(x=a\) cannot.*single-contributor "
                             r"attackers included[^\n]*$"):
        protect(t, method=method, cost="unity", singleton=True)


def test_single_contributor_check_runs_only_when_the_final_audit_fails():
    rows = Hierarchy.flat(["1", "2"], total="T")
    cols = Hierarchy.flat(["a", "b"], total="T")
    t = Table.from_arrays({"r": rows, "c": cols}, [10, 6, 4, 5, 3, 2, 5, 3, 2],
                          freq=[7, 5, 2, 4, 2, 2, 3, 3, 1])
    st_ = np.array(["S", "S", "S", "S", "U", "S", "S", "S", "S"])
    t = t.replace(status=st_, upl=np.where(st_ == "U", 1.0, 0.0))
    res = protect(t, method="gauss", cost="unity", singleton=True)
    assert res.passed and audit(res.confidential_table, singleton=True).passed
    assert "feasibility check" in res.stage_seconds
    assert "feasibility check (single-contributor)" not in res.stage_seconds


@pytest.mark.parametrize("singleton", [False, True])
def test_modular_refuses_an_unprotectable_primary_after_its_failed_audit(singleton):
    # modular meets an unprotectable primary without spending its budget (the sub-table
    # is left unsolved): the check runs after the final audit failed, same error
    from tabprotect.errors import InfeasibleRulesError
    with pytest.raises(InfeasibleRulesError, match=r"r=1, c=a.*up protection"):
        protect(unprotectable_two_by_two(), method="modular", cost="unity",
                singleton=singleton)
    # a protectable one: no check at all, the final audit judges the pattern
    res = protect(unprotectable_two_by_two(published_above=False), method="modular",
                  cost="unity", singleton=singleton)
    assert res.passed and audit(res.confidential_table, singleton=singleton).passed
    assert not any(k.startswith("feasibility check") for k in res.stage_seconds)


@pytest.mark.parametrize("method", ["gauss", "hypercube"])
def test_unprotectable_primary_is_refused_before_any_method(method):
    from tabprotect.errors import InfeasibleRulesError
    with pytest.raises(InfeasibleRulesError, match=r"r=1, c=a.*up protection"):
        protect(unprotectable_two_by_two(), method=method, cost="unity", singleton=False)
    # a protectable one passes the same check
    res = protect(unprotectable_two_by_two(published_above=False), method=method,
                  cost="unity", singleton=False)
    assert res.passed and audit(res.confidential_table).passed


def test_the_method_gets_its_share_of_the_call_budget():
    seen = []

    def recorder(table, cost, *, time_limit=None):
        seen.append(time_limit)
        return _under_protecting(table, cost)

    register_method("_test_budget")(recorder)
    try:
        t = a2_table()
        st_ = t.status.copy()
        st_[t.cell("y", "c")] = "U"
        lvl = np.where(st_ == "U", 10.0, 0.0)
        res = protect(t.replace(status=st_, upl=lvl, lpl=lvl), method="_test_budget",
                      time_limit=40.0)
        assert res.passed
        assert len(seen) == 1 and 0 < seen[0] <= ProtectSettings().method_share * 40.0
        assert res.seconds <= 40.0
    finally:
        METHODS.pop("_test_budget", None)


def test_settings_are_recorded_as_applied_and_checked():
    t = synthetic.preset("3d-small", seed=2024)
    small = protect(t, method="hypercube", cost="value", singleton=False)
    applied = small.params["settings"]
    # the small-table path: the feasibility check and the interval audit's threshold
    assert applied["feasibility_check_max_work"] == ProtectSettings().feasibility_check_max_work
    assert "feasibility_check_seconds" in applied and "feasibility_share" not in applied
    assert "pre_repair" not in applied and "repair_block_sizes" not in applied
    assert applied["whole_repair_max_work"] == ProtectSettings().whole_repair_max_work
    large = protect(t, method="hypercube", cost="value", singleton=False, time_limit=60,
                    settings=ProtectSettings(large_table=10))
    applied = large.params["settings"]
    assert applied["large_table"] == 10 and applied["method_share_large"] == 0.6
    assert "feasibility_check_max_work" not in applied and "method_share" not in applied
    assert applied["repair_lps"]["free_first_min_cells"] == 20_000
    assert large.passed and audit(large.confidential_table, singleton=False).passed
    unrepaired = protect(t, method="hypercube", cost="value", singleton=False, repair=False)
    assert "max_repair_rounds" not in unrepaired.params["settings"]
    with pytest.raises(InputError, match="ProtectSettings"):
        protect(t, method="hypercube", singleton=False, settings={"large_table": 10})
    with pytest.raises(ValueError, match="method_share"):
        ProtectSettings(method_share=1.5)


@pytest.mark.parametrize("seed", [1, 2])
def test_feasibility_check_of_a_count_table_takes_its_cubes_as_witnesses(seed):
    # an integer intruder takes integral tables only: the check hands the leaf cubes of
    # the everything-suppressed pattern to the audit, which certifies with them and
    # judges as the independent LP audit does
    from lp_oracle import protected as oracle_protected
    from tabprotect.secondary.candidates import candidate_cells
    from tabprotect.secondary.feasibility import _cube_moves
    t = synthetic.count_table([(2, 2), (3,)], seed=seed)
    every = candidate_cells(t, "publish") | t.suppressed
    assert _cube_moves(t, every) is None   # small: the audit's LPs are quicker
    moves = _cube_moves(t, every, ProtectSettings(audit=AuditSettings(local_min_vars=10)))
    res = audit(t, unpublished=every, mode="verdict", moves=moves)
    assert moves.shape[0] > 0 and res.n_moves_used > 0 and res.n_moves_rejected == 0
    pattern = t.replace(status=np.where(every & (t.status != "U"), "M", t.status))
    np.testing.assert_array_equal(res.protected, oracle_protected(pattern, integer=True))
