"""Web faults: an HTTP ACL on a client, a slow sender, an HTTP flood (incast traffic is in `incast.py`).

They apply where web servers and their clients exist and probe the server by IP; `sender_application_delay` is
nginx's `limit_rate` (SUBSTITUTE for NIKA's slow sender), `web_dos_attack` our own generator in a CPU-capped
cgroup. Recipes: docs/lab.md#traffic-and-load-faults.
"""

from __future__ import annotations

import random
import sys
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import ClassVar

from faultline.lab import teardown
from faultline.lab.faults import cgroups
from faultline.lab.faults.base import Fault, FaultError, FaultRecord, start_helper, stop_helper
from faultline.lab.faults.iptables import IptablesVariant, rule
from faultline.lab.faults.nft import NftFilter
from faultline.lab.service_ops import config_path, reload_nginx, service_process, service_running, start_recorded
from faultline.lab.services import render_web, service_dir
from faultline.lab.state import LabState
from faultline.lab.topology import Topology
from faultline.network.probes import ProbeContext, run_probe
from faultline.network.reachability import main_ip

CLIENT_ROLES = ("client", "host")  # who browses the web servers (dc_clos_service, campus scenarios)
LOADGEN = Path(__file__).with_name("loadgen.py")


def web_servers(topo: Topology) -> list[str]:
    """The topology's `web` nodes, sorted."""
    return sorted(n.name for n in topo.nodes.values() if n.role == "web")


def web_clients(topo: Topology) -> list[str]:
    """End hosts that browse the web servers, in topology order (NIKA's `hosts` list)."""
    return [n.name for n in topo.nodes.values() if n.role in CLIENT_ROLES]


def loadgen_argv(marker: str, *args: str) -> list[str]:
    """The command line of a traffic generator carrying `marker` (found and stopped by it)."""
    return [sys.executable, "-I", str(LOADGEN), "--tag", marker, *args]


def new_marker(rec: FaultRecord) -> str:
    """A marker unique to one injection (PID reuse cannot make another process look like ours)."""
    return f"job-{rec.id}-{uuid.uuid4().hex[:8]}"  # nothing a process list could read the fault from


def wait_for_marker(namespace: str, marker: str, count: int = 1, timeout: float = 5.0) -> None:
    """Wait until `count` processes carrying `marker` run inside `namespace`; FaultError if they never do."""
    deadline = time.monotonic() + timeout
    while True:
        found = 0
        for pid in teardown.namespace_pids(namespace):
            try:
                found += marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                pass
        if found >= count:
            return
        if time.monotonic() >= deadline:
            raise FaultError(f"the traffic generator {marker} did not start in {namespace} ({found} of {count})",
                             fix="check that the lab is up; the fault's recover stops what did start")
        time.sleep(0.1)


def helper_listed(ctx: ProbeContext, device: str, marker: str) -> str | None:
    """None when `device`'s process table (processes probe) shows a process carrying `marker`."""
    table = run_probe(ctx, "processes", dev=device).record
    if any(marker in p.args for p in table.processes):
        return None
    return f"no process with {marker} runs on {device} ({len(table.processes)} processes listed)"


def reload_and_wait(state: LabState, node: str, timeout: float = 5.0) -> None:
    """SIGHUP `node`'s nginx and wait until only the new config serves new connections.

    ProcessLookupError when nginx is not running. nginx starts new workers, then tells the old ones
    to stop accepting and finish gracefully (their title becomes "worker process is shutting down");
    until then an old worker may still accept a connection and answer with the old config.
    """
    master = service_process(state, node)
    before = _children(master.pid) if master else set()
    reload_nginx(state, node)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        now = _children(master.pid)
        if now - before and all(b"shutting down" in _cmdline(pid) for pid in now & before):
            return
        time.sleep(0.05)
    raise FaultError(f"nginx on {node} did not reload within {timeout:g} s (SIGHUP sent)",
                     fix=f"see {node}'s error.log in its service dir")


def _children(pid: int) -> set[int]:
    try:
        return {int(x) for x in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()}
    except OSError:
        return set()


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b"shutting down"  # gone: it accepts nothing any more


