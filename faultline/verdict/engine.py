"""One verdict per incident: the sources weighed by the rule table, the report written from what they cite.

`build(conn, settings, inputs)` takes the stored ASTRA analysis and network diagnosis (`sources.load_inputs`),
decides with `rules.decide`, gathers citations (`evidence`) and fixes (`fixes`), and returns a `Verdict` with its
Markdown report (`report.render`). It writes nothing; `store.save_verdict` does. `refine` runs it per round.
"""

from __future__ import annotations

import re

import duckdb

from faultline.config import Settings
from faultline.verdict import evidence as ev
from faultline.verdict.fixes import DocSection, Precedent, doc_sections, precedents
from faultline.verdict.records import Opinion, Verdict
from faultline.verdict.report import render
from faultline.verdict.rules import Decision, decide
from faultline.verdict.sources import Inputs, opinions

NO_FIX_YET = "No fix is known yet"
_LEAD = re.compile(r"^(?:fix(?:ed)?|resolution|workaround)\s*:\s*", re.IGNORECASE)  # a note's own "Fix:" label


def _category(labels: list[str]) -> str | None:
    from faultline.truth.taxonomy import taxonomy

    entry = taxonomy().get(labels[0]) if labels else None
    return entry.category if entry else None  # a NIKA label's category, or an event class's


def _summary(label: str) -> str:
    from faultline.truth.taxonomy import taxonomy

    entry = taxonomy().get(label)
    return entry.summary if entry else ""


def _devices_text(devices: list[str], interfaces: list[str]) -> str:
    where = ", ".join(devices) if devices else "no device named"
    return where + (f" (interface {', '.join(interfaces)})" if interfaces else "")


def _disagreement(decision: Decision, ops: list[Opinion], healthy: bool) -> str:
    if not decision.disagreeing:
        return ""
    said = "; ".join(f"{o.source}: {', '.join(o.labels) if o.labels else 'no fault'} ({o.note})"
                     for o in ops if o.source in decision.disagreeing)
    won = "no fault" if healthy else ", ".join(decision.labels)
    return (f"The sources disagreed. {said}. The verdict is {won} by rule {decision.rule.id}: {decision.rule.why}")


def _fix(labels: list[str], devices: list[str], objects: list[str], found: list[Precedent],
         docs: list[DocSection], chain: dict | None = None) -> tuple[str, bool]:
    where = ", ".join(devices) or "the affected device"
    target = f" The state to undo, as the probes show it: \"{objects[0]}\"." if objects else ""
    with_fix = [p for p in found if p.fixes]
    if with_fix:
        action = _LEAD.sub("", ev.quote_of(with_fix[0].fixes[0]))
        text = f"On {where}: {action} (as in resolved ticket {with_fix[0].ticket_id}).{target}"
        return text, True
    if docs:
        text = (f"On {where}: follow the documentation for {', '.join(labels)} ({docs[0].title}): "
                f"{ev.quote_of(docs[0].text)}{target}")
        return text, True
    if chain:
        from faultline.astra.report import generic_guidance

        return f"On {where}: {generic_guidance(chain)}{target}", False
    text = (f"{NO_FIX_YET} for {', '.join(labels)} on {where}: no resolved incident or documentation section "
            f"covers this fault. Start from the evidence above.{target}")
    return text, False


def _verification(inputs: Inputs, flags: list, claims: ev.Claims) -> str:
    parts = []
    strong = [f for f in flags if f.device] if inputs.network else []
    if strong:
        step = inputs.network.step_for(strong[0])
        probe = step.tool if step else strong[0].scan
        shown = ev.quote_of(strong[0].evidence)
        parts.append(f"Re-run {probe} on {strong[0].device} and check that \"{shown}\" is gone.")
    checks = claims.of("verification")
    if checks:
        parts.append(f"In {checks[0].citation.ref} it was confirmed by: {checks[0].quote}")
    parts.append(f"Then repeat the ticket's own check: {inputs.incident.title.strip()}.")
    return " ".join(parts)


