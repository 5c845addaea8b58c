"""tabprotect.audit: feasibility intervals against published oracles and brute force."""
from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from helpers import random_moves

from tabprotect.audit import AuditSettings, audit
from tabprotect.audit.moves import absorb_moves
from tabprotect.audit.regions import grow
from tabprotect.audit.system import Knowledge, SystemBuilder, WitnessBank
from tabprotect.errors import InputError
from tabprotect.model import Hierarchy, Table


def two_way(inner, rows=None, cols=None, kind="magnitude"):
    inner = np.asarray(inner, float)
    rows = rows or [str(i + 1) for i in range(inner.shape[0])]
    cols = cols or [str(j + 1) for j in range(inner.shape[1])]
    frame = pd.DataFrame([(r, c, inner[i, j]) for i, r in enumerate(rows)
                          for j, c in enumerate(cols)], columns=["r", "c", "value"])
    return Table.from_frame(frame, {"r": Hierarchy.flat(rows), "c": Hierarchy.flat(cols)},
                            freq=None, compute_totals=True, kind=kind)


def suppress(table, cells, letter="U"):
    st_ = table.status.copy()
    for codes in cells:
        st_[table.cell(*codes)] = letter
    return table.replace(status=st_)


def test_oracle_a1_handbook_2x2_block():
    # SDC Handbook 4.2: rows 1..3 x cols 1..2; the 2x2 block suppressed (true values
    # consistent with the published margins: row totals 7, 3; column totals 9, 7)
    t = suppress(two_way([[5, 2], [1, 2], [3, 3]]), [("1", "1"), ("1", "2"), ("2", "1"),
                                                     ("2", "2")])
    res = audit(t)
    got = {c: (res.lower[t.cell(*c)], res.upper[t.cell(*c)])
           for c in [("1", "1"), ("1", "2"), ("2", "1"), ("2", "2")]}
    assert got == {("1", "1"): (3, 6), ("1", "2"): (1, 4), ("2", "1"): (0, 3),
                   ("2", "2"): (0, 3)}
    assert res.n_components == 1


def test_oracle_a2_two_suppressions_per_relation_yet_disclosed():
    inner = [[30, 47, 64, 89], [90, 124, 5, 31], [92, 100, 59, 85], [800, 991, 651, 685]]
    t = two_way(inner, rows=list("wxyz"), cols=list("abcd"))
    cells = [("w", "a"), ("w", "b"), ("w", "c"), ("x", "a"), ("x", "c"), ("y", "b"),
             ("y", "d"), ("z", "b"), ("z", "d")]
    t = suppress(t, cells)
    res = audit(t)
    expected = {("w", "b"): (47, 47), ("w", "a"): (25, 94), ("w", "c"): (0, 69),
                ("x", "a"): (26, 95), ("x", "c"): (0, 69), ("y", "b"): (0, 185),
                ("y", "d"): (0, 185), ("z", "b"): (906, 1091), ("z", "d"): (585, 770)}
    for c, (lo, hi) in expected.items():
        i = t.cell(*c)
        assert (res.lower[i], res.upper[i]) == pytest.approx((lo, hi), abs=1e-7)
    assert res.exact.sum() == 1 and res.exact[t.cell("w", "b")]
    # an exactly disclosed primary is never protected, whatever its levels
    assert not res.protected[t.cell("w", "b")] and not res.passed
    # one more suppression fixes it
    fixed = audit(suppress(t, [("w", "d")], "M"))
    assert not fixed.exact.any()


def _caps(table, unpublished):
    """Per unpublished cell: the smallest published total it is a part of."""
    A = table.relations
    caps = []
    for i in np.flatnonzero(unpublished):
        cap = table.value.sum()
        col = A[:, i].tocoo()
        for r, coef in zip(col.row, col.data):
            total = table.relation_total[r]
            if coef < 0 and not unpublished[total]:
                cap = min(cap, table.value[total])
        caps.append(int(cap))
    return caps


def _brute_force_intervals(table, unpublished):
    """Integer min/max of each unpublished cell by enumerating every assignment.

    Each unpublished cell ranges over 0..(the smallest published total it is a part of),
    which every non-negative table respects; all combinations are checked at once.
    """
    cells = np.flatnonzero(unpublished)
    A = table.relations
    caps = _caps(table, unpublished)
    assert np.prod(np.asarray(caps, float) + 1) < 2e6, "enumeration too large for a test"
    grids = np.stack(np.meshgrid(*[np.arange(c + 1) for c in caps], indexing="ij"),
                     axis=-1).reshape(-1, len(cells))
    base = table.value.copy()
    base[cells] = 0
    resid = (A @ base)[:, None] + A[:, cells] @ grids.T
    ok = np.all(np.abs(resid) < 1e-9, axis=0)
    feasible = grids[ok]
    return ({i: feasible[:, k].min() for k, i in enumerate(cells)},
            {i: feasible[:, k].max() for k, i in enumerate(cells)})


