"""Recorded snapshots: every probe's commands captured once, answered again without root or a lab.

Replay parses the same output into the same typed records and answers "not recorded" to anything else;
`standard_calls` is the battery a snapshot records. Both: docs/network.md#snapshots.
"""

from __future__ import annotations

import gzip
import json
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from faultline.network.devices import Device, StaticDirectory
from faultline.network.probes import ProbeContext, ProbeOutput, probe_names, run_probe
from faultline.network.runner import CommandResult, NotRecorded, Runner

SNAPSHOT_VERSION = 1
FILE_LIMIT = 64 * 1024  # files larger than this (web content) are not part of a snapshot
SKIP_FILES = {"big.bin", "state.json", "zserv.api"}
WORKERS = 4
MAX_TRACEROUTES = 6
ROUTER_SHOWS = {
    "bgp": ("show bgp ipv4 unicast summary json", "show ip bgp json"),
    "ospf": ("show ip ospf neighbor json", "show ip ospf interface json", "show ip ospf database json"),
    "rip": ("show ip rip status",),
}
ALWAYS_SHOWS = ("show running-config", "show ip route json", "show interface json")


def _key(namespace: str | None, argv: Sequence[str]) -> tuple[str, ...]:
    full = ["ip", "netns", "exec", namespace, *argv] if namespace is not None else list(argv)
    return tuple(full)


class RecordingRunner(Runner):
    """A live runner that keeps every result, and answers a command it already ran from that result.

    Within one snapshot a command has exactly one answer, as on replay: two probes that both run
    `ip netns pids` see the same PIDs, so the commands built from them are the ones recorded.
    Thread-safe: a command asked for twice at once runs once.
    """

    def __init__(self, inner: Runner | None = None) -> None:
        inner = inner or Runner()
        super().__init__(timeout_s=inner.timeout_s, output_cap=inner.output_cap)
        self.inner = inner
        self.results: dict[tuple[str, ...], CommandResult] = {}
        self._running: dict[tuple[str, ...], threading.Event] = {}
        self._lock = threading.Lock()

    def run(self, device: str, argv: Sequence[str], *, namespace: str | None, timeout_s: float | None = None,
            output_cap: int | None = None) -> CommandResult:
        key = _key(namespace, argv)
        with self._lock:
            if key in self.results:
                return self.results[key]
            waiting = self._running.get(key)
            if waiting is None:
                self._running[key] = threading.Event()
        if waiting is not None:
            waiting.wait()
            if key in self.results:
                return self.results[key]
            # the first attempt raised (could not start): try again, it raises the same way
            return self.inner.run(device, argv, namespace=namespace, timeout_s=timeout_s, output_cap=output_cap)
        try:
            result = self.inner.run(device, argv, namespace=namespace, timeout_s=timeout_s, output_cap=output_cap)
            with self._lock:
                self.results[key] = result
        finally:
            with self._lock:
                self._running.pop(key).set()
        return result


class ReplayRunner(Runner):
    """Answers commands from recorded results; `NotRecorded` for anything else."""

    def __init__(self, results: Sequence[CommandResult], timeout_s: float, output_cap: int) -> None:
        super().__init__(timeout_s=timeout_s, output_cap=output_cap)
        self.results = {tuple(r.argv): r for r in results}

    def run(self, device: str, argv: Sequence[str], *, namespace: str | None, timeout_s: float | None = None,
            output_cap: int | None = None) -> CommandResult:
        key = _key(namespace, argv)
        if key not in self.results:
            raise NotRecorded(list(key))
        return self.results[key]


class ProbeCall(BaseModel):
    """One probe call a snapshot recorded, and the type of record it produced."""

    model_config = ConfigDict(extra="forbid")

    probe: str
    args: dict[str, Any]
    record_type: str
    digest: str  # sha256 of the record's JSON at record time: a replay must reproduce it


