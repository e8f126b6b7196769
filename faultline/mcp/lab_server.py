"""`faultline mcp lab`: NIKA's v1 agent tool surface as an MCP server over the lab or a recorded snapshot.

Third-party agents diagnose a live lab (root) or a snapshot with NIKA's tools (plus our `list_devices`) through
`faultline.mcp.lab_tools.LabSession` (its error shapes) and submit a v1 answer to ``submissions`` (method ``mcp``)
or a JSON file (docs/nika.md#agent-tools). Imports the MCP SDK at module level: import it lazily from the CLI.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp.types import CallToolResult, TextContent

from faultline.errors import FaultlineError
from faultline.mcp.lab_tools import LabSession
from faultline.network.backend import Backend
from faultline.nika.answers import SubmissionV1, SubmissionV2

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from faultline.config import Settings

INSTRUCTIONS = (
    "Diagnose the network: find whether something is wrong, which devices are at fault and the root cause. "
    "Use read-only tools only; do not propose remediation. Finish with one submit(is_anomaly, faulty_devices, "
    "root_cause_name) call; labels must come from list_avail_problems()."
)


@dataclass(frozen=True)
class SubmissionTarget:
    """Where `submit` stores answers: a JSON file, or the warehouse `submissions` table."""

    out_file: Path | None
    settings: Settings | None

    def __call__(self, v1: SubmissionV1, v2: SubmissionV2, session: LabSession) -> str:
        elapsed = round(time.monotonic() - session.started, 3)
        if self.out_file is not None:
            doc = {"incident_id": session.incident_id, "method": "mcp", "backend": session.backend.kind,
                   "v1": v1.model_dump(mode="json"), "v2": v2.model_dump(mode="json"),
                   "tool_calls": session.tool_calls, "probe_calls": session.backend.probe_calls, "elapsed_s": elapsed}
            self.out_file.parent.mkdir(parents=True, exist_ok=True)
            self.out_file.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
            return str(self.out_file)
        from faultline import db
        from faultline.sade.store import save_submission

        if self.settings is None or session.incident_id is None:
            raise FaultlineError("this server has no incident id to store submissions under",
                                 fix="restart it with --incident ID or --submission-out FILE")
        conn = db.open_warehouse(self.settings)
        try:
            save_submission(conn, session.incident_id, "mcp", v1, v2, policy="mcp-agent", backend=session.backend.kind,
                            probe_calls=session.backend.probe_calls, tool_calls=session.tool_calls, elapsed_s=elapsed)
        finally:
            conn.close()
        return f"submissions ({session.incident_id}, mcp)"


def implemented_labels() -> list[str]:
    """The labels this lab can inject (the candidate list agents choose from)."""
    from faultline.nika.labels import catalogue

    return [info.label for info in catalogue() if info.status == "implemented"]


def build_server(session: LabSession) -> MCPServer:
    """An MCP server whose tools answer from `session`."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer(name="faultline-lab", instructions=INSTRUCTIONS)

    def answer(tool: Any, **args: Any) -> CallToolResult:
        value = session.call(tool, **args)
        failed = isinstance(value, dict) and "error" in value
        if isinstance(value, dict) and "output" in value and not failed:
            text = value["output"]  # exec_shell: the command's text, as NIKA; details in structured content
        else:
            text = value if isinstance(value, str) else json.dumps(value, indent=1, sort_keys=True)
        structured = value if isinstance(value, dict) else {"result": value}
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured,
                              is_error=failed)

    s = session

    @server.tool()
    def get_reachability() -> CallToolResult:
        """Ping every end host from every other: {"hosts": {name: ip}, "results": [{src, dst, dst_ip, tx, rx,
        loss_percent, rtt_avg_ms, status ok|unstable|down|unknown, detail}]}."""
        return answer(s.get_reachability)

    @server.tool()
    def ping_pair(host_a: str, host_b: str, count: int = 4, args: str = "") -> CallToolResult:
        """Ping host_b's main address from host_a (`args` is accepted for compatibility and ignored)."""
        return answer(s.ping_pair, host_a=host_a, host_b=host_b, count=count, args=args)

    @server.tool()
    def get_host_net_config(host_name: str) -> CallToolResult:
        """A device's addresses and routes (ip -j addr / ip -j route)."""
        return answer(s.get_host_net_config, host_name=host_name)

    @server.tool()
    def get_tc_statistics(host_name: str, intf_name: str) -> CallToolResult:
        """Queueing disciplines and their counters on one interface (tc -s qdisc show)."""
        return answer(s.get_tc_statistics, host_name=host_name, intf_name=intf_name)

    @server.tool()
    def netstat(host_name: str, args: str = "-tuln") -> CallToolResult:
        """Listening TCP/UDP sockets and their processes (ss -tulpn; `args` is ignored)."""
        return answer(s.netstat, host_name=host_name, args=args)

    @server.tool()
    def ip_addr_statistics(host_name: str) -> CallToolResult:
        """Interfaces with their packet, error and drop counters (ip -s -d link)."""
        return answer(s.ip_addr_statistics, host_name=host_name)

    @server.tool()
    def curl_web_test(host_name: str, url: str, times: int = 5) -> CallToolResult:
        """HTTP GET of url from host_name `times` times (1-10): HTTP code and timings per run."""
        return answer(s.curl_web_test, host_name=host_name, url=url, times=times)

    @server.tool()
    def exec_shell(host_name: str, command: str) -> CallToolResult:
        """Run one read-only diagnostic command on a device: ip addr|route|link|neigh, nft list ruleset,
        tc -s qdisc show, ss, ps, nstat, bridge fdb show, iptables -S, cat FILE, tail -n N FILE,
        vtysh -c 'show ...', ping, traceroute, dig, curl URL, udhcpc. No pipes or state changes; others are
        refused with a validation_error. Answered by the matching probe (its exact flags may differ)."""
        return answer(s.exec_shell, host_name=host_name, command=command)

    @server.tool()
    def frr_get_bgp_conf(router_name: str) -> CallToolResult:
        """BGP table of a router (vtysh show ip bgp)."""
        return answer(s.frr_get_bgp_conf, router_name=router_name)

    @server.tool()
    def frr_show_running_config(router_name: str) -> CallToolResult:
        """FRR running configuration of a router."""
        return answer(s.frr_show_running_config, router_name=router_name)

    @server.tool()
    def frr_show_ip_route(router_name: str) -> CallToolResult:
        """Routing table of a router as FRR sees it (vtysh show ip route)."""
        return answer(s.frr_show_ip_route, router_name=router_name)

    @server.tool()
    def frr_get_ospf_conf(router_name: str) -> CallToolResult:
        """OSPF state of a router (vtysh show ip ospf)."""
        return answer(s.frr_get_ospf_conf, router_name=router_name)

    @server.tool()
    def frr_exec(router_name: str, command: str) -> CallToolResult:
        """Any read-only vtysh `show ...` command on a router."""
        return answer(s.frr_exec, router_name=router_name, command=command)

    @server.tool()
    def list_devices() -> CallToolResult:
        """Every device: name, role (router, host, dns, web, ...), addresses and readable file folders."""
        return answer(s.list_devices)

    @server.tool()
    def list_avail_problems() -> CallToolResult:
        """Every root-cause label a submission may use."""
        return answer(s.list_avail_problems)

    @server.tool()
    def submit(is_anomaly: bool, faulty_devices: list[str], root_cause_name: list[str]) -> CallToolResult:
        """Submit the final answer (once): is there an anomaly, which devices are faulty, which root causes."""
        return answer(s.submit, is_anomaly=is_anomaly, faulty_devices=faulty_devices,
                      root_cause_name=root_cause_name)

    return server


def open_session(backend: Backend, *, incident_id: str | None, out_file: Path | None,
                 settings: Settings | None) -> LabSession:
    """A session over `backend` whose submissions go to `out_file`, else to the warehouse."""
    return LabSession(backend=backend, labels=implemented_labels(), incident_id=incident_id,
                      sink=SubmissionTarget(out_file=out_file, settings=settings))


def serve(session: LabSession, *, http_port: int | None = None, host: str = "127.0.0.1", token: str = "") -> None:
    """Serve until the client disconnects (stdio) or the process is stopped (streamable HTTP at /mcp, requests
    without `token` refused when one is given: see `faultline.mcp.http_auth`)."""
    from faultline.mcp import http_auth

    server = build_server(session)
    if http_port is None:
        server.run("stdio")
    else:
        http_auth.serve_http(server, host=host, port=http_port, token=token)