@pytest.mark.parametrize("seed", range(6))
def test_intervals_match_brute_force_enumeration(seed):
    rng = np.random.default_rng(seed)
    # 3-D table 2x2x2 inner with margins: LP vertices can be fractional here
    hs = {"a": Hierarchy.flat(["0", "1"]), "b": Hierarchy.flat(["0", "1"]),
          "c": Hierarchy.flat(["0", "1"])}
    frame = pd.DataFrame([(i, j, k, int(rng.integers(0, 4))) for i in "01" for j in "01"
                          for k in "01"], columns=["a", "b", "c", "value"])
    t = Table.from_frame(frame, hs, freq=None, compute_totals=True, kind="frequency")
    while True:  # a random pattern small enough to enumerate
        n_sup = int(rng.integers(3, 7))
        unpublished = np.zeros(t.n_cells, bool)
        unpublished[rng.choice(t.n_cells, n_sup, replace=False)] = True
        if np.prod(np.asarray(_caps(t, unpublished), float) + 1) < 2e5:
            break
    lo, hi = _brute_force_intervals(t, unpublished)
    res = audit(t, unpublished=unpublished, integer=True)
    for i in np.flatnonzero(unpublished):
        assert res.lower[i] == lo[i] and res.upper[i] == hi[i], t.cell_name(i)


def test_integer_mode_tighter_than_lp_on_fractional_polytope():
    # A 3-D 2x2x2 table with only the grand total and the inner cells hidden behind
    # all 2-D margins: the LP bound can be fractional, the integer bound is not.
    hs = {"a": Hierarchy.flat(["0", "1"]), "b": Hierarchy.flat(["0", "1"]),
          "c": Hierarchy.flat(["0", "1"])}
    vals = {("0", "0", "0"): 1, ("0", "0", "1"): 0, ("0", "1", "0"): 0, ("0", "1", "1"): 1,
            ("1", "0", "0"): 0, ("1", "0", "1"): 1, ("1", "1", "0"): 1, ("1", "1", "1"): 0}
    frame = pd.DataFrame([(*k, v) for k, v in vals.items()], columns=["a", "b", "c", "value"])
    # every inner cell may be 0 (empty cells may be suppressed): the a-priori bound is 0
    t = Table.from_frame(frame, hs, freq=None, compute_totals=True, kind="frequency",
                         ).replace(empty="suppress")
    unpublished = t.is_inner.copy()
    lp = audit(t, unpublished=unpublished, integer=False)
    ip = audit(t, unpublished=unpublished, integer=True)
    lo, hi = _brute_force_intervals(t, unpublished)
    for i in np.flatnonzero(unpublished):
        assert ip.lower[i] == lo[i] and ip.upper[i] == hi[i]
        assert lp.lower[i] <= ip.lower[i] and lp.upper[i] >= ip.upper[i]


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_property_intervals_contain_true_value(data):
    nr = data.draw(st.integers(2, 4))
    nc = data.draw(st.integers(2, 4))
    inner = data.draw(st.lists(st.integers(0, 50), min_size=nr * nc, max_size=nr * nc))
    t = two_way(np.reshape(inner, (nr, nc)))
    mask = np.asarray(data.draw(st.lists(st.booleans(), min_size=t.n_cells,
                                         max_size=t.n_cells)))
    res = audit(t, unpublished=mask)
    assert np.all(res.lower <= t.value + 1e-7) and np.all(res.upper >= t.value - 1e-7)
    assert np.all(res.lower[~mask] == t.value[~mask])


def test_protection_verdict_against_levels():
    t = suppress(two_way([[5, 2], [1, 2], [3, 3]]), [("1", "1")])
    t = suppress(t, [("1", "2"), ("2", "1"), ("2", "2")], "M")
    i = t.cell("1", "1")  # interval [3, 6], value 5
    upl = np.zeros(t.n_cells)
    lpl = np.zeros(t.n_cells)
    upl[i], lpl[i] = 1, 2
    assert audit(t.replace(upl=upl, lpl=lpl)).passed
    upl[i] = 1.5  # needs 6.5 > 6
    res = audit(t.replace(upl=upl, lpl=lpl))
    assert not res.passed and res.shortfalls.tolist() == [i]
    upl[i], lpl[i] = 1, 2.5  # needs 2.5 < 3
    assert not audit(t.replace(upl=upl, lpl=lpl)).passed
    spl = np.zeros(t.n_cells)
    spl[i] = 3
    assert audit(t.replace(spl=spl)).passed
    spl[i] = 3.5
    assert not audit(t.replace(spl=spl)).passed
    # the lower requirement is capped at the a-priori bound: value 1 needs [0, ...]
    j = t.cell("2", "1")
    st2 = t.status.copy()
    st2[j] = "U"
    lpl2 = np.zeros(t.n_cells)
    lpl2[j] = 5
    assert audit(t.replace(status=st2, lpl=lpl2)).protected[j]


