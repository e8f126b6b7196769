"""Ticket-guided triage: when the network shows nothing from the probes' positions, what the user wrote leads."""

from __future__ import annotations

import json
from pathlib import Path

from faultline.network.snapshot_backend import snapshot_backend
from faultline.sade.engine import diagnose
from faultline.sade.evaluate import ticket_text
from faultline.sade.session import Session
from faultline.sade.ticket import ticket_leads

REPO = Path(__file__).resolve().parents[1]
HISTORY = REPO / "data/sample/history"


def test_what_the_user_saw_leads_where_the_network_shows_nothing() -> None:
    # incast: no failing pair, no failing URL; without a baseline its slow pairs are not slow enough to be a
    # symptom (with one they are: over 100x their healthy round trip, and SADE starts there)
    folder = REPO / "data/sample/backlog/sample-backlog-027"
    truth = json.loads((folder / "ground_truth.json").read_text())["v1"]
    text = ticket_text(folder)
    assert "slow" in text.lower()
    network = snapshot_backend(folder / "snapshot.json.gz", use_baseline=False)
    guided = diagnose(network, incident_id=folder.name, ticket=text)
    blind = diagnose(network, incident_id=folder.name)
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
        user = next(d for d in truth["faulty_devices"] if d != "dhcp_server")
        assert any(st.tool == "read_file" and st.args.get("dev") == user and st.args["path"].endswith("resolv.conf")
                   for st in diag.steps)
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


def test_a_resolver_outside_the_network_in_the_users_output_sends_the_look_to_the_users_resolvers() -> None:
    folder = HISTORY / "sample-history-010"  # the user's dig output: "communications error to 8.8.8.8#53"
    text = ticket_text(folder)
    assert "8.8.8.8#53" in text
    s = Session(snapshot_backend(folder / "snapshot.json.gz"), ticket=text)
    leads = ticket_leads(s)
    # the ticket does not say which machine: every user position (one per subnet) is a suspect
    assert {lead.kind for lead in leads} == {"ticket_foreign_resolver"} and len(leads) >= 2
    assert {s.device(lead.lead).role for lead in leads} <= {"host", "client"}
    guided = diagnose(snapshot_backend(folder / "snapshot.json.gz"), incident_id=folder.name, ticket=text)
    vague = diagnose(snapshot_backend(folder / "snapshot.json.gz"), incident_id=folder.name,
                     ticket="Can't resolve web1.local since 09:00")
    for diag in (guided, vague):
        assert diag.submission is not None and diag.submission.v1.root_cause_name == ["dhcp_spoofed_dns"]
    # no look at the name server itself: the output already says the lookups never reached it
    assert not any(st.args.get("dev") == "dns_server" for st in guided.steps)
    assert any(st.args.get("dev") == "dns_server" for st in vague.steps)
    assert guided.probe_calls < vague.probe_calls


def test_a_quoted_resolver_of_this_network_is_not_a_foreign_one() -> None:
    folder = HISTORY / "sample-history-010"
    s = Session(snapshot_backend(folder / "snapshot.json.gz"))
    dns = s.device("dns_server").addresses[0].split("/")[0]
    s.ticket = f"Can't resolve web1.local: ;; communications error to {dns}#53: timed out"
    [lead] = ticket_leads(s)
    assert lead.kind == "ticket_dns"
