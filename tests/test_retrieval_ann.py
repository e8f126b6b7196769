"""The ANN vector index: built by ``sync_index`` from ``index_ann_min_rows`` rows on, never below it.

Real MiniLM, LanceDB and DuckDB on a few hundred generated tickets, with the threshold set low.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest

from faultline.retrieval import ann
from faultline.retrieval.index import TABLE_NAMES, open_lancedb, sync_index
from faultline.retrieval.search import query_vector, search

DEVICES = ["core router", "edge firewall", "access switch", "DNS resolver", "DHCP server", "load balancer",
           "VPN gateway", "syslog collector"]
SYMPTOMS = ["drops packets", "reboots", "loses its BGP session", "answers slowly", "runs out of memory",
            "rejects new clients", "logs CRC errors", "flaps its uplink"]
CAUSES = ["a firmware upgrade", "a config push", "a power cut", "a cabling change", "a traffic spike"]
START = datetime(2015, 1, 1, 12, tzinfo=UTC)


def _tickets(n: int, first: int = 0) -> list[tuple[str, str, str, datetime]]:
    """``n`` distinct tickets, one a day from ``START`` (+ ``first`` days)."""
    combos = list(itertools.product(DEVICES, SYMPTOMS, CAUSES))
    out = []
    for i in range(first, first + n):
        device, symptom, cause = combos[i % len(combos)]
        title = f"{device} {symptom} after {cause} (site {i})"
        desc = f"Since {cause} the {device} at site {i} {symptom}; ticket {i} of the generated history."
        out.append((f"GEN-{i}", title, desc, START + timedelta(days=i)))
    return out


def _insert(conn, rows) -> None:
    for tid, title, desc, created in rows:
        conn.execute(
            "INSERT INTO tickets (ticket_id, source, title, description, status, components, created_at, "
            "content_hash, source_file, source_record, first_ingested_at, ingested_at) "
            "VALUES (?, 'test', ?, ?, 'Open', ['network'], ?, ?, 'generated', 1, now(), now())",
            [tid, title, desc, created, f"h-{tid}"],
        )


def _vector_indexes(settings) -> list:
    table = open_lancedb(settings).open_table(TABLE_NAMES["tickets"])
    return [ix for ix in table.list_indices() if list(ix.columns) == ["vector"]]


@pytest.fixture(scope="module")
def embedder(tmp_path_factory):
    from faultline.config import Settings
    from faultline.retrieval.embed import Embedder

    base = tmp_path_factory.mktemp("embed")
    return Embedder(Settings(duckdb_path=base / "x.duckdb", lancedb_dir=base / "lancedb"))


@pytest.fixture
def low(settings):
    """The test's settings with the ANN threshold at 256 rows."""
    return settings.model_copy(update={"index_ann_min_rows": 256})


def test_sync_builds_an_ann_index_from_the_threshold_on(conn, low, embedder):
    _insert(conn, _tickets(300))
    stats = sync_index(conn, low, "tickets", embedder)
    assert (stats.rows_total, stats.vector_index) == (300, ann.INDEX_TYPE)
    [index] = _vector_indexes(low)
    table = open_lancedb(low).open_table(TABLE_NAMES["tickets"])
    index_stats = table.index_stats(index.name)
    assert index_stats.index_type == "IVF_HNSW_SQ" and index_stats.distance_type == "cosine"
    assert (index_stats.num_indexed_rows, index_stats.num_unindexed_rows) == (300, 0)
    assert ann.trained_rows(index.name) == 300


def test_ann_search_keeps_the_created_at_prefilter(conn, low, embedder):
    _insert(conn, _tickets(300))
    assert sync_index(conn, low, "tickets", embedder).vector_index == ann.INDEX_TYPE
    query = "the core router loses its BGP session after a firmware upgrade"
    cutoff = START + timedelta(days=150)
    where = f"created_at < timestamp '{cutoff:%Y-%m-%d %H:%M:%S}' AND id != 'GEN-0'"
    table = open_lancedb(low).open_table(TABLE_NAMES["tickets"])
    exact = (table.search(query_vector(embedder, query), vector_column_name="vector").distance_type("cosine")
             .where(where, prefilter=True).bypass_vector_index().limit(10).to_arrow())
    for mode in ("vector", "hybrid"):
        hits = search(low, "tickets", query, k=10, mode=mode, where=where, embedder=embedder)
        assert len(hits) == 10 and all(h.created_at < cutoff for h in hits) and "GEN-0" not in {h.id for h in hits}
        if mode == "vector":  # the ANN picks the exact top 10, with exact cosine scores (refined)
            assert [h.id for h in hits] == exact["id"].to_pylist()
            assert [h.score for h in hits] == pytest.approx([1 - d for d in exact["_distance"].to_pylist()], abs=1e-5)
    # a narrow filter (5 rows) still returns every row that passes it
    narrow = f"created_at < timestamp '{START + timedelta(days=5):%Y-%m-%d %H:%M:%S}'"
    hits = search(low, "tickets", query, k=10, mode="vector", where=narrow, embedder=embedder)
    assert sorted(h.id for h in hits) == [f"GEN-{i}" for i in range(5)]


def test_sync_under_the_threshold_builds_none(conn, settings, low, embedder):
    _insert(conn, _tickets(200))
    stats = sync_index(conn, low, "tickets", embedder)
    assert (stats.rows_total, stats.vector_index) == (200, ann.FLAT) and _vector_indexes(low) == []
    assert sync_index(conn, low, "tickets", embedder).vector_index == ann.FLAT  # re-sync: still none
    _insert(conn, _tickets(60, first=200))
    never = low.model_copy(update={"index_ann_min_rows": 0})
    assert sync_index(conn, never, "tickets", embedder).vector_index == ann.FLAT and _vector_indexes(never) == []
    assert sync_index(conn, low, "tickets", embedder).vector_index == ann.INDEX_TYPE  # 260 rows
    conn.execute("DELETE FROM tickets WHERE ticket_id IN ('GEN-1', 'GEN-2', 'GEN-3', 'GEN-4', 'GEN-5')")
    stats = sync_index(conn, low, "tickets", embedder)
    assert (stats.rows_total, stats.removed, stats.vector_index) == (255, 5, ann.FLAT) and _vector_indexes(low) == []
    assert settings.index_ann_min_rows == 50_000  # the default: these tables stay flat


def test_resync_refreshes_the_index_and_retrains_when_the_table_doubled(conn, low, embedder):
    _insert(conn, _tickets(260))
    sync_index(conn, low, "tickets", embedder)
    _insert(conn, _tickets(40, first=260))
    assert sync_index(conn, low, "tickets", embedder).embedded == 40
    [index] = _vector_indexes(low)
    table = open_lancedb(low).open_table(TABLE_NAMES["tickets"])
    assert ann.trained_rows(index.name) == 260  # kept, and the new rows were added to it
    assert (table.index_stats(index.name).num_indexed_rows,
            table.index_stats(index.name).num_unindexed_rows) == (300, 0)
    _insert(conn, _tickets(220, first=300))
    sync_index(conn, low, "tickets", embedder)
    [index] = _vector_indexes(low)
    assert ann.trained_rows(index.name) == 520
