"""The verdict: one answer per incident from every source, weighed by the written rule table, with citations.

The rule table is exercised on hand-made opinions; the whole verdict on sample incidents analysed for real
(ASTRA on the sample corpus, SADE on its recorded snapshots) in a real DuckDB warehouse.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from faultline.verdict.records import Opinion
from faultline.verdict.rules import decide

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "data" / "sample"
BACKLOG = ["sample-backlog-001", "sample-backlog-047"]  # arp_acl_block on host_2_1_1_2; a healthy control
HISTORY = ["sample-history-001", "sample-history-003", "sample-history-005", "sample-history-010"]


def test_the_network_outranks_the_logs_and_the_report_names_the_loser():
    decision = decide([
        Opinion(source="network", labels=["arp_acl_block"], devices=["h1"], strength="strong"),
        Opinion(source="logs", labels=["dhcp_missing_subnet"], devices=["dhcp"], strength="weak"),
        Opinion(source="history", labels=["arp_acl_block"], strength="weak")])
    assert decision.rule.id == "network_fault" and decision.labels == ["arp_acl_block"]
    assert decision.devices == ["h1"]
    assert decision.agreeing == ["network", "history"] and decision.disagreeing == ["logs"]
    assert decision.confidence == pytest.approx(0.85 + 0.04 - 0.1)


def test_a_clean_network_is_healthy_even_when_the_logs_name_a_fault():
    decision = decide([Opinion(source="network", healthy=True, strength="strong"),
                       Opinion(source="logs", labels=["link_flap"], strength="strong")])
    assert decision.rule.id == "network_healthy" and decision.labels == []
    assert decision.disagreeing == ["logs"]


def test_without_a_network_the_logs_decide_and_with_nothing_the_verdict_says_it_does_not_know():
    logs = decide([Opinion(source="logs", labels=["bgp_acl_block"], devices=["r1"], strength="strong"),
                   Opinion(source="docs", labels=["bgp_asn_misconfig"], strength="weak")])
    assert logs.rule.id == "logs_fault" and logs.devices == ["r1"]
    assert logs.agreeing == ["logs", "docs"]  # same family (bgp): a share of an agreement
    assert logs.confidence == pytest.approx(0.6 + 0.02 * 0.5)
    nothing = decide([Opinion(source="logs", note="the lines in scope name no label")])
    assert nothing.rule.id == "undetermined" and nothing.confidence == 0.0 and nothing.labels == []


def test_a_rule_table_naming_an_unknown_condition_is_refused(tmp_path, monkeypatch):
    from faultline.verdict import rules

    bad = tmp_path / "rules.yml"
    bad.write_text(rules.RULES_FILE.read_text().replace("when: logs_fault ", "when: logs_say_so "))
    monkeypatch.setattr(rules, "RULES_FILE", bad)
    rules.table.cache_clear()
    try:
        with pytest.raises(ValueError, match="logs_say_so"):
            rules.table()
    finally:
        rules.table.cache_clear()


def _link(source: Path, target: Path) -> None:
    target.mkdir(parents=True)  # a real folder of links: incident discovery does not follow a linked folder
    for entry in source.iterdir():
        entry_link = target / entry.name
        entry_link.symlink_to(entry, target_is_directory=entry.is_dir())


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    """Two sample incidents analysed by ASTRA and SADE, plus an imported ticket with no network, and their verdicts."""
    from faultline import db
    from faultline.astra.batch import evaluate_incidents, load_corpus
    from faultline.astra.unit import run_astra
    from faultline.config import Settings
    from faultline.outcome import incident_ref
    from faultline.sade.unit import run_sade

    base = tmp_path_factory.mktemp("verdict")
    corpus = base / "corpus"
    for name in HISTORY:
        _link(SAMPLE / "history" / name, corpus / "history" / name)
    for name in BACKLOG:
        _link(SAMPLE / "backlog" / name, corpus / "backlog" / name)
    for suite in ("history", "backlog"):  # the collector's archive and the inventories belong to the suite
        for shared in ("archive", "inventory"):
            (corpus / suite / shared).symlink_to(SAMPLE / suite / shared)
    (corpus / "docs").symlink_to(SAMPLE / "docs")
    settings = Settings(duckdb_path=base / "fl.duckdb", lancedb_dir=base / "lancedb", progress=False)
    conn = db.connect(settings.duckdb_path)
    ids = load_corpus(conn, settings, corpus)
    conn.execute("INSERT INTO tickets (ticket_id, source, title, description, status, content_hash, source_file, "
                 "source_record, first_ingested_at, ingested_at, created_at) VALUES ('OPS-1', 'jira', "
                 "'Users on host_2_1_1_2 cannot reach anything', 'Since 00:01 nothing answers.', 'Open', 'h1', "
                 "'x.jsonl', 1, now(), now(), now())")
    evaluate_incidents(conn, settings, sorted(ids), max_rounds=1)
    run_astra(settings, conn, "OPS-1", max_rounds=1)
    for incident_id in ids:
        run_sade(settings, incident_ref(conn, incident_id), conn=conn, run_id="test")
    yield conn, settings
    conn.close()


def _verdict(warehouse, incident_id):
    """The incident's verdict fused from the stored analyses (without asking its network again), stored."""
    from faultline.outcome import IncidentRef
    from faultline.verdict.unit import run_verdict

    conn, settings = warehouse
    return run_verdict(settings, conn, IncidentRef(incident_id=incident_id, ticket_id=incident_id),
                       network_backend=None).verdict