def build(conn: duckdb.DuckDBPyConnection, settings: Settings, inputs: Inputs) -> Verdict:
    """The verdict for loaded inputs (see the module docstring)."""
    ops = opinions(inputs)
    decision = decide(ops)
    healthy = decision.rule.decide == "healthy"
    labels, devices = decision.labels, decision.devices
    if labels and not devices and decision.rule.decide != "network" and inputs.report is not None:
        devices = list(inputs.report.devices)  # the deciding source names none: the devices ASTRA's agents named
    claims = ev.Claims()
    ev.ticket_claim(claims, inputs)
    flags = ev.network_flags(inputs.network, labels, devices) if labels else []
    ev.network_claims(claims, inputs.network, flags)
    if healthy:
        ev.healthy_claim(claims, inputs.network)
    rows = ev.scope_rows(conn, inputs, settings.log_timezone) if inputs.astra else []
    shown_in_logs = ev.log_claims(claims, rows, labels, devices) if labels else 0
    logs = next((o for o in ops if o.source == "logs"), None)
    if logs is not None and logs.labels and "logs" in decision.disagreeing:
        ev.log_claims(claims, rows, logs.labels, logs.devices, section="disagreement",
                      lead="The logs point elsewhere: ")
    from faultline.astra.report import event_chain_of

    chain = event_chain_of(inputs.outputs, labels[0] if labels else None)  # ASTRA's chain of the verdict's event
    ev.chain_claims(claims, chain)
    before = inputs.incident.opened_at
    found = precedents(conn, labels, before=before, similar=inputs.similar) if labels else []
    docs = doc_sections(conn, labels) if labels else []
    ev.reference_claims(claims, found, docs)
    interfaces = ev.interfaces(inputs.network, flags, devices)
    symptom = f"Reported: {inputs.incident.title.strip()}."
    observed = [c for c in claims.of("symptom") if c.citation.source == "network"]
    if observed:
        symptom += f" {observed[0].text}: \"{observed[0].quote}\"."
    fix_known = False
    if labels:
        name = ", ".join(labels)
        status = "fault"
        root = f"{name} ({_category(labels)}) on {_devices_text(devices, interfaces)}: {_summary(labels[0])}."
        root += "".join(f" And {lb}: {_summary(lb)}." for lb in labels[1:] if _summary(lb))
        shown = [c for c in claims.of("evidence")]
        if shown:
            root += f" Shown by the {shown[0].citation.source}: {shown[0].text} — \"{shown[0].quote}\"."
        if not shown_in_logs and rows:
            root += f" The {len(rows)} log lines in scope show nothing about {name}."
        if chain:
            from faultline.astra.report import chain_sentence

            root += " " + chain_sentence(chain)
        fix, fix_known = _fix(labels, devices, [f.evidence for f in flags if f.strength == "strong"], found, docs,
                              chain)
        verification = _verification(inputs, flags, claims)
    elif healthy:
        status = "healthy"
        root = "No fault: the network was probed and shows none."
        if logs is not None and logs.labels:
            root += (f" The logs in scope named {', '.join(logs.labels)}; if it happened it has cleared, since the "
                     "network no longer shows it.")
        fix = "Nothing to fix on the network as probed."
        verification = f"Repeat the ticket's own check: {inputs.incident.title.strip()}; if it still fails, reopen."
    else:
        status = "undetermined"
        root = ("Undetermined: no source names a fault. " +
                "; ".join(f"{o.source}: {o.note}" for o in ops if o.note))
        fix = "No fix can be proposed before the fault is found."
        verification = "Collect what is missing (the device logs around the ticket's time, a network probe) and rerun."
    if not labels and not healthy and inputs.without_network:
        root += f" No network evidence: {inputs.without_network}."
    verdict = Verdict(
        incident_id=inputs.incident.incident_id, status=status, labels=labels, category=_category(labels)
        if labels else ("no_fault" if healthy else None), devices=devices, interfaces=interfaces,
        confidence=decision.confidence if (labels or healthy) else 0.0, rule=decision.rule.id,
        rule_text=decision.rule.why, sources_used=[o.source for o in ops if o.labels or o.healthy],
        agreeing=decision.agreeing, disagreeing=decision.disagreeing, opinions=ops,
        without_network=inputs.without_network, fix_known=fix_known, symptom=symptom, root_cause=root, fix=fix,
        verification=verification, disagreement=_disagreement(decision, ops, healthy), claims=claims.items,
        astra_analyst=inputs.astra.analyst if inputs.astra else None,
        sade_method=inputs.network.method if inputs.network else None)
    return verdict.model_copy(update={"text": render(verdict)})
