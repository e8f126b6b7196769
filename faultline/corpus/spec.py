"""Incident specs and suites: what `faultline corpus generate` builds, as YAML.

A suite names its incidents (scenario, size, seed, healthy or faults) and its timeline; built-in suites live in
`faultline/corpus/suites/NAME.yml`. The format, with an example: docs/corpus.md#suite-files.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from faultline.errors import FaultlineError

SUITES_DIR = Path(__file__).with_name("suites")
DEFAULT_EPOCH = datetime(2026, 1, 5, tzinfo=timezone.utc)


class FaultSpec(BaseModel):
    """One fault of an incident: a NIKA v1 label, optionally on a given device."""

    model_config = ConfigDict(extra="forbid")

    label: str
    target: str | None = None
    mechanism: str | None = None  # one of the label's mechanisms (`faultline lab faults --json`); None: seeded draw
    params: dict[str, Any] = Field(default_factory=dict)


class IncidentSpec(BaseModel):
    """One incident to generate: a lab, a seed, and either healthy or a list of faults."""

    model_config = ConfigDict(extra="forbid")

    id: str | None = None
    scenario: str
    size: str = "s"
    seed: int = 0
    healthy: bool = False
    faults: list[FaultSpec] = Field(default_factory=list)

    @model_validator(mode="after")
    def _healthy_xor_faults(self) -> IncidentSpec:
        if self.healthy == bool(self.faults):
            raise ValueError("give either `healthy: true` or a non-empty `faults` list")
        return self


class Suite(BaseModel):
    """A named list of incident specs."""

    model_config = ConfigDict(extra="forbid")

    suite: str = Field(pattern=r"^[a-z][a-z0-9_-]{0,40}$")
    historical: bool = False
    # the suite's own timeline: incident k's logs, ticket and stamps are moved into the slot
    # [epoch + k * slot_minutes, +slot_minutes), so a suite's incidents never overlap in the syslog archive.
    # A history suite's epoch lies far enough before its backlog's that every history ticket is resolved
    # before any backlog ticket is opened.
    epoch: datetime = DEFAULT_EPOCH
    slot_minutes: int = Field(60, ge=10, le=24 * 60)
    incidents: list[IncidentSpec]

    @field_validator("epoch")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        if value.tzinfo is None:
            raise ValueError("give the epoch with its offset, e.g. 2026-01-05T00:00:00Z")
        return value.astimezone(timezone.utc)

    def slots(self) -> dict[str, datetime]:
        """Each incident id -> where its slot starts (by its place in the suite, so `--only` keeps it)."""
        return {incident_id: self.slot_start(k) for k, incident_id in enumerate(self.incident_ids())}

    def slot_start(self, position: int) -> datetime:
        """Where the incident at `position` (0-based, its place in the suite) starts on the suite's timeline."""
        return self.epoch + position * self.slot

    @property
    def slot(self) -> timedelta:
        """The length of one incident's slot."""
        return timedelta(minutes=self.slot_minutes)

    def end(self) -> datetime:
        """The end of the last incident's slot."""
        return self.slot_start(len(self.incidents))

    def incident_ids(self) -> list[str]:
        """Each incident's id: the spec's own, else `<suite>-<nnn>` by position."""
        ids = [spec.id or f"{self.suite}-{n:03d}" for n, spec in enumerate(self.incidents, start=1)]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise FaultlineError(f"suite {self.suite}: duplicate incident ids {', '.join(dupes)}",
                                 fix="give every incident a unique id")
        return ids


def write_suite(name: str, doc: dict[str, Any], comment: str) -> Path:
    """Write a generated suite to `SUITES_DIR/NAME.yml`: `comment` (the lines saying how it was made, each starting
    with `# `) above the YAML of `doc`."""
    path = SUITES_DIR / f"{name}.yml"
    path.write_text(comment + yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=120))
    return path


def suite_names() -> list[str]:
    """The built-in suites."""
    return sorted(p.stem for p in SUITES_DIR.glob("*.yml"))


def load_suite(ref: str | Path) -> Suite:
    """A suite from a YAML file, or a built-in one by name; a clear error naming the file and field."""
    path = Path(ref)
    if not path.is_file():
        builtin = SUITES_DIR / f"{ref}.yml"
        if not builtin.is_file():
            raise FaultlineError(f"no suite file or built-in suite {str(ref)!r}",
                                 fix=f"give a YAML file or one of: {', '.join(suite_names())}")
        path = builtin
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise FaultlineError(f"{path}: not valid YAML ({exc})", fix="fix the suite file") from None
    try:
        suite = Suite.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise FaultlineError(f"{path}: {where}: {first['msg']}", fix="see the suite format in faultline/corpus/spec.py"
                             ) from None
    suite.incident_ids()
    _check_names(suite, path)
    return suite


def _check_names(suite: Suite, path: Path) -> None:
    """Scenarios, sizes and labels must exist; a label this lab cannot inject is caught at generation."""
    from faultline.lab.scenarios import SIZES, scenario_names
    from faultline.nika.labels import catalogue

    labels = {info.label for info in catalogue()}
    for n, spec in enumerate(suite.incidents):
        if spec.scenario not in scenario_names():
            raise FaultlineError(f"{path}: incidents.{n}.scenario: unknown scenario {spec.scenario!r}",
                                 fix=f"use one of: {', '.join(scenario_names())}")
        if spec.size not in SIZES:
            raise FaultlineError(f"{path}: incidents.{n}.size: unknown size {spec.size!r}", fix="use s, m or l")
        for k, fault in enumerate(spec.faults):
            if fault.label not in labels:
                raise FaultlineError(f"{path}: incidents.{n}.faults.{k}.label: {fault.label!r} is not a NIKA v1 label",
                                     fix="see `faultline lab faults --all`")
