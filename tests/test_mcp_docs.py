"""The docs MCP server through a real MCP client session to `faultline mcp docs` (stdio subprocess)."""

from __future__ import annotations

import asyncio
import sys

import pytest

from tests.conftest import REPO


@pytest.fixture
def docs_index(run_cli, settings):
    run_cli("ingest", "docs", str(REPO / "data" / "sample" / "docs"))
    run_cli("index", "--kind", "docs")
    return settings


def _session(settings, body):
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=[
        "-m", "faultline.cli.main", "--db", str(settings.duckdb_path), "--lancedb", str(settings.lancedb_dir),
        "mcp", "docs"], cwd=str(REPO))

    async def main():
        async with Client(params) as client:
            return await body(client)

    return asyncio.run(main())


def test_search_and_fetch_over_a_real_session(docs_index):
    async def body(client):
        tools = sorted(t.name for t in (await client.list_tools()).tools)
        found = await client.call_tool("search_docs", {"query": "BGP Hold Timer Expired notifications", "k": 3})
        first = found.structured_content["hits"][0]
        fetched = await client.call_tool("fetch_doc", {"chunk_id": first["chunk_id"]})
        missing = await client.call_tool("fetch_doc", {"chunk_id": "no-such-chunk"})
        return tools, found.structured_content, fetched.structured_content, missing

    tools, found, chunk, missing = _session(docs_index, body)
    assert tools == ["fetch_doc", "search_docs"]
    assert len(found["hits"]) == 3 and found["hits"][0]["title"] == "NOC runbook > BGP > Session flapping"
    scores = [h["score"] for h in found["hits"]]
    assert scores == sorted(scores, reverse=True)
    assert chunk["chunk_id"] == found["hits"][0]["chunk_id"] and "Hold Timer Expired" in chunk["text"]
    assert chunk["doc_id"].endswith("noc-runbook.md")
    assert missing.is_error and "no documentation section" in missing.content[0].text


def test_missing_index_is_a_tool_error_not_a_crash(settings):
    async def body(client):
        return await client.call_tool("search_docs", {"query": "bgp"})

    result = _session(settings, body)
    assert result.is_error and "faultline index" in result.content[0].text