def record_digest(out: ProbeOutput) -> str:
    """A stable digest of a probe output's typed record."""
    import hashlib

    data = json.dumps(out.record.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(data.encode()).hexdigest()


class Snapshot(BaseModel):
    """Everything needed to answer probe calls about one moment of one lab."""

    model_config = ConfigDict(extra="forbid")

    version: int = SNAPSHOT_VERSION
    scenario: str
    size: str
    phase: str  # "baseline" (healthy, before injection) or "incident"
    taken_at: str
    devices: list[dict[str, Any]]
    file_roots: dict[str, list[str]]
    vty_dirs: dict[str, str]
    runner_timeout_s: float
    runner_output_cap: int
    calls: list[ProbeCall]
    commands: list[CommandResult]
    seconds: float = 0.0

    def directory(self) -> StaticDirectory:
        """The recorded lab's devices."""
        return StaticDirectory([Device(d["name"], d["role"], d["namespace"], tuple(d["addresses"]),
                                       tuple(d.get("management", ())))
                                for d in self.devices])

    def context(self) -> ProbeContext:
        """A ProbeContext that answers from this snapshot (no root, no lab needed)."""
        runner = ReplayRunner(self.commands, self.runner_timeout_s, self.runner_output_cap)
        return ProbeContext(directory=self.directory(), runner=runner, file_roots=self.file_roots,
                            vty_dirs=self.vty_dirs)


def standard_calls(ctx: ProbeContext, protocol: str, names: Sequence[str] = (),
                   urls: Sequence[str] = ()) -> list[tuple[str, dict[str, Any]]]:
    """The probe calls a snapshot records (before the ones that depend on results, see `record`).

    `names`/`urls` are the lab's DNS names and web URLs, tried from every client position: the
    first end host of each role on each subnet (DNS servers and the like excluded).
    """
    calls: list[tuple[str, dict[str, Any]]] = []
    devices = ctx.directory.devices()
    has_dhcp = any(d.role == "dhcp" for d in devices)
    for d in devices:
        for probe in ("ip_addr", "ip_link", "link_counters", "ip_route", "ip_neigh", "nft_ruleset", "tc_qdisc",
                      "sockets", "processes", "nstat", "bridge_fdb"):
            calls.append((probe, {"dev": d.name}))
        for table in ("filter", "mangle"):
            calls.append(("iptables_rules", {"dev": d.name, "table": table}))
        for path in readable_files(ctx.file_roots.get(d.name, ())):
            calls.append(("read_file", {"dev": d.name, "path": path}))
        if d.role == "router":
            for command in ALWAYS_SHOWS + ROUTER_SHOWS.get(protocol, ()):
                calls.append(("vtysh_show", {"dev": d.name, "command": command}))
        if has_dhcp and d.role == "host" and "dhcp_check" in probe_names():
            calls.append(("dhcp_check", {"src": d.name}))
        if "cgroup_cpu" in probe_names() and d.role not in ("router", "switch"):
            calls.append(("cgroup_cpu", {"dev": d.name}))
        if "cpu_usage" in probe_names() and d.role not in ("router", "switch"):
            calls.append(("cpu_usage", {"dev": d.name, "interval_s": 1.0}))
    calls.append(("reachability", {}))
    calls += service_self_queries(devices, names)
    for src in client_positions(devices):
        for name in names:
            calls.append(("dig", {"src": src, "name": name}))
        for url in urls:
            calls.append(("http_get", {"src": src, "url": url}))
    return calls


def service_self_queries(devices: Sequence[Device], names: Sequence[str]) -> list[tuple[str, dict[str, Any]]]:
    """Each name server asked from its own namespace, at each of its addresses, for the network's first name:
    whether the service itself answers, whatever the path from the users does."""
    if not names:
        return []
    return [("dig", {"src": d.name, "name": names[0], "server": addr.split("/")[0]})
            for d in devices if d.role == "dns" for addr in d.addresses if ":" not in addr]


def client_positions(devices: Sequence[Device]) -> list[str]:
    """One user per subnet: the first host or client on each /24 (the views a ticket is written from)."""
    seen: set[str] = set()
    out = []
    for d in devices:
        if d.role not in ("host", "client") or not d.addresses:
            continue
        subnet = d.addresses[0].rsplit(".", 1)[0]
        if subnet not in seen:
            seen.add(subnet)
            out.append(d.name)
    return out


def readable_files(roots: Sequence[str]) -> list[str]:
    found = []
    for root in roots:
        if not os.path.isdir(root):
            continue
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(x for x in dirs if x not in ("www", "tmp"))
            for name in sorted(files):
                path = os.path.join(folder, name)
                if name in SKIP_FILES or not os.path.isfile(path) or os.path.islink(path):
                    continue
                if os.path.getsize(path) <= FILE_LIMIT or name.endswith(".log"):
                    found.append(path)
    return found


def record(ctx: ProbeContext, calls: Sequence[tuple[str, dict[str, Any]]], *, scenario: str, size: str,
           phase: str, traceroute_failures: bool = True) -> tuple[Snapshot, list[ProbeOutput]]:
    """Run `calls` against the live lab through a recording runner; the snapshot and the outputs.

    With `traceroute_failures`, traceroutes follow for failing reachability pairs (see `traceroute_calls`).
    Calls run a few at a time; the recorded order is the order of `calls`.
    """
    import time

    t0 = time.monotonic()
    runner = RecordingRunner(ctx.runner)
    live = ProbeContext(directory=ctx.directory, runner=runner, file_roots=ctx.file_roots, vty_dirs=ctx.vty_dirs)
    outputs, done = [], []

    def run(batch: list[tuple[str, dict[str, Any]]]) -> None:
        # a device's own probes run one after another (so none shows up in another's process list);
        # devices run a few at a time; lab-wide probes (reachability, lookups from clients) after them
        results: dict[int, ProbeOutput] = {}
        groups: dict[str, list[int]] = {}
        for index, (_, args) in enumerate(batch):
            groups.setdefault(args.get("dev") or f"#{index}", []).append(index)
        own = [ids for key, ids in groups.items() if not key.startswith("#")]
        shared = [ids for key, ids in groups.items() if key.startswith("#")]

        def one_group(ids: list[int]) -> None:
            for i in ids:
                results[i] = run_probe(live, batch[i][0], **batch[i][1])

        for stage in (own, shared):
            with ThreadPoolExecutor(max_workers=WORKERS) as pool:
                list(pool.map(one_group, stage))
        for i, (name, args) in enumerate(batch):
            outputs.append(results[i])
            done.append(ProbeCall(probe=name, args=args, record_type=type(results[i].record).__name__,
                                  digest=record_digest(results[i])))

    run(list(calls))
    if traceroute_failures:
        run(traceroute_calls(outputs))
    devices = [{"name": d.name, "role": d.role, "namespace": d.namespace, "addresses": list(d.addresses),
                **({"management": list(d.management)} if d.management else {})}
               for d in ctx.directory.devices()]
    snap = Snapshot(scenario=scenario, size=size, phase=phase,
                    taken_at=datetime.now(timezone.utc).isoformat(timespec="seconds"), devices=devices,
                    file_roots={k: list(v) for k, v in ctx.file_roots.items()}, vty_dirs=dict(ctx.vty_dirs),
                    runner_timeout_s=runner.timeout_s, runner_output_cap=runner.output_cap, calls=done,
                    commands=sorted(runner.results.values(), key=lambda r: r.argv),
                    seconds=round(time.monotonic() - t0, 2))
    return snap, outputs


def traceroute_calls(outputs: Sequence[ProbeOutput], limit: int = MAX_TRACEROUTES) -> list[tuple[str, dict[str, Any]]]:
    """Traceroutes for failing reachability pairs: one per unreachable destination, then per source, capped."""
    failing = [row for out in outputs if out.probe == "reachability" for row in out.record.rows if row.status != "ok"]
    picked: list[tuple[str, str]] = []
    for key in (lambda r: r.dst_ip, lambda r: r.src):
        seen: set[str] = set()
        for row in failing:
            if key(row) not in seen and (row.src, row.dst_ip) not in picked:
                seen.add(key(row))
                picked.append((row.src, row.dst_ip))
    return [("traceroute", {"src": src, "dst_ip": dst}) for src, dst in picked[:limit]]


def replay(snapshot: Snapshot) -> list[ProbeOutput]:
    """Every recorded call answered again from the snapshot (what `record` returned, re-parsed)."""
    ctx = snapshot.context()
    return [run_probe(ctx, call.probe, **call.args) for call in snapshot.calls]


def replay_mismatches(snapshot: Snapshot) -> list[str]:
    """Calls whose replayed record differs from the one recorded (empty: the snapshot replays exactly)."""
    bad = []
    for call, out in zip(snapshot.calls, replay(snapshot)):
        if type(out.record).__name__ != call.record_type or record_digest(out) != call.digest:
            bad.append(f"{call.probe} {json.dumps(call.args, sort_keys=True)}")
    return bad


def save(snapshot: Snapshot, path: Path) -> int:
    """Write the snapshot as gzipped JSON (deterministic bytes for equal content); returns the size."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(snapshot.model_dump(mode="json"), sort_keys=True, separators=(",", ":")).encode()
    path.write_bytes(gzip.compress(data, mtime=0))
    return path.stat().st_size


def load(path: Path) -> Snapshot:
    """Read a snapshot written by `save`; a clear error for anything else."""
    from faultline.errors import FaultlineError

    try:
        data = json.loads(gzip.decompress(path.read_bytes()))
    except (OSError, ValueError, EOFError) as exc:  # a gzip cut short raises EOFError
        raise FaultlineError(f"{path}: not a Faultline snapshot ({type(exc).__name__}: {exc})",
                             fix="point at a snapshot.json.gz written by `faultline corpus generate`") from None
    if data.get("version") != SNAPSHOT_VERSION:
        raise FaultlineError(f"{path}: snapshot version {data.get('version')} (this Faultline reads "
                             f"{SNAPSHOT_VERSION})", fix="regenerate the corpus with this version")
    return Snapshot.model_validate(data)