def test_published_primary_is_unprotected():
    t = two_way([[5, 2], [1, 2]])
    st_ = t.status.copy()
    st_[t.cell("1", "1")] = "U"
    res = audit(t.replace(status=st_), unpublished=np.zeros(t.n_cells, bool))
    assert not res.passed


def test_only_margins_published():
    t = two_way([[5, 2, 1], [1, 2, 7]])
    res = audit(t, unpublished=t.is_inner)
    i = t.cell("1", "1")
    lo, hi = _brute_force_intervals(t, t.is_inner)
    assert res.lower[i] == lo[i] and res.upper[i] == hi[i]
    assert res.n_components == 1


def test_singleton_attack():
    # row: T = a + b, both suppressed; a has one contributor: its owner knows a, so b is
    # disclosed to it although the plain audit gives b a wide interval
    h = Hierarchy.flat(["a", "b", "c"], total="T")
    frame = pd.DataFrame({"x": ["a", "b", "c"], "value": [10.0, 20.0, 30.0],
                          "freq": [1, 3, 4]})
    t = Table.from_frame(frame, {"x": h}, compute_totals=True)
    st_ = t.status.copy()
    st_[t.cell("a")] = "U"
    st_[t.cell("b")] = "U"
    upl = np.where(st_ == "U", 2.0, 0.0)
    t = t.replace(status=st_, upl=upl, lpl=upl)
    assert audit(t).passed
    res = audit(t, singleton=True)
    assert not res.protected[t.cell("b")]
    assert res.protected[t.cell("a")]  # b has 3 contributors: none knows b exactly
    st_[t.cell("c")] = "M"
    assert audit(t.replace(status=st_), singleton=True).passed


def test_large_components_progress_and_counts():
    rng = np.random.default_rng(3)
    t = two_way(rng.integers(1, 100, size=(30, 30)))
    mask = np.zeros(t.n_cells, bool)
    mask[rng.choice(np.flatnonzero(t.is_inner), 200, replace=False)] = True
    calls = []
    res = audit(t, unpublished=mask, progress=lambda d, n: calls.append((d, n)))
    assert calls and calls[-1][0] == calls[-1][1] == res.n_components
    assert res.n_lp + res.n_lp_skipped == 2 * mask.sum()
    assert np.all(res.lower <= t.value) and np.all(res.upper >= t.value)


def _pattern_of_60_cells() -> Table:
    """A 12x12 table, 60 random inner cells suppressed, the first inner cell primary."""
    rng = np.random.default_rng(7)
    t = two_way(rng.integers(1, 100, size=(12, 12)))
    st_ = t.status.copy()
    inner = np.flatnonzero(t.is_inner)
    st_[rng.choice(inner, 60, replace=False)] = "M"
    st_[inner[0]] = "U"
    st_[inner[1]] = "M"
    return t.replace(status=st_, upl=np.where(st_ == "U", 1.0, 0.0))


def test_time_limit_never_passes_an_unfinished_audit():
    t = _pattern_of_60_cells()
    full = audit(t)
    assert full.complete
    cut = audit(t, time_limit=0.0)
    assert not cut.complete and not cut.passed
    assert cut.summary()["complete"] is False


# ---------------------------------------------------------------- verdict mode
def _random_pattern(rng, t, n_primary, n_secondary, levels=True):
    st_ = t.status.copy()
    cells = rng.permutation(t.n_cells)
    st_[cells[:n_primary]] = "U"
    st_[cells[n_primary:n_primary + n_secondary]] = "M"
    prim = st_ == "U"
    scale = np.maximum(t.value, 1.0)
    upl = np.where(prim, np.round(rng.uniform(0, 0.6, t.n_cells) * scale), 0.0)
    lpl = np.where(prim, np.round(rng.uniform(0, 0.6, t.n_cells) * scale), 0.0)
    spl = np.where(prim & (rng.random(t.n_cells) < 0.3),
                   np.round(rng.uniform(0, 1.2, t.n_cells) * scale), 0.0)
    return t.replace(status=st_, upl=upl, lpl=lpl, spl=spl)


def _three_way(rng, sizes, kind="magnitude"):
    codes = [[str(i) for i in range(s)] for s in sizes]
    hs = {name: Hierarchy.flat(c) for name, c in zip("abc", codes)}
    rows = [(*combo, float(rng.integers(0, 30))) for combo in itertools.product(*codes)]
    frame = pd.DataFrame(rows, columns=["a", "b", "c", "value"])
    frame["freq"] = rng.integers(1, 4, len(frame))
    return Table.from_frame(frame, hs, compute_totals=True, kind=kind)