def test_a_verdict_names_the_fault_and_cites_the_probe_output_it_rests_on(warehouse):
    conn, _ = warehouse
    v = _verdict(warehouse, "sample-backlog-001")
    assert v.status == "fault" and v.labels == ["arp_acl_block"] and v.devices == ["host_2_1_1_2"]
    assert v.rule == "network_fault" and v.confidence >= 0.8
    probes = [c for c in v.claims if c.citation.source == "network" and c.section == "evidence"]
    assert probes and probes[0].status == "VERIFIED" and probes[0].citation.device == "host_2_1_1_2"
    assert "nft_ruleset" in probes[0].citation.ref and "drop" in probes[0].quote  # the probe and its output line
    digest = probes[0].citation.ref.rsplit("output ", 1)[1]
    assert conn.execute("SELECT count(*) FROM sade_steps WHERE incident_id = ? AND output_digest = ?",
                        ["sample-backlog-001", digest]).fetchone()[0] == 1  # a reader can find the recorded output
    stored = conn.execute("SELECT labels, rule, report_text FROM verdicts WHERE incident_id = 'sample-backlog-001'"
                          ).fetchone()
    assert stored[0] == ["arp_acl_block"] and stored[1] == "network_fault" and "arp fl_f1" in stored[2]
    assert conn.execute("SELECT count(*) FROM verdict_claims WHERE incident_id = 'sample-backlog-001'"
                        ).fetchone()[0] == len(v.claims)


def test_the_fix_comes_from_a_resolved_ticket_about_the_same_fault_and_names_the_device(warehouse):
    v = _verdict(warehouse, "sample-backlog-001")
    assert v.fix_known and v.fix.startswith("On host_2_1_1_2:") and "ARP filter table" in v.fix
    precedents = [c for c in v.claims if c.citation.source == "history"]
    assert precedents and {c.status for c in precedents} == {"REFERENCE"}
    assert "NET-6605121" in v.fix  # sample-history-001: an ARP filter table, resolved before this incident
    assert all(c.status == "REFERENCE" for c in v.claims if c.citation.source in ("history", "docs"))
    assert all(c.status == "VERIFIED" for c in v.claims if c.citation.source in ("ticket", "network", "logs"))


def test_with_no_precedent_the_fix_says_none_is_known_instead_of_borrowing_one(warehouse, monkeypatch):
    from faultline.verdict import engine

    monkeypatch.setattr(engine, "precedents", lambda *a, **k: [])
    monkeypatch.setattr(engine, "doc_sections", lambda *a, **k: [])
    v = _verdict(warehouse, "sample-backlog-001")
    assert not v.fix_known and v.fix.startswith("No fix is known yet for arp_acl_block on host_2_1_1_2")
    assert "NET-" not in v.fix


def test_a_healthy_control_is_answered_healthy_from_the_clean_network(warehouse):
    v = _verdict(warehouse, "sample-backlog-047")
    assert v.status == "healthy" and v.labels == [] and v.category == "no_fault"
    assert any(c.citation.source == "network" and "no scan found a fault" in c.text for c in v.claims)


def test_an_imported_ticket_gets_a_verdict_on_astras_sources_alone_that_says_so(warehouse):
    v = _verdict(warehouse, "OPS-1")
    assert v.without_network and "imported ticket" in v.without_network
    assert "Without a network" in v.text
    assert not any(c.citation.source == "network" for c in v.claims)
    assert v.rule in ("logs_fault", "history_fault", "docs_fault", "undetermined")


def test_verdicts_are_scored_like_astra_and_sade_and_fabricate_nothing(warehouse):
    from faultline.truth.store import load_truth
    from faultline.verdict.evaluate import save_scores, score_verdict
    from faultline.verdict.sources import load_inputs

    conn, _ = warehouse
    scores = []
    for incident_id in BACKLOG:
        v = _verdict(warehouse, incident_id)
        scores.append(score_verdict(v, load_inputs(conn, incident_id), load_truth(conn, incident_id)))
    fault, healthy = scores
    assert fault.accuracy == 5 and fault.nika["rca_f1"] == 1.0 and healthy.accuracy == 5
    assert fault.fabricated == [] and healthy.fabricated == []
    save_scores(conn, scores, run_id=None)
    rows = dict(conn.execute("SELECT metric, value FROM evaluations WHERE method = 'verdict' "
                             "AND incident_id = 'sample-backlog-001'").fetchall())
    assert rows["accuracy"] == 5 and rows["rca_f1"] == 1.0 and rows["fix_known"] == 1.0


def test_the_cli_prints_the_stored_verdict_and_refuses_an_unknown_incident(warehouse, capsys):
    """Last in this module: it hands the warehouse file over to the CLI."""
    import json

    from faultline.cli.main import main

    conn, settings = warehouse
    _verdict(warehouse, "sample-backlog-001")
    conn.close()  # the CLI opens the warehouse itself (the fixture's second close is harmless)
    argv = ["--db", str(settings.duckdb_path), "--lancedb", str(settings.lancedb_dir), "verdict"]
    main([*argv, "sample-backlog-001"])
    assert capsys.readouterr().out.startswith("# Verdict: sample-backlog-001: arp_acl_block on host_2_1_1_2")
    main([*argv, "sample-backlog-001", "--json"])
    assert json.loads(capsys.readouterr().out)["rule"] == "network_fault"
    with pytest.raises(SystemExit) as failed:
        main([*argv, "no-such-incident"])
    assert failed.value.code != 0
    assert "no-such-incident" in capsys.readouterr().err
