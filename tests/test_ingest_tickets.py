"""Ticket ingestion: JIRA exports with no mapping, other layouts by mapping, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from faultline.ingest.api import ingest_paths


def _ingest(conn, settings, *paths, **options):
    return ingest_paths(conn, settings, "tickets", [Path(p) for p in paths], **options)


def _count(conn, sql, params=()):
    return conn.execute(sql, list(params)).fetchone()[0]


def _assert_ledger_balanced(conn, report):
    """accepted + quarantined = records in, for every file, in the report, the ledger and the tables."""
    for f in report.files:
        assert f.accepted + f.quarantined == f.records_in, f
        row = conn.execute("SELECT records_in, accepted, quarantined FROM ingest_files WHERE source_file = ?",
                           [f.path]).fetchone()
        assert row == (f.records_in, f.accepted, f.quarantined)
        assert _count(conn, "SELECT count(*) FROM quarantine WHERE source_file = ?", [f.path]) == f.quarantined


@pytest.mark.data
def test_jira_export_ingests_with_no_mapping(conn, settings, data_dir):
    report = _ingest(conn, settings, data_dir / "tickets" / "zookeeper.jsonl")
    assert report.totals()["accepted"] == 1827 and report.totals()["quarantined"] == 0
    _assert_ledger_balanced(conn, report)
    row = conn.execute(
        "SELECT source, title, status, resolution, components, fix_versions, created_at, resolved_at, "
        "len(comments), comments[1].author FROM tickets WHERE ticket_id = 'ZOOKEEPER-2'").fetchone()
    assert row[0] == "jira"
    assert row[1] == "Synchronization issues in QuorumPeer and FastLeader election"
    assert row[2:4] == ("Closed", "Fixed")
    assert row[4] == ["leaderElection"] and row[5] == ["3.0.0"]
    assert row[6].isoformat().startswith("2008-06-09T16:34:31.959") and row[7].year == 2008
    assert row[8] > 0 and row[9] == "Flavio Junqueira"
    links = conn.execute("SELECT links FROM tickets WHERE ticket_id = 'ZOOKEEPER-303'").fetchone()[0]
    assert {"type": "Duplicate", "direction": "inward", "target": "ZOOKEEPER-299"} in links
    assert _count(conn, "SELECT sum(len(comments)) FROM tickets") == 13461


def test_reingest_adds_nothing_and_updated_ticket_updates(conn, settings, tmp_path):
    src = tmp_path / "export.jsonl"
    records = [{"key": f"NET-{i}", "summary": f"ticket {i}", "created": f"2024-01-0{i}T10:00:00Z",
                "updated": "2024-02-01T00:00:00Z", "status": "Open"} for i in range(1, 4)]
    src.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    first = _ingest(conn, settings, src)
    assert first.totals()["inserted"] == 3
    second = _ingest(conn, settings, src)
    assert second.files[0].status == "unchanged"
    forced = _ingest(conn, settings, src, force=True)
    assert forced.totals()["inserted"] == 0 and forced.totals()["updated"] == 0
    assert _count(conn, "SELECT count(*) FROM tickets") == 3
    before = conn.execute("SELECT first_ingested_at FROM tickets WHERE ticket_id='NET-2'").fetchone()[0]

    update = tmp_path / "update.jsonl"
    update.write_text(json.dumps({**records[1], "status": "Resolved", "resolution": "Fixed",
                                  "resolved": "2024-03-01T00:00:00Z", "updated": "2024-03-01T00:00:00Z"}) + "\n")
    third = _ingest(conn, settings, update)
    assert third.totals()["updated"] == 1 and third.totals()["inserted"] == 0
    row = conn.execute("SELECT status, resolution, resolved_at IS NOT NULL, first_ingested_at, source_file "
                       "FROM tickets WHERE ticket_id='NET-2'").fetchone()
    assert row[:3] == ("Resolved", "Fixed", True)
    assert row[3] == before and row[4] == str(update.resolve())
    assert _count(conn, "SELECT count(*) FROM tickets") == 3

    stale = tmp_path / "stale.jsonl"
    stale.write_text(json.dumps({**records[1], "status": "Open", "updated": "2024-01-15T00:00:00Z"}) + "\n")
    _ingest(conn, settings, stale)
    assert conn.execute("SELECT status FROM tickets WHERE ticket_id='NET-2'").fetchone()[0] == "Resolved"


def test_csv_and_parquet_with_a_mapping_file(conn, settings, tmp_path):
    mapping = tmp_path / "servicedesk.yml"
    mapping.write_text(
        "name: servicedesk\nfields:\n  ticket_id: Number\n  title: Short description\n"
        "  description: Description\n  created_at: Opened\n  components: Categories\n  status: State\n")
    csv_file = tmp_path / "desk.csv"
    csv_file.write_text('Number,Short description,Description,Opened,Categories,State,Assignee\n'
                        'INC001,VPN down,"Users, many of them, cannot connect",2024-05-01 08:00:00,"vpn; edge",'
                        'New,ann\n'
                        'INC002,Slow DNS,dig takes 5s,05/02/2024 09:30,dns,New,bob\n')
    report = _ingest(conn, settings, csv_file, mapping_file=mapping)
    assert report.totals()["accepted"] == 2, report.files[0]
    row = conn.execute("SELECT source, title, description, components, created_at, attributes "
                       "FROM tickets WHERE ticket_id='INC001'").fetchone()
    assert row[0] == "servicedesk" and row[1] == "VPN down" and row[2] == "Users, many of them, cannot connect"
    assert row[3] == ["vpn", "edge"] and row[4].hour == 8
    assert json.loads(row[5]) == {"Assignee": "ann"}  # unmapped fields are kept

    parquet_file = tmp_path / "desk.parquet"
    pq.write_table(pa.table({"Number": ["INC003"], "Short description": ["Packet loss"], "Opened": ["2024-05-03"],
                             "State": ["New"]}), parquet_file)
    report = _ingest(conn, settings, parquet_file, mapping_file=mapping)
    assert report.totals()["accepted"] == 1
    assert _count(conn, "SELECT count(*) FROM tickets WHERE source='servicedesk'") == 3


BAD_LINES = {
    "missing id": json.dumps({"key": None, "summary": "no key here", "created": "2024-01-01T00:00:00Z"}),
    "bad timestamp": json.dumps({"key": "NET-9", "summary": "when?", "created": "yesterday-ish"}),
    "truncated": '{"key": "NET-10", "summary": "cut off in the mid',
    "not an object": "[1, 2, 3]",
    "whitespace id": json.dumps({"key": "NET 11", "summary": "space in key"}),
}


def test_bad_records_are_quarantined_with_reasons(conn, settings, tmp_path):
    good = [json.dumps({"key": f"NET-{i}", "summary": f"fine {i}", "created": "2024-01-01T00:00:00Z",
                        "updated": "2024-01-02T00:00:00Z"}) for i in range(3)]
    dup_old = json.dumps({"key": "NET-1", "summary": "older duplicate", "updated": "2023-01-01T00:00:00Z"})
    lines = good + list(BAD_LINES.values()) + [dup_old]
    src = tmp_path / "mixed.jsonl"
    src.write_bytes(("\n".join(lines) + "\n").encode() + b'{"key": "NET-12", "summary": "caf\xe9 latin-1"}\n')
    report = _ingest(conn, settings, src)
    f = report.files[0]
    assert f.records_in == len(lines) + 1
    assert f.accepted == 3 and f.quarantined == len(BAD_LINES) + 2
    _assert_ledger_balanced(conn, report)
    rows = {r[0]: r[1:] for r in conn.execute(
        "SELECT record_no, expectation, reason, raw_record FROM quarantine ORDER BY record_no").fetchall()}
    assert "not_be_null(ticket_id)" in rows[4][0]
    assert rows[5][0] == "parse_timestamp" and "yesterday-ish" in rows[5][1]
    assert rows[6][0] == "json" and "truncated" in rows[6][1] and rows[6][2] == BAD_LINES["truncated"]
    assert rows[7][0] == "json_object"
    assert "match_regex(ticket_id)" in rows[8][0]
    assert rows[9][0] == "unique_ticket_id" and "older duplicate" in rows[9][2]
    assert rows[10][0] == "utf8" and "\\xe9" in rows[10][2] and "iconv" in rows[10][1]
    assert conn.execute("SELECT title FROM tickets WHERE ticket_id='NET-1'").fetchone()[0] == "fine 1"


def test_one_megabyte_line_and_record_limit(conn, settings, tmp_path):
    huge = json.dumps({"key": "BIG-1", "summary": "big", "description": "x" * 1_000_000})
    src = tmp_path / "big.jsonl"
    src.write_text(huge + "\n" + "y" * 1_000_000 + "\n")
    report = _ingest(conn, settings, src)
    assert report.files[0].accepted == 1 and report.files[0].quarantined == 1
    assert _count(conn, "SELECT length(description) FROM tickets WHERE ticket_id='BIG-1'") == 1_000_000
    small = settings.model_copy(update={"max_record_bytes": 10_000})
    report = _ingest(conn, small, src, force=True)
    checks = sorted(r[0] for r in conn.execute("SELECT expectation FROM quarantine").fetchall())
    assert report.files[0].quarantined == 2 and checks == ["record_size", "record_size"]


def test_empty_and_binary_files(conn, settings, tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    binary = tmp_path / "dump.jsonl"
    binary.write_bytes(bytes(range(256)) * 20)
    report = _ingest(conn, settings, empty, binary)
    by_name = {Path(f.path).name: f for f in report.files}
    assert by_name["empty.jsonl"].status == "ingested" and by_name["empty.jsonl"].records_in == 0
    assert by_name["dump.jsonl"].quarantined == 1 and by_name["dump.jsonl"].accepted == 0
    reason = conn.execute("SELECT reason FROM quarantine WHERE source_file = ?",
                          [by_name["dump.jsonl"].path]).fetchone()[0]
    assert "not a text ticket export" in reason
    _assert_ledger_balanced(conn, report)


def test_unknown_layout_fails_that_file_only(conn, settings, tmp_path):
    odd = tmp_path / "odd.jsonl"
    odd.write_text(json.dumps({"foo": 1, "bar": 2}) + "\n")
    fine = tmp_path / "fine.jsonl"
    fine.write_text(json.dumps({"key": "A-1", "summary": "ok"}) + "\n")
    report = _ingest(conn, settings, odd, fine)
    statuses = {Path(f.path).name: f.status for f in report.files}
    assert statuses == {"odd.jsonl": "failed", "fine.jsonl": "ingested"}
    failed = next(f for f in report.files if f.status == "failed")
    assert "--mapping" in failed.error or "layout" in failed.error
    assert _count(conn, "SELECT count(*) FROM run_failures WHERE stage = 'ingest_tickets'") == 1
    assert conn.execute("SELECT status FROM runs WHERE run_id = ?", [report.run_id]).fetchone()[0] == \
        "completed_with_failures"


def test_missing_path_is_a_clear_error(conn, settings, tmp_path):
    from faultline.errors import FaultlineError

    with pytest.raises(FaultlineError, match="does not exist"):
        _ingest(conn, settings, tmp_path / "nope.jsonl")
