"""The year of year-less log timestamps: --year, the archive's dated folders and file names, the tickets already
ingested, the file's modification time, and a file that crosses New Year (real ingest into a real DuckDB)."""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path

import pytest

from faultline.ingest.api import ingest_paths

COPIED = datetime(2026, 5, 2, 9, 0).timestamp()  # the day the archive was copied to a new disk


def _log(path: Path, *lines: str, mtime: float = COPIED) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{line}\n" for line in lines))
    os.utime(path, (mtime, mtime))
    return path


@pytest.fixture
def fresh(tmp_path):
    """Settings without log_default_year (the rules decide), and their warehouse."""
    from faultline import db
    from faultline.config import Settings

    settings = Settings(duckdb_path=tmp_path / "fl.duckdb", lancedb_dir=tmp_path / "lancedb", progress=False)
    conn = db.open_warehouse(settings)
    yield conn, settings
    conn.close()


def _years(conn) -> dict[str, tuple[int | None, str | None]]:
    rows = conn.execute("SELECT source_file, log_year, log_year_source FROM ingest_files WHERE kind = 'logs'")
    return {Path(f).name: (y, s) for f, y, s in rows.fetchall()}


def _stamps(conn, name: str) -> list[str]:
    rows = conn.execute("SELECT strftime(ts, '%Y-%m-%d %H:%M') FROM log_lines WHERE source_file LIKE ? "
                        "ORDER BY line_no", [f"%/{name}"]).fetchall()
    return [r[0] for r in rows]


def _notes(report) -> dict[str, list[str]]:
    return {Path(f.path).name: f.messages for f in report.files}


def test_the_year_option_dates_year_less_lines_and_a_new_year_reads_the_file_again(run_cli, settings, tmp_path,
                                                                                   capsys, monkeypatch):
    from faultline import db

    monkeypatch.delenv("FAULTLINE_LOG_DEFAULT_YEAR", raising=False)
    _log(tmp_path / "archive" / "spine2.log", "Sep 19 16:50:00 spine2 bgpd[1]: neighbor 10.0.0.1 Down")
    run_cli("ingest", "logs", str(tmp_path / "archive"), "--year", "2019")
    assert "spine2.log: timestamps without a year: year 2019 as given (--year" in capsys.readouterr().out
    run_cli("ingest", "logs", str(tmp_path / "archive"), "--year", "2018")  # unchanged file, another year: read again
    assert "year 2018 as given" in capsys.readouterr().out
    with db.connect(settings.duckdb_path) as conn:
        assert _stamps(conn, "spine2.log") == ["2018-09-19 16:50"]
        assert _years(conn) == {"spine2.log": (2018, "given")}


def test_a_dated_folder_below_the_ingested_one_gives_the_year(fresh, tmp_path):
    conn, settings = fresh
    root = tmp_path / "2015-01-01" / "archive"  # a date above the folder ingested says nothing of the logs
    _log(root / "2024" / "03" / "05" / "spine2.log", "Mar  5 10:00:00 spine2 bgpd[1]: neighbor 10.0.0.1 Down")
    _log(root / "2023-11-30" / "leaf3" / "messages", "Nov 30 23:00:00 leaf3 bgpd[1]: neighbor 10.0.0.3 Up")
    _log(root / "undated" / "leaf4.log", "Nov 30 23:00:00 leaf4 bgpd[1]: neighbor 10.0.0.5 Up")
    report = ingest_paths(conn, settings, "logs", [root])
    assert _stamps(conn, "spine2.log") == ["2024-03-05 10:00"] and _stamps(conn, "messages") == ["2023-11-30 23:00"]
    assert _years(conn) == {"spine2.log": (2024, "folder"), "messages": (2023, "folder"),
                            "leaf4.log": (2026, "mtime")}
    assert "timestamps without a year: year 2024 from the folder name 2024/03/05" in _notes(report)["spine2.log"]


def test_a_dated_file_name_gives_the_year(fresh, tmp_path):
    conn, settings = fresh
    line = "Mar  4 10:00:00 r1 bgpd[1]: neighbor 10.0.0.1 Down"
    for name in ("messages-20240305", "syslog.2024-03-05.log", "router1-2024.log", "edge-2099.log"):
        _log(tmp_path / "archive" / name, line)
    report = ingest_paths(conn, settings, "logs", [tmp_path / "archive"])
    assert _years(conn) == {"messages-20240305": (2024, "file_name"), "syslog.2024-03-05.log": (2024, "file_name"),
                            "router1-2024.log": (2024, "file_name"),
                            "edge-2099.log": (2026, "mtime")}  # no such year yet: not a date
    assert _stamps(conn, "router1-2024.log") == ["2024-03-04 10:00"]
    assert "timestamps without a year: year 2024 from the file name messages-20240305" in \
        _notes(report)["messages-20240305"]


