"""The incremental elimination: a published basis and the watched vectors reduced
against it, over the kernel's flat arrays (see :mod:`.kernel`).
"""
from __future__ import annotations

from types import ModuleType

import numpy as np

from tabprotect.secondary.gauss import kernel as compiled_kernel
from tabprotect.secondary.gauss.compile import NUMBA, numba_loaded, plain_kernel
from tabprotect.secondary.gauss.state import (M_DISCLOSED, M_FREE, M_NEED, M_NODE_TOP,
                                              M_PAIRS, M_STATUS, M_TOP, P, Q,
                                              ROLE_ATTACKER, ROLE_CHECKED,
                                              STATUS_NEED_POOL, State)


class _PlainTime:
    """Seconds this process has spent in plain-Python eliminations (read by ``"auto"``)."""

    seconds: float = 0.0


_PLAIN = _PlainTime()


def choose_kernel(name: str, n_cells: int, python_below_cells: int,
                  python_seconds: float = float("inf")) -> str:
    """``"compiled"`` or ``"python"`` for the kernel setting ``name``: ``"auto"`` is
    the plain-Python kernel on tables of fewer than ``python_below_cells`` cells while
    numba is not loaded in this process (importing it and loading the cached kernels
    costs more than the plain elimination there) and the process's plain eliminations
    have taken less than ``python_seconds`` in all (a long-lived process then loads
    numba once instead of paying the plain kernel on every call), the compiled one
    otherwise."""
    if name not in ("auto", "compiled", "python"):
        raise ValueError(f"gauss kernel must be 'auto', 'compiled' or 'python', "
                         f"not {name!r}")
    if name != "auto":
        return name
    small = (n_cells < python_below_cells and not numba_loaded()
             and _PLAIN.seconds < python_seconds)
    return "python" if small or not NUMBA else "compiled"


def add_plain_seconds(seconds: float) -> None:
    """Count ``seconds`` of a plain-Python elimination against ``python_seconds``."""
    _PLAIN.seconds += seconds


def kernel_module(name: str = "compiled") -> ModuleType:
    """The kernel functions: ``"compiled"`` (plain Python where numba cannot be
    imported) or ``"python"`` (the same source, uncompiled)."""
    if name not in ("compiled", "python"):
        raise ValueError(f"gauss kernel must be 'compiled' or 'python', not {name!r}")
    return compiled_kernel if name == "compiled" or not NUMBA else plain_kernel()


