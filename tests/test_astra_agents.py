"""ASTRA's pre-fetch, the three agents and their schedule, on ingested sample incidents.

The sample's history tickets were all resolved after the backlog was opened, so tests that need
eligible history move an incident's opening time; the ground truth is never read by the agents.
"""

from __future__ import annotations

import json
import threading
import time
from datetime import datetime, timedelta, timezone

import pytest

from tests.conftest import REPO

SAMPLE = REPO / "data" / "sample"
INCIDENTS = ["history/sample-history-001", "history/sample-history-016", "history/sample-history-030",
             "history/sample-history-036", "history/sample-history-037", "backlog/sample-backlog-020"]


def _history_resolved() -> list[tuple[str, str]]:
    """(resolved_at, ticket_id) of the module's history incidents, in time order (read from their tickets)."""
    tickets = [json.loads((SAMPLE / p / "ticket.json").read_text()) for p in INCIDENTS if p.startswith("history/")]
    return sorted((t["resolved_at"], t["ticket_id"]) for t in tickets)


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """A warehouse with six sample incidents and the sample runbook, both indexes built (once per module)."""
    from faultline import db
    from faultline.config import Settings
    from faultline.ingest.api import ingest_paths
    from faultline.ingest.incidents import ingest_incidents
    from faultline.retrieval.embed import Embedder
    from faultline.retrieval.index import sync_index

    base = tmp_path_factory.mktemp("astra")
    settings = Settings(duckdb_path=base / "fl.duckdb", lancedb_dir=base / "lancedb", progress=False,
                        log_default_year=2026, llm_backoff_s=0.0)
    conn = db.connect(settings.duckdb_path)
    report = ingest_incidents(conn, settings, [SAMPLE / i for i in INCIDENTS])
    assert not report.failed and len(report.loaded) == len(INCIDENTS)
    ingest_paths(conn, settings, "docs", [SAMPLE / "docs"])
    embedder = Embedder(settings)
    for kind in ("tickets", "docs"):
        sync_index(conn, settings, kind, embedder)
    yield settings, conn, embedder
    conn.close()


@pytest.fixture(scope="module")
def docs_client(env):
    """One real MCP session to a spawned `faultline mcp docs` for the module."""
    from faultline.astra.docs_client import DocsClient

    with DocsClient(env[0]) as client:
        yield client


@pytest.fixture
def deps(env, docs_client):
    from faultline.astra.agents import AgentDeps

    settings, conn, embedder = env
    return AgentDeps(settings, conn, embedder=embedder, docs_client=docs_client)


def _incident(conn, incident_id, opened_at=None):
    from faultline.astra.incident import load_incident

    incident = load_incident(conn, incident_id)
    return incident.model_copy(update={"opened_at": opened_at}) if opened_at else incident


def _resolved(conn, ticket_id):
    return conn.execute("SELECT resolved_at FROM tickets WHERE ticket_id = ?", [ticket_id]).fetchone()[0]


def test_prefetch_only_returns_history_resolved_before_the_incident(env):
    from faultline.astra.prefetch import prefetch

    settings, conn, embedder = env
    resolved = _history_resolved()
    first = datetime.fromisoformat(resolved[0][0])
    # opened before any history ticket was resolved: nothing
    assert prefetch(settings, conn, _incident(conn, "sample-backlog-020", (first - timedelta(hours=1)).isoformat()),
                    embedder=embedder).similar == []
    # opened after three of the five were resolved: only those three may come back
    opened = (datetime.fromisoformat(resolved[2][0]) + timedelta(seconds=1)).astimezone(timezone.utc).isoformat()
    late = {ticket_id for _, ticket_id in resolved[3:]}
    result = prefetch(settings, conn, _incident(conn, "sample-backlog-020", opened), embedder=embedder)
    ids = [t.ticket_id for t in result.similar]
    assert ids and not late & set(ids) and not late & set(result.hybrid_ids)
    for ticket in result.similar:
        assert _resolved(conn, ticket.ticket_id).astimezone(timezone.utc).isoformat() < opened
    scores = [t.score for t in result.similar]
    assert scores == sorted(scores, reverse=True) and all(s >= settings.astra_similar_min_score for s in scores)
    assert [t.resolution_trail is not None for t in result.similar] == [n < 2 for n in range(len(ids))]
    assert result.similar[0].resolution_trail.startswith("Resolution: Found:")


