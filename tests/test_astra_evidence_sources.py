"""Evidence is VERIFIED only against the sources an agent read (its log lines in scope), never a model's own prose.

A scripted model plays the LLM analyst on a real sample incident (sample-history-037, an OSPF area
misconfiguration) in a real warehouse: the log agent's reply, the claims and the quotes the evidence step proposes.
"""

from __future__ import annotations

import json

import pytest

from faultline.astra import evidence as ev
from faultline.astra.claims import extract_llm
from faultline.astra.report import HEDGE, write_deterministic
from faultline.truth.taxonomy import taxonomy
from tests.conftest import REPO

INCIDENT = "sample-history-037"


@pytest.fixture
def warehouse(settings, conn):
    from faultline.ingest.incidents import ingest_incidents

    settings = settings.model_copy(update={"log_default_year": 2026, "llm_backoff_s": 0.0})
    report = ingest_incidents(conn, settings, [REPO / "data" / "sample" / "history" / INCIDENT])
    assert report.loaded == [INCIDENT]
    return settings, conn


def _llm_log_output(settings, conn, finding: str):
    """The LLM log agent's output when the model writes `finding` (quoting nothing), and the prompt it was sent."""
    from faultline.astra.agents import AgentDeps, make_agent
    from faultline.astra.incident import load_incident
    from faultline.astra.records import AgentTask
    from faultline.llm.fake import scripted_model

    incident = load_incident(conn, INCIDENT)
    reply = json.dumps({"findings": [{"text": finding, "aspect": "cause", "quotes": []}], "causal_chain": [],
                        "category": "misconfiguration", "label": "ospf_area_misconfiguration", "devices": []})
    with scripted_model("sources-log", [reply]) as fake:
        output = make_agent("log", AgentDeps(settings, conn, model=fake.model)).run(
            AgentTask(incident=incident, query=incident.title))
        prompt = "\n".join(m["content"] for m in fake.requests[0])
    return incident, output, prompt


def _claims_and_evidence(settings, conn, incident, output, claims: list[tuple[str, str]], quotes: list[str]):
    """Claims the model extracts (text, tag) and the quotes it proposes for them, through the real steps."""
    from faultline.llm.fake import scripted_model

    with scripted_model("sources-claims", [json.dumps({"claims": [{"text": t, "tag": g} for t, g in claims]})]) as m:
        extracted = extract_llm(output, incident_id=incident.incident_id, ticket=incident.title, settings=settings,
                                conn=conn, model=m.model)
    answer = {"items": [{"claim": i, "evidence": q, "status": "supported", "confidence": "high", "missing": ""}
                        for i, q in enumerate(quotes, start=1)]}
    with scripted_model("sources-evidence", [json.dumps(answer)]) as m:
        mapped = ev.map_llm(extracted, {"log": output}, incident_id=incident.incident_id, settings=settings,
                            conn=conn, model=m.model)
        evidence_prompt = "\n".join(msg["content"] for msg in m.requests[0])
    return extracted, mapped, evidence_prompt


def _statements(report) -> list[str]:
    return [report.symptom, *report.evidence, report.root_cause, report.fix, report.verification]


def test_a_quote_found_only_in_the_models_own_reply_is_not_verified_and_the_report_hedges_it(warehouse):
    settings, conn = warehouse
    invented = taxonomy()["ospf_area_misconfiguration"].summary + "."  # the taxonomy's words, not the logs'
    incident, output, _ = _llm_log_output(settings, conn, invented)
    assert invented in output.text  # the model's reply is part of the agent's output ...
    claims, mapped, _ = _claims_and_evidence(settings, conn, incident, output, [(invented, "CAUSAL")], [invented])
    (evidence,) = mapped
    assert evidence.status == "UNVERIFIED" and evidence.confidence == "low"  # ... but no log line says it
    assert evidence.quote != invented
    report = write_deterministic(incident, {"log": output}, claims, mapped, round_=1)
    written = [s for s in _statements(report) if invented.rstrip(".") in s]
    assert written and all(HEDGE + invented.rstrip(".") in s for s in written)  # never stated as a fact


def test_a_real_log_line_verifies_even_when_the_agents_prose_never_repeats_it(warehouse):
    settings, conn = warehouse
    incident, output, prompt = _llm_log_output(settings, conn, "OSPF neighbours did not come up.")
    line = next(x for x in prompt.splitlines() if "core_router_1 ospfd" in x and "Down -> Init" in x)  # shown
    assert line not in output.text
    claim = "core_router_1 ospfd logged AdjChg: Nbr 10.255.0.2 from Down to Init (HelloReceived)."
    claims, mapped, evidence_prompt = _claims_and_evidence(settings, conn, incident, output,
                                                           [(claim, "SYMPTOMATIC")], [line])
    (evidence,) = mapped
    assert evidence.status == "VERIFIED" and evidence.method == "verbatim" and evidence.quote == line
    assert line in evidence_prompt  # the evidence step is shown the log lines, not the agent's prose
    report = write_deterministic(incident, {"log": output}, claims, mapped, round_=1)
    assert any(claim.rstrip(".") in s and not s.startswith(HEDGE) for s in _statements(report))
