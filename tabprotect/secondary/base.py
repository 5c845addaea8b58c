"""What every secondary-suppression method shares: the registry, the calling shape, the
options protocol, cost functions and the result object.

A method is a function registered with :func:`register_method`, together with its frozen
options dataclass and its capabilities::

    @dataclass(frozen=True)
    class HypercubeOptions:
        max_candidates: int = field(default=20000, metadata={"why": "..."})

    @register_method("hypercube", options=HypercubeOptions, needs_product_structure=True,
                     handles_singletons=True, proves_optimality=False)
    def hypercube(table: Table, cost: np.ndarray, *, time_limit: float | None,
                  progress: Callable[[str, float], None] | None, singleton: bool,
                  max_candidates: int = 20000) -> MethodOutcome

The function receives a table whose primary cells have status ``U`` (and protection
levels ``upl/lpl/spl``), ``P`` cells that must stay published, and the cost per cell; it
takes the shared settings it uses among :data:`SHARED_SETTINGS` and either one keyword per
field of its options class or (a function with an ``options`` parameter) the options
instance itself, plus the run settings named in ``extra`` (e.g. a warm start); it
returns the new status
array (``M`` for its secondary suppressions) in a :class:`MethodOutcome`.
:func:`tabprotect.secondary.protect` checks the options (:func:`method_options`), runs
the method, audits the pattern on the full table, repairs any shortfall and returns a
:class:`ProtectResult`.
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
import types
import typing
from collections.abc import MutableMapping
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import scipy.sparse as sp

from tabprotect.errors import InputError
from tabprotect.model.table import Table

#: settings protect() owns and hands to every method function that takes them
SHARED_SETTINGS = ("time_limit", "progress", "singleton", "empty")


@dataclass(frozen=True)
class NoOptions:
    """The options of a method that has none."""


@dataclass(frozen=True)
class Capabilities:
    """What a method can do, for callers that choose one.

    Attributes
    ----------
    needs_product_structure : works on the sub-tables of a product table (protect()
        recovers the product structure of a general table first, or refuses)
    handles_singletons : protects against the contributors of single-contributor cells
        itself (otherwise only protect()'s audit and repair do)
    proves_optimality : can prove that its pattern has minimum cost
    adjusts_values : publishes every cell at an adjusted value instead of a suppression
        pattern (``cta``); ``protect`` hands such a method the whole call and returns its
        own result
    """

    needs_product_structure: bool = False
    handles_singletons: bool = False
    proves_optimality: bool = False
    adjusts_values: bool = False


@dataclass(frozen=True)
class MethodSpec:
    """A registered method: its function, options class, run settings and capabilities.

    Attributes
    ----------
    options : its frozen options dataclass
    extra : run settings the function takes besides the options class (e.g. ``mip_gap``,
        ``start``); given like options, checked against the function's annotations
    shared : the :data:`SHARED_SETTINGS` its function takes
    whole : the function takes the options instance as ``options=`` (else one keyword
        per field)
    """

    name: str
    run: Callable[..., "MethodOutcome"]
    options: type
    capabilities: Capabilities
    shared: tuple[str, ...]
    extra: tuple[str, ...] = ()
    whole: bool = False

    def __call__(self, *args, **kwargs) -> "MethodOutcome":
        return self.run(*args, **kwargs)

    @property
    def valid_keys(self) -> list[str]:
        """Every key ``options`` may hold: the options fields, then the run settings."""
        return [f.name for f in dataclasses.fields(self.options)] + list(self.extra)

    def call(self, table: Table, cost: np.ndarray, settings: "MethodSettings",
             **shared) -> "MethodOutcome":
        """Run the method with ``settings`` (:func:`method_options`) and the shared
        settings its function takes."""
        kw = {k: v for k, v in shared.items() if k in self.shared}
        opts = settings.options
        if self.whole:
            kw["options"] = opts
        else:
            kw.update({f.name: getattr(opts, f.name) for f in dataclasses.fields(opts)})
        kw.update(settings.extra)
        return self.run(table, cost, **kw)


@dataclass(frozen=True)
class MethodSettings:
    """What :func:`method_options` checked: the options instance and the run settings
    given (``extra``; those not given keep the function's defaults)."""

    options: Any
    extra: dict[str, Any] = field(default_factory=dict)


class MethodTable(MutableMapping):
    """Method name -> :class:`MethodSpec`.  A method declared with a loader
    (:meth:`declare`) is imported on first use: ``name in METHODS`` and the names
    listed cost nothing, ``METHODS[name]`` (and ``items()``, ``values()``) import and
    register the method, so a run imports the one method it uses."""

    def __init__(self):
        self._specs: dict[str, MethodSpec] = {}
        self._loaders: dict[str, Callable[[], None]] = {}
        self._names: dict[str, None] = {}    # every name, in the order first seen

    def declare(self, name: str, load: Callable[[], None]) -> None:
        """Make ``name`` known; ``load()`` registers it (imports its module)."""
        self._loaders[name] = load
        self._names[name] = None

    def __getitem__(self, name: str) -> MethodSpec:
        load = self._loaders.get(name)
        if load is not None:
            load()        # (threads loading at once: the import lock orders them)
            self._loaders.pop(name, None)
        return self._specs[name]

    def __setitem__(self, name: str, spec: MethodSpec) -> None:
        self._specs[name] = spec
        self._names[name] = None

    def __delitem__(self, name: str) -> None:
        self._loaders.pop(name, None)
        del self._specs[name]
        del self._names[name]

    def __contains__(self, name) -> bool:
        return name in self._names

    def __iter__(self):
        return iter(list(self._names))

    def __len__(self) -> int:
        return len(self._names)


METHODS = MethodTable()


def register_method(name: str, *, options: type | None = None, extra: tuple[str, ...] = (),
                    needs_product_structure: bool = False, handles_singletons: bool = False,
                    proves_optimality: bool = False, adjusts_values: bool = False):
    """Decorator that makes a method available as ``protect(table, method=name)``.

    ``options`` is the method's frozen options dataclass (default: none); the function
    takes it as ``options=`` or has a keyword for every field.  ``extra``: keywords of
    the function that are run settings outside the options class.
    """
    opts = NoOptions if options is None else options
    if not (dataclasses.is_dataclass(opts) and opts.__dataclass_params__.frozen):
        raise TypeError(f"method '{name}': options must be a frozen dataclass")
    caps = Capabilities(needs_product_structure=needs_product_structure,
                        handles_singletons=handles_singletons,
                        proves_optimality=proves_optimality,
                        adjusts_values=adjusts_values)

    def wrap(fn):
        params = inspect.signature(fn).parameters
        whole = "options" in params and opts is not NoOptions
        missing = [k for k in extra if k not in params]
        if not whole:
            missing += [f.name for f in dataclasses.fields(opts) if f.name not in params]
        if missing:
            raise TypeError(f"method '{name}': option(s) {missing} are no keyword of "
                            f"{fn.__name__}()")
        shared = tuple(k for k in SHARED_SETTINGS if k in params)
        METHODS[name] = MethodSpec(name=name, run=fn, options=opts, capabilities=caps,
                                   shared=shared, extra=tuple(extra), whole=whole)
        return fn
    return wrap


def option_help(options: type) -> dict[str, str]:
    """``{field: one-line reason}`` of an options class: a field's ``why`` metadata, else
    the ``#:`` comment above the field (or above the group of fields it belongs to)."""
    comments = _field_comments(options)
    return {f.name: f.metadata.get("why") or comments.get(f.name, "")
            for f in dataclasses.fields(options)}


def _field_comments(cls: type) -> dict[str, str]:
    try:
        lines = inspect.getsource(cls).splitlines()
    except (OSError, TypeError):
        return {}
    names = {f.name for f in dataclasses.fields(cls)}
    out: dict[str, str] = {}
    for i, line in enumerate(lines):
        head = line.strip().split(":", 1)[0]
        if head not in names or ":" not in line:
            continue
        j, text = i - 1, []
        while j >= 0 and lines[j].strip().split(":", 1)[0] in names:
            j -= 1          # fields sharing one comment
        while j >= 0 and lines[j].strip().startswith("#:"):
            text.insert(0, lines[j].strip()[2:].strip())
            j -= 1
        out[head] = " ".join(text)
    return out


def method_options(method: str, options: Any = None, *, also: tuple[str, ...] = (),
                   **keywords) -> MethodSettings:
    """The checked settings of ``method`` from ``options`` (an instance of its options
    class, a dict or None) updated by ``keywords``.

    Unknown keys, values of the wrong type and values the options class refuses are
    :class:`InputError` naming the key and listing the valid ones (and ``also``, the
    caller's own keywords, if any).
    """
    if method not in METHODS:
        raise InputError(f"unknown method '{method}' (available: {', '.join(sorted(METHODS))})")
    spec = METHODS[method]
    cls = spec.options
    if options is None:
        given: dict[str, Any] = {}
    elif isinstance(options, cls):
        given = {f.name: getattr(options, f.name) for f in dataclasses.fields(cls)}
    elif isinstance(options, dict):
        given = dict(options)
    else:
        raise InputError(f"options for method '{method}' must be a {cls.__name__} or a "
                         f"dict, not {type(options).__name__}")
    given.update(keywords)
    valid = spec.valid_keys
    unknown = sorted(k for k in given if k not in valid)
    if unknown:
        more = f"; besides: {', '.join(also)}" if also else ""
        raise InputError(f"unknown option(s) {', '.join(map(repr, unknown))} for method "
                         f"'{method}' (valid: {', '.join(valid) if valid else 'none'}{more})")
    hints = {**_hints(spec.run), **_hints(cls)}
    for key, value in given.items():
        if not _type_ok(value, hints.get(key, Any)):
            raise InputError(f"option '{key}' of method '{method}' must be "
                             f"{_type_name(hints.get(key))}, not {type(value).__name__}")
    extra = {k: given.pop(k) for k in spec.extra if k in given}
    try:
        opts = cls(**given)
    except (TypeError, ValueError) as exc:
        raise InputError(f"options of method '{method}': {exc}") from None
    return MethodSettings(options=opts, extra=extra)


@functools.lru_cache(maxsize=None)
def _hints(obj) -> dict[str, Any]:
    """The resolved annotations of a method's function or options class, once per
    object: resolving them evaluates every string annotation, milliseconds per call on
    a path that small tables take in a tenth of a second.  Callers only read the dict."""
    try:
        return typing.get_type_hints(obj)
    except Exception:   # an annotation that does not resolve: not checked
        return {}


def _type_ok(value: Any, hint: Any) -> bool:
    """``value`` fits the annotation ``hint`` (plain types, unions, Optional, Literal;
    anything else is accepted).  bool is no int here, and an int is a float."""
    if hint is Any:
        return True
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_type_ok(value, h) for h in typing.get_args(hint))
    if origin is typing.Literal:
        return value in typing.get_args(hint)
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, (bool, np.bool_))
    if hint is int:
        return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
    if hint is float:
        return isinstance(value, (int, float, np.integer, np.floating)) and \
            not isinstance(value, (bool, np.bool_))
    if hint is str:
        return isinstance(value, str)
    if isinstance(hint, type):
        return isinstance(value, hint)
    return True


