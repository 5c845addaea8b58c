"""Network sub-tables' cut search, cut listing and maximum flows, compiled (numba).

:class:`~.network_search._Search` over cut rows alone (no lazy conditions) spends its
time in a few dozen small numpy operations per node.  This kernel is the same search as
plain loops compiled by numba: the same row choice, fractional cover bounds, branch
order, dominance tests and node counts, so it finds the same pattern; only the cost per
node drops (no per-node allocation, the covers built greedily up to the row's need
instead of sorting every candidate of every short row).  :func:`list_rows` lists the
cut rows of ``network_cuts.cut_rows_both`` and :func:`flow_compiled` computes
``Network.flow``, each giving the numpy code's floats.

The depth-first search runs on an explicit stack kept in arrays (:class:`KernelState`),
so a call stops after a slice of nodes and a later call resumes it: the caller checks
its deadline between slices (a compiled function does not read the clock).
"""
from __future__ import annotations

import gc
import hashlib
import importlib.util
import math
import os
import sys
import time

import numpy as np

#: nodes per call of the kernel (the caller checks its deadline between calls)
SLICE_NODES = 4096

# the stack's phases: a node to enter, a node's branch loop to continue, a child done
_ENTER, _LOOP, _RETURN = 0, 1, 2


def compiled_available() -> bool:
    """numba is installed (and not switched off by ``TABPROTECT_NO_NUMBA=1``)."""
    return os.environ.get("TABPROTECT_NO_NUMBA") != "1" \
        and importlib.util.find_spec("numba") is not None


#: the kernels (name, inlined into their callers) that :func:`load_kernel` hands to numba
_KERNELS: list[tuple[str, bool]] = []
#: the kernels numba caches (not the inlined helpers), for :func:`kernel_cached`
_CACHED: list = []


def jit(fn):
    """A kernel: plain Python until :func:`load_kernel` compiles it (numba is imported
    only then, so a run that never loads the kernels does not pay for it)."""
    _KERNELS.append((fn.__name__, False))
    _CACHED.append(fn)
    return fn


def jit_inline(fn):
    """A small kernel helper, inlined into its compiled callers."""
    _KERNELS.append((fn.__name__, True))
    return fn


class _Load:
    """Whether this process has loaded the kernels, and the wall and CPU seconds that
    took (numba's import and each kernel's compile or cache read), for a run's profile."""

    def __init__(self):
        self.done = False
        self.wall = 0.0
        self.cpu = 0.0


_LOAD = _Load()


def kernel_cached(folder: str | None = None) -> bool:
    """Every kernel has a cache entry numba will read (its index file, named as numba
    names it, no older than this module's source) in ``folder``, by default the folder
    numba keeps them in (:func:`kernel_cache_folder`): loading then costs numba's
    import and the reads (about 0.4 s CPU), not a compile (seconds).  Checked on the
    files alone, without importing numba."""
    source = os.path.abspath(__file__)
    folder = folder or kernel_cache_folder()
    try:
        stamp = os.stat(source).st_mtime
    except OSError:
        return False
    if folder is None:
        return False
    module = __name__.rsplit(".", 1)[-1]
    version = f"py{sys.version_info[0]}{sys.version_info[1]}"
    return all(_newer(os.path.join(
        folder, f"{module}.{fn.__qualname__}-{fn.__code__.co_firstlineno}.{version}.nbi"),
        stamp) for fn in _CACHED)


def kernel_cache_folder() -> str | None:
    """Where numba caches this module's kernels, by its locators' order:
    ``NUMBA_CACHE_DIR`` (a sub-folder named after this package's folder), else
    ``__pycache__`` beside the module when writable, else the user's cache folder
    (POSIX; None elsewhere: no early load)."""
    folder = os.path.dirname(os.path.abspath(__file__))
    sub = f"{os.path.basename(folder)}_{hashlib.sha1(folder.encode()).hexdigest()}"
    if os.environ.get("NUMBA_CACHE_DIR"):
        return os.path.join(os.environ["NUMBA_CACHE_DIR"], sub)
    in_tree = os.path.join(folder, "__pycache__")
    if os.access(in_tree if os.path.isdir(in_tree) else folder, os.W_OK):
        return in_tree
    if sys.platform == "darwin":
        base = os.path.expanduser("~/Library/Caches")
    elif os.name == "posix":
        base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    else:
        return None
    return os.path.join(base, "numba", sub)


