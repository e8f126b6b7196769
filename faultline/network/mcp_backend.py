"""A `Backend` over any NIKA-compatible MCP server: each probe's commands run through its `exec_shell` tool.

`mcp_backend(URL or command line)` connects over streamable HTTP or stdio; the client lives on an event-loop
thread of its own, so `Backend.probe` stays synchronous. How commands map onto the server and where the device
directory comes from: docs/network.md#the-mcp-backend.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from faultline.errors import FaultlineError
from faultline.network.backend import Backend
from faultline.network.devices import Device, StaticDirectory
from faultline.network.probes import ProbeContext
from faultline.network.runner import CommandResult, NotRecorded, Runner

if TYPE_CHECKING:
    from faultline.config import Settings
    from faultline.network.backends import NetworkTarget

CALL_MARGIN_S = 20.0  # on top of the command timeout: transport and server overhead


class McpConnection:
    """One MCP client session on a private event loop thread; `call` is synchronous."""

    def __init__(self, target: Any, *, connect_timeout_s: float = 60.0, token: str = "") -> None:
        self.target = target
        self._token = token
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._client: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, name="faultline-mcp-client", daemon=True)
        self._thread.start()
        self._main = asyncio.run_coroutine_threadsafe(self._session(), self._loop)
        if not self._ready.wait(connect_timeout_s) or self._client is None:
            self.close()
            raise FaultlineError(f"cannot connect to the MCP server {_describe(target)}: {self._error or 'timed out'}",
                                 fix="check the URL or command; `faultline mcp lab --snapshot FILE` starts one")

    async def _session(self) -> None:
        from mcp import Client

        self._stop = asyncio.Event()
        try:
            async with Client(_server(self.target, self._token)) as client:
                self._client = client
                self._ready.set()
                await self._stop.wait()
        except BaseException as exc:  # noqa: BLE001 - reported to the caller of __init__ or ignored on close
            self._error = exc
        finally:
            self._client = None
            self._ready.set()

    def tools(self) -> set[str]:
        """Names of the server's tools."""
        return {t.name for t in self._run(self._client.list_tools(), 60.0).tools}

    def call(self, tool: str, args: dict[str, Any], timeout_s: float = 60.0) -> Any:
        """Call one tool; the raw `CallToolResult`."""
        if self._client is None:
            raise FaultlineError("the MCP connection is closed", fix="open a new backend")
        return self._run(self._client.call_tool(tool, args), timeout_s)

    def _run(self, coro: Any, timeout_s: float) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout_s)

    def close(self) -> None:
        """End the session (a stdio server exits with it) and stop the loop thread."""
        if self._stop is not None and self._loop.is_running():
            self._loop.call_soon_threadsafe(self._stop.set)
            try:
                self._main.result(10)
            except Exception:  # noqa: BLE001 - closing anyway
                pass
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)


def _server(target: Any, token: str) -> Any:
    from mcp import StdioServerParameters

    if isinstance(target, str) and target.startswith(("http://", "https://")):
        from faultline.mcp_client import client_target

        return client_target(target, token)
    if not isinstance(target, (str, list, tuple)):
        return target  # an SDK server object or transport, connected as the SDK's Client does
    argv = shlex.split(target) if isinstance(target, str) else list(target)
    # the SDK passes only a safe default environment: keep Faultline's own settings
    env = {k: v for k, v in os.environ.items() if k.startswith("FAULTLINE_")}
    return StdioServerParameters(command=argv[0], args=argv[1:], env=env or None)


def _describe(target: Any) -> str:
    if isinstance(target, str):
        return target
    return shlex.join(target) if isinstance(target, (list, tuple)) else type(target).__name__


def _text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