class WebFault(Fault):
    """A fault on a web server of a lab that also has web clients."""

    roles = ("web",)

    @classmethod
    def targets(cls, topo: Topology) -> list[str]:
        return web_servers(topo) if web_clients(topo) else []

    @classmethod
    def needs(cls) -> str:
        return "a web server and a client/host to browse it"


class HttpAclBlock(IptablesVariant, NftFilter):
    """`http_acl_block`: TCP port 80 dropped on a client host (NIKA v1 puts it on a host, GT [host]); or refused
    by an iptables REJECT."""

    label = "http_acl_block"
    roles = CLIENT_ROLES
    matches = ("tcp dport 80",)
    mechanisms: ClassVar[dict[str, str]] = {
        "standard": "nft table: tcp dport 80 drop in input, forward and output (connections time out)",
        "iptables_reject": "iptables -A OUTPUT -p tcp --dport 80 -j REJECT --reject-with tcp-reset (connections "
                           "are refused at once)",
    }
    iptables_mechanisms = ("iptables_reject",)

    def iptables_rules_for(self, state: LabState, rec: FaultRecord) -> list[list[str]]:
        return [rule(state, "OUTPUT", "-p", "tcp", "-m", "tcp", "--dport", "80", "-j", "REJECT",
                     "--reject-with", "tcp-reset")]

    @classmethod
    def targets(cls, topo: Topology) -> list[str]:
        return sorted(web_clients(topo)) if web_servers(topo) else []

    @classmethod
    def needs(cls) -> str:
        return "a client/host and a web server"

    def apply(self, state: LabState, topo: Topology, rec: FaultRecord, rng: random.Random) -> None:
        super().apply(state, topo, rec, rng)
        web = rng.choice(web_servers(topo))
        rec.params.update(web=web, web_ip=main_ip(state.device(web)))
        rec.mechanism += f" (NIKA v1: on a client host); symptom checked towards {web}"

    def symptom_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        ip = rec.params["web_ip"]
        http = run_probe(ctx, "http_get", src=rec.target, url=f"http://{ip}/", timeout_s=4).record
        failed = http.status != "ok" if "iptables" in rec.params else http.status == "timeout"
        if not failed:
            return f"http_get {rec.target} -> {ip}: {http.status} {http.http_code or ''}, not blocked"
        ping = run_probe(ctx, "ping", src=rec.target, dst_ip=ip, count=2).record
        if ping.rx == 0:
            return f"ping {rec.target} -> {ip} fails too ({ping.status}): not an HTTP-only block"
        return None


class SenderApplicationDelay(WebFault):
    """`sender_application_delay`: nginx answers at `limit_rate 10k` (SUBSTITUTE, see the module doc), or holds
    each request in a queue drained at one a minute."""

    label = "sender_application_delay"
    rate: ClassVar[str] = "10k"
    symptom_timeout = 15.0
    mechanisms: ClassVar[dict[str, str]] = {
        "standard": "nginx limit_rate 10k: the answer starts at once and trickles (a slow sender)",
        "request_queue": "nginx limit_req at 1 request a minute with a deep burst queue: requests are held, "
                         "not refused, so answers start late (an application draining its backlog slowly)",
    }

    def render(self, topo: Topology, state: LabState, node: str, mechanism_id: str) -> str:
        """The server's nginx.conf with this mechanism's slowdown."""
        if mechanism_id != "request_queue":
            return render_web(topo, Path(state.run_dir), node, limit_rate=self.rate)
        return request_queue(render_web(topo, Path(state.run_dir), node))

    def apply(self, state: LabState, topo: Topology, rec: FaultRecord, rng: random.Random) -> None:
        conf = config_path(state, rec.target)
        original = conf.read_text()
        conf.write_text(self.render(topo, state, rec.target, rec.mechanism_id))
        try:
            reload_and_wait(state, rec.target)
        except (ProcessLookupError, FaultError) as exc:
            conf.write_text(original)  # the record is not saved yet: leave nothing behind
            if service_running(state, rec.target):
                reload_nginx(state, rec.target)
            raise FaultError(f"sender_application_delay: {exc}", fix="recover the lab's web server first") from None
        client = rng.choice(web_clients(topo))
        ip = main_ip(state.device(rec.target))
        rec.params = {"conf": str(conf), "original_conf": original, "limit_rate": self.rate, "client": client,
                      "url": f"http://{ip}/big.bin"}
        if rec.mechanism_id == "request_queue":
            rec.params.update(marker=QUEUE_LINE, url=f"http://{ip}/")
            rec.mechanism = (f"nginx on {rec.target}: {QUEUE_ZONE.strip()} and {QUEUE_LINE} added to {conf.name}, "
                             "reloaded (SIGHUP): every request after the first waits in the queue")
            return
        rec.mechanism = (f"nginx on {rec.target}: limit_rate {self.rate} added to {conf.name}, reloaded (SIGHUP); "
                         "SUBSTITUTE for NIKA's slow-sender script (1 KiB every 0.1 s): the same ~10 KB/s per response")

    def artifact_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        text = run_probe(ctx, "read_file", dev=rec.target, path=rec.params["conf"]).record.text
        wanted = rec.params.get("marker") or f"limit_rate {rec.params['limit_rate']};"
        if wanted not in text:
            return f"{rec.params['conf']} has no {wanted}"
        return None

    def symptom_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        client, url = rec.params["client"], rec.params["url"]
        http = run_probe(ctx, "http_get", src=client, url=url, timeout_s=4).record
        if http.status == "ok":
            return f"{client} fetched {url} in {http.time_total_s}s"
        if rec.params.get("marker"):  # queued: not even the headers within the timeout
            return None if http.status == "timeout" else f"{client} -> {url}: {http.status}, not a slow answer"
        if http.status != "timeout" or http.http_code != 200:
            return f"{client} -> {url}: {http.status} {http.http_code} ({http.error}): not a slow 200 answer"
        return None  # headers (200) arrived, the 256 KiB body did not finish within 3 s

    def undo(self, state: LabState, topo: Topology, rec: FaultRecord) -> None:
        Path(rec.params["conf"]).write_text(rec.params["original_conf"])
        if service_running(state, rec.target):
            reload_and_wait(state, rec.target)
        else:
            start_recorded(state, rec.target)