def _newer(path: str, stamp: float) -> bool:
    try:
        return os.stat(path).st_mtime >= stamp
    except OSError:
        return False


def kernel_loaded() -> bool:
    """The kernel has run in this process (numba imported, the kernel compiled or
    loaded from its cache)."""
    return _LOAD.done


def load_kernel() -> float:
    """Load the kernels (numba's import, each kernel compiled or read from its cache) by
    one call of each on a tiny problem; the seconds it took (0 once loaded)."""
    if _LOAD.done:
        return 0.0
    start, cpu = time.perf_counter(), time.process_time()
    # a load from the cache (numba's import and target set-up) makes some 10^5 objects
    # that live as long as the process: the collector, which would walk them several
    # times and find nothing, pauses (a compile, whose garbage it collects, does not)
    collecting = gc.isenabled() and kernel_cached()
    if collecting:
        gc.disable()
    try:
        _load(_njit())
    finally:
        if collecting:
            _settle_objects()
            gc.enable()
    _LOAD.done = True
    _LOAD.wall, _LOAD.cpu = time.perf_counter() - start, time.process_time() - cpu
    return _LOAD.wall


def _settle_objects() -> None:
    """Move the objects the load made straight to the collector's oldest generation
    (freezing and unfreezing is a move, no walk): promoted one young collection at a
    time they would be walked twice more and then count towards a full collection,
    which a later call would pay (0.06-0.1 s CPU).  A process that keeps a frozen
    generation (the command line freezes its imports) keeps them frozen with the rest."""
    frozen = gc.get_freeze_count() > 0
    gc.freeze()
    if not frozen:
        gc.unfreeze()


def _njit():
    """numba's ``njit``, or None when numba's import fails (a broken installation: the
    kernels stay plain Python)."""
    try:
        from numba import njit
    except ImportError:
        return None
    return njit


def _load(njit) -> None:
    """Each kernel compiled (or read from numba's cache) by one call on a tiny problem."""
    names = globals()
    for name, inline in _KERNELS if njit is not None else ():
        # kernels call each other through these names
        options = {"inline": "always"} if inline else {}
        names[name] = njit(cache=True, nogil=True, **options)(names[name])
    one = np.ones((1, 1))
    search_slice(one, one, np.full(1, 1e-9), np.ones(1), 10, True, 0, False, 10,
                 KernelState(1, 1, np.ones(1)))
    ends, cells = np.array([0], np.int64), np.array([1], np.int64)
    _list_rows(ends, cells, np.ones(1), np.ones(1), ends, cells, np.ones(1), np.ones(1),
               ends, 1, 1.0, 1.0, 1)
    # read-only ends, as a network's (memoised) tail and head: numba compiles one
    # specialisation per array flag, so a writable warm-up would leave the real
    # calls' specialisation to compile (most of a second's CPU) at the first flow
    tail, head = ends.copy(), cells.copy()
    tail.flags.writeable = head.flags.writeable = False
    flow_compiled(tail, head, np.ones(1), np.ones(1), ends[:0], 2, 0, 1, 1e-12)


def load_seconds() -> tuple[float, float]:
    """Wall and CPU seconds this process spent in :func:`load_kernel` (0 when the
    kernels have not been loaded)."""
    return _LOAD.wall, _LOAD.cpu


