"""Refinement that can change the verdict: ask the network about what the logs point at, then fuse again.

Round 1 is `engine.build` over the stored analyses; for at most `MAX_CHECKS` faults the logs name on devices and
the network did not, the label's skills check those devices (`faultline.sade.crosscheck`); round 2 is the same
rule table over the new network answer: docs/verdict.md#refinement-the-network-is-asked-about-what-the-logs-point-at.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import duckdb

from faultline.config import Settings
from faultline.sade.crosscheck import CrossCheck
from faultline.sade.store import StoredDiagnosis
from faultline.verdict.engine import build
from faultline.verdict.records import Opinion, Verdict, VerdictCheck, VerdictRound
from faultline.verdict.report import render
from faultline.verdict.sources import Inputs, log_opinion

MAX_CHECKS = 2
Checker = Callable[[str, list[str]], CrossCheck]


def _round(v: Verdict, n: int, action: str) -> VerdictRound:
    return VerdictRound(round=n, status=v.status, labels=list(v.labels), devices=list(v.devices),
                        confidence=v.confidence, rule=v.rule, action=action)


def _explained(label: str, by: list[str]) -> bool:
    from faultline.truth.taxonomy import taxonomy

    tax = taxonomy()
    return any(label in tax[b].explains for b in by if b in tax)


def leads(first: Verdict, inputs: Inputs) -> list[tuple[str, list[str]]]:
    """(label, devices) the logs name that the network's answer does not and no verdict label explains."""
    if inputs.network is None:
        return []
    logs: Opinion | None = log_opinion(inputs.outputs)
    if logs is None or not logs.devices:
        return []
    devices = list(dict.fromkeys(logs.devices))
    return [(lb, devices) for lb in logs.labels
            if lb not in first.labels and not _explained(lb, first.labels)][:MAX_CHECKS]


def _with_checks(net: StoredDiagnosis, checks: list[CrossCheck]) -> StoredDiagnosis:
    """The network answer with the checks' steps and flags appended, and the confirmed labels added to it."""
    from faultline.nika.answers import RootCause, SubmissionV1, SubmissionV2
    from faultline.nika.labels import v2_fault_type

    steps, flags = list(net.steps), list(net.flags)
    seen = {(f.device, f.kind, f.evidence) for f in flags}
    for check in checks:
        offset = len(steps)
        steps += [s.model_copy(update={"seq": offset + s.seq}) for s in check.steps]
        for f in check.flags:
            if (f.device, f.kind, f.evidence) not in seen:
                seen.add((f.device, f.kind, f.evidence))
                flags.append(f)
    confirmed = [c for c in checks if c.outcome == "confirmed"]
    v1, v2, families, summary = net.v1, net.v2, list(net.families), net.summary
    if confirmed:
        base = v1 or SubmissionV1(is_anomaly=False)
        names = list(base.root_cause_name) if base.is_anomaly else []
        devices = list(base.faulty_devices) if base.is_anomaly else []
        causes = list(v2.root_causes) if v2 is not None and v2.is_anomaly else []
        for c in confirmed:
            names += [c.label] if c.label not in names else []
            devices += [d for d in c.matched_devices if d not in devices]
            causes += [RootCause(resource_id=r, fault_type=v2_fault_type(c.label)) for r in c.resources]
        v1 = SubmissionV1(is_anomaly=True, faulty_devices=devices, root_cause_name=names)
        v2 = SubmissionV2(is_anomaly=True, root_causes=causes)
        found = "; ".join(f"{c.label} on {', '.join(c.matched_devices)} (cross-check: {c.reason})" for c in confirmed)
        summary = f"{summary}; {found}" if summary and base.is_anomaly else found
    return dataclasses.replace(net, status="submitted" if confirmed else net.status, v1=v1, v2=v2,
                               families=families, summary=summary, steps=steps, flags=flags)


def _record(check: CrossCheck, offset: int) -> VerdictCheck:
    probes = [f"step {offset + s.seq}: {s.tool} on {s.args.get('dev', 'the network')}, output {s.output_digest}"
              for s in check.steps]
    return VerdictCheck(label=check.label, source="logs", asked_devices=check.asked_devices,
                        checked_devices=check.checked_devices, outcome=check.outcome, reason=check.reason,
                        matched_devices=check.matched_devices, probes=probes, probe_calls=check.probe_calls)


def _ask(checker: Checker, label: str, devices: list[str]) -> CrossCheck:
    """One follow-up; a network that cannot be asked (a lab gone, a broken snapshot) is a result, not a crash."""
    from faultline.errors import FaultlineError

    try:
        return checker(label, devices)
    except Exception as exc:  # noqa: BLE001 - the verdict of round 1 stands, with the reason
        why = exc.message if isinstance(exc, FaultlineError) else f"{type(exc).__name__}: {exc}"
        return CrossCheck(label=label, asked_devices=devices, outcome="not_checked",
                          reason=f"the network could not be asked: {why}")


def refine(conn: duckdb.DuckDBPyConnection, settings: Settings, inputs: Inputs,
           checker: Checker | None = None) -> tuple[Verdict, Verdict]:
    """(final verdict, round-1 verdict): round 1 fused from the stored analyses, then the network follow-ups."""
    first = build(conn, settings, inputs)
    first = first.model_copy(update={"rounds": [_round(first, 1, "fused the stored analyses")]})
    todo = leads(first, inputs) if checker is not None else []
    if not todo or checker is None or inputs.network is None:
        return first, first
    results = [_ask(checker, label, devices) for label, devices in todo]
    offset, records = len(inputs.network.steps), []
    for r in results:
        records.append(_record(r, offset))
        offset += len(r.steps)
    network = _with_checks(inputs.network, results)
    second = build(conn, settings, dataclasses.replace(inputs, network=network))
    action = "asked the network about " + "; ".join(f"{r.label} on {', '.join(r.asked_devices)} ({r.outcome})"
                                                    for r in records)
    second = second.model_copy(update={"checks": records,
                                       "rounds": [*first.rounds, _round(second, 2, action)]})
    return second.model_copy(update={"text": render(second)}), first
