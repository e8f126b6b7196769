"""A model that fails degrades an analysis instead of sinking it (docs/llm.md#when-a-model-fails).

One ASTRA agent whose model fails is a missing source and the others still make the report; a judge whose model
fails is replaced by the deterministic judge, which says so; a SADE turn whose model fails takes the gated walk's
deterministic step, recorded among the steps; a command whose analysis failed exits non-zero with --json too.

Real DuckDB (and, for the domain agent, the real LanceDB index and docs MCP server); the only model is the scripted
fake (`faultline.llm.fake`), never a real LLM.
"""

from __future__ import annotations

import json

import pytest

from faultline.llm.fake import TRANSPORT_ERROR, scripted_model
from tests import astra_cases as cases
from tests.conftest import REPO

SAMPLE = REPO / "data" / "sample"
ARP_ON_ROUTER2 = SAMPLE / "history" / "sample-history-001"  # arp_acl_block on router2
DOMAIN_SYSTEM = "You are a network engineer looking up documentation"
DOMAIN_FINDING = "A firewall rule that drops TCP port 179 keeps the BGP session from coming up"


@pytest.fixture
def fast(settings):
    """No wait between attempts: a failing fake model fails at once."""
    return settings.model_copy(update={"llm_backoff_s": 0.0, "llm_retries": 1})


def _only_the_domain_agent_answers(messages: list[dict]) -> str:
    """The domain agent gets a valid answer; the log agent and every later step get prose, never JSON."""
    if messages[0]["content"].startswith(DOMAIN_SYSTEM):
        chunk = json.loads(messages[-1]["content"].split('<data name="sections">', 1)[1].split("</data>", 1)[0])
        return json.dumps({"findings": [{"text": DOMAIN_FINDING, "aspect": "identification",
                                         "chunk_id": chunk[0]["chunk_id"], "quotes": []}]})
    return "I had a look and the logs seem fine to me."


def test_an_agent_whose_model_fails_is_a_missing_source_and_the_others_still_make_the_report(fast, conn):
    from faultline.astra.engine import analyse
    from faultline.astra.incident import load_incident
    from faultline.ingest.api import ingest_paths
    from faultline.ingest.incidents import ingest_incidents
    from faultline.retrieval.embed import Embedder
    from faultline.retrieval.index import sync_index

    ingest_incidents(conn, fast, [cases.INCIDENT_DIR])
    ingest_paths(conn, fast, "docs", [SAMPLE / "docs"])
    sync_index(conn, fast, "docs", Embedder(fast))
    incident = load_incident(conn, "sample-backlog-003")
    with scripted_model("one-agent-fails", [_only_the_domain_agent_answers], repeat_last=True) as fake:
        result = analyse(incident, settings=fast, conn=conn, analyst=f"llm:{fake.model}", max_rounds=1,
                         run_id="r-degrade")
    report = result.rounds[-1].report
    failed = [line for line in report.missing if line.startswith("log agent: model failed: ")]
    assert len(failed) == 1 and "astra.agent.log" in failed[0] and "not valid JSON" in failed[0]
    assert "## Sources missing" in report.text and "- log agent: model failed: " in report.text
    outputs = {o.agent: o for o in result.outputs}
    assert outputs["log"].missing == failed[0] and not outputs["log"].findings
    assert not [c for c in result.claims if c.agent == "log"]  # a failure is never a claim
    # the domain agent's finding still made the report
    assert outputs["domain"].findings[0].text == DOMAIN_FINDING
    assert any(c.agent == "domain" and "TCP port 179" in c.text for c in result.claims)
    assert any("TCP port 179" in statement for statement in report.evidence)
    # every attempt of the failed agent is a row that names its error
    rows = conn.execute("SELECT error FROM llm_calls WHERE stage = 'astra.agent.log' AND run_id = 'r-degrade'"
                        ).fetchall()
    assert len(rows) == 1 + fast.llm_retries and all(error.startswith("invalid output") for (error,) in rows)


def test_a_judge_whose_model_fails_is_replaced_by_the_rules_and_says_so(fast, conn, capsys):
    from faultline.astra.judge import judge_deterministic
    from faultline.cli.astra import _print_report

    agents = cases.SourceAgents()
    with scripted_model("dead", [TRANSPORT_ERROR], repeat_last=True) as fake:
        result = analyse_with(fast, conn, agents, fake.model)
    scores = result.rounds[0].scores
    judged_by = {s.judge for s in scores}
    assert len(judged_by) == 1
    name = judged_by.pop()
    assert name.startswith("deterministic fallback (model failed: astra.judge: no valid answer")
    outputs = {o.agent: o for o in result.outputs}
    rules = judge_deterministic(cases.incident(), outputs, result.claims, result.evidence, result.rounds[0].report)
    assert [(s.criterion, s.score, s.reason) for s in scores] == [(s.criterion, s.score, s.reason) for s in rules]
    # the report says which steps the deterministic analyst did for the failed model
    steps = [line.partition(": ")[0] for line in result.rounds[0].report.missing]
    assert "report writer (round 1)" in steps and "evidence mapping" in steps
    _print_report(result, None, stored=False)
    assert "deterministic fallback (model failed" in capsys.readouterr().out  # the rounds table names the judge


def analyse_with(settings, conn, agents, model: str):
    from faultline.astra.engine import analyse

    return analyse(cases.incident(), settings=settings, conn=conn, analyst=f"llm:{model}", max_rounds=1,
                   agents=agents.agents())


