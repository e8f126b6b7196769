"""`faultline corpus check SUITE`: what a suite would build, decided without a lab (no root, seconds).

Every fault is planned as `corpus generate` would inject it (label, target, mechanism); a problem names the
incident, the suite field and the fix. The rules: docs/corpus.md#checking-a-suite-without-a-lab.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from faultline.corpus.spec import Suite


class PlannedFault(BaseModel):
    """One fault as generation would inject it."""

    model_config = ConfigDict(extra="forbid")

    label: str
    target: str | None = None  # None when it cannot be planned (see the problems)
    given: bool = False  # the suite named the target (else the seeded draw)
    mechanism: str | None = None  # the mechanism generation would use (named, else the seeded draw)


class PlannedIncident(BaseModel):
    """One incident of the suite: where it runs and what it injects."""

    model_config = ConfigDict(extra="forbid")

    incident_id: str
    scenario: str
    size: str
    seed: int
    healthy: bool
    faults: list[PlannedFault] = Field(default_factory=list)


class Problem(BaseModel):
    """Something generation would refuse, with the suite field it comes from and the fix."""

    model_config = ConfigDict(extra="forbid")

    incident_id: str
    field: str  # e.g. incidents.3.faults.0.target
    message: str
    fix: str = ""


class LabelMechanisms(BaseModel):
    """One label of the suite: every mechanism it has, and how many of the suite's faults each would cause."""

    model_config = ConfigDict(extra="forbid")

    label: str
    mechanisms: list[str]  # all the label's mechanisms, the standard one first
    planned: dict[str, int]  # mechanism -> faults of the suite planned with it (named or drawn)

    @property
    def unused(self) -> list[str]:
        """Mechanisms of the label no fault of the suite would use."""
        return [m for m in self.mechanisms if not self.planned.get(m)]


class SuiteCheck(BaseModel):
    """The plan of a suite and everything wrong with it."""

    model_config = ConfigDict(extra="forbid")

    suite: str
    incidents: list[PlannedIncident]
    problems: list[Problem]
    labels: list[LabelMechanisms] = Field(default_factory=list)  # each label of the suite, sorted

    @property
    def ok(self) -> bool:
        return not self.problems


def check_suite(suite: Suite) -> SuiteCheck:
    """Plan every incident of an already loaded suite (names checked by `load_suite`); see the module docstring."""
    from faultline.lab.faults import FaultError, choose_mechanism, fault_class, plan_target

    planned, problems = [], []
    for n, (incident_id, spec) in enumerate(zip(suite.incident_ids(), suite.incidents)):
        faults: list[PlannedFault] = []
        for k, fault in enumerate(spec.faults):
            where = f"incidents.{n}.faults.{k}"
            try:
                target = plan_target(spec.scenario, spec.size, fault.label, fault.target, seed=spec.seed * 100 + k)
            except FaultError as exc:
                field = f"{where}.target" if fault.target and "cannot target" in exc.message else f"{where}.label"
                problems.append(Problem(incident_id=incident_id, field=field, message=exc.message, fix=exc.fix or ""))
                target = None
            mechanism = None
            try:
                cls = fault_class(fault.label)
                mechanism = fault.mechanism or choose_mechanism(fault.label, spec.seed * 100 + k)
                cls.check_mechanism(mechanism)
            except FaultError as exc:
                if fault.mechanism and mechanism:  # an unknown label is reported above
                    problems.append(Problem(incident_id=incident_id, field=f"{where}.mechanism",
                                            message=exc.message, fix=exc.fix or ""))
                mechanism = None
            faults.append(PlannedFault(label=fault.label, target=target, given=fault.target is not None,
                                       mechanism=mechanism))
        pairs = [(f.label, f.target) for f in faults if f.target]
        for label, target in sorted({p for p in pairs if pairs.count(p) > 1}):
            problems.append(Problem(incident_id=incident_id, field=f"incidents.{n}.faults",
                                    message=f"{label} on {target} twice: the second injection has nothing to do",
                                    fix="give the second fault another target or another label"))
        planned.append(PlannedIncident(incident_id=incident_id, scenario=spec.scenario, size=spec.size,
                                       seed=spec.seed, healthy=spec.healthy, faults=faults))
    return SuiteCheck(suite=suite.suite, incidents=planned, problems=problems, labels=label_mechanisms(planned))


def label_mechanisms(incidents: list[PlannedIncident]) -> list[LabelMechanisms]:
    """Per implemented label of the plan: its mechanisms and how often each is planned."""
    from faultline.lab.faults import fault_class, fault_labels

    known = set(fault_labels())
    counts: dict[str, dict[str, int]] = {}
    for incident in incidents:
        for fault in incident.faults:
            if fault.label in known:
                per = counts.setdefault(fault.label, {})
                if fault.mechanism:
                    per[fault.mechanism] = per.get(fault.mechanism, 0) + 1
    return [LabelMechanisms(label=label, mechanisms=list(fault_class(label).mechanisms), planned=per)
            for label, per in sorted(counts.items())]


__all__ = ["LabelMechanisms", "PlannedFault", "PlannedIncident", "Problem", "SuiteCheck", "check_suite",
           "label_mechanisms"]