def test_prefetch_never_returns_the_incidents_own_ticket(env):
    from faultline.astra.prefetch import prefetch

    settings, conn, embedder = env
    incident = _incident(conn, "sample-history-001", "2026-11-30T09:00:00+00:00")  # its own ticket is resolved by then
    result = prefetch(settings, conn, incident, embedder=embedder)
    assert incident.ticket_id == "NET-6605121"
    assert result.similar and "NET-6605121" not in [t.ticket_id for t in result.similar] + result.hybrid_ids
    relaxed = settings.model_copy(update={"astra_history_cutoff": "created"})
    assert prefetch(relaxed, conn, _incident(conn, "sample-backlog-020"), embedder=embedder).similar


def test_batches_keep_the_best_few_each():
    from faultline.astra.prefetch import rerank
    from faultline.astra.records import Incident
    from faultline.astra.rerank import Candidate
    from faultline.config import Settings

    class ByNumber:
        name = "by-number"

        def score(self, incident, batch):
            return {c.ticket_id: int(c.ticket_id[2:]) / 100 for c in batch}

    cands = [Candidate(f"T-{n}", "t", "", "", [], None) for n in range(45)]
    kept = rerank(Settings(astra_rerank_batch=20, astra_rerank_keep=5), Incident(incident_id="i", title="x"), cands,
                  ByNumber())
    assert [c.ticket_id for c, _ in kept] == [f"T-{n}" for n in (44, 43, 42, 41, 40, 39, 38, 37, 36, 35,
                                                                 19, 18, 17, 16, 15)]


def _task(conn, incident_id, prefetched=(), opened=None):
    from faultline.astra.records import AgentTask

    incident = _incident(conn, incident_id, opened)
    return AgentTask(incident=incident, query=incident.title, prefetched=list(prefetched))


def _raw_lines(deps, incident_id):
    """Every log line the incident's first-round scope reads (its devices and window in the suite's archive)."""
    from faultline.astra.incident import load_incident
    from faultline.scope.resolve import build_scope, scope_lines

    inc = load_incident(deps.conn, incident_id)
    scope = build_scope(deps.conn, deps.settings, incident_id=incident_id, title=inc.title,
                        description=inc.description, opened_at=inc.opened_at, fleet=True)
    return {r[0] for r in scope_lines(deps.conn, scope, "l.raw").fetchall()}


@pytest.mark.parametrize("incident_id, label, category, device", [
    ("sample-history-037", "ospf_area_misconfiguration", "misconfiguration", "core_router_2"),
    ("sample-history-016", "frr_service_down", "network_node_error", "core_router_3"),
])
def test_log_agent_names_the_label_and_quotes_only_real_log_lines(deps, incident_id, label, category, device):
    from faultline.astra.agents import make_agent

    output = make_agent("log", deps).run(_task(deps.conn, incident_id))
    assert (output.agent, output.label, output.category) == ("log", label, category)
    assert device in output.devices
    real = _raw_lines(deps, incident_id)
    quotes = [q for f in output.findings for q in f.quotes]
    assert quotes and all(q in real for q in quotes) and all(q.strip() in output.text for q in quotes)
    assert any(f.aspect == "cause" for f in output.findings)
    total = deps.conn.execute("SELECT sum(lines_in_scope) FROM log_scopes WHERE incident_id = ? AND round = 1",
                              [incident_id]).fetchone()[0]
    assert output.data["causal_chain"] and output.data["input_lines"] == total  # exactly the scope's lines
    stored = deps.conn.execute("SELECT count(*) FROM log_excerpts WHERE incident_id = ? AND round = 1",
                               [incident_id]).fetchone()[0]
    assert stored == 1


