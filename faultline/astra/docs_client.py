"""A synchronous client of the docs MCP server (`faultline mcp docs`) for the DomainKnowledgeAgent.

One MCP session stays open for the client's lifetime (the server loads the embedding model once), driven by an
event loop in a background thread, so agents in worker threads call it like a plain object. By default it spawns
the server over stdio with this interpreter; with ``settings.docs_mcp_url`` it connects over streamable HTTP.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import sys
import threading
from typing import TYPE_CHECKING, Any

from faultline.errors import FaultlineError

if TYPE_CHECKING:
    from faultline.config import Settings

CALL_TIMEOUT_S = 180.0  # the first search waits for the server to load MiniLM on a busy machine


def server_command(settings: Settings) -> tuple[list[str], dict[str, str]]:
    """The arguments (after the interpreter) and environment of a `faultline mcp docs` server for these
    settings' index (stdio; add ``--http PORT`` for streamable HTTP)."""
    env = {**os.environ, "FAULTLINE_EMBEDDING_MODEL": settings.embedding_model,
           "FAULTLINE_HYBRID_VECTOR_WEIGHT": str(settings.hybrid_vector_weight),
           "FAULTLINE_EMBEDDING_THREADS": str(settings.embedding_threads)}
    return ["-m", "faultline.cli.main", "--db", str(settings.duckdb_path), "--lancedb", str(settings.lancedb_dir),
            "mcp", "docs"], env


def _server_target(settings: Settings) -> Any:
    from mcp import StdioServerParameters

    if settings.docs_mcp_url:
        from faultline.mcp_client import client_target

        return client_target(settings.docs_mcp_url, settings.mcp_token.get_secret_value())
    args, env = server_command(settings)
    return StdioServerParameters(command=sys.executable, env=env, args=args)


def open_docs_client(settings: Settings) -> DocsClient | None:
    """A docs session, or None when the doc index cannot be reached (the domain agent then says why)."""
    try:
        return DocsClient(settings)
    except FaultlineError:
        return None


class DocsClient:
    """`search(query, k)` and `fetch(chunk_id)` over one MCP session; use as a context manager or `close()`."""

    def __init__(self, settings: Settings) -> None:
        self._target = _server_target(settings)
        self._ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._loop = asyncio.new_event_loop()
        self._queue: asyncio.Queue[Any] | None = None
        self._thread = threading.Thread(target=self._loop.run_until_complete, args=(self._main(),),
                                        name="faultline-docs-mcp", daemon=True)
        self._thread.start()
        try:
            self._ready.result(timeout=CALL_TIMEOUT_S)
        except Exception as exc:
            raise FaultlineError(f"cannot reach the docs MCP server: {exc}",
                                 fix="build the doc index (`faultline ingest docs`, `faultline index`) or check "
                                 "FAULTLINE_DOCS_MCP_URL") from exc

    async def _main(self) -> None:
        from mcp import Client

        self._queue = asyncio.Queue()
        try:
            async with Client(self._target, raise_exceptions=True) as client:
                self._ready.set_result(None)
                while True:
                    item = await self._queue.get()
                    if item is None:
                        return
                    tool, args, future = item
                    try:
                        result = await client.call_tool(tool, args)
                        if result.is_error:
                            text = " ".join(getattr(c, "text", "") for c in result.content)
                            future.set_exception(FaultlineError(f"docs server: {text}"))
                        else:
                            future.set_result(result.structured_content)
                    except Exception as exc:  # noqa: BLE001 - handed to the caller's thread
                        future.set_exception(exc)
        except Exception as exc:  # noqa: BLE001
            if not self._ready.done():
                self._ready.set_exception(exc)

    def _call(self, tool: str, args: dict[str, Any]) -> Any:
        if self._queue is None or not self._thread.is_alive():
            raise FaultlineError("the docs MCP session is closed")
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._loop.call_soon_threadsafe(self._queue.put_nowait, (tool, args, future))
        return future.result(timeout=CALL_TIMEOUT_S)

    def search(self, query: str, k: int = 5) -> list[dict[str, Any]]:
        """Doc sections for ``query``, best first: chunk_id, title, score, snippet."""
        return list(self._call("search_docs", {"query": query, "k": k})["hits"])

    def fetch(self, chunk_id: str) -> dict[str, Any]:
        """One section: chunk_id, doc_id, title, text."""
        return dict(self._call("fetch_doc", {"chunk_id": chunk_id}))

    def close(self) -> None:
        """End the session (and the spawned server)."""
        if self._thread.is_alive() and self._queue is not None:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, None)
            self._thread.join(timeout=30)

    def __enter__(self) -> DocsClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