QUEUE_ZONE = "    limit_req_zone $binary_remote_addr zone=one:1m rate=1r/m;\n"
QUEUE_LINE = "limit_req zone=one burst=100;"


def request_queue(conf: str) -> str:
    """An nginx.conf with a per-client request queue drained at one request a minute (delayed, not refused)."""
    head, http, rest = conf.partition("http {\n")
    body, root, tail = rest.partition("        root ")
    line_end = tail.index("\n") + 1
    return head + http + QUEUE_ZONE + body + root + tail[:line_end] + f"        {QUEUE_LINE}\n" + tail[line_end:]


# the flood's bounds: nginx here has 1 worker of 1,024 connections; NIKA's ab uses -c 1000 with no cap
DOS_CONNS = 500
DOS_CPU_PCT = 50  # of one CPU, for the generator (the machine has 2)
DOS_MAX_RATE = 3000  # requests/s: uncapped, 50% of a core makes ~10k/s and 1 MB/s of access log
DOS_MIN_RATE = 200  # requests/s from the attacker in the access log that count as a flood
DOS_SOURCES = 3  # clients of the distributed flood
_LOG_TIME = "%d/%b/%Y:%H:%M:%S %z"


class WebDosAttack(WebFault):
    """`web_dos_attack`: keep-alive GET flood in a CPU-capped cgroup, from the last client (standard) or from
    clients on up to three subnets (distributed); GT [victim web]."""

    label = "web_dos_attack"
    symptom_timeout = 15.0
    mechanisms: ClassVar[dict[str, str]] = {
        "standard": "one client floods the web server (NIKA: ab -k from hosts[-1])",
        "distributed": f"clients on up to {DOS_SOURCES} different subnets each send a share of the flood, as a "
                       "botnet or a misbehaving fleet would; none of them stands out alone",
    }

    def apply(self, state: LabState, topo: Topology, rec: FaultRecord, rng: random.Random) -> None:
        clients = web_clients(topo)
        attackers = _spread(topo, clients, DOS_SOURCES) if rec.mechanism_id == "distributed" else clients[-1:]
        ip = main_ip(state.device(rec.target))
        group = cgroups.create(rec.id, DOS_CPU_PCT, state.prefix)
        n = len(attackers)
        rec.params = {"attacker": attackers[0], "attacker_ip": main_ip(state.device(attackers[0])),
                      "attackers": attackers, "attacker_ips": [main_ip(state.device(a)) for a in attackers],
                      "web_ip": ip, "helpers": [], "cgroup": str(group),
                      "access_log": str(service_dir(Path(state.run_dir), rec.target) / "access.log")}
        try:
            for attacker in attackers:
                marker = new_marker(rec)
                argv = loadgen_argv(marker, "http", "--url", f"http://{ip}/", "--conns", str(DOS_CONNS // n),
                                    "--max-rate", str(DOS_MAX_RATE // n))
                rec.params["helpers"].append([attacker, start_helper(cgroups.exec_in(group, state.device(attacker)
                                                                                     .namespace, argv)), marker])
                wait_for_marker(state.device(attacker).namespace, marker)
        except FaultError:
            self.undo(state, topo, rec)  # the record is not saved yet: nothing else would stop it
            raise
        rec.params["helper_pid"], rec.params["helper_marker"] = rec.params["helpers"][0][1:]
        pids = ", ".join(f"{a} PID {pid}" for a, pid, _ in rec.params["helpers"])
        rec.mechanism = (f"HTTP GET flood from {', '.join(attackers)} to http://{ip}/: loadgen.py http, "
                         f"{DOS_CONNS // n} "
                         f"keep-alive connections and at most {DOS_MAX_RATE // n} requests/s from each (PARTIAL: "
                         "NIKA runs ab -n 2e8 -c 1000 -k; no ab here), the generators' CPU capped at "
                         f"{DOS_CPU_PCT}% of one core together by cgroup v1 {group.name}; {pids}")

    def _helpers(self, rec: FaultRecord) -> list[list]:
        # a record from before the distributed mechanism kept one helper
        return rec.params.get("helpers") or [[rec.params["attacker"], rec.params["helper_pid"],
                                              rec.params["helper_marker"]]]

    def artifact_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        for attacker, _, marker in self._helpers(rec):
            if problem := helper_listed(ctx, attacker, marker):
                return problem
        return None

    def symptom_problem(self, ctx: ProbeContext, rec: FaultRecord) -> str | None:
        text = run_probe(ctx, "tail_file", dev=rec.target, path=rec.params["access_log"], lines=5000).record.text
        ips = set(rec.params.get("attacker_ips") or [rec.params["attacker_ip"]])
        entries = access_log_entries(text)
        stamps = [t for addr, t in entries if addr in ips]
        now = time.time()
        if not stamps or now - max(stamps) > 5:
            return f"no request from {', '.join(sorted(ips))} in the last 5 s of {rec.target}'s access log"
        silent = sorted(ip for ip in ips if not any(addr == ip and now - t <= 5 for addr, t in entries))
        if silent:  # a distributed flood comes from every one of its clients
            return f"no recent request from {', '.join(silent)} in {rec.target}'s access log"
        rate = len(stamps) / (max(stamps) - min(stamps) + 1)
        if rate < DOS_MIN_RATE:
            return f"{', '.join(sorted(ips))} make {rate:.0f} requests/s together, below {DOS_MIN_RATE}"
        return None

    def undo(self, state: LabState, topo: Topology, rec: FaultRecord) -> None:
        for _, pid, marker in self._helpers(rec):
            stop_helper(pid, marker)
        cgroups.remove(Path(rec.params["cgroup"]))


def _spread(topo: Topology, clients: list[str], count: int) -> list[str]:
    """Up to `count` clients, one per subnet as far as the lab has subnets (the last client first, as NIKA's
    single attacker), then others to make up the number."""
    picked, subnets = [], set()
    for name in reversed(clients):
        subnet = main_ip(topo.nodes[name]).rsplit(".", 1)[0]
        if subnet not in subnets and len(picked) < count:
            picked.append(name)
            subnets.add(subnet)
    picked += [c for c in reversed(clients) if c not in picked][:count - len(picked)]
    return picked


def access_log_entries(text: str) -> list[tuple[str, float]]:
    """(client address, UNIX time) of each line of an nginx access log in the default format."""
    out = []
    for line in text.splitlines():
        addr, _, rest = line.partition(" ")
        start, end = rest.find("["), rest.find("]")
        if start < 0 or end < start:
            continue
        try:
            out.append((addr, datetime.strptime(rest[start + 1:end], _LOG_TIME).timestamp()))
        except ValueError:
            continue
    return out
