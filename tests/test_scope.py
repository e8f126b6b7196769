"""A ticket's log scope: time words, device mentions, learned links, clock offsets, and the stored rows.

Synthetic archives go through the real log ingest into a real DuckDB warehouse; the IOS-XR test reads
the shared router logs (marker `data`).
"""

from __future__ import annotations

import gzip
from datetime import datetime, timedelta, timezone

import pytest

from faultline.scope.devices import Candidate, interface_key, resolve_mentions
from faultline.scope.timewords import ticket_window

OPENED = datetime(2026, 11, 30, 10, 24, tzinfo=timezone.utc)


@pytest.mark.parametrize("text, start, end", [
    ("BGP down on leaf1 around 10:20", "10:05", "10:35"),
    ("can't reach 10.1.1.10 since: 01:20", "01:05", "10:29"),
    ("flaps ~10:34", "10:19", "10:49"),
    ("outage between 10:20 and 10:25", "10:18", "10:27"),
    ("20 minutes ago the VPN dropped", "09:49", "10:19"),
    ("no time words at all", "09:54", "10:29"),
    ("since 25:99 nothing works", "09:54", "10:29"),  # not a time: the fallback, never a crash
])
def test_the_window_follows_the_ticket_words_else_its_opening(text, start, end):
    window = ticket_window(text, OPENED, "UTC")
    assert (window.start.strftime("%H:%M"), window.end.strftime("%H:%M")) == (start, end)
    assert window.reason


def test_a_time_later_than_the_opening_is_yesterday_and_zones_convert():
    window = ticket_window("since 23:50", datetime(2026, 11, 30, 0, 10, tzinfo=timezone.utc), "UTC")
    assert window.start.date().isoformat() == "2026-11-29"
    pacific = ticket_window("around 10:20", datetime(2017, 8, 4, 17, 30, tzinfo=timezone.utc), "America/Los_Angeles")
    assert pacific.start == datetime(2017, 8, 4, 17, 5, tzinfo=timezone.utc)  # 10:05 PDT
    stated = ticket_window("around 10:20 UTC", datetime(2017, 8, 4, 17, 30, tzinfo=timezone.utc), "America/Los_Angeles")
    assert stated.start == datetime(2017, 8, 4, 10, 5, tzinfo=timezone.utc)


def test_devices_are_found_by_loose_names_addresses_dns_names_and_interfaces():
    devices = {
        "core_router_1": Candidate("core_router_1", addresses={"10.0.0.1"}),
        "web_server_3": Candidate("web_server_3", dns_names={"web3.local"}),
        "spine2": Candidate("spine2", interfaces={"HundredGigE0/0/0/8"}),
        "leaf1": Candidate("leaf1"), "leaf12": Candidate("leaf12"), "dr01": Candidate("dr01"),
    }
    mentions, unmatched = resolve_mentions(
        "Core Router 1 and Spine-2 Hu0/0/0/8 down", "web3.local is slow; 10.0.0.1 unreachable; dr1 and leaf9 too",
        devices)
    found = {(m.device, m.kind) for m in mentions}
    assert {("core_router_1", "named"), ("spine2", "named"), ("web_server_3", "named"), ("core_router_1", "address"),
            ("dr01", "named"), ("spine2", "interface")} <= found
    assert not any(m.device in ("leaf1", "leaf12") and m.kind == "named" for m in mentions)  # leaf9 names neither
    assert "leaf9" in unmatched
    assert interface_key("Hu0/0/0/8") == interface_key("HundredGigE0/0/0/8")


def test_a_role_word_names_the_family():
    devices = ({f"spine{n}": Candidate(f"spine{n}") for n in range(1, 4)}
               | {"leaf1": Candidate("leaf1"), "leaf2": Candidate("leaf2")})
    mentions, _ = resolve_mentions("BGP flaps on the spines", "", devices)
    assert {m.device for m in mentions} == {"spine1", "spine2", "spine3"}