def _assert_verdict_agrees(t, **kw):
    full = audit(t, **kw)
    fast = audit(t, mode="verdict", **kw)
    assert fast.mode == "verdict" and full.mode == "intervals"
    np.testing.assert_array_equal(fast.protected, full.protected)
    assert fast.passed == full.passed
    unp = full.unpublished
    # an interior-point block LP's witness is feasible to the solver's primal tolerance
    # (1e-7, relative to the table's magnitudes): it may pass an end by a few hundred
    # thousandths on a table whose total is hundreds
    tol = 1e-6 + 1e-7 * float(np.abs(t.value).max(initial=0.0))
    out_lo, out_hi = unp & fast.outer_lower, unp & fast.outer_upper
    # values some feasible table attains: inside the exact interval ...
    assert np.all(fast.min_at_most[unp] >= full.lower[unp] - tol)
    assert np.all(fast.max_at_least[unp] <= full.upper[unp] + tol)
    # ... limits (a-priori bounds, outer LPs, exact LPs) outside it
    assert np.all(fast.min_at_least[unp] <= full.lower[unp] + tol)
    assert np.all(fast.max_at_most[unp] >= full.upper[unp] - tol)
    assert not (fast.primary & (out_lo | out_hi) & fast.protected).any()
    # ... and equal to it where they are flagged exact
    lo_exact = unp & fast.exact_lower
    hi_exact = unp & fast.exact_upper
    np.testing.assert_allclose(fast.min_at_most[lo_exact], full.lower[lo_exact], atol=tol)
    np.testing.assert_allclose(fast.max_at_least[hi_exact], full.upper[hi_exact], atol=tol)
    # exact disclosure of primary cells is found in both modes (where a shortfall was
    # proven by outer bounds alone, disclosure is left open, never claimed wrongly)
    prim = full.primary & unp & ~out_lo & ~out_hi
    np.testing.assert_array_equal(fast.exact[prim], full.exact[prim])
    assert not (fast.exact & ~full.exact).any()
    return full, fast


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_property_verdict_mode_agrees_with_intervals(data):
    seed = data.draw(st.integers(0, 10_000))
    rng = np.random.default_rng(seed)
    if data.draw(st.booleans()):
        t = two_way(rng.integers(0, 40, size=(data.draw(st.integers(2, 6)),
                                              data.draw(st.integers(2, 6)))))
    else:
        t = _three_way(rng, (3, 3, 2))
    n = t.n_cells
    t = _random_pattern(rng, t, data.draw(st.integers(1, max(1, n // 4))),
                        data.draw(st.integers(0, n // 2)))
    _assert_verdict_agrees(t)


def _draw_two_way_pattern(data) -> Table:
    rng = np.random.default_rng(data.draw(st.integers(0, 10_000)))
    t = two_way(rng.integers(0, 40, size=(data.draw(st.integers(4, 8)),
                                          data.draw(st.integers(4, 8)))))
    n = t.n_cells
    return _random_pattern(rng, t, data.draw(st.integers(1, max(1, n // 5))),
                           data.draw(st.integers(n // 8, n // 2)))


#: local LPs on every component (normally large components only), with neighbourhoods of
#: one and two relation steps (smaller than the component)
LOCAL_EVERYWHERE = AuditSettings(local_min_vars=0, local_hops=(1, 2))


def _blocks_everywhere(sizes=(12, 4)) -> AuditSettings:
    """Block LPs on every component (normally they replace the whole-component aggregate
    LPs on huge components only), with blocks smaller than the component."""
    return AuditSettings(block_min_vars=0, block_sizes=sizes, block_ipm_vars=10,
                         local_min_vars=0, local_hops=(1, 2))


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_property_local_lps_keep_the_verdict(data):
    t = _draw_two_way_pattern(data)
    kw = data.draw(st.sampled_from([{}, {"integer": True}, {"singleton": True}]))
    _assert_verdict_agrees(t, settings=LOCAL_EVERYWHERE, **kw)


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_property_screen_mode_never_certifies_wrongly(data):
    t = _draw_two_way_pattern(data)
    full = audit(t)
    screen = audit(t, mode="screen", settings=LOCAL_EVERYWHERE)
    assert screen.mode == "screen"
    # what the screen calls protected is protected; a screen pass is a pass
    assert not (screen.protected & ~full.protected).any()
    assert not screen.passed or full.passed


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_property_block_lps_keep_the_verdict(data):
    t = _draw_two_way_pattern(data)
    kw = data.draw(st.sampled_from([{}, {"integer": True}, {"singleton": True}]))
    blocks = _blocks_everywhere()
    _assert_verdict_agrees(t, settings=blocks, **kw)
    screen = audit(t, mode="screen", settings=blocks, **kw)
    full = audit(t, **kw)
    assert not (screen.protected & ~full.protected).any()
    assert not screen.passed or full.passed


def test_block_lps_certify_a_protected_pattern_without_whole_component_lps():
    rng = np.random.default_rng(5)
    t = two_way(rng.integers(5, 60, size=(25, 25)))
    inner = np.flatnonzero(t.is_inner)
    st_ = t.status.copy()
    st_[rng.choice(inner, 60, replace=False)] = "U"
    # every inner cell suppressed, margins published: each primary moves along rectangles
    st_[inner[st_[inner] != "U"]] = "M"
    prim = st_ == "U"
    t = t.replace(status=st_, upl=np.where(prim, 1.0, 0.0), lpl=np.where(prim, 1.0, 0.0))
    blocks = _blocks_everywhere(sizes=(200, 60))
    full, fast = _assert_verdict_agrees(t, settings=blocks)
    screen = audit(t, mode="screen", settings=blocks)
    assert full.passed and fast.passed and screen.passed
    assert fast.n_block_lp > 0 and fast.n_certified > 0
    # the screen certifies everything from block and local LPs alone
    assert screen.n_lp == 0


def _hopeless_pattern() -> Table:
    """A 30x30 table with 40 primaries whose levels no pattern of this kind meets."""
    rng = np.random.default_rng(11)
    t = two_way(rng.integers(5, 60, size=(30, 30)))
    inner = np.flatnonzero(t.is_inner)
    st_ = t.status.copy()
    st_[rng.choice(inner, 40, replace=False)] = "U"
    st_[rng.choice(inner[st_[inner] != "U"], 300, replace=False)] = "M"
    big = np.where(st_ == "U", 10 * t.value, 0.0)
    return t.replace(status=st_, upl=big, lpl=big)


def test_screen_with_block_lps_never_solves_whole_component_lps():
    t = _hopeless_pattern()
    screen = audit(t, mode="screen", settings=_blocks_everywhere(sizes=(200, 60)))
    assert not screen.passed and screen.n_block_lp > 0
    # what the blocks leave uncertified counts as short, without a whole-component LP
    assert screen.n_lp == 0 and screen.n_local_lp == 0


def test_screen_stops_block_passes_that_certify_nothing():
    # the hopeless pattern: the first block pass certifies few of its primaries, so the
    # screen leaves the larger passes out; with the yield rule off they all run (and may
    # certify a few more); whatever either screen certifies is protected
    t = _hopeless_pattern()
    blocks = _blocks_everywhere(sizes=(200, 60))
    adaptive = audit(t, mode="screen", settings=blocks)
    every = audit(t, mode="screen",
                  settings=dataclasses.replace(blocks, screen_block_min_yield=0.0))
    verdict = audit(t, mode="verdict", settings=blocks)
    assert adaptive.summary()["block_passes_skipped"] > 0
    assert every.summary()["block_passes_skipped"] == 0
    assert adaptive.n_block_lp < every.n_block_lp
    assert not (adaptive.protected & ~every.protected).any()
    assert not (every.protected & ~verdict.protected).any()
    assert not adaptive.passed and not verdict.passed
    # verdict mode never skips a pass
    assert verdict.summary()["block_passes_skipped"] == 0


def test_grow_gives_connected_blocks_of_the_asked_size():
    rng = np.random.default_rng(3)
    t = two_way(rng.integers(5, 60, size=(12, 12)))
    unpublished = t.is_inner.copy()
    system = SystemBuilder(t, unpublished, dual_min_vars=0).system(np.flatnonzero(unpublished))
    for seed in (0, 17, 143):
        block = grow(system, seed, 30)
        assert seed in block and len(block) == 30
        assert np.all(np.diff(block) > 0)
        # the seed's whole row and column (one relation step) come first
        row_mates = np.flatnonzero(np.asarray(
            system.A[system.rows_of(np.array([seed]))].sum(axis=0)).ravel() != 0)
        assert np.isin(row_mates, block).all()
    # the scratch arrays are handed back clear, so blocks do not depend on history
    np.testing.assert_array_equal(grow(system, 17, 30), grow(system, 17, 30))
    assert grow(system, 5, 10_000).tolist() == list(range(system.k))


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_property_previous_audit_of_a_sub_pattern_keeps_the_verdict(data):
    t = _draw_two_way_pattern(data)
    rng = np.random.default_rng(data.draw(st.integers(0, 10_000)))
    kw = data.draw(st.sampled_from([{}, {"integer": True}, {"singleton": True}]))
    mode = data.draw(st.sampled_from(["verdict", "screen"]))
    # a sub-pattern: some of the secondary cells published
    secondary = np.flatnonzero(t.status == "M")
    st_ = t.status.copy()
    st_[secondary[rng.random(len(secondary)) < 0.4]] = "S"
    before = audit(t.replace(status=st_), mode=mode, **kw)
    after = audit(t, mode=mode, previous=before, **kw)
    full = audit(t, **kw)
    if mode == "verdict":
        np.testing.assert_array_equal(after.protected, full.protected)
    else:
        assert not (after.protected & ~full.protected).any()
    # what was protected stays protected and costs no LP
    assert not (before.protected & before.primary & before.unpublished
                & ~after.protected).any()


def test_previous_audit_must_be_of_a_sub_pattern():
    t = _pattern_of_60_cells()
    res = audit(t, mode="verdict")
    st_ = t.status.copy()
    st_[np.flatnonzero(st_ == "M")[0]] = "S"
    with pytest.raises(InputError, match="unpublished there and published here"):
        audit(t.replace(status=st_), mode="verdict", previous=res)
    with pytest.raises(InputError, match="singleton"):
        audit(t, mode="verdict", previous=res, singleton=True)
    again = audit(t, mode="verdict", previous=res)
    assert again.passed and again.n_lp == 0 and again.n_certified == int(res.primary.sum())


def test_local_lps_decide_shortfalls_without_the_whole_lp():
    t = _hopeless_pattern()
    full, fast = _assert_verdict_agrees(t, settings=AuditSettings(local_min_vars=0))
    assert not fast.passed
    assert fast.n_local_lp > 0 and (fast.outer_upper | fast.outer_lower).any()


@pytest.mark.parametrize("seed", range(4))
def test_verdict_mode_integer_and_singleton_agree(seed):
    rng = np.random.default_rng(100 + seed)
    t = _three_way(rng, (3, 3, 3), kind="frequency")
    t = _random_pattern(rng, t, 6, 14)
    _assert_verdict_agrees(t, integer=True)
    _assert_verdict_agrees(t, singleton=True)


def test_verdict_mode_uses_fewer_lps_on_a_protected_pattern():
    rng = np.random.default_rng(5)
    t = two_way(rng.integers(5, 60, size=(25, 25)))
    inner = np.flatnonzero(t.is_inner)
    st_ = t.status.copy()
    st_[rng.choice(inner, 60, replace=False)] = "U"
    st_[inner[~np.isin(inner, np.flatnonzero(st_ == "U"))][:250]] = "M"
    prim = st_ == "U"
    t = t.replace(status=st_, upl=np.where(prim, 1.0, 0.0), lpl=np.where(prim, 1.0, 0.0))
    full, fast = _assert_verdict_agrees(t)
    assert fast.n_certified > 0
    assert fast.n_lp < full.n_lp / 3


def test_verdict_mode_time_limit_never_passes():
    t = _pattern_of_60_cells()
    assert audit(t, mode="verdict").passed
    cut = audit(t, mode="verdict", time_limit=0.0)
    assert not cut.passed and not cut.complete


def test_unknown_mode_is_an_input_error():
    from tabprotect.errors import InputError

    with pytest.raises(InputError, match="mode"):
        audit(two_way([[1, 2], [3, 4]]), mode="fast")


@pytest.mark.parametrize("mode", ["intervals", "verdict"])
def test_worker_processes_give_the_same_result(mode):
    pool_always = AuditSettings(parallel_min_cells=0)
    rng = np.random.default_rng(11)
    t = two_way(rng.integers(1, 50, size=(12, 12)))
    # 2x2 blocks on disjoint rows and columns: independent components
    st_ = t.status.copy()
    for b in range(6):
        r, c = str(2 * b + 1), str(2 * b + 2)
        st_[[t.cell(r, r), t.cell(c, c)]] = "M"
        st_[t.cell(c, r)] = "M"
        st_[t.cell(r, c)] = "U"
    prim = st_ == "U"
    t = t.replace(status=st_, upl=np.where(prim, 2.0, 0.0), lpl=np.where(prim, 2.0, 0.0))
    one = audit(t, mode=mode)
    calls = []
    two = audit(t, mode=mode, workers=2, progress=lambda d, n: calls.append((d, n)),
                settings=pool_always)
    assert one.n_components > 1 and calls[-1] == (one.n_components, one.n_components)
    # workers bound each component on its own, as this process does with no stacked LPs
    alone = audit(t, mode=mode, settings=AuditSettings(stack_max_vars=0))
    assert alone.n_lp == two.n_lp
    for name, col in alone.columns().items():
        np.testing.assert_array_equal(col, two.columns()[name])
    for name in ("protected", "exact"):
        np.testing.assert_array_equal(getattr(alone, name), getattr(two, name))
    # the stacked LPs (exact intervals, in every mode) give the same verdict
    assert one.passed == two.passed
    np.testing.assert_array_equal(one.protected, two.protected)
    if mode == "intervals":
        for name, col in one.columns().items():
            np.testing.assert_array_equal(col, two.columns()[name])


@pytest.mark.parametrize("attacker", [{"singleton": True}, {"coalition": 2}])
def test_worker_processes_judge_the_contributors_alike(attacker):
    rng = np.random.default_rng(12)
    t = two_way(rng.integers(1, 50, size=(8, 8)))
    st_ = t.status.copy()
    for b in range(4):
        r, c = str(2 * b + 1), str(2 * b + 2)
        st_[[t.cell(r, r), t.cell(c, c), t.cell(c, r)]] = "M"
        st_[t.cell(r, c)] = "U"
    prim = st_ == "U"
    freq = rng.integers(1, 3, t.n_cells).astype(float)
    t = t.replace(status=st_, upl=np.where(prim, 2.0, 0.0), lpl=np.where(prim, 2.0, 0.0),
                  freq=freq, top=t.value[:, None] * np.array([0.6, 0.3, 0.1]))
    pool_always = AuditSettings(parallel_min_cells=0)
    for mode in ("intervals", "verdict"):
        one = audit(t, mode=mode, **attacker)
        two = audit(t, mode=mode, workers=2, settings=pool_always, **attacker)
        assert one.n_components > 1 and one.attacked.any()
        np.testing.assert_array_equal(one.protected, two.protected)
        np.testing.assert_array_equal(one.attacked, two.attacked)


def test_infeasible_system_names_the_cell_from_a_worker():
    t = two_way([[5, 2], [1, 2]])
    # bounds the true table violates: no table satisfies them
    ub = t.ub.copy()
    ub[t.cell("1", "1")] = 1.0
    st_ = t.status.copy()
    st_[[t.cell("1", "1"), t.cell("1", "2"), t.cell("2", "1"), t.cell("2", "2")]] = "M"
    bad = t.replace(status=st_, ub=ub)
    with pytest.raises(InputError, match="around cell"):
        audit(bad, workers=2, settings=AuditSettings(parallel_min_cells=0))


# ---------------------------------------------------------------- candidate moves
def _two_by_two_pattern():
    r = Hierarchy.flat(["1", "2"], total="T")
    c = Hierarchy.flat(["a", "b"], total="T")
    t = Table.from_arrays({"r": r, "c": c}, [10, 6, 4, 5, 3, 2, 5, 3, 2])
    st_ = t.status.copy()
    st_[[4, 5, 7, 8]] = ["U", "M", "M", "M"]
    lvl = np.where(st_ == "U", 1.0, 0.0)
    return t.replace(status=st_, upl=lvl, lpl=lvl)


def test_a_valid_move_certifies_without_lp():
    import scipy.sparse as sp
    t = _two_by_two_pattern()
    cube = np.zeros((1, 9))
    cube[0, [4, 5, 7, 8]] = [1.0, -1.0, -1.0, 1.0]
    res = audit(t, mode="verdict", moves=sp.csr_matrix(cube))
    assert res.passed and res.n_lp == 0
    assert res.n_moves_used == 1 and res.n_moves_rejected == 0
    # the move and its mirror image are feasible tables: inside the exact interval
    full = audit(t)
    assert full.lower[4] <= res.min_at_most[4] <= 2.0
    assert 4.0 <= res.max_at_least[4] <= full.upper[4]


def test_invalid_moves_are_rejected_and_change_nothing():
    import scipy.sparse as sp
    t = _two_by_two_pattern()
    st_ = t.status.copy()
    st_[[7, 8]] = "S"            # now cell 4 is alone in its column: disclosed
    t = t.replace(status=st_)
    moves = np.zeros((3, 9))
    moves[0, [4, 5, 7, 8]] = [1.0, -1.0, -1.0, 1.0]   # moves published cells
    moves[1, [4, 5]] = [1.0, -1.0]                     # breaks both column relations
    moves[2, [4]] = [1e-3]                             # breaks every relation of cell 4
    res = audit(t, mode="verdict", moves=sp.csr_matrix(moves))
    assert res.n_moves_rejected == 3 and res.n_moves_used == 0
    assert not res.passed and res.exact[4]
    with pytest.raises(InputError, match="one column per cell"):
        audit(t, mode="verdict", moves=sp.csr_matrix(np.ones((1, 4))))


def _absorb_moves_one_by_one(moves, value, lb, ub, lo, hi, integer, frozen):
    # the plain reading of the rule: row by row, each direction shrunk into the bounds
    for r in range(moves.shape[0]):
        idx = moves.indices[moves.indptr[r]:moves.indptr[r + 1]]
        d = moves.data[moves.indptr[r]:moves.indptr[r + 1]]
        if len(idx) == 0 or frozen[idx].any():
            continue
        if integer and np.abs(d - np.round(d)).max() > 1e-9:
            continue
        for sign in (1.0, -1.0):
            step = sign * d
            room = np.where(step > 0, ub[idx] - value[idx], value[idx] - lb[idx])
            t = min(1.0, float(np.min(room / np.abs(step))))
            if t <= 1e-9 or (integer and t < 1.0):
                continue
            lo[idx] = np.minimum(lo[idx], value[idx] + t * step)
            hi[idx] = np.maximum(hi[idx], value[idx] + t * step)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.booleans())
def test_property_moves_absorbed_at_once_as_one_by_one(seed, integer):
    # the vectorised absorption of candidate moves gives exactly the bounds of the
    # row-by-row rule (empty rows, frozen cells, infinite bounds, fractional steps)
    rng = np.random.default_rng(seed)
    k, m = int(rng.integers(1, 12)), int(rng.integers(0, 15))
    value, lb, ub, moves = random_moves(rng, k, m, top=20, room=10, step=6, density=0.3)
    frozen = rng.random(k) < 0.1
    lo, hi = value.copy(), value.copy()
    absorb_moves(moves, value, lb, ub, lo, hi, integer, frozen)
    ref_lo, ref_hi = value.copy(), value.copy()
    _absorb_moves_one_by_one(moves, value, lb, ub, ref_lo, ref_hi, integer, frozen)
    np.testing.assert_array_equal(lo, ref_lo)
    np.testing.assert_array_equal(hi, ref_hi)


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_property_moves_never_change_the_verdict(data):
    # valid 2x2 cubes of the inner cells (some of them moving published cells, so that
    # the audit must reject those), and random vectors that break relations: the
    # verdict with them equals the interval audit's, and every bound they give is
    # attained by a feasible table
    import scipy.sparse as sp
    t = _draw_two_way_pattern(data)
    rng = np.random.default_rng(data.draw(st.integers(0, 10_000)))
    n_rows, n_cols = t.shape[0] - 1, t.shape[1] - 1
    inner = np.arange(t.n_cells).reshape(t.shape)[1:, 1:]
    rows = []
    for _ in range(data.draw(st.integers(1, 30))):
        i, i2 = rng.choice(n_rows, 2, replace=False)
        j, j2 = rng.choice(n_cols, 2, replace=False)
        d = np.zeros(t.n_cells)
        size = float(rng.integers(1, 50))
        d[[inner[i, j], inner[i2, j2]]] = size
        d[[inner[i, j2], inner[i2, j]]] = -size
        if rng.random() < 0.2:
            d[rng.integers(t.n_cells)] += 1.0   # no move any more
        rows.append(d)
    moves = sp.csr_matrix(np.array(rows))
    full = audit(t)
    for mode in ("verdict", "screen"):
        fast = audit(t, mode=mode, moves=moves)
        assert fast.n_moves_used + fast.n_moves_rejected == len(rows)
        if mode == "verdict":
            np.testing.assert_array_equal(fast.protected, full.protected)
        else:
            assert not (fast.protected & ~full.protected).any()
        unp = full.unpublished
        assert np.all(fast.min_at_most[unp] >= full.lower[unp] - 1e-6)
        assert np.all(fast.max_at_least[unp] <= full.upper[unp] + 1e-6)


def test_settings_are_recorded_and_checked():
    t = _pattern_of_60_cells()
    default = audit(t, mode="verdict")
    tuned = audit(t, mode="verdict", settings=AuditSettings(local_min_vars=0,
                                                             local_hops=(1,)))
    assert default.params["settings"] == AuditSettings().as_dict()
    assert tuned.params["settings"]["local_min_vars"] == 0
    assert tuned.params["settings"]["local_hops"] == [1]
    np.testing.assert_array_equal(default.protected, tuned.protected)
    with pytest.raises(InputError, match="local_hops"):
        AuditSettings(local_hops=(0,))
    with pytest.raises(InputError, match="block_core_share"):
        AuditSettings(block_core_share=2.0)
    for weight in (0.5, float("inf"), True, "9"):
        with pytest.raises(InputError, match="attacker_weight"):
            AuditSettings(attacker_weight=weight)
    with pytest.raises(InputError, match="attacker_pair_min"):
        AuditSettings(attacker_pair_min=-1)
    with pytest.raises(InputError, match="settings must be an AuditSettings"):
        audit(t, settings={"local_min_vars": 0})


def test_witness_bank_hands_an_attacker_only_tables_it_cannot_rule_out():
    value = np.array([5.0, 3.0, 2.0])
    bank = WitnessBank(3)
    bank.keep(np.array([1.0, -1.0, 0.0]))     # moves cells 0 and 1
    bank.keep(np.array([0.0, 2.0, -2.0]))     # moves cells 1 and 2
    bank.keep(np.zeros(3))                    # the true table: not kept
    knows_0 = Knowledge.exact(0, 5.0)
    assert [x.tolist() for x in bank.usable(value, knows_0)] == [[5.0, 5.0, 0.0]]
    # a coalition that knows cell 1 is at least 4: only the second table reaches it
    at_least = Knowledge(np.array([1]), np.array([4.0]), np.array([np.inf]))
    assert [x.tolist() for x in bank.usable(value, at_least)] == [[5.0, 5.0, 0.0]]
    small = WitnessBank(3, max_floats=3)
    small.keep(np.ones(3))
    small.keep(np.ones(3))
    assert len(small.rows) == 1
