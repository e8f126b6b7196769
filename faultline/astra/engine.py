"""ASTRA end to end for one incident: agents -> claims -> evidence -> report -> judge -> orchestrator, <= 5 rounds.

`analyse` runs round 1 on the paper's schedule, then follow-up rounds until no criterion scores <= 3, no new query
is left or `max_rounds` is reached; ``analyst`` is ``"deterministic"`` (the in-project analyst) or
``"llm:<litellm model>"``. With a model, an agent or step whose call fails degrades (the agent says so and is a
missing source, a step falls back to the deterministic analyst); the analysis fails only when no agent found anything
(docs/llm.md#when-a-model-fails). The rounds in full: docs/astra.md#one-incident-end-to-end.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from faultline.astra import claims as claims_mod
from faultline.astra import evidence as evidence_mod
from faultline.astra import judge as judge_mod
from faultline.astra import lexical, orchestrator
from faultline.astra import report as report_mod
from faultline.astra.records import (
    AgentName,
    AgentOutput,
    AgentTask,
    AstraResult,
    AstraRound,
    Claim,
    Evidence,
    FollowupQuery,
    Incident,
    JudgeScore,
    Report,
    SimilarTicket,
)
from faultline.errors import FaultlineError
from faultline.llm import LLMError

if TYPE_CHECKING:
    import duckdb

    from faultline.config import Settings

MAX_ROUNDS = 5


@dataclass
class Agents:
    """How the engine reaches the agents: the round-1 schedule and a single follow-up question.

    `gather(incident)` returns the pre-fetched tickets and one output per agent; `ask(agent, task)`
    answers one follow-up task with that agent.
    """

    gather: Callable[[Incident], tuple[list[SimilarTicket], dict[str, AgentOutput]]]
    ask: Callable[[AgentName, AgentTask], AgentOutput]


@dataclass
class Analyst:
    """The five LLM steps, deterministic or through one litellm model.

    With a model, a step whose call fails (`LLMError`) is done by the deterministic analyst instead and said in
    `fallbacks` ("<step>: model failed: <reason>; ..."), which the next report lists with its missing sources;
    the judge's fallback is also named in its scores (docs/llm.md#when-a-model-fails).
    """

    name: str
    model: str | None = None
    settings: Settings | None = None
    conn: duckdb.DuckDBPyConnection | None = None
    run_id: str | None = None
    asked: list[FollowupQuery] = field(default_factory=list)
    fallbacks: list[str] = field(default_factory=list)

    def _fell_back(self, step: str, exc: Exception) -> None:
        from faultline.astra.agents import model_failure

        self.fallbacks.append(f"{step}: {model_failure(exc)}; the deterministic analyst did it instead")

    def claims(self, incident: Incident, output: AgentOutput, exclude: set[str]) -> list[Claim]:
        if output.data.get("model_failed"):
            return []  # the agent said nothing: its output only names the failure
        if self.model is not None:
            try:
                return claims_mod.extract_llm(output, incident_id=incident.incident_id, ticket=_ticket(incident),
                                              settings=self.settings, conn=self.conn, model=self.model,
                                              run_id=self.run_id, exclude=exclude)
            except LLMError as exc:
                self._fell_back(f"claim extraction ({output.agent} agent, round {output.round})", exc)
        return claims_mod.extract_deterministic(output, incident_id=incident.incident_id, exclude=exclude)

    def evidence(self, incident: Incident, claims: list[Claim], outputs: dict[str, AgentOutput]) -> list[Evidence]:
        if self.model is not None and claims:
            try:
                return evidence_mod.map_llm(claims, outputs, incident_id=incident.incident_id,
                                            settings=self.settings, conn=self.conn, model=self.model,
                                            run_id=self.run_id)
            except LLMError as exc:
                self._fell_back("evidence mapping", exc)
        return evidence_mod.map_deterministic(claims, outputs)

    def report(self, incident: Incident, outputs: dict[str, AgentOutput], claims: list[Claim],
               evidence: list[Evidence], round_: int, previous: AstraRound | None) -> Report:
        report = None
        if self.model is not None:
            critique = "\n".join(f"- {s.criterion}: {s.score}/5 - {s.reason}" for s in previous.scores) \
                if previous else ""
            try:
                report = report_mod.write_llm(incident, outputs, claims, evidence, round_=round_,
                                              settings=self.settings, conn=self.conn, model=self.model,
                                              run_id=self.run_id, previous=previous.report if previous else None,
                                              critique=critique)
            except LLMError as exc:
                self._fell_back(f"report writer (round {round_})", exc)
        if report is None:
            report = report_mod.write_deterministic(incident, outputs, claims, evidence, round_=round_)
        return self._with_fallbacks(self._fault_area(incident, outputs, report))

    def _with_fallbacks(self, report: Report) -> Report:
        """The report listing, after its missing sources, every step a failed model left to the deterministic
        analyst so far."""
        added = [line for line in self.fallbacks if line not in report.missing]
        if not added:
            return report
        updated = report.model_copy(update={"missing": [*report.missing, *added]})
        return updated.model_copy(update={"text": report_mod.render_markdown(updated)})

    def _fault_area(self, incident: Incident, outputs: dict[str, AgentOutput], report: Report) -> Report:
        """Components from the fault-area inference over the agents' evidence (an LLM's own choice stands)."""
        if self.conn is None or (self.model is not None and report.components):
            return report
        from faultline.astra.fault_area import report_components

        components = report_components(self.conn, incident, outputs)
        if not components or components == report.components:
            return report
        updated = report.model_copy(update={"components": components})
        return updated.model_copy(update={"text": report_mod.render_markdown(updated)})

    def judge(self, incident: Incident, outputs: dict[str, AgentOutput], claims: list[Claim],
              evidence: list[Evidence], report: Report) -> list[JudgeScore]:
        if self.model is None:
            return judge_mod.judge_deterministic(incident, outputs, claims, evidence, report)
        scores = judge_mod.judge_llm_or_rules(incident, outputs, claims, evidence, report, settings=self.settings,
                                              conn=self.conn, model=self.model, run_id=self.run_id)
        if scores and scores[0].judge.startswith(judge_mod.FALLBACK_JUDGE):
            self.fallbacks.append(f"judge (round {report.round}): {scores[0].judge}")
        return scores

    def plan(self, incident: Incident, report: Report, scores: list[JudgeScore], claims: list[Claim],
             evidence: list[Evidence]) -> list[FollowupQuery]:
        asked_keys = {orchestrator.query_key(q.agent, q.query) for q in self.asked}
        planned = None
        if self.model is not None:
            try:
                planned = orchestrator.plan_llm(incident, report, scores, self.asked, settings=self.settings,
                                                conn=self.conn, model=self.model, run_id=self.run_id)
            except LLMError as exc:
                self._fell_back(f"orchestrator (round {report.round})", exc)
        if planned is None:
            planned = orchestrator.plan_deterministic(incident, report, scores, claims, evidence, asked_keys)
        self.asked.extend(planned)
        return planned


def _ticket(incident: Incident) -> str:
    return f"{incident.title}\n{incident.description}".strip()


def parse_analyst(analyst: str) -> str | None:
    """The litellm model of ``llm:<model>``, None for ``deterministic``; anything else is a user error."""
    if analyst == "deterministic":
        return None
    if analyst.startswith("llm:") and analyst[4:].strip():
        return analyst[4:].strip()
    raise FaultlineError(f"unknown analyst {analyst!r}",
                         fix="use 'deterministic' or 'llm:<litellm model>', e.g. llm:openai/gpt-4o-mini")


def append_answer(output: AgentOutput, answer: AgentOutput, query: str) -> AgentOutput:
    """The agent's output with a follow-up answer appended (text, findings, sources, devices; label only if it had
    none)."""
    followups = list(output.data.get("followups") or [])
    followups.append({"round": answer.round, "query": query, "data": answer.data})
    return output.model_copy(update={
        "text": f"{output.text.rstrip()}\n\n{answer.text.strip()}\n" if answer.text.strip() else output.text,
        "findings": [*output.findings, *answer.findings],
        "sources": list(dict.fromkeys([*output.sources, *answer.sources])),
        "label": output.label or answer.label,
        "category": output.category or answer.category,
        "devices": list(dict.fromkeys([*output.devices, *answer.devices])),
        "missing": output.missing or answer.missing,
        "data": {**output.data, "followups": followups},
        "round": answer.round,
        "elapsed_s": output.elapsed_s + answer.elapsed_s,
    })


def analyse(incident: Incident, *, settings: Settings, conn: duckdb.DuckDBPyConnection,
            analyst: str = "deterministic", max_rounds: int = MAX_ROUNDS, run_id: str | None = None,
            agents: Agents | None = None, docs: Any = None) -> AstraResult:
    """Run ASTRA on one incident and return every output, claim, piece of evidence and round
    (docs/astra.md#one-incident-end-to-end).

    `agents` defaults to the project's agents and schedule (`default_agents`), which read the documentation
    through `docs` (a `DocsClient`; None: the domain agent opens a session per question); tests pass their own.
    Storing and scoring the result is the unit's job (`faultline.astra.unit.run_astra`).
    """
    if not 1 <= max_rounds <= MAX_ROUNDS:
        raise FaultlineError(f"max_rounds must be 1..{MAX_ROUNDS}, got {max_rounds}", fix="pass --rounds 1 to 5")
    model = parse_analyst(analyst)
    started = time.perf_counter()
    agents = agents or default_agents(settings, conn, model=model, run_id=run_id, docs=docs)
    steps = Analyst(name=analyst, model=model, settings=settings, conn=conn, run_id=run_id)

    prefetched, gathered = agents.gather(incident)
    outputs: dict[str, AgentOutput] = dict(gathered)
    _produced_something(incident, outputs)
    claims: list[Claim] = []
    for output in outputs.values():
        claims += steps.claims(incident, output, exclude=set())
    evidence = steps.evidence(incident, claims, outputs)

    rounds: list[AstraRound] = []
    round_started = started
    for round_ in range(1, max_rounds + 1):
        previous = rounds[-1] if rounds else None
        report = steps.report(incident, outputs, claims, evidence, round_, previous)
        scores = steps.judge(incident, outputs, claims, evidence, report)
        revise = judge_mod.needs_revision(scores) and round_ < max_rounds
        followups = steps.plan(incident, report, scores, claims, evidence) if revise else []
        followups = _askable(followups, outputs, steps)
        report = steps._with_fallbacks(report)  # a follow-up not asked is said in this round's report too
        rounds.append(AstraRound(incident_id=incident.incident_id, round=round_, report=report, scores=scores,
                                 followups=followups, revise=revise, elapsed_s=0.0))
        if not followups:
            rounds[-1] = rounds[-1].model_copy(update={"elapsed_s": round(time.perf_counter() - round_started, 3)})
            break
        rounds[-1] = rounds[-1].model_copy(update={"elapsed_s": round(time.perf_counter() - round_started, 3)})
        round_started = time.perf_counter()
        new_claims = _answer(incident, followups, round_ + 1, prefetched, outputs, claims, agents, steps)
        claims += new_claims
        evidence += steps.evidence(incident, new_claims, outputs)
    return AstraResult(incident_id=incident.incident_id, analyst=analyst, outputs=list(outputs.values()),
                       claims=claims, evidence=evidence, rounds=rounds,
                       elapsed_s=round(time.perf_counter() - started, 3))


def _produced_something(incident: Incident, outputs: dict[str, AgentOutput]) -> None:
    """Raise `LLMError` when an agent's model failed and no agent found anything: then nothing could be produced
    and the incident is a failure row (docs/llm.md#when-a-model-fails)."""
    failed = [o.missing for o in outputs.values() if o.data.get("model_failed")]
    if failed and not any(o.findings for o in outputs.values()):
        raise LLMError(f"{incident.incident_id}: no agent found anything and a model failed: " + "; ".join(failed),
                       fix="see the rows of llm_calls for this incident; try another model or raise llm_retries "
                           "or llm_timeout_s")


def _model_failed(output: AgentOutput) -> bool:
    """True when the agent's model failed in round 1 or on a follow-up: asking it again costs another timeout."""
    return bool(output.data.get("model_failed")) or any(
        (f.get("data") or {}).get("model_failed") for f in output.data.get("followups") or [])


def _askable(followups: list[FollowupQuery], outputs: dict[str, AgentOutput], steps: Analyst) -> list[FollowupQuery]:
    """The follow-ups whose agent's model has not failed; each one dropped is said in the next report."""
    kept = []
    for query in followups:
        if query.agent in outputs and _model_failed(outputs[query.agent]):
            steps.fallbacks.append(f"follow-up to the {query.agent} agent not asked ({query.criterion}): its model "
                                   "failed earlier in this analysis")
        else:
            kept.append(query)
    return kept


def _answer(incident: Incident, followups: list[FollowupQuery], next_round: int, prefetched: list[SimilarTicket],
            outputs: dict[str, AgentOutput], claims: list[Claim], agents: Agents, steps: Analyst) -> list[Claim]:
    """Ask each follow-up, append the answers, and extract claims from the answers alone."""
    new_claims: list[Claim] = []
    for query in followups:
        context: dict[str, object] = {name: o.text for name, o in outputs.items() if name != query.agent}
        context |= {"followup": True, "criterion": query.criterion}
        task = AgentTask(incident=incident, query=query.query, round=next_round, prefetched=prefetched,
                         context=context)
        answer = agents.ask(query.agent, task).model_copy(update={"round": next_round})
        if query.agent in outputs:
            outputs[query.agent] = append_answer(outputs[query.agent], answer, query.query)
        else:
            outputs[query.agent] = answer
        if not answer.text.strip():
            continue
        seen = {lexical.normalise(c.text) for c in [*claims, *new_claims] if c.agent == query.agent}
        fresh = steps.claims(incident, answer, exclude=seen)
        taken = sum(1 for c in new_claims if c.agent == query.agent)
        new_claims += [c.model_copy(update={"claim_id": claims_mod.claim_id(incident.incident_id, next_round,
                                                                            query.agent, taken + i)})
                       for i, c in enumerate(fresh, start=1)]
    return new_claims


def default_agents(settings: Settings, conn: duckdb.DuckDBPyConnection, *, model: str | None,
                   run_id: str | None = None, docs: Any = None) -> Agents:
    """The project's agents: `schedule.run_agents` for round 1, `make_agent(name).run` for each follow-up.

    The agents are built once per analysis and reused for its follow-ups (the embedder and the docs
    client they hold are loaded once).
    """
    from faultline.astra.agents import AgentDeps, make_agent, run_agent
    from faultline.astra.schedule import run_agents

    deps = AgentDeps(settings=settings, conn=conn, model=model, run_id=run_id, docs_client=docs)
    built: dict[str, object] = {}

    def gather(incident: Incident) -> tuple[list[SimilarTicket], dict[str, AgentOutput]]:
        scheduled = run_agents(deps, incident)
        return scheduled.prefetch.similar, scheduled.outputs

    def ask(agent: AgentName, task: AgentTask) -> AgentOutput:
        if agent not in built:
            built[agent] = make_agent(agent, deps)
        return run_agent(built[agent], task)  # type: ignore[arg-type]

    return Agents(gather=gather, ask=ask)
