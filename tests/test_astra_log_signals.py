"""The log agent's signals on recorded sample incidents: history discount, volume floods, daemon exits.

Every incident here is a real recorded lab incident ingested into a real warehouse; the ground truth
is never read. Twelve history incidents (resolved a month before the backlog) give the discount
enough history.
"""

from __future__ import annotations

import re

import pytest

from tests.conftest import REPO

SAMPLE = REPO / "data" / "sample"
HISTORY = [f"history/sample-history-{n:03d}" for n in range(1, 13)]
BACKLOG = ["backlog/sample-backlog-004", "backlog/sample-backlog-009", "backlog/sample-backlog-010",
           "backlog/sample-backlog-015", "backlog/sample-backlog-042"]


@pytest.fixture(scope="module")
def conn(tmp_path_factory):
    from faultline import db
    from faultline.astra.log_signals import clear_cache
    from faultline.config import Settings
    from faultline.ingest.incidents import ingest_incidents

    base = tmp_path_factory.mktemp("signals")
    settings = Settings(duckdb_path=base / "fl.duckdb", lancedb_dir=base / "lancedb", progress=False,
                        log_default_year=2026)
    connection = db.connect(settings.duckdb_path)
    report = ingest_incidents(connection, settings, [SAMPLE / p for p in HISTORY + BACKLOG])
    assert not report.failed
    clear_cache()
    _SETTINGS.append(settings)
    yield connection
    connection.close()


_SETTINGS: list = []  # the module warehouse's settings (a DuckDB connection takes no attributes)


def _score(conn, incident_id, opened_at=None):
    from faultline.astra.incident import load_incident
    from faultline.astra.log_signals import analysis_scope, label_scores

    incident = load_incident(conn.cursor(), incident_id)
    scope = analysis_scope(conn.cursor(), _SETTINGS[-1], incident)
    if opened_at:  # the history it may use moves; the lines it reads stay its own (which now come after the
        # opening: the ticket says the problem goes on, or they would be listed as later and weigh nothing)
        incident = incident.model_copy(update={"opened_at": opened_at,
                                               "description": f"{incident.description} It is still happening."})
    return label_scores(conn.cursor(), _SETTINGS[-1], incident, scope)


def test_signals_common_in_the_history_are_discounted_and_rare_ones_keep_their_weight(conn):
    scores, hits = _score(conn, "sample-backlog-004")
    by_signal = {h.key: h for h in hits}
    bad_peer = next(h for k, h in by_signal.items() if "Bad Peer AS" in k)
    assert bad_peer.df == 0.0 and bad_peer.weight == pytest.approx(1.0)
    keepalive = next(h for k, h in by_signal.items() if "keepalive" in k)
    assert keepalive.df >= 0.2 and keepalive.weight < 0.2  # every nginx in the history writes it
    assert max(scores, key=scores.get) == "bgp_asn_misconfig"


def test_without_enough_history_the_written_weights_apply(conn):
    _, hits = _score(conn, "sample-backlog-004", opened_at="2026-10-01T00:00:00+00:00")  # before any history
    keepalive = next(h for h in hits if "keepalive" in h.key)
    assert keepalive.df is None and keepalive.weight == pytest.approx(0.3)


def test_a_request_flood_on_one_web_server_is_a_volume_signal(conn):
    from faultline.astra.labels import best_label

    scores, hits = _score(conn, "sample-backlog-042")
    flood = next(h for h in hits if ":volume:" in h.key)
    assert flood.label == "web_dos_attack" and flood.lines[0].device == "web_server_0"
    count = int(re.search(r"access.log has (\d+) lines", flood.note).group(1))
    assert count >= 300 and "from 10.1.1.10" in flood.note  # the flood's client, read from each access line
    assert best_label(scores) == "web_dos_attack"


