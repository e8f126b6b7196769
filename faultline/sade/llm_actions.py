"""The actions the SADE `llm` policy may take, the phase gates that allow or refuse them, and their effect.

A model turn is one `Action`. `apply` carries it out on a `Walk` (the session plus what the policy
has covered so far) and returns an `Outcome`: a short text the model sees on its next turn and, for an
accepted submit, the matches to answer with (an empty list = healthy). A refused action changes
nothing on the network; its text says why, so the model can correct itself.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from faultline.sade.initial import Symptoms
from faultline.sade.matcher import Match, match
from faultline.sade.records import Flag, Step
from faultline.sade.scans import CHECKS_BY_NAME, PHASES
from faultline.sade.session import Session
from faultline.sade.skills import load_skills
from faultline.sade.unidentified import unidentified

ALL = "all"


class Action(BaseModel):
    """One decision of the model: what to do this turn (fields not used by the action stay null)."""

    model_config = ConfigDict(extra="forbid")

    action: Literal["scan", "advance", "read_skill", "submit"]
    device: str | None = Field(None, description="scan: a device name, or 'all'")
    check: str | None = Field(None, description="scan: a check of the current phase, or 'all'")
    phase: Literal["A", "B", "C", "D"] | None = Field(None, description="advance: the phase to enter "
                                                      "(default: the next one)")
    skill: str | None = Field(None, description="read_skill: a skill family")
    answer: Literal["matches", "healthy"] | None = Field(None, description="submit: the current matches, "
                                                         "or healthy")
    reason: str = Field("", description="one short sentence: why this action now")

    @model_validator(mode="after")
    def _fields_of_the_action(self) -> Action:
        needed = {"scan": ("device", "check"), "read_skill": ("skill",), "submit": ("answer",)}
        missing = [name for name in needed.get(self.action, ()) if not getattr(self, name)]
        if missing:
            raise ValueError(f"action '{self.action}' needs {', '.join(missing)}")
        return self


@dataclass
class Outcome:
    """What an action did: the text for the model, whether it was refused, and a submission if one was made."""

    text: str
    refused: bool = False
    submitted: list[Match] | None = None


def checks_of(phase: str) -> dict[str, Callable]:
    """The named checks of one phase (the names skills use in their probes), in scan order."""
    return {name: func for name, (owner, func) in CHECKS_BY_NAME.items() if owner == phase}


@dataclass
class Walk:
    """The policy's state over one session: current phase, coverage per device, skills read, turn log."""

    session: Session
    sym: Symptoms
    roles: dict[str, str]
    phase: str = "A"
    phases_run: set[str] = field(default_factory=set)
    done: dict[str, set[tuple[str, str]]] = field(default_factory=dict)  # device -> {(phase, check)}
    skills_read: list[str] = field(default_factory=list)

    def complete(self) -> set[str]:
        """Devices that have been through every check of every phase."""
        every = {(p, name) for p in PHASES for name in checks_of(p)}
        return {dev for dev, seen in self.done.items() if every <= seen}

    def matches(self) -> list[Match]:
        return match(self.session.flags, roles=self.roles, complete=self.complete())

    def must_cover(self) -> list[str]:
        """Devices a healthy answer needs fully scanned: the leads, or every device without a symptom."""
        return list(self.sym.leads) if self.sym.any and self.sym.leads else sorted(self.roles)

    def advance_targets(self) -> list[str]:
        """Phases that may be entered now: any phase whose predecessors were all scanned, but not the current one."""
        return [p for i, p in enumerate(PHASES)
                if p != self.phase and all(q in self.phases_run for q in PHASES[:i])]


def apply(w: Walk, a: Action) -> Outcome:
    """Carry out one action, or refuse it with the reason."""
    return {"scan": _scan, "advance": _advance, "read_skill": _read_skill, "submit": _submit}[a.action](w, a)


