"""Run SADE on one incident: a backend, a policy, and the typed Diagnosis with its submission."""

from __future__ import annotations

import time
from collections.abc import Callable

from faultline.network.backend import Backend
from faultline.nika.answers import RootCause, SubmissionV1, SubmissionV2
from faultline.nika.labels import v2_fault_type
from faultline.sade.matcher import Match
from faultline.sade.records import Diagnosis, Submission
from faultline.sade.session import Breadth, Session


class NoSubmission(Exception):
    """Raised by a policy that ends without an answer (e.g. out of turns): recorded as status no_submission."""


def build_submission(matches: list[Match]) -> Submission:
    """Both NIKA forms from the matches; no match = not anomalous."""
    devices: list[str] = []
    labels: list[str] = []
    causes: list[RootCause] = []
    for m in matches:
        devices += [d for d in m.devices if d not in devices]
        if not m.label:  # "fault not identified": anomalous, its devices, no label (nothing supports one)
            continue
        if m.label not in labels:
            labels.append(m.label)
        for resource in m.resources:
            cause = RootCause(resource_id=resource, fault_type=v2_fault_type(m.label))
            if cause not in causes:
                causes.append(cause)
    anomalous = bool(matches)
    summary = "; ".join(f"{m.label or 'fault not identified'} on {', '.join(m.devices)} ({m.family}/{m.fingerprint}: "
                        f"{m.evidence[0] if m.evidence else ''})" for m in matches) or "no symptom and no "\
        "fingerprint after the full sweep: healthy"
    return Submission(v1=SubmissionV1(is_anomaly=anomalous, faulty_devices=devices, root_cause_name=labels),
                      v2=SubmissionV2(is_anomaly=anomalous, root_causes=causes),
                      families=sorted({m.family for m in matches}),
                      fingerprints=[f"{m.family}/{m.fingerprint}" for m in matches], summary=summary)


def diagnose(backend: Backend, *, incident_id: str, method: str = "sade", policy: str = "deterministic",
             run_policy: Callable[[Session], list[Match]] | None = None, ticket: str = "",
             breadth: Breadth | None = None) -> Diagnosis:
    """Diagnose one incident. `method` is sade (phase-gated) or flat; `run_policy` overrides the policy;
    `ticket` is what the user reported (title and description), a lead when the network shows nothing; `breadth`
    how far the second look asks (default: every user position, one page each)."""
    from faultline.sade import policy as policies

    t0 = time.perf_counter()
    session = Session(backend, ticket=ticket, breadth=breadth or Breadth())
    chosen = run_policy or (policies.flat if method == "flat" else policies.deterministic)
    try:
        matches = chosen(session)
        submission, status, error = build_submission(matches), "submitted", None
    except NoSubmission as exc:  # a policy that gave up is scored as NIKA's missing submission, not an error
        submission, status, error = None, "no_submission", str(exc)
    except Exception as exc:  # noqa: BLE001 - one broken incident is a row, never a crashed batch
        submission, status, error = None, "error", f"{type(exc).__name__}: {exc}"
    return Diagnosis(incident_id=incident_id, method=method, policy=policy, backend=backend.kind,  # type: ignore[arg-type]
                     submission=submission, steps=session.steps, flags=session.flags,
                     probe_calls=session.probe_calls, tool_calls=len(session.steps),
                     elapsed_s=round(time.perf_counter() - t0, 3), status=status, error=error)  # type: ignore[arg-type]
