"""Retrieval: embeddings, incremental LanceDB sync and vector / text / hybrid search.

Real MiniLM, real LanceDB in tmp_path, real DuckDB; the model is loaded once per session.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

import numpy as np
import pytest

from faultline.errors import FaultlineError
from faultline.retrieval.index import clean_markup, sync_index
from faultline.retrieval.search import search

MODES = ("vector", "text", "hybrid")

TICKETS = [
    ("NET-1", "BGP session flapping between core routers",
     "The BGP neighbour 10.0.0.2 goes Up/Down every 30 seconds with 'hold timer expired'.", "2020-01-05"),
    ("NET-2", "OSPF adjacency stuck in EXSTART",
     "Neighbour never reaches FULL state; MTU mismatch suspected on the transit link.", "2020-02-10"),
    ("NET-3", "DHCP clients get no address on VLAN 20",
     "Laptops on the third floor receive APIPA addresses; the DHCP pool looks exhausted.", "2020-03-15"),
    ("NET-4", "CRC errors increasing on GigabitEthernet0/1",
     "Input errors and CRC counters grow steadily; replaced the patch cable, no change.", "2020-04-20"),
    ("NET-5", "Slow DNS resolution for internal domains",
     "nslookup of intranet names takes five seconds before answering.", "2020-05-25"),
    ("NET-6", "Leader election hangs after network partition",
     "{code}\njava.lang.IllegalStateException: no quorum\n\tat org.example.Quorum.elect(Quorum.java:10)\n{code}",
     "2021-01-10"),
    ("NET-7", "Disk full on the syslog collector",
     "The /var partition filled up and the collector stopped accepting messages.", "2021-06-01"),
    ("NET-8", "BGP route leak towards the upstream provider",
     "We announced customer prefixes to the transit provider; BGP export policy was missing.", "2021-09-09"),
]

DOCS = [
    ("bgp-1", "bgp.rst", "BGP > Timers", "The keepalive interval and hold time of a BGP neighbor are set with "
     "'timers bgp KEEPALIVE HOLDTIME'. A session is reset when the hold timer expires."),
    ("ospf-1", "ospf.rst", "OSPF > Areas", "Every OSPF router belongs to one or more areas; area 0 is the backbone."),
    ("dhcp-1", "dhcp.rst", "DHCP > Relay", "A DHCP relay agent forwards client broadcasts to a server on another "
     "subnet, adding the giaddr field."),
]


def _insert_tickets(conn, rows=TICKETS) -> None:
    for tid, title, desc, created in rows:
        conn.execute(
            "INSERT INTO tickets (ticket_id, source, title, description, status, components, created_at, "
            "content_hash, source_file, source_record, first_ingested_at, ingested_at) "
            "VALUES (?, 'test', ?, ?, 'Open', ['network'], ?, ?, 'fixture', 1, now(), now())",
            [tid, title, desc, f"{created}T12:00:00+00:00", f"h-{tid}"],
        )


def _insert_docs(conn) -> None:
    for no, (cid, doc, title, text) in enumerate(DOCS):
        conn.execute(
            "INSERT INTO doc_chunks (chunk_id, doc_id, source_file, file_sha256, format, title, section_path, "
            "ordinal, text, ingested_at) VALUES (?, ?, ?, 'sha', 'rst', ?, ?, ?, ?, now())",
            [cid, doc, f"/docs/{doc}", title, title.split(" > "), no, text],
        )


@pytest.fixture(scope="session")
def embedder(tmp_path_factory):
    """One Embedder (and one MiniLM load) for the whole session."""
    from faultline.config import Settings
    from faultline.retrieval.embed import Embedder

    base = tmp_path_factory.mktemp("embed")
    return Embedder(Settings(duckdb_path=base / "x.duckdb", lancedb_dir=base / "lancedb"))


@pytest.fixture
def indexed(conn, settings, embedder):
    """Warehouse with the fixture tickets and doc chunks, both indexes synced."""
    _insert_tickets(conn)
    _insert_docs(conn)
    for kind in ("tickets", "docs"):
        stats = sync_index(conn, settings, kind, embedder)
        assert stats.embedded == stats.rows_total > 0
    return conn


def test_embeddings_are_normalised_float32(embedder):
    vectors = embedder.embed(["BGP neighbour down", "OSPF area backbone", "disk full"])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32 and embedder.dim == 384
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    assert embedder.embed([]).shape == (0, 384)


def test_embedding_threads_are_set_for_each_call_and_zero_gives_torch_its_default_back(embedder):
    import torch

    from faultline.retrieval.embed import Embedder

    default = torch.get_num_threads()
    other = default + 1
    embedder.embed(["warm"])  # the model is loaded, at torch's default
    assert torch.get_num_threads() == default
    # a unit of the nightly asks for its own count on a model another caller loaded
    Embedder(embedder_settings(embedder, other)).embed(["BGP neighbour down"])
    assert torch.get_num_threads() == other
    embedder.embed(["OSPF area backbone"])  # bulk work after it: torch's default again
    assert torch.get_num_threads() == default


def embedder_settings(embedder, threads: int):
    from faultline.config import Settings

    return Settings(embedding_model=embedder.model_name, embedding_threads=threads)


def test_missing_model_path_names_the_setting(tmp_path):
    from faultline.config import Settings
    from faultline.retrieval.embed import Embedder

    bad = Embedder(Settings(embedding_model=str(tmp_path / "no-such-model")))
    with pytest.raises(FaultlineError) as err:
        bad.embed(["x"])
    assert "FAULTLINE_EMBEDDING_MODEL" in str(err.value)


def test_jira_markup_is_dropped():
    assert clean_markup("{code:java}\nx = 1\n{code} see [~alice]\n\n{noformat}y{noformat}") == "x = 1 see y"


@pytest.mark.parametrize("mode", MODES)
def test_obvious_query_ranks_right_row_first(indexed, settings, embedder, mode):
    hits = search(settings, "tickets", "bgp neighbor flapping, hold timer expired", k=3, mode=mode, embedder=embedder)
    assert hits[0].id == "NET-1" and hits[0].rank == 1
    assert hits[0].created_at == datetime(2020, 1, 5, 12, tzinfo=timezone.utc)
    assert hits[0].snippet.startswith("The BGP neighbour")
    docs = search(settings, "docs", "configure the BGP hold time", k=2, mode=mode, embedder=embedder)
    assert docs[0].id == "bgp-1" and docs[0].title == "BGP > Timers" and docs[0].created_at is None


@pytest.mark.parametrize("mode", MODES)
def test_scores_descend_and_carry_the_mode_scores(indexed, settings, embedder, mode):
    hits = search(settings, "tickets", "network problems with BGP and OSPF neighbours", k=8, mode=mode,
                  embedder=embedder)
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True) and [h.rank for h in hits] == list(range(1, len(hits) + 1))
    if mode == "vector":
        assert all(h.text_score is None and h.vector_score == h.score for h in hits)
    elif mode == "text":
        assert all(h.vector_score is None and h.text_score == h.score for h in hits)
    else:
        assert all(0.0 <= h.score <= 1.0 for h in hits)
        assert any(h.vector_score is not None and h.text_score is not None for h in hits)


def test_rerun_embeds_nothing_and_a_changed_row_is_reembedded(indexed, settings, embedder):
    again = sync_index(indexed, settings, "tickets", embedder)
    assert (again.rows_total, again.embedded, again.removed) == (len(TICKETS), 0, 0)
    indexed.execute("UPDATE tickets SET description = 'Wireless access points reboot every night at 2am', "
                    "content_hash = 'changed' WHERE ticket_id = 'NET-3'")
    changed = sync_index(indexed, settings, "tickets", embedder)
    assert (changed.embedded, changed.removed) == (1, 0)
    for mode in MODES:
        assert search(settings, "tickets", "access points reboot at night", k=1, mode=mode,
                      embedder=embedder)[0].id == "NET-3"
    # a status change rewrites the row with its stored vector and no embedding
    indexed.execute("UPDATE tickets SET status = 'Closed', content_hash = 'closed' WHERE ticket_id = 'NET-5'")
    assert sync_index(indexed, settings, "tickets", embedder).embedded == 0
    closed = search(settings, "tickets", "dns", k=5, mode="hybrid", where="status = 'Closed'", embedder=embedder)
    assert [h.id for h in closed] == ["NET-5"]


def test_deleted_row_disappears_from_search(indexed, settings, embedder):
    indexed.execute("DELETE FROM tickets WHERE ticket_id = 'NET-7'")
    stats = sync_index(indexed, settings, "tickets", embedder)
    assert (stats.rows_total, stats.embedded, stats.removed) == (len(TICKETS) - 1, 0, 1)
    for mode in MODES:
        hits = search(settings, "tickets", "disk full on the syslog collector", k=10, mode=mode, embedder=embedder)
        assert "NET-7" not in {h.id for h in hits}


@pytest.mark.parametrize("mode", MODES)
def test_created_at_prefilter_excludes_newer_tickets(indexed, settings, embedder, mode):
    unfiltered = search(settings, "tickets", "BGP route leak to the upstream provider", k=3, mode=mode,
                        embedder=embedder)
    assert unfiltered[0].id == "NET-8"
    cutoff = datetime(2021, 1, 1, tzinfo=timezone.utc)
    hits = search(settings, "tickets", "BGP route leak to the upstream provider", k=10, mode=mode,
                  where="created_at < timestamp '2021-01-01 00:00:00' AND id != 'NET-2'", embedder=embedder)
    assert hits and all(h.created_at < cutoff for h in hits)
    assert {"NET-8", "NET-6", "NET-7", "NET-2"}.isdisjoint(h.id for h in hits)
    if mode != "text":  # every older ticket is a vector candidate
        assert len(hits) == 4 and hits[0].id == "NET-1"


def test_bad_filter_is_a_user_error(indexed, settings, embedder):
    with pytest.raises(FaultlineError, match="filter"):
        search(settings, "tickets", "bgp", k=3, mode="vector", where="created_at < '2021-01-01'", embedder=embedder)


def test_missing_or_empty_index_tells_how_to_build_it(conn, settings, embedder):
    for mode in MODES:
        with pytest.raises(FaultlineError) as err:
            search(settings, "tickets", "bgp", k=3, mode=mode, embedder=embedder)
        assert "faultline index" in (err.value.fix or "") and "faultline ingest" in (err.value.fix or "")
    _insert_tickets(conn, TICKETS[:1])
    sync_index(conn, settings, "tickets", embedder)
    conn.execute("DELETE FROM tickets")
    assert sync_index(conn, settings, "tickets", embedder).removed == 1
    with pytest.raises(FaultlineError, match="no tickets search index"):
        search(settings, "tickets", "bgp", k=3, embedder=embedder)


def test_cli_index_and_search(conn, settings, run_cli, capsys, embedder):
    _insert_tickets(conn)
    _insert_docs(conn)
    conn.close()  # the CLI opens the warehouse itself
    run_cli("index", "--json")
    stats = {s["kind"]: s for s in json.loads(capsys.readouterr().out)}
    assert stats["tickets"]["embedded"] == len(TICKETS) and stats["docs"]["embedded"] == len(DOCS)
    run_cli("index", "--kind", "tickets")
    assert "tickets" in capsys.readouterr().out
    run_cli("search", "tickets", "bgp neighbour hold timer expired", "--k", "2", "--json")
    hits = json.loads(capsys.readouterr().out)
    assert [h["rank"] for h in hits] == [1, 2] and hits[0]["id"] == "NET-1"
    run_cli("search", "docs", "bgp hold time", "--mode", "text")
    assert "bgp-1" in capsys.readouterr().out
    run_cli("search", "tickets", "x", "--mode", "fuzzy", expect_exit=2)


# Every query-syntax character of the search engines (Lance/Tantivy, Lucene): quotes, field prefixes,
# boolean words and operators, wildcards, fuzzy/boost marks, escapes, grouping and ranges.
HOSTILE = ('title:"bgp" AND (neighbour OR hold) NOT +timer -expired~2 ^flapping* ? : \\ / [ ] { } < > ! '
           '&& || "unterminated')
QUOTED = '"bgp neighbour" title:(hold OR timer) "expired"'  # whole text quoted: Lance's string form reads a phrase
SYNTAX = '"():+-~^*?\\/[]{}<>!&|'


def _plain(text: str) -> str:
    return " ".join(text.translate({ord(c): " " for c in SYNTAX}).split())


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("text", [HOSTILE, QUOTED])
def test_query_syntax_in_text_is_searched_as_plain_words(indexed, settings, embedder, mode, text):
    plain = _plain(text)
    assert plain in ("title bgp AND neighbour OR hold NOT timer expired 2 flapping unterminated",
                     "bgp neighbour title hold OR timer expired")
    for kind in ("tickets", "docs"):
        hostile = search(settings, kind, text, k=5, mode=mode, embedder=embedder)
        words = search(settings, kind, plain, k=5, mode=mode, embedder=embedder)
        assert hostile and hostile[0].id == words[0].id == ("NET-1" if kind == "tickets" else "bgp-1")
        if mode == "text":  # the same terms: the same rows with the same BM25 scores
            assert [(h.id, round(h.score, 5)) for h in hostile] == [(h.id, round(h.score, 5)) for h in words]


@pytest.mark.parametrize("mode", MODES)
def test_a_quoted_phrase_in_a_ticket_is_not_a_phrase_query(indexed, settings, embedder, mode):
    # a real JIRA summary; a quoted word needs term positions the index is built without
    summary = '"hold" is misspelled as "hodl" in the BGP timers doc'
    hits = search(settings, "tickets", summary, k=3, mode=mode, embedder=embedder,
                  where="created_at < timestamp '2021-01-01 00:00:00'")
    assert hits[0].id == "NET-1"
    assert search(settings, "docs", '"hold timer"', k=1, mode=mode, embedder=embedder)[0].id == "bgp-1"


def test_a_failed_search_is_not_blamed_on_a_valid_filter(indexed, settings, embedder, monkeypatch):
    from lancedb.query import PhraseQuery

    from faultline.retrieval import search as search_mod

    monkeypatch.setattr(search_mod, "text_query", lambda text: PhraseQuery(text, "text"))  # needs positions
    with pytest.raises(FaultlineError) as err:
        search(settings, "tickets", "hold timer", k=3, mode="text", embedder=embedder, where="status = 'Open'")
    assert "filter" not in err.value.message and "full-text search" in err.value.message
    assert "position" in err.value.message and "faultline index" in (err.value.fix or "")


@pytest.mark.parametrize("mode", MODES)
def test_cli_search_takes_hostile_text(indexed, settings, run_cli, capsys, mode):
    indexed.close()  # the CLI opens the warehouse itself
    run_cli("search", "tickets", HOSTILE, "--mode", mode, "--k", "3", "--json")
    assert json.loads(capsys.readouterr().out)[0]["id"] == "NET-1"
    run_cli("search", "docs", '"hold" AND title:timers', "--mode", mode, "--json")
    assert json.loads(capsys.readouterr().out)[0]["id"] == "bgp-1"


def test_docs_server_search_takes_hostile_text(indexed, settings, embedder):
    from faultline.mcp.docs_server import DocsIndex

    index = DocsIndex.__new__(DocsIndex)  # the server's search without loading a second model
    index.settings, index.embedder = settings, embedder
    assert index.search(HOSTILE, 2).hits[0].chunk_id == "bgp-1"
