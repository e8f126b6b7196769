"""How probes find devices: a directory from device name to namespace, role and addresses.

The live lab's state implements it; tests and recorded snapshots can provide their own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Protocol

_DEVICE_NAME = re.compile(r"[a-z][a-z0-9_-]{0,30}")


def valid_device_name(name: str) -> bool:
    """Device names are short lower-case identifiers: nothing a shell or `ip` could misread."""
    return bool(_DEVICE_NAME.fullmatch(name))


@dataclass(frozen=True)
class Device:
    """One lab device."""

    name: str
    role: str  # router, host, switch, dns, dhcp, web, lb, client, server
    namespace: str
    addresses: tuple[str, ...] = field(default_factory=tuple)  # "10.0.1.1/24" (first is the main one)
    # interfaces of the management plane (how Faultline reaches the device), not of the network diagnosed
    management: tuple[str, ...] = field(default_factory=tuple)


class DeviceDirectory(Protocol):
    """What the probe API needs to know about the lab's devices."""

    def device(self, name: str) -> Device:
        """The device called `name`; KeyError when there is none."""
        ...

    def devices(self) -> list[Device]:
        """Every device, in a stable order."""
        ...


@dataclass
class StaticDirectory:
    """A DeviceDirectory from a fixed list (tests, snapshots)."""

    entries: list[Device]

    def device(self, name: str) -> Device:
        for entry in self.entries:
            if entry.name == name:
                return entry
        raise KeyError(name)

    def devices(self) -> list[Device]:
        return list(self.entries)