def test_the_tickets_already_ingested_give_the_year(fresh, tmp_path):
    conn, settings = fresh
    tickets = tmp_path / "tickets.jsonl"
    tickets.write_text("\n".join(json.dumps(t) for t in [
        {"ticket_id": "NOC-1", "title": "BGP down spine2", "created_at": "2019-09-19T17:00:00+00:00"},
        {"ticket_id": "NOC-2", "title": "leaf3 flaps", "created_at": "2021-03-01T08:00:00+00:00"},
    ]) + "\n")
    ingest_paths(conn, settings, "tickets", [tickets])
    _log(tmp_path / "archive" / "spine2.log", "Sep 19 08:00:00 spine2 bgpd[1]: neighbor 10.0.0.1 Down",
         "Sep 20 11:00:00 spine2 bgpd[1]: neighbor 10.0.0.1 Up")
    _log(tmp_path / "archive" / "leaf3.log", "Feb 28 22:00:00 leaf3 bgpd[1]: neighbor 10.0.0.3 Down")
    report = ingest_paths(conn, settings, "logs", [tmp_path / "archive"])
    assert _years(conn) == {"spine2.log": (2019, "tickets"), "leaf3.log": (2021, "tickets")}
    assert _stamps(conn, "spine2.log") == ["2019-09-19 08:00", "2019-09-20 11:00"]
    assert any("year 2019 from the tickets already ingested" in m and "pass --year if wrong" in m
               for m in _notes(report)["spine2.log"])


def test_tickets_ingested_after_the_logs_re_date_lines_that_took_the_copy_s_modification_year(fresh, tmp_path):
    conn, settings = fresh  # the README's order on a copied archive: logs, then tickets
    _log(tmp_path / "archive" / "spine2.log", "Sep 19 08:00:00 spine2 bgpd[1]: neighbor 10.0.0.1 Down",
         "Sep 20 11:00:00 spine2 bgpd[1]: neighbor 10.0.0.1 Up", mtime=datetime(2026, 11, 30, 9, 0).timestamp())
    _log(tmp_path / "archive" / "2019" / "leaf3.log", "Sep 19 08:00:05 leaf3 bgpd[1]: neighbor 10.0.0.0 Down")
    ingest_paths(conn, settings, "logs", [tmp_path / "archive"])
    assert _years(conn) == {"spine2.log": (2026, "mtime"), "leaf3.log": (2019, "folder")}
    tickets = tmp_path / "tickets.jsonl"
    tickets.write_text(json.dumps({"ticket_id": "NOC-1", "title": "BGP down spine2",
                                   "created_at": "2019-09-19T08:10:00+00:00"}) + "\n")
    report = ingest_paths(conn, settings, "tickets", [tickets])
    assert _years(conn) == {"spine2.log": (2019, "tickets"), "leaf3.log": (2019, "folder")}  # a dated path stays
    assert _stamps(conn, "spine2.log") == ["2019-09-19 08:00", "2019-09-20 11:00"]
    said = [m for f in report.files for m in f.messages]
    assert any("spine2.log" in m and "re-dated to 2019 by the tickets now ingested" in m for m in said)


def test_without_any_clue_the_modification_year_is_taken_and_says_so(fresh, tmp_path):
    conn, settings = fresh
    _log(tmp_path / "leaf4.log", "Jun 14 15:16:01 leaf4 bgpd[11]: neighbor 10.0.0.2 Down",
         mtime=datetime(2021, 6, 30, 12, 0).timestamp())
    _log(tmp_path / "web1.log", "2017-08-04T10:20:00+00:00 web1 nginx[1]: started")  # carries its year
    report = ingest_paths(conn, settings, "logs", [tmp_path / "leaf4.log", tmp_path / "web1.log"])
    assert _years(conn) == {"leaf4.log": (2021, "mtime"), "web1.log": (None, None)}
    notes = _notes(report)
    assert ("timestamps without a year: year 2021 from the file's modification time — pass --year if wrong"
            in notes["leaf4.log"])
    assert not any("year" in m for m in notes["web1.log"])


@pytest.mark.parametrize("batch_bytes", [None, 120])  # one batch, or a few lines a batch
def test_a_file_that_crosses_new_year_dates_its_later_lines_the_next_year(fresh, tmp_path, monkeypatch, batch_bytes):
    from faultline.ingest import log_ingest

    if batch_bytes:
        monkeypatch.setattr(log_ingest, "BATCH_BYTES", batch_bytes)
    conn, settings = fresh
    _log(tmp_path / "archive" / "2023" / "core1.log",
         "Dec 31 23:58:00 core1 bgpd[1]: neighbor 10.0.0.1 Down",
         "Jan  1 00:01:00 core1 bgpd[1]: neighbor 10.0.0.1 Up",
         "Dec 31 23:59:59 core1 bgpd[1]: neighbor 10.0.0.9 Down",  # a late line of another stream
         "Jan  1 00:02:00 core1 bgpd[1]: neighbor 10.0.0.9 Up",
         "Mar  3 10:00:00 core1 bgpd[1]: neighbor 10.0.0.9 Down")
    report = ingest_paths(conn, settings, "logs", [tmp_path / "archive"])
    assert _stamps(conn, "core1.log") == ["2023-12-31 23:58", "2024-01-01 00:01", "2023-12-31 23:59",
                                          "2024-01-01 00:02", "2024-03-03 10:00"]
    assert _years(conn) == {"core1.log": (2023, "folder")}
    assert any("crosses New Year: its last lines are dated 2024" in m for m in _notes(report)["core1.log"])


def test_a_file_rotated_on_new_years_day_begins_the_year_before(fresh, tmp_path):
    conn, settings = fresh
    _log(tmp_path / "archive" / "messages-20240101", "Dec 30 08:00:00 r1 bgpd[1]: neighbor 10.0.0.1 Down",
         "Jan  1 00:00:01 r1 bgpd[1]: neighbor 10.0.0.1 Up")
    ingest_paths(conn, settings, "logs", [tmp_path / "archive"])
    assert _stamps(conn, "messages-20240101") == ["2023-12-30 08:00", "2024-01-01 00:00"]
    assert _years(conn) == {"messages-20240101": (2023, "file_name")}