def _type_name(hint: Any) -> str:
    if typing.get_origin(hint) is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(hint))
    return getattr(hint, "__name__", None) or str(hint).replace("typing.", "")


def applied_options(settings: MethodSettings) -> dict[str, Any]:
    """The settings as recorded in a result's ``params``: every options field and every
    run setting given; plain values as they are, arrays and callables by a short
    description (no cell values)."""
    opts = settings.options
    items = [(f.name, getattr(opts, f.name)) for f in dataclasses.fields(opts)]
    out: dict[str, Any] = {}
    for k, v in items + list(settings.extra.items()):
        if isinstance(v, np.ndarray):
            v = f"array of {v.size} entries"
        elif callable(v):
            v = getattr(v, "__name__", type(v).__name__)
        out[k] = v
    return out


@dataclass
class MethodOutcome:
    """What a method found, before the full-table audit.

    Attributes
    ----------
    status : new status array (S/U/M/P/Z); the method adds ``M`` cells
    proven_optimal : the method proved minimum cost (only ``optimal`` can)
    solver_status : e.g. "optimal", "time_limit", "heuristic"
    mip_gap : relative gap when known
    details : method-specific numbers for reports (iterations, cuts, sub-tables, ...)
    moves : deviations the method's own proofs found (one row per move, one column per
        cell of the table it ran on), handed to the audit as candidate moves: the audit
        checks each row and certifies the primaries they move without an LP (None: none)
    """

    status: np.ndarray
    proven_optimal: bool = False
    solver_status: str = "heuristic"
    mip_gap: float | None = None
    details: dict[str, Any] = field(default_factory=dict)
    moves: sp.csr_matrix | None = None


