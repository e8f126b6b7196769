"""The probe registry: the allowlist of read-only probes by name, and what every probe takes and returns.

`register(name)` adds a probe (built-ins register the same way as any other); a second probe under a
name already taken is refused, never silently swapped in. `run_probe` (in `faultline.network.probes`)
is the only caller of what is registered here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, SerializeAsAny

from faultline.errors import FaultlineError
from faultline.network.devices import DeviceDirectory
from faultline.network.records import Record
from faultline.network.runner import CommandResult, Runner


class ProbeOutput(BaseModel):
    """What every probe returns: the typed record, the raw text and the command that produced it."""

    model_config = ConfigDict(extra="forbid")

    probe: str
    device: str | None  # None for lab-wide probes (reachability)
    args: dict[str, Any]
    record: SerializeAsAny[Record]
    raw: str
    result: CommandResult | None  # None for probes that aggregate many commands


@dataclass
class ProbeContext:
    """What probes run against: the device directory, the runner and each device's readable file roots."""

    directory: DeviceDirectory
    runner: Runner = field(default_factory=Runner)
    file_roots: Mapping[str, Sequence[str]] = field(default_factory=dict)  # device -> allowed directories
    # device -> its FRR instance's vty socket dir; devices not listed are reached with `vtysh -N <namespace>`
    vty_dirs: Mapping[str, str] = field(default_factory=dict)


ProbeFunc = Callable[..., ProbeOutput]
_REGISTRY: dict[str, ProbeFunc] = {}


def register(name: str) -> Callable[[ProbeFunc], ProbeFunc]:
    """Add a probe to the allowlist under `name`; FaultlineError when the name is taken."""

    def add(func: ProbeFunc) -> ProbeFunc:
        if name in _REGISTRY:
            raise FaultlineError(f"a probe named {name!r} is already registered ({_REGISTRY[name].__module__})",
                                 fix="give the new probe another name")
        _REGISTRY[name] = func
        return func

    return add


def registered(name: str) -> ProbeFunc | None:
    """The probe registered under `name`, or None."""
    return _REGISTRY.get(name)


def registered_names() -> list[str]:
    """Every registered probe name, sorted."""
    return sorted(_REGISTRY)
