"""Refinement that can change the verdict: the network is asked again about what the logs point at.

Everything runs on recorded lab snapshots of the sample backlog (no root, no lab) and a real DuckDB warehouse:
sample-backlog-044 has two faults (host_missing_ip on pc_0_0 and bgp_acl_block on leaf_0_1, whose BGP sessions
the other leaf's routes do not need); the network diagnosis names the first (with its routes look off: that look
finds the second itself, tests/test_sade_route_look.py), the routers' logs the second.
sample-backlog-043 (link_down and dns_service_down) is the cross-check's own case. sample-backlog-014's logs
read dns_service_down where the network shows a wrong DNS record.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BACKLOG = REPO / "data" / "sample" / "backlog"


def _backend(incident: str):
    from faultline.network.snapshot_backend import snapshot_backend

    return snapshot_backend(BACKLOG / incident / "snapshot.json.gz")


def test_the_network_confirms_a_fault_the_logs_point_at_with_the_probe_output():
    from faultline.sade.crosscheck import cross_check

    check = cross_check(_backend("sample-backlog-043"), label="dns_service_down", devices=["dns_server"])
    assert check.outcome == "confirmed" and check.matched_devices == ["dns_server"]
    assert {s.args.get("dev") for s in check.steps} == {"dns_server"}  # only the device the logs named
    assert check.probe_calls <= 4
    assert any(f.kind == "daemon_missing" and f.device == "dns_server" for f in check.flags)
    assert "no dnsmasq process on dns_server" in check.reason


def test_a_reading_the_network_does_not_show_is_refuted_and_an_unknown_device_is_not_checked():
    from faultline.sade.crosscheck import cross_check

    refuted = cross_check(_backend("sample-backlog-014"), label="dns_service_down", devices=["dns_server"])
    assert refuted.outcome == "refuted" and refuted.matched_devices == []
    assert "dns_record_wrong on dns_server" in refuted.reason  # what the probes did see is said
    elsewhere = cross_check(_backend("sample-backlog-014"), label="link_down", devices=["router9"])
    assert elsewhere.outcome == "not_checked" and elsewhere.steps == []
    assert "none of the devices named is in this network" in elsewhere.reason
    unknown = cross_check(_backend("sample-backlog-014"), label="no_such_label", devices=["dns_server"])
    assert unknown.outcome == "not_checked" and "no skill" in unknown.reason


@pytest.fixture()
def warehouse(tmp_path):
    from faultline import db
    from faultline.config import Settings

    settings = Settings(duckdb_path=tmp_path / "fl.duckdb", lancedb_dir=tmp_path / "lancedb", progress=False)
    conn = db.connect(settings.duckdb_path)
    yield conn, settings
    conn.close()


def _inputs(conn, incident: str, log_label: str, log_devices: list[str]):
    """The incident's ticket, its network diagnosis (SADE on the snapshot without the routes look, stored) and a
    log agent's reading."""
    from faultline.astra.records import AgentOutput, Incident
    from faultline.sade.engine import diagnose
    from faultline.sade.session import Breadth
    from faultline.sade.store import load_diagnosis, save_diagnosis
    from faultline.verdict.sources import Inputs

    ticket = json.loads((BACKLOG / incident / "ticket.json").read_text())
    save_diagnosis(conn, diagnose(_backend(incident), incident_id=incident, breadth=Breadth(routes="off")),
                   run_id="test")
    log = AgentOutput(agent="log", round=1, query=ticket["title"], text=f"{log_devices[0]} logged it",
                      label=log_label, devices=log_devices, data={"label_scores": {log_label: 1.5}})
    return Inputs(incident=Incident(incident_id=incident, title=ticket["title"], description=ticket["description"],
                                    opened_at=ticket["created_at"]),
                  astra=None, network=load_diagnosis(conn, incident), outputs={"log": log})


def _checker(incident: str):
    from faultline.sade.crosscheck import cross_check

    asked = []

    def check(label, devices):
        asked.append((label, devices))
        return cross_check(_backend(incident), label=label, devices=devices)

    check.asked = asked
    return check


