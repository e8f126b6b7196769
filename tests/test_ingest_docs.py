"""Documentation ingestion through the pipeline: FRR docs, the error catalogue, RFCs, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from faultline.ingest.api import ingest_paths


def _ingest(conn, settings, *paths, **options):
    return ingest_paths(conn, settings, "docs", [Path(p) for p in paths], **options)


@pytest.mark.data
def test_frr_docs_errors_and_rfcs_are_chunked_by_section(conn, settings, data_dir):
    docs = data_dir / "docs"
    report = _ingest(conn, settings, docs / "frr" / "user", docs / "frr_errors.jsonl", docs / "rfcs" / "rfc4271.txt")
    assert report.totals()["failed_files"] == 0
    for f in report.files:
        assert f.accepted + f.quarantined == f.records_in
    titles = [r[0] for r in conn.execute("SELECT title FROM doc_chunks WHERE doc_id = 'user/bgp.rst'").fetchall()]
    assert len(titles) > 50 and all(t.startswith("BGP") for t in titles)
    # 343 catalogue entries, one of them an exact copy (EC_ZEBRA_NETLINK_LENGTH_ERROR twice upstream)
    assert conn.execute("SELECT count(*) FROM doc_chunks WHERE doc_id = 'docs/frr_errors.jsonl'").fetchone()[0] == 342
    dup = conn.execute("SELECT expectation, record_no FROM quarantine "
                       "WHERE source_file LIKE '%frr_errors.jsonl'").fetchall()
    assert dup == [("unique_chunk", 244)]
    assert conn.execute("SELECT max(length(text)) FROM doc_chunks").fetchone()[0] <= settings.doc_chunk_chars
    rfc = conn.execute("SELECT count(*) FROM doc_chunks WHERE doc_id = 'rfcs/rfc4271.txt' "
                       "AND title LIKE '%OPEN Message Format%'").fetchone()[0]
    assert rfc >= 1
    again = _ingest(conn, settings, docs / "frr_errors.jsonl")
    assert again.files[0].status == "unchanged"


def test_changed_doc_replaces_its_chunks(conn, settings, tmp_path):
    doc = tmp_path / "runbook.md"
    doc.write_text("# Runbook\n\n## BGP\n\nCheck the hold timer.\n\n## OSPF\n\nCheck the MTU.\n")
    _ingest(conn, settings, doc)
    assert conn.execute("SELECT count(*) FROM doc_chunks").fetchone()[0] == 2
    doc.write_text("# Runbook\n\n## BGP\n\nCheck the hold timer and the remote AS.\n")
    _ingest(conn, settings, doc)
    assert conn.execute("SELECT list(text) FROM doc_chunks").fetchone()[0] == [
        "Check the hold timer and the remote AS."]


def test_bad_catalogue_record_binary_and_latin1_docs(conn, settings, tmp_path):
    catalogue = tmp_path / "errors.jsonl"
    catalogue.write_text(json.dumps({"code": 1, "title": "first", "description": "d1"}) + "\n"
                         + '{"code": 2, "title": "trunc' + "\n"
                         + json.dumps({"code": 3, "title": "third", "description": "d3"}) + "\n")
    binary = tmp_path / "manual.html"
    binary.write_bytes(b"\x00\x01\x02" * 1000)
    latin = tmp_path / "notes.txt"
    latin.write_bytes(b"Notes\n\nr\xe9seau en panne\n")
    report = _ingest(conn, settings, catalogue, binary, latin)
    by_name = {Path(f.path).name: f for f in report.files}
    assert (by_name["errors.jsonl"].accepted, by_name["errors.jsonl"].quarantined) == (2, 1)
    assert (by_name["manual.html"].accepted, by_name["manual.html"].quarantined) == (0, 1)
    assert (by_name["notes.txt"].accepted, by_name["notes.txt"].quarantined) == (0, 1)
    rows = dict(conn.execute("SELECT expectation, reason FROM quarantine").fetchall())
    assert set(rows) == {"doc_record", "file_is_text", "utf8"}
    assert "iconv" in rows["utf8"]
    record_no = conn.execute("SELECT record_no FROM quarantine WHERE expectation='doc_record'").fetchone()[0]
    assert record_no == 2