class KernelState:
    """The search's stack and results between calls of :func:`search_slice`.

    Frame ``f`` is the node at depth ``f`` (``f`` candidates chosen): its short rows
    (a row met stays met below, so a node looks only at its parent's short rows) and
    their slack, its cost, its own copy of the left-out candidates, its branch and the
    position in it, and its dominance flags."""

    def __init__(self, n_rows: int, n: int, deficit: np.ndarray):
        depth = n + 1
        self.chosen = np.zeros(n, np.bool_)
        self.excluded = np.zeros((depth, n), np.bool_)
        self.slack = np.zeros((depth, n_rows))
        self.slack[0] = deficit
        #: per frame, its short rows (on entry: the parent's, filtered there)
        self.rows = np.zeros((depth, max(n_rows, 1)), np.int64)
        self.rows[0, :n_rows] = np.arange(n_rows)
        self.n_short = np.zeros(depth, np.int64)
        self.n_short[0] = n_rows
        self.cost = np.zeros(depth)
        self.branch = np.zeros((depth, max(n, 1)), np.int64)
        self.branch_len = np.zeros(depth, np.int64)
        self.branch_pos = np.zeros(depth, np.int64)
        #: per frame: 0 no dominance test, 1 pending (judged when first needed), 2 judged
        self.dom_state = np.zeros(depth, np.int64)
        self.dominated = np.zeros((depth, max(n, 1)), np.bool_)
        self.best = np.zeros(n, np.bool_)
        #: depth, phase, nodes, gave up, a pattern found
        self.ints = np.array([0, _ENTER, 0, 0, 0], np.int64)
        #: the best pattern's cost
        self.floats = np.array([np.inf])
        # scratch: the node's candidates, the short rows' supports
        self.work = np.zeros((2, max(n, n_rows, 1)), np.int64)
        self.ratio = np.zeros(max(n, 1))


def search_slice(K: np.ndarray, KT: np.ndarray, tol: np.ndarray, c: np.ndarray,
                 max_nodes: int, dominance: bool, dominance_after: int, first_only: bool,
                 pause_at: int, st: KernelState) -> bool:
    """Run the search in ``st`` until it ends or has entered ``pause_at`` nodes; True
    when it ended."""
    return _search(K, KT, tol, c, max_nodes, dominance, dominance_after, first_only,
                   pause_at, st.chosen, st.excluded, st.slack, st.rows, st.n_short,
                   st.cost, st.branch,
                   st.branch_len, st.branch_pos, st.dom_state, st.dominated, st.best,
                   st.ints, st.floats, st.work, st.ratio)


@jit
def _search(K, KT, tol, c, max_nodes, dominance, dominance_after, first_only, pause_at,
            chosen, excluded, slack, rows, n_short, cost, branch, branch_len, branch_pos,
            dom_state, dominated, best, ints, floats, work, ratio):
    """The depth-first branch and bound of ``_Search._node`` over an explicit stack."""
    n = K.shape[1]
    f, phase, nodes, gave_up = ints[0], ints[1], ints[2], ints[3]
    best_cost = floats[0]
    ended = True
    while True:
        if phase == _ENTER:
            if nodes >= pause_at:
                ended = False
                break
            nodes += 1
            if nodes > max_nodes:
                gave_up = 1
                break
            m = 0                           # the rows still short here
            for i in range(n_short[f]):
                r = rows[f, i]
                if slack[f, r] > tol[r]:
                    rows[f, m] = r
                    m += 1
            n_short[f] = m
            blen = _row_branch(K, tol, c, slack[f], rows[f, :m], excluded[f], chosen,
                               cost[f], best_cost, branch[f], work, ratio)
            if blen < 0:                    # every row met: a pattern
                if cost[f] < best_cost:
                    best_cost = cost[f]
                    best[:] = chosen
                    ints[4] = 1
                    if first_only:
                        gave_up = 1
                        break
                phase = _RETURN
            elif blen == 0:                 # dropped
                phase = _RETURN
            else:
                branch_len[f] = blen
                branch_pos[f] = 0
                dom_state[f] = 1 if dominance and nodes > dominance_after else 0
                phase = _LOOP
        elif phase == _LOOP:
            k = branch_pos[f]
            cf = cost[f]
            phase = _RETURN
            while k < branch_len[f]:
                e = branch[f, k]
                ce = c[e]
                if k > 0 and dom_state[f] > 0 and ce + cf < best_cost:
                    if dom_state[f] == 1:
                        _judge_dominated(K, c, slack[f], rows[f, :n_short[f]], branch[f],
                                         branch_len[f], dominated[f])
                        dom_state[f] = 2
                    if dominated[f, k]:
                        excluded[f, e] = True
                        k += 1
                        continue
                if cf + ce >= best_cost - 1e-9 * max(1.0, best_cost):
                    excluded[f, e] = True
                    k += 1
                    continue
                chosen[e] = True
                branch_pos[f] = k
                for i in range(n_short[f]):
                    r = rows[f, i]
                    slack[f + 1, r] = slack[f, r] - KT[e, r]
                    rows[f + 1, i] = r
                n_short[f + 1] = n_short[f]
                cost[f + 1] = cf + ce
                for j in range(n):
                    excluded[f + 1, j] = excluded[f, j]
                f += 1
                phase = _ENTER
                break
        else:                               # a child is done: its parent's next child
            f -= 1
            if f < 0:
                break
            k = branch_pos[f]
            e = branch[f, k]
            chosen[e] = False
            excluded[f, e] = True
            branch_pos[f] = k + 1
            phase = _LOOP
    ints[0], ints[1], ints[2], ints[3] = f, phase, nodes, gave_up
    floats[0] = best_cost
    return ended