COST_FUNCTIONS = ("unity", "freq", "value", "log", "column")


def cost_vector(table: Table, cost: str | np.ndarray | None = "value",
                column: str | None = None) -> np.ndarray:
    """Suppression cost per cell.

    Parameters
    ----------
    cost : ``"unity"`` (number of cells), ``"freq"`` (contributors), ``"value"``,
        ``"log"`` (``log(1 + value)``), ``"column"`` (``table.cost`` or the extra array named
        ``column``), or an array
    Empty cells cost as the function says (value 0 -> tiny); a small positive floor keeps
    every cost strictly positive so that no suppression is ever free.

    Examples
    --------
    >>> from tabprotect.model import Hierarchy, Table
    >>> t = Table.from_arrays({"x": Hierarchy.flat(["a", "b"], total="T")}, [3, 1, 2])
    >>> cost_vector(t, "unity").tolist()
    [1.0, 1.0, 1.0]
    """
    n = table.n_cells
    if cost is None:
        cost = "value"
    if isinstance(cost, str):
        if cost == "unity":
            c = np.ones(n)
        elif cost == "freq":
            c = np.nan_to_num(table.freq.astype(float), nan=1.0)
        elif cost == "value":
            c = np.abs(table.value).astype(float)
        elif cost == "log":
            c = np.log1p(np.abs(table.value))
        elif cost == "column":
            if column is not None:
                if column not in table.extra:
                    raise InputError(f"cost column '{column}' not in the table")
                c = np.asarray(table.extra[column], dtype=float)
            elif table.cost is not None:
                c = table.cost.astype(float)
            else:
                raise InputError("cost='column' but the table has no cost column")
        else:
            raise InputError(f"unknown cost function '{cost}' "
                             f"(choose from {', '.join(COST_FUNCTIONS)})")
    else:
        c = np.asarray(cost, dtype=float)
        if c.shape != (n,):
            raise InputError(f"cost array must have {n} entries")
    if np.isnan(c).any() or (c < 0).any():
        i = int(np.flatnonzero(np.isnan(c) | (c < 0))[0])
        raise InputError(f"cost of cell {table.cell_name(i)} is missing or negative")
    # strictly positive: a zero-cost cell would be suppressed for free and arbitrarily
    floor = 1e-6 * max(1.0, float(c.max()) if n else 1.0)
    return np.maximum(c, floor)
