"""Service settings: from a TOML file's ``[service]`` section, environment variables and
command-line overrides (in that order of increasing precedence).

Callers are **principals**: each has a name and the SHA-256 of its bearer token (the
configuration holds token hashes, never tokens). No token is built in: the service refuses
to start without at least one principal.

Example ``service.toml``::

    [service]
    host = "127.0.0.1"
    port = 8000
    store = "/var/lib/tabprotect/jobs.sqlite"   # job records (SQLite); files next to it
    workers = 2                                 # jobs run at the same time
    max_request_mb = 200                        # per request (spec + uploads)
    max_cells = 5000000                         # cells of a job's tables (422 above)
    upload_retention_hours = 24                 # uploaded inputs deleted this long after
                                                # the job ended (0: right away)
    result_retention_days = 30                  # whole job (results too); 0 = keep

    [service.principals.alice]
    token_sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

    [service.principals.ops]
    token_sha256 = "..."
    admin = true                                # may list every principal's jobs

``TABPROTECT_TOKENS`` (comma-separated tokens) adds one principal per token.
"""
from __future__ import annotations

import hashlib
import os
import re
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

from tabprotect.errors import InputError, read_input_text

ENV_TOKENS = "TABPROTECT_TOKENS"          # comma-separated
ENV_STORE = "TABPROTECT_STORE"
DEFAULT_STORE = Path("tabprotect-service") / "jobs.sqlite"
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def hash_token(token: str) -> str:
    """The SHA-256 (hex) a configuration holds for a bearer token.

    Examples
    --------
    >>> hash_token("test")
    '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08'
    """
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Principal:
    """A caller of the service.

    Attributes
    ----------
    name : owner name recorded with each of its jobs (stable across restarts)
    token_sha256 : SHA-256 (hex) of its bearer token
    admin : may list every principal's jobs (reading them still needs ownership)
    """

    name: str
    token_sha256: str = field(repr=False)
    admin: bool = False


# a bearer token is the whole of a caller's identity: short ones are guessable
MIN_TOKEN_LENGTH = 16
# a documentation placeholder, refused so a copied example does not become a login
PLACEHOLDER_TOKEN = "change-me"


def token_principal(token: str) -> Principal:
    """The principal of a plain token (``TABPROTECT_TOKENS``, ``tokens_file``): named after
    a hash of the token, so its jobs stay its own across restarts."""
    if len(token) < MIN_TOKEN_LENGTH:
        raise InputError(f"API tokens must be at least {MIN_TOKEN_LENGTH} characters long")
    if token.startswith(PLACEHOLDER_TOKEN):
        raise InputError("API token: the documentation's placeholder is not a token; "
                         "make one, e.g. python3 -c 'import secrets; "
                         "print(secrets.token_urlsafe(24))'")
    digest = hash_token(token)
    return Principal(name="token-" + hash_token("principal:" + digest)[:12],
                     token_sha256=digest)


