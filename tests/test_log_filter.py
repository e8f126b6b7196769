"""The log engine's excerpt: five levels on real and written logs, noise suppression, context
windows, the line cap, collapse that never hides an error, the CLI and the stored record."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from faultline.logs.filter import apply_levels, ticket_terms
from faultline.logs.pipeline import build_excerpt, lines_for_incident, lines_from_files
from faultline.logs.store import read_excerpt, write_excerpt
from faultline.logs.vocab import LEVELS, default_vocab, load_vocab

IOSXR = ("logs", "iosxr", "bgpclear", "logs")


def _levels(settings, path: Path, terms=(), log_format=None) -> pl.DataFrame:
    lines = lines_from_files([path], settings, log_format)
    return apply_levels(lines, default_vocab(), list(terms))


def _fired(frame: pl.DataFrame, needle: str) -> set[str]:
    """Levels that fired on the first line whose raw text contains `needle`."""
    row = frame.filter(pl.col("raw").str.contains(needle, literal=True)).row(0, named=True)
    return {level for level in LEVELS if row[level.lower()]}


def _write(tmp_path: Path, name: str, lines: list[str]) -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def _excerpt(settings, paths, **kwargs):
    lines = lines_from_files(list(paths), settings)
    return build_excerpt(lines, settings=settings, incident_id=kwargs.pop("incident_id", "t"), **kwargs)


# ----------------------------------------------------------------------------- levels

@pytest.mark.data
def test_levels_on_real_iosxr_lines(settings, data_dir):
    folder = data_dir.joinpath(*IOSXR)
    leaf1 = _levels(settings, folder / "leaf1.bgpclear_no_traffic.log")
    assert _fired(leaf1, "ADJCHANGE : neighbor 172.31.11.0 Down - User clear requested") == {"L3"}
    assert _fired(leaf1, "%ROUTING-BGP-5-ADJCHANGE : neighbor 172.31.11.0 Up") == {"L3"}
    assert _fired(leaf1, "%SECURITY-SSHD-6-INFO_SUCCESS :") == set()
    others = [_levels(settings, folder / f"{name}.bgpclear_no_traffic.log") for name in ("leaf5", "leaf8")]
    everything = pl.concat([leaf1, *others])
    assert _fired(everything, "%ROUTING-BGP-5-LOWMEM_RESET") >= {"L4"}
    assert _fired(everything, "%PKT_INFRA-LINK-3-UPDOWN") == {"L1", "L3"}
    assert _fired(everything, "%PKT_INFRA-FM-2-FAULT_CRITICAL") >= {"L1", "L2"}
    assert _fired(everything, "%HA-HA_WD-4-MEMORY_ALARM") >= {"L1", "L4"}
    assert _fired(everything, "%SECURITY-SSHD-4-INFO_FAILURE") == {"L1", "L2"}


@pytest.mark.data
def test_levels_on_loghub_lines_parsed_and_unparsed(settings, data_dir, tmp_path):
    hdfs = data_dir / "logs" / "loghub2k" / "HDFS" / "HDFS_2k.log"
    parsed = _levels(settings, hdfs, log_format="loghub_hdfs")
    assert _fired(parsed, "WARN dfs.DataNode$DataXceiver: 10.251.30.85:50010:Got exception") >= {"L1", "L2"}
    assert not any(_fired(parsed, "INFO dfs.DataNode$PacketResponder: PacketResponder 1 for block"))
    # the same lines with no format: L1 still sees the level field in the raw line
    raw = _levels(settings, hdfs, log_format="raw")
    assert raw.get_column("severity").null_count() == raw.height
    assert "L1" in _fired(raw, "WARN dfs.DataNode$DataXceiver")
    bgl = _levels(settings, data_dir / "logs" / "loghub2k" / "BGL" / "BGL_2k.log", log_format="loghub_bgl")
    # an INFO line that reports an error: keyword level only
    assert _fired(bgl, "INFO instruction cache parity error corrected") == {"L2"}
    linux = _levels(settings, data_dir / "logs" / "loghub2k" / "Linux" / "Linux_2k.log", log_format="loghub_linux")
    assert "L2" in _fired(linux, "authentication failure;")


def test_levels_on_written_frr_syslog_and_nginx_logs(settings, tmp_path):
    frr = _levels(settings, _write(tmp_path, "frr.log", [
        "2024/05/01 10:00:00.123 BGP: [M7Q4P-46WDR] %ADJCHANGE: neighbor 192.0.2.2(Unknown) in vrf default Down "
        "Peer closed the session",
        "2024/05/01 10:00:01.001 BGP: [EC 100663299] bgp_process_packet: BGP OPEN receipt failed for peer: 192.0.2.9",
        "2024/05/01 10:00:02.500 OSPF: [HZKP0-4XQTC] Adjacency change: Nbr 10.0.0.2 on eth1: Full -> Deleted "
        "(InactivityTimer)",
        "2024/05/01 10:00:03.000 ZEBRA: [NSDJ4-DP2D6] client 33 says hello and announces connected routes",
    ]))
    assert _fired(frr, "%ADJCHANGE") == {"L3"}
    assert _fired(frr, "[EC 100663299]") == {"L1", "L2"}
    assert _fired(frr, "Adjacency change") == {"L3"}
    assert _fired(frr, "says hello") == set()
    syslog = _levels(settings, _write(tmp_path, "web.log", [
        "Jan 12 10:00:01 web01 kernel: [12345.678] Out of memory: Killed process 1234 (java) total-vm:1234kB",
        "Jan 12 10:00:02 web01 systemd[1]: nginx.service: Main process exited, code=killed, status=9/KILL",
        "Jan 12 10:00:03 web01 CRON[99]: (root) CMD (run-parts /etc/cron.hourly)",
        "Jan 12 10:00:04 web02 kernel: [   88.100] e1000e 0000:00:19.0 eth0: NIC Link is Down",
        "<11>Jan 12 10:00:06 web02 app[7]: payment batch 42 finished",
        "Jan 12 10:00:07 web02 app[7]: java.lang.IllegalStateException: pool closed",
        "Jan 12 10:00:08 web02 app[7]:     at com.example.pool.Pool.take(Pool.java:88)",
    ]), terms=["web02", "payment"])
    assert _fired(syslog, "Out of memory") == {"L2", "L4"}
    assert _fired(syslog, "Main process exited") == {"L2", "L3"}
    assert _fired(syslog, "CMD (run-parts") == set()
    assert _fired(syslog, "NIC Link is Down") == {"L3"}  # naming the host web02 is no L5 keyword
    assert _fired(syslog, "payment batch 42") == {"L1", "L5"}  # PRI 11 = severity error
    assert "L2" in _fired(syslog, "IllegalStateException")
    assert "L4" in _fired(syslog, "at com.example.pool.Pool.take")
    nginx = _levels(settings, _write(tmp_path, "error.log", [
        "2024/05/01 10:00:00 [error] 1234#0: *5 connect() failed (111: Connection refused) while connecting to "
        "upstream, server: web99.local",
        "2024/05/01 10:00:01 [notice] 1234#0: signal process started",
        "2024/05/01 10:00:02 [warn] 1234#0: *7 an upstream response is buffered to a temporary file",
    ]), terms=["web99.local"])
    assert _fired(nginx, "connect() failed") == {"L1", "L2", "L5"}
    assert _fired(nginx, "signal process started") == set()
    assert _fired(nginx, "buffered to a temporary file") == {"L1"}


@pytest.mark.data
def test_l5_matches_message_words_and_components_and_a_named_device_ranks_higher(settings, data_dir):
    from faultline.logs.filter import named_stream_expr, ticket_hit_counts

    folder = data_dir.joinpath(*IOSXR)
    lines = lines_from_files([folder / "leaf1.bgpclear.log", folder / "leaf2.bgpclear.log"], settings)
    levelled = apply_levels(lines, default_vocab(), ["leaf1", "authenticated", "bgp"])
    l5 = levelled.filter("l5")
    assert set(l5.get_column("component").unique()) == {"bgp", "SSHD_"}
    assert l5.filter(pl.col("component") == "SSHD_").get_column("message").str.contains("authenticated").all()
    # leaf1 is only in the file name: no L5 on its other lines, but they are the named device's
    sshd_logout = levelled.filter(pl.col("message").str.contains("INFO_USER_LOGOUT"))
    assert not sshd_logout.get_column("l5").any()
    named = lines.select(named_stream_expr(lines, ["leaf1"])).to_series()
    assert named.sum() == lines.filter(pl.col("source_file").str.ends_with("leaf1.bgpclear.log")).height
    hits = ticket_hit_counts(levelled, ["leaf1", "bgp"])
    on_leaf1 = levelled.with_columns(hits).filter(pl.col("component") == "bgp")
    by_file = on_leaf1.group_by(pl.col("source_file").str.contains("leaf1")).agg(pl.col("ticket_hits").min())
    # bgp in the message and as the component, plus leaf1 in the file name
    assert dict(by_file.iter_rows()) == {True: 3, False: 2}


def test_ticket_terms_keep_devices_addresses_interfaces_and_drop_generic_words():
    terms = ticket_terms(
        "User cannot reach web99.local since 10:20, please help: BGP down on leaf2 via Gi0/1 and 10.0.0.1",
        ["Similar: r1 HundredGigE0/0/0/35 flapping after clear, problem since 2017-08-04"], default_vocab())
    for kept in ("web99.local", "web99", "bgp", "leaf2", "gi0/1", "10.0.0.1", "r1", "hundredgige0/0/0/35", "flapping"):
        assert kept in terms
    for dropped in ("user", "cannot", "since", "please", "help", "problem", "10:20", "2017-08-04", "on", "via"):
        assert dropped not in terms
    # a term with regex metacharacters is matched literally
    frame = pl.DataFrame({"source_file": ["f.log"], "line_no": [1], "message": ["web99xlocal down"],
                          "raw": ["web99xlocal down"]}).with_columns(
        pl.lit(None, dtype=pl.Datetime("us")).alias("ts"),
        *(pl.lit(None, dtype=pl.Utf8).alias(c) for c in ("host", "severity", "severity_raw", "component", "pid")))
    assert not apply_levels(frame, default_vocab(), ["web99.local"]).get_column("l5").item()


def test_vocab_files_are_versioned_and_hashed(tmp_path):
    vocab = default_vocab()
    assert all(level.version >= 1 and level.description for level in vocab.levels.values())
    assert vocab.digest in vocab.label or vocab.digest[:12] in vocab.label
    levels = tmp_path / "levels.yml"
    levels.write_text((Path(__file__).parents[1] / "faultline/logs/vocab/levels.yml").read_text() + "\n# edited\n")
    edited = load_vocab(levels_path=levels)
    assert edited.digest != vocab.digest and edited.version == vocab.version


# ----------------------------------------------------------------------------- suppression

def _chatty_log(tmp_path: Path, *, with_error: bool) -> Path:
    lines = []
    start = datetime(2024, 1, 12, 10, 0, 0)
    for i in range(60):
        ts = (start + timedelta(seconds=i)).strftime("%b %d %H:%M:%S")
        lines.append(f"{ts} sw1 lldpd[55]: neighbor 10.0.{i % 7}.{i} on eth{i % 4} up")
        if i % 6 == 0:
            lines.append(f"{ts} sw1 kernel: eth{i % 4}: NIC Link is Down")
            lines.append(f"{ts} sw1 app[7]: request {i} failed with timeout")
        lines.append(f"{ts} sw1 CRON[9]: (root) CMD (job {i})")
    if with_error:
        lines.append("Jan 12 10:01:01 sw1 lldpd[55]: error: cannot send LLDP frame on eth1")
    return _write(tmp_path, "sw1.log", lines)


def _small_cap(settings):
    """A 100-line cap: components need more than 25 diagnostic lines to count as high-volume."""
    return settings.model_copy(update={"excerpt_max_lines": 100})


def test_a_chatty_component_without_errors_becomes_one_annotation(settings, tmp_path):
    excerpt = _excerpt(_small_cap(settings), [_chatty_log(tmp_path, with_error=False)])
    notes = [line for line in excerpt.lines if line.annotation == "suppressed"]
    assert len(notes) == 1 and [c.component for c in excerpt.suppressed] == ["lldpd"]
    assert "lldpd" in notes[0].text and "60 diagnostic lines" in notes[0].text
    assert excerpt.suppressed[0].top_template  # the annotation names the component's template
    # none of its lines comes back, not even as context of the kernel and app lines around them
    assert not [line for line in excerpt.lines if line.component == "lldpd" and not line.annotation]
    assert any(line.component == "kernel" for line in excerpt.lines)
    assert any(line.is_context and line.component == "CRON" for line in excerpt.lines)


def test_a_chatty_component_with_an_error_or_named_by_the_ticket_is_kept(settings, tmp_path):
    with_error = _excerpt(_small_cap(settings), [_chatty_log(tmp_path, with_error=True)])
    assert not with_error.suppressed
    assert sum(line.component == "lldpd" and not line.collapsed_count for line in with_error.lines) >= 1
    named = _excerpt(_small_cap(settings), [_chatty_log(tmp_path, with_error=False)], ticket_text="lldpd flooding")
    assert not named.suppressed


def test_a_component_over_the_share_but_low_in_volume_is_not_noise(settings, tmp_path):
    # 60 of 80 diagnostic lines, but far fewer than a quarter of the default 2,000-line cap
    excerpt = _excerpt(settings, [_chatty_log(tmp_path, with_error=False)])
    assert not excerpt.suppressed
    assert sum(line.component == "lldpd" for line in excerpt.lines) == 60


def test_chatter_on_the_device_the_ticket_names_is_never_suppressed(settings, tmp_path):
    sw1 = _chatty_log(tmp_path, with_error=False)
    sw2 = tmp_path / "sw2.log"
    sw2.write_text(sw1.read_text().replace(" sw1 ", " sw2 "))
    excerpt = _excerpt(_small_cap(settings), [sw1, sw2], ticket_text="sw1 slow")
    assert [(c.component, c.lines, c.files) for c in excerpt.suppressed] == [("lldpd", 60, 1)]
    lldpd = [line for line in excerpt.lines if line.component == "lldpd" and not line.annotation]
    assert lldpd and {Path(line.source_file).name for line in lldpd} == {"sw1.log"}


# ----------------------------------------------------------------------------- context

def test_two_hits_three_lines_apart_make_one_merged_window(settings, tmp_path):
    lines = [f"Jan 12 10:00:{i:02d} r1 CRON[9]: (root) CMD (job {i})" for i in range(1, 31)]
    lines[9] = "Jan 12 10:00:10 r1 kernel: eth0: NIC Link is Down"
    lines[12] = "Jan 12 10:00:13 r1 kernel: eth0: NIC Link is Up"
    excerpt = _excerpt(settings, [_write(tmp_path, "r1.log", lines)])
    assert [line.line_no for line in excerpt.lines] == list(range(5, 19))
    assert [line.line_no for line in excerpt.lines if not line.is_context] == [10, 13]
    assert all(line.levels == () for line in excerpt.lines if line.is_context)
    assert excerpt.level_counts["context"] == 12


def test_hits_in_different_files_or_hosts_never_share_context(settings, tmp_path):
    quiet = [f"Jan 12 10:00:{i:02d} r1 CRON[9]: (root) CMD (job {i})" for i in range(1, 11)]
    a = _write(tmp_path, "a.log", [*quiet[:9], "Jan 12 10:00:10 r1 kernel: eth0: NIC Link is Down"])
    b = _write(tmp_path, "b.log", ["Jan 12 10:00:00 r1 kernel: eth1: NIC Link is Down", *quiet[1:]])
    excerpt = _excerpt(settings, [a, b])
    picked = {(Path(line.source_file).name, line.line_no) for line in excerpt.lines}
    assert picked == {("a.log", n) for n in range(5, 11)} | {("b.log", n) for n in range(1, 7)}
    # one file, two hosts interleaved: web01's hit takes context from web01 lines only
    mixed = [f"Jan 12 10:00:{i:02d} web0{1 + i % 2} CRON[9]: (root) CMD (job {i})" for i in range(1, 31)]
    mixed[14] = "Jan 12 10:00:15 web01 kernel: eth0: NIC Link is Down"
    excerpt = _excerpt(settings, [_write(tmp_path, "collector.log", mixed)])
    assert {line.host for line in excerpt.lines} == {"web01"}
    assert len(excerpt.lines) == 11


# ----------------------------------------------------------------------------- cap and collapse

def test_the_cap_is_never_exceeded_and_truncation_is_flagged(settings, tmp_path):
    lines = [f"<11>Jan 12 10:{i // 60 % 60:02d}:{i % 60:02d} db1 disk[3]: sector {i} unreadable on sd{chr(97 + i % 26)}"
             for i in range(3000)]
    capped = settings.model_copy(update={"excerpt_max_lines": 100})
    excerpt = _excerpt(capped, [_write(tmp_path, "db1.log", lines)])
    assert len(excerpt.lines) == 100 and excerpt.truncated
    assert excerpt.lines[0].annotation == "truncated" and excerpt.truncated_lines == 3000 - 99
    # the earliest errors survive a cut
    assert [line.line_no for line in excerpt.lines[1:4]] == [1, 2, 3]


def test_collapse_folds_masked_info_lines_and_keeps_every_distinct_error_and_warning(settings, tmp_path):
    lines = []
    for i in range(1500):
        lines.append(f"Jan 12 10:{i // 60 % 60:02d}:{i % 60:02d} ctl1 ha[4]: "
                     f"peer 10.1.{i % 250}.{i % 200} state changed to active seq {i}")
    for i in range(300):
        lines.append(f"<12>Jan 12 11:{i // 60:02d}:{i % 60:02d} ctl1 ha[4]: queue depth {i} above soft limit")
    for i in range(200):
        lines.append(f"<11>Jan 12 12:{i // 60:02d}:{i % 60:02d} ctl1 ha[4]: sync to standby lost, code {i % 40}")
    capped = settings.model_copy(update={"excerpt_max_lines": 400})
    excerpt = _excerpt(capped, [_write(tmp_path, "ctl1.log", lines)])
    assert len(excerpt.lines) <= 400 and not excerpt.truncated
    shown = {line.text.split("ha[4]: ", 1)[1] for line in excerpt.lines}
    assert {f"queue depth {i} above soft limit" for i in range(300)} <= shown
    assert {f"sync to standby lost, code {c}" for c in range(40)} <= shown
    folded = [line for line in excerpt.lines if line.collapsed_count]
    info = [line for line in folded if line.severity is None]
    assert len(info) == 1 and info[0].collapsed_count == 1500 and info[0].template_id is not None
    errors = [line for line in folded if line.severity == "error"]
    assert all(line.collapsed_count == 5 for line in errors)
    # repeats fold only as far as needed: 501 lines after the info fold, 101 over the cap
    assert excerpt.collapsed_lines == 1499 + 4 * len(errors) and 4 * len(errors) >= 101


@pytest.mark.data
def test_iosxr_event_keeps_its_adjacency_changes_when_the_ticket_names_the_device(settings, data_dir):
    folder = data_dir.joinpath(*IOSXR)
    lines = lines_from_files(sorted(folder.glob("*.bgpclear_no_traffic.log")), settings)
    assert lines.height > settings.excerpt_max_lines
    excerpt = build_excerpt(lines, settings=settings, ticket_text="BGP sessions dropped on leaf1 around 20:20",
                            incident_id="bgpclear_no_traffic-01")
    assert len(excerpt.lines) <= settings.excerpt_max_lines and excerpt.collapsed_lines > 0
    event = lines.filter(
        pl.col("source_file").str.ends_with("leaf1.bgpclear_no_traffic.log")
        & pl.col("ts").is_between(datetime(2017, 9, 19, 20, 19), datetime(2017, 9, 19, 20, 22))
        & pl.col("message").str.contains("ADJCHANGE"))
    assert event.height >= 20
    shown = {(line.source_file, line.line_no) for line in excerpt.lines if not line.annotation}
    missing = [n for f, n in event.select("source_file", "line_no").iter_rows() if (f, n) not in shown]
    assert missing == []


# ----------------------------------------------------------------------------- warehouse and CLI

@pytest.mark.data
def test_warehouse_rows_and_parsed_files_give_the_same_excerpt(conn, settings, data_dir):
    from faultline.ingest.api import ingest_paths

    folder = data_dir.joinpath(*IOSXR)
    files = sorted(folder.glob("*.bgpclear.log"))
    ingest_paths(conn, settings, "logs", files, incident_id="inc-bgp")
    stored = lines_for_incident(conn, "inc-bgp")
    parsed = lines_from_files(files, settings)
    assert stored.height == parsed.height
    ticket = "BGP sessions dropped on leaf1 around 10:20"
    a = build_excerpt(stored, settings=settings, ticket_text=ticket, incident_id="inc-bgp")
    b = build_excerpt(parsed, settings=settings, ticket_text=ticket, incident_id="inc-bgp")
    key = [(x.source_file, x.line_no, x.levels, x.is_context, x.template_id, x.collapsed_count) for x in a.lines]
    assert key == [(x.source_file, x.line_no, x.levels, x.is_context, x.template_id, x.collapsed_count)
                   for x in b.lines]


def test_write_excerpt_round_trip_replaces_the_same_incident_and_round(conn, settings, tmp_path):
    excerpt = _excerpt(_small_cap(settings), [_chatty_log(tmp_path, with_error=False)],
                       ticket_text="timeout in the app", incident_id="inc-7")
    write_excerpt(conn, excerpt)
    write_excerpt(conn, excerpt)
    assert read_excerpt(conn, "inc-7") == excerpt
    row = conn.execute("SELECT count(*), any_value(excerpt_lines), any_value(ticket_terms), "
                       "any_value(suppressed), any_value(level_counts) FROM log_excerpts").fetchone()
    assert row[0] == 1 and row[1] == len(excerpt.lines) and row[2] == ["timeout", "app"]
    assert [c["component"] for c in json.loads(row[3])] == ["lldpd"]
    assert json.loads(row[4])["L2"] == excerpt.level_counts["L2"]
    assert read_excerpt(conn, "inc-7", 1) is None


def test_cli_prints_and_stores_the_excerpt(run_cli, settings, tmp_path, capsys):
    from faultline import db

    log = _chatty_log(tmp_path, with_error=True)
    run_cli("logs", "excerpt", "--log", str(log), "--ticket", "LLDP errors on sw1", "--similar", "eth1 flapping",
            "--incident", "inc-cli", "--json")
    printed = json.loads(capsys.readouterr().out)
    assert (printed["incident_id"] == "inc-cli"
            and printed["ticket_terms"] == ["lldp", "errors", "sw1", "eth1", "flapping"])
    run_cli("logs", "excerpt", "--log", str(log))
    text = capsys.readouterr().out
    assert text.startswith("# log excerpt: incident ") and "== sw1.log" in text
    with db.connect(settings.duckdb_path) as conn:
        rows = conn.execute("SELECT incident_id, excerpt_lines FROM log_excerpts ORDER BY incident_id").fetchall()
        templates = conn.execute("SELECT count(*) FROM log_templates WHERE incident_id = 'inc-cli'").fetchone()[0]
    assert len(rows) == 2 and rows[1] == ("inc-cli", len(printed["lines"])) and templates > 0


def test_cli_reports_a_missing_log_file_without_a_traceback(run_cli, tmp_path, capsys):
    run_cli("logs", "excerpt", "--log", str(tmp_path / "nope.log"), expect_exit=2)
    assert "does not exist" in capsys.readouterr().err
