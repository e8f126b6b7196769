"""Phase B — each routing daemon's own state: one protocol's daemon down while the others run.

`show running-config` is assembled from the daemons that answer, so a stopped BGP daemon's `router bgp` block
simply vanishes from it. Which daemons should answer: the protocols the baseline's running configuration showed
(and those whose own show command answered then); without a baseline, the protocols the router's configuration
files on disk set up. Each expected protocol missing from the running configuration is asked its own show
command; vtysh's "<daemon> is not running" is the daemon's own state, not a guess from the process list.

Flag: `routing_daemon_down` (attrs `protocol`, `daemon`).
"""

from __future__ import annotations

import re

from faultline.network.devices import Device
from faultline.sade.scans.common import flag
from faultline.sade.session import Session

SCAN = "frr_snapshot"
# the show command each protocol's daemon answers (the ones a recorded snapshot holds)
DAEMON_SHOWS = {"bgp": "show bgp ipv4 unicast summary json", "ospf": "show ip ospf neighbor json",
                "rip": "show ip rip status"}
CONFIG_FILES = ("frr.conf", "bgpd.conf", "ospfd.conf", "ripd.conf")  # FRR's integrated and per-daemon files
_ROUTER = re.compile(r"^router (bgp|ospf|rip)\b", re.MULTILINE)
_NOT_RUNNING = re.compile(r"(\S+) is not running")


def protocols(config: str) -> set[str]:
    """The routing protocols a configuration text sets up (`router bgp|ospf|rip` blocks)."""
    return set(_ROUTER.findall(config))


def _elsewhere(session: Session, dev: Device) -> set[str]:
    """The protocols the running configurations of the other routers this diagnosis read show (free)."""
    found: set[str] = set()
    for other in session.devices("router"):
        out = session.seen("vtysh_show", dev=other.name, command="show running-config") if other != dev else None
        if out is not None and "Current configuration" in out.raw:
            found |= protocols(out.raw)
    return found


def _expected(session: Session, dev: Device, running: set[str]) -> tuple[set[str], str]:
    """The protocols whose daemons should answer on `dev`, and where that was read. Without a baseline the
    configuration on disk is read only when the running one shows no protocol, or fewer than other routers run."""
    base = session.baseline("vtysh_show", dev=dev.name, command="show running-config")
    if base is not None and "Current configuration" in base.raw:
        found = protocols(base.raw)
        for proto, command in DAEMON_SHOWS.items():
            shown = session.baseline("vtysh_show", dev=dev.name, command=command)
            if shown is not None and not shown.record.daemon_down and not shown.record.error:
                found.add(proto)
        return found, "the baseline"
    if running and not _elsewhere(session, dev) - running:
        return running, "the running configuration"
    found, where = set(), []
    for path in session.backend.files.get(dev.name, []):
        if path.rsplit("/", 1)[-1] not in CONFIG_FILES:
            continue
        out = session.probe("read_file", dev=dev.name, path=path, note="routing configuration on disk")
        if out is not None and not out.record.error and (got := protocols(out.record.text)):
            found |= got
            where.append(path)
    return found, ", ".join(where) or "nothing"


def _routing_daemons(session: Session, dev: Device) -> None:
    """Every protocol daemon the router should run, asked its own state when the running configuration lacks it."""
    if dev.role != "router":
        return
    running = session.probe("vtysh_show", dev=dev.name, command="show running-config",
                            note="FRR running configuration")
    if running is None or "Current configuration" not in running.raw:
        return  # vtysh itself does not answer: the frr_config check says so
    now = protocols(running.raw)
    expected, where = _expected(session, dev, now)
    for proto in sorted(expected - now):
        command = DAEMON_SHOWS[proto]
        out = session.probe("vtysh_show", dev=dev.name, command=command, note=f"the {proto} daemon's own state")
        if out is None:
            continue
        if out.record.daemon_down:
            m = _NOT_RUNNING.search(out.raw)
            daemon = m.group(1) if m else proto
            flag(session, SCAN, dev, "routing_daemon_down", f"`{command}`: {out.raw.strip()[:120]} (router {proto} "
                 f"set up in {where}; the running configuration lacks it)", family="frr", protocol=proto,
                 daemon=daemon, vs_baseline=where == "the baseline")


CHECKS = [_routing_daemons]
