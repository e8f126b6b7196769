"""Log ingestion through the pipeline: real router logs, idempotence, and bad input."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from faultline.ingest.api import ingest_paths


def _ingest(conn, settings, *paths, **options):
    return ingest_paths(conn, settings, "logs", [Path(p) for p in paths], **options)


def _balanced(conn, report):
    for f in report.files:
        assert f.accepted + f.quarantined == f.records_in, f
        assert conn.execute("SELECT count(*) FROM log_lines WHERE source_file = ?",
                            [f.path]).fetchone()[0] == f.accepted
        assert conn.execute("SELECT count(*) FROM quarantine WHERE source_file = ?",
                            [f.path]).fetchone()[0] == f.quarantined


@pytest.mark.data
def test_iosxr_router_logs_keep_every_line_with_file_and_number(conn, settings, data_dir):
    folder = data_dir / "logs" / "iosxr" / "bgpclear" / "logs"
    report = _ingest(conn, settings, folder)
    assert len(report.files) == 30 and report.totals()["failed_files"] == 0
    _balanced(conn, report)
    total_lines = sum(sum(1 for line in p.read_bytes().split(b"\n") if line.strip()) for p in folder.glob("*.log"))
    assert report.totals()["accepted"] == total_lines
    sev5, raw_records = conn.execute(
        "SELECT count(*) FILTER (WHERE severity_raw = '5'), "
        "count(*) FILTER (WHERE NOT parsed AND regexp_matches(raw, '^[A-Za-z0-9/]+:[A-Z][a-z]{2} +[0-9]+ ')) "
        "FROM log_lines").fetchone()
    assert sev5 == 5219
    assert raw_records == 0  # only the `show logging` header blocks stay raw
    row = conn.execute("SELECT line_no, raw, ts FROM log_lines WHERE source_file LIKE '%leaf1.bgpclear.log' "
                       "AND message LIKE '%ADJCHANGE%' ORDER BY line_no LIMIT 1").fetchone()
    lines = (folder / "leaf1.bgpclear.log").read_text().split("\n")
    assert lines[row[0] - 1].rstrip("\r") == row[1]
    assert row[2].year == 2017


def test_reingest_is_idempotent_and_a_changed_file_replaces_its_lines(conn, settings, tmp_path):
    log = tmp_path / "r1.log"
    log.write_text("Jun 14 15:16:01 r1 bgpd[11]: neighbor 10.0.0.2 Down\n"
                   "Jun 14 15:16:02 r1 bgpd[11]: neighbor 10.0.0.2 Up\n")
    _ingest(conn, settings, log)
    again = _ingest(conn, settings, log)
    assert again.files[0].status == "unchanged"
    _ingest(conn, settings, log, force=True)
    assert conn.execute("SELECT count(*) FROM log_lines").fetchone()[0] == 2
    with log.open("a") as out:
        out.write("Jun 14 15:17:00 r1 bgpd[11]: neighbor 10.0.0.3 Down\n")
    _ingest(conn, settings, log)
    assert conn.execute("SELECT list(line_no ORDER BY line_no) FROM log_lines").fetchone()[0] == [1, 2, 3]


def test_binary_file_given_as_log_is_one_quarantined_record(conn, settings, tmp_path):
    blob = tmp_path / "core.dump"
    blob.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 50)
    report = _ingest(conn, settings, blob)
    f = report.files[0]
    assert (f.status, f.records_in, f.accepted, f.quarantined) == ("ingested", 1, 0, 1)
    reason, raw = conn.execute("SELECT reason, raw_record FROM quarantine").fetchone()
    assert "not a text log" in reason and "NUL" in reason and raw.startswith("first bytes (hex): 7f454c46")
    _balanced(conn, report)


def test_megabyte_line_non_utf8_and_empty_file(conn, settings, tmp_path):
    log = tmp_path / "mixed.log"
    log.write_bytes(b"Jun 14 15:16:01 r1 sshd[5]: ok\n" + b"A" * 1_048_576 + b"\n"
                    + b"Jun 14 15:16:03 r1 sshd[5]: user caf\xe9 logged in\n")
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    report = _ingest(conn, settings, log, empty)
    _balanced(conn, report)
    mixed = next(f for f in report.files if f.path.endswith("mixed.log"))
    assert (mixed.records_in, mixed.accepted, mixed.quarantined) == (3, 2, 1)
    check, record_no, raw_len = conn.execute(
        "SELECT expectation, record_no, length(raw_record) FROM quarantine").fetchone()
    assert "raw_bytes" in check and record_no == 2 and raw_len == 1_048_576  # kept whole
    latin = conn.execute("SELECT raw, decode_error FROM log_lines WHERE line_no = 3").fetchone()
    assert latin == ("Jun 14 15:16:03 r1 sshd[5]: user caf\\xe9 logged in", True)
    assert any("not valid UTF-8" in m for m in mixed.messages)
    empty_report = next(f for f in report.files if f.path.endswith("empty.log"))
    assert empty_report.records_in == 0 and any("empty" in m for m in empty_report.messages)


def test_gzip_logs_forced_format_and_incident(conn, settings, tmp_path):
    log = tmp_path / "app.log.gz"
    log.write_bytes(gzip.compress(b"2024-05-01 10:00:00,123 - WARN [main] - disk almost full\n"))
    report = _ingest(conn, settings, log, log_format="<Date> <Time> - <Level> [<Component>] - <Content>",
                     incident_id="INC-7")
    assert report.files[0].accepted == 1
    row = conn.execute("SELECT severity, component, message, incident_id FROM log_lines").fetchone()
    assert row == ("warning", "main", "disk almost full", "INC-7")


def test_large_file_in_batches_matches_one_batch(conn, settings, tmp_path, monkeypatch):
    from faultline.ingest import log_ingest

    lines = [f"Jun 14 15:{i // 60 % 60:02d}:{i % 60:02d} r{i % 3} bgpd[11]: event {i}" for i in range(5000)]
    lines[1234] = ""  # a blank line is not a record but still counts for line numbers
    log = tmp_path / "big.log"
    log.write_text("\n".join(lines) + "\n")
    _ingest(conn, settings, log)
    whole = conn.execute("SELECT line_no, format, ts, host, message FROM log_lines ORDER BY line_no").fetchall()
    monkeypatch.setattr(log_ingest, "BATCH_BYTES", 4096)  # ~80 batches
    report = _ingest(conn, settings, log, force=True)
    batched = conn.execute("SELECT line_no, format, ts, host, message FROM log_lines ORDER BY line_no").fetchall()
    assert batched == whole and len(whole) == 4999
    assert whole[1234][0] == 1236 and whole[1234][4] == "event 1235"
    assert report.files[0].records_in == 4999 and report.files[0].messages[0] == "formats: syslog_rfc3164 4999"


def test_file_emptied_later_loses_its_old_lines(conn, settings, tmp_path):
    log = tmp_path / "r1.log"
    log.write_text("Jun 14 15:16:01 r1 bgpd[11]: x\n")
    _ingest(conn, settings, log)
    log.write_text("")
    _ingest(conn, settings, log)
    assert conn.execute("SELECT count(*) FROM log_lines").fetchone()[0] == 0


def test_files_validated_together_keep_their_own_quarantine_and_match_one_by_one(conn, settings, tmp_path):
    from faultline import db
    from faultline.config import Settings
    from faultline.ingest.api import ingest_one

    folder = tmp_path / "archive"
    folder.mkdir()
    for n in range(6):  # small files, each with an over-long line at a different place
        lines = [f"Jun 14 15:16:{s:02d} r{n} sshd[5]: session {s} opened".encode() for s in range(n + 2)]
        lines.insert(n % 3, b"B" * 1_048_576)
        (folder / f"r{n}.log").write_bytes(b"\n".join(lines) + b"\n")
    (folder / "core.dump").write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 50)
    together = _ingest(conn, settings, folder)
    _balanced(conn, together)
    assert [f.quarantined for f in together.files] == [1] * 7 and {f.status for f in together.files} == {"ingested"}
    # the same files one at a time, into a warehouse of their own: the same rows and the same rejects
    alone = Settings(duckdb_path=tmp_path / "alone.duckdb", lancedb_dir=tmp_path / "lance", progress=False)
    other = db.connect(alone.duckdb_path)
    try:
        for path in sorted(folder.iterdir()):
            ingest_one(other, alone, "logs", path, run_id=None)
        rows = "SELECT source_file, line_no, raw FROM log_lines ORDER BY 1, 2"
        quarantined = "SELECT source_file, record_no, expectation FROM quarantine ORDER BY 1, 2"
        assert conn.execute(rows).fetchall() == other.execute(rows).fetchall()
        assert conn.execute(quarantined).fetchall() == other.execute(quarantined).fetchall()
    finally:
        other.close()


def test_a_file_that_fails_to_write_in_a_group_fails_alone(conn, settings, tmp_path, monkeypatch):
    from faultline.ingest import store

    folder = tmp_path / "archive"
    folder.mkdir()
    for n in range(4):
        (folder / f"r{n}.log").write_text(f"Jun 14 15:16:0{n} r{n} sshd[5]: session opened\n")
    real = store.record_file

    def refused_on_r2(conn, **row):  # the ledger write of one file fails (a full disk stops the run instead)
        if row["source_file"].endswith("r2.log"):
            raise RuntimeError("the ledger refused r2.log")
        return real(conn, **row)

    monkeypatch.setattr(store, "record_file", refused_on_r2)
    report = _ingest(conn, settings, folder)
    assert [(Path(f.path).name, f.status) for f in report.files] == [
        ("r0.log", "ingested"), ("r1.log", "ingested"), ("r2.log", "failed"), ("r3.log", "ingested")]
    assert "ledger refused" in report.files[2].error
    written = {Path(p).name for (p,) in conn.execute("SELECT DISTINCT source_file FROM log_lines").fetchall()}
    assert written == {"r0.log", "r1.log", "r3.log"}  # nothing half-written for the file that failed
    assert conn.execute("SELECT count(*) FROM run_failures WHERE incident_id LIKE '%r2.log'").fetchone()[0] == 1
    _balanced(conn, type(report)(report.run_id, report.kind, [f for f in report.files if f.status == "ingested"]))


def test_small_files_are_written_in_one_transaction_not_one_each(conn, settings, tmp_path, monkeypatch):
    from faultline.ingest import api

    folder = tmp_path / "archive"
    folder.mkdir()
    for n in range(5):
        (folder / f"r{n}.log").write_text(f"Jun 14 15:16:0{n} r{n} sshd[5]: session opened\n")
    calls = []
    real = api._commit

    def spy(*args, **kwargs):
        calls.append(kwargs.get("own_transaction", True))
        return real(*args, **kwargs)

    monkeypatch.setattr(api, "_commit", spy)
    report = _ingest(conn, settings, folder)
    assert [f.status for f in report.files] == ["ingested"] * 5
    # the group's write took: no file was written again on its own (the fallback a failed group takes)
    assert calls == [False] * 5
    _balanced(conn, report)
