"""The elimination kernel: plain functions over flat numpy arrays, compiled by numba.

Arithmetic is modulo the prime ``P = 2^31 - 1``: every coefficient fits an int32 and
every product of two an int64.  Layout: see :class:`.state.State`.

The same source runs as plain Python when numba cannot be imported, and as a separate
uncompiled copy on request (:func:`.elimination.kernel_module`): the loader
of that copy sets ``COMPILED = False`` before running this module.
"""
from __future__ import annotations

import numpy as np

from tabprotect.secondary.gauss.compile import decorators
from tabprotect.secondary.gauss.state import (M_DISCLOSED, M_FREE, M_NEED, M_NFREE,
                                              M_NODE_TOP, M_NVEC, M_PAIRS, M_STAMP,
                                              M_STATUS, M_TOP, P, Q, ROLE_ATTACKER,
                                              ROLE_CHECKED, STATUS_NEED_NODES,
                                              STATUS_NEED_POOL, STATUS_PUBLISHED,
                                              STATUS_SUPPRESSED)

_jit, _jit_inline = decorators(globals().get("COMPILED", True))


@_jit
def modinv(a):
    """a^(P-2) mod P: the inverse of a != 0 modulo the prime P."""
    result = np.int64(1)
    base = np.int64(a) % P
    e = P - 2
    while e > 0:
        if e & 1:
            result = result * base % P
        base = base * base % P
        e >>= 1
    return result


@_jit_inline
def _find(pkey, lo, hi, key):
    """Position of ``key`` in the sorted ``pkey[lo:hi]``, or -1 (binary search)."""
    while lo < hi:
        mid = (lo + hi) >> 1
        k = pkey[mid]
        if k < key:
            lo = mid + 1
        elif k > key:
            hi = mid
        else:
            return mid
    return -1


@_jit_inline
def _lower_bound(pkey, lo, hi, key):
    """First position in the sorted ``pkey[lo:hi]`` with a key >= ``key``."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if pkey[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    return lo


# (the hot helpers take the arrays they use, not the whole State: numba passes and
# reference-counts every array of an argument tuple per call, which tripled the run time)

@_jit_inline
def _link(nnext, nowner, meta, head, key, owner):
    """A node for ``owner`` at the front of ``key``'s list (from the free list or the
    top; the caller made sure there is one).  Returns the node."""
    node = meta[M_FREE]
    if node >= 0:
        meta[M_FREE] = nnext[node]
        meta[M_NFREE] -= 1
    else:
        node = meta[M_NODE_TOP]
        meta[M_NODE_TOP] += 1
    nowner[node] = owner
    nnext[node] = head[key]
    head[key] = node
    return node


@_jit_inline
def _write_fill_in(pkey, pval, pnode, at, key, value, nnext, nowner, meta, head, owner,
                   cnt, salt, fingerprint):
    """Write entry (key, value) of vector ``owner`` at pool position ``at``, link it into
    the key's holder list; returns the owner's support fingerprint with the key added."""
    pkey[at] = key
    pval[at] = value
    pnode[at] = _link(nnext, nowner, meta, head, key, owner)
    cnt[key] += 1
    return (fingerprint + salt[key]) % Q


@_jit_inline
def _holders(nnext, nowner, meta, head, key, out, at):
    """Collect the owners of ``key``'s live nodes into ``out[at:]`` (returns how many),
    freeing the dead nodes on the way."""
    n = 0
    prev = -1
    node = head[key]
    while node >= 0:
        nxt = nnext[node]
        owner = nowner[node]
        if owner >= 0:
            out[at + n] = owner
            n += 1
            prev = node
        else:  # dead: unlink and free
            if prev >= 0:
                nnext[prev] = nxt
            else:
                head[key] = nxt
            nnext[node] = meta[M_FREE]
            meta[M_FREE] = node
            meta[M_NFREE] += 1
        node = nxt
    return n


@_jit_inline
def _release(nnext, meta, head, key):
    """Free every node of ``key``'s list."""
    node = head[key]
    while node >= 0:
        nxt = nnext[node]
        nnext[node] = meta[M_FREE]
        meta[M_FREE] = node
        meta[M_NFREE] += 1
        node = nxt
    head[key] = -1


