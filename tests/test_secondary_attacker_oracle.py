"""The attacker oracle's component relations read off the CSR arrays, against scipy's
own slicing."""
import numpy as np
import pytest
import scipy.sparse as sp

from tabprotect.secondary.attacker_oracle import component_rows


@pytest.mark.parametrize("seed", range(8))
def test_component_rows_match_scipy_slices(seed):
    rng = np.random.default_rng(seed)
    m, n = int(rng.integers(1, 25)), int(rng.integers(1, 50))
    A = sp.random(m, n, density=float(rng.uniform(0.02, 0.3)), random_state=seed,
                  format="csr")
    if A.nnz:
        A.data[rng.random(A.nnz) < 0.2] = 0.0      # explicit zeros are entries too
    comp = np.sort(rng.choice(n, size=int(rng.integers(1, n + 1)), replace=False))
    rows, sub = component_rows(A, comp)
    ref = A[:, comp].tocsr()
    ref_rows = np.flatnonzero(np.diff(ref.indptr) > 0)
    assert rows.tolist() == ref_rows.tolist()
    assert sub.shape == (len(ref_rows), len(comp))
    np.testing.assert_array_equal(sub.toarray(), ref[ref_rows].toarray())
    # the same stored entries, explicit zeros included
    assert np.diff(sub.indptr).tolist() == np.diff(ref[ref_rows].indptr).tolist()
