"""Service settings: from a TOML file's ``[service]`` section, environment variables and
command-line overrides (in that order of increasing precedence).

No token is built in: the service refuses to start without at least one.

Example ``service.toml``::

    [service]
    host = "127.0.0.1"
    port = 8000
    store = "/var/lib/tabprotect/jobs.sqlite"   # job records (SQLite); files next to it
    tokens_file = "/etc/tabprotect/tokens"      # one token per line (or tokens = [...])
    workers = 2                                 # jobs run at the same time
    max_request_mb = 200                        # per request (spec + uploads)
    upload_retention_hours = 24                 # uploaded inputs deleted this long after
                                                # the job ended (0: right away)
    result_retention_days = 30                  # whole job (results too); 0 = keep
"""
from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

from tabprotect.errors import InputError

ENV_TOKENS = "TABPROTECT_TOKENS"          # comma-separated
ENV_STORE = "TABPROTECT_STORE"
DEFAULT_STORE = Path("tabprotect-service") / "jobs.sqlite"


@dataclass(frozen=True)
class ServiceConfig:
    """Settings of the HTTP service.

    Attributes
    ----------
    store : SQLite file of job records; job folders live in ``<store dir>/jobs/``
    tokens : accepted bearer tokens
    workers : size of the worker pool (jobs running at the same time)
    pool : ``"process"`` (each job in a worker process) or ``"thread"``
    max_request_bytes : largest accepted request body (413 above)
    max_files : most files in one submission
    upload_retention_seconds : uploaded inputs are deleted this long after the job ended
    result_retention_seconds : a whole job (record and results) is deleted this long after
        it ended; 0 keeps results
    cleanup_interval_seconds : how often retention is enforced
    """

    host: str = "127.0.0.1"
    port: int = 8000
    store: Path = DEFAULT_STORE
    tokens: tuple[str, ...] = field(default=(), repr=False)
    workers: int = 2
    pool: str = "process"
    max_request_bytes: int = 200 * 2**20
    max_files: int = 20
    upload_retention_seconds: float = 24 * 3600.0
    result_retention_seconds: float = 30 * 24 * 3600.0
    cleanup_interval_seconds: float = 60.0
    log_level: str = "info"

    @property
    def jobs_dir(self) -> Path:
        return Path(self.store).parent / "jobs"

    def check(self) -> "ServiceConfig":
        if not self.tokens:
            raise InputError(f"the service needs at least one API token: set {ENV_TOKENS} "
                             f"or 'tokens'/'tokens_file' in the [service] section")
        if any(len(t) < 8 for t in self.tokens):
            raise InputError("API tokens must be at least 8 characters long")
        if self.workers < 1:
            raise InputError("service: workers must be at least 1")
        if self.pool not in ("process", "thread"):
            raise InputError("service: pool must be 'process' or 'thread'")
        if self.max_request_bytes <= 0:
            raise InputError("service: max_request_mb must be positive")
        return self


def _read_tokens_file(path: Path) -> list[str]:
    if not path.is_file():
        raise InputError(f"{path}: tokens file not found")
    return [line.strip() for line in path.read_text().splitlines()
            if line.strip() and not line.startswith("#")]


def load_config(path: str | Path | None = None, **overrides) -> ServiceConfig:
    """Settings from a TOML file (``[service]``), the environment and ``overrides``.

    Examples
    --------
    >>> load_config(tokens=("a-long-token",), port=9000).port
    9000
    """
    values: dict = {}
    tokens: list[str] = []
    if path is not None:
        path = Path(path)
        if not path.is_file():
            raise InputError(f"{path}: service config not found")
        try:
            spec = tomllib.loads(path.read_text()).get("service", {})
        except tomllib.TOMLDecodeError as exc:
            raise InputError(f"{path.name}: not valid TOML ({exc})") from None
        base = path.parent
        known = {"host", "port", "store", "tokens", "tokens_file", "workers", "pool",
                 "max_request_mb", "max_files", "upload_retention_hours",
                 "result_retention_days", "cleanup_interval_seconds", "log_level"}
        unknown = set(spec) - known
        if unknown:
            raise InputError(f"{path.name} [service]: unknown key(s) {sorted(unknown)}")
        for key in ("host", "port", "workers", "pool", "max_files", "log_level",
                    "cleanup_interval_seconds"):
            if key in spec:
                values[key] = spec[key]
        if "store" in spec:
            store = Path(spec["store"])
            values["store"] = store if store.is_absolute() else base / store
        if "max_request_mb" in spec:
            values["max_request_bytes"] = int(float(spec["max_request_mb"]) * 2**20)
        if "upload_retention_hours" in spec:
            values["upload_retention_seconds"] = float(spec["upload_retention_hours"]) * 3600
        if "result_retention_days" in spec:
            values["result_retention_seconds"] = float(spec["result_retention_days"]) * 86400
        tokens += [str(t) for t in spec.get("tokens", [])]
        if "tokens_file" in spec:
            tf = Path(spec["tokens_file"])
            tokens += _read_tokens_file(tf if tf.is_absolute() else base / tf)
    env_tokens = os.environ.get(ENV_TOKENS, "")
    tokens += [t.strip() for t in env_tokens.split(",") if t.strip()]
    if os.environ.get(ENV_STORE):
        values["store"] = Path(os.environ[ENV_STORE])
    if "tokens" in overrides:
        tokens += list(overrides.pop("tokens"))
    values.update(overrides)
    if "store" in values:
        values["store"] = Path(values["store"])
    config = replace(ServiceConfig(), **values, tokens=tuple(dict.fromkeys(tokens)))
    return config