def _archive(folder, lines_by_device):
    for device, lines in lines_by_device.items():
        target = folder / device / "2017-08-04.log.gz"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))


def _iso(hh_mm_ss: str, shift_h: int = 0) -> str:
    stamp = datetime.fromisoformat(f"2017-08-04T{hh_mm_ss}") + timedelta(hours=shift_h)
    return stamp.isoformat() + "+00:00"


@pytest.fixture()
def archive_conn(tmp_path):
    """A collector archive: r1 and r2 share a /31 (BGP), r3 peers with r2 and logs 7 h ahead, r4 is elsewhere."""
    from faultline import db
    from faultline.config import Settings
    from faultline.ingest.api import ingest_paths

    def bgp(device, t, neighbour, state, shift=0):
        return f"{_iso(t, shift)} {device} bgpd[10]: %ADJCHANGE: neighbor {neighbour} in vrf default {state}"

    lines = {
        "r1": [bgp("r1", f"10:{m:02d}:00", "10.0.0.1", s) for m, s in ((10, "Down"), (12, "Up"), (30, "Down"))],
        "r2": [bgp("r2", f"10:{m:02d}:00", "10.0.0.0", s) for m, s in ((10, "Down"), (12, "Up"), (30, "Down"))]
        + [bgp("r2", f"10:{m:02d}:01", "10.0.1.1", s) for m, s in ((14, "Down"), (16, "Up"), (40, "Down"))],
        "r3": [bgp("r3", f"10:{m:02d}:01", "10.0.1.0", s, shift=7)
               for m, s in ((14, "Down"), (16, "Up"), (40, "Down"))],
        "r4": [f"{_iso('10:20:00')} r4 sshd[1]: session opened"],
    }
    _archive(tmp_path / "archive", lines)
    settings = Settings(duckdb_path=tmp_path / "fl.duckdb", lancedb_dir=tmp_path / "lancedb", progress=False)
    conn = db.open_warehouse(settings)
    report = ingest_paths(conn, settings, "logs", [tmp_path / "archive"])
    assert report.totals()["accepted"] == 13
    yield conn, settings
    conn.close()


def test_the_archive_lines_name_their_device(archive_conn):
    conn, _ = archive_conn
    devices = dict(conn.execute("SELECT device, count(*) FROM log_lines GROUP BY device").fetchall())
    assert devices == {"r1": 3, "r2": 6, "r3": 3, "r4": 1}


def test_scope_takes_the_named_device_its_learned_neighbours_and_their_clocks(archive_conn):
    from faultline.scope.resolve import build_scope, scope_lines
    from faultline.scope.store import read_scope, write_scope

    conn, settings = archive_conn
    scope = build_scope(conn, settings, incident_id="T-1", title="BGP flap on R2", description="around 10:13",
                        opened_at="2017-08-04T10:45:00+00:00")
    by_device = {e.device: e for e in scope.entries if e.device}
    assert set(by_device) == {"r2", "r1", "r3"}  # r4 logged in the window but is nobody's neighbour
    assert by_device["r2"].kind == "named" and by_device["r1"].kind == "neighbour"
    assert "10.0.0.0" in by_device["r1"].reason or "10.0.0.1" in by_device["r1"].reason
    assert by_device["r3"].clock_offset_s == 7 * 3600 and "clock −7 h" in by_device["r3"].reason
    assert by_device["r3"].lines_in_scope == 2  # its 10:14 and 10:16 changes, read on its own clock
    lines = scope_lines(conn, scope, "l.device, l.raw").fetchall()
    assert {d for d, _ in lines} == {"r1", "r2", "r3"} and not any("10:40" in raw or "10:30" in raw for _, raw in lines)
    write_scope(conn, scope)
    stored = read_scope(conn, "T-1", scope.round, settings.log_timezone)
    assert {e.device for e in stored.entries if e.device} == set(by_device)