@dataclass(frozen=True)
class ServiceConfig:
    """Settings of the HTTP service.

    Attributes
    ----------
    store : SQLite file of job records; job folders live in ``<store dir>/jobs/``
    principals : who may call the service (token hashes)
    workers : size of the worker pool (jobs running at the same time)
    pool : ``"process"`` (each worker a process that dies with the server) or ``"thread"``
        (workers in the server process: for tests; no isolation, no job time-out)
    max_request_bytes : largest accepted request body (413 above)
    max_files : most files in one submission
    max_columns : most columns in one uploaded data file (header read before parsing)
    max_rows : most data rows in one uploaded data file
    max_cells : most cells the tables of one job may have (linked tables summed), counted
        from the hierarchies' sizes before any table is made
    max_queued_per_principal : jobs queued or running per principal (429 above)
    max_time_limit : largest ``time_limit`` a job spec may give (seconds)
    max_job_seconds : a job running longer is stopped (its worker killed) and failed
    heartbeat_seconds : how often a worker renews the lease of its job
    lease_seconds : a lease not renewed for this long counts as abandoned
    max_attempts : a job whose worker died is run again until it was started this often
    upload_retention_seconds : uploaded inputs are deleted this long after the job ended
    result_retention_seconds : a whole job (record and results) is deleted this long after
        it ended; 0 keeps results
    cleanup_interval_seconds : how often retention is enforced
    dask : the address of a Dask scheduler (``tcp://host:8786``) that runs the jobs'
        parallel work (docs/scale-out.md); None: local processes
    """

    host: str = "127.0.0.1"
    port: int = 8000
    store: Path = DEFAULT_STORE
    principals: tuple[Principal, ...] = field(default=(), repr=False)
    workers: int = 2
    pool: str = "process"
    max_request_bytes: int = 200 * 2**20
    max_files: int = 20
    max_columns: int = 1000
    max_rows: int = 5_000_000
    max_cells: int = 5_000_000
    max_queued_per_principal: int = 20
    max_time_limit: float = 3600.0
    max_job_seconds: float = 4 * 3600.0
    heartbeat_seconds: float = 1.0
    lease_seconds: float = 15.0
    max_attempts: int = 2
    upload_retention_seconds: float = 24 * 3600.0
    result_retention_seconds: float = 30 * 24 * 3600.0
    cleanup_interval_seconds: float = 60.0
    log_level: str = "info"
    dask: str | None = None

    @property
    def jobs_dir(self) -> Path:
        return Path(self.store).parent / "jobs"

    def check(self) -> "ServiceConfig":
        for key in _INTEGERS:
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int):
                raise InputError(f"service: {key} must be an integer")
        for key in _NUMBERS:
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise InputError(f"service: {key} must be a number")
        for key in ("host", "pool", "log_level"):
            if not isinstance(getattr(self, key), str):
                raise InputError(f"service: {key} must be a string")
        if not self.principals:
            raise InputError(f"the service needs at least one API token: set {ENV_TOKENS} "
                             f"or [service.principals.NAME] token_sha256 in the config")
        names = [p.name for p in self.principals]
        if len(set(names)) != len(names):
            raise InputError("service: two principals have the same name")
        hashes = [p.token_sha256 for p in self.principals]
        if len(set(hashes)) != len(hashes):
            raise InputError("service: two principals have the same token")
        for key in ("workers", "max_files", "max_columns", "max_rows", "max_cells",
                    "max_queued_per_principal", "max_attempts"):
            if getattr(self, key) < 1:
                raise InputError(f"service: {key} must be at least 1")
        if self.pool not in ("process", "thread"):
            raise InputError("service: pool must be 'process' or 'thread'")
        if self.max_request_bytes <= 0:
            raise InputError("service: max_request_mb must be positive")
        for key in ("max_time_limit", "max_job_seconds", "heartbeat_seconds"):
            if not getattr(self, key) > 0:
                raise InputError(f"service: {key} must be positive")
        if self.dask is not None and "://" not in str(self.dask):
            raise InputError("service: dask must be a scheduler address like "
                             "tcp://host:8786")
        if self.lease_seconds < 3 * self.heartbeat_seconds:
            raise InputError("service: lease_seconds must be at least 3 heartbeat_seconds")
        return self


#: settings that are whole numbers, and those that are numbers (checked before use: a
#: string in the TOML file is one line naming the key, not a traceback)
_INTEGERS = ("port", "workers", "max_request_bytes", "max_files", "max_columns", "max_rows",
             "max_cells", "max_queued_per_principal", "max_attempts")
_NUMBERS = ("max_time_limit", "max_job_seconds", "heartbeat_seconds", "lease_seconds",
            "upload_retention_seconds", "result_retention_seconds",
            "cleanup_interval_seconds")


