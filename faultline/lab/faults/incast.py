"""`incast_traffic_network_limitation`: a web server's access link shaped, many clients sending UDP at it.

SUBSTITUTE/PARTIAL: NIKA's egress tbf without its netem delay, an ifb-shaped ingress of our own, and our paced UDP
senders (`loadgen.py udp`), 3x the bucket rate in all; the recipe, the measured symptom and why:
docs/lab.md#traffic-and-load-faults. Mechanism `htb` shapes the same link at the same rates with htb classes (a
class-based rate limit, the ingress one with a 40-packet queue) instead of token buckets.
"""

from __future__ import annotations

import random
import shlex
from typing import ClassVar

from faultline.lab.faults.base import FaultError, FaultRecord, in_ns, sh, start_helper, stop_helper
from faultline.lab.faults.web import WebFault, helper_listed, loadgen_argv, new_marker, wait_for_marker, web_clients
from faultline.lab.state import LabState
from faultline.lab.topology import Topology
from faultline.network.probes import ProbeContext, run_probe
from faultline.network.reachability import main_ip

TBF = ("rate", "1mbit", "burst", "500kb", "limit", "500kb")  # NIKA's child tbf (egress)
# ingress: same rate, a 0.5 s queue (NIKA's 500 KB would hold 4 s: every ping lost, HTTP 8 s)
INGRESS_TBF = ("rate", "1mbit", "burst", "32kb", "limit", "64kb")
MAX_SENDERS = 8
TOTAL_KBPS = 3000
UDP_PORT = 5201  # iperf3's port; nothing listens there
MIN_LOSS_PCT = 30  # healthy: 0 % loss, rtt ~0.1 ms, index page in ~0.5 ms
MIN_RTT_MS = 100
MIN_HTTP_S = 0.3
HTB_CLASS = ("classid", "1:10", "htb", "rate", "1mbit", "ceil", "1mbit")
INGRESS_QUEUE = ("pfifo", "limit", "40")  # about 0.4 s of 1,242-byte datagrams at 1 Mbit/s


def shaper_steps(ifb: str, mechanism: str) -> list[tuple[str, ...]]:
    """The commands that shape eth0's egress and (redirected into `ifb`) its ingress, for one mechanism."""
    if mechanism == "htb":
        shape = [("tc", "qdisc", "replace", "dev", "eth0", "root", "handle", "1:", "htb", "default", "10"),
                 ("tc", "class", "add", "dev", "eth0", "parent", "1:", *HTB_CLASS)]
        shape_ifb = [("tc", "qdisc", "replace", "dev", ifb, "root", "handle", "1:", "htb", "default", "10"),
                     ("tc", "class", "add", "dev", ifb, "parent", "1:", *HTB_CLASS),
                     ("tc", "qdisc", "add", "dev", ifb, "parent", "1:10", *INGRESS_QUEUE)]
    else:
        shape = [("tc", "qdisc", "replace", "dev", "eth0", "root", "tbf", *TBF)]
        shape_ifb = [("tc", "qdisc", "replace", "dev", ifb, "root", "tbf", *INGRESS_TBF)]
    return [*shape, ("ip", "link", "add", ifb, "type", "ifb"), ("ip", "link", "set", ifb, "up"), *shape_ifb,
            ("tc", "qdisc", "add", "dev", "eth0", "handle", "ffff:", "ingress"),
            ("tc", "filter", "add", "dev", "eth0", "parent", "ffff:", "protocol", "all", "u32", "match",
             "u32", "0", "0", "action", "mirred", "egress", "redirect", "dev", ifb)]