@_jit_inline
def table_insert(table, fp, u):
    """File watched vector ``u`` under its fingerprint (linear probing)."""
    mask = len(table) - 1
    slot = fp[u] & mask
    while table[slot] >= 0:
        slot = (slot + 1) & mask
    table[slot] = u


@_jit_inline
def table_remove(table, fp, u):
    """Remove watched vector ``u``, filed under its current fingerprint (backward-shift
    deletion: the probe sequences stay unbroken without tombstones)."""
    mask = len(table) - 1
    i = fp[u] & mask
    while table[i] != u:
        i = (i + 1) & mask
    j = i
    while True:
        j = (j + 1) & mask
        v = table[j]
        if v < 0:
            break
        home = fp[v] & mask
        # the entry at j stays unless its home slot lies cyclically outside (i, j]
        if i <= j:
            stays = i < home and home <= j
        else:
            stays = i < home or home <= j
        if not stays:
            table[i] = v
            i = j
    table[i] = -1


@_jit
def _reduce(st, keys, vals):
    """``(keys, vals)`` modulo the published span, without pivot keys, into
    ``st.rk/st.rv`` sorted by key; returns its length.  One pass suffices: a basis vector
    holds no pivot but its own."""
    acc, inacc, touched = st.acc, st.inacc, st.touched
    pivot_of, vstart, vlen, pkey, pval = st.pivot_of, st.vstart, st.vlen, st.pkey, st.pval
    rk, rv = st.rk, st.rv
    t = 0
    for i in range(len(keys)):
        k = keys[i]
        if not inacc[k]:
            inacc[k] = True
            touched[t] = k
            t += 1
        acc[k] = (acc[k] + np.int64(vals[i])) % P
    for i in range(t):
        k = touched[i]
        b = pivot_of[k]
        if b < 0 or acc[k] == 0:
            continue
        c = acc[k]
        s = vstart[b]
        for j in range(s, s + vlen[b]):
            kk = pkey[j]
            if not inacc[kk]:
                inacc[kk] = True
                touched[t] = kk
                t += 1
            acc[kk] = (acc[kk] - c * np.int64(pval[j])) % P
    n = 0
    for i in range(t):
        k = touched[i]
        if acc[k] != 0:
            rk[n] = k
            rv[n] = acc[k]
            n += 1
        acc[k] = 0
        inacc[k] = False
    if n > 1:
        order = np.argsort(rk[:n])
        sk = rk[:n][order]
        sv = rv[:n][order]
        rk[:n] = sk
        rv[:n] = sv
    return n


@_jit_inline
def _proportional(pkey, pval, s, m, rk, rv, n):
    """The vector ``pkey/pval[s:s+m]`` is a multiple of ``rk/rv[:n]``."""
    if m != n:
        return False
    u0 = np.int64(pval[s])
    r0 = np.int64(rv[0])
    for i in range(n):
        if pkey[s + i] != rk[i]:
            return False
        if np.int64(pval[s + i]) * r0 % P != np.int64(rv[i]) * u0 % P:
            return False
    return True


@_jit_inline
def _same_direction(pkey, pval, s, m, t, n):
    """The pool runs ``[s, s+m)`` and ``[t, t+n)`` are multiples of each other."""
    if m != n or m == 0:
        return False
    a0 = np.int64(pval[s])
    b0 = np.int64(pval[t])
    for i in range(n):
        if pkey[s + i] != pkey[t + i]:
            return False
        if np.int64(pval[s + i]) * b0 % P != np.int64(pval[t + i]) * a0 % P:
            return False
    return True


@_jit
def _compact(st, n_vectors):
    """Slide every vector's run down to the start of the pool (runs in pool order, each
    moving left, so copying forward is safe); capacities shrink to the lengths."""
    starts = st.vstart[:n_vectors].copy()
    for v in range(n_vectors):
        if st.vcap[v] == 0:
            starts[v] = -1
    order = np.argsort(starts)
    top = 0
    for v in order:
        if st.vcap[v] == 0:
            continue
        s = st.vstart[v]
        n = st.vlen[v]
        for j in range(n):
            st.pkey[top + j] = st.pkey[s + j]
            st.pval[top + j] = st.pval[s + j]
            st.pnode[top + j] = st.pnode[s + j]
        st.vstart[v] = top
        st.vcap[v] = n
        top += n
    st.meta[M_TOP] = top


