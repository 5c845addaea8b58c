"""The tabprotect HTTP service (``tabprotect serve``; see ``docs/service.md``).

FastAPI app over the same functions as the command line: jobs are submitted as a job file
plus the files it names, run in a worker pool, and recorded in an SQLite store that
survives a restart.
"""
from tabprotect.service.config import ServiceConfig, load_config

__all__ = ["ServiceConfig", "load_config", "create_app"]


def __getattr__(name):
    # FastAPI is an optional dependency: import the app only when asked for
    if name == "create_app":
        from tabprotect.service.app import create_app
        return create_app
    raise AttributeError(f"module 'tabprotect.service' has no attribute {name!r}")
