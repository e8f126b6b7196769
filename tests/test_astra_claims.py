"""ASTRA claims and evidence: 5-10 claims per agent from its own output, the 60% verbatim check, the keyword window."""

from __future__ import annotations

import json

import pytest

from faultline.astra import evidence as ev
from faultline.astra.claims import extract_deterministic, extract_llm, tag_for
from faultline.astra.lexical import normalise
from faultline.astra.records import Claim
from tests import astra_cases as cases


def _claim(agent: str, text: str, n: int = 1) -> Claim:
    return Claim(claim_id=f"t:r1:{agent}:{n:02d}", incident_id="t", round=1, agent=agent, text=text)


def test_each_agent_yields_five_to_ten_claims_from_its_own_output_only():
    outputs = cases.outputs()
    for name, output in outputs.items():
        claims = extract_deterministic(output, incident_id="sample-backlog-003")
        # the similarity case has four claimable sentences: its fifth, "Resolution trail of NET-9801771:", is a heading
        assert (4 if name == "similarity" else 5) <= len(claims) <= 10, (name, len(claims))
        assert {c.agent for c in claims} == {name}
        assert len({c.claim_id for c in claims}) == len(claims)
        own = normalise(output.text + " " + " ".join(f.text for f in output.findings))
        others = [normalise(o.text) for n, o in outputs.items() if n != name]
        for claim in claims:
            assert normalise(claim.text) in own, f"{name} claim not taken from its own output: {claim.text}"
            if name == "log":  # the log agent's claims are about its log lines, none restates the runbook
                assert not any(normalise(claim.text) in other for other in others)


def test_log_claims_favour_fault_lines_over_startup_noise():
    claims = extract_deterministic(cases.log_output(), incident_id="x")
    texts = " ".join(c.text for c in claims)
    assert "Hold Timer Expired" in texts and "%ADJCHANGE" in texts
    assert any(c.tag == "CAUSAL" and "179" in c.text for c in claims)


def test_tags_only_when_unambiguous():
    assert tag_for("The session was dropped because keepalives stopped arriving on TCP port 179.") == "CAUSAL"
    assert tag_for("A firewall table on router1 blocked TCP port 179.") == "CAUSAL"
    assert tag_for("pc1 sees 100% loss to 10.1.1.10 (0/2 replies).") == "SYMPTOMATIC"
    assert tag_for("Fix: Deleted the firewall table; sessions re-established.") is None
    # both a cause word and a symptom word, no causal connective: left unlabelled
    assert tag_for("The firewall table is down on router1.") is None


def test_follow_up_claims_skip_what_was_already_claimed():
    output = cases.log_output()
    first = extract_deterministic(output, incident_id="x")
    again = extract_deterministic(output, incident_id="x", exclude={normalise(c.text) for c in first})
    assert not {normalise(c.text) for c in first} & {normalise(c.text) for c in again}


def test_a_verbatim_quote_passes_with_full_overlap():
    output = cases.log_output()
    line = cases.hold_timer_line("router1")  # the real %NOTIFICATION line
    claim = _claim("log", "router1 sent a Hold Timer Expired notification to 10.0.0.1.")
    result = ev.validate(claim, line, output)
    assert result.method == "verbatim" and result.overlap == 1.0
    assert result.status == "VERIFIED" and result.quote == line
    assert result.source == "log"


def test_a_fabricated_quote_is_caught_and_replaced_by_a_keyword_window():
    output = cases.log_output()
    claim = _claim("log", "router1 sent a Hold Timer Expired notification to its neighbor 10.0.0.1.")
    # a paraphrase in the model's own words: many source words, but not in source order
    paraphrase = "Hold Timer Expired notification neighbor 10.0.0.1 sent router1 to BGP bytes"
    assert ev.quote_overlap(paraphrase, output.text) < ev.VERBATIM_THRESHOLD
    # a real line with one fabricated identifier: the overlap stays high, the identifier check catches it
    real = cases.hold_timer_line("router1")
    swapped = real.replace("10.0.0.1", "10.0.0.77").replace("HZN6M-XRM1G", "ZZZZZ-ZZZZZ")
    assert ev.quote_overlap(swapped, output.text) >= ev.VERBATIM_THRESHOLD
    for fabricated in (paraphrase, swapped):
        result = ev.validate(claim, fabricated, output)
        assert result.method == "keyword_window", fabricated
        assert result.quote != fabricated and result.quote in output.text  # verbatim from the source
        assert "Hold Timer Expired" in result.quote and "10.0.0.1" in result.quote
        assert result.status == "VERIFIED"  # the window really supports the claim


def test_a_claim_naming_an_identifier_its_agent_never_saw_stays_unverified():
    output = cases.log_output()
    claim = _claim("log", "router7 dropped TCP port 179 on eth3 because of an nft rule.")
    result = ev.validate(claim, "router7 dropped TCP port 179 on eth3", output)
    assert result.method in ("keyword_window", "none")
    assert result.confidence == "low" and result.status == "UNVERIFIED"


def test_no_cross_attribution_a_similar_tickets_finding_cannot_be_verified_from_the_log_output():
    sim, log = cases.similarity_output(), cases.log_output()
    sentence = "A firewall table on super_spine_0 dropped TCP port 179 in both directions"
    assert sentence in sim.text
    as_similarity = ev.validate(_claim("similarity", sentence), sentence, sim)
    as_log = ev.validate(_claim("log", sentence), sentence, log)
    # quoted verbatim from its own agent, but a resolved ticket is precedent about another incident
    assert as_similarity.status == "REFERENCE" and as_similarity.method == "verbatim"
    assert as_similarity.confidence == "high"
    assert as_log.status == "UNVERIFIED" and as_log.source == "log"
    with pytest.raises(ValueError):
        ev.validate(_claim("log", sentence), sentence, sim)  # a claim is only ever checked against its own agent