def _number(spec: dict, key: str, source: str) -> float:
    value = spec[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{source} [service]: {key} must be a number")
    return float(value)


def _read_tokens_file(path: Path) -> list[str]:
    if not path.is_file():
        raise InputError(f"{path.name}: tokens file not found")
    return [line.strip() for line in read_input_text(path, "tokens file").splitlines()
            if line.strip() and not line.startswith("#")]


def _principals(spec: dict, source: str) -> list[Principal]:
    table = spec.get("principals", {})
    if not isinstance(table, dict):
        raise InputError(f"{source} [service.principals]: must be a table of principals")
    out = []
    for name, entry in table.items():
        where = f"{source} [service.principals.{name}]"
        if not _NAME.match(name):
            raise InputError(f"{where}: a name is letters, digits, '.', '_' or '-'")
        if not isinstance(entry, dict) or set(entry) - {"token_sha256", "admin"}:
            raise InputError(f"{where}: keys are token_sha256 and admin")
        digest = str(entry.get("token_sha256", "")).lower()
        if not _HEX64.match(digest):
            raise InputError(f"{where}: token_sha256 must be 64 hex digits (the SHA-256 "
                             f"of the token; see docs/service.md)")
        out.append(Principal(name=name, token_sha256=digest, admin=bool(entry.get("admin"))))
    return out


_SCALARS = {"host": "host", "port": "port", "workers": "workers", "pool": "pool",
            "max_files": "max_files", "max_columns": "max_columns", "max_rows": "max_rows",
            "max_cells": "max_cells",
            "max_queued_per_principal": "max_queued_per_principal",
            "max_time_limit": "max_time_limit", "max_job_seconds": "max_job_seconds",
            "heartbeat_seconds": "heartbeat_seconds", "lease_seconds": "lease_seconds",
            "max_attempts": "max_attempts", "log_level": "log_level", "dask": "dask",
            "cleanup_interval_seconds": "cleanup_interval_seconds"}


def load_config(path: str | Path | None = None, **overrides) -> ServiceConfig:
    """Settings from a TOML file (``[service]``), the environment and ``overrides``
    (``tokens=[...]`` adds one principal per plain token).

    Examples
    --------
    >>> load_config(tokens=("a-long-token-0123",), port=9000).port
    9000
    """
    values: dict = {}
    principals: list[Principal] = []
    tokens: list[str] = []
    if path is not None:
        path = Path(path)
        if not path.is_file():
            raise InputError(f"{path.name}: service config not found")
        try:
            spec = tomllib.loads(read_input_text(path, "service config")).get("service", {})
        except tomllib.TOMLDecodeError as exc:
            raise InputError(f"{path.name}: not valid TOML ({exc})") from None
        base = path.parent
        known = set(_SCALARS) | {"store", "principals", "tokens_file", "max_request_mb",
                                 "upload_retention_hours", "result_retention_days"}
        if "tokens" in spec:
            raise InputError(f"{path.name} [service]: 'tokens' is not accepted (the "
                             f"configuration holds token hashes): give "
                             f"[service.principals.NAME] token_sha256")
        unknown = set(spec) - known
        if unknown:
            raise InputError(f"{path.name} [service]: unknown key(s) {sorted(unknown)}")
        values.update({_SCALARS[k]: spec[k] for k in _SCALARS if k in spec})
        if "store" in spec:
            store = Path(spec["store"])
            values["store"] = store if store.is_absolute() else base / store
        if "max_request_mb" in spec:
            values["max_request_bytes"] = int(_number(spec, "max_request_mb", path.name)
                                              * 2**20)
        if "upload_retention_hours" in spec:
            values["upload_retention_seconds"] = _number(spec, "upload_retention_hours",
                                                         path.name) * 3600
        if "result_retention_days" in spec:
            values["result_retention_seconds"] = _number(spec, "result_retention_days",
                                                         path.name) * 86400
        principals += _principals(spec, path.name)
        if "tokens_file" in spec:
            tf = Path(spec["tokens_file"])
            tokens += _read_tokens_file(tf if tf.is_absolute() else base / tf)
    tokens += [t.strip() for t in os.environ.get(ENV_TOKENS, "").split(",") if t.strip()]
    if os.environ.get(ENV_STORE):
        values["store"] = Path(os.environ[ENV_STORE])
    tokens += list(overrides.pop("tokens", ()))
    principals += list(overrides.pop("principals", ()))
    principals += [token_principal(t) for t in dict.fromkeys(tokens)]
    values.update(overrides)
    if "store" in values:
        values["store"] = Path(values["store"])
    return replace(ServiceConfig(), **values, principals=tuple(principals))