@jit_inline
def _row_branch(K, tol, c, slack, short, excluded, chosen, cost, best_cost, out, work,
                ratio):
    """``_Search._row_branch`` at one node (``short``: its short rows, in order): the
    branch's candidates written to ``out`` and their number; 0 to drop the node, -1
    when no row is short (a pattern)."""
    n = K.shape[1]
    avail = work[0]
    support = work[1]
    na = 0
    for j in range(n):
        if not chosen[j] and not excluded[j]:
            avail[na] = j
            na += 1
    n_short = len(short)
    least = n + 1
    for i in range(n_short):
        r = short[i]
        need = slack[r]
        count = 0
        for q in range(na):
            k = min(K[r, avail[q]], need)
            ratio[q] = k
            if k > 0:
                count += 1
        if na == 0 or _pairwise(ratio, 0, na) < need - tol[r]:
            return 0                        # the row cannot be met (numpy's sum)
        support[i] = count
        least = min(least, count)
    if n_short == 0:
        return -1
    pick = -1
    if best_cost < math.inf:
        limit = best_cost - 1e-9 * max(1.0, best_cost)
        top = -math.inf
        for i in range(n_short):
            b = _cover(K, short[i], slack[short[i]], avail, na, c, ratio)
            if cost + b >= limit:
                return 0
            if support[i] == least and b > top:
                top, pick = b, short[i]
    else:
        ties = 0
        for i in range(n_short):
            if support[i] == least:
                ties += 1
                if pick < 0:
                    pick = short[i]
        if ties > 1:
            top = -math.inf
            pick = -1
            for i in range(n_short):
                if support[i] == least:
                    b = _cover(K, short[i], slack[short[i]], avail, na, c, ratio)
                    if b > top:
                        top, pick = b, short[i]
    # the picked row's candidates by cost per unit covered (ties: by column)
    need = slack[pick]
    m = 0
    for q in range(na):
        j = avail[q]
        k = min(K[pick, j], need)
        if k > 0:
            x = c[j] / k
            i = m
            while i > 0 and ratio[i - 1] > x:
                ratio[i] = ratio[i - 1]
                out[i] = out[i - 1]
                i -= 1
            ratio[i] = x
            out[i] = j
            m += 1
    return m


@jit_inline
def _cover(K, r, need, avail, na, c, taken):
    """The row's cheapest fractional cover (``_cover_bounds``): its candidates by cost
    per unit covered (ties: by column), each taking what the row still lacks, summed in
    that order until the row is met.  ``taken``: scratch of at least ``na`` floats."""
    for q in range(na):
        taken[q] = 0.0
    got = 0.0
    total = 0.0
    while got < need:
        low = math.inf
        pick = -1
        for q in range(na):
            if taken[q] != 0.0:
                continue
            k = min(K[r, avail[q]], need)
            if k > 0:
                x = c[avail[q]] / k
                if x < low:
                    low, pick = x, q
        if pick < 0:
            break
        taken[pick] = 1.0
        k = min(K[r, avail[pick]], need)
        total += min(need - got, k) * low
        got += k
    return total


@jit_inline
def _judge_dominated(K, c, slack, short, branch, blen, out):
    """``_dominated_by_earlier`` of the node's branch over its ``short`` rows."""
    for b in range(blen):
        out[b] = False
        eb = branch[b]
        for a in range(b):
            ea = branch[a]
            if not c[ea] < c[eb]:
                continue
            covers = True
            for r in short:
                need = slack[r]
                if min(K[r, ea], need) < min(K[r, eb], need):
                    covers = False
                    break
            if covers:
                out[b] = True
                break


