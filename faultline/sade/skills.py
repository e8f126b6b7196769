"""The skills library: one folder per fault family under `prompts/skills/<family>/` with a `SKILL.md`
(for people and LLMs) and a `fingerprints.yml` (for the matcher). Loaded and validated here."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from faultline.errors import FaultlineError


def _skills_dir() -> Path:
    from faultline.llm.prompts import prompts_dir

    return prompts_dir() / "skills"


SKILLS_DIR = _skills_dir()  # the checkout's prompts/skills, or the copy bundled in a wheel


class Fingerprint(BaseModel):
    """Flags on one device that identify a label, and which devices the answer names."""

    model_config = ConfigDict(extra="forbid")

    id: str
    label: str
    all: list[str] = Field(default_factory=list)  # flag kinds that must all be on the device
    any: list[str] = Field(default_factory=list)  # at least one of these (when given)
    none: list[str] = Field(default_factory=list)  # none of these on the device
    roles: list[str] = Field(default_factory=list)  # the device's role must be one of these (when given)
    elsewhere: list[str] = Field(default_factory=list)  # one of these kinds must be flagged on some device
    devices: list[str] = Field(default_factory=lambda: ["self"])  # self | attr:<name> | flagged:<kind>
    resource: Literal["node", "interface"] = "node"  # NIKA v2 owner kind of the answer
    priority: int = 50  # the higher wins when several fingerprints match one device
    fallback: bool = False  # only once the device has been through every phase with nothing stronger
    # the check that shows which users the fault reached (its `flagged:` devices), run on the user positions
    # when the answer was found without them (a server-side fault found from a ticket)
    affected: str | None = None
    # checks run on the matched device before the answer stands: evidence another label would add there
    # (an interface down on an end host whose processes are gone is a crash, not `link_down`)
    confirm: list[str] = Field(default_factory=list)
    # whether the fault can fail a page for a user whose network answers (a dead DHCP server cannot: the
    # user's lease outlives it); when false the answer does not explain a failing page
    fails_pages: bool = True


class SkillProbe(BaseModel):
    """One probe a skill runs: a named check (faultline.sade.scans.CHECKS_BY_NAME) on some devices."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    check: str
    on: str  # lead | gateway | peers | senders | routers | lan | clients | a role (dhcp, dns, lb, web)


class Skill(BaseModel):
    """One family: its SKILL.md text (with a content hash) and its fingerprints."""

    model_config = ConfigDict(extra="forbid")

    family: str
    description: str
    text: str
    sha256: str
    fingerprints: list[Fingerprint]
    probes: list[SkillProbe] = Field(default_factory=list)

    @property
    def labels(self) -> list[str]:
        return sorted({fp.label for fp in self.fingerprints})


def _frontmatter(text: str, path: Path) -> dict:
    if not text.startswith("---\n"):
        raise FaultlineError(f"{path}: SKILL.md must start with a --- frontmatter block",
                             fix="add name, description and version between two --- lines")
    head, _, _ = text[4:].partition("\n---\n")
    meta = yaml.safe_load(head) or {}
    for key in ("name", "description", "version"):
        if key not in meta:
            raise FaultlineError(f"{path}: frontmatter lacks '{key}'", fix=f"add '{key}:' to the frontmatter")
    return meta


@lru_cache(maxsize=4)
def load_skills(folder: Path = SKILLS_DIR) -> tuple[Skill, ...]:
    """Every skill under `folder`, validated (frontmatter, fingerprint schema, folder = family)."""
    skills = []
    for skill_dir in sorted(p for p in folder.iterdir() if p.is_dir()):
        md, fp_file = skill_dir / "SKILL.md", skill_dir / "fingerprints.yml"
        if not md.is_file() or not fp_file.is_file():
            raise FaultlineError(f"{skill_dir}: a skill needs SKILL.md and fingerprints.yml",
                                 fix="add the missing file or remove the folder")
        text = md.read_text()
        meta = _frontmatter(text, md)
        data = yaml.safe_load(fp_file.read_text()) or {}
        if meta["name"] != skill_dir.name or data.get("family") != skill_dir.name:
            raise FaultlineError(f"{skill_dir}: name/family must equal the folder name",
                                 fix=f"set name: {skill_dir.name} and family: {skill_dir.name}")
        skills.append(Skill(family=skill_dir.name, description=str(meta["description"]), text=text,
                            sha256=hashlib.sha256(text.encode() + fp_file.read_bytes()).hexdigest(),
                            fingerprints=[Fingerprint.model_validate(f) for f in data.get("fingerprints", [])],
                            probes=[SkillProbe.model_validate(p) for p in data.get("probes", [])]))
    return tuple(skills)


def skill(family: str) -> Skill:
    """The skill of one family; a clear error for an unknown one."""
    for candidate in load_skills():
        if candidate.family == family:
            return candidate
    raise FaultlineError(f"no skill '{family}'", fix=f"one of: {', '.join(s.family for s in load_skills())}")


