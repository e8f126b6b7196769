"""`dns_lookup_latency`: every DNS answer of the DNS server leaves one second late.

This kernel has no netem (SUBSTITUTE): an iptables NFQUEUE rule in the DNS node hands its answers to
`nfqueue_delay.py`, which releases each a second after it arrived; details: docs/lab.md#dns-and-dhcp-faults.
"""

from __future__ import annotations

import random
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import ClassVar

from faultline.lab.faults.base import Fault, FaultError, FaultRecord, helper_alive, in_ns, sh, start_helper, stop_helper
from faultline.lab.services import main_ip
from faultline.lab.state import LabState
from faultline.lab.topology import Topology
from faultline.network.probes import ProbeContext, run_probe

QUEUE = 53
DELAY_MS = 1000  # as NIKA's netem delay
IMPAIRER = Path(__file__).with_name("nfqueue_delay.py")
SAMPLES = 3


def rule_spec(ifname: str, queue: int, direction: str = "answers") -> list[str]:
    """The mangle rule (without -A/-D) that queues the node's DNS answers leaving `ifname` (POSTROUTING), or the
    queries arriving on it (PREROUTING) with `direction="queries"`."""
    if direction == "queries":
        return ["PREROUTING", "-i", ifname, "-p", "udp", "--dport", "53", "-j", "NFQUEUE", "--queue-num", str(queue),
                "--queue-bypass"]
    return ["POSTROUTING", "-o", ifname, "-p", "udp", "--sport", "53", "-j", "NFQUEUE", "--queue-num", str(queue),
            "--queue-bypass"]


def queue_bound(namespace: str, queue: int) -> bool:
    """True when some process has bound NFQUEUE `queue` in `namespace`."""
    out = sh(in_ns(namespace, "cat", "/proc/net/netfilter/nfnetlink_queue"), "nfqueue list", check=False).stdout
    return any(line.split()[:1] == [str(queue)] for line in out.splitlines())


def dig_times(ctx: ProbeContext, src: str, name: str, server: str, samples: int = SAMPLES) -> list[int | None]:
    """`query_time_ms` of `samples` digs that answered NOERROR with records (None for the others)."""
    out: list[int | None] = []
    for _ in range(samples):
        res = run_probe(ctx, "dig", src=src, name=name, server=server, timeout_s=10).record
        out.append(res.query_time_ms if res.status == "NOERROR" and res.answers else None)
    return out