@pytest.mark.parametrize("incident_id, expected, device", [
    ("sample-backlog-009", "dhcp_service_down", "dhcp_server"),  # dnsmasq-dhcp exits for good
    ("sample-backlog-015", "dns_service_down", "dns_server"),  # the resolver's dnsmasq exits for good
    ("sample-backlog-010", "dhcp_spoofed_dns", "dhcp_server"),  # restarted with a foreign resolver: not an outage
])
def test_a_daemon_exit_counts_by_the_role_of_the_device_and_only_when_it_stays_down(conn, incident_id, expected,
                                                                                       device):
    from faultline.astra.labels import best_label

    scores, hits = _score(conn, incident_id)
    assert best_label(scores) == expected
    strongest = next(h for h in hits if h.label == expected)  # hits come strongest first
    devices = {line.device for line in strongest.lines}
    # a server that exits blames the server alone; a rogue lease is also seen on the clients that took it
    assert devices == {device} if incident_id != "sample-backlog-010" else device in devices
    if incident_id == "sample-backlog-010":
        assert not any(h.label == "dhcp_service_down" and "exiting" in h.key for h in hits)


def test_the_log_agent_quotes_the_lines_behind_its_label(conn, tmp_path):
    from faultline.astra.agents import AgentDeps, make_agent
    from faultline.astra.incident import load_incident
    from faultline.astra.records import AgentTask
    from faultline.config import Settings

    settings = Settings(duckdb_path=tmp_path / "unused.duckdb", lancedb_dir=tmp_path / "l", progress=False)
    incident = load_incident(conn.cursor(), "sample-backlog-042")
    output = make_agent("log", AgentDeps(settings, conn)).run(AgentTask(incident=incident, query=incident.title))
    assert (output.label, output.devices[:1]) == ("web_dos_attack", ["web_server_0"])
    from faultline.scope.resolve import scope_lines
    from faultline.scope.store import read_scope

    scope = read_scope(conn, incident.incident_id, 1, settings.log_timezone)  # what the round read
    raw = {r[0] for r in scope_lines(conn, scope, "l.raw").fetchall()}
    quotes = [q for f in output.findings for q in f.quotes]
    assert quotes and all(q in raw and q.strip() in output.text for q in quotes)
    assert re.search(r"access.log has \d+ lines", output.text)


def test_an_analysis_builds_each_scope_once_however_often_its_rounds_ask(conn, tmp_path, monkeypatch):
    from faultline.astra import log_signals
    from faultline.astra.agents import AgentDeps, make_agent
    from faultline.astra.incident import load_incident
    from faultline.astra.records import AgentTask
    from faultline.config import Settings
    from faultline.scope.store import read_scope

    settings = Settings(duckdb_path=tmp_path / "unused.duckdb", lancedb_dir=tmp_path / "l", progress=False)
    incident = load_incident(conn.cursor(), "sample-backlog-042")
    fresh = {r: log_signals.analysis_scope(conn.cursor(), settings, incident, round=r) for r in (1, 2, 3)}
    built: list[tuple[int, bool]] = []
    real = log_signals.build_scope

    def counted(*args, **kwargs):
        if kwargs["incident_id"] == incident.incident_id:  # not the history's scopes
            built.append((kwargs.get("widen", 0), kwargs.get("fleet", False)))
        return real(*args, **kwargs)

    monkeypatch.setattr(log_signals, "build_scope", counted)
    agent = make_agent("log", AgentDeps(settings, conn))
    asked = [(1, incident.title), (1, "which client floods the web server?"), (2, incident.title),
             (2, "is the load balancer healthy?"), (3, incident.title)]
    labels = {agent.run(AgentTask(incident=incident, query=query, round=r)).label for r, query in asked}
    assert labels == {"web_dos_attack"}
    assert built and len(built) == len(set(built))  # five asks, each scope built once
    for r, scope in fresh.items():  # each round stored and read what a fresh analysis of that round reads
        stored = read_scope(conn, incident.incident_id, r, settings.log_timezone)
        if r == 3:
            assert stored.round == 3
        assert sorted(stored.entries, key=_entry_key) == sorted(scope.entries, key=_entry_key)


def _entry_key(entry) -> tuple[str, str]:
    return entry.device or "", entry.kind