class Elimination:
    """Incremental elimination modulo P: a published basis in reduced echelon form (no
    basis vector holds another's pivot; each scaled to 1 at its pivot) and the watched
    vectors reduced against it.

    Watched vectors are checked primaries (kept out of the published span) and
    attackers (cells whose single contributor knows them; a checked primary is also
    kept out of the span of the published cells and any one attacker): ``roles``
    (ROLE_* bits per watched vector, default all checked).

    Reduced vectors are canonical (the unique representative of a vector modulo the
    published span that holds no pivot key), which is what makes the disclosure test a
    proportionality test.  The arrays grow on demand (the kernel stops and says so).

    Examples
    --------
    >>> e = Elimination(3, [{0: 1, 1: 1}])   # one primary: e0 + e1
    >>> e.offer({0: 1, 2: 1}), e.offer({2: 1})
    (True, True)
    >>> e.reduced_primary(0)                   # modulo the span of e0 + e2 and e2
    {1: 1}
    >>> e.offer({1: 1})                        # would disclose e0 + e1
    False
    """

    def __init__(self, n_keys: int, primaries: "list[dict[int, int]] | tuple",
                 room: int | None = None, roles: np.ndarray | None = None,
                 kernel: ModuleType = compiled_kernel) -> None:
        if isinstance(primaries, tuple):
            ptr, keys, vals = primaries
        else:
            ptr, keys, vals = csr_from_dicts(primaries)
        self.kernel = kernel
        self.n_keys = int(n_keys)
        self.n_primaries = n_primaries = len(ptr) - 1
        n_vectors = n_primaries + self.n_keys  # at most one basis vector per key
        nnz = int(ptr[-1])
        # initial room of the pool and of the key lists (``room``: tests of the growth)
        pool = max(1024, 4 * nnz) if room is None else nnz + room
        nodes = max(1024, 2 * nnz) if room is None else nnz + room
        i64, i32 = np.int64, np.int32
        n_keys = self.n_keys
        if roles is None:
            roles = np.full(n_primaries, ROLE_CHECKED, np.int8)
        self.state = State(
            vstart=np.zeros(n_vectors, i64), vlen=np.zeros(n_vectors, i64),
            vcap=np.zeros(n_vectors, i64),
            pkey=np.zeros(pool, i32), pval=np.zeros(pool, i32), pnode=np.zeros(pool, i32),
            pivot_of=np.full(n_keys, -1, i64),
            cnt_p=np.zeros(n_keys, i64), cnt_b=np.zeros(n_keys, i64),
            head_p=np.full(n_keys, -1, i32), head_b=np.full(n_keys, -1, i32),
            nnext=np.zeros(nodes, i32), nowner=np.zeros(nodes, i32),
            # fixed seed: the run is deterministic (the salts only pick candidates,
            # every candidate is checked exactly)
            salt=np.random.default_rng(0).integers(1, Q, n_keys, dtype=i64),
            fp=np.zeros(n_vectors, i64),
            table=np.full(1 << max(4, (2 * n_primaries).bit_length()), -1, i64),
            acc=np.zeros(n_keys, i64), inacc=np.zeros(n_keys, np.bool_),
            touched=np.zeros(n_keys, i64),
            rk=np.zeros(n_keys, i32), rv=np.zeros(n_keys, i32),
            tk=np.zeros(n_keys, i32), tv=np.zeros(n_keys, i32), tn=np.zeros(n_keys, i32),
            ids=np.zeros(n_vectors, i64),
            role=np.concatenate([np.asarray(roles, np.int8),
                                 np.zeros(n_vectors - n_primaries, np.int8)]),
            mark=np.zeros(n_vectors, i64), hstart=np.zeros(n_vectors, i64),
            hlen=np.zeros(n_vectors, i64), hfp=np.zeros(n_vectors, i64),
            meta=np.zeros(10, i64))
        self.state.meta[M_FREE] = -1
        self.state.meta[M_PAIRS] = bool((np.asarray(roles) & ROLE_ATTACKER).any())
        kernel.load_primaries(self.state, np.asarray(ptr, i64), np.asarray(keys, i32),
                        np.asarray(vals, i32))

    @property
    def disclosed(self) -> int:
        """Primaries in the published span (only forced offers put them there)."""
        return int(self.state.meta[M_DISCLOSED])

    def _grow(self) -> None:
        st = self.state
        meta = st.meta
        if meta[M_STATUS] == STATUS_NEED_POOL:
            top = int(meta[M_TOP])
            size = max(2 * len(st.pkey), 2 * (top + int(meta[M_NEED])))
            grown = {}
            for name in ("pkey", "pval", "pnode"):
                grown[name] = np.zeros(size, np.int32)
                grown[name][:top] = getattr(st, name)[:top]
            self.state = st._replace(**grown)
        else:
            top = int(meta[M_NODE_TOP])
            size = max(2 * len(st.nnext), 2 * (top + int(meta[M_NEED])))
            grown = {}
            for name in ("nnext", "nowner"):
                grown[name] = np.zeros(size, np.int32)
                grown[name][:top] = getattr(st, name)[:top]
            self.state = st._replace(**grown)
        meta[M_STATUS] = 0

    def offer_range(self, ptr: np.ndarray, keys: np.ndarray, vals: np.ndarray,
                    force: np.ndarray, lo: int, hi: int, published: np.ndarray) -> None:
        """Offer vectors ``lo..hi-1`` of a CSR (keys sorted or not, coefficients in
        ``[0, P)``); ``published[q]`` gets 1 (published) or 0 (a secondary)."""
        while lo < hi:
            lo = self.kernel.offer_range(self.state, ptr, keys, vals, force, lo, hi,
                                         published)
            if lo < hi:
                self._grow()

    def offer(self, vector: dict[int, int], force: bool = False) -> bool:
        """Publish ``vector`` unless it would put a primary in the span (``force``:
        publish anyway).  Returns True when published (also when already in the span)."""
        ptr, keys, vals = csr_from_dicts([vector])
        published = np.zeros(1, np.int8)
        self.offer_range(ptr, keys, vals, np.array([force]), 0, 1, published)
        return bool(published[0])

    def reduced_primary(self, u: int) -> dict[int, int]:
        """Watched vector ``u``'s reduced vector (coefficients mod P)."""
        st = self.state
        s, n = int(st.vstart[u]), int(st.vlen[u])
        return {int(k): int(v) for k, v in zip(st.pkey[s:s + n], st.pval[s:s + n])}


def csr_from_dicts(vectors: list[dict[int, int]]
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sparse integer vectors as a CSR with sorted keys and coefficients mod P."""
    ptr = np.zeros(len(vectors) + 1, np.int64)
    keys: list[int] = []
    vals: list[int] = []
    for q, v in enumerate(vectors):
        for k in sorted(v):
            x = int(v[k]) % P
            if x:
                keys.append(int(k))
                vals.append(x)
        ptr[q + 1] = len(keys)
    return ptr, np.asarray(keys, np.int32), np.asarray(vals, np.int32)