def _scan(w: Walk, a: Action) -> Outcome:
    mine = checks_of(w.phase)
    if a.check != ALL and a.check not in mine:
        owner = next((p for p in PHASES if a.check in checks_of(p)), None)
        why = (f"'{a.check}' is a phase {owner} check and the current phase is {w.phase}" if owner
               else f"there is no check named '{a.check}'")
        return Outcome(f"refused: {why}; phase {w.phase} checks are {sorted(mine)} or 'all'", refused=True)
    if a.device != ALL and a.device not in w.roles:
        return Outcome(f"refused: no device named '{a.device}' in this network", refused=True)
    devices = sorted(w.roles) if a.device == ALL else [a.device]
    chosen = mine if a.check == ALL else {a.check: mine[a.check]}
    steps_before, flags_before = len(w.session.steps), len(w.session.flags)
    w.session.phase = w.phase
    for name in devices:
        dev = w.session.device(name)
        for cname, check in chosen.items():
            check(w.session, dev)
            w.done.setdefault(name, set()).add((w.phase, cname))
    w.phases_run.add(w.phase)
    if a.reason:
        for step in w.session.steps[steps_before:]:
            step.note = f"{step.note} | model: {a.reason}" if step.note else f"model: {a.reason}"
    new = w.session.flags[flags_before:]
    probes = len(w.session.steps) - steps_before
    head = f"ran {a.check} (phase {w.phase}) on {a.device}: {probes} new probe call(s)"
    if not new:
        return Outcome(head + ", no new flags" + ("" if probes else " (already seen, or not applicable)"))
    return Outcome(head + "; new flags:\n" + "\n".join(compact_flag(f) for f in new))


def _advance(w: Walk, a: Action) -> Outcome:
    if a.phase is None:
        if w.phase == PHASES[-1]:
            return Outcome("refused: D is the last phase; name the phase to go back to (e.g. A for the next "
                           "lead) or submit", refused=True)
        target = PHASES[PHASES.index(w.phase) + 1]
    else:
        target = a.phase
    if target == w.phase:
        return Outcome(f"refused: already in phase {target}", refused=True)
    if target not in w.advance_targets():
        missing = [p for p in PHASES[:PHASES.index(target)] if p not in w.phases_run]
        return Outcome(f"refused: phase {target} needs phase(s) {', '.join(missing)} scanned at least once "
                       "first", refused=True)
    w.phase = target
    w.session.phase = target
    return Outcome(f"now in phase {target}; its checks are {sorted(checks_of(target))}")


def _read_skill(w: Walk, a: Action) -> Outcome:
    skills = {sk.family: sk for sk in load_skills()}
    skill = skills.get(a.skill or "")
    if skill is None:
        return Outcome(f"refused: no skill named '{a.skill}'; skills are {sorted(skills)}", refused=True)
    steps = w.session.steps
    steps.append(Step(seq=len(steps) + 1, phase=w.session.phase, tool="read_skill",  # type: ignore[arg-type]
                      args={"skill": skill.family}, output_digest=hashlib.sha256(skill.text.encode()).hexdigest()[:16],
                      note=a.reason))
    if skill.family in w.skills_read:
        return Outcome(f"skill {skill.family} was already read; its text is under 'Skills you have read'")
    w.skills_read.append(skill.family)
    probes = "; ".join(f"{p.check} on {p.on}" for p in skill.probes)
    return Outcome(f"skill {skill.family} read; its text is now under 'Skills you have read'"
                   + (f". Its probes: {probes}" if probes else ""))


def _submit(w: Walk, a: Action) -> Outcome:
    found = w.matches()
    if a.answer == "matches":
        if not found:
            return Outcome("refused: no fingerprint matches yet, so there is nothing to submit; keep scanning "
                           "the leads (or sweep) first", refused=True)
        return Outcome("submitted the matches", submitted=found)
    if found:
        return Outcome("refused: healthy contradicts the fingerprints that match ("
                       + ", ".join(f"{m.label} on {', '.join(m.devices)}" for m in found) + ")", refused=True)
    left = [d for d in w.must_cover() if d not in w.complete()]
    if left:
        return Outcome("refused: healthy needs every check of every phase run on " + ", ".join(left[:12])
                       + (f" and {len(left) - 12} more" if len(left) > 12 else "") + " first", refused=True)
    unexplained = unidentified(w.session, w.sym)
    if unexplained:  # symptoms in hand are never healthy: the answer is "fault not identified" where they point
        return Outcome("submitted as fault not identified: the users' checks fail and no fingerprint explains "
                       "them, so the network is not healthy", submitted=unexplained)
    return Outcome("submitted healthy", submitted=[])


def compact_flag(f: Flag) -> str:
    """One line per flag: where, what, which family it points at, and the evidence (shortened)."""
    extra = ", vs baseline" if f.vs_baseline else ""
    evidence = f.evidence if len(f.evidence) <= 160 else f.evidence[:157] + "..."
    return f"- {f.device or '(network)'} {f.kind} [{f.family or 'no family'}, {f.strength}{extra}]: {evidence}"