def test_a_ticket_naming_no_known_device_records_why_and_reads_the_fleet(archive_conn):
    from faultline.scope.resolve import build_scope

    conn, settings = archive_conn
    scope = build_scope(conn, settings, incident_id="T-2", title="edge9 is down", description="since 10:19",
                        opened_at="2017-08-04T10:25:00+00:00")
    note = next(e for e in scope.entries if e.kind == "no_match")
    assert "edge9" in note.reason and note.matched == "edge9"
    assert {e.device for e in scope.entries if e.kind == "fleet"} == {"r1", "r2", "r3", "r4"}


@pytest.fixture()
def copied_archive(tmp_path):
    """A classic-syslog archive copied to a new disk in 2026 and ingested without --year: its lines from
    2019-09-19/20 land in 2026."""
    import os

    from faultline import db
    from faultline.config import Settings
    from faultline.ingest.api import ingest_paths

    lines = {"spine2": ["Sep 19 08:00:00 spine2 bgpd[1]: %ADJCHANGE: neighbor 10.0.0.1 Down",
                        "Sep 19 16:55:00 spine2 bgpd[1]: %ADJCHANGE: neighbor 10.0.0.1 Down"],
             "leaf3": ["Sep 19 16:55:01 leaf3 bgpd[1]: %ADJCHANGE: neighbor 10.0.0.0 Down",
                       "Sep 20 11:00:00 leaf3 bgpd[1]: %ADJCHANGE: neighbor 10.0.0.0 Up"]}
    copied = datetime(2026, 10, 1, 9, 0).timestamp()
    for device, text in lines.items():
        path = tmp_path / "archive" / device / "messages"
        path.parent.mkdir(parents=True)
        path.write_text("\n".join(text) + "\n")
        os.utime(path, (copied, copied))
    settings = Settings(duckdb_path=tmp_path / "fl.duckdb", lancedb_dir=tmp_path / "lancedb", progress=False)
    conn = db.open_warehouse(settings)
    ingest_paths(conn, settings, "logs", [tmp_path / "archive"])
    yield conn, settings, tmp_path / "archive"
    conn.close()


_TICKET = {"incident_id": "NOC-7", "title": "BGP between spine2 and leaf3 dropped",
           "description": "around 16:55", "opened_at": "2019-09-19T17:00:00+00:00"}


def test_a_window_years_before_the_archive_says_so_with_both_ranges_and_the_fix(copied_archive):
    from faultline.ingest.api import ingest_paths
    from faultline.scope.resolve import build_scope

    conn, settings, archive = copied_archive
    scope = build_scope(conn, settings, **_TICKET)
    said = "\n".join(scope.describe())
    assert "no device matched" not in said
    assert ("the ticket's window 2019-09-19 16:40–17:10 holds no line of leaf3, spine2, which logged from "
            "2026-09-19 08:00 to 2026-09-20 11:00; the archive's lines are dated 7 years after the ticket; their "
            "files took 2026 from the file's modification time — if its timestamps carry no year, ingest it again "
            "with `faultline ingest logs DIR --year 2019`") in said
    # doing what it says fills the window
    ingest_paths(conn, settings.model_copy(update={"log_default_year": 2019}), "logs", [archive])
    fixed = build_scope(conn, settings, **_TICKET)
    assert {e.device: e.lines_in_scope for e in fixed.entries if e.device} == {"spine2": 1, "leaf3": 1}
    assert not any(e.kind in ("out_of_window", "no_match") for e in fixed.entries)


def test_the_empty_window_reason_reaches_the_log_agent_and_the_verdict_unchanged(copied_archive):
    from faultline.astra.agents import AgentDeps, make_agent
    from faultline.astra.records import AgentTask, Incident
    from faultline.scope.resolve import build_scope
    from faultline.verdict.sources import log_opinion

    conn, settings, _ = copied_archive
    reason = next(e.reason for e in build_scope(conn, settings, **_TICKET).entries if e.kind == "out_of_window")
    output = make_agent("log", AgentDeps(settings, conn)).run(
        AgentTask(incident=Incident(**_TICKET), query=_TICKET["title"]))
    assert reason in output.missing and reason in output.text and "--year 2019" in reason
    assert reason in log_opinion({"log": output}).note


