"""ASTRA judge rules, the judge-orchestrator loop (stop rule, dedup, <= 5 rounds) and idempotent storage."""

from __future__ import annotations

import json

import pytest

from faultline.astra import judge, orchestrator
from faultline.astra.claims import extract_deterministic
from faultline.astra.engine import analyse
from faultline.astra.evidence import map_deterministic
from faultline.astra.records import AgentOutput, Claim, Evidence, JudgeScore, Report
from faultline.astra.report import HEDGE, NO_FIX, render_markdown, write_deterministic
from faultline.astra.store import load_result, save_result
from faultline.errors import FaultlineError
from tests import astra_cases as cases


def _report(**fields) -> Report:
    base = {"incident_id": "sample-backlog-003", "round": 1,
            "symptom": "Reported: can't reach 10.1.1.10. Observed: router1 lost its BGP session to 10.0.0.1.",
            "evidence": ["router1 sent a Hold Timer Expired notification to 10.0.0.1.",
                         "The session was dropped because keepalives stopped arriving on TCP port 179."],
            "root_cause": "bgp_acl_block (misconfiguration) on router1.",
            "fix": "On router1: delete the nft firewall table that drops TCP port 179.",
            "verification": "ping 10.1.1.10 and check the BGP session to 10.0.0.1 is Established.",
            "label": "bgp_acl_block", "category": "misconfiguration", "devices": ["router1"], "text": ""}
    base.update(fields)
    report = Report(**base)
    return report.model_copy(update={"text": render_markdown(report)})


def _causal(verified: bool, text: str = "A firewall on router1 blocked TCP port 179 because of an nft rule."):
    claim = Claim(claim_id="c1", incident_id="sample-backlog-003", round=1, agent="log", text=text, tag="CAUSAL")
    status = "VERIFIED" if verified else "UNVERIFIED"
    evidence = Evidence(claim_id="c1", source="log", quote=text, method="verbatim", overlap=1.0,
                        confidence="high" if verified else "low", status=status)
    return [claim], [evidence]


def _scores(report: Report, claims=None, evidence=None, outputs=None) -> dict[str, JudgeScore]:
    outputs = outputs or cases.outputs()
    claims, evidence = (claims, evidence) if claims is not None else _causal(True)
    return {s.criterion: s for s in judge.judge_deterministic(cases.incident(), outputs, claims, evidence, report)}


def test_judge_scores_every_criterion_with_its_rule_version():
    scores = _scores(_report())
    assert set(scores) == set(judge.CRITERIA)
    assert all(1 <= s.score <= 5 and s.reason and s.judge == "deterministic-judge" for s in scores.values())
    assert len({s.version for s in scores.values()}) == 1
    assert scores["root_cause_identification"].score == 5
    assert scores["coverage"].score == 5 and scores["resolution_specificity"].score == 5


def test_root_cause_rule_needs_a_verified_causal_claim_and_a_device():
    assert _scores(_report(), *_causal(True))["root_cause_identification"].score == 5
    assert _scores(_report(devices=[]), *_causal(True))["root_cause_identification"].score == 4
    assert _scores(_report(), *_causal(False))["root_cause_identification"].score == 3
    hedged = _report(label=None, category=None, root_cause=HEDGE + "a firewall may drop BGP.")
    assert _scores(hedged, *_causal(False))["root_cause_identification"].score == 2
    none = _report(label=None, category=None, root_cause="Root cause not determined from the available evidence.")
    assert _scores(none)["root_cause_identification"].score == 1


def test_a_fabricated_identifier_lowers_evidence_grounding():
    clean = _scores(_report())["evidence_grounding"]
    invented = _report(evidence=["router1 sent a Hold Timer Expired notification to 10.0.0.1.",
                                 "core_router_9 on 192.168.77.3 dropped the session via eth7."])
    dirty = _scores(invented)["evidence_grounding"]
    assert clean.score == 5
    assert dirty.score <= 2 and "192.168.77.3" in dirty.reason


def test_coverage_and_resolution_fall_when_the_fix_is_missing():
    scores = _scores(_report(fix=NO_FIX))
    assert scores["coverage"].score == 3 and "fix/verification" in scores["coverage"].reason
    assert scores["resolution_specificity"].score == 1
    vague = _scores(_report(fix=HEDGE + "Try turning it off and on again.", verification="Check it works."))
    assert vague["resolution_specificity"].score == 1


def test_focus_drops_when_the_report_is_about_other_devices():
    off_topic = _report(evidence=["super_spine_0 had a firewall table.", "leaf3 flapped twice last week.",
                                  "web_server_1 was slow."], root_cause="Something on super_spine_0.",
                        fix="Restart leaf3.", label=None, category=None, devices=[])
    assert _scores(off_topic)["focus"].score <= 2
    assert _scores(_report())["focus"].score >= 4