class DnsLookupLatency(Fault):
    """`dns_lookup_latency`: the DNS node's UDP answers delayed 1000 ms by an NFQUEUE helper."""

    label = "dns_lookup_latency"
    roles = ("dns",)
    mechanisms: ClassVar[dict[str, str]] = {
        "standard": "the server's answers held 1 s on the way out (an inline inspection of its egress)",
        "query_queue": "the queries held 1 s on the way in, before the server sees them (an inline inspection "
                       "of its ingress)",
    }
    symptom_timeout = 15.0
    delay_ms = DELAY_MS

    @staticmethod
    def query(topo: Topology, dns: str) -> tuple[str, str] | None:
        """(client, name) to ask `dns`: a host or client using it (else any), and a name of its zone."""
        if dns not in topo.zones or not topo.zones[dns][1]:
            return None
        ends = sorted(n.name for n in topo.nodes.values() if n.role in ("host", "client") and n.addresses)
        users = [n for n in ends if dns in topo.nodes[n].resolvers]
        clients = users or ends
        return (clients[0], min(topo.zones[dns][1])) if clients else None

    @classmethod
    def targets(cls, topo: Topology) -> list[str]:
        return [n for n in super().targets(topo) if cls.query(topo, n) is not None]

    @classmethod
    def needs(cls) -> str:
        return "a DNS server with a zone and a host or client to ask it"

    def apply(self, state: LabState, topo: Topology, rec: FaultRecord, rng: random.Random) -> None:
        found = self.query(topo, rec.target)
        assert found is not None  # targets() only lists servers with one
        client, name = found
        node = topo.nodes[rec.target]
        server = main_ip(node)
        ifname = next(i.name for i in node.interfaces if i.address.split("/")[0] == server)
        ns = state.device(rec.target).namespace
        samples = dig_times(ProbeContext(directory=state), client, name, server)
        answered = [t for t in samples if t is not None]
        if not answered:
            raise FaultError(f"{name} @{server} from {client} does not answer before injection ({samples})",
                             fix="check the lab with `faultline lab status`; the DNS service must be up")
        marker = f"job-{rec.id}-{uuid.uuid4().hex[:8]}"
        direction = "queries" if rec.mechanism_id == "query_queue" else "answers"
        rec.params = {"ifname": ifname, "queue": QUEUE, "delay_ms": self.delay_ms, "client": client, "name": name,
                      "server": server, "baseline_ms": statistics.median(answered), "baseline_samples": samples,
                      "helper_pid": None, "helper_marker": marker, "direction": direction}
        spec = rule_spec(ifname, QUEUE, direction)
        sh(in_ns(ns, "iptables", "-t", "mangle", "-A", *spec), "NFQUEUE rule")
        rec.params["helper_pid"] = start_helper(in_ns(
            ns, sys.executable, "-I", str(IMPAIRER), "--queue", str(QUEUE), "--delay-ms", str(self.delay_ms),
            "--tag", marker))
        deadline = time.monotonic() + 5.0
        while not queue_bound(ns, QUEUE):
            if time.monotonic() > deadline or not helper_alive(rec.params["helper_pid"], marker):
                self.undo(state, topo, rec)
                raise FaultError(f"the NFQUEUE delay helper did not bind queue {QUEUE} in {ns}",
                                 fix="check that the kernel has nfnetlink_queue and iptables NFQUEUE")
            time.sleep(0.05)
        rec.mechanism = (f"SUBSTITUTE for tc netem delay {self.delay_ms}ms (no netem here): iptables -t mangle -A "
                         f"{' '.join(spec)} on {rec.target}, and an NFQUEUE helper in its namespace (pid "
                         f"{rec.params['helper_pid']}) releasing each queued packet {self.delay_ms} ms late")

    def artifact_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        p = rec.params
        rules = run_probe(ctx, "iptables_rules", dev=rec.target, table="mangle").record.rules
        wanted, port = f"--queue-num {p['queue']}", "--dport 53" if p.get("direction") == "queries" else "--sport 53"
        if not any("-j NFQUEUE" in r and wanted in r and port in r for r in rules):
            return f"no NFQUEUE rule for udp {port[2:]} in {rec.target}'s mangle table ({rules})"
        running = {e.pid: e for e in run_probe(ctx, "processes", dev=rec.target).record.processes}
        helper = running.get(p["helper_pid"])
        if helper is None or p["helper_marker"] not in helper.args:
            return f"the NFQUEUE delay helper (pid {p['helper_pid']}) is not running on {rec.target}"
        return None

    def symptom_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        p = rec.params
        samples = dig_times(ctx, p["client"], p["name"], p["server"], samples=2)
        answered = [t for t in samples if t is not None]
        # late by most of the delay, but answered (a timeout would be a different fault)
        if answered and min(answered) >= p["baseline_ms"] + 0.8 * p["delay_ms"]:
            return None
        return (f"dig {p['name']} @{p['server']} from {p['client']}: query times {samples} ms, "
                f"baseline {p['baseline_ms']} ms, expected about +{p['delay_ms']} ms")

    def undo(self, state: LabState, topo: Topology, rec: FaultRecord) -> None:
        ns = state.device(rec.target).namespace
        spec = rule_spec(rec.params["ifname"], rec.params["queue"], rec.params.get("direction", "answers"))
        # every copy of the rule (an interrupted injection may have left two)
        for _ in range(10):
            if sh(in_ns(ns, "iptables", "-t", "mangle", "-C", *spec), "rule check", check=False).returncode != 0:
                break
            sh(in_ns(ns, "iptables", "-t", "mangle", "-D", *spec), "NFQUEUE rule delete")
        stop_helper(rec.params.get("helper_pid"), rec.params["helper_marker"])
