"""The service run in-process for tests: uvicorn in a background thread on a free port."""
from __future__ import annotations

import contextlib
import socket
import threading
import time
from pathlib import Path

import uvicorn

from tabprotect.service.app import create_app
from tabprotect.service.config import load_config


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve(store: Path, token: str, **settings):
    """Run the app (settings as ``load_config`` takes them) until the block ends; yield
    its base URL."""
    port = free_port()
    config = load_config(tokens=[token], store=store, port=port, **settings)
    server = uvicorn.Server(uvicorn.Config(create_app(config), host="127.0.0.1", port=port,
                                           log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "server did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        assert not thread.is_alive(), "server did not stop"
