"""Honest evidence: what is never a claim, which sources can verify one, and how the report writes the rest."""

from __future__ import annotations

import json

import pytest

from faultline.astra import evidence as ev
from faultline.astra.claims import extract_deterministic, extract_llm, not_a_claim
from faultline.astra.evaluate import score_result, summarise
from faultline.astra.lexical import sentences
from faultline.astra.records import (
    AgentTask,
    AstraResult,
    AstraRound,
    Claim,
    Evidence,
    Incident,
    JudgeScore,
    SimilarTicket,
)
from faultline.astra.report import HEDGE, write_deterministic
from faultline.truth.records import Truth
from tests import astra_cases as cases
from tests.conftest import REPO

HISTORY = REPO / "data" / "sample" / "history"


def _claim(agent: str, text: str, n: int = 1, tag: str | None = None) -> Claim:
    return Claim(claim_id=f"t:r1:{agent}:{n:02d}", incident_id="t", round=1, agent=agent, text=text, tag=tag)


@pytest.fixture
def deps(settings, conn):
    from faultline.astra.agents import AgentDeps

    return AgentDeps(settings, conn)


class _Runbook:
    """What `faultline mcp docs` returns for the sample runbook's BGP sections (search hits, then sections)."""

    def __init__(self, *titles: str) -> None:
        self.sections = {f"c{i}": {"chunk_id": f"c{i}", "title": f"NOC runbook > BGP > {t}",
                                   "text": cases.runbook_section(t)} for i, t in enumerate(titles)}

    def search(self, query: str, k: int) -> list[dict]:
        return [{"chunk_id": c, "title": s["title"], "score": 1.0} for c, s in self.sections.items()][:k]

    def fetch(self, chunk_id: str) -> dict:
        return self.sections[chunk_id]


def test_the_no_logs_statement_is_never_a_claim(deps):
    from faultline.astra.agents import make_agent

    task = AgentTask(incident=Incident(incident_id="nowhere", title="can't reach 10.1.1.10"), query="x")
    output = make_agent("log", deps).run(task)  # an empty warehouse: nothing in scope
    assert "so the logs say nothing" in output.text
    assert extract_deterministic(output, incident_id="nowhere") == []
    assert not_a_claim("No device logs were ingested for this incident, so the logs say nothing.") == "nothing found"
    assert not_a_claim("The log lines match no fault label of the taxonomy strongly enough to name one.")
    # a negative observation about the network is still a claim
    assert not_a_claim("router1 logged no BGP keepalive from 10.0.0.1 after 01:20.") is None


def test_the_domain_agents_headings_and_source_list_are_not_claims_and_its_quotes_are_reference(settings, conn):
    from faultline.astra.agents import AgentDeps
    from faultline.astra.agents.domain import DomainKnowledgeAgent

    docs = _Runbook("Session stuck in Active or Connect", "Session flapping")
    task = AgentTask(incident=cases.incident(), query="BGP session to router2 down, TCP port 179")
    output = DomainKnowledgeAgent(AgentDeps(settings, conn, docs_client=docs)).run(task)
    assert "What the docs say about resolving it:" in output.text and "Documentation consulted:" in output.text
    claims = extract_deterministic(output, incident_id="t")
    assert claims
    for claim in claims:
        assert not claim.text.endswith(":") and "What the docs say" not in claim.text
        assert not claim.text.startswith("Documentation consulted")
    mapped = ev.map_deterministic(claims, {"domain": output})
    assert {m.status for m in mapped} == {"REFERENCE"}  # how such a fault looks, not that it happened here
    sections = ev.source_text(output)  # the runbook sections themselves, not the agent's summary of them
    assert all(m.confidence == "high" and all(part in sections for part in m.quote.split("\n")) for m in mapped)


def test_a_similar_tickets_resolution_is_reference_and_the_vote_summary_is_not_a_claim(deps):
    from faultline.astra.agents import make_agent
    from faultline.ingest.incidents import ingest_incidents

    ingest_incidents(deps.conn, deps.settings, [HISTORY / "sample-history-003", HISTORY / "sample-history-016"])
    similar = [SimilarTicket(ticket_id="NET-9801771", title="Monitoring alert - connectivity trouble", score=0.6),
               SimilarTicket(ticket_id="NET-4592098", title="Caller: everything is broken", score=0.6)]
    task = AgentTask(incident=cases.incident(), query="x", prefetched=similar)
    output = make_agent("similarity", deps).run(task)
    assert "2 similar resolved ticket(s), most similar first:" in output.text
    assert "do not agree on a fault label" in output.text  # one BGP filter, one stopped routing suite
    claims = extract_deterministic(output, incident_id="t")
    assert not [c for c in claims if c.text.endswith(":") or "do not agree" in c.text or "similar resolved" in c.text]
    fix = next(c for c in claims if "Deleted the firewall table" in c.text)
    evidence = ev.validate(fix, "Fix: Deleted the firewall table; sessions re-established and routes reconverged.",
                           output)
    # a well-supported verbatim quote (it would have been VERIFIED), but about another incident
    assert evidence.method == "verbatim" and evidence.confidence != "low" and evidence.status == "REFERENCE"


