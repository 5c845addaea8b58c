"""Risk-utility (R-U) map over perturbation methods and parameters.

Risk: the file-level identification risk of the perturbed sample under
misclassification (Shlomo & Skinner 2010; ``tau2_misclassified`` of
:func:`misclassification_risk`, with ``M`` = the PRAM matrix transposed or the
matrix implied by swapping).  Utility loss: information loss of frequency
tables built (pandas crosstab/groupby) from the original and the perturbed
microdata.  The two measures below mirror ``tabprotect.infoloss`` (DESIGN
section 7) and are kept private here so that this module does not depend on it:

* Hellinger distance ``HD = (1/K) sum_k sqrt(sum_c (sqrt(D_pert) - sqrt(D_orig))^2) / sqrt(2)``
* average absolute distance per cell ``AAD = (1/K) sum_k sum_c |D_pert - D_orig| / n_k``
  (``n_k`` = number of cells of table k)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from tabprotect.figures import new_figure

from ._validate import check_columns, draw_seed
from .misclassification import misclassification_risk
from .pram import invariant_pram, pram
from .swapping import swap

__all__ = ["table_counts", "info_loss_tables", "RUMap", "ru_map", "plot_ru_map"]


def table_counts(original: pd.DataFrame, perturbed: pd.DataFrame, variables: Sequence[str],
                 weights: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Cell counts (or weighted totals) of the table ``variables`` from both files,
    aligned on the union of cells (absent cells count 0)."""
    variables = check_columns(original, variables, "table")
    check_columns(perturbed, variables, "table")

    def tab(df):
        if weights is None:
            return df.groupby(variables, dropna=False, observed=True).size()
        return df.groupby(variables, dropna=False, observed=True)[weights].sum()

    a, b = tab(original), tab(perturbed)
    idx = a.index.union(b.index)
    return (a.reindex(idx, fill_value=0).to_numpy(dtype=float),
            b.reindex(idx, fill_value=0).to_numpy(dtype=float))


def _hellinger(orig: np.ndarray, pert: np.ndarray) -> float:
    return float(np.sqrt(np.sum((np.sqrt(pert) - np.sqrt(orig)) ** 2)) / np.sqrt(2.0))


def _aad(orig: np.ndarray, pert: np.ndarray) -> float:
    return float(np.sum(np.abs(pert - orig)) / max(orig.size, 1))


def info_loss_tables(original: pd.DataFrame, perturbed: pd.DataFrame, tables: Sequence[Sequence[str]],
                     weights: str | None = None) -> dict:
    """Hellinger distance and AAD averaged over the tables ``tables`` (lists of columns).

    Examples
    --------
    >>> a = pd.DataFrame({"x": [1, 1, 2, 2]}); b = pd.DataFrame({"x": [1, 2, 2, 2]})
    >>> info_loss_tables(a, b, [["x"]])["aad"]
    1.0
    """
    hd, aad = [], []
    for t in tables:
        o, p = table_counts(original, perturbed, [t] if isinstance(t, str) else t, weights)
        hd.append(_hellinger(o, p))
        aad.append(_aad(o, p))
    return {"hellinger": float(np.mean(hd)), "aad": float(np.mean(aad))}


@dataclass
class RUMap:
    """One row per method/parameter: risk, information loss and the seed of its draws.

    Attributes
    ----------
    frame : one row per point (the ``seed`` column: the seed its perturbation ran with)
    keys, tables : the key variables of the risk and the tables of the information loss
    params : the sampling fraction, the model and the ``seed`` the map ran with (drawn
        when none was given): ``ru_map(..., seed=params["seed"])`` repeats the map.  The
        seeds are confidential (with them an intruder repeats the draws): they go to the
        confidential report, never to summary.json or the trail
    """

    frame: pd.DataFrame
    keys: list[str]
    tables: list
    params: dict = field(default_factory=dict)

    def plot(self, path=None, loss: str = "hellinger", risk: str = "tau2_misclassified"):
        return plot_ru_map(self.frame, path, loss=loss, risk=risk)


def _label(spec: dict) -> str:
    parts = [spec.get("method", "?")]
    for k in ("d", "a", "rate"):
        if k in spec:
            parts.append(f"{k}={spec[k]}")
    if spec.get("risk") is not None:
        parts.append("targeted")
    return " ".join(parts)


