"""The docs MCP server through a real MCP client session to `faultline mcp docs` (stdio subprocess)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

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
        missing = await client.call_tool("fetch_doc", {"chunk_id": "0" * 32})
        return tools, found.structured_content, fetched.structured_content, missing

    tools, found, chunk, missing = _session(docs_index, body)
    assert tools == ["fetch_doc", "search_docs"]
    assert len(found["hits"]) == 3 and found["hits"][0]["title"] == "NOC runbook > BGP > Session flapping"
    scores = [h["score"] for h in found["hits"]]
    assert scores == sorted(scores, reverse=True)
    assert chunk["chunk_id"] == found["hits"][0]["chunk_id"] and "Hold Timer Expired" in chunk["text"]
    assert chunk["doc_id"].endswith("noc-runbook.md")
    assert missing.is_error and "no documentation section" in missing.content[0].text


def test_fetch_reads_no_file_a_caller_names(docs_index, tmp_path):
    """Paths, traversal, a symlink to a secret and filter syntax are refused as chunk ids; nothing is read."""
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-CANARY\n")
    (docs_index.lancedb_dir / "link").symlink_to(secret)
    hostile = [str(secret), "../../../../etc/passwd", "..%2f..%2fetc%2fpasswd", "docs/../../secret.txt",
               str(docs_index.lancedb_dir / "link"), "link", "file:///etc/passwd", "' OR id != '", "x' OR '1'='1",
               "0" * 31 + "/", "A" * 32, "0" * 32 + "\n../x", "0" * 32 + "\x00", "0" * 33, ""]

    async def body(client):
        return [await client.call_tool("fetch_doc", {"chunk_id": chunk_id}) for chunk_id in hostile]

    for chunk_id, result in zip(hostile, _session(docs_index, body)):
        text = result.content[0].text
        assert result.is_error, chunk_id
        assert "is not a chunk_id" in text and "never a file path" in text, (chunk_id, text)
        assert "CANARY" not in text and "root:" not in text


def test_missing_index_is_a_tool_error_not_a_crash(settings):
    async def body(client):
        return await client.call_tool("search_docs", {"query": "bgp"})

    result = _session(settings, body)
    assert result.is_error and "faultline index" in result.content[0].text


def test_a_runs_shared_server_answers_over_http_and_is_gone_after_the_run(docs_index):
    import socket

    from faultline.nightly.docs_service import shared_docs_server
    from faultline.nightly.lent import docs_session
    from tests.test_mcp_http_auth import post

    with shared_docs_server(docs_index) as shared:
        url = shared.docs_mcp_url
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        hits = docs_session(shared).search("BGP Hold Timer Expired notifications", 3)
        token = shared.mcp_token.get_secret_value()
        # a token made for the run: another local user reaching the port gets nothing
        assert len(token) >= 32 and post(port, None) == 401 and post(port, "Bearer guess") == 401
    assert url.startswith("http://127.0.0.1:") and docs_index.docs_mcp_url == ""
    assert hits[0]["title"] == "NOC runbook > BGP > Session flapping"
    with pytest.raises(OSError):  # stopped with the run: nothing listens there any more
        socket.create_connection(("127.0.0.1", port), timeout=2).close()


def test_the_nightlys_units_and_their_docs_server_embed_with_one_torch_thread(docs_index):
    import psutil

    from faultline.nightly.docs_service import shared_docs_server
    from faultline.nightly.units import unit_settings

    units = unit_settings(docs_index)
    assert docs_index.embedding_threads == 0 and units.embedding_threads == 1
    chosen = docs_index.model_copy(update={"embedding_threads": 3})
    assert unit_settings(chosen).embedding_threads == 3  # a count the user set is kept
    with shared_docs_server(units) as shared:
        port = shared.docs_mcp_url.rsplit(":", 1)[1].split("/")[0]  # the run's server, not another test's
        servers = [p for p in psutil.Process().children(recursive=True)
                   if "docs" in p.cmdline() and port in p.cmdline()]
        assert [p.environ().get("FAULTLINE_EMBEDDING_THREADS") for p in servers] == ["1"]


def test_settings_that_name_a_server_or_a_cluster_are_left_alone(settings):
    from faultline.nightly.docs_service import shared_docs_server

    named = settings.model_copy(update={"docs_mcp_url": "http://docs.example:9000/mcp"})
    cluster = settings.model_copy(update={"nightly_task_runner": "cluster", "nightly_dask_address": "tcp://x:1"})
    for given in (named, cluster):
        with shared_docs_server(given) as shared:
            assert shared is given


def test_a_runs_server_stops_when_the_process_that_started_it_is_killed(docs_index, tmp_path):
    import os
    import signal
    import subprocess
    import time

    script = ("import sys, time\n"
              "from faultline.config import Settings\n"
              "from faultline.nightly.docs_service import shared_docs_server\n"
              f"settings = Settings(duckdb_path={str(docs_index.duckdb_path)!r}, "
              f"lancedb_dir={str(docs_index.lancedb_dir)!r})\n"
              "with shared_docs_server(settings) as shared:\n"
              "    print(shared.docs_mcp_url, flush=True)\n"
              "    time.sleep(600)\n")
    flow = subprocess.Popen([sys.executable, "-c", script], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        url = flow.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        port = url.rsplit(":", 1)[1].split("/")[0]
        servers = subprocess.run(["pgrep", "-f", "--", f"--http {port} "], capture_output=True, text=True,
                                 check=False).stdout.split()
        assert len(servers) == 1
    finally:
        os.kill(flow.pid, signal.SIGKILL)  # a crash: no `finally` runs in the flow
        flow.wait()
    stat = Path(f"/proc/{servers[0]}/stat")

    def running() -> bool:
        try:
            return stat.read_text().split()[2] != "Z"
        except FileNotFoundError:
            return False

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and running():
        time.sleep(0.5)
    assert not running()