def test_only_a_log_line_quote_can_verify_a_claim():
    line = cases.hold_timer_line("router1")
    log = ev.validate(_claim("log", "router1 sent a Hold Timer Expired notification to 10.0.0.1."), line,
                      cases.log_output())
    assert log.status == "VERIFIED" and log.method == "verbatim"
    weak = ev.validate(_claim("log", "router7 dropped TCP port 179 on eth3."), "router7 dropped", cases.log_output())
    assert weak.status == "UNVERIFIED"
    domain = cases.domain_output()
    sentence = next(s for s in sentences(domain.text) if "firewall that drops TCP port 179" in s)  # the runbook's
    doc = ev.validate(_claim("domain", sentence), sentence, domain)
    assert doc.method == "verbatim" and doc.confidence != "low" and doc.status == "REFERENCE"


def test_llm_extraction_drops_headings_and_nothing_found_statements(settings, conn):
    from faultline.llm.fake import scripted_model

    reply = json.dumps({"claims": [
        {"text": "Key log lines (verbatim):", "tag": None},
        {"text": "No log lines were found in this incident's scope for router2.", "tag": None},
        {"text": "Log analysis: 14 log lines from 2 source(s) (router1, router2); the filter kept 12 lines.",
         "tag": None},
        {"text": "router2 sent a Hold Timer Expired notification to 10.0.0.0.", "tag": "SYMPTOMATIC"},
    ]})
    with scripted_model("honest-claims", [reply]) as fake:
        claims = extract_llm(cases.log_output(), incident_id="t", ticket="can't reach 10.1.1.10", settings=settings,
                             conn=conn, model=fake.model)
    assert [c.text for c in claims] == ["router2 sent a Hold Timer Expired notification to 10.0.0.0."]


def test_the_report_writes_documentation_and_tickets_as_reference_never_as_facts():
    outputs = cases.outputs()
    log = _claim("log", "router1 sent a Hold Timer Expired notification to 10.0.0.1.", tag="SYMPTOMATIC")
    doc = _claim("domain", "NOC runbook > BGP > Session stuck in Active or Connect: Any firewall that drops TCP port "
                           "179 keeps the BGP session from coming up.", tag="CAUSAL")
    ticket = _claim("similarity", "In similar ticket NET-9801771 (Monitoring alert - connectivity trouble), the "
                                  "cause was: Found: A firewall table on super_spine_0 dropped TCP port 179 in both "
                                  "directions", tag="SYMPTOMATIC")
    claims = [log, doc, ticket]
    evidence = ev.map_deterministic(claims, {"log": outputs["log"], "domain": outputs["domain"],
                                             "similarity": outputs["similarity"].model_copy(
                                                 update={"text": outputs["similarity"].text + "\n" + ticket.text})})
    assert [e.status for e in evidence] == ["VERIFIED", "REFERENCE", "REFERENCE"]
    report = write_deterministic(cases.incident(), outputs, claims, evidence, round_=1)
    statements = [report.symptom, *report.evidence, report.root_cause, report.fix, report.verification]
    assert "router1 sent a Hold Timer Expired notification to 10.0.0.1." in report.evidence  # a fact
    body = "Any firewall that drops TCP port 179 keeps the BGP session from coming up."
    doc_lines = [s for s in statements if body in s]
    assert doc_lines and all("The runbook (BGP > Session stuck in Active or Connect) says: " + body in s
                             for s in doc_lines)
    assert body not in report.evidence and not any(s.startswith(HEDGE) for s in doc_lines)
    ticket_lines = [s for s in statements if "super_spine_0 dropped TCP port 179" in s]
    assert ticket_lines and all("In resolved ticket NET-9801771 (Monitoring alert" in s for s in ticket_lines)
    assert "super_spine_0" not in report.symptom  # another incident's symptom is never "observed" here
    assert "For reference: The runbook" in report.root_cause or "Supported by" in report.root_cause