def _weak_outputs() -> dict[str, AgentOutput]:
    """A log agent that only dumps router1's lines, a domain agent with an off-target section, no label anywhere."""
    log = AgentOutput(agent="log", round=1, query="initial", devices=["router1"],
                      text="\n".join(f"router1 bgpd: {line}" for line in cases.log_lines("router1")))
    domain = AgentOutput(agent="domain", round=1, query="initial", text=cases.runbook_section("Session flapping"))
    sim = cases.similarity_output().model_copy(update={"label": None, "category": None})
    return {"log": log, "domain": domain, "similarity": sim}


def test_loop_asks_targeted_new_questions_until_nothing_is_low_or_nothing_new_remains(settings, conn):
    agents = cases.SourceAgents(_weak_outputs())
    result = analyse(cases.incident(), settings=settings, conn=conn, agents=agents.agents())
    rounds = result.rounds
    assert 2 <= len(rounds) <= 5
    first = {s.criterion: s.score for s in rounds[0].scores}
    assert min(first.values()) <= 3 and rounds[0].revise
    # every non-final round asked 1-4 questions; the final round either needs nothing or has nothing new to ask
    for rnd in rounds[:-1]:
        assert 1 <= len(rnd.followups) <= 4 and rnd.revise
    last = rounds[-1]
    assert not last.followups
    assert not judge.needs_revision(last.scores) or len(rounds) == 5 or last.revise
    # never the same question twice to the same agent, across all rounds
    keys = [orchestrator.query_key(q.agent, q.query) for r in rounds for q in r.followups]
    assert len(keys) == len(set(keys))
    # each question reached its agent and was answered in the next round
    asked = [(agent, task.query, task.round) for agent, task in agents.tasks]
    assert asked == [(q.agent, q.query, q.round + 1) for r in rounds for q in r.followups]
    # the low criterion pointed at the right agents
    for q in (q for r in rounds for q in r.followups):
        if q.criterion == "resolution_specificity":
            assert q.agent in ("domain", "similarity")
    # answers were appended to their agent's output and yielded claims of later rounds
    assert any(c.round > 1 for c in result.claims)
    log = next(o for o in result.outputs if o.agent == "log")
    assert log.data.get("followups") and log.text.startswith(_weak_outputs()["log"].text.rstrip())
    assert sum(s.score for s in last.scores) >= sum(first.values())


def test_a_good_first_report_ends_the_loop_at_once(settings, conn):
    agents = cases.SourceAgents()
    result = analyse(cases.incident(), settings=settings, conn=conn, agents=agents.agents())
    assert len(result.rounds) == 1 and not result.rounds[0].followups and not agents.tasks
    assert not judge.needs_revision(result.rounds[0].scores)


def test_max_rounds_bounds_the_loop(settings, conn):
    result = analyse(cases.incident(), settings=settings, conn=conn, max_rounds=1,
                     agents=cases.SourceAgents(_weak_outputs()).agents())
    assert len(result.rounds) == 1 and not result.rounds[0].followups and not result.rounds[0].revise
    with pytest.raises(FaultlineError):
        analyse(cases.incident(), settings=settings, conn=conn, max_rounds=6,
                agents=cases.SourceAgents().agents())
    with pytest.raises(FaultlineError):
        analyse(cases.incident(), settings=settings, conn=conn, analyst="gpt4",
                agents=cases.SourceAgents().agents())


def test_planner_never_repeats_a_query_even_with_other_case_or_punctuation():
    incident, outputs = cases.incident(), _weak_outputs()
    claims = [c for o in outputs.values() for c in extract_deterministic(o, incident_id=incident.incident_id)]
    evidence = map_deterministic(claims, outputs)
    report = write_deterministic(incident, outputs, claims, evidence, round_=1)
    scores = judge.judge_deterministic(incident, outputs, claims, evidence, report)
    low = [s.model_copy(update={"score": 2}) for s in scores]  # every criterion low: the widest plan
    first = orchestrator.plan_deterministic(incident, report, low, claims, evidence, set())
    assert 2 <= len(first) <= 4
    assert len({q.criterion for q in first}) == len(first)  # round-robin over the low criteria
    asked = {orchestrator.query_key(q.agent, q.query.upper().replace("?", " ?!")) for q in first}
    second = orchestrator.plan_deterministic(incident, report, low, claims, evidence, asked)
    assert not {(q.agent, q.query) for q in first} & {(q.agent, q.query) for q in second}
    every = set(asked)
    for _ in range(30):  # drain the planner: it must run dry rather than cycle
        more = orchestrator.plan_deterministic(incident, report, low, claims, evidence, every)
        if not more:
            break
        keys = {orchestrator.query_key(q.agent, q.query) for q in more}
        assert not keys & every
        every |= keys
    else:
        pytest.fail("the planner kept producing queries")
    high = [s.model_copy(update={"score": 4}) for s in scores]
    assert orchestrator.plan_deterministic(incident, report, high, claims, evidence, set()) == []