def test_log_agent_without_logs_says_so(deps):
    from faultline.astra.agents import make_agent
    from faultline.astra.records import AgentTask, Incident

    output = make_agent("log", deps).run(AgentTask(incident=Incident(incident_id="nowhere", title="x"), query="x"))
    assert output.findings == [] and "No log lines in this incident's scope" in output.text and output.label is None
    kinds = {k for (k,) in deps.conn.execute("SELECT kind FROM log_scopes WHERE incident_id = 'nowhere'").fetchall()}
    assert kinds == {"window", "no_match"}  # the round says why it read nothing


def test_llm_log_agent_drops_fabricated_quotes_and_labels(deps):
    import json

    from faultline.astra.agents import AgentDeps, make_agent
    from faultline.llm.fake import scripted_model

    real = sorted(line for line in _raw_lines(deps, "sample-history-037") if "invalid Area ID" in line)[0]
    reply = json.dumps({"findings": [
        {"text": "OSPF packets carry the wrong area", "aspect": "cause", "quotes": [real]},
        {"text": "the router rebooted", "aspect": "symptom", "quotes": ["2026/11/30 01:15:50 kernel: reboot"]}],
        "causal_chain": ["area changed", "adjacency lost"], "category": "misconfiguration",
        "label": "ospf_area_misconfiguration", "devices": ["core_router_2"]})
    with scripted_model("log-agent", [reply]) as fake:
        llm = AgentDeps(deps.settings, deps.conn, model=fake.model, embedder=deps.embedder)
        output = make_agent("log", llm).run(_task(deps.conn, "sample-history-037"))
    assert output.label == "ospf_area_misconfiguration" and output.category == "misconfiguration"
    assert [f.quotes for f in output.findings] == [[real.strip()], []] and output.data["dropped_quotes"] == 1
    prompt = fake.requests[0][-1]["content"]
    assert sum(line.strip() in prompt for line in _raw_lines(deps, "sample-history-037")) >= 10  # the excerpt did
    with scripted_model("log-agent2", [reply.replace("ospf_area_misconfiguration", "cosmic_rays")]) as fake:
        llm = AgentDeps(deps.settings, deps.conn, model=fake.model, embedder=deps.embedder)
        assert make_agent("log", llm).run(_task(deps.conn, "sample-history-037")).label is None


def test_similarity_agent_quotes_what_similar_tickets_say(deps):
    from faultline.astra.agents import make_agent
    from faultline.astra.prefetch import prefetch

    task = _task(deps.conn, "sample-backlog-020", opened="2026-11-30T07:00:00+00:00")
    shared = prefetch(deps.settings, deps.conn, task.incident, embedder=deps.embedder)
    output = make_agent("similarity", deps).run(task.model_copy(update={"prefetched": shared.similar}))
    notes = {tid: note for tid, note in deps.conn.execute("SELECT ticket_id, resolution_note FROM tickets").fetchall()}
    assert {f.aspect for f in output.findings} == {"cause", "resolution"}
    for finding in output.findings:
        ticket = finding.text.split()[3]
        assert all(q in notes[ticket] and q in output.text for q in finding.quotes)
    assert all(t.ticket_id in output.text for t in shared.similar)
    empty = make_agent("similarity", deps).run(task)
    assert empty.findings == [] and "No resolved ticket" in empty.text