def list_rows(prob, s: int, edges: np.ndarray, free: np.ndarray, src: int,
              needs: tuple[float, float]) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """``network_cuts.cut_rows_both``'s rows by the compiled kernel: every cut whose
    source side holds ``src`` and any subset of the ``free`` nodes (mask bit ``b`` is
    ``free[b]``), its crossing ``edges`` forwards moving ``s`` up and backwards moving it
    down.  Per need (up, down; 0: none wanted), the rows still short (capped at their
    deficit, cuts in mask order) and their deficits, the same floats as the numpy
    listing (the suppressed cells summed pairwise, as ``np.sum``)."""
    net = prob.net
    # each node's bit in a cut's mask; the source's bit always set, other nodes' never
    bit = np.full(net.n_nodes, _NEVER, np.int64)
    bit[free] = np.arange(len(free))
    bit[src] = _ALWAYS
    fixed = prob.fixed[edges]
    held, cand = edges[fixed], edges[~fixed]
    listed = _list_rows(bit[net.tail[held]], bit[net.head[held]], prob.up[held],
                        prob.down[held], bit[net.tail[cand]], bit[net.head[cand]],
                        prob.up[cand], prob.down[cand], prob.column[cand], len(free),
                        float(needs[0]), float(needs[1]), len(prob.cand_idx))
    return (listed[0], listed[1]), (listed[2], listed[3])


#: a node's bit in a cut's mask: the source's (always set), any other node's off the
#: free ones (never set)
_ALWAYS, _NEVER = 62, 61


@jit
def _list_rows(h_tail, h_head, h_up, h_down, c_tail, c_head, c_up, c_down, column, n_free,
               need_up, need_down, n_cand):
    """Pass 1: each cut's deficits (the suppressed cells ``h_*`` summed pairwise);
    pass 2: the candidates' (``c_*``) coefficients on the short cuts' rows."""
    n_cuts = 1 << n_free
    n_held = len(h_tail)
    deficits = np.zeros((2, n_cuts))
    needs = (need_up, need_down)
    counts = np.zeros(2, np.int64)
    held = np.zeros((2, max(n_held, 1)))
    for mask in range(n_cuts):
        m = mask | (1 << _ALWAYS)
        for q in range(n_held):
            a = (m >> h_tail[q]) & 1
            b = (m >> h_head[q]) & 1
            # moving up: forwards carries up, backwards down; moving down the
            # complement's crossings: backwards carries up, forwards down
            held[0, q] = h_up[q] if a > b else (h_down[q] if b > a else 0.0)
            held[1, q] = h_up[q] if b > a else (h_down[q] if a > b else 0.0)
        for kind in range(2):
            if needs[kind] > 0:
                d = needs[kind] - _pairwise(held[kind], 0, n_held)
                if d > 1e-9 * max(1.0, needs[kind]):
                    deficits[kind, mask] = d
                    counts[kind] += 1
    rows_up = np.zeros((counts[0], n_cand))
    rows_down = np.zeros((counts[1], n_cand))
    def_up = np.zeros(counts[0])
    def_down = np.zeros(counts[1])
    k_up = 0
    k_down = 0
    for mask in range(n_cuts):
        d_up, d_down = deficits[0, mask], deficits[1, mask]
        if d_up == 0.0 and d_down == 0.0:
            continue
        m = mask | (1 << _ALWAYS)
        for q in range(len(c_tail)):
            a = (m >> c_tail[q]) & 1
            b = (m >> c_head[q]) & 1
            if a == b:
                continue
            if d_up > 0.0:
                rows_up[k_up, column[q]] = min(c_up[q] if a > b else c_down[q], d_up)
            if d_down > 0.0:
                rows_down[k_down, column[q]] = min(c_up[q] if b > a else c_down[q], d_down)
        if d_up > 0.0:
            def_up[k_up] = d_up
            k_up += 1
        if d_down > 0.0:
            def_down[k_down] = d_down
            k_down += 1
    return rows_up, def_up, rows_down, def_down


