"""What a night lends its units, once per process: a docs session with the run's docs server (ASTRA) and one SSH
connection pool per inventory (SADE and the verdict's follow-ups on the `ssh` backend). A unit closes only what it
opens itself; these stay open across the night's units and are closed with the run (or when the process exits)."""

from __future__ import annotations

import atexit
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from faultline.astra.docs_client import DocsClient
    from faultline.config import Settings
    from faultline.network.backend import Backend

_DOCS: dict[tuple[str, str], DocsClient] = {}
_POOLS: dict[str, Any] = {}  # inventory folder -> SshRunner
_LOCK = threading.Lock()


def docs_session(settings: Settings) -> DocsClient | None:
    """This process's session with the run's docs server (one per doc index), opened on first use; None when the
    index cannot be reached (the domain agent then says why in its output)."""
    from faultline.astra.docs_client import open_docs_client

    key = (str(settings.lancedb_dir), settings.docs_mcp_url)
    with _LOCK:
        client = _DOCS.get(key)
        if client is None:
            client = open_docs_client(settings)
            if client is None:
                return None
            _DOCS[key] = client
            atexit.register(client.close)
        return client


def close_docs_sessions(url: str) -> None:
    """Close this process's sessions with the docs server at `url` (a server about to stop)."""
    with _LOCK:
        clients = [_DOCS.pop(key) for key in [k for k in _DOCS if k[1] == url]]
    for client in clients:
        client.close()


def network(settings: Settings, network_backend: str) -> Backend | None:
    """A backend over this process's SSH pool for the `ssh` network backend (its own probe count, the night's
    connections); None for the others, and without an inventory: the unit opens those itself (and says what is
    missing)."""
    if network_backend != "ssh" or settings.ssh_inventory is None:
        return None
    from faultline.network.backends import NetworkTarget, open_backend

    key = str(Path(settings.ssh_inventory).resolve())
    with _LOCK:
        backend = open_backend("ssh", settings, NetworkTarget(runner=_POOLS.get(key)))
        if key not in _POOLS:
            _POOLS[key] = backend.ctx.runner
            atexit.register(backend.ctx.runner.close)
        backend.owns_runner = False
    return backend


def close_all() -> None:
    """Close everything this process lent the run's units: its docs sessions (a spawned docs server stops with its
    session) and its SSH pools. The flow calls it when the run's analysis ends; a worker process's close when the
    process exits."""
    with _LOCK:
        clients, runners = list(_DOCS.values()), list(_POOLS.values())
        _DOCS.clear()
        _POOLS.clear()
    for client in clients:
        client.close()
    for runner in runners:
        runner.close()
