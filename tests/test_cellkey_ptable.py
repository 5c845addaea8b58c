"""Count perturbation tables: exact rational properties, maximum entropy, tau-Argus files."""
from fractions import Fraction as F

import numpy as np
import pytest
from scipy.optimize import linprog

from tabprotect.cellkey import count_ptable, read_ptable, write_ptable
from tabprotect.errors import InputError

PARAMS = [(1, 0.5, 0, None), (2, 1.0, 0, None), (3, 2.0, 2, None), (5, 3.0, 2, None),
          (3, 2.0, 0, 0.5), (4, 2.5, 1, None), (5, 3.0, 0, 0.0), (3, 1.5, 0, 0.3)]
MONO = [(2, 1.0, 0, None), (3, 2.0, 2, None), (5, 3.0, 2, None), (3, 2.0, 0, 0.5)]


def _moment_range(v):
    """Smallest and largest variance of a zero-mean distribution on ``v`` (an LP)."""
    A = np.vstack([np.ones(len(v)), v])
    lo = linprog(np.square(v), A_eq=A, b_eq=[1, 0], bounds=(0, None)).fun
    hi = -linprog(-np.square(v), A_eq=A, b_eq=[1, 0], bounds=(0, None)).fun
    return lo, hi


@pytest.mark.parametrize("D,V,js,pstay", PARAMS)
def test_rows_are_exact_distributions(D, V, js, pstay):
    pt = count_ptable(D, V, js, pstay)
    assert pt.fractions(0) == {0: F(1)}                     # zeros stay zero
    for i in range(pt.imax + 3):
        f = pt.fractions(i)
        assert sum(f.values()) == 1                          # exactly
        assert sum(v * p for v, p in f.items()) == 0         # zero mean, exactly
        assert all(p > 0 for p in f.values())
        assert all(abs(v) <= D for v in f)
        j = [min(i, pt.imax) + v for v in f]
        assert all(x >= 0 and not (0 < x <= js) for x in j)  # no 1..js published
    # rows away from the boundaries carry the requested variance
    var = float(sum(v * v * p for v, p in pt.fractions(pt.imax).items()))
    assert abs(var - V) <= 1e-6


@pytest.mark.parametrize("D,V,js,pstay", PARAMS)
def test_short_rows_take_the_closest_feasible_variance(D, V, js, pstay):
    pt = count_ptable(D, V, js, pstay)
    for i in range(1, pt.imax + 1):
        f = pt.fractions(i)
        var = float(sum(v * v * p for v, p in f.items()))
        if abs(var - V) > 1e-6:
            # the row's allowed noises cannot carry V: independent LP on all allowed noises
            v = np.array([x for x in range(-D, D + 1)
                          if i + x >= 0 and not (0 < i + x <= js)], float)
            if pstay is not None and 0 in v:
                rest = v[v != 0]
                lo, hi = _moment_range(rest)
                lo, hi = lo * (1 - pstay), hi * (1 - pstay)
            else:
                lo, hi = _moment_range(v)
            assert not (lo - 1e-9 <= V <= hi + 1e-9)
            assert abs(var - min(max(V, lo), hi)) <= 1e-6


def test_closed_forms():
    # D = 1, V = 1/2: mean 0 and variance fix {1/4, 1/2, 1/4}
    pt = count_ptable(1, 0.5)
    for i in (1, 2, 10):
        assert pt.fractions(i) == {-1: F(1, 4), 0: F(1, 2), 1: F(1, 4)}
    # D = 1, V = 1: the largest variance on {-1, 0, 1}: no mass at 0
    assert count_ptable(1, 1.0).fractions(5) == {-1: F(1, 2), 1: F(1, 2)}
    # D = 2, V = 1, pstay = 1/2: symmetric maximum entropy on +-1, +-2 given p(0)
    f = count_ptable(2, 1.0, pstay=0.5).fractions(7)
    exact = {-2: F(1, 12), -1: F(1, 6), 0: F(1, 2), 1: F(1, 6), 2: F(1, 12)}
    assert set(f) == set(exact)
    assert all(abs(f[v] - exact[v]) <= F(1, 10 ** 8) for v in f)
    # D = 3, V = 2, pstay = 1/2, original 1: the rest {-1, 1, 2, 3} carries at most
    # E v^2 = 3 (p(-1) = 3/4, p(3) = 1/4), so the row's variance is 3/2
    f = count_ptable(3, 2.0, pstay=0.5).fractions(1)
    assert f == {-1: F(3, 8), 0: F(1, 2), 3: F(1, 8)}


def _entropy(p):
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


def test_maximum_entropy_against_feasible_directions():
    pt = count_ptable(4, 2.5)
    v, q = pt.row(10)
    p = q / pt.scale
    A = np.vstack([np.ones(v.size), v, v * v])
    _, _, vt = np.linalg.svd(A)
    null = vt[3:]                              # directions keeping sum, mean and variance
    rng = np.random.default_rng(0)
    h0 = _entropy(p)
    for _ in range(50):
        d = rng.standard_normal(null.shape[0]) @ null
        for eps in (1e-3, 1e-2):
            assert _entropy(p + eps * d) <= h0 + 1e-9


