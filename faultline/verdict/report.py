"""The verdict as Markdown: the answer first, then identification, disagreements, resolution and references.

Every statement that rests on a source is followed by its citation and the verbatim quote; statements about this
incident (ticket, network, logs) are marked apart from reference material (resolved tickets, documentation).
"""

from __future__ import annotations

from faultline.verdict.records import Verdict, VerdictCheck, VerdictClaim

REFERENCE_HEADING = ("**Reference (other incidents and documentation; how such a fault is found and fixed, not proof "
                     "that it happened here).**")
_SOURCE = {"ticket": "ticket", "network": "network probe", "logs": "log line", "history": "resolved ticket",
           "docs": "documentation"}


def _cite(c: VerdictClaim) -> str:
    where = f" {c.citation.detail}" if c.citation.detail and c.citation.source in ("docs",) else ""
    return f"[{_SOURCE[c.citation.source]} {c.citation.ref}{where}]"


def _line(c: VerdictClaim) -> str:
    return f"- {c.text} {_cite(c)}: \"{c.quote}\""


def _check_line(k: VerdictCheck) -> str:
    where = ", ".join(k.checked_devices or k.asked_devices)
    said = {"confirmed": "the network, asked again, confirms it",
            "refuted": "the network, asked again, shows no sign of it",
            "not_checked": "it could not be checked"}[k.outcome]
    return f"The {k.source} pointed at {k.label} on {where}; {said}: {k.reason}."


def headline(v: Verdict) -> str:
    """One line: what the verdict is, where, how sure."""
    if v.status == "fault":
        where = f" on {', '.join(v.devices)}" if v.devices else ""
        return f"{', '.join(v.labels)}{where} (confidence {v.confidence:.2f})"
    if v.status == "healthy":
        return f"no fault found (confidence {v.confidence:.2f})"
    return "undetermined: no source names a fault"


def render(v: Verdict) -> str:
    """The whole verdict report."""
    agree = ", ".join(v.agreeing) or "none"
    lines = [f"# Verdict: {v.incident_id}: {headline(v)}", "",
             f"Decided by rule `{v.rule}`: {v.rule_text}", "",
             f"Sources agreeing: {agree}. Disagreeing: {', '.join(v.disagreeing) or 'none'}."]
    if v.without_network:
        alone = ("**Without a network.** This verdict stands on the ticket, its logs, similar resolved tickets and "
                 f"documentation alone: {v.without_network}.")
        lines += ["", alone]
    lines += ["", "## Identification", "", f"**Symptom.** {v.symptom}", "",
              "**Evidence about this incident.**", ""]
    about = [c for c in v.claims if c.status == "VERIFIED" and c.section in ("symptom", "evidence")]
    lines += [_line(c) for c in about] or ["- (no source about this incident shows the fault)"]
    chain = [c for c in v.claims if c.section == "chain"]
    if chain:
        lines += ["", "**Event chain (the root event, then its echoes).**", ""] + [_line(c) for c in chain]
    lines += ["", f"**Root cause.** {v.root_cause}", ""]
    if v.disagreement:
        lines += ["## When the sources disagreed", "", v.disagreement, ""]
        lines += [_line(c) for c in v.claims if c.section == "disagreement"]
        lines += [""]
    if v.checks:
        lines += ["## Follow-ups on the network", ""]
        for k in v.checks:
            lines.append(f"- {_check_line(k)}")
            lines += [f"  - {p}" for p in k.probes]
        lines += [""]
    lines += ["## Resolution", "", f"**Fix.** {v.fix}", "", f"**Verification.** {v.verification}", ""]
    refs = [c for c in v.claims if c.status == "REFERENCE"]
    if refs:
        lines += [REFERENCE_HEADING, ""] + [_line(c) for c in refs] + [""]
    fields = [("Labels", ", ".join(v.labels)), ("Category", v.category or ""), ("Devices", ", ".join(v.devices)),
              ("Interfaces", ", ".join(v.interfaces)), ("Confidence", f"{v.confidence:.2f}")]
    lines += [f"- {k}: {val}" for k, val in fields if val]
    return "\n".join(lines).rstrip() + "\n"
