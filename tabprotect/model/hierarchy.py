"""Hierarchies of codes: one tree per dimension, whose root is the dimension's total."""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import repeat
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Sequence

import numpy as np

from tabprotect.errors import InputError, column_names, read_input_text
from tabprotect.model.columns import Columns, as_columns, row_place, text_values

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True, eq=False)
class Hierarchy:
    """A tree of codes; code 0 is the root (the total).

    Codes are stored in depth-first pre-order (a parent before its children), so
    ``codes[parent[i]]`` is always listed before ``codes[i]``.

    Build one with :meth:`from_pairs`, :meth:`from_levels`, :meth:`from_hrc`,
    :meth:`from_columns` or :meth:`flat`.

    Examples
    --------
    >>> h = Hierarchy.from_pairs([("Total", "A"), ("Total", "B"), ("A", "A1"), ("A", "A2")])
    >>> h.codes
    ('Total', 'A', 'A1', 'A2', 'B')
    >>> h.children_of("A")
    ('A1', 'A2')
    """

    codes: tuple[str, ...]
    parent: np.ndarray  # int64, -1 for the root
    name: str = ""
    _position: dict = field(default=None, repr=False)  # code -> index
    _children: tuple = field(default=None, repr=False)

    def __post_init__(self):
        position = {c: i for i, c in enumerate(self.codes)}
        children: list[list[int]] = [[] for _ in self.codes]
        for i, p in enumerate(self.parent):
            if p >= 0:
                children[p].append(i)
        object.__setattr__(self, "_position", position)
        object.__setattr__(self, "_children", tuple(tuple(c) for c in children))

    # ----------------------------------------------------------------- builders
    @classmethod
    def from_pairs(cls, pairs: "Iterable[tuple[str, str]] | pd.DataFrame | Columns",
                   name: str = "",
                   source: str = "hierarchy",
                   place: "Callable[[int], str] | None" = None) -> "Hierarchy":
        """Build from (parent, child) pairs; the one code that is never a child is the root.

        Parameters
        ----------
        pairs : iterable of (parent, child), or a DataFrame or :class:`Columns` with
            columns ``parent, child``
        name : dimension name used in error messages
        source : file or object name used in error messages
        place : where pair ``k`` is, as messages name it (a file and line); by default a
            file's pairs (:class:`Columns` read from it) are named by their lines, a
            DataFrame's by its rows, others by their 0-based position

        Examples
        --------
        >>> Hierarchy.from_pairs([("T", "a"), ("T", "b")]).leaves
        ('a', 'b')
        """
        if hasattr(pairs, "columns"):
            pairs = as_columns(pairs)
            missing = {"parent", "child"} - set(pairs.columns)
            if missing:
                raise InputError(f"{source}: missing column(s) {sorted(missing)}; "
                                 f"expected 'parent,child'")
            rows = list(zip(text_values(pairs["parent"]), text_values(pairs["child"])))

            def where(k: int) -> str:       # a file's line, or a DataFrame's row
                return row_place(source, pairs, k)
        else:
            rows = list(pairs)

            def where(k: int) -> str:
                if place is not None:
                    return place(k)
                return f"{source} pair {k} (0-based position)"
        if not rows:
            raise InputError(f"{source}: no parent-child pairs")
        parent_of: dict[str, str] = {}
        order: list[str] = []
        kids: dict[str, list[str]] = {}
        for row, (p, c) in enumerate(rows):
            if _missing(p) or _missing(c):
                raise InputError(f"{where(row)}: empty parent or child code")
            p, c = str(p).strip(), str(c).strip()
            if p == c:
                raise InputError(f"{where(row)}: code '{c}' is its own parent (cycle)")
            if c in parent_of:
                if parent_of[c] == p:
                    raise InputError(f"{where(row)}: pair ('{p}', '{c}') is duplicated")
                raise InputError(f"{where(row)}: code '{c}' has two parents "
                                 f"('{parent_of[c]}' and '{p}')")
            parent_of[c] = p
            for code in (p, c):
                if code not in kids:
                    kids[code] = []
                    order.append(code)
            kids[p].append(c)
        roots = [c for c in order if c not in parent_of]
        if len(roots) == 0:
            raise InputError(f"{source}: every code has a parent (the hierarchy has a cycle)")
        if len(roots) > 1:
            raise InputError(f"{source}: the hierarchy has {len(roots)} roots "
                             f"({', '.join(repr(r) for r in roots[:5])}); it needs one total")
        return cls._from_children(roots[0], kids, name, source, n_expected=len(order))

    @classmethod
    def _from_children(cls, root: str, kids: dict[str, list[str]], name: str, source: str,
                       n_expected: int) -> "Hierarchy":
        codes: list[str] = []
        parents: list[int] = []
        stack = [(root, -1)]
        seen = set()
        while stack:
            code, par = stack.pop()
            if code in seen:
                raise InputError(f"{source}: code '{code}' is reached twice (cycle)")
            seen.add(code)
            idx = len(codes)
            codes.append(code)
            parents.append(par)
            for child in reversed(kids.get(code, [])):
                stack.append((child, idx))
        if len(codes) != n_expected:
            unreached = [c for c in kids if c not in seen]
            raise InputError(f"{source}: code '{unreached[0]}' is not connected to the total "
                             f"'{root}' (cycle)")
        return cls(tuple(codes), np.asarray(parents, dtype=np.int64), name)

    @classmethod
    def flat(cls, codes: Sequence[str], total: str = "Total", name: str = "") -> "Hierarchy":
        """A one-level hierarchy: ``total`` with ``codes`` as its children.

        Examples
        --------
        >>> Hierarchy.flat(["m", "f"], total="all").codes
        ('all', 'm', 'f')
        """
        codes = [str(c) for c in codes]
        if len(set(codes)) != len(codes):
            seen: set[str] = set()
            dup = next(c for c in codes if c in seen or seen.add(c))
            raise InputError(f"hierarchy {name or ''}: code '{dup}' is duplicated")
        if str(total) in codes:
            raise InputError(f"hierarchy {name or ''}: total code '{total}' is also a category")
        return cls.from_pairs([(str(total), c) for c in codes], name=name)

    @classmethod
    def from_levels(cls, codes: Sequence[str], lengths: Sequence[int], total: str = "Total",
                    name: str = "") -> "Hierarchy":
        """Build from level-coded codes, e.g. NACE-like ``A``, ``A01``, ``A011``.

        Parameters
        ----------
        codes : every code of every level (leaves at least; intermediate codes are implied
            by their prefixes when absent)
        lengths : the code length of each level, coarse to fine, e.g. ``[1, 3, 4]``

        Examples
        --------
        >>> h = Hierarchy.from_levels(["A011", "A012", "B05"], [1, 3, 4])
        >>> h.children_of("A")
        ('A01',)
        """
        lengths = list(lengths)
        if sorted(lengths) != lengths or len(set(lengths)) != len(lengths):
            raise InputError(f"hierarchy {name}: level lengths {lengths} must be increasing")
        pairs: list[tuple[str, str]] = []
        seen: set[str] = set()
        for code in codes:
            code = str(code).strip()
            if len(code) not in lengths:
                raise InputError(f"hierarchy {name}: code '{code}' has length {len(code)}, "
                                 f"not one of the level lengths {lengths}")
            level = lengths.index(len(code))
            chain = [code[:lengths[j]] for j in range(level + 1)]
            prev = str(total)
            for c in chain:
                if c not in seen:
                    seen.add(c)
                    pairs.append((prev, c))
                prev = c
        return cls.from_pairs(pairs, name=name)

    @classmethod
    def from_hrc(cls, source: str | Path, total: str = "Total", lead: str = "@",
                 name: str = "") -> "Hierarchy":
        """Read a tau-Argus ``.hrc`` hierarchy: one code per line, depth = repeats of ``lead``.

        ``source`` is a path or the file's text. The total is implicit.

        Examples
        --------
        >>> Hierarchy.from_hrc("A\\n@A1\\n@A2\\nB\\n", total="T").codes
        ('T', 'A', 'A1', 'A2', 'B')
        """
        label = "hrc"
        if isinstance(source, Path) or ("\n" not in str(source) and Path(str(source)).exists()):
            label = str(source)
            text = read_input_text(source, "hierarchy file")
        else:
            text = str(source)
        pairs: list[tuple[str, str]] = []
        at: list[int] = []
        stack = [str(total)]
        n = 0
        for lineno, raw in enumerate(text.splitlines(), start=1):
            line = raw.strip()
            if not line:
                continue
            depth = 0
            while line.startswith(lead):
                line = line[len(lead):]
                depth += 1
            code = line.strip()
            if not code:
                raise InputError(f"{label} line {lineno}: no code after the depth marks")
            if depth > len(stack) - 1:
                raise InputError(f"{label} line {lineno}: code '{code}' is {depth} levels deep "
                                 f"but its parent level is missing")
            del stack[depth + 1:]
            pairs.append((stack[depth], code))
            at.append(lineno)
            stack.append(code)
            n += 1
        if n == 0:
            raise InputError(f"{label}: empty hierarchy file")
        return cls.from_pairs(pairs, name=name, source=label,
                              place=lambda k: f"{label} line {at[k]}")

    @classmethod
    def from_columns(cls, frame: "pd.DataFrame | Columns", columns: Sequence[str],
                     total: str = "Total", name: str = "", label: str = "") -> "Hierarchy":
        """Build from level columns of a frame (coarse to fine), e.g. a correspondence table
        with columns ``A10, A21, A88``.  Codes are stripped text, as the data's codes are; a
        code repeated at the next level (a level with no subdivision) is one node.  A missing
        code is an :class:`InputError` naming ``label`` (the file), the line and the column.

        Examples
        --------
        >>> df = Columns({"nuts1": ["1", "1", "2"], "nuts2": ["11", "12", "21"]})
        >>> Hierarchy.from_columns(df, ["nuts1", "nuts2"]).leaves
        ('11', '12', '21')
        """
        what = label or f"hierarchy {name}"
        frame = as_columns(frame)
        absent = [c for c in columns if c not in frame.columns]
        if absent:
            raise InputError(f"{what}: column(s) {absent} not found "
                             f"({column_names(frame.columns)})")
        levels = [text_values(np.asarray(frame[c], dtype=object)) for c in columns]
        for c, v in zip(columns, levels):
            empty = np.flatnonzero(np.equal(v, None) | np.equal(v, ""))
            if len(empty):          # a file's line, or a DataFrame's row
                raise InputError(f"{row_place(what, frame, int(empty[0]))}: empty code in "
                                 f"column '{c}'")
        pairs: list[tuple[str, str]] = []
        pair_rows: list[int] = []
        seen: dict[str, tuple[str, int]] = {}
        rows = list(zip(*levels))
        # each distinct row in order of first appearance, with its first row number
        first_row = dict(zip(reversed(rows), range(len(rows) - 1, -1, -1)))
        for row in dict.fromkeys(rows):
            i = first_row[row]
            prev = str(total)
            for column, code in zip(columns, row):
                if code == prev:
                    continue  # a code repeated at the next level passes through unchanged
                if code in seen:
                    if seen[code][0] != prev:
                        # named by lines, not quoted: the table may be the microdata itself
                        other = row_place("", frame, seen[code][1]).strip()
                        raise InputError(f"{row_place(what, frame, i)}: the code in column "
                                         f"'{column}' has two parents (the other at {other})")
                else:
                    seen[code] = (prev, i)
                    pairs.append((prev, code))
                    pair_rows.append(i)
                prev = code
        return cls.from_pairs(pairs, name=name, source=label or "hierarchy",
                              place=lambda k: row_place(what, frame, pair_rows[k]))

    # ----------------------------------------------------------------- queries
    def __len__(self) -> int:
        return len(self.codes)

    def __repr__(self) -> str:
        return (f"Hierarchy(name={self.name!r}, codes={len(self.codes)}, "
                f"leaves={len(self.leaves)}, depth={int(self.depth.max())})")

    @property
    def root(self) -> str:
        return self.codes[0]

    def index(self, code: str) -> int:
        """Position of ``code``; raises :class:`InputError` naming it when unknown."""
        try:
            return self._position[code]
        except KeyError:
            raise InputError(f"code '{code}' is not in hierarchy '{self.name}'") from None

    def __contains__(self, code) -> bool:
        return code in self._position

    def lookup(self, codes) -> np.ndarray:
        """Positions of many codes at once; -1 where a code is unknown."""
        codes = codes.tolist() if isinstance(codes, np.ndarray) else list(codes)
        return np.fromiter(map(self._position.get, codes, repeat(-1, len(codes))),
                           dtype=np.int64, count=len(codes))

    @property
    def children(self) -> tuple[tuple[int, ...], ...]:
        """Children positions of each code."""
        return self._children

    def children_of(self, code: str) -> tuple[str, ...]:
        return tuple(self.codes[j] for j in self._children[self.index(code)])

    @property
    def is_leaf(self) -> np.ndarray:
        return np.array([len(c) == 0 for c in self._children], dtype=bool)

    @property
    def leaves(self) -> tuple[str, ...]:
        return tuple(c for c, leaf in zip(self.codes, self.is_leaf) if leaf)

    @property
    def depth(self) -> np.ndarray:
        """Depth of each code (root 0)."""
        depth = np.zeros(len(self.codes), dtype=np.int64)
        for i in range(1, len(self.codes)):
            depth[i] = depth[self.parent[i]] + 1
        return depth

    def edges(self) -> list[tuple[int, list[int]]]:
        """(parent position, children positions) for each non-leaf code."""
        return [(i, list(ch)) for i, ch in enumerate(self._children) if ch]

    def leaf_descendants(self) -> list[np.ndarray]:
        """For each code, the positions of the leaves below it (itself if a leaf)."""
        out: list[list[int]] = [[] for _ in self.codes]
        for i in range(len(self.codes) - 1, -1, -1):
            if not self._children[i]:
                out[i] = [i]
            else:
                out[i] = [leaf for ch in self._children[i] for leaf in out[ch]]
        return [np.asarray(x, dtype=np.int64) for x in out]

    def to_pairs(self) -> "pd.DataFrame":
        """The hierarchy as a ``parent, child`` frame."""
        import pandas as pd
        rows = [(self.codes[p], self.codes[i]) for i, p in enumerate(self.parent) if p >= 0]
        return pd.DataFrame(rows, columns=["parent", "child"])

    def to_hrc(self, lead: str = "@") -> str:
        """The hierarchy as tau-Argus ``.hrc`` text (total implicit)."""
        depth = self.depth
        return "".join(lead * (depth[i] - 1) + self.codes[i] + "\n"
                       for i in range(1, len(self.codes)))


def _missing(code) -> bool:
    """A missing code: None or NaN (a blank field, or a float NaN from a frame)."""
    return code is None or (isinstance(code, float) and code != code)
