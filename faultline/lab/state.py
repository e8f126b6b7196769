"""Lab state: a JSON file in the lab's run dir recording everything the lab created.

Written before each thing is created (namespaces) or right after (PIDs), so `lab down` can undo a
half-built lab. It is also the live lab's DeviceDirectory for the probe API.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Literal

from faultline.lab.namespaces import LAB_PREFIX
from faultline.network.devices import Device

STATE_FILE = "state.json"
MGMT_INTERFACE = "mgmt0"  # each node's end of the management network (faultline.lab.mgmt)


@dataclass
class LabProcess:
    """A process the lab started, identified by PID (never by name)."""

    pid: int
    name: str  # "zebra", "bgpd", ...
    device: str
    namespace: str


@dataclass
class LabState:
    """Everything one lab created: namespaces, processes, files (all under `run_dir` plus `extra_paths`)."""

    scenario: str
    size: str
    run_dir: str
    started_at: str
    status: Literal["building", "healthy", "failed"] = "building"
    prefix: str = LAB_PREFIX  # the lab's namespace prefix (settings.lab_prefix when it was built)
    namespaces: list[str] = field(default_factory=list)
    device_list: list[Device] = field(default_factory=list)
    processes: list[LabProcess] = field(default_factory=list)
    # files outside run_dir the lab (or FRR on its behalf) may create; removed on down
    extra_paths: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    # faults injected and not yet recovered, as `faultline.lab.faults` records (plain JSON dicts)
    faults: list[dict] = field(default_factory=list)
    fault_counter: int = 0  # numbers each injection (fault ids stay unique across recoveries)
    # root-namespace ARP limits (gc_thresh1/2/3) before a large lab raised them; restored on down
    neigh_limits: dict[str, int] | None = None
    # the management network (`lab up --mgmt`, faultline.lab.mgmt): bridge, subnet, gateway, ssh_dir, client_key,
    # addresses {device: ip}, links {device: root-side veth}, host_keys {device: "ssh-ed25519 AAAA..."}; None without
    mgmt: dict | None = None

    # DeviceDirectory
    def device(self, name: str) -> Device:
        """The device called `name`; KeyError when there is none."""
        for entry in self.devices():
            if entry.name == name:
                return entry
        raise KeyError(name)

    def devices(self) -> list[Device]:
        """Every device, in topology order (with its management interface when the lab has a management network)."""
        if self.mgmt is None:
            return list(self.device_list)
        return [replace(d, management=(MGMT_INTERFACE,)) for d in self.device_list]

    def save(self) -> None:
        """Write the state atomically (a crash never leaves half a file)."""
        path = Path(self.run_dir) / STATE_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=2))
        os.replace(tmp, path)

    def to_json(self) -> dict:
        """A JSON-ready dict (also what `lab status --json` prints)."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> LabState:
        """Inverse of `to_json`."""
        data = dict(data)
        data["device_list"] = [
            Device(d["name"], d["role"], d["namespace"], tuple(d["addresses"]))
            for d in data["device_list"]
        ]
        data["processes"] = [LabProcess(**p) for p in data["processes"]]
        return cls(**data)


def load_state(run_dir: Path) -> LabState | None:
    """The lab state in `run_dir`, or None when there is no lab (or the file is unreadable)."""
    path = run_dir / STATE_FILE
    if not path.is_file():
        return None
    try:
        return LabState.from_json(json.loads(path.read_text()))
    except (ValueError, KeyError, TypeError):
        return None