def test_domain_agent_queries_the_docs_server_over_mcp(deps):
    from faultline.astra.agents import make_agent

    task = _task(deps.conn, "sample-history-037")
    log_text = "Key log lines:\n- OSPF: [Y9FH4-5CVMQ][EC 134217741] interface eth0:10.0.0.1: ospf_read invalid Area ID"
    task = task.model_copy(update={"context": {"log": log_text, "similarity": "x" * 5000}})
    output = make_agent("domain", deps).run(task)
    query = output.data["doc_query"]
    assert "EC 134217741" in output.data["identifiers"] and "eth0" in query
    assert query.count("x") <= 1500 + 40  # the similarity output is capped
    assert output.data["hits"][0]["title"].startswith("NOC runbook > OSPF")
    # the index keeps each section with whitespace squeezed; quotes are verbatim from what the server returns
    chunks = "\n".join(" ".join(r[0].split()) for r in deps.conn.execute("SELECT text FROM doc_chunks").fetchall())
    assert {f.aspect for f in output.findings} == {"identification", "resolution"}
    assert all(q in chunks for f in output.findings for q in f.quotes)


def test_schedule_runs_similarity_and_log_concurrently_then_domain(deps, monkeypatch):
    from faultline.astra import schedule
    from faultline.astra.agents import registry

    spans: dict[str, tuple[float, float]] = {}
    seen: dict = {}
    real_make = registry.make_agent

    class Timed:
        def __init__(self, inner):
            self.inner, self.name = inner, inner.name

        def run(self, task):
            start = time.perf_counter()
            if self.name == "domain":
                seen["context"] = task.context
            out = self.inner.run(task)
            if self.name != "domain":
                time.sleep(0.5)  # long enough that sequential runs could not overlap
            spans[self.name] = (start, time.perf_counter())
            seen.setdefault("threads", set()).add(threading.current_thread().name)
            return out

    monkeypatch.setattr(schedule, "make_agent", lambda name, d: Timed(real_make(name, d)))
    incident = _incident(deps.conn, "sample-backlog-020", "2026-11-30T07:00:00+00:00")
    result = schedule.run_agents(deps, incident)
    (s0, s1), (l0, l1), (d0, _) = spans["similarity"], spans["log"], spans["domain"]
    assert s0 < l1 and l0 < s1, "similarity and log did not overlap"
    assert d0 >= max(s1, l1) - 1e-3
    assert seen["context"] == {"similarity": result.outputs["similarity"].text, "log": result.outputs["log"].text}
    assert set(result.outputs) == {"similarity", "log", "domain"} and result.prefetch.similar
    assert len([t for t in seen["threads"] if t.startswith("astra-agent")]) == 2


def test_taxonomy_file_matches_the_fault_catalogue():
    from faultline.nika.labels import catalogue
    from faultline.truth.taxonomy import faults

    assert {n: fault.category for n, fault in faults().items()} == {i.label: i.category for i in catalogue()}


def test_unknown_agent_is_a_user_error(deps):
    from faultline.astra.agents import agent_names, make_agent
    from faultline.errors import FaultlineError

    assert agent_names() == ["domain", "log", "similarity"]
    with pytest.raises(FaultlineError, match="unknown ASTRA agent"):
        make_agent("oracle", deps)


def test_with_the_llm_reranker_a_failing_model_still_gives_similar_tickets_and_says_so(deps, monkeypatch):
    from faultline.astra import schedule
    from faultline.astra.agents import registry
    from faultline.llm.fake import scripted_model

    # the agents stay deterministic (built with the model-less deps): only the reranker asks the model
    monkeypatch.setattr(schedule, "make_agent", lambda name, d: registry.make_agent(name, deps))
    with scripted_model("rerank-down", ["not JSON"], repeat_last=True) as fake:
        chosen = deps.settings.model_copy(update={"astra_reranker": "llm", "llm_retries": 0})
        with_model = type(deps)(chosen, deps.conn, model=fake.model, embedder=deps.embedder,
                                docs_client=deps.docs_client)
        result = schedule.run_agents(with_model, _incident(deps.conn, "sample-backlog-020",
                                                           "2026-11-30T07:00:00+00:00"))
        asked = len(fake.requests)
    assert result.prefetch.reranker == f"llm:{fake.model}" and asked >= 1
    assert result.prefetch.similar  # the deterministic reranker's scores stood in
    missing = result.outputs["similarity"].missing or ""
    assert missing.startswith("reranker: model failed: ") and "by the deterministic reranker" in missing