def test_rows_are_stored_once_per_incident_and_analyst(settings, conn):
    result = analyse(cases.incident(), settings=settings, conn=conn,
                     agents=cases.SourceAgents(_weak_outputs()).agents())
    save_result(conn, result, run_id="run-1")
    counts = {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
              for t in ("astra_rounds", "claims", "evidence", "judge_scores", "followup_queries")}
    assert counts["astra_rounds"] == len(result.rounds)
    assert counts["judge_scores"] == 5 * len(result.rounds)
    assert counts["claims"] == counts["evidence"] == len(result.claims)
    assert counts["followup_queries"] == sum(len(r.followups) for r in result.rounds)
    save_result(conn, result, run_id="run-2")  # re-saving replaces, never duplicates
    again = {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in counts}
    assert again == counts
    assert conn.execute("SELECT DISTINCT run_id FROM claims").fetchall() == [("run-2",)]
    final = conn.execute("SELECT round, label, is_final FROM astra_rounds WHERE is_final").fetchall()
    assert final == [(len(result.rounds), result.rounds[-1].report.label, True)]
    loaded = load_result(conn, result.incident_id, "deterministic")
    assert loaded is not None
    # everything but the sources' text, which stays where it was read from (log excerpts, tickets, doc chunks)
    unsourced = [o.model_copy(update={"sources": []}) for o in result.outputs]
    assert any(o.sources for o in result.outputs)
    assert (loaded.claims, loaded.evidence, loaded.outputs) == (result.claims, result.evidence, unsourced)
    assert [(r.report, r.followups, r.revise) for r in loaded.rounds] == \
        [(r.report, r.followups, r.revise) for r in result.rounds]
    assert [sorted(r.scores, key=lambda s: s.criterion) for r in loaded.rounds] == \
        [sorted(r.scores, key=lambda s: s.criterion) for r in result.rounds]
    assert load_result(conn, result.incident_id, "llm:other") is None
    # a shorter analysis by the same analyst replaces every row of the longer one
    short = analyse(cases.incident(), settings=settings, conn=conn, agents=cases.SourceAgents().agents())
    save_result(conn, short)
    assert conn.execute("SELECT count(*) FROM astra_rounds").fetchone()[0] == 1
    assert conn.execute("SELECT count(*) FROM followup_queries").fetchone()[0] == 0


def test_llm_judge_and_planner_through_the_gateway_with_a_scripted_model(settings, conn):
    from faultline.llm.fake import scripted_model

    incident, outputs = cases.incident(), cases.outputs()
    report = _report()
    claims, evidence = _causal(True)
    verdict = {"scores": [{"criterion": c, "score": 4, "reason": "fine"} for c in judge.CRITERIA]}
    verdict["scores"][1] = {"criterion": "resolution_specificity", "score": 2, "reason": "no command"}
    with scripted_model("c-judge", [json.dumps(verdict)]) as fake:
        scores = judge.judge_llm(incident, outputs, claims, evidence, report, settings=settings, conn=conn,
                                 model=fake.model)
    assert [s.criterion for s in scores] == list(judge.CRITERIA)
    assert scores[1].score == 2 and scores[1].judge == f"llm:{fake.model}" and judge.needs_revision(scores)
    prompt = " ".join(m["content"] for m in fake.requests[0])
    assert "Hold Timer Expired" in prompt and "bgp_acl_block" in prompt  # it saw the agent outputs and report
    plan = {"revision_needed": True, "reasoning": "need the command",
            "agent_queries": [{"agent_name": "domain", "query": "Which nft command removes the table on router1?",
                               "purpose": "resolution_specificity"},
                              {"agent_name": "similarity", "query": "What fixed NET-9801771 exactly?",
                               "purpose": "resolution_specificity"}]}
    earlier = orchestrator.plan_deterministic(incident, report, scores, claims, evidence, set())
    earlier = [q.model_copy(update={"query": "what fixed net-9801771 EXACTLY"}) if q.agent == "similarity" else q
               for q in earlier]
    with scripted_model("c-plan", [json.dumps(plan)]) as fake:
        planned = orchestrator.plan_llm(incident, report, scores, earlier, settings=settings, conn=conn,
                                        model=fake.model)
    assert [(q.agent, q.criterion) for q in planned] == [("domain", "resolution_specificity")]
    bad = json.dumps({"scores": verdict["scores"][:4] + [verdict["scores"][0]]})  # focus never scored
    with scripted_model("c-judge-bad", [bad]) as fake, pytest.raises(FaultlineError):
        judge.judge_llm(incident, outputs, claims, evidence, report, settings=settings, conn=conn, model=fake.model)
