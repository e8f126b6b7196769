"""NIKA v1's agent tools (docs/nika.md#nika-v1-mcp-servers) over a Faultline backend, as plain functions.

`LabSession` answers every tool through the probe API of one `Backend` (the running lab or a
recorded snapshot), so each call is validated and read-only. Errors never raise: they come back as
NIKA's `{"error": "validation_error" | "tool_execution_error", "details": ...}`; a snapshot that did
not record a call says so (`missing` names the command) instead of inventing an answer.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from faultline.errors import FaultlineError
from faultline.mcp.exec_map import command_to_probe
from faultline.network.backend import Backend
from faultline.network.probes import ProbeOutput
from faultline.network.reachability import main_ip
from faultline.network.records import NotRecordedResult
from faultline.network.validate import ProbeError
from faultline.nika.answers import RootCause, SubmissionV1, SubmissionV2

# NIKA's reachability statuses from ours (ok | loss | unreachable | timeout | error)
_NIKA_STATUS = {"ok": "ok", "loss": "unstable", "unreachable": "down", "timeout": "down", "error": "unknown"}
RECORDED_PING_COUNT = 2  # the reachability probe's ping count, the pings a snapshot holds
# frr_* tools: NIKA's command first, then the JSON forms a snapshot records (see snapshot.ROUTER_SHOWS)
FRR_COMMANDS = {
    "bgp": ("show ip bgp", "show ip bgp json", "show bgp ipv4 unicast summary json"),
    "running": ("show running-config",),
    "route": ("show ip route", "show ip route json"),
    "ospf": ("show ip ospf", "show ip ospf neighbor json", "show ip ospf interface json"),
}


class ToolFailure(Exception):
    """A tool call that failed after validation (the command could not be answered)."""

    def __init__(self, details: str, missing: list[str] | None = None) -> None:
        super().__init__(details)
        self.details, self.missing = details, missing


def error(kind: str, details: str, **extra: Any) -> dict[str, Any]:
    """NIKA's error shape."""
    return {"error": kind, "details": details, **extra}


def v2_from_v1(v1: SubmissionV1) -> SubmissionV2:
    """A v2 answer derived from a v1 one: every named device (node/<name>) with every named label.

    Exact for single-fault answers; for several labels and devices the pairing is unknown, so the
    cross product is given (and scored as such).
    """
    pairs = [RootCause(resource_id=f"node/{d}", fault_type=label)
             for d in dict.fromkeys(v1.faulty_devices) for label in dict.fromkeys(v1.root_cause_name)]
    return SubmissionV2(is_anomaly=v1.is_anomaly, root_causes=pairs)


