"""Ticket-guided triage: when the network shows nothing from the probes' positions, what the user wrote leads."""

from __future__ import annotations

import json
from pathlib import Path

from faultline.sade.backend import snapshot_backend
from faultline.sade.engine import diagnose
from faultline.sade.evaluate import ticket_text
from faultline.sade.session import Session
from faultline.sade.ticket import ticket_leads

REPO = Path(__file__).resolve().parents[1]
HISTORY = REPO / "data/sample/history"


def test_what_the_user_saw_leads_where_the_network_shows_nothing() -> None:
    folder = REPO / "data/sample/backlog/sample-backlog-027"  # incast: no failing pair, no failing URL
    truth = json.loads((folder / "ground_truth.json").read_text())["v1"]
    text = ticket_text(folder)
    assert "slow" in text.lower()
    guided = diagnose(snapshot_backend(folder / "snapshot.json.gz"), incident_id=folder.name, ticket=text)
    blind = diagnose(snapshot_backend(folder / "snapshot.json.gz"), incident_id=folder.name)
    for diag in (guided, blind):
        assert diag.submission is not None
        assert diag.submission.v1.root_cause_name == [truth["root_cause_name"]]
        assert sorted(diag.submission.v1.faulty_devices) == sorted(truth["faulty_devices"])
    # the same answer for a fraction of the probes of the bottom-up deep scan
    assert guided.probe_calls * 4 < blind.probe_calls


def test_a_server_side_answer_names_the_users_it_reached() -> None:
    folder = HISTORY / "sample-history-010"  # dhcp_spoofed_dns: reachability and the canary look fine
    truth = json.loads((folder / "ground_truth.json").read_text())["v1"]
    for ticket in (ticket_text(folder), ""):  # found from the ticket or by the pressure sweep
        diag = diagnose(snapshot_backend(folder / "snapshot.json.gz"), incident_id=folder.name, ticket=ticket)
        assert diag.submission is not None and diag.submission.v1.root_cause_name == [truth["root_cause_name"]]
        # the DHCP server and the user whose resolver it changed, seen on that user's own machine
        assert sorted(diag.submission.v1.faulty_devices) == sorted(truth["faulty_devices"])
        assert any(st.note.startswith("users the answer reaches") for st in diag.steps)
        assert diag.probe_calls < 25


def test_the_ticket_is_read_for_what_the_user_saw_never_for_its_resolution(tmp_path: Path) -> None:
    (tmp_path / "ticket.json").write_text(json.dumps({
        "title": "Laptop has no IP address", "description": "Since 9:00 it shows 169.254.3.4.",
        "resolution": "Fixed", "resolution_note": "dhcp_service_down on dhcp_server: restarted dnsmasq"}))
    text = ticket_text(tmp_path)
    assert "no IP address" in text and "dnsmasq" not in text and "dhcp_service_down" not in text
    assert ticket_text(tmp_path / "missing") == ""


def test_the_index_turns_words_into_a_lead_on_a_device_the_ticket_names() -> None:
    folder = HISTORY / "sample-history-010"
    s = Session(snapshot_backend(folder / "snapshot.json.gz"), ticket="host_1_1_1_1 has no IP address since 9:00")
    [lead] = ticket_leads(s)
    assert (lead.kind, lead.lead) == ("ticket_address", "host_1_1_1_1")
    s = Session(snapshot_backend(folder / "snapshot.json.gz"), ticket="nslookup of web0.local: NXDOMAIN")
    [lead] = ticket_leads(s)
    assert (lead.kind, s.device(lead.lead).role) == ("ticket_dns", "dns")  # no user named: the DNS server
    assert ticket_leads(Session(snapshot_backend(folder / "snapshot.json.gz"), ticket="All good, thanks")) == []
    assert ticket_leads(Session(snapshot_backend(folder / "snapshot.json.gz"))) == []
