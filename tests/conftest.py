"""Shared test helpers."""
from __future__ import annotations

import os

try:
    from hypothesis import settings as _hypothesis_settings
except ImportError:  # pragma: no cover - hypothesis is in the test extra
    _hypothesis_settings = None

if _hypothesis_settings is not None:
    # CI (.ci/run sets TABPROTECT_CI=1) draws the same examples on every run, so that a
    # red CI always means a change broke something; local runs keep drawing new ones,
    # which is how the property tests find new bugs
    _hypothesis_settings.register_profile("ci", derandomize=True)
    if os.environ.get("TABPROTECT_CI") == "1":
        _hypothesis_settings.load_profile("ci")
