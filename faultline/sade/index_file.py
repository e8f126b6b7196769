"""The fault index file, `prompts/skills/index.yml`, as one typed and validated record.

SADE's domain rules are data there (families per lead-symptom kind, redirections, triage looks, ticket rules,
roles, service symptoms, protocol skills, the pressure sweep's and second look's checks); `load_index` refuses a
file whose parts do not fit together, naming the file and the fix. The keys: docs/sade.md#step-3-fault-index.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from faultline.errors import FaultlineError
from faultline.sade.scans import CHECKS_BY_NAME
from faultline.sade.skills import SKILLS_DIR, load_skills


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Redirect(_Closed):
    """A flag whose evidence another family owns: that family's search goes first."""

    flag: str
    family: str
    why: str


class TicketRule(_Closed):
    """Words of a ticket that make a lead symptom of `kind` (see `faultline.sade.ticket`)."""

    kind: str
    words: list[str]  # regular expressions over the lower-cased title and description
    foreign: bool = False  # match only when an address the words capture belongs to no device
    lead: list[str] = Field(default_factory=list)  # roles of a named device that can be the lead, in order
    default: str | None = None  # the role whose first device leads when none is named; `users`: every user


class DeviceRoles(_Closed):
    """Device roles by what a fault on them does."""

    infrastructure: frozenset[str]  # carries everyone's traffic: a fault there cuts off whoever is behind it
    service: frozenset[str]  # answers the users' requests: a fault there can fail a page


class PressureSweep(_Closed):
    """The look at the servers when no user position shows a symptom: these checks, in order, on these roles."""

    roles: list[str]
    checks: list[str]


class FaultIndex(_Closed):
    """The whole index file."""

    version: int
    symptoms: dict[str, list[str]]  # lead-symptom kind -> skill families to try, most likely first
    triage: dict[str, str] = Field(default_factory=dict)  # lead-symptom kind -> its one cheap look (a check)
    ticket: list[TicketRule] = Field(default_factory=list)
    rules: list[Redirect] = Field(default_factory=list)
    roles: DeviceRoles
    service_families: frozenset[str]  # families whose faults fail a page wherever they sit
    service_symptoms: frozenset[str]  # lead-symptom kinds of a failing service request
    protocol_skills: dict[str, str]  # family -> the running-configuration line that shows its protocol runs
    protocol_free_checks: frozenset[str]  # checks that read no routing protocol's state
    pressure_sweep: PressureSweep
    isolated_look: list[str]  # the second look's checks on an isolated device
    isolated_gateway_look: list[str] = Field(default_factory=list)  # ... then on its first hop
    own_look: list[str] = Field(default_factory=list)  # the own-device look's checks on an answered device
    silenced_look: list[str] = Field(default_factory=list)  # ... on an answered device cut off from every peer
    route_suspect_look: list[str] = Field(default_factory=list)  # the routes look's checks on a router they point at
    ping_blind_checks: frozenset[str] = frozenset()  # checks that read nothing a ping between two hosts needs
    quiet_on_pings: frozenset[str] = frozenset()  # labels whose fault cannot stop a ping: no failing pair's cause

    @model_validator(mode="after")
    def _parts_fit_together(self) -> FaultIndex:
        kinds = set(self.symptoms)
        unknown_kinds = (set(self.triage) | self.service_symptoms | {r.kind for r in self.ticket}) - kinds
        if unknown_kinds:
            raise ValueError(f"symptom kinds {sorted(unknown_kinds)} are not under `symptoms:`")
        checks = {*self.triage.values(), *self.protocol_free_checks, *self.pressure_sweep.checks,
                  *self.isolated_look, *self.isolated_gateway_look,
                  *self.own_look, *self.silenced_look, *self.route_suspect_look, *self.ping_blind_checks}
        if checks - set(CHECKS_BY_NAME):
            raise ValueError(f"checks {sorted(checks - set(CHECKS_BY_NAME))} are not checks of "
                             f"faultline.sade.scans (one of: {', '.join(sorted(CHECKS_BY_NAME))})")
        if self.roles.infrastructure & self.roles.service:
            raise ValueError(f"roles {sorted(self.roles.infrastructure & self.roles.service)} are both "
                             "infrastructure and service")
        for rule in self.ticket:
            for word in rule.words:
                try:
                    re.compile(word)
                except re.error as exc:
                    raise ValueError(f"ticket rule {rule.kind}: {word!r} is no regular expression ({exc})") from exc
        return self

    def families(self) -> set[str]:
        """Every skill family the index names."""
        return ({f for fams in self.symptoms.values() for f in fams} | {r.family for r in self.rules}
                | self.service_families | set(self.protocol_skills))


@lru_cache(maxsize=2)
def load_index(path: Path = SKILLS_DIR / "index.yml") -> FaultIndex:
    """The index file beside the skills it names, validated; a FaultlineError naming the file and what is wrong
    otherwise."""
    fix = "correct the entries named above (the file's comments say what each part holds)"
    try:
        index = FaultIndex.model_validate(yaml.safe_load(path.read_text()) or {})
    except yaml.YAMLError as exc:
        raise FaultlineError(f"{path}: not YAML: {exc}", fix=fix) from exc
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'the file'}: {e['msg'].removeprefix('Value error, ')}"
                            for e in exc.errors())
        raise FaultlineError(f"{path}: not a valid fault index: {problems}", fix=fix) from exc
    unknown = index.families() - {skill.family for skill in load_skills(path.parent)}
    if unknown:
        raise FaultlineError(f"{path}: families {sorted(unknown)} have no skill in {path.parent}",
                             fix="name a skill folder's family, or add the skill")
    return index