@_jit_inline
def _classify(pkey, pval, pnode, s, end, c, rk, rv, n, kind, val, pos, nowner, cnt, salt,
              f):
    """Where each key of ``r = rk/rv[:n]`` meets the holder run ``pkey[s:end]`` (whose
    coefficient at the pivot is ``c``): ``kind`` 0 updated where it stands, 1 a fill-in
    (its value in ``val``), 2 cancelled (its node marked dead); ``pos`` the position.
    Returns (the change in length, the fingerprint ``f`` without the cancelled keys)."""
    p = s
    grow = 0
    for j in range(n):
        k = rk[j]
        p = _lower_bound(pkey, p, end, k)
        pos[j] = p
        if p < end and pkey[p] == k:
            z = (np.int64(pval[p]) - c * np.int64(rv[j])) % P
            if z != 0:
                kind[j] = 0
                pval[p] = z
            else:  # cancelled (always so for the pivot)
                kind[j] = 2
                grow -= 1
                nowner[pnode[p]] = -1  # its node is dead
                cnt[k] -= 1
                f = (f + Q - salt[k]) % Q
        else:
            kind[j] = 1
            val[j] = (P - c * np.int64(rv[j]) % P) % P
            grow += 1
    return grow, f


@_jit_inline
def _copy_run(pkey, pval, pnode, lo, hi, to):
    """Entries ``lo..hi-1`` to ``to..`` (front to back: for moves to the left)."""
    for t in range(lo, hi):
        pkey[to] = pkey[t]
        pval[to] = pval[t]
        pnode[to] = pnode[t]
        to += 1
    return to


@_jit_inline
def _rewrite_at_top(pkey, pval, pnode, s, end, d, rk, n, kind, val, pos, nnext, nowner,
                    meta, head, h, cnt, salt, f):
    """Holder ``h``'s run ``[s, end)`` copied to ``d`` (the pool's top) without the
    cancelled entries and with the fill-ins; returns the fingerprint."""
    w = d
    i = s
    for j in range(n):
        if kind[j] == 0:
            continue
        w = _copy_run(pkey, pval, pnode, i, pos[j], w)
        if kind[j] == 2:
            i = pos[j] + 1
        else:
            f = _write_fill_in(pkey, pval, pnode, w, rk[j], val[j], nnext, nowner, meta,
                               head, h, cnt, salt, f)
            w += 1
            i = pos[j]
    _copy_run(pkey, pval, pnode, i, end, w)
    return f


@_jit_inline
def _rewrite_in_place(pkey, pval, pnode, s, end, rk, n, kind, val, pos, nnext, nowner,
                      meta, head, h, cnt, salt, f):
    """Holder ``h``'s run rewritten where it stands (it has the room): runs moving left,
    front to back; runs moving right, back to front (runs of opposite shifts never
    overlap: the cancellations or fill-ins between them make the room); then the
    fill-ins.  Returns the fingerprint."""
    shift = 0
    i = s
    for j in range(n):
        if kind[j] == 0:
            continue
        if shift < 0:
            _copy_run(pkey, pval, pnode, i, pos[j], i + shift)
        if kind[j] == 2:
            shift -= 1
            i = pos[j] + 1
        else:
            shift += 1
            i = pos[j]
    if shift < 0:
        _copy_run(pkey, pval, pnode, i, end, i + shift)
    run_end = end
    for j in range(n - 1, -1, -1):
        if kind[j] == 0:
            continue
        start = pos[j] + 1 if kind[j] == 2 else pos[j]
        if shift > 0:
            for t in range(run_end - 1, start - 1, -1):
                pkey[t + shift] = pkey[t]
                pval[t + shift] = pval[t]
                pnode[t + shift] = pnode[t]
        shift += 1 if kind[j] == 2 else -1
        run_end = pos[j]
    for j in range(n):  # (shift is 0 again: the prefix before r's keys)
        if kind[j] == 2:
            shift -= 1
        elif kind[j] == 1:
            f = _write_fill_in(pkey, pval, pnode, pos[j] + shift, rk[j], val[j], nnext,
                               nowner, meta, head, h, cnt, salt, f)
            shift += 1
    return f


