"""Figures for reports, drawn without pyplot.

A :class:`matplotlib.figure.Figure` with its own Agg canvas renders to PNG whatever
backend the user's session has chosen, so the package never switches the backend and
never registers figures with pyplot.  matplotlib is imported on the first figure only.
"""
from __future__ import annotations

import base64
import io
from typing import Any


def new_figure(figsize: tuple[float, float]) -> Any:
    """An empty figure drawn on an Agg canvas (matplotlib imported here)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    return fig


def png_base64(fig: Any, dpi: int = 100) -> str:
    """The figure as a base64-encoded PNG (for embedding in HTML).

    Examples
    --------
    >>> fig = new_figure((2, 1))
    >>> _ = fig.subplots().plot([0, 1], [1, 0])
    >>> base64.b64decode(png_base64(fig))[:4]
    b'\\x89PNG'
    """
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return base64.b64encode(buf.getvalue()).decode("ascii")