def test_lookup_intervals_tile_the_unit_interval():
    pt = count_ptable(1, 0.5)
    keys = (np.arange(1000) + 0.5) / 1000
    v = pt.lookup(np.full(1000, 6), keys)
    assert (np.bincount(v + 1) == [250, 500, 250]).all()
    assert (v[:250] == -1).all() and (v[-250:] == 1).all()   # ordered by j
    assert (pt.lookup(np.zeros(1000, int), keys) == 0).all()


def test_tau_argus_file_round_trip(tmp_path):
    pt = count_ptable(5, 3.0, js=2)
    path = tmp_path / "pt.txt"
    write_ptable(pt, path)
    lines = path.read_text().splitlines()
    assert lines[0] == "i;j;p;v;p_int_ub"
    assert lines[1] == "0;0;1.00000000;0;1.00000000"
    back = read_ptable(path)
    for a in ("i", "j", "q"):
        assert (getattr(back, a) == getattr(pt, a)).all()
    assert back.scale == pt.scale
    # each row's last p_int_ub is exactly 1
    last = {}
    for ln in lines[1:]:
        i, _, _, _, ub = ln.split(";")
        last[i] = ub
    assert set(last.values()) == {"1.00000000"}


def test_read_a_hand_written_file(tmp_path):
    path = tmp_path / "pt.txt"
    path.write_text("i;j;p;v;p_int_ub\n0;0;1;0;1\n1;0;0.25;-1;0.25\n1;1;0.5;0;0.75\n"
                    "1;2;0.25;1;1\n")
    pt = read_ptable(path)
    assert pt.fractions(9) == {-1: F(1, 4), 0: F(1, 2), 1: F(1, 4)}


@pytest.mark.parametrize("text,needle", [
    ("i;j;v\n0;0;0\n", "lacks column 'p'"),
    ("i;j;p;v\n0;0;1;0\n1;0;0.5;-1\n", "original count 1 do not sum to 1"),
    ("i;j;p;v\n0;0;1;0\n1;x;0.5;-1\n", "line 3"),
    ("i;j;p;v\n0;0;1;0\n1;2;1;0\n", "line 3: inconsistent"),
])
def test_bad_files_name_file_and_line(tmp_path, text, needle):
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(InputError, match=needle) as e:
        read_ptable(path)
    assert "bad.txt" in str(e.value)


def test_a_file_not_utf8_or_not_readable_is_one_line(tmp_path):
    path = tmp_path / "latin.txt"
    path.write_bytes("i;j;p;v\n0;0;1;0\n# r\xe9sum\xe9\n".encode("latin-1"))
    with pytest.raises(InputError, match="latin.txt: not UTF-8 text"):
        read_ptable(path)
    with pytest.raises(InputError, match="cannot read the ptable file"):
        read_ptable(tmp_path)  # a folder: exists, but cannot be read as a file


def test_a_utf8_bom_is_not_part_of_the_header(tmp_path):
    path = tmp_path / "bom.txt"
    path.write_bytes(b"\xef\xbb\xbfi;j;p;v\n0;0;1;0\n1;0;0.5;-1\n1;1;0.5;0\n")
    assert read_ptable(path).fractions(1) == {-1: F(1, 2), 0: F(1, 2)}


@pytest.mark.parametrize("kw,needle", [({"D": 0, "V": 1}, "D must"), ({"D": 2, "V": 0}, "V must"),
                                       ({"D": 2, "V": 1, "js": 2}, "js must be smaller"),
                                       ({"D": 2, "V": 1, "pstay": 1.0}, "pstay")])
def test_bad_parameters(kw, needle):
    with pytest.raises(InputError, match=needle):
        count_ptable(**kw)


@pytest.mark.parametrize("D,V,js,pstay", MONO)
def test_monotone_rows(D, V, js, pstay):
    pt = count_ptable(D, V, js, pstay, mono=True)
    for i in range(pt.imax + 1):
        f = pt.fractions(i)
        assert sum(f.values()) == 1 and sum(v * p for v, p in f.items()) == 0
        allowed = [v for v in range(-D, D + 1) if i + v >= 0 and not (0 < i + v <= js)]
        p = {v: float(f.get(v, 0)) for v in allowed}
        for side in ([v for v in allowed if v >= 0], sorted((v for v in allowed if v <= 0),
                                                            reverse=True)):
            for a, b in zip(side, side[1:]):          # falls away from 0, up to rounding
                assert p[b] <= p[a] + 2e-8, (i, a, b)
    var = float(sum(v * v * p for v, p in pt.fractions(pt.imax).items()))
    assert abs(var - V) <= 1e-6


def test_agrees_with_the_ptable_package_example():
    # ptable's vignette, create_cnt_ptable(D = 2, V = 1): for original 2 the probability
    # of publishing 0 is 0.0638 and of no change (p_stay) 0.383, variance 1
    for mono in (False, True):
        f = count_ptable(2, 1.0, mono=mono).fractions(2)
        assert round(float(f[-2]), 4) == 0.0638
        assert round(float(f[0]), 3) == 0.383

