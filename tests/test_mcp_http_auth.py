"""The MCP servers over HTTP, started as processes the way a person starts them: where they listen, the
bearer token they require, and the clients that send it (issue 20, servers)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from faultline.errors import FaultlineError
from faultline.network.mcp_backend import mcp_backend

REPO = Path(__file__).resolve().parents[1]
SNAPSHOT = REPO / "data/sample/backlog/sample-backlog-001/snapshot.json.gz"
FAULTLINE = [sys.executable, "-m", "faultline.cli.main"]
TOKEN = "test-token-4f1c9a"
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "probe", "version": "0"}}}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(token: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "FAULTLINE_MCP_TOKEN"}
    if token is not None:
        env["FAULTLINE_MCP_TOKEN"] = token
    return env


def _lab_argv(tmp_path: Path, *extra: str) -> list[str]:
    return [*FAULTLINE, "--db", str(tmp_path / "fl.duckdb"), "mcp", "lab", "--snapshot", str(SNAPSHOT),
            "--submission-out", str(tmp_path / "sub.json"), *extra]


def _wait_listening(proc: subprocess.Popen, port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the server exited with {proc.returncode}"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"nothing listens on {port}")


def post(port: int, authorization: str | None) -> int:
    """The HTTP status of an MCP initialize request with this Authorization header (None: without one)."""
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if authorization is not None:
        headers["Authorization"] = authorization
    request = urllib.request.Request(f"http://127.0.0.1:{port}/mcp", data=json.dumps(INITIALIZE).encode(),
                                     headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def _listening_addresses(port: int) -> set[str]:
    """Local addresses (hex, as /proc/net/tcp{,6} write them) of sockets listening on `port`."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            address, hex_port = fields[1].rsplit(":", 1)
            if int(hex_port, 16) == port and fields[3] == "0A":  # 0A: LISTEN
                found.add(address)
    return found


@pytest.fixture
def lab_server(tmp_path):
    """A `faultline mcp lab --snapshot ... --http PORT` process with FAULTLINE_MCP_TOKEN set."""
    port = _free_port()
    proc = subprocess.Popen(_lab_argv(tmp_path, "--http", str(port)), env=_env(TOKEN), cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_listening(proc, port)
        yield port
    finally:
        proc.terminate()
        proc.wait(15)


def test_requests_without_the_token_are_refused_and_the_client_with_it_works(lab_server):
    port = lab_server
    assert post(port, None) == 401
    assert post(port, "Bearer wrong-token") == 401
    assert post(port, f"Basic {TOKEN}") == 401
    assert post(port, f"Bearer {TOKEN}x") == 401
    assert post(port, f"Bearer {TOKEN}") == 200
    with pytest.raises(FaultlineError, match="cannot connect"):
        mcp_backend(f"http://127.0.0.1:{port}/mcp")  # a client without the token gets nothing
    backend = mcp_backend(f"http://127.0.0.1:{port}/mcp", token=TOKEN)
    try:
        assert backend.probe("ip_addr", dev="host_2_1_1_2").record is not None
    finally:
        backend.close()


def test_the_diagnose_command_sends_the_token_from_the_setting(lab_server, tmp_path):
    url = f"http://127.0.0.1:{lab_server}/mcp"
    argv = [*FAULTLINE, "--db", str(tmp_path / "d.duckdb"), "diagnose", "x", "--backend", "mcp", "--url", url]
    ok = subprocess.run(argv, env=_env(TOKEN), cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    refused = subprocess.run(argv, env=_env(None), cwd=REPO, capture_output=True, text=True, timeout=300,
                             check=False)
    assert ok.returncode == 0, ok.stderr[-2000:]
    assert refused.returncode != 0 and "cannot connect to the MCP server" in refused.stderr


def test_a_server_listens_on_loopback_only_by_default(tmp_path):
    port = _free_port()
    proc = subprocess.Popen(_lab_argv(tmp_path, "--http", str(port)), env=_env(None), cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _wait_listening(proc, port)
        assert _listening_addresses(port) == {"0100007F"}  # 127.0.0.1, and no other address
        assert post(port, None) == 200  # no token set: loopback serves this machine's users
    finally:
        proc.terminate()
        _, errors = proc.communicate(timeout=15)
    assert "without a token" in errors and "FAULTLINE_MCP_TOKEN" in errors


@pytest.mark.parametrize("command", ["lab", "docs"])
def test_another_address_without_a_token_is_refused_before_serving(tmp_path, command):
    port = _free_port()
    argv = (_lab_argv(tmp_path, "--http", str(port), "--host", "0.0.0.0") if command == "lab" else
            [*FAULTLINE, "--db", str(tmp_path / "fl.duckdb"), "mcp", "docs", "--http", str(port), "--host", "0.0.0.0"])
    done = subprocess.run(argv, env=_env(None), cwd=REPO, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode != 0
    assert "without a token" in done.stderr and "FAULTLINE_MCP_TOKEN" in done.stderr
    assert "Traceback" not in done.stderr
    assert not _listening_addresses(port)
