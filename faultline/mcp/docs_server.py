"""The docs MCP server (`faultline mcp docs`): ``search_docs`` and ``fetch_doc`` over the doc-chunk index.

Both read rows of the LanceDB ``doc_chunks`` index, never a file or the warehouse (so the server runs beside the
DuckDB file's writer); a chunk id other than the 32 hex characters `search_docs` returns is refused before the
index is asked. Stdio by default, ``--http PORT`` for HTTP; docs/astra.md#the-domain-knowledge-agent.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from faultline.config import Settings

INSTRUCTIONS = ("Documentation of the network (FRR manuals, error catalogue, runbooks), split into sections. "
                "search_docs finds sections for a question or an error message; fetch_doc returns a section.")
MAX_K = 20
CHUNK_ID = re.compile(r"[0-9a-f]{32}")


class DocHit(BaseModel):
    """One search result."""

    model_config = ConfigDict(extra="forbid")
    chunk_id: str
    title: str
    score: float
    snippet: str


class DocHits(BaseModel):
    """The results of one search, best first."""

    model_config = ConfigDict(extra="forbid")
    query: str
    hits: list[DocHit]


class DocChunk(BaseModel):
    """One documentation section."""

    model_config = ConfigDict(extra="forbid")
    chunk_id: str
    doc_id: str
    title: str
    text: str


class DocsIndex:
    """The doc-chunk index as the server's tools see it (one embedder for the server's lifetime)."""

    def __init__(self, settings: Settings) -> None:
        from faultline.retrieval.embed import Embedder

        self.settings = settings
        self.embedder = Embedder(settings)

    def search(self, query: str, k: int) -> DocHits:
        from faultline.retrieval.search import search

        hits = search(self.settings, "docs", query, k=max(1, min(k, MAX_K)), mode="hybrid", embedder=self.embedder)
        return DocHits(query=query, hits=[DocHit(chunk_id=h.id, title=h.title, score=round(h.score, 4),
                                                 snippet=h.snippet) for h in hits])

    def fetch(self, chunk_id: str) -> DocChunk | None:
        """The section `chunk_id` names, or None when the index has none; ValueError for a malformed id."""
        from faultline.retrieval.search import _open_table

        if not CHUNK_ID.fullmatch(chunk_id):
            raise ValueError(f"{chunk_id[:80]!r} is not a chunk_id: fetch_doc takes the 32 hexadecimal characters "
                             "search_docs returns, never a file path")
        table = _open_table(self.settings, "docs")
        # the id is 32 hex digits (checked above), so it cannot end the quoted literal
        rows = table.search().where(f"id = '{chunk_id}'").select(["id", "doc_id", "title", "text"]).limit(1)
        found = rows.to_arrow().to_pylist()
        if not found:
            return None
        row = found[0]
        return DocChunk(chunk_id=row["id"], doc_id=row["doc_id"] or "", title=row["title"] or "",
                        text=row["text"] or "")


def build_docs_server(settings: Settings) -> Any:
    """The MCP server object with the two tools registered."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    from faultline.errors import FaultlineError

    index = DocsIndex(settings)
    server = MCPServer(name="faultline-docs", instructions=INSTRUCTIONS)

    @server.tool(description="Search the documentation; returns up to k sections (chunk_id, title, score, "
                             "snippet), best first. k is capped at 20.")
    def search_docs(query: str, k: int = 5) -> DocHits:
        try:
            return index.search(query, k)
        except FaultlineError as exc:
            raise ToolError(f"{exc.message} ({exc.fix})") from exc

    @server.tool(description="Fetch one documentation section by the chunk_id search_docs returned (32 hexadecimal "
                             "characters; sections are rows of the index, never files).")
    def fetch_doc(chunk_id: str) -> DocChunk:
        try:
            chunk = index.fetch(chunk_id)
        except FaultlineError as exc:
            raise ToolError(f"{exc.message} ({exc.fix})") from exc
        except ValueError as exc:
            raise ToolError(str(exc)) from exc
        if chunk is None:
            raise ToolError(f"no documentation section {chunk_id!r}; use a chunk_id from search_docs")
        return chunk

    return server


PARENT_PID_ENV = "FAULTLINE_PARENT_PID"


def _exit_with_parent() -> None:
    import os
    import threading
    import time

    # the starter's pid when it gave it: a parent killed before this line ran has already handed us on
    parent = int(os.environ.get(PARENT_PID_ENV) or os.getppid())

    def watch() -> None:
        while os.getppid() == parent:  # an orphan is handed to another process
            time.sleep(1.0)
        os._exit(0)  # nothing to flush: the server only reads

    threading.Thread(target=watch, name="faultline-docs-parent", daemon=True).start()


def serve(settings: Settings, *, http_port: int | None = None, host: str = "127.0.0.1",
          exit_with_parent: bool = False) -> None:
    """Serve until the client disconnects (stdio) or the process is stopped (streamable HTTP at /mcp, behind
    `settings.mcp_token`: see `faultline.mcp.http_auth`); with `exit_with_parent`, also once the parent process
    is gone (a killed nightly leaves no server behind)."""
    from faultline.mcp import http_auth

    token = settings.mcp_token.get_secret_value()
    if http_port is not None:
        http_auth.check_bind(host, token)  # before the embedding model loads: a refusal comes at once
    if exit_with_parent:
        _exit_with_parent()
    server = build_docs_server(settings)
    if http_port is None:
        server.run("stdio")
    else:
        http_auth.serve_http(server, host=host, port=http_port, token=token)
