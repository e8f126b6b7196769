"""A network to diagnose: a probe context (device directory + runner) and, when there is one, the healthy
baseline of the same network (a snapshot recorded before the fault). Every probe goes through `Backend.probe`,
which counts it; baseline lookups are history, not traffic, and are never counted. Open one by name with
`faultline.network.backends.open_backend`."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Literal

from faultline.network.devices import Device
from faultline.network.probes import ProbeContext, ProbeOutput, run_probe
from faultline.network.records import NotRecordedResult


@dataclass
class Backend:
    """A network to diagnose."""

    kind: Literal["snapshot", "lab", "mcp", "ssh"]
    ctx: ProbeContext
    baseline_ctx: ProbeContext | None = None
    scenario: str | None = None
    size: str | None = None
    probe_calls: int = 0
    # device -> readable files (configs, logs, resolv.conf); service names and URLs users reach
    files: dict[str, list[str]] = field(default_factory=dict)
    dns_names: list[str] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)
    offered: frozenset[str] | None = None  # probes this network can answer (None: every registered probe)
    owns_runner: bool = True  # False when the runner is lent (a pool shared by a whole run): `close` leaves it
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _baseline_cache: dict[str, ProbeOutput | None] = field(default_factory=dict, repr=False)

    def devices(self) -> list[Device]:
        """Every device of the network, in a stable order."""
        return self.ctx.directory.devices()

    def device(self, name: str) -> Device:
        return self.ctx.directory.device(name)

    def offers(self, name: str) -> bool:
        """Whether this network can answer probe `name` at all (a snapshot recorded before a probe existed
        cannot): asking costs nothing."""
        return self.offered is None or name in self.offered

    def probe(self, name: str, /, **args: Any) -> ProbeOutput:
        """Run one probe on the network (counted). A snapshot that lacks the call answers NotRecordedResult."""
        with self._lock:
            self.probe_calls += 1
        return run_probe(self.ctx, name, **args)

    def baseline(self, name: str, /, **args: Any) -> ProbeOutput | None:
        """The same probe answered from the healthy baseline; None without a baseline or when it lacks the call."""
        if self.baseline_ctx is None:
            return None
        key = name + repr(sorted(args.items()))
        if key not in self._baseline_cache:
            out = run_probe(self.baseline_ctx, name, **args)
            self._baseline_cache[key] = None if isinstance(out.record, NotRecordedResult) else out
        return self._baseline_cache[key]

    def close(self) -> None:
        """Release what this backend holds open (SSH connections, an MCP session) unless its runner is lent."""
        close = getattr(self.ctx.runner, "close", None)
        if self.owns_runner and callable(close):
            close()

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
