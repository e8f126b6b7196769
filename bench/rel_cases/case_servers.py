"""Servers: `faultline mcp lab|docs --http` started as processes, probed with real HTTP requests and MCP clients.

Each trial: a lab server (recorded snapshot) and a docs server (the sample docs' index), both with
FAULTLINE_MCP_TOKEN set, must listen on 127.0.0.1 only, answer 401 to a request without the token, with a
wrong one or with another scheme, and serve an MCP client that sends it; the docs server's fetch_doc must
refuse paths, traversal and a symlink to a secret file; and a server asked for 0.0.0.0 without a token must
refuse to start, naming the setting, with nothing listening.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from rel_cases.common import FAULTLINE, REPO, Trial, cli

NAME = "servers"
CHECKS = ("MCP lab and docs servers over HTTP: loopback only by default, 401 without the bearer token, the "
          "clients with it served, fetch_doc reads no path, 0.0.0.0 without a token refused before listening")
DEFAULT_TRIALS = 3
NEEDS_ROOT = False
SNAPSHOT = REPO / "data/sample/backlog/sample-backlog-001/snapshot.json.gz"
INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}}).encode()


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(token: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "FAULTLINE_MCP_TOKEN"}
    return env | ({"FAULTLINE_MCP_TOKEN": token} if token else {})


def _status(port: int, authorization: str | None) -> int:
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    headers |= {"Authorization": authorization} if authorization else {}
    request = urllib.request.Request(f"http://127.0.0.1:{port}/mcp", data=INITIALIZE, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def _listening(port: int) -> set[str]:
    """Hex local addresses listening on `port` (/proc/net/tcp and tcp6)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            address, hex_port = fields[1].rsplit(":", 1)
            if int(hex_port, 16) == port and fields[3] == "0A":
                found.add(address)
    return found


def _start(argv: list[str], token: str, port: int, timeout: float = 240) -> subprocess.Popen:
    proc = subprocess.Popen(argv, cwd=REPO, env=_env(token), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return proc
        except OSError:
            time.sleep(0.3)
    _stop(proc)
    raise RuntimeError(f"{' '.join(argv[3:6])} did not listen on {port}")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _tool_calls(port: int, token: str, calls: list[tuple[str, dict]]) -> list[tuple[bool, str]]:
    """(is_error, text) of each call, through the SDK client with the token (Faultline's own client path)."""
    from mcp import Client

    from faultline.mcp_client import client_target

    async def main() -> list[tuple[bool, str]]:
        async with Client(client_target(f"http://127.0.0.1:{port}/mcp", token)) as client:
            out = []
            for tool, args in calls:
                result = await client.call_tool(tool, args)
                out.append((bool(result.is_error), "".join(getattr(c, "text", "") for c in result.content)))
            return out

    return asyncio.run(main())


def _gate(port: int, token: str) -> list[str]:
    """What the token check got wrong on `port` (empty: nothing)."""
    wrong = []
    for header, expected in ((None, 401), ("Bearer " + token[::-1], 401), (f"Basic {token}", 401),
                             (f"Bearer {token}", 200)):
        got = _status(port, header)
        if got != expected:
            wrong.append(f"Authorization {header and header.split()[0]!r}: HTTP {got}, expected {expected}")
    if _listening(port) != {"0100007F"}:
        wrong.append(f"listens on {sorted(_listening(port))}, not 127.0.0.1 only")
    return wrong


def _lab(work: Path, token: str) -> list[str]:
    port = _port()
    proc = _start([*FAULTLINE, "--db", str(work / "lab.duckdb"), "mcp", "lab", "--snapshot", str(SNAPSHOT),
                   "--submission-out", str(work / "sub.json"), "--http", str(port)], token, port)
    try:
        wrong = [f"lab: {w}" for w in _gate(port, token)]
        (failed, text), = _tool_calls(port, token, [("list_devices", {})])
        if failed or "host_2_1_1_2" not in text:
            wrong.append(f"lab: list_devices through the client with the token failed: {text[:120]}")
        return wrong
    finally:
        _stop(proc)


def _docs(work: Path, token: str, db: Path, lancedb: Path) -> list[str]:
    port = _port()
    proc = _start([*FAULTLINE, "--db", str(db), "--lancedb", str(lancedb), "mcp", "docs", "--http", str(port)],
                  token, port)
    secret = work / "secret.txt"
    secret.write_text("SERVERS-CANARY\n")
    link = lancedb / "secret-link"
    link.unlink(missing_ok=True)
    link.symlink_to(secret)
    hostile = [str(secret), "../../../../etc/passwd", str(link), "secret-link", "' OR id != '", "0" * 31 + "/"]
    try:
        wrong = [f"docs: {w}" for w in _gate(port, token)]
        found = _tool_calls(port, token, [("search_docs", {"query": "BGP Hold Timer Expired", "k": 2})]
                            + [("fetch_doc", {"chunk_id": h}) for h in hostile])
        if found[0][0] or "chunk_id" not in found[0][1]:
            wrong.append(f"docs: search through the client with the token failed: {found[0][1][:120]}")
        for chunk_id, (failed, text) in zip(hostile, found[1:]):
            if not failed or "is not a chunk_id" not in text or "CANARY" in text:
                wrong.append(f"docs: fetch_doc({chunk_id!r}) was not refused: {text[:120]}")
        return wrong
    finally:
        _stop(proc)


def _open_bind(work: Path) -> list[str]:
    wrong = []
    for command in ("lab", "docs"):
        port = _port()
        extra = ["--snapshot", str(SNAPSHOT), "--submission-out", str(work / "x.json")] if command == "lab" else []
        done = subprocess.run([*FAULTLINE, "--db", str(work / "open.duckdb"), "mcp", command, *extra, "--http",
                               str(port), "--host", "0.0.0.0"], cwd=REPO, env=_env(None), capture_output=True,
                              text=True, timeout=120, stdin=subprocess.DEVNULL, check=False)
        if done.returncode == 0 or "FAULTLINE_MCP_TOKEN" not in done.stderr or "Traceback" in done.stderr:
            wrong.append(f"{command} on 0.0.0.0 without a token: exit {done.returncode}, {done.stderr[-150:]!r}")
        if _listening(port):
            wrong.append(f"{command} on 0.0.0.0 without a token left something listening")
    return wrong


def run(trials: int, work: Path) -> list[Trial]:
    """Build the sample docs' index once, then `trials` rounds of servers with a fresh random token each."""
    db, lancedb = work / "docs.duckdb", work / "lancedb"
    for args in (("ingest", "docs", str(REPO / "data/sample/docs")), ("index", "--kind", "docs")):
        done = cli(db, *args, lancedb=lancedb)
        if done.returncode != 0:
            return [Trial(ok=False, detail=f"faultline {' '.join(args)} failed: {done.stderr[-300:]}",
                          defect="the case's docs index could not be built")]
    results = []
    for number in range(1, trials + 1):
        folder = work / f"trial{number}"
        folder.mkdir(parents=True, exist_ok=True)
        token = secrets.token_urlsafe(24)
        try:
            wrong = _lab(folder, token) + _docs(folder, token, db, lancedb) + _open_bind(folder)
        except Exception as exc:  # noqa: BLE001 - a server that did not come up is this trial's failure
            wrong = [f"{type(exc).__name__}: {exc}"]
        results.append(Trial(ok=not wrong, detail="; ".join(wrong[:4]) or "lab and docs gated, fetch_doc safe",
                             defect="an MCP server answered without the token, listened beyond loopback or read "
                                    "a path" if wrong else ""))
    return results