@jit_inline
def _pairwise(a, lo, n):
    """``np.sum`` of ``a[lo:lo + n]`` as numpy adds, so that the kernel's sums are
    numpy's floats: blocks of up to 128 by :func:`_block`, longer runs split in halves
    (multiples of 8) and the halves' sums added (numpy's recursion, on a stack here)."""
    if n <= 128:
        return _block(a, lo, n)
    los = np.empty(64, np.int64)
    lens = np.empty(64, np.int64)
    stage = np.zeros(64, np.int64)      # 0 new, 1 left half pending, 2 right half pending
    left = np.zeros(64)
    top = 0
    los[0], lens[0] = lo, n
    while True:
        if lens[top] > 128:             # split: the left half first
            half = lens[top] // 2
            half -= half % 8
            stage[top] = 1
            los[top + 1], lens[top + 1], stage[top + 1] = los[top], half, 0
            top += 1
            continue
        v = _block(a, los[top], lens[top])
        top -= 1
        while top >= 0 and stage[top] == 2:     # both halves done: add them
            v = left[top] + v
            top -= 1
        if top < 0:
            return v
        left[top] = v                   # the left half done: the right half next
        stage[top] = 2
        half = lens[top] // 2
        half -= half % 8
        los[top + 1], lens[top + 1], stage[top + 1] = los[top] + half, lens[top] - half, 0
        top += 1


@jit_inline
def _block(a, lo, n):
    """numpy's sum of at most 128 numbers: one by one below 8, else eight accumulators
    over the multiples of 8, added pairwise, then the rest one by one."""
    if n < 8:
        res = -0.0
        for i in range(n):
            res += a[lo + i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    while i < n - (n % 8):
        r0 += a[lo + i]
        r1 += a[lo + i + 1]
        r2 += a[lo + i + 2]
        r3 += a[lo + i + 3]
        r4 += a[lo + i + 4]
        r5 += a[lo + i + 5]
        r6 += a[lo + i + 6]
        r7 += a[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@jit
def flow_compiled(tail, head, forward, backward, skip, n_nodes, source, sink, eps_rel):
    """``Network.flow`` compiled: the capacities added up cell by cell as
    ``Network.capacities`` adds them (``np.add.at``: in cell order, forwards then
    backwards; the ``skip`` cells carry none), then :func:`max_flow_compiled`."""
    cap = np.zeros((n_nodes, n_nodes))
    n = len(tail)
    carried = np.ones(n, np.bool_)
    for e in skip:
        carried[e] = False
    for e in range(n):
        cap[tail[e], head[e]] += forward[e] if carried[e] else 0.0
    for e in range(n):
        cap[head[e], tail[e]] += backward[e] if carried[e] else 0.0
    return max_flow_compiled(cap, source, sink, eps_rel)


@jit
def max_flow_compiled(cap, source, sink, eps_rel):
    """``network.max_flow`` compiled: Edmonds-Karp on the dense capacity matrix ``cap``
    (modified into the residual capacities), the same breadth-first order and pushes,
    so the same flow value and minimum cut (source side, bool per node)."""
    n = cap.shape[0]
    top = 0.0
    for u in range(n):
        for v in range(n):
            if cap[u, v] < math.inf and cap[u, v] > top:
                top = cap[u, v]
    eps = eps_rel * max(1.0, top)
    near = np.zeros((n, n), np.bool_)
    for u in range(n):
        for v in range(n):
            near[u, v] = cap[u, v] > 0 or cap[v, u] > 0
    parent = np.empty(n, np.int64)
    queue = np.empty(n, np.int64)
    total = 0.0
    while True:
        parent[:] = -1
        parent[source] = source
        queue[0] = source
        head, tail = 0, 1
        while head < tail and parent[sink] < 0:
            u = queue[head]
            head += 1
            for v in range(n):
                if near[u, v] and parent[v] < 0 and cap[u, v] > eps:
                    parent[v] = u
                    queue[tail] = v
                    tail += 1
        if parent[sink] < 0:
            break
        push = math.inf
        v = sink
        while v != source:
            u = parent[v]
            push = min(push, cap[u, v])
            v = u
        if push == math.inf:        # a path of unbounded cells: no finite cut
            total = math.inf
            break
        v = sink
        while v != source:
            u = parent[v]
            cap[u, v] -= push
            cap[v, u] += push
            v = u
        total += push
    return total, parent >= 0