class McpRunner(Runner):
    """Runs a probe's argument vectors on the devices of an MCP server through `exec_shell`."""

    def __init__(self, conn: McpConnection, *, timeout_s: float = 10.0) -> None:
        super().__init__(timeout_s=timeout_s)
        self.conn = conn

    def close(self) -> None:
        """End the MCP session (a stdio server process exits)."""
        self.conn.close()

    def run(self, device: str, argv: Sequence[str], *, namespace: str | None, timeout_s: float | None = None,
            output_cap: int | None = None) -> CommandResult:
        vector = list(argv)
        full = ["ip", "netns", "exec", namespace, *vector] if namespace is not None else vector
        command = self._remote_command(vector, namespace)
        start = time.monotonic()
        if command is None:
            return CommandResult(device=device, namespace=namespace, argv=full, exit_code=127, stdout="",
                                 stderr="not available over MCP: needs the lab host's root namespace",
                                 duration_s=0.0)
        limit = (timeout_s or self.timeout_s) + CALL_MARGIN_S
        result = self.conn.call("exec_shell", {"host_name": device, "command": command}, timeout_s=limit)
        data = result.structured_content if isinstance(result.structured_content, dict) else None
        took = round(time.monotonic() - start, 4)
        if data and "error" in data:
            if data.get("missing"):
                raise NotRecorded(list(data["missing"]))
            return CommandResult(device=device, namespace=namespace, argv=full, exit_code=126, stdout="",
                                 stderr=f"{data['error']}: {data.get('details', '')}", duration_s=took)
        if data and "stdout" in data:
            return CommandResult(device=device, namespace=namespace, argv=full, exit_code=data.get("exit_code"),
                                 stdout=data["stdout"], stderr=data.get("stderr", ""), duration_s=took,
                                 timed_out=bool(data.get("timed_out")), truncated=bool(data.get("truncated")))
        failed = bool(getattr(result, "is_error", False))
        return CommandResult(device=device, namespace=namespace, argv=full, exit_code=1 if failed else 0,
                             stdout="" if failed else _text(result), stderr=_text(result) if failed else "",
                             duration_s=took)

    @staticmethod
    def _remote_command(argv: list[str], namespace: str | None) -> str | None:
        if namespace is not None:
            return shlex.join(argv)
        if argv[:1] == ["vtysh"] and "-c" in argv:
            return shlex.join(["vtysh", "-c", argv[argv.index("-c") + 1]])
        if argv[:3] == ["ip", "netns", "pids"]:
            return "ps -e -o pid="
        if argv[:1] == ["ps"]:
            return shlex.join(argv)
        return None


def _directory(conn: McpConnection) -> tuple[StaticDirectory, dict[str, list[str]]]:
    import json

    if "list_devices" in conn.tools():
        rows = json.loads(_text(conn.call("list_devices", {})))
        devices = [Device(r["name"], r.get("role") or "host", f"mcp-{r['name']}", tuple(r.get("addresses") or ()))
                   for r in rows]
        return StaticDirectory(devices), {r["name"]: list(r.get("files") or []) for r in rows}
    data = json.loads(_text(conn.call("get_reachability", {}, timeout_s=600)))
    hosts = data.get("hosts") or {}
    return StaticDirectory([Device(n, "host", f"mcp-{n}", (f"{ip}/32",)) for n, ip in sorted(hosts.items())]), {}


def mcp_backend(url_or_command: Any, *, timeout_s: float = 10.0, token: str = "") -> Backend:
    """A backend whose probes run on the devices of an MCP server: an http(s) URL (sent `token` as a bearer
    token when given), a stdio command line (string or argv list), or an SDK server object / transport
    (connected in-process)."""
    conn = McpConnection(url_or_command, token=token)
    try:
        if "exec_shell" not in conn.tools():
            raise FaultlineError(f"the MCP server {_describe(url_or_command)} has no exec_shell tool",
                                 fix="point at a NIKA-compatible server (e.g. `faultline mcp lab`)")
        directory, roots = _directory(conn)
    except BaseException:
        conn.close()
        raise
    ctx = ProbeContext(directory=directory, runner=McpRunner(conn, timeout_s=timeout_s), file_roots=roots)
    return Backend(kind="mcp", ctx=ctx)


def open_mcp(settings: Settings, target: NetworkTarget) -> Backend:
    """The registry's opener: `target.url`, a server URL or a command line, sent the `mcp_token` setting."""
    if not target.url:
        raise FaultlineError("the mcp network backend needs a server",
                             fix="pass --url http://host:port/mcp or a command")
    return mcp_backend(target.url, token=settings.mcp_token.get_secret_value())
