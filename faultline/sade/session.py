"""One diagnosis in progress: memoised probe calls, the step log and the flags found so far.

Scans call `Session.probe`; the same probe with the same arguments is asked of the network once per
diagnosis (a second ask is answered from memory and not counted). Every network call becomes a
`Step` with the phase that asked for it, a digest of its output and how long it took.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from typing import Any

from faultline.network.backend import Backend
from faultline.network.devices import Device
from faultline.network.probes import ProbeOutput
from faultline.network.records import NotRecordedResult
from faultline.sade.records import Flag, Step


def _key(name: str, args: dict[str, Any]) -> str:
    return name + json.dumps(args, sort_keys=True)


@dataclass(frozen=True)
class Breadth:
    """How far the second look asks after an answer: from how many user positions the answer leaves reachable
    (0 = every one), how many pages each, whether the answered devices get a look of their own, whether the routing
    tables' leads are followed (settings `sade_second_look_users`, `sade_second_look_pages`,
    `sade_second_look_own_device`, `sade_second_look_sweep`, `sade_second_look_routes`)."""

    users: int = 0
    pages: int = 1
    own_device: str = "silenced"  # the answered devices' own look: off | silenced (cut off from every peer) | always
    sweep: bool = False  # every check on every device after the answer (the flat scan's cost)
    routes: str = "seen"  # the routing tables' leads after the answer: off | seen | first_hop (sade.route_look)


@dataclass
class Session:
    """A diagnosis's working memory over one backend."""

    backend: Backend
    ticket: str = ""  # what the user reported (title, description), when the incident has a ticket
    breadth: Breadth = field(default_factory=Breadth)
    steps: list[Step] = field(default_factory=list)
    flags: list[Flag] = field(default_factory=list)
    phase: str = "initial"
    _memo: dict[str, ProbeOutput] = field(default_factory=dict)
    _flag_keys: set[tuple[str | None, str, str]] = field(default_factory=set)

    @property
    def probe_calls(self) -> int:
        return sum(step.probe_calls for step in self.steps)

    def devices(self, *roles: str) -> list[Device]:
        """Devices of the network, optionally only those with one of `roles`."""
        devices = self.backend.devices()
        return [d for d in devices if not roles or d.role in roles]

    def device(self, name: str) -> Device:
        return self.backend.device(name)

    def probe(self, name: str, /, note: str = "", **args: Any) -> ProbeOutput | None:
        """Ask the network once; None when the backend cannot answer this call (not recorded)."""
        key = _key(name, args)
        if key not in self._memo:
            t0 = time.perf_counter()
            out = self.backend.probe(name, **args)
            elapsed = (time.perf_counter() - t0) * 1000
            digest = hashlib.sha256(out.raw.encode()).hexdigest()[:16]
            self.steps.append(Step(seq=len(self.steps) + 1, phase=self.phase, tool=name, args=args,  # type: ignore[arg-type]
                                   output_digest=digest, probe_calls=1, elapsed_ms=round(elapsed, 2), note=note))
            self._memo[key] = out
        out = self._memo[key]
        return None if isinstance(out.record, NotRecordedResult) else out

    def seen(self, name: str, /, **args: Any) -> ProbeOutput | None:
        """A probe output this diagnosis already has (never asks the network)."""
        out = self._memo.get(_key(name, args))
        return None if out is None or isinstance(out.record, NotRecordedResult) else out

    def baseline(self, name: str, /, **args: Any) -> ProbeOutput | None:
        """The healthy baseline's answer to the same probe (free), or None."""
        return self.backend.baseline(name, **args)

    def flag(self, flag: Flag) -> None:
        """Keep a flag (once per device, kind and evidence) and note it on the last step."""
        key = (flag.device, flag.kind, flag.evidence)
        if key in self._flag_keys:
            return
        self._flag_keys.add(key)
        self.flags.append(flag)
        if self.steps and flag.kind not in self.steps[-1].flags:
            self.steps[-1].flags.append(flag.kind)

    def has(self, kind: str, device: str | None = None) -> bool:
        return any(f.kind == kind and (device is None or f.device == device) for f in self.flags)