@_jit
def _eliminate(st, pivot, n, nb, nh):
    """``vec[h] -= vec[h][pivot] * r`` for the holders ``h = ids[:nb]`` of the pivot
    (basis vectors ``ids[:nb]`` first; ``r = rk/rv`` of length ``n``, ``r[pivot] = 1``),
    in place.  Per holder: find ``r``'s keys in it (``n`` binary searches), update the
    values there, then move only the runs of entries between them whose position
    changes (a fill-in shifts what follows one place right, a cancellation one place
    left), and write the fill-ins; a holder that outgrows its room is copied to the
    pool's top instead (less memory moved than merging each holder into work arrays and
    back).  Keeps the lists, counts and the watched vectors' hash table right; returns
    how many checked primaries became zero."""
    pkey, pval, pnode = st.pkey, st.pval, st.pnode
    kind, val, pos = st.tk, st.tv, st.tn
    rk, rv, salt = st.rk, st.rv, st.salt
    nnext, nowner, meta = st.nnext, st.nowner, st.meta
    table, fp, vstart, vlen, vcap = st.table, st.fp, st.vstart, st.vlen, st.vcap
    emptied = 0
    for q in range(nh):
        h = st.ids[q]
        watched = q >= nb
        cnt = st.cnt_p if watched else st.cnt_b
        head = st.head_p if watched else st.head_b
        if watched:
            table_remove(table, fp, h)
        s = vstart[h]
        end = s + vlen[h]
        c = np.int64(pval[_find(pkey, s, end, pivot)])
        grow, f = _classify(pkey, pval, pnode, s, end, c, rk, rv, n, kind, val, pos,
                            nowner, cnt, salt, fp[h])
        new_len = vlen[h] + grow
        if new_len > vcap[h]:
            cap = new_len + new_len // 2 + 2
            d = meta[M_TOP]
            meta[M_TOP] += cap
            f = _rewrite_at_top(pkey, pval, pnode, s, end, d, rk, n, kind, val, pos,
                                nnext, nowner, meta, head, h, cnt, salt, f)
            vstart[h] = d
            vcap[h] = cap
        else:
            f = _rewrite_in_place(pkey, pval, pnode, s, end, rk, n, kind, val, pos,
                                  nnext, nowner, meta, head, h, cnt, salt, f)
        vlen[h] = new_len
        fp[h] = f
        if watched:
            if new_len > 0:
                table_insert(table, fp, h)
            elif (st.role[h] & ROLE_CHECKED) != 0:
                emptied += 1
    return emptied


@_jit_inline
def _discloses_primary(st, n):
    """Some checked primary's reduced vector is a multiple of ``r = rk/rv[:n]`` (so
    publishing ``r`` puts it in the span): only vectors filed under r's support
    fingerprint are candidates."""
    rk, rv, table, fp = st.rk, st.rv, st.table, st.fp
    f = np.int64(0)
    for i in range(n):
        f = (f + st.salt[rk[i]]) % Q
    mask = len(table) - 1
    slot = f & mask
    while table[slot] >= 0:
        u = table[slot]
        if ((st.role[u] & ROLE_CHECKED) != 0 and fp[u] == f
                and _proportional(st.pkey, st.pval, st.vstart[u], st.vlen[u], rk, rv, n)):
            return True
        slot = (slot + 1) & mask
    return False


@_jit_inline
def _pick_pivot(st, n):
    """The position in ``rk`` of the key whose elimination touches the fewest vectors
    (then the first)."""
    at = 0
    best = st.cnt_p[st.rk[0]] + st.cnt_b[st.rk[0]]
    for i in range(1, n):
        k = st.rk[i]
        w = st.cnt_p[k] + st.cnt_b[k]
        if w < best:
            best = w
            at = i
    return at


@_jit_inline
def _room(st, n, nh):
    """0 when the pool and the node store have room for eliminating ``r`` (length
    ``n``) from the ``nh`` holders in ``ids``: each may move to the top with 1.5x its
    merged length, and link up to ``n`` new nodes; else the STATUS_NEED_* to return."""
    need_pool = n
    for i in range(nh):
        need_pool += (st.vlen[st.ids[i]] + n) * 3 // 2 + 2
    if st.meta[M_TOP] + need_pool > len(st.pkey):
        _compact(st, st.meta[M_NVEC])
        if 2 * (st.meta[M_TOP] + need_pool) > len(st.pkey):
            st.meta[M_NEED] = need_pool
            return STATUS_NEED_POOL
    need_nodes = (nh + 1) * n
    if st.meta[M_NFREE] + len(st.nnext) - st.meta[M_NODE_TOP] < need_nodes:
        st.meta[M_NEED] = need_nodes
        return STATUS_NEED_NODES
    return 0