def test_deterministic_mapping_verifies_extractive_claims_against_their_own_agent():
    outputs = cases.outputs()
    claims = [c for o in outputs.values() for c in extract_deterministic(o, incident_id="x")]
    mapped = ev.map_deterministic(claims, outputs)
    assert [m.claim_id for m in mapped] == [c.claim_id for c in claims]
    for claim, item in zip(claims, mapped):
        assert item.source == claim.agent
        assert all(part in ev.source_text(outputs[claim.agent]) for part in item.quote.split("\n"))  # its lines
    log = {c.text: m for c, m in zip(claims, mapped) if c.agent == "log"}
    reference = {c.text: m for c, m in zip(claims, mapped) if c.agent != "log"}
    inferred = [text for text in log if "bgp_acl_block" in text]  # a taxonomy label: the analysis's word, no line's
    assert inferred and all(log[text].status == "UNVERIFIED" for text in inferred)
    assert all(m.status == "VERIFIED" for text, m in log.items() if text not in inferred)
    # docs and similar tickets are reference, however well quoted
    assert reference and {m.status for m in reference.values()} == {"REFERENCE"}
    # the ticket names no label either: only its own words back a reference claim
    assert all((m.confidence == "low") == ("bgp_acl_block" in text) for text, m in reference.items())


def test_keyword_window_prefers_the_shortest_window_with_the_claim_keywords():
    text = "Intro line without keywords.\nrouter2 lost its session at 01:20:37.\nUnrelated closing remark."
    assert ev.keyword_window("router2 lost its session", text) == "router2 lost its session at 01:20:37."
    assert ev.keyword_window("nothing here matches", text) == ""


def test_llm_claims_and_evidence_through_the_gateway_with_a_scripted_model(settings, conn):
    from faultline.llm.fake import scripted_model

    output = cases.log_output()
    line = cases.hold_timer_line("router2")
    claims_reply = json.dumps({"claims": [
        {"text": "[SYMPTOMATIC] router2 sent a Hold Timer Expired notification to 10.0.0.0.", "tag": None},
        {"text": "The session dropped because keepalives stopped arriving on TCP port 179.", "tag": "CAUSAL"},
        {"text": "router2 sent a Hold Timer Expired notification to 10.0.0.0.", "tag": "SYMPTOMATIC"},  # repeat
    ]})
    evidence_reply = json.dumps({"items": [
        {"claim": 1, "evidence": line, "status": "supported", "confidence": "high"},
        {"claim": 2, "evidence": "keepalives were filtered by nftables on router9 port 179", "status": "supported",
         "confidence": "high"},
    ]})
    with scripted_model("c-claims", [claims_reply]) as fake_claims:
        claims = extract_llm(output, incident_id="sample-backlog-003", ticket="can't reach 10.1.1.10",
                             settings=settings, conn=conn, model=fake_claims.model)
    assert [c.tag for c in claims] == ["SYMPTOMATIC", "CAUSAL"]  # prefix parsed, the repeat dropped
    assert claims[0].text.startswith("router2 sent")
    sent = " ".join(m["content"] for m in fake_claims.requests[0])
    assert "Hold Timer Expired" in sent and "log agent" in sent
    with scripted_model("c-evidence", [evidence_reply]) as fake_ev:
        mapped = ev.map_llm(claims, {"log": output}, incident_id="sample-backlog-003", settings=settings,
                            conn=conn, model=fake_ev.model)
    assert mapped[0].method == "verbatim" and mapped[0].status == "VERIFIED" and mapped[0].quote == line
    assert mapped[1].method != "verbatim" and mapped[1].status == "UNVERIFIED"  # the invented router9 quote is caught
    assert "router9" not in mapped[1].quote and mapped[1].quote in ev.source_text(output)
    stages = [r[0] for r in conn.execute("SELECT stage FROM llm_calls ORDER BY created_at").fetchall()]
    assert stages == ["astra.claims", "astra.evidence"]


def test_the_finding_the_log_agent_names_as_the_cause_is_claimed_and_verified_before_symptom_lines():
    from faultline.astra.claims import MAX_CLAIMS, technical_score
    from faultline.astra.records import AgentOutput, Finding

    expired = cases.hold_timer_line("router1")
    lines = [(d, line) for d in ("router1", "router2") for daemon in ("bgpd", "zebra")
             for line in cases.log_lines(d, daemon) if line != expired]
    symptoms = [Finding(text=f"{d} logged: {line}", aspect="symptom", quotes=[line]) for d, line in lines]
    cause = Finding(text="router1 sent a Hold Timer Expired notification.", aspect="cause", quotes=[expired])
    crowded = sum(technical_score(f.text) > technical_score(cause.text) for f in symptoms)
    assert crowded >= MAX_CLAIMS  # more symptom lines than claims carry more identifiers than the cause does
    output = AgentOutput(agent="log", round=1, query="x", text="\n".join(f.text for f in symptoms),
                         findings=[*symptoms, cause], sources=[line for _, line in lines] + [expired])
    claims = extract_deterministic(output, incident_id="x")
    (claimed,) = [c for c in claims if c.text == cause.text]
    assert claimed.tag == "CAUSAL" and len(claims) == MAX_CLAIMS
    (evidence,) = ev.map_deterministic([claimed], {"log": output})
    assert evidence.status == "VERIFIED" and "Hold Timer Expired" in evidence.quote