def test_a_follow_up_round_may_widen_the_window(archive_conn):
    from faultline.scope.resolve import build_scope

    conn, settings = archive_conn
    narrow = build_scope(conn, settings, incident_id="T-3", title="r1 BGP", description="around 10:10",
                         opened_at="2017-08-04T10:45:00+00:00")
    wide = build_scope(conn, settings, incident_id="T-3", title="r1 BGP", description="around 10:10",
                       opened_at="2017-08-04T10:45:00+00:00", round=2, widen=1)
    count = {e.device: e.lines_in_scope for e in narrow.entries if e.device}
    wider = {e.device: e.lines_in_scope for e in wide.entries if e.device}
    assert count["r1"] == 2 and wider["r1"] == 3  # the 10:30 Down joins


@pytest.fixture(scope="module")
def iosxr(data_dir, tmp_path_factory):
    """The shared IOS-XR bgpclear logs ingested as one archive (no incident id), in their PDT clock."""
    from faultline import db
    from faultline.config import Settings
    from faultline.ingest.api import ingest_paths

    base = tmp_path_factory.mktemp("iosxr")
    logs = sorted((data_dir / "logs" / "iosxr" / "bgpclear" / "logs").glob("*.bgpclear.log"))
    settings = Settings(duckdb_path=base / "fl.duckdb", lancedb_dir=base / "lancedb", progress=False,
                        log_default_year=2017, log_timezone="America/Los_Angeles")
    conn = db.open_warehouse(settings)
    ingest_paths(conn, settings, "logs", logs)
    yield conn, settings
    conn.close()


@pytest.mark.data
def test_iosxr_archive_scope_finds_leaf4s_utc_clock_and_the_cleared_device(iosxr):
    from faultline.scope.resolve import build_scope

    conn, settings = iosxr
    # spine2 was cleared at 10:29:44 PDT (docs/data.md); the ticket names only leaf4, one of its peers
    scope = build_scope(conn, settings, incident_id="x", title="leaf4 lost BGP peers",
                        description="around 10:30", opened_at="2017-08-04T10:36:00-07:00")
    by_device = {e.device: e for e in scope.entries if e.device}
    assert by_device["leaf4"].clock_offset_s == 7 * 3600
    assert by_device["spine2"].kind == "neighbour"
    cleared = conn.execute("SELECT count(*) FROM log_lines WHERE device = 'spine2' "
                           "AND raw LIKE '%User clear requested%' "
                           "AND ts BETWEEN '2017-08-04 10:15:00' AND '2017-08-04 10:45:00'").fetchone()[0]
    assert cleared and by_device["spine2"].lines_in_scope >= cleared


@pytest.mark.data
def test_a_ticket_naming_a_peer_blames_the_cleared_router_not_the_echo(iosxr):
    """spine2 was cleared at 10:29:44 PDT; its peers log 'Notification received' (the echo) at the same second."""
    from faultline.astra.labels import best_label
    from faultline.astra.log_signals import label_scores
    from faultline.astra.records import Incident
    from faultline.scope.resolve import build_scope

    conn, settings = iosxr
    incident = Incident(incident_id="peer", title="BGP neighbours flapped on leaf8",
                        description="leaf8 reported BGP neighbours going down around 10:30",
                        opened_at="2017-08-04T17:37:00+00:00")
    scope = build_scope(conn, settings, incident_id="peer", title=incident.title, description=incident.description,
                        opened_at=incident.opened_at)
    scores, hits = label_scores(conn, settings, incident, scope)
    assert best_label(scores) == "bgp_reset_operator_clear"
    top = next(h for h in hits if h.label == "bgp_reset_operator_clear")
    assert {line.device for line in top.lines} == {"spine2"}  # leaf8's own clear at 10:35:25 is 5 minutes off
