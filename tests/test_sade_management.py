"""A device's management interface is how Faultline reaches it, not part of the network it diagnoses.

A network reached over SSH shows its management plane in every device's output: an interface with its
own neighbours (on the lab's management network, a permanent one). A recorded healthy incident with that
plane added stays healthy when the devices name the interface as management, and would not otherwise.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from faultline.network import snapshot as snap
from faultline.network.snapshot_backend import snapshot_backend
from faultline.sade.engine import diagnose

REPO = Path(__file__).resolve().parents[1]
HEALTHY = REPO / "data/sample/backlog/sample-backlog-047"
MGMT = {"ifindex": 99, "ifname": "mgmt0", "flags": ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"], "mtu": 1500,
        "qdisc": "noqueue", "operstate": "UP", "link_type": "ether", "address": "02:fe:ac:1f:fe:09",
        "broadcast": "ff:ff:ff:ff:ff:ff", "addr_info": []}
GATEWAY = {"dst": "172.31.254.1", "dev": "mgmt0", "lladdr": "02:fe:ac:1f:fe:01", "state": ["PERMANENT"]}


def _with_management_plane(name: str, folder: Path, out: Path, *, named: bool) -> Path:
    recorded = snap.load(folder / name)
    commands = []
    for c in recorded.commands:
        tail = c.argv[4:] if c.argv[:3] == ["ip", "netns", "exec"] else []
        if tail in (["ip", "-j", "addr", "show"], ["ip", "-j", "neigh", "show"]) and c.stdout.strip():
            rows = json.loads(c.stdout) + [MGMT if tail[2] == "addr" else GATEWAY]
            c = c.model_copy(update={"stdout": json.dumps(rows)})
        commands.append(c)
    devices = [dict(d, management=["mgmt0"]) if named else d for d in recorded.devices]
    snap.save(recorded.model_copy(update={"commands": commands, "devices": devices}), out / name)
    return out / name


def _diagnose(tmp_path: Path, *, named: bool):
    folder = tmp_path / ("named" if named else "unnamed")
    folder.mkdir()
    shutil.copy(HEALTHY / "ticket.json", folder / "ticket.json")
    for name in ("snapshot.json.gz", "baseline.json.gz"):
        _with_management_plane(name, HEALTHY, folder, named=named)
    return diagnose(snapshot_backend(folder / "snapshot.json.gz"), incident_id="mgmt", ticket="").submission


def test_a_healthy_network_with_its_management_plane_stays_healthy(tmp_path):
    assert diagnose(snapshot_backend(HEALTHY / "snapshot.json.gz"), incident_id="x", ticket="").submission.v1 \
        .is_anomaly is False
    assert _diagnose(tmp_path, named=True).v1.is_anomaly is False


def test_unnamed_the_management_plane_would_read_as_a_fault(tmp_path):
    """The same output without `management` on the devices: the permanent neighbour looks like ARP poisoning."""
    sub = _diagnose(tmp_path, named=False)
    assert sub.v1.is_anomaly is True
