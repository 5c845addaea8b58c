"""``tabulate``: microdata (one row per contributor) -> a product :class:`Table`."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping

from tabprotect.errors import InputError
from tabprotect.model.hierarchy import Hierarchy
from tabprotect.model.table import Table
from tabprotect.tabulate.assemble import assemble
from tabprotect.tabulate.engine import EngineSettings
from tabprotect.tabulate.engines import choose_engine
from tabprotect.tabulate.spec import MicrodataSpec
from tabprotect.model.columns import Columns
from tabprotect.tabulate.frames import is_dask_frame, is_pandas_frame

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["tabulate"]


def tabulate(microdata: "pd.DataFrame | Columns | str | Path",
             dimensions: Mapping[str, Hierarchy],
             response: str | None = None, *,
             kind: str | None = None,
             weight: str | None = None,
             holding: str | None = None,
             shadow: str | None = None,
             cost: str | None = None,
             request: str | None = None,
             top_k: int = 3,
             unknown_code: str | Mapping[str, str] | None = None,
             missing: str = "error",
             engine: str = "auto",
             name: str = "",
             threads: int | None = None,
             memory_limit: str | None = None,
             progress: Callable[[str], None] | None = None) -> Table:
    """Tabulate microdata (one row per contributor) into a product :class:`Table`.

    Parameters
    ----------
    microdata : a DataFrame (or :class:`~tabprotect.model.columns.Columns`), or the path
        of a CSV or Parquet file
    dimensions : ``{column: Hierarchy}``; each column holds leaf codes of its hierarchy
    response : the variable summed in a magnitude table; None for a frequency table
    kind : ``"magnitude"`` (default when ``response`` is given) or ``"frequency"``
    weight : sampling-weight column (> 0): values are ``sum w x``, a contribution counts as
        ``w`` copies for the largest contributions (tau-Argus)
    holding : contributor-group column (e.g. enterprise group).  Holding-level data (the
        contributions summed per holding in each cell) go to ``extra["holding_freq"]`` and
        ``extra["holding_top1..k"]``.  Records with an empty holding are their own holding.
        Cannot be combined with ``weight`` (as in tau-Argus).
    shadow : the variable the sensitivity rules look at, when it is not the response; its
        totals go to ``extra["shadow"]`` and its largest contributions to ``top``
    cost : a cost variable summed (weighted) per cell into ``table.cost``
    request : a column flagging contributors that asked for protection (1/true/yes/y);
        ``extra["request_max"]`` is the largest flagged contribution per cell
    top_k : how many largest contributions to keep (enough for every rule you apply:
        ``n`` of an (n,k)-dominance rule, ``m + 1`` of a p%-rule)
    unknown_code : code (one for all dimensions, or ``{column: code}``) that receives
        records whose code is not in the hierarchy; default: such codes are an error
    missing : what a missing response (or shadow/cost) means: ``"error"`` (default),
        ``"zero"`` (a contributor with value 0) or ``"drop"`` (the record is left out of the
        cell).  With ``zero``/``drop`` the records concerned are counted per cell in
        ``extra["n_missing"]`` and a warning gives the total, so nothing disappears silently.
    engine : ``"memory"`` (also named ``"pandas"``), ``"duckdb"``, ``"dask"`` or ``"auto"``
        (duckdb for files larger than 16 MiB when installed, in memory for smaller files
        and for frames, dask for a Dask DataFrame).  ``"dask"`` reads a Dask DataFrame or a CSV/Parquet file or
        folder partition by partition on a Dask cluster (docs/scale-out.md)
    threads, memory_limit : duckdb settings (e.g. ``threads=1``, ``memory_limit="2GB"``);
        duckdb spills to disk beyond the memory limit, so files larger than memory work
    progress : called with short messages while the work proceeds

    Returns
    -------
    Table with every cell of every hierarchy level; ``kind`` as requested.

    Raises
    ------
    InputError : unknown or missing codes (naming the code and its first rows), missing or
        non-numeric values, negative contributions, non-positive weights.

    Examples
    --------
    >>> import pandas as pd
    >>> h = Hierarchy.flat(["a", "b"], total="T")
    >>> df = pd.DataFrame({"g": ["a", "a", "b"], "x": [5.0, 1.0, 2.0]})
    >>> t = tabulate(df, {"g": h}, "x", top_k=2)
    >>> t.value.tolist(), t.freq.tolist(), t.top[0].tolist()
    ([8.0, 6.0, 2.0], [3.0, 2.0, 1.0], [5.0, 2.0])
    """
    spec = MicrodataSpec.make(dimensions, response, kind, weight, holding, shadow, cost,
                              request, top_k, unknown_code, missing)
    say = progress or (lambda msg: None)
    if isinstance(microdata, (str, Path)):
        microdata = Path(microdata)
        if not microdata.exists():
            raise InputError(f"{microdata}: microdata file not found")
        name = name or microdata.stem
    elif is_dask_frame(microdata):
        if engine not in ("auto", "dask"):
            raise InputError(f"a Dask DataFrame is tabulated by engine 'dask', not {engine!r}")
    elif not (is_pandas_frame(microdata) or isinstance(microdata, Columns)):
        raise InputError("microdata must be a pandas or Dask DataFrame or the path of a "
                         f"CSV/Parquet file or folder, not {type(microdata).__name__}")
    chosen = choose_engine(engine, microdata)
    leaves = chosen.leaves(microdata, spec, EngineSettings(threads, memory_limit), say)
    say("aggregating to every hierarchy level")
    return assemble(leaves, spec, name)