def _result(claims: list[Claim], statuses: list[str]) -> AstraResult:
    from tests.test_astra_eval import _report

    evidence = [Evidence(claim_id=c.claim_id, source=c.agent, quote="q", method="verbatim", overlap=1.0,
                            confidence="high", status=s) for c, s in zip(claims, statuses)]
    rnd = AstraRound(incident_id="inc-1", round=1, report=_report(label="bgp_acl_block", devices=["router1"]),
                     scores=[JudgeScore(incident_id="inc-1", round=1, criterion="coverage", score=4, reason="r",
                                        judge="deterministic-judge", version="v1")], revise=False)
    return AstraResult(incident_id="inc-1", analyst="deterministic", outputs=[], claims=claims, evidence=evidence,
                       rounds=[rnd])


def test_verified_share_counts_only_claims_about_this_incident(conn):
    from faultline.astra.eval_store import score_metrics

    claims = [_claim("log", "a", 1), _claim("log", "b", 2), _claim("domain", "c", 3), _claim("similarity", "d", 4),
              _claim("log", "e", 5)]  # the last has no evidence row: unverified
    result = _result(claims, ["VERIFIED", "UNVERIFIED", "REFERENCE", "REFERENCE"])
    incident = Incident(incident_id="inc-1", title="router1 down")
    score = score_result(result, incident, Truth(incident_id="inc-1", is_faulty=True, labels=["bgp_acl_block"],
                                                 devices=["router1"]))
    assert (score.verified_claims, score.incident_claims, score.reference_claims) == (1, 3, 2)
    assert score.verified_share == pytest.approx(1 / 3) and score.reference_share == pytest.approx(2 / 5)
    summary = summarise([score, score])
    assert summary.verified_share == pytest.approx(1 / 3) and summary.reference_share == pytest.approx(2 / 5)
    assert (summary.claims, summary.verified_claims, summary.reference_claims) == (10, 2, 4)
    metrics = score_metrics(score)
    assert metrics["reference_share"] == pytest.approx(0.4) and metrics["incident_claims"] == 3.0
    only_reference = score_result(_result(claims[2:4], ["REFERENCE", "REFERENCE"]), incident,
                                  Truth(incident_id="inc-1", is_faulty=False))
    assert only_reference.verified_share is None and only_reference.reference_share == 1.0


def test_reference_claims_ask_for_no_grounding_follow_up():
    from faultline.astra import orchestrator

    incident, outputs = cases.incident(), cases.outputs()
    doc = _claim("domain", "Any firewall that drops TCP port 179 keeps the BGP session from coming up.")
    evidence = ev.map_deterministic([doc], outputs)
    report = write_deterministic(incident, outputs, [doc], evidence, round_=1)
    low = [JudgeScore(incident_id=incident.incident_id, round=1, criterion="evidence_grounding", score=2,
                      reason="r", judge="deterministic-judge", version="v1")]
    planned = orchestrator.plan_deterministic(incident, report, low, [doc], evidence, set())
    assert not [q for q in planned if q.query.startswith("Quote the exact lines that support")]
    unverified = [e.model_copy(update={"status": "UNVERIFIED", "confidence": "low"}) for e in evidence]
    again = orchestrator.plan_deterministic(incident, report, low, [doc], unverified, set())
    assert [q for q in again if q.query.startswith("Quote the exact lines that support")]


def test_a_report_with_a_label_never_borrows_the_fix_of_another_fault():
    """sample-backlog-001's old report: the logs named nothing, the fix came from a DHCP server's MAC ticket."""
    from faultline.astra.report import NO_FIX, fits_label

    mac_fix = ("In similar ticket NET-5566722 (can't reach 10.1.2.11), the fix was: Fix: Restored dhcp_server's own "
               "MAC and flushed the bridge forwarding and ARP tables.")
    mtu_fix = "Compare ip mtu on both ends or set ip ospf mtu-ignore as a stopgap."
    assert not fits_label(mtu_fix, "bgp_acl_block") and not fits_label(mac_fix, "host_missing_ip")
    assert fits_label("Fix: Deleted the ARP filter table; address resolution works again.", "arp_acl_block")
    assert fits_label(mtu_fix, None)  # outside the taxonomy (a software ticket) a precedent may still serve
    outputs = cases.outputs()  # the log agent names bgp_acl_block on router1
    claims = [_claim("similarity", mac_fix, 1), _claim("domain", mtu_fix, 2)]
    evidence = ev.map_deterministic(claims, {"domain": outputs["domain"].model_copy(
        update={"text": outputs["domain"].text + "\n" + mtu_fix}), "similarity": outputs["similarity"].model_copy(
        update={"text": outputs["similarity"].text + "\n" + mac_fix})})
    report = write_deterministic(cases.incident(), outputs, claims, evidence, round_=1)
    assert report.label == "bgp_acl_block" and report.fix == NO_FIX
