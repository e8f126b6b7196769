"""A labelled set built from the vendor event catalogue's real samples: each root event sample becomes an incident
in a syslog archive (the sample on one device, the echoes it causes on the far end from the same platform's
samples, an unrelated event elsewhere 40 minutes before, another event on the same device after the ticket was
opened), with tickets that name the device, its far end or no device. Used by `bench/event_samples.py` and the
tests of the event chain; nothing here reads how an analysis decides.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

LINK_ROOTS = ("transceiver_removed", "interface_admin_down", "optics_loss_of_signal")
BGP_ROOTS = ("bgp_reset_operator_clear",)
DEVICE_ROOTS = ("process_crash", "fan_failure", "power_supply_failure", "temperature_alarm", "memory_alarm",
                "routing_table_error", "config_change")
ROOTS = LINK_ROOTS + BGP_ROOTS + DEVICE_ROOTS
# what the far end logs, in order of preference (the first two the platform has are used)
FAR_LINK = ("carrier_down", "line_protocol_down", "bgp_reset_hold_timer_expired", "bgp_down_interface",
            "bgp_session_down", "ospf_adjacency_lost")
FAR_BGP = ("bgp_reset_notification_received", "bgp_reset_peer_closed", "bgp_session_down")
LOCAL_LINK = ("carrier_down", "line_protocol_down", "bgp_down_interface")
START = datetime(2026, 9, 19, 6, 0, 0)
SPACING = timedelta(hours=3)
VARIANTS = ("device", "peer", "vague")

# a sample's own syslog header (priority, sequence number, timestamp, host) - the archive writes its own
_STAMP = re.compile(r"^(?:<\d+>)?(?:\d+: )?[*.]?(?:[A-Z][a-z]{2} +\d{1,2} (?:\d{4} )?\d\d:\d\d:\d\d(?:\.\d+)?"
                    r"(?: [A-Z]{2,4})?:?|\d{4}[-/]\d\d[-/]\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)\s+")
_HOST_THEN_TAG = re.compile(r"^[\w.-]+ (?=[%\w./-]+(?:\[\d+\])?: )")
_LEVEL = re.compile(r"^\[[A-Z]+\] ")  # a file logger's "[INFO] " before the program name


def body(sample: str) -> str:
    """The sample without its own syslog header (the archive's collector writes one)."""
    text = _LEVEL.sub("", _STAMP.sub("", sample.strip(), count=1), count=1)
    return _HOST_THEN_TAG.sub("", text, count=1)


@dataclass
class Case:
    """One incident: a root event sample on device `a`, the far end `b`, a bystander `c`."""

    case_id: str
    platform: str
    cls: str
    sample: str
    a: str
    b: str
    c: str
    at: datetime  # when the root event is logged
    lines: list[tuple[datetime, str, str, str]] = field(default_factory=list)  # (time, device, class, text)

    @property
    def opened(self) -> datetime:
        return self.at + timedelta(minutes=1)

    def tickets(self) -> list[dict]:
        """Tickets in Faultline's layout (plus case_id, variant): naming `a`, naming only `b`, naming no device."""
        hhmm = self.at.strftime("%H:%M")
        texts = {"device": (f"Traffic loss through {self.a}", f"Around {hhmm} traffic through {self.a} was lost; "
                                                                "customers affected. Please investigate."),
                 "peer": (f"Traffic loss through {self.b}", f"Monitoring: {self.b} lost traffic around {hhmm}. "
                                                              "Please check."),
                 "vague": ("Customers report errors", f"Several customers saw errors starting around {hhmm}.")}
        stamp = self.opened.isoformat() + "+00:00"
        return [{"ticket_id": f"{self.case_id}-{v}", "project": "NOC", "title": t, "description": d,
                 "status": "Open", "priority": "Major", "created_at": stamp, "updated_at": stamp,
                 "case_id": self.case_id, "variant": v} for v, (t, d) in texts.items()]


def _first(cat, platform: str, classes: tuple[str, ...], n: int, skip: str = "") -> list[tuple[str, str]]:
    found = []
    for cls in classes:
        if cls == skip:
            continue
        msgs = [m for m in cat.platforms[platform].messages if m.cls == cls]
        if msgs:
            found.append((cls, msgs[0].samples[0]))
        if len(found) == n:
            break
    return found


def build_cases(platforms: list[str] | None = None) -> list[Case]:
    """Every root sample of every platform (or of `platforms`) as a case, each 3 to 6 hours after the last."""
    from faultline.events.catalogue import catalogue

    cat = catalogue()
    cases: list[Case] = []
    gaps = random.Random(39)
    for platform in platforms or sorted(p for p in cat.platforms if p != "generic"):  # its samples are vendors'
        plat = cat.platforms[platform]
        for message in plat.messages:
            if message.cls not in ROOTS:
                continue
            for n, sample in enumerate(message.samples):
                # irregular gaps (seeded): cases a whole number of hours apart would let the scope's clock-offset
                # check line one device's events up with another's at a false offset, as no real archive does
                at = (cases[-1].at if cases else START) + SPACING + timedelta(seconds=gaps.randrange(0, 3 * 3600))
                key = re.sub(r"\W+", "-", f"{platform}-{message.id or message.cls}-{n}").strip("-").lower()
                case = Case(key, platform, message.cls, sample, f"{platform}-a", f"{platform}-b", f"{platform}-c", at)
                _fill(case, cat, platform)
                cases.append(case)
    return cases


def _fill(case: Case, cat, platform: str) -> None:
    add = case.lines.append
    add((case.at, case.a, case.cls, case.sample))
    if case.cls in LINK_ROOTS:
        for k, (cls, text) in enumerate(_first(cat, platform, LOCAL_LINK, 1)):
            add((case.at + timedelta(seconds=1 + k), case.a, cls, text))
        for k, (cls, text) in enumerate(_first(cat, platform, FAR_LINK, 2)):
            add((case.at + timedelta(seconds=1 + k), case.b, cls, text))
    elif case.cls in BGP_ROOTS:
        for k, (cls, text) in enumerate(_first(cat, platform, FAR_BGP, 1)):
            add((case.at + timedelta(seconds=1 + k), case.b, cls, text))
    for cls, text in _first(cat, platform, ("login_aaa",), 1):  # someone was on the device a little before
        add((case.at - timedelta(minutes=3), case.a, cls, text))
    # an unrelated event 40 minutes before, elsewhere; another on the same device after the ticket was opened
    for cls, text in _first(cat, platform, ("fan_failure", "temperature_alarm", "process_crash", "config_change"), 1,
                            skip=case.cls):
        add((case.at - timedelta(minutes=40), case.c, cls, text))
    for cls, text in _first(cat, platform, ("interface_admin_down", "transceiver_removed", "process_crash"), 1,
                            skip=case.cls):
        add((case.opened + timedelta(minutes=10), case.a, cls, text))
    for cls, text in _first(cat, platform, ("carrier_up", "line_protocol_up", "bgp_session_up"), 1):
        add((case.opened + timedelta(minutes=8), case.b, cls, text))


def write_archive(cases: list[Case], folder: Path) -> list[Path]:
    """One syslog file per device, as a collector writes them (`<ISO time> <device> <message>`), in time order."""
    folder.mkdir(parents=True, exist_ok=True)
    by_device: dict[str, list[tuple[datetime, str]]] = {}
    for case in cases:
        for at, device, _cls, text in case.lines:
            by_device.setdefault(device, []).append((at, text))
    paths = []
    for device, rows in sorted(by_device.items()):
        path = folder / f"{device}.log"
        path.write_text("".join(f"{at.isoformat()}+00:00 {device} {body(text)}\n" for at, text in sorted(rows)))
        paths.append(path)
    return paths


def write_inventory(cases: list[Case], folder: Path) -> Path:
    """A SimpleInventory: each platform's a-b and b-c linked (the far end is cabling the NOC knows)."""
    folder.mkdir(parents=True, exist_ok=True)
    hosts = []
    for n, (a, b, c) in enumerate(sorted({(case.a, case.b, case.c) for case in cases})):
        net = f"198.51.100.{4 * n}"  # documentation addresses (RFC 5737), one per host
        hosts += [f"{a}:\n  hostname: {net[:-len(str(4 * n))]}{4 * n + 1}\n  data:\n    role: router\n    links:\n"
                  f"      - {{interface: port1, peer: {b}, peer_interface: port1}}\n",
                  f"{b}:\n  hostname: {net[:-len(str(4 * n))]}{4 * n + 2}\n  data:\n    role: router\n    links:\n"
                  f"      - {{interface: port2, peer: {c}, peer_interface: port2}}\n",
                  f"{c}:\n  hostname: {net[:-len(str(4 * n))]}{4 * n + 3}\n  data:\n    role: router\n"]
    (folder / "hosts.yaml").write_text("".join(hosts))
    return folder


__all__ = ["Case", "ROOTS", "VARIANTS", "body", "build_cases", "write_archive", "write_inventory"]
