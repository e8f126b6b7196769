"""A suite's syslog archive (no root): staged collector lines moved onto the suite's timeline, rotated by
day, gzipped reproducibly, incidents never overlapping; and its ingestion as ordinary logs."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from faultline.corpus.archive import (
    ARCHIVE,
    STAGED,
    assemble_archive,
    line_time,
    shift_line,
    stage_incident,
)
from faultline.corpus.spec import Suite, load_suite

EPOCH = datetime(2026, 3, 1, 23, 30, tzinfo=UTC)  # half an hour before midnight: slots cross a day


def _suite(n: int = 3) -> Suite:
    return Suite(suite="arch", epoch=EPOCH, slot_minutes=20,
                 incidents=[{"scenario": "simple_bgp", "seed": k, "healthy": True} for k in range(n)])


def _collector_lines(real_start: datetime, tag: str) -> list[tuple[str, str]]:
    """What a lab's collector filed: router1 (FRR), dns (dnsmasq), web (nginx error and access)."""
    def at(seconds: float) -> str:
        return (real_start + timedelta(seconds=seconds)).isoformat(timespec="microseconds")
    return [
        ("router1", f"<29>{at(1)} router1 bgpd[812]: %ADJCHANGE: neighbor 10.0.0.1 Up {tag}"),
        ("router1", f"<29>{at(70)} router1 bgpd[812]: %ADJCHANGE: neighbor 10.0.0.1 Down {tag}"),
        ("dns", f"<30>{at(2)} dns dnsmasq[77]: query[A] web.lab from 10.1.0.10 {tag}"),
        ("web", (f"<187>{at(3)} web nginx: {(real_start + timedelta(seconds=3)).strftime('%Y/%m/%d %H:%M:%S')} "
                 f"[error] 9#9: connect() failed {tag}")),
        ("web", (f"<190>{at(4)} web nginx: 10.1.0.10 - - "
                 f"[{(real_start + timedelta(seconds=4)).strftime('%d/%b/%Y:%H:%M:%S +0000')}] "
                 f"\"GET / HTTP/1.1\" 200 {tag}")),
    ]


def _stage(out: Path, suite: Suite, position: int, real_start: datetime, tag: str) -> None:
    incident = suite.incident_ids()[position]
    folder = out / incident
    folder.mkdir(parents=True, exist_ok=True)
    lines = _collector_lines(real_start, tag)
    lines.append(("router1", f"<30>{(real_start - timedelta(hours=1)).isoformat()} router1 zebra[1]: before the lab"))
    counts = stage_incident(lines, folder, start=real_start, end=real_start + timedelta(minutes=5),
                            delta=suite.slot_start(position) - real_start)
    assert counts["syslog_lines"] == 5 and counts["syslog_lines_outside_span"] == 1


def _archive(out: Path) -> dict[str, list[str]]:
    return {str(p.relative_to(out / ARCHIVE)): gzip.decompress(p.read_bytes()).decode().splitlines()
            for p in sorted((out / ARCHIVE).glob("*/*.log.gz"))}


def test_a_line_moves_with_its_incident_and_keeps_its_format():
    line = "<29>2026-12-01T19:14:16.093410+00:00 router1 ospfd[25363]: AdjChg: Nbr 10.255.0.2: Down -> Init"
    moved = shift_line(line, timedelta(days=-1, hours=2))
    assert moved == "<29>2026-11-30T21:14:16.093410+00:00 router1 ospfd[25363]: AdjChg: Nbr 10.255.0.2: Down -> Init"
    nginx = "<190>2026-12-01T19:14:16.000001+00:00 web nginx: 10.1.0.10 - - [01/Dec/2026:19:14:16 +0000] \"GET /\""
    assert "[01/Dec/2026:18:14:16 +0000]" in shift_line(nginx, timedelta(hours=-1))
    assert shift_line("no time here", timedelta(hours=1)) is None and line_time("garbage") is None


def test_the_archive_puts_each_incident_in_its_slot_rotated_by_day(tmp_path):
    suite = _suite()
    real = datetime(2026, 12, 1, 19, 14, tzinfo=UTC)
    # incidents generated in any order and at any real time land in their own slots
    _stage(tmp_path, suite, 2, real, "third")
    _stage(tmp_path, suite, 0, real + timedelta(minutes=7), "first")
    _stage(tmp_path, suite, 1, real - timedelta(days=3), "second")
    report = assemble_archive(tmp_path, suite)
    assert report.lines == 15 and report.staged == ["arch-001", "arch-002", "arch-003"]
    files = _archive(tmp_path)
    # slot 0 starts 23:30 on March 1; slots 1 and 2 start at 23:50 and 00:10 (the next day)
    assert sorted(files) == ["dns/2026-03-01.log.gz", "dns/2026-03-02.log.gz", "router1/2026-03-01.log.gz",
                             "router1/2026-03-02.log.gz", "web/2026-03-01.log.gz", "web/2026-03-02.log.gz"]
    for position, tag in enumerate(("first", "second", "third")):
        start, end = suite.slot_start(position), suite.slot_start(position + 1)
        mine = [line for lines in files.values() for line in lines if line.endswith(tag)]
        assert len(mine) == 5 and all(start <= line_time(line) < end for line in mine), tag
    router = files["router1/2026-03-01.log.gz"] + files["router1/2026-03-02.log.gz"]
    assert [line_time(x) for x in router] == sorted(line_time(x) for x in router)
    assert router[0] == "<29>2026-03-01T23:30:01.000000+00:00 router1 bgpd[812]: %ADJCHANGE: neighbor 10.0.0.1 Up first"
    web = files["web/2026-03-01.log.gz"]
    assert "2026/03/01 23:30:03 [error]" in web[0] and "[01/Mar/2026:23:30:04 +0000]" in web[1]
    assert not list(tmp_path.glob(f"*/{STAGED}")), "staged files are removed once merged"


