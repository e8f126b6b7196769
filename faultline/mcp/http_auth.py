"""Who may talk to Faultline's MCP servers over streamable HTTP: a bearer token, checked before the MCP app.

With `mcp_token` set, a request without ``Authorization: Bearer <token>`` gets 401 before any tool, session or
index is touched; without one, only a loopback address may serve (another refuses to start, naming the setting).
The nightly's docs server always has one. Why not the SDK's OAuth: docs/dependencies.md#mcp-sdk-and-the-rest.
"""

from __future__ import annotations

import hmac
import ipaddress
import sys
from typing import Any

from faultline.errors import FaultlineError

TOKEN_FIX = "set FAULTLINE_MCP_TOKEN (the mcp_token setting) on the server and on every client"
_REFUSAL = b'{"error": "unauthorized: this MCP server needs Authorization: Bearer <mcp_token>"}'


def is_loopback(host: str) -> bool:
    """True when `host` names this machine only (a loopback address or `localhost`)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to any interface


def check_bind(host: str, token: str) -> None:
    """Raise unless serving on `host` with `token` (empty: none) is allowed (see the module docstring)."""
    if not token and not is_loopback(host):
        raise FaultlineError(f"refusing to serve MCP over HTTP on {host} without a token: anyone who reaches "
                             "that address could call the tools", fix=f"{TOKEN_FIX}, or listen on 127.0.0.1")


class BearerGate:
    """ASGI middleware: requests without ``Authorization: Bearer <token>`` get 401; lifespan events pass."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self._expected = token.encode()

    def _authorized(self, scope: dict[str, Any]) -> bool:
        for name, value in scope.get("headers") or ():
            if name.lower() == b"authorization":
                scheme, _, given = value.partition(b" ")
                return scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), self._expected)
        return False

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket") or self._authorized(scope):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        await send({"type": "http.response.start", "status": 401,
                    "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer"),
                                (b"content-length", str(len(_REFUSAL)).encode())]})
        await send({"type": "http.response.body", "body": _REFUSAL})


def serve_http(server: Any, *, host: str, port: int, token: str) -> None:
    """Serve `server` (an SDK `MCPServer`) over streamable HTTP at /mcp until stopped, behind the token."""
    import uvicorn

    check_bind(host, token)
    app: Any = server.streamable_http_app(host=host)  # keeps the SDK's DNS-rebinding check on loopback
    if token:
        app = BearerGate(app, token)
    else:
        print(f"faultline mcp: serving on {host}:{port} without a token: any local user may call the tools "
              f"({TOKEN_FIX} to require one)", file=sys.stderr)
    uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level=server.settings.log_level.lower())).run()