def _diagnose(settings, steps: list, name: str):
    from faultline.network.snapshot_backend import snapshot_backend
    from faultline.sade.engine import diagnose
    from faultline.sade.llm_policy import llm_policy_runner

    with scripted_model(name, steps, repeat_last=True) as fake:
        policy, policy_name = llm_policy_runner(settings, model=fake.model, incident_id=ARP_ON_ROUTER2.name)
        diag = diagnose(snapshot_backend(ARP_ON_ROUTER2 / "snapshot.json.gz"), incident_id=ARP_ON_ROUTER2.name,
                        policy=policy_name, run_policy=policy)
    return diag, fake


def test_a_sade_turn_whose_model_fails_takes_the_deterministic_step_and_the_diagnosis_goes_on(fast, conn):
    from faultline.sade.store import save_diagnosis

    scan = json.dumps({"action": "scan", "device": "router2", "check": "filters"})
    submit = json.dumps({"action": "submit", "answer": "matches"})
    attempts = 1 + fast.llm_retries
    diag, fake = _diagnose(fast, [TRANSPORT_ERROR] * attempts + [scan, submit], "sade-turn-fails")
    assert diag.status == "submitted" and diag.submission.v1.root_cause_name == ["arp_acl_block"]
    fallback = [st for st in diag.steps if st.tool == "llm_fallback"]
    assert len(fallback) == 1 and fallback[0].args["turn"] == 1
    assert fallback[0].note.startswith("model failed: sade.policy: no valid answer")
    taken = fallback[0].args["step"]  # the walk's own step, run on the network and marked as such
    after = diag.steps[fallback[0].seq:]
    assert taken.startswith("scan all on ") and after[0].note.endswith("deterministic fallback, turn 1")
    assert "(the model failed: the deterministic walk's step)" in fake.requests[attempts][-1]["content"]
    save_diagnosis(conn, diag, run_id=None)
    stored = conn.execute("SELECT tool, note FROM sade_steps WHERE tool = 'llm_fallback'").fetchall()
    assert stored == [("llm_fallback", fallback[0].note)]


def test_a_sade_model_that_always_fails_still_ends_in_an_answer(fast):
    diag, _ = _diagnose(fast, [TRANSPORT_ERROR], "sade-dead")
    assert diag.status == "submitted"
    assert (diag.submission.v1.faulty_devices, diag.submission.v1.root_cause_name) == (["router2"], ["arp_acl_block"])
    turns = [st.args["turn"] for st in diag.steps if st.tool == "llm_fallback"]
    assert turns == list(range(1, len(turns) + 1)) and diag.steps[-1].args["step"] == "submit matches"


def test_report_json_whose_analysis_failed_prints_the_failure_and_exits_non_zero(settings, run_cli, capsys):
    from faultline import db
    from faultline.ingest.incidents import ingest_incidents

    conn = db.connect(settings.duckdb_path)
    try:
        ingest_incidents(conn, settings, [cases.INCIDENT_DIR])
    finally:
        conn.close()
    # no ticket or docs index: the log agent is the only one that asks the model, which no provider answers
    run_cli("report", "sample-backlog-003", "--llm", "faultline-fake/nobody", "--rounds", "1", "--json",
            expect_exit=2)
    out = capsys.readouterr()
    payload = json.loads(out.out)
    assert payload["result"] is None and payload["incident"]["incident_id"] == "sample-backlog-003"
    assert "no agent found anything" in payload["error"] and "log agent: model failed" in payload["error"]
    assert "no agent found anything" in out.err


def test_diagnose_json_without_a_submission_exits_1(run_cli, capsys):
    healthy = SAMPLE / "backlog" / "sample-backlog-047"  # a healthy control: nothing for a fingerprint to match
    wandering = [json.dumps({"action": "scan", "device": d, "check": c})  # busy, never submits or goes in circles
                 for d in ("router1", "router2", "pc1", "pc2")
                 for c in ("interfaces", "filters", "neighbours", "link_counters")] * 2
    with scripted_model("idle-cli", wandering) as fake:
        run_cli("diagnose", str(healthy), "--policy", "llm", "--model", fake.model, "--json", expect_exit=1)
    diagnosis = json.loads(capsys.readouterr().out)  # the JSON is still printed, whole
    assert diagnosis["status"] == "no_submission" and diagnosis["submission"] is None
    assert "did not submit" in diagnosis["error"]


def test_an_agent_whose_model_failed_is_not_asked_again_and_the_report_says_so(conn, monkeypatch):
    from faultline.astra import orchestrator
    from faultline.astra.engine import analyse
    from faultline.astra.records import AgentOutput, FollowupQuery

    failed = "model failed: Timeout after 12 s"
    initial = cases.outputs()
    initial["log"] = AgentOutput(agent="log", round=1, query="initial", text=f"The log agent's model failed: {failed}",
                                 data={"model_failed": failed}, missing=f"log agent: {failed}")
    agents = cases.SourceAgents(initial)
    inc = cases.incident()

    def plan(incident, report, scores, claims, evidence, asked):  # a planner that asks both agents each round
        return [FollowupQuery(incident_id=incident.incident_id, round=report.round, agent=agent,
                              query=f"what else about BGP hold timer, round {report.round}?", criterion="completeness")
                for agent in ("log", "domain")]

    monkeypatch.setattr(orchestrator, "plan_deterministic", plan)
    result = analyse(inc, settings=None, conn=conn, max_rounds=3, agents=agents.agents())  # type: ignore[arg-type]
    asked = [agent for agent, _ in agents.tasks]
    assert "log" not in asked and asked.count("domain") >= 1  # the other agent is still asked
    skipped = "follow-up to the log agent not asked (completeness): its model failed earlier in this analysis"
    assert skipped in result.rounds[0].report.missing and skipped in result.rounds[0].report.text
    assert all(q.agent == "domain" for r in result.rounds for q in r.followups)