def test_the_archive_is_byte_for_byte_reproducible(tmp_path):
    suite = _suite(2)
    real = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
    outputs = []
    for run in ("a", "b"):
        out = tmp_path / run
        _stage(out, suite, 0, real, "x")
        _stage(out, suite, 1, real + timedelta(hours=run == "b"), "y")  # generated later: same archive
        assemble_archive(out, suite)
        outputs.append({p.relative_to(out): p.read_bytes() for p in sorted((out / ARCHIVE).rglob("*.gz"))})
    assert outputs[0] == outputs[1] and len(outputs[0]) == 3
    assert all(data[4:8] == b"\0\0\0\0" for data in outputs[0].values())  # gzip mtime 0


def test_regenerating_one_incident_keeps_the_others_lines(tmp_path):
    suite = _suite()
    real = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
    for position, tag in enumerate(("first", "second", "third")):
        _stage(tmp_path, suite, position, real, tag)
    assemble_archive(tmp_path, suite)
    _stage(tmp_path, suite, 1, real + timedelta(days=1), "again")  # `--only arch-002`
    report = assemble_archive(tmp_path, suite)
    assert report.staged == ["arch-002"] and report.carried == ["arch-001", "arch-003"]
    lines = [line for lines in _archive(tmp_path).values() for line in lines]
    assert sum(x.endswith("again") for x in lines) == 5 and not any(x.endswith("second") for x in lines)
    assert sum(x.endswith("first") for x in lines) == sum(x.endswith("third") for x in lines) == 5
    # an incident dropped from the suite takes its lines with it
    assemble_archive(tmp_path, _suite(2))
    assert not any(x.endswith("third") for lines in _archive(tmp_path).values() for x in lines)


def test_a_flooding_device_keeps_its_last_lines_within_the_bound(tmp_path):
    real = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
    flood = [("web", f"<190>{(real + timedelta(milliseconds=i)).isoformat()} web nginx: GET /big.bin {i}")
             for i in range(5000)]
    counts = stage_incident(flood + [("dns", f"<30>{real.isoformat()} dns dnsmasq[1]: started")], tmp_path,
                            start=real, end=real + timedelta(minutes=1), delta=timedelta(0), max_device_bytes=4096)
    with gzip.open(tmp_path / STAGED, "rt") as fh:
        records = [json.loads(line) for line in fh]
    web = [r["line"] for r in records if r["device"] == "web"]
    assert sum(len(x) + 1 for x in web) <= 4096 and web[-1].endswith(" 4999")
    assert counts["syslog_lines_cut"] == 5000 - len(web) and any(r["device"] == "dns" for r in records)


def test_every_history_ticket_is_resolved_before_the_backlog_opens():
    """Tickets are filed at most 20 min after their snapshot and resolved at most 8 h after filing."""
    history, backlog = load_suite("sample_history"), load_suite("sample_backlog")
    assert history.end() + timedelta(minutes=20 + 480) < backlog.epoch


def test_ingest_reads_the_archive_as_plain_logs_and_old_per_incident_logs(tmp_path, conn, settings):
    from faultline.ingest.incidents import ingest_incidents

    suite = _suite(1)
    new, old = tmp_path / "new", tmp_path / "old"
    _stage(new, suite, 0, datetime(2026, 12, 1, 8, 0, tzinfo=UTC), "archived")
    assemble_archive(new, suite)
    (old / "logs" / "r9").mkdir(parents=True)
    (old / "logs" / "r9" / "bgpd.log.gz").write_bytes(gzip.compress(
        b"2026-01-01T00:00:00.000000+00:00 r9 bgpd[1]: %ADJCHANGE: neighbor 10.0.0.9 Down\n", mtime=0))
    for folder, incident in ((new / "arch-001", "arch-001"), (old, "old-001")):
        _incident_files(folder, incident)
    report = ingest_incidents(conn, settings, [new, old])
    assert sorted(report.loaded) == ["arch-001", "old-001"]
    rows = conn.execute("select host, incident_id, ts from log_lines order by ts, host").fetchall()
    archived = [r for r in rows if r[0] != "r9"]
    assert len(archived) == 5 and {r[1] for r in archived} == {None}  # no incident id, like `ingest logs`
    assert {r[0] for r in archived} == {"router1", "dns", "web"}
    assert all(EPOCH.replace(tzinfo=None) <= r[2] < (EPOCH + suite.slot).replace(tzinfo=None) for r in archived)
    assert next(r for r in rows if r[0] == "r9")[1] == "old-001"  # an old corpus keeps its tagged logs


def _incident_files(folder: Path, incident: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    stamp = EPOCH.isoformat()
    (folder / "incident.json").write_text(json.dumps({
        "incident_id": incident, "status": "valid", "scenario": "simple_bgp", "size": "s", "seed": 1,
        "historical": False, "window_start": stamp, "recorded_at": stamp, "spec": {}}))
    (folder / "ticket.json").write_text(json.dumps({
        "ticket_id": f"T-{incident}", "project": "NOC", "title": "router flaps", "description": "pings fail",
        "status": "Open", "priority": "P3", "components": ["network"], "created_at": stamp, "updated_at": stamp}))
    (folder / "ground_truth.json").write_text(json.dumps({
        "v1": {"is_anomaly": False}, "v2": [], "categories": [], "resolution": None}))
