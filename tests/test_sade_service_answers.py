"""Whether a service answers, and why not; each routing daemon's own state (issue 40, item 2).

The outputs are recorded from the lab (tests/cases/service_answers/README.md): a name server stopped by SIGSTOP,
one restarted on port 5353, a router whose bgpd was killed while zebra runs. Each check reads them through the
real parsers, as a recorded snapshot would answer them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from faultline.network import parse_cpu
from faultline.network import parse_services as ps
from faultline.network.devices import Device
from faultline.network.records import FileContent, NotRecordedResult
from faultline.network.registry import ProbeOutput
from faultline.sade.matcher import match
from faultline.sade.records import Flag
from faultline.sade.scans import answers, daemons
from faultline.sade.session import Session

CASES = Path(__file__).parent / "cases" / "service_answers"
DNS = Device("dns_server", "dns", "ns-dns", ("10.1.2.10/24",))
ROUTER = Device("router1", "router", "ns-r1", ("10.0.0.0/31", "10.1.0.1/24"))
CONF = "/etc/dnsmasq.d/dnsmasq.conf"
BGPD_CONF = "/etc/frr/bgpd.conf"
SELF_QUERY = (("name", "dns.local"), ("server", "10.1.2.10"), ("src", "dns_server"))


def _text(name: str) -> str:
    return (CASES / name).read_text()


def _parse(probe: str, args: dict[str, Any], text: str) -> ProbeOutput:
    dev = args.get("dev") or args.get("src")
    record = {
        "sockets": lambda: ps.parse_ss(dev, text),
        "cpu_usage": lambda: parse_cpu.parse_cpu_usage(dev, text, 1.0),
        "dig": lambda: ps.parse_dig(dev, args["name"], args.get("server"), "A", text),
        "vtysh_show": lambda: ps.parse_vtysh(dev, args.get("command", ""), text),
        "read_file": lambda: FileContent(device=dev, path=args["path"], text=text),
    }[probe]()
    return ProbeOutput(probe=probe, device=dev, args=args, record=record, raw=text, result=None)


def _key(probe: str, args: dict[str, Any]) -> tuple:
    return probe, tuple(sorted((k, v) for k, v in args.items() if k != "interval_s"))


@dataclass
class Recorded:
    """A network answering from recorded outputs: (probe, args) -> file name; anything else is not recorded."""

    devices_: list[Device]
    now: dict[tuple, str]
    base: dict[tuple, str] = field(default_factory=dict)
    files: dict[str, list[str]] = field(default_factory=dict)
    dns_names: list[str] = field(default_factory=lambda: ["dns.local"])
    asked: list[tuple] = field(default_factory=list)

    def devices(self) -> list[Device]:
        return self.devices_

    def device(self, name: str) -> Device:
        return next(d for d in self.devices_ if d.name == name)

    def offers(self, name: str) -> bool:
        return any(key[0] == name for key in self.now)

    def probe(self, name: str, /, **args: Any) -> ProbeOutput:
        key = _key(name, args)
        self.asked.append(key)
        if key not in self.now:
            return ProbeOutput(probe=name, device=None, args=args, raw="", result=None,
                               record=NotRecordedResult(probe=name, args=args, missing=[name]))
        return _parse(name, args, _text(self.now[key]))

    def baseline(self, name: str, /, **args: Any) -> ProbeOutput | None:
        key = _key(name, args)
        return _parse(name, args, _text(self.base[key])) if key in self.base else None


def _session(net: Recorded) -> Session:
    session = Session(backend=net)  # type: ignore[arg-type]
    session.phase = "D"
    return session


def _kinds(session: Session) -> set[str]:
    return {f.kind for f in session.flags}


def _labels(session: Session, devices: list[Device]) -> set[tuple[str, str]]:
    roles = {d.name: d.role for d in devices}
    return {(label, dev) for m in match(session.flags, roles=roles) for label in [m.label] for dev in m.devices}


SOCKETS = ("sockets", (("dev", "dns_server"),))
CPU = ("cpu_usage", (("dev", "dns_server"),))
DIG = ("dig", SELF_QUERY)
BASE_SOCKETS = {SOCKETS: "dns_server.baseline.ss.txt"}


def test_ss_columns_give_the_port_and_the_processes_holding_it() -> None:
    table = ps.parse_ss("dns_server", _text("dns-rebound.ss.txt"))
    assert [ps.socket_address(s.local) for s in table.sockets] == [("10.1.2.10", 5353)] * 2
    assert ps.socket_owners(table.sockets[0].process)[0][0] == "dnsmasq"
    assert ps.socket_address("0.0.0.0%eth0:67") == ("0.0.0.0", 67)
    assert ps.socket_address("[::]:80") == ("::", 80)
    assert [x.port for x in answers.listeners(table, "udp")] == [5353]


def test_a_name_server_stopped_by_a_signal_answers_nothing_and_is_dns_service_down() -> None:
    net = Recorded([DNS], {SOCKETS: "dns-frozen.ss.txt", CPU: "dns-frozen.cpu_usage.txt",
                           DIG: "dns-frozen.self-query.txt"}, BASE_SOCKETS)
    session = _session(net)
    answers._service_answers(session, DNS)
    assert {"dns_no_answer", "service_stopped"} <= _kinds(session)
    assert "service_bound_elsewhere" not in _kinds(session)  # it still holds port 53
    assert ("dns_service_down", "dns_server") in _labels(session, [DNS])


def test_a_name_server_listening_on_another_port_is_bound_elsewhere_with_or_without_a_baseline() -> None:
    now = {SOCKETS: "dns-rebound.ss.txt", ("read_file", (("dev", "dns_server"), ("path", CONF))):
           "dns-rebound.dnsmasq.conf"}
    with_base = _session(Recorded([DNS], now, BASE_SOCKETS, files={"dns_server": [CONF]}))
    answers._service_answers(with_base, DNS)
    flag = next(f for f in with_base.flags if f.kind == "service_bound_elsewhere")
    assert flag.attrs["listening"] == [5353] and flag.attrs["port"] == 53
    assert ("dns_service_down", "dns_server") in _labels(with_base, [DNS])

    alone = _session(Recorded([DNS], now, files={"dns_server": [CONF]}))
    answers._service_answers(alone, DNS)
    flag = next(f for f in alone.flags if f.kind == "service_bound_elsewhere")
    assert "port=5353" in flag.evidence  # the configuration says why


def test_a_name_server_that_answers_itself_costs_one_query_and_raises_nothing() -> None:
    net = Recorded([DNS], {DIG: "dns_server.baseline.self-query.txt", SOCKETS: "dns-frozen.ss.txt"}, BASE_SOCKETS)
    session = _session(net)
    answers._service_answers(session, DNS)
    assert session.flags == []
    assert [key[0] for key in net.asked] == ["dig"]


def test_a_filtered_port_is_not_read_as_a_dead_service() -> None:
    net = Recorded([DNS], {SOCKETS: "dns-frozen.ss.txt", CPU: "dns-frozen.cpu_usage.txt",
                           DIG: "dns-frozen.self-query.txt"}, BASE_SOCKETS)
    session = _session(net)
    session.flag(Flag(scan="l2_snapshot", phase="A", device="dns_server", kind="acl_dns", evidence="udp dport 53 drop",
                      family="acl"))
    answers._service_answers(session, DNS)
    assert _kinds(session) == {"acl_dns"}
    assert net.asked == []


def test_an_old_recording_without_the_new_calls_says_nothing() -> None:
    """The self-query and the process states were not recorded: the sockets alone, as in the baseline, say
    nothing is wrong."""
    net = Recorded([DNS], {SOCKETS: "dns_server.baseline.ss.txt"}, BASE_SOCKETS)
    session = _session(net)
    answers._service_answers(session, DNS)
    assert session.flags == []


RUNNING = ("vtysh_show", (("command", "show running-config"), ("dev", "router1")))
BGP = ("vtysh_show", (("command", daemons.DAEMON_SHOWS["bgp"]), ("dev", "router1")))
DISK = ("read_file", (("dev", "router1"), ("path", BGPD_CONF)))


def test_one_routing_daemon_down_while_zebra_runs_is_frr_service_down_on_that_router() -> None:
    net = Recorded([ROUTER], {RUNNING: "bgpd-down-router1.incident.running-config.txt",
                              BGP: "bgpd-down-router1.incident.bgp-summary.txt"},
                   {RUNNING: "bgpd-down-router1.baseline.running-config.txt"})
    session = _session(net)
    daemons._routing_daemons(session, ROUTER)
    flag = next(f for f in session.flags if f.kind == "routing_daemon_down")
    assert flag.attrs["daemon"] == "bgpd" and flag.attrs["protocol"] == "bgp"
    assert ("frr_service_down", "router1") in _labels(session, [ROUTER])


def test_without_a_baseline_the_configuration_on_disk_says_which_daemons_should_answer() -> None:
    net = Recorded([ROUTER], {RUNNING: "bgpd-down-router1.incident.running-config.txt",
                              BGP: "bgpd-down-router1.incident.bgp-summary.txt", DISK: "bgpd-down-router1.bgpd.conf"},
                   files={"router1": [BGPD_CONF, "/etc/frr/zebra.pid"]})
    session = _session(net)
    daemons._routing_daemons(session, ROUTER)
    assert "routing_daemon_down" in _kinds(session)


def test_a_router_whose_daemons_all_answer_costs_no_probe_beyond_its_running_configuration() -> None:
    net = Recorded([ROUTER], {RUNNING: "bgpd-down-router1.baseline.running-config.txt"},
                   {RUNNING: "bgpd-down-router1.baseline.running-config.txt"})
    session = _session(net)
    daemons._routing_daemons(session, ROUTER)
    assert session.flags == [] and net.asked == [RUNNING]


def test_protocols_are_read_from_router_blocks() -> None:
    assert daemons.protocols(_text("bgpd-down-router1.baseline.running-config.txt")) == {"bgp"}
    assert daemons.protocols(_text("bgpd-down-router1.incident.running-config.txt")) == set()
