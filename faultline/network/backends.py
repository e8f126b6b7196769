"""The network-backend registry: how a diagnosis gets a network to probe, by name (`open_backend`).

Built-ins and other packages declare backends as entry points of `faultline.network_backends`, or register them in
code; a taken name is refused. Usage and rules: docs/network.md#backends-and-their-registry.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any

from faultline.errors import FaultlineError
from faultline.network.backend import Backend

if TYPE_CHECKING:
    from faultline.config import Settings

ENTRY_POINT_GROUP = "faultline.network_backends"


@dataclass(frozen=True)
class NetworkTarget:
    """Which network to open; each backend reads what it needs and names what is missing."""

    incident_id: str | None = None  # for messages
    snapshot: Path | None = None  # snapshot: the incident's recording (a file, or its incident folder)
    use_baseline: bool = True  # snapshot: compare with the healthy baseline recorded beside it
    inventory: Path | None = None  # ssh: the inventory folder (default: the ssh_inventory setting)
    url: str | None = None  # mcp: a server URL or a command line that starts one
    runner: Any = None  # ssh: a connection pool to share; its owner closes it, not the backend


Opener = Callable[["Settings", NetworkTarget], Backend]
_OPENERS: dict[str, Opener] = {}
_LOCK = threading.Lock()


def register_backend(name: str, opener: Opener) -> None:
    """Add a network backend under `name`; FaultlineError when the name is taken (a built-in's included)."""
    with _LOCK:
        declared = [p.value for p in entry_points(group=ENTRY_POINT_GROUP, name=name)]
        if name in _OPENERS or declared:
            where = _OPENERS[name].__module__ if name in _OPENERS else declared[0]
            raise FaultlineError(f"a network backend named {name!r} is already registered ({where})",
                                 fix="register the new backend under another name")
        _OPENERS[name] = opener


def _opener(name: str) -> Opener | None:
    """The opener registered under `name`, loading its entry point on first use (only that one is imported)."""
    with _LOCK:
        if name not in _OPENERS:
            declared = {p.value: p for p in entry_points(group=ENTRY_POINT_GROUP, name=name)}
            if len(declared) > 1:
                raise FaultlineError(f"two packages declare a network backend named {name!r}: {', '.join(declared)}",
                                     fix="uninstall one of them, or rename its entry point")
            if declared:
                _OPENERS[name] = next(iter(declared.values())).load()
        return _OPENERS.get(name)


def backend_names() -> list[str]:
    """Every network backend there is: registered in code or declared as an entry point, sorted."""
    return sorted(set(_OPENERS) | {p.name for p in entry_points(group=ENTRY_POINT_GROUP)})


def open_backend(name: str, settings: Settings, target: NetworkTarget | None = None) -> Backend:
    """Open the network backend `name` on `target`; the caller closes it (`Backend.close`)."""
    opener = _opener(name)
    if opener is None:
        known = backend_names()
        if not known:  # an install older than the entry points (an editable one made before they existed)
            raise FaultlineError(f"no network backend is installed, so {name!r} cannot be opened",
                                 fix="install Faultline again (`bash scripts/install.sh`): its backends are declared "
                                     "as entry points of the group faultline.network_backends")
        raise FaultlineError(f"unknown network backend {name!r}", fix=f"use one of {', '.join(known)}")
    return opener(settings, target or NetworkTarget())