@dataclass
class LabSession:
    """One agent's session: the network it observes, the labels it may submit and where answers go."""

    backend: Backend
    labels: list[str]
    sink: Callable[[SubmissionV1, SubmissionV2, LabSession], str]  # stores an answer, returns where
    incident_id: str | None = None
    tool_calls: int = 0
    started: float = field(default_factory=time.monotonic)

    def call(self, tool: Callable[..., Any], /, **args: Any) -> Any:
        """Run one tool; any failure becomes NIKA's error dict."""
        self.tool_calls += 1
        try:
            return tool(**args)
        except ToolFailure as exc:
            return error("tool_execution_error", exc.details, **({"missing": exc.missing} if exc.missing else {}))
        except (ProbeError, FaultlineError) as exc:
            details = exc.message + (f" ({exc.fix})" if exc.fix else "")
            return error("validation_error", details)
        except Exception as exc:  # noqa: BLE001 - a tool must never take the server down
            return error("tool_execution_error", f"{type(exc).__name__}: {exc}")

    # -- plumbing -----------------------------------------------------------------------------------
    def _probe(self, name: str, **args: Any) -> ProbeOutput:
        out = self.backend.probe(name, **args)
        if isinstance(out.record, NotRecordedResult):
            raise ToolFailure(f"not recorded in this snapshot: {' '.join(out.record.missing)}", out.record.missing)
        return out

    def _router(self, name: str) -> str:
        if self.backend.device(_known(self.backend, name)).role != "router":
            raise ProbeError(f"{name!r} is not a router", fix="frr_* tools take a router_name; see list_devices")
        return name

    def _vtysh_first(self, router_name: str, commands: tuple[str, ...]) -> str:
        self._router(router_name)
        missing: list[str] = []
        for command in commands:
            out = self.backend.probe("vtysh_show", dev=router_name, command=command)
            if not isinstance(out.record, NotRecordedResult):
                return out.raw
            missing = out.record.missing
        raise ToolFailure(f"not recorded in this snapshot: {', '.join(commands)}", missing)

    # -- NIKA kathara_base tools ----------------------------------------------------------------------
    def get_reachability(self) -> dict[str, Any]:
        rec = self._probe("reachability").record
        rows = [{"src": r.src, "dst": r.dst, "dst_ip": r.dst_ip, "tx": r.tx, "rx": r.rx, "loss_percent": r.loss,
                 "rtt_avg_ms": r.rtt, "status": _NIKA_STATUS.get(r.status, "unknown"), "detail": r.status,
                 **({"error": r.error} if r.error else {})} for r in rec.rows]
        return {"hosts": rec.hosts, "results": rows, "summary": rec.summary}

    def ping_pair(self, host_a: str, host_b: str, count: int = 4, args: str = "") -> str:
        dst = main_ip(self.backend.device(_known(self.backend, host_b)))
        if dst is None:
            raise ProbeError(f"{host_b!r} has no address")
        try:
            return self._probe("ping", src=host_a, dst_ip=dst, count=count).raw
        except ToolFailure:
            if count == RECORDED_PING_COUNT:
                raise
        # a snapshot holds the reachability matrix's pings only: answer with that one, and say so
        out = self._probe("ping", src=host_a, dst_ip=dst, count=RECORDED_PING_COUNT)
        return f"(recorded snapshot: a {count}-packet ping was not recorded; this is the recorded " \
               f"{RECORDED_PING_COUNT}-packet ping)\n{out.raw}"

    def get_host_net_config(self, host_name: str) -> dict[str, str]:
        return {"ip_addr": self._probe("ip_addr", dev=host_name).raw,
                "ip_route": self._probe("ip_route", dev=host_name).raw}

    def get_tc_statistics(self, host_name: str, intf_name: str) -> dict[str, Any]:
        rec = self._probe("tc_qdisc", dev=host_name).record
        return {"device": host_name, "interface": intf_name,
                "qdiscs": [q.model_dump(mode="json") for q in rec.qdiscs if q.dev == intf_name]}

    def netstat(self, host_name: str, args: str = "-tuln") -> str:
        return self._probe("sockets", dev=host_name).raw

    def ip_addr_statistics(self, host_name: str) -> str:
        return self._probe("ip_link", dev=host_name).raw

    def curl_web_test(self, host_name: str, url: str, times: int = 5) -> dict[str, Any]:
        if isinstance(times, bool) or not isinstance(times, int) or not 1 <= times <= 10:
            raise ProbeError(f"times must be an integer in [1, 10], got {times!r}")
        runs = [self._probe("http_get", src=host_name, url=url).record.model_dump(mode="json") for _ in range(times)]
        return {"host": host_name, "url": url, "runs": runs}

    def exec_shell(self, host_name: str, command: str) -> dict[str, Any]:
        dev = self.backend.device(_known(self.backend, host_name))
        probe, args = command_to_probe(command, dev, self.backend.ctx.directory)
        out = self._probe(probe, **args)
        res = out.result
        return {"output": out.raw, "probe": probe, "args": out.args,
                "stdout": res.stdout if res else out.raw, "stderr": res.stderr if res else "",
                "exit_code": res.exit_code if res else 0, "timed_out": res.timed_out if res else False,
                "truncated": res.truncated if res else False}

    # -- NIKA kathara_frr tools -----------------------------------------------------------------------
    def frr_get_bgp_conf(self, router_name: str) -> str:
        return self._vtysh_first(router_name, FRR_COMMANDS["bgp"])

    def frr_show_running_config(self, router_name: str) -> str:
        return self._vtysh_first(router_name, FRR_COMMANDS["running"])

    def frr_show_ip_route(self, router_name: str) -> str:
        return self._vtysh_first(router_name, FRR_COMMANDS["route"])

    def frr_get_ospf_conf(self, router_name: str) -> str:
        return self._vtysh_first(router_name, FRR_COMMANDS["ospf"])

    def frr_exec(self, router_name: str, command: str) -> str:
        return self._vtysh_first(router_name, (" ".join(str(command).split()),))

    # -- task tools and our extension -------------------------------------------------------------------
    def list_devices(self) -> list[dict[str, Any]]:
        ctx = self.backend.ctx
        return [{"name": d.name, "role": d.role, "addresses": list(d.addresses),
                 "files": list(ctx.file_roots.get(d.name, ()))} for d in self.backend.devices()]

    def list_avail_problems(self) -> list[str]:
        return list(self.labels)

    def submit(self, is_anomaly: bool, faulty_devices: list[str], root_cause_name: list[str]) -> list[str]:
        unknown = [x for x in root_cause_name if x not in self.labels]
        if unknown:
            raise ProbeError(f"unknown root_cause_name {', '.join(map(repr, unknown))}",
                             fix="pick labels from list_avail_problems()")
        for name in faulty_devices:
            _known(self.backend, name)
        v1 = SubmissionV1(is_anomaly=bool(is_anomaly), faulty_devices=list(faulty_devices),
                          root_cause_name=list(root_cause_name))
        where = self.sink(v1, v2_from_v1(v1), self)
        return ["Submission success.", f"stored in {where}"]


def _known(backend: Backend, name: Any) -> str:
    if not isinstance(name, str):
        raise ProbeError(f"device name must be a string, got {json.dumps(name)}")
    try:
        backend.device(name)
    except KeyError:
        raise ProbeError(f"unknown device {name!r}", fix="see list_devices() for the device names") from None
    return name
