"""tabprotect.model.scale: the same table at scales 1e-3 .. 1e12 gets the same pattern and
the same verdict from every method and from the audit (the solvers work in scaled units)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tabprotect import protect
from tabprotect.audit import audit
from tabprotect.model import Hierarchy, Table
from tabprotect.model.scale import scaled_table, value_scale

SCALES = [1e-3, 1.0, 1e6, 1e11, 1e12]
# the same range in powers of two outside the unscaled range (2^-10 ~ 1e-3, 2^40 ~
# 1.1e12): the tables the solvers see then differ in their exponents only, so a method's
# near-ties (equal scores up to the last bit, which decimal scaling may flip) are decided
# alike; the decimal scales and 1 must give the same verdict
BINARY_SCALES = [2.0 ** -10, 2.0 ** 30, 2.0 ** 37, 2.0 ** 40]


def _table(seed=3, groups=((3, "A"), (2, "B")), sizes=4, primaries=3, spread=None):
    """A two-level region x flat size table with a few primaries (30 % levels)."""
    rng = np.random.default_rng(seed)
    pairs = [("T", g) for _, g in groups]
    pairs += [(g, f"{g}{i}") for k, g in groups for i in range(1, k + 1)]
    region = Hierarchy.from_pairs(pairs)
    size = Hierarchy.flat([f"s{j}" for j in range(1, sizes + 1)])
    leaves = [(child, f"s{j}") for _, child in pairs if child[-1].isdigit()
              for j in range(1, sizes + 1)]
    if spread is None:
        values = rng.integers(5, 60, len(leaves)).astype(float)
    else:
        values = np.round(np.exp(rng.normal(5, spread, len(leaves))))
    frame = pd.DataFrame([(r, s, v) for (r, s), v in zip(leaves, values)],
                         columns=["region", "size", "value"])
    t = Table.from_frame(frame, {"region": region, "size": size}, freq=None,
                         compute_totals=True)
    st = t.status.copy()
    st[rng.choice(np.flatnonzero(t.is_inner), primaries, replace=False)] = "U"
    levels = np.where(st == "U", 0.3 * t.value, 0.0)
    return t.replace(status=st, upl=levels, lpl=levels)


def test_value_scale_is_a_power_of_two_and_leaves_ordinary_tables_alone():
    t = _table()
    assert value_scale(t) == 1.0
    for s in SCALES:
        f = value_scale(scaled_table(t, s))
        assert np.log2(f) == int(np.log2(f))
        assert 2 ** 16 <= t.value.max() * s / f < 2 ** 17 or f == 1.0
    assert value_scale(scaled_table(t, 1e11).replace(kind="frequency")) == 1.0


def test_values_too_small_for_any_scale_are_one_input_error():
    # 2^-1060: no finite power of two brings them near 1 (its inverse overflows)
    from tabprotect.errors import InputError
    tiny = scaled_table(_table(), 2.0 ** -1060)
    small = scaled_table(_table(), 2.0 ** -900)     # still scaled into the usual range
    assert 2 ** 16 <= small.value.max() / value_scale(small) < 2 ** 17
    for run in (value_scale, lambda t: protect(t, method="gauss"), audit):
        with pytest.raises(InputError, match="too small to solve in any unit"):
            run(tiny)


@pytest.mark.parametrize("method", ["hypercube", "modular", "optimal", "gauss", "greedy"])
def test_same_pattern_and_verdict_at_every_scale(method):
    base = _table()
    patterns = []
    for s in BINARY_SCALES + SCALES:
        res = protect(scaled_table(base, s), method=method)
        status = res.confidential_table.status
        np.testing.assert_array_equal(res.confidential_table.value, base.value * s)
        # the judge: an audit of the pattern on the unscaled table
        assert res.passed and audit(base.replace(status=status)).passed, (method, s)
        if s in BINARY_SCALES:
            patterns.append(np.flatnonzero(status == "M").tolist())
    assert all(p == patterns[0] for p in patterns), (method, patterns)


def test_audit_verdict_and_intervals_scale_with_the_table():
    """A pattern that leaves the primaries short at scale 1 is short at every scale (the
    unscaled LPs reported such a primary unbounded above 1e9), with intervals scaled."""
    base = _table()
    status = base.status.copy()
    status[[14, 16, 19, 21, 33, 34, 39]] = "M"
    ref = audit(base.replace(status=status))
    assert not ref.passed
    for s in SCALES:
        res = audit(scaled_table(base, s).replace(status=status))
        assert res.passed == ref.passed and (res.protected == ref.protected).all(), s
        sup = ref.unpublished
        np.testing.assert_allclose(res.lower[sup], ref.lower[sup] * s, rtol=1e-9, atol=1e-9 * s)
        np.testing.assert_allclose(res.upper[sup], ref.upper[sup] * s, rtol=1e-9)
        np.testing.assert_allclose(res.required_upper[ref.primary],
                                   ref.required_upper[ref.primary] * s, rtol=1e-12)


def test_modular_solves_a_wide_table_at_1e11():
    """Values spread over five orders of magnitude, scaled to 1e11 (a raw solver error
    before the scaling): a pattern the audit passes."""
    base = _table(seed=5, groups=((5, "A"), (5, "B"), (5, "C")), sizes=6, primaries=10,
                  spread=2.5)
    res = protect(scaled_table(base, 1e11), method="modular")
    assert res.passed
    assert audit(base.replace(status=res.confidential_table.status)).passed
    assert any("scaled units" in n for n in res.notes)