@_jit_inline
def _trial_vector(st, h, pivot, n, w):
    """Watched vector ``h`` minus its pivot coefficient times ``r`` (scaled to 1 at the
    pivot), written to the pool from ``w`` (above its top: scratch); returns (length,
    support fingerprint)."""
    pkey, pval, rk, rv = st.pkey, st.pval, st.rk, st.rv
    s = st.vstart[h]
    end = s + st.vlen[h]
    c = np.int64(pval[_find(pkey, s, end, pivot)])
    i = s
    j = 0
    o = w
    f = np.int64(0)
    while i < end or j < n:
        if j >= n or (i < end and pkey[i] < rk[j]):
            k = pkey[i]
            z = np.int64(pval[i])
            i += 1
        elif i >= end or rk[j] < pkey[i]:
            k = rk[j]
            z = (P - c * np.int64(rv[j]) % P) % P
            j += 1
        else:
            k = pkey[i]
            z = (np.int64(pval[i]) - c * np.int64(rv[j])) % P
            i += 1
            j += 1
        if z != 0:
            pkey[o] = k
            pval[o] = z
            f = (f + st.salt[k]) % Q
            o += 1
    return o - w, f


@_jit_inline
def _pair_roles(role, a, b):
    """Watched vectors ``a`` and ``b`` are a checked primary and another's attacker."""
    ab = (role[a] & ROLE_CHECKED) != 0 and (role[b] & ROLE_ATTACKER) != 0
    ba = (role[b] & ROLE_CHECKED) != 0 and (role[a] & ROLE_ATTACKER) != 0
    return ab or ba


@_jit
def _pair_disclosed(st, pivot, n, nb, nh):
    """Publishing ``r`` (scaled to 1 at ``pivot``) would make some checked primary's
    reduced vector a multiple of an attacker's: that attacker's contributor, who knows
    the attacker cell, would derive the primary.  Only the watched holders of the pivot
    (``ids[nb:nh]``) change; each one's trial vector is compared with the unchanged
    vectors filed under its new fingerprint and with the other holders'."""
    if nh == nb:
        return False
    pkey, pval, role, fp, table = st.pkey, st.pval, st.role, st.fp, st.table
    st.meta[M_STAMP] += 1
    stamp = st.meta[M_STAMP]
    w = st.meta[M_TOP]
    for q in range(nb, nh):
        st.mark[st.ids[q]] = stamp
    for q in range(nb, nh):
        m, f = _trial_vector(st, st.ids[q], pivot, n, w)
        st.hstart[q] = w
        st.hlen[q] = m
        st.hfp[q] = f
        w += m
    mask = len(table) - 1
    for q in range(nb, nh):
        h = st.ids[q]
        if st.hlen[q] == 0:
            continue
        slot = st.hfp[q] & mask
        while table[slot] >= 0:
            u = table[slot]
            if (st.mark[u] != stamp and fp[u] == st.hfp[q] and _pair_roles(role, h, u)
                    and _same_direction(pkey, pval, st.vstart[u], st.vlen[u],
                                        st.hstart[q], st.hlen[q])):
                return True
            slot = (slot + 1) & mask
    order = np.argsort(st.hfp[nb:nh])
    for a in range(len(order) - 1):
        qa = nb + order[a]
        qb = nb + order[a + 1]
        if st.hfp[qa] != st.hfp[qb] or st.hlen[qa] == 0:
            continue
        for b in range(a + 1, len(order)):  # the run of equal fingerprints
            qb = nb + order[b]
            if st.hfp[qb] != st.hfp[qa]:
                break
            if (_pair_roles(role, st.ids[qa], st.ids[qb])
                    and _same_direction(pkey, pval, st.hstart[qa], st.hlen[qa],
                                        st.hstart[qb], st.hlen[qb])):
                return True
    return False


