"""SADE's `llm` policy: the deterministic policy's twin, with a language model choosing every next action.

After the initial scan the model answers one JSON action a turn among those the phase gates allow (`llm_actions`,
stage ``sade.policy``, ``prompts/sade/``), within ``settings.sade_max_turns`` and one reminder at half of them;
out of turns the current matches are the answer, else `NoSubmission`. A turn whose model call fails (`LLMError`),
or whose move the model has already asked for twice, takes the gated walk's deterministic next step instead
(`gated_step`) and records it as an ``llm_fallback`` step (docs/llm.md#when-a-model-fails).
In full: docs/sade.md#the-llm-policy.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from faultline.sade.engine import NoSubmission
from faultline.sade.initial import Symptoms, initial_scan
from faultline.sade.llm_actions import (
    ALL,
    Action,
    Walk,
    apply,
    checks_of,
    compact_flag,
)
from faultline.sade.matcher import Match
from faultline.sade.records import Step
from faultline.sade.scans import PHASES
from faultline.sade.session import Session
from faultline.sade.unidentified import unidentified

if TYPE_CHECKING:
    import duckdb

    from faultline.config import Settings

STAGE = "sade.policy"
FALLBACK_TOOL = "llm_fallback"  # the step that records a turn the deterministic walk took for a failed model
SAME_MOVE_ALLOWED = 2  # a move asked for again (a counter read twice) is the model's; a third time is going round
TURN_PROMPT, RULES_PROMPT, REMINDER_PROMPT = "sade/turn", "sade/system", "sade/reminder"
MAX_FLAGS_SHOWN = 40  # the newest ones; older flags are counted, not listed, to keep each turn small
MAX_PAIRS_SHOWN = 30


def llm_policy(session: Session, *, settings: Settings, conn: duckdb.DuckDBPyConnection, model: str,
               incident_id: str | None = None, run_id: str | None = None) -> list[Match]:
    """Diagnose with `model` choosing the actions; the matches to submit (empty = healthy).

    Raises `NoSubmission` when the budget ends with no submit and no match. A turn whose model gives no valid
    answer within the gateway's attempts (`LLMError`), or that asks for a move a third time, takes `gated_step`
    instead, recorded as a step.
    """
    from faultline.llm import LLMError, complete_json, load_prompt, model_failure

    sym = initial_scan(session)
    walk = Walk(session=session, sym=sym, roles={d.name: d.role for d in session.devices()})
    index = _index(session, sym)
    session.phase = walk.phase
    rules = load_prompt(RULES_PROMPT).text
    reminder = load_prompt(REMINDER_PROMPT).text
    budget = settings.sade_max_turns
    remind_at = math.ceil(budget / 2)
    history: list[str] = []
    asked: Counter[str] = Counter()  # each move the model chose, by its description
    last = "(first turn: only the reachability scan has run)"
    for turn in range(1, budget + 1):
        variables = _variables(walk, turn=turn, budget=budget, rules=rules, index=index, history=history,
                               last=last, reminder=reminder if turn == remind_at else "")
        try:
            action = Action.model_validate(complete_json(settings, conn, model=model, prompt=TURN_PROMPT,
                                                         variables=variables, schema=Action,
                                                         guide=action_schema(walk), stage=STAGE,
                                                         incident_id=incident_id, run_id=run_id))
            taken_by = ""
        except LLMError as exc:
            action = gated_step(walk)
            _record_fallback(walk, turn, action, model_failure(exc))
            taken_by = " (the model failed: the deterministic walk's step)"
        else:
            asked[_describe(action)] += 1
            if asked[_describe(action)] > SAME_MOVE_ALLOWED:  # a model going round in circles spends the budget
                repeated, action = _describe(action), gated_step(walk)
                _record_fallback(walk, turn, action, f"model repeated itself: '{repeated}' asked "
                                                     f"{asked[repeated]} times")
                taken_by = " (the model repeated itself: the deterministic walk's step)"
        phase_before, steps_before = walk.phase, len(session.steps)
        outcome = apply(walk, action)
        if taken_by:
            for step in session.steps[steps_before:]:
                step.note = f"{step.note} | deterministic fallback, turn {turn}" if step.note else \
                    f"deterministic fallback, turn {turn}"
        history.append(f"{turn}. [{phase_before}] {_describe(action)}{taken_by} -> {outcome.text.splitlines()[0]}")
        if outcome.submitted is not None:
            return outcome.submitted
        last = outcome.text
    found = walk.matches() or unidentified(session, sym)
    if found:
        return found  # out of turns: what the fingerprints (or the failing checks) say beats no answer
    raise NoSubmission(f"the model did not submit within {budget} turns and no fingerprint matched")


def gated_step(w: Walk) -> Action:
    """The deterministic next step of the phase-gated walk, for a turn the model could not take: submit the matches
    when a fingerprint matches; else scan every check of the current phase on the devices to cover (the leads, or
    every device) that have not had them, all devices at once when more than one is left (a turn lost to a model
    must not cost the walk its budget); else advance to the next phase (or back to the first one left unscanned);
    else submit (healthy, or "fault not identified" when the users' checks fail)."""
    if w.matches():
        return Action(action="submit", answer="matches")
    cover = w.must_cover()

    def left(phase: str) -> list[str]:
        wanted = {(phase, name) for name in checks_of(phase)}
        return [d for d in cover if not wanted <= w.done.get(d, set())]

    todo = left(w.phase)
    if todo:
        return Action(action="scan", device=todo[0] if len(todo) == 1 else ALL, check="all")
    later = PHASES[PHASES.index(w.phase) + 1:]
    unscanned = [p for p in PHASES if left(p)]
    if later and later[0] in w.advance_targets():
        return Action(action="advance", phase=later[0])
    if unscanned and unscanned[0] in w.advance_targets():
        return Action(action="advance", phase=unscanned[0])
    return Action(action="submit", answer="healthy")


def _record_fallback(w: Walk, turn: int, action: Action, why: str) -> None:
    """An ``llm_fallback`` step: the turn, why the model's move was not taken and the step taken instead (the
    diagnosis stores it with its steps, so a user sees which turns were not the model's)."""
    steps = w.session.steps
    taken = _describe(action)
    steps.append(Step(seq=len(steps) + 1, phase=w.session.phase, tool=FALLBACK_TOOL,  # type: ignore[arg-type]
                      args={"turn": turn, "step": taken},
                      note=f"{why}; the deterministic walk's next step was taken: {taken}"))


def llm_policy_runner(settings: Settings, *, model: str | None = None, incident_id: str,
                      run_id: str | None = None,
                      conn: duckdb.DuckDBPyConnection | None = None) -> tuple[Callable[[Session], list[Match]], str]:
    """A policy callable for `engine.diagnose` and its name ``llm:<model>``.

    The model is `model`, else ``settings.sade_llm_model``. Without `conn` the warehouse is opened
    from the settings for the run (for its ``llm_calls`` rows) and closed after.
    """
    from faultline.errors import FaultlineError

    chosen = model or settings.sade_llm_model
    if not chosen:
        raise FaultlineError("the llm policy needs a model",
                             fix="pass --model (a litellm model string such as openai/gpt-4o-mini) or set "
                                 "FAULTLINE_SADE_LLM_MODEL")

    def run(session: Session) -> list[Match]:
        from faultline import db

        own = conn is None
        connection = db.open_warehouse(settings) if own else conn
        try:
            return llm_policy(session, settings=settings, conn=connection, model=chosen, incident_id=incident_id,
                              run_id=run_id)
        finally:
            if own:
                connection.close()

    return run, f"llm:{chosen}"


def action_schema(w: Walk) -> dict[str, Any]:
    """`Action`'s JSON schema with this turn's names as enums: the session's devices, the phase's checks, the
    skill families: sent to a server that takes a schema (and the local model's guided decoder), which then
    cannot spell a device that is not there. Answers are still judged by `Action`, so the policy's own refusals
    (which cost a turn and say why) stay what a model without schema support gets."""
    from faultline.sade.skills import load_skills

    schema = Action.model_json_schema()
    names = {"device": sorted(w.roles) + ["all"], "check": sorted(checks_of(w.phase)) + ["all"],
             "skill": sorted(sk.family for sk in load_skills())}
    for field, members in names.items():
        spec = schema["properties"][field]
        spec["anyOf"] = [{"type": "string", "enum": members}, {"type": "null"}]
    return schema


def _variables(w: Walk, *, turn: int, budget: int, rules: str, index: str, history: list[str], last: str,
               reminder: str) -> dict[str, Any]:
    from faultline.sade.skills import load_skills

    texts = {sk.family: sk.text for sk in load_skills()}
    return {
        "rules": rules, "turn": str(turn), "max_turns": str(budget), "turns_left": str(budget - turn + 1),
        "phase": w.phase, "phases_run": ", ".join(p for p in PHASES if p in w.phases_run) or "none yet",
        "devices": ", ".join(f"{name}: {role}" for name, role in sorted(w.roles.items())),
        "symptoms": _symptoms(w.sym), "leads": ", ".join(w.sym.leads) or "none", "index": index + _redirects(w),
        "flags": _flags(w), "matches": _matches(w.matches()),
        "history": "\n".join(history) or "nothing yet", "last": last,
        "skills": "\n\n".join(texts[f] for f in w.skills_read) or "none",
        "allowed": _allowed(w, sorted(texts)), "reminder": f"\nReminder: {reminder}" if reminder else "",
    }


def _index(session: Session, sym: Symptoms) -> str:
    """SADE's fault index for this incident: each lead symptom and the skill families that own it, in order."""
    from faultline.sade.index import classify, families_for

    lines = []
    for lead in classify(session, sym):
        failing = f" (failing with {', '.join(lead.peers[:4])})" if lead.peers else ""
        lines.append(f"- {lead.kind} at {lead.lead}{failing} -> skills to try: {', '.join(families_for(lead.kind))}")
    return "\n".join(lines) or "- no lead symptom: a bottom-up sweep (A, B, C, D on every device) decides"


def _redirects(w: Walk) -> str:
    from faultline.sade.index import redirects

    families = list(dict.fromkeys(redirects(w.session, {f.device for f in w.session.flags if f.device})))
    return f"\n- flags so far also point at: {', '.join(families)}" if families else ""


def _symptoms(sym: Symptoms) -> str:
    if not sym.any:
        return "none: every pair reaches every other and the service checks pass"
    lines = [f"- {src} -> {dst}: {status}" for src, dst, status in sym.failing[:MAX_PAIRS_SHOWN]]
    if len(sym.failing) > MAX_PAIRS_SHOWN:
        lines.append(f"- ... and {len(sym.failing) - MAX_PAIRS_SHOWN} more failing pairs")
    lines += [f"- service {url}: {problem}" for url, problem in sym.services]
    return "\n".join(lines)


def _flags(w: Walk) -> str:
    flags = w.session.flags
    if not flags:
        return "none"
    shown = [compact_flag(f) for f in flags[-MAX_FLAGS_SHOWN:]]
    if len(flags) > MAX_FLAGS_SHOWN:
        shown.insert(0, f"({len(flags) - MAX_FLAGS_SHOWN} older flags not listed)")
    return "\n".join(shown)


def _matches(found: list[Match]) -> str:
    if not found:
        return "none"
    return "\n".join(f"- {m.label} on {', '.join(m.devices)} ({m.family}/{m.fingerprint}"
                     f"{', residual: only after a full scan' if m.fallback else ''})"
                     f"{': ' + m.evidence[0][:120] if m.evidence else ''}" for m in found)


def _allowed(w: Walk, skills: list[str]) -> str:
    checks = sorted(checks_of(w.phase))
    lines = [(f'- scan: {{"action": "scan", "device": <a device above or "all">, "check": <one of {checks} '
              f'or "all">}} (phase {w.phase} checks only)')]
    targets = w.advance_targets()
    if targets:
        lines.append(f'- advance: {{"action": "advance", "phase": <one of {targets}>}}')
    else:
        lines.append(f"- advance: not allowed yet (scan phase {w.phase} at least once first)")
    lines.append(f'- read_skill: {{"action": "read_skill", "skill": <one of {skills}>}}')
    found = w.matches()
    if found:
        lines.append('- submit: {"action": "submit", "answer": "matches"} (submits the fingerprints listed above)')
    else:
        left = [d for d in w.must_cover() if d not in w.complete()]
        if left:
            lines.append("- submit: not allowed yet (no fingerprint matches; healthy needs every check of every "
                         f"phase on {len(left)} more device(s): {', '.join(left[:8])})")
        else:
            lines.append('- submit: {"action": "submit", "answer": "healthy"} (the scans came out clean)')
    lines.append('Every action may carry "reason": one short sentence.')
    return "\n".join(lines)


def _describe(a: Action) -> str:
    if a.action == "scan":
        return f"scan {a.check} on {a.device}"
    if a.action == "advance":
        return f"advance to {a.phase or 'next phase'}"
    if a.action == "read_skill":
        return f"read_skill {a.skill}"
    return f"submit {a.answer}"