def ru_map(data: pd.DataFrame, keys: Sequence[str], tables: Sequence[Sequence[str]], methods: Sequence[dict],
           sampling_fraction, model="main", seed: int | None = None, weights: str | None = None) -> RUMap:
    """Risk and information loss of several perturbations of ``data``.

    Parameters
    ----------
    data : the original sample microdata.
    keys : key variables for the risk.
    tables : tables (lists of columns) on which information loss is measured.
    methods : one dict per point, e.g. ``{"method": "pram", "variables": ["age"], "d": 0.8}``,
        ``{"method": "invariant_pram", "variables": ["age"], "d": 0.7, "a": 1.0}``,
        ``{"method": "swap", "variable": "region", "control": ["sex"], "rate": 0.1}``
        (add ``"risk": array`` for targeted swapping).
    sampling_fraction, model : for the log-linear risk.
    seed : point ``i`` draws with ``seed + i`` (a method's own ``"seed"`` wins); None:
        one is drawn and recorded in the result's ``params["seed"]``.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> df = pd.DataFrame({"a": rng.integers(0, 4, 300), "b": rng.integers(0, 5, 300)})
    >>> m = ru_map(df, ["a", "b"], [["a", "b"]], [{"method": "pram", "variables": ["a"], "d": 0.7}], 0.05)
    >>> list(m.frame["method"])
    ['original', 'pram']
    """
    keys = check_columns(data, keys)
    seed = draw_seed(seed)
    rows = []
    base = misclassification_risk(data, keys, {}, sampling_fraction, model=model)
    rows.append({"label": "original", "method": "original", "tau2_misclassified": base.tau2_naive,
                 "tau2_naive": base.tau2_naive, "n_sample_uniques": base.n_sample_uniques,
                 "hellinger": 0.0, "aad": 0.0, "n_changed": 0, "seed": None})
    for i, spec in enumerate(methods):
        spec = dict(spec)
        meth = spec.get("method")
        s = spec.get("seed", seed + i)
        if meth in ("pram", "invariant_pram"):
            fn = pram if meth == "pram" else invariant_pram
            kw = {k: spec[k] for k in ("P", "d", "unperturbed", "spread", "categories") if k in spec}
            if meth == "invariant_pram" and "a" in spec:
                kw["a"] = spec["a"]
            res = fn(data, spec.get("variables"), seed=s, **kw)
            pert, M, changed = res.data, res, int(sum(res.n_changed.values()))
        elif meth == "swap":
            res = swap(data, spec.get("variable"), control=spec.get("control"), rate=spec.get("rate", 0.05),
                       risk=spec.get("risk"), seed=s)
            pert, M, changed = res.data, res, res.n_records_changed
        else:
            raise ValueError(f"unknown perturbation method {meth!r} (use pram, invariant_pram or swap)")
        mr = misclassification_risk(pert, keys, M, sampling_fraction, model=model)
        il = info_loss_tables(data, pert, tables, weights)
        rows.append({"label": spec.get("label", _label(spec)), "method": meth,
                     "tau2_misclassified": mr.tau2_misclassified, "tau2_naive": mr.tau2_naive,
                     "n_sample_uniques": mr.n_sample_uniques, **il, "n_changed": changed,
                     "seed": s})
    frame = pd.DataFrame(rows)
    frame["seed"] = pd.Series([r["seed"] for r in rows], dtype=object)  # exact, not float
    return RUMap(frame=frame, keys=keys, tables=[list(t) for t in tables],
                 params={"sampling_fraction": sampling_fraction, "model": model, "seed": seed})


def plot_ru_map(frame: pd.DataFrame, path=None, loss: str = "hellinger", risk: str = "tau2_misclassified"):
    """Scatter plot risk (y) against information loss (x), one labelled point per row.

    Draws on an Agg canvas (the session's matplotlib backend is left alone); saves to
    ``path`` when given and returns the :class:`matplotlib.figure.Figure`.
    """
    fig = new_figure((6, 4.5))
    ax = fig.subplots()
    for meth, g in frame.groupby("method", sort=False):
        ax.plot(g[loss], g[risk], "o-" if len(g) > 1 else "o", label=meth)
        for _, r in g.iterrows():
            ax.annotate(str(r["label"]), (r[loss], r[risk]), fontsize=7, xytext=(3, 3),
                        textcoords="offset points")
    ax.set_xlabel(f"information loss ({loss})")
    ax.set_ylabel(f"disclosure risk ({risk})")
    ax.set_title("R-U map")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig
