"""Census-style job steps: targeted swapping of the microdata, record keys, linked tables
tabulated from the (swapped) microdata and the cell key method on each (docs/census.md).

``[swap]`` swaps households (:func:`tabprotect.microdata.swap_targeted`); ``[cellkey]``
adds record keys where the microdata has none, tabulates the ``[microdata]`` table and the
further ``tables`` and perturbs every one with the same ptable, so a cell shared by two
tables is published once, with one value.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from tabprotect.errors import InputError
from tabprotect.io.job import Job, build_hierarchy, check_cells
from tabprotect.tabulate import read_table_file

__all__ = ["CensusRun", "read_microdata", "swap_job", "cellkey_job", "swap_settings",
           "published_frames", "summary", "keyed_table", "cellkey_settings"]


@dataclass(eq=False)
class CensusRun:
    """The microdata as released (swapped, with record keys) and the perturbed tables."""

    data: pd.DataFrame
    swap: object | None = None             # TargetedSwapResult
    tables: list = field(default_factory=list)   # CellKeyResult per table, first = [microdata]
    restored: list = field(default_factory=list)  # Restored per table (when asked)
    keys_added: bool = False


def _columns_needed(job: Job) -> list[str]:
    md, sw, ck = job.section("microdata"), job.section("swap"), job.section("cellkey")
    cols = list(md.get("dimensions") or [])
    for k, dims in enumerate(ck.get("tables", [])):
        if not (isinstance(dims, list) and dims and all(isinstance(d, str) for d in dims)):
            raise InputError(f"{job.label} [cellkey] tables[{k}]: give a list of dimension "
                             "columns")
        cols += list(dims)
    cols += list(sw.get("risk_variables", [])) + list(sw.get("similar", []))
    cols += list(sw.get("carry", [])) + list(sw.get("levels", []))
    if sw.get("geography"):
        cols.append(sw["geography"])
    return list(dict.fromkeys(c for c in cols if c != "household_size"))


def read_microdata(job: Job) -> pd.DataFrame:
    """The ``[microdata] file``, code columns read as text."""
    md = job.section("microdata")
    if "file" not in md:
        raise InputError(f"{job.label} [microdata]: give 'file' (the microdata file)")
    path = job.resolve(md["file"])
    if not path.exists():
        raise InputError(f"{job.label} [microdata]: microdata file {path.name} not found")
    needed = _columns_needed(job)
    # as text from the file on: a code such as "06" keeps its leading zero
    frame = read_table_file(path, needed)
    for c in needed:
        if c not in frame.columns:
            raise InputError(f"{path.name}: column '{c}' not found (named in {job.label})")
        frame[c] = frame[c].astype(str).str.strip()
    return frame


def _input_error(job: Job, label: str, exc: ValueError) -> InputError:
    """A method's ValueError as one line; a bad row named by the microdata file's line
    (:func:`read_microdata` reads the file row for row)."""
    from tabprotect.microdata import RowError
    if isinstance(exc, RowError):
        return InputError(f"{label}: {exc.in_file(Path(job.section('microdata')['file']).name)}")
    return InputError(f"{label}: {exc}")


def swap_settings(job: Job, data: pd.DataFrame):
    """``(data with level columns, TargetedSwapSettings, added level columns)``."""
    from tabprotect.microdata import TargetedSwapSettings, geography_levels
    sw = job.section("swap")
    label = f"{job.label} [swap]"
    added: list[str] = []
    if "levels" in sw:
        levels = list(sw["levels"])
    elif "geography" in sw:
        geo = sw["geography"]
        h = build_hierarchy(job, geo, data[geo])
        depth = int(h.depth.max())
        added = [f"{geo}__level{d + 1}" for d in range(depth)]
        try:
            data = geography_levels(data, geo, h, added)
        except ValueError as exc:
            raise _input_error(job, label, exc) from None
        levels = added
    else:
        raise InputError(f"{label}: give 'geography' (a code column with a hierarchy) or "
                         "'levels' (geography columns, coarse to fine)")
    if not sw.get("risk_variables"):
        raise InputError(f"{label}: give 'risk_variables'")
    household = sw.get("household", job.section("microdata").get("household"))
    carry = list(sw.get("carry", []))
    if "geography" in sw and sw["geography"] not in carry:
        carry.append(sw["geography"])
    try:
        settings = TargetedSwapSettings(
            levels=tuple(levels), risk_variables=tuple(sw["risk_variables"]),
            k=int(sw.get("k", 3)), swap_rate=float(sw.get("rate", 0.05)),
            similar=tuple(sw.get("similar", [])), carry=tuple(carry), household=household,
            seed=sw.get("seed"))
    except ValueError as exc:
        raise InputError(f"{label}: {exc}") from None
    return data, settings, added


def swap_job(job: Job, data: pd.DataFrame | None = None):
    """Swap the job's microdata; returns ``(swapped data, TargetedSwapResult)``."""
    from tabprotect.microdata import swap_targeted
    data = read_microdata(job) if data is None else data
    data, settings, added = swap_settings(job, data)
    try:
        res = swap_targeted(data, settings)
    except ValueError as exc:
        raise _input_error(job, f"{job.label} [swap]", exc) from None
    return res.data.drop(columns=added), res


def cellkey_settings(job: Job, overrides: dict | None = None):
    from tabprotect.cellkey import CellKeySettings, MagnitudeNoise
    ck = {**job.section("cellkey"), **(overrides or {})}
    mag = MagnitudeNoise(m=float(ck.get("m", 0.1)), D=int(ck.get("magnitude_D", 5)),
                         V=float(ck.get("magnitude_V", 3.0)))
    return CellKeySettings(D=int(ck.get("D", 3)), V=float(ck.get("V", 2.0)),
                           js=int(ck.get("js", 0)), pstay=ck.get("pstay"),
                           mono=bool(ck.get("mono", False)),
                           key=ck.get("key", "rkey"), magnitude=mag,
                           ptable_file=str(job.resolve(ck["ptable"])) if "ptable" in ck
                           else None)


#: the [microdata] keys a cell key run reads (the others would be silently ignored)
_CELLKEY_MICRODATA_KEYS = {"file", "dimensions", "response", "name", "unknown_code",
                           "household"}


def cellkey_job(job: Job, progress=None) -> CensusRun:
    """Swap (with ``[swap]``), add record keys, tabulate every table and perturb it."""
    from tabprotect.cellkey import add_record_keys, perturb, restore_additivity, tabulate_keys
    say = progress or (lambda msg: None)
    md, ck = job.section("microdata"), job.section("cellkey")
    unused = sorted(set(md) - _CELLKEY_MICRODATA_KEYS)
    if unused:
        raise InputError(f"{job.label} [microdata] {unused[0]}: not used by the cell key "
                         "method (counts are unweighted record counts; keys used: "
                         f"{', '.join(sorted(_CELLKEY_MICRODATA_KEYS))})")
    dims = md.get("dimensions")
    if not dims:
        raise InputError(f"{job.label} [microdata]: give 'dimensions' (the first table)")
    data = read_microdata(job)
    out = CensusRun(data)
    if "swap" in job.spec:
        say("targeted record swapping")
        data, out.swap = swap_job(job, data)
    settings = cellkey_settings(job)
    if settings.key not in data.columns:
        data = add_record_keys(data, settings.key, seed=ck.get("seed"))
        out.keys_added = True
    out.data = data
    pt = settings.ptable()
    response = md.get("response")
    every = [list(dims)] + [list(t) for t in ck.get("tables", [])]
    hierarchies = {d: build_hierarchy(job, d, data[d]) for d in dict.fromkeys(sum(every, []))}
    check_cells(job, [{d: hierarchies[d] for d in t} for t in every],
                "[microdata] dimensions and [cellkey] tables")
    for k, table_dims in enumerate(every):
        say(f"table {k + 1}: tabulate and perturb")
        name = md.get("name", Path(md["file"]).stem) if k == 0 else "_x_".join(table_dims)
        table = tabulate_keys(data, {d: hierarchies[d] for d in table_dims},
                              response, key=settings.key, top_k=1, name=name,
                              unknown_code=md.get("unknown_code"))
        res = perturb(table, settings=settings, ptable=pt)
        out.tables.append(res)
        if ck.get("restore_additivity", False) and table.kind == "frequency":
            out.restored.append(restore_additivity(table, res.published, pt,
                                                   time_limit=ck.get("time_limit", 60.0)))
    return out


def published_frames(census: CensusRun) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(published, confidential cells) of every table, stacked with a ``table`` column."""
    pubs, cells = [], []
    for k, res in enumerate(census.tables):
        values = res.published
        if k < len(census.restored) and census.restored[k].values is not None:
            values = census.restored[k].values
        t = res.table
        frame = t.to_frame(())
        frame.insert(0, "table", t.name)
        pub = frame.copy()
        pub["value"] = values
        conf = frame.copy()
        conf["value"] = t.value
        conf["freq"] = t.freq
        conf["published"] = values
        conf["cell_key"] = res.cell_key
        pubs.append(pub)
        cells.append(conf)
    return pd.concat(pubs, ignore_index=True), pd.concat(cells, ignore_index=True)


def summary(census: CensusRun) -> dict:
    """Counts and ptable figures only: no cell value, no record.  A table whose additivity
    was restored gives the additivity of the restored (published) counts; that of the
    per-cell counts, which are not published, is ``additivity_before`` (withheld from the
    public summary with the figures of changes)."""
    from tabprotect.cellkey import disclosure_summary, non_additivity
    out: dict = {"record_keys_added": census.keys_added, "tables": []}
    for k, res in enumerate(census.tables):
        s = res.summary()
        s["name"] = res.table.name
        if k < len(census.restored):
            r = census.restored[k]
            s["restored"] = {"status": r.status, "total_change": r.total_change,
                             "cells_changed": r.cells_changed}
            if r.values is not None:
                s["restored"]["additivity_before"] = s["additivity"]
                s["additivity"] = non_additivity(res.table, r.values)
        out["tables"].append(s)
    if census.tables and census.tables[0].table.kind == "frequency":
        out["posterior"] = disclosure_summary(census.tables[0].ptable)
    if census.swap is not None:
        out["swap"] = census.swap.summary()
    return out


def keyed_table(job: Job, table, swapped: bool):
    """``table``'s cells tabulated again from the job's microdata with record keys (and,
    when ``swapped``, after the ``[swap]`` step), over the same hierarchies: the table the
    cell key method perturbs in a comparison."""
    from tabprotect.cellkey import add_record_keys, tabulate_keys
    if "microdata" not in job.spec:
        raise InputError(f"{job.label} [compare]: the cell key method needs [microdata]")
    if swapped and "swap" not in job.spec:
        raise InputError(f"{job.label} [compare]: swap+cellkey needs a [swap] section")
    md, ck = job.section("microdata"), job.section("cellkey")
    data = read_microdata(job)
    if swapped:
        data, _ = swap_job(job, data)
    key = ck.get("key", "rkey")
    if key not in data.columns:
        data = add_record_keys(data, key, seed=ck.get("seed"))
    dims = {d.name: d.hierarchy for d in table.dimensions}
    return tabulate_keys(data, dims, md.get("response"), key=key, top_k=1, name=table.name,
                         unknown_code=md.get("unknown_code"))