def test_a_second_fault_the_network_confirms_joins_the_verdict_with_its_probe_cited(warehouse):
    from faultline.verdict.refine import refine
    from faultline.verdict.store import load_verdict, save_verdict

    conn, settings = warehouse
    inputs = _inputs(conn, "sample-backlog-044", "bgp_acl_block", ["leaf_0_1"])
    final, first = refine(conn, settings, inputs, _checker("sample-backlog-044"))
    assert first.labels == ["host_missing_ip"] and first.disagreeing == ["logs"]
    assert final.labels == ["host_missing_ip", "bgp_acl_block"]
    assert set(final.devices) == {"pc_0_0", "leaf_0_1"} and "logs" in final.agreeing
    assert [(r.round, r.labels) for r in final.rounds] == [(1, ["host_missing_ip"]),
                                                         (2, ["host_missing_ip", "bgp_acl_block"])]
    (check,) = final.checks
    assert check.outcome == "confirmed" and check.source == "logs" and check.probes
    # the new statement cites the check's own probe step, numbered after the diagnosis's steps
    cited = [c for c in final.claims if c.citation.source == "network" and c.citation.device == "leaf_0_1"]
    assert cited and "179" in cited[0].quote
    first_new = len(inputs.network.steps) + 1
    assert any(f"step {n}:" in cited[0].citation.ref for n in range(first_new, first_new + 5))
    assert "## Follow-ups on the network" in final.text and "confirms it" in final.text
    save_verdict(conn, final, run_id="test")
    assert load_verdict(conn, "sample-backlog-044").checks == final.checks
    row = conn.execute("SELECT label, outcome, matched_devices, first_labels, probe_calls FROM verdict_checks "
                       "WHERE incident_id = 'sample-backlog-044'").fetchall()
    assert row == [("bgp_acl_block", "confirmed", ["leaf_0_1"], ["host_missing_ip"], check.probe_calls)]


def test_a_refuted_reading_leaves_the_answer_and_says_what_the_probes_saw(warehouse):
    from faultline.verdict.refine import refine

    conn, settings = warehouse
    checker = _checker("sample-backlog-014")
    final, first = refine(conn, settings, _inputs(conn, "sample-backlog-014", "dns_service_down", ["dns_server"]),
                          checker)
    assert checker.asked == [("dns_service_down", ["dns_server"])]
    assert final.labels == first.labels == ["dns_record_error"]
    assert final.checks[0].outcome == "refuted" and [r.round for r in final.rounds] == [1, 2]
    assert "shows no sign of it" in final.text and "dns_record_wrong on dns_server" in final.text


def test_nothing_is_asked_when_the_logs_agree_or_there_is_no_way_to_reach_the_network(warehouse):
    from faultline.verdict.refine import refine

    conn, settings = warehouse
    checker = _checker("sample-backlog-014")
    agreeing = _inputs(conn, "sample-backlog-014", "dns_record_error", ["dns_server"])
    final, _first = refine(conn, settings, agreeing, checker)
    assert checker.asked == [] and final.checks == [] and [r.round for r in final.rounds] == [1]
    alone, _ = refine(conn, settings, _inputs(conn, "sample-backlog-044", "bgp_acl_block", ["leaf_0_1"]), None)
    assert alone.labels == ["host_missing_ip"] and alone.checks == []


def test_a_network_that_cannot_be_asked_leaves_round_one_standing_with_the_reason(warehouse):
    from faultline.errors import FaultlineError
    from faultline.verdict.refine import refine

    conn, settings = warehouse

    def gone(label, devices):
        raise FaultlineError("the lab is not running", fix="faultline lab up")

    final, first = refine(conn, settings, _inputs(conn, "sample-backlog-044", "bgp_acl_block", ["leaf_0_1"]),
                          gone)
    assert final.labels == first.labels == ["host_missing_ip"]
    assert final.checks[0].outcome == "not_checked" and "the lab is not running" in final.checks[0].reason
    assert "could not be checked" in final.text