@_jit_inline
def _append_basis(st, pivot, n):
    """``r = rk/rv[:n]`` becomes a basis vector (listed under its keys but the pivot)."""
    vid = st.meta[M_NVEC]
    st.meta[M_NVEC] += 1
    s = st.meta[M_TOP]
    st.meta[M_TOP] += n
    st.vstart[vid] = s
    st.vlen[vid] = n
    st.vcap[vid] = n
    for i in range(n):
        k = st.rk[i]
        st.pkey[s + i] = k
        st.pval[s + i] = st.rv[i]
        if k != pivot:
            st.cnt_b[k] += 1
            st.pnode[s + i] = _link(st.nnext, st.nowner, st.meta, st.head_b, k, vid)
        else:
            st.pnode[s + i] = -1
    st.pivot_of[pivot] = vid


@_jit
def _offer(st, keys, vals, force):
    """Publish the vector ``(keys, vals)`` unless that puts a checked primary into the
    published span, or (with attackers) into the span of it and one attacker
    (``force``: publish anyway).  Returns STATUS_PUBLISHED, STATUS_SUPPRESSED, or
    STATUS_NEED_POOL / STATUS_NEED_NODES (nothing changed: grow the arrays, offer
    again)."""
    n = _reduce(st, keys, vals)
    if n == 0:
        return STATUS_PUBLISHED  # already in the span
    if not force and _discloses_primary(st, n):
        return STATUS_SUPPRESSED
    at = _pick_pivot(st, n)
    pivot = st.rk[at]
    # the holders of the pivot: basis vectors ids[:nb], watched vectors ids[nb:nh]
    nb = _holders(st.nnext, st.nowner, st.meta, st.head_b, pivot, st.ids, 0)
    nh = nb + _holders(st.nnext, st.nowner, st.meta, st.head_p, pivot, st.ids, nb)
    need = _room(st, n, nh)
    if need != 0:
        return need
    inv = modinv(st.rv[at])
    for i in range(n):
        st.rv[i] = np.int64(st.rv[i]) * inv % P
    if not force and st.meta[M_PAIRS] and _pair_disclosed(st, pivot, n, nb, nh):
        return STATUS_SUPPRESSED
    st.meta[M_DISCLOSED] += _eliminate(st, pivot, n, nb, nh)
    # every holder lost the pivot: its lists hold dead nodes only
    _release(st.nnext, st.meta, st.head_b, pivot)
    _release(st.nnext, st.meta, st.head_p, pivot)
    _append_basis(st, pivot, n)
    return STATUS_PUBLISHED


@_jit
def offer_range(st, ptr, keys, vals, force, lo, hi, published):
    """Offer vectors ``lo..hi-1`` of the CSR ``(ptr, keys, vals)`` in order; returns the
    first one not done (``hi`` when all are; else ``meta[M_STATUS]`` says why)."""
    for q in range(lo, hi):
        a = ptr[q]
        b = ptr[q + 1]
        res = _offer(st, keys[a:b], vals[a:b], force[q])
        if res < 0:  # out of room: the caller grows the arrays and goes on from q
            st.meta[M_STATUS] = res
            return q
        published[q] = res
    return hi


@_jit
def load_primaries(st, ptr, keys, vals):
    """The watched vectors into the pool (ids 0..), with their lists, counts and
    fingerprints (``st.role`` set before)."""
    n = len(ptr) - 1
    disclosed = 0
    for u in range(n):
        a = ptr[u]
        b = ptr[u + 1]
        st.vstart[u] = a
        st.vlen[u] = b - a
        st.vcap[u] = b - a
        f = np.int64(0)
        for j in range(a, b):
            k = keys[j]
            st.pkey[j] = k
            st.pval[j] = vals[j]
            st.pnode[j] = _link(st.nnext, st.nowner, st.meta, st.head_p, k, u)
            st.cnt_p[k] += 1
            f = (f + st.salt[k]) % Q
        st.fp[u] = f
        if b > a:
            table_insert(st.table, st.fp, u)
        elif (st.role[u] & ROLE_CHECKED) != 0:
            disclosed += 1
    st.meta[M_TOP] = ptr[n]
    st.meta[M_NVEC] = n
    st.meta[M_DISCLOSED] = disclosed