class IncastTraffic(WebFault):
    """`incast_traffic_network_limitation`: tbf both ways on the web's eth0 (ingress via ifb) + UDP senders."""

    label = "incast_traffic_network_limitation"
    symptom_timeout = 20.0
    mechanisms: ClassVar[dict[str, str]] = {
        "standard": "tbf 1mbit on the web's eth0 egress and on its ingress (redirected to an ifb), UDP senders",
        "htb": "htb classes at 1mbit on the web's eth0 egress and on its ingress (redirected to an ifb, a 40-packet "
               "queue), the same UDP senders",
    }

    def apply(self, state: LabState, topo: Topology, rec: FaultRecord, rng: random.Random) -> None:
        ns = state.device(rec.target).namespace
        ifb = f"ifb{int(rec.id.lstrip('f')) - 1}"  # ifb0 for the first fault, as `modprobe ifb` names them
        clients = web_clients(topo)
        senders = sorted(rng.sample(clients, min(MAX_SENDERS, len(clients))))
        ip = main_ip(state.device(rec.target))
        marker = new_marker(rec)
        kbps = TOTAL_KBPS // len(senders)
        kind = "htb" if rec.mechanism_id == "htb" else "tbf"
        rec.params = {"ifname": "eth0", "ifb": ifb, "web_ip": ip, "senders": senders, "kbps_each": kbps,
                      "probe_src": senders[0], "helper_pid": None, "helper_marker": marker, "kind": kind}
        try:
            for step in shaper_steps(ifb, rec.mechanism_id):
                sh(in_ns(ns, *step), f"incast shaping ({step[0]} {step[1]} {step[2]})")
        except FaultError:
            self.undo(state, topo, rec)
            raise
        lines = [shlex.join(in_ns(state.device(s).namespace, *loadgen_argv(
            marker, "udp", "--dst", ip, "--port", str(UDP_PORT), "--kbps", str(kbps)))) + " &" for s in senders]
        rec.params["helper_pid"] = start_helper(["sh", "-c", "\n".join(lines + ["wait"]), marker])
        try:
            for sender in senders:
                wait_for_marker(state.device(sender).namespace, marker)
        except FaultError:
            self.undo(state, topo, rec)  # the record is not saved yet: nothing else would stop it
            raise
        rec.resource_id = f"interface/{rec.target}/eth0"
        shapers = (f"tc htb class {' '.join(HTB_CLASS)}", f"htb class {' '.join(HTB_CLASS)}, leaf "
                   f"{' '.join(INGRESS_QUEUE)}") if kind == "htb" else (f"tc tbf {' '.join(TBF)}",
                                                                         f"tbf {' '.join(INGRESS_TBF)}")
        rec.mechanism = (f"{shapers[0]} on {rec.target} eth0 egress and on its ingress (ingress qdisc, "
                         f"u32 match-all mirred redirect to {ifb} with {shapers[1]}); "
                         f"UDP to {ip}:{UDP_PORT} at {kbps} kbit/s from each of {', '.join(senders)} (loadgen.py udp, "
                         f"one sh PID {rec.params['helper_pid']}). PARTIAL/SUBSTITUTE: no netem delay 20ms (no netem), "
                         "no iperf3, senders bounded (NIKA: 20 Mbit/s from every host), ingress shaping added")

    def artifact_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        qdiscs = run_probe(ctx, "tc_qdisc", dev=rec.target).record.qdiscs
        kind = rec.params.get("kind", "tbf")
        if not any(q.dev == "eth0" and q.kind == kind and q.root for q in qdiscs):
            return f"no root {kind} on {rec.target} eth0"
        if not any(q.dev == "eth0" and q.kind == "ingress" for q in qdiscs):
            return f"no ingress qdisc on {rec.target} eth0"
        if not any(q.dev == rec.params["ifb"] and q.kind == kind for q in qdiscs):
            return f"no {kind} on {rec.target} {rec.params['ifb']}"
        return helper_listed(ctx, rec.params["senders"][0], rec.params["helper_marker"])

    def symptom_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        src, ip = rec.params["probe_src"], rec.params["web_ip"]
        ping = run_probe(ctx, "ping", src=src, dst_ip=ip, count=5).record
        if ping.loss_pct < MIN_LOSS_PCT and (ping.rtt_avg_ms or 0) < MIN_RTT_MS:
            return f"ping {src} -> {ip}: {ping.loss_pct:g}% loss, rtt {ping.rtt_avg_ms} ms: not degraded"
        http = run_probe(ctx, "http_get", src=src, url=f"http://{ip}/", timeout_s=6).record
        if http.status == "ok" and (http.time_total_s or 0) < MIN_HTTP_S:
            return f"http_get {src} -> {ip} took {http.time_total_s}s: not slow"
        return None

    def undo(self, state: LabState, topo: Topology, rec: FaultRecord) -> None:
        stop_helper(rec.params.get("helper_pid"), rec.params["helper_marker"])
        ns = state.device(rec.target).namespace
        for step in (("tc", "qdisc", "del", "dev", "eth0", "root"), ("tc", "qdisc", "del", "dev", "eth0", "ingress"),
                     ("ip", "link", "del", rec.params["ifb"])):
            proc = sh(in_ns(ns, *step), "incast shaping removal", check=False)
            if proc.returncode != 0 and not _already_gone(proc.stderr):
                raise FaultError(f"removing incast shaping on {rec.target} ({' '.join(step)}): "
                                 f"{proc.stderr.strip()[:200]}")


def _already_gone(stderr: str) -> bool:
    """tc/ip's words for "nothing to delete" (undo after a partial apply or a manual repair)."""
    return any(s in stderr for s in ("No such file", "Cannot delete", "Cannot find", "Invalid handle"))
