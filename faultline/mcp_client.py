"""How Faultline's MCP clients reach a server over streamable HTTP: the URL itself, or a transport that sends the
`mcp_token` setting as a bearer token (the servers' side of the rule: `faultline.mcp.http_auth`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any


def client_target(url: str, token: str) -> Any:
    """What the SDK's `Client` connects to for `url`: the URL itself, or a transport sending the token."""
    if not token:
        return url
    return _bearer_transport(url, token)


@asynccontextmanager
async def _bearer_transport(url: str, token: str) -> AsyncIterator[Any]:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    # the SDK's own timeouts for its default client: a response stream may stay open for minutes
    timeout = httpx2.Timeout(30.0, read=300.0)
    async with (httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=timeout) as http,
                streamable_http_client(url, http_client=http) as streams):
        yield streams
