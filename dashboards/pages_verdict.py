"""The verdict on the dashboards: the first section of an incident page and its cells in the incidents list.

From marts only: `mart_incidents` (the verdict's columns, its prose and its Markdown report) and
`mart_verdict_evidence` (its statements, each with the verbatim quote and the citation it rests on). The report's
prose - the deciding rule's wording, the root cause, fix and verification sentences and the disagreement
paragraph - comes from mart_incidents' verdict columns; a paragraph the verdict does not have is simply not shown.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from dashboards.html import Html, esc, facts, fmt, join, no_data, tag
from dashboards.query import MartReader

NO_VERDICT = "no verdict yet"
NO_VERDICT_FIX = ("Fuse one with faultline verdict INCIDENT (or faultline eval verdict --corpus DIR), then refresh "
                  "the marts (faultline marts refresh) and build again.")
SECTIONS = [("symptom", "Symptom"), ("evidence", "Evidence about this incident"),
            ("chain", "Event chain (the root event, then its echoes)"), ("root_cause", "Root cause"),
            ("disagreement", "When the sources disagreed"), ("fix", "Fix"), ("verification", "Verification")]
PROSE = {"symptom": "Symptom", "root_cause": "Root cause", "fix": "Fix", "verification": "Verification"}
SOURCE_NAMES = {"ticket": "ticket", "network": "network probe", "logs": "log line", "history": "resolved ticket",
                "docs": "documentation"}
STATUS_NOTES = {"VERIFIED": "VERIFIED: about this incident",
                "REFERENCE": "REFERENCE: another incident or the documentation, not proof it happened here"}


def headline(i: dict[str, Any]) -> str:
    """What the verdict says in a few words: labels on devices, 'no fault found', 'undetermined' or no verdict."""
    status = i.get("verdict_status")
    if status is None:
        return NO_VERDICT
    if status == "healthy":
        return "no fault found"
    if status == "undetermined":
        return "undetermined: no source names a fault"
    labels = ", ".join(i.get("verdict_labels") or []) or "fault"
    devices = i.get("verdict_devices") or []
    return f"{labels} on {', '.join(devices)}" if devices else labels


def verdict_cell(i: dict[str, Any]) -> Html:
    """The incidents list's verdict cell: the headline, marked with the verdict's status."""
    status = i.get("verdict_status") or "none"
    labels = i.get("verdict_labels") or []
    text = ", ".join(labels) if status == "fault" and labels else headline(i)
    return tag("span", text, class_=f"verdict-label verdict-{status}")


def disagreement_cell(i: dict[str, Any]) -> Html | None:
    """A badge naming the sources that disagreed with the verdict, or None when none did."""
    if not i.get("sources_disagree"):
        return None
    named = ", ".join(i.get("verdict_disagreeing") or []) or "a source"
    return tag("span", f"disagree: {named}", class_="badge disagree")


def _report_parts(i: dict[str, Any]) -> tuple[str | None, dict[str, str], str | None]:
    """(rule wording, {section: prose}, disagreement paragraph) from the verdict's mart columns."""
    prose = {key: i.get(f"verdict_{key}") for key in PROSE}
    return i.get("verdict_rule_text"), {k: v for k, v in prose.items() if v}, i.get("verdict_disagreement")


def _statement(row: dict[str, Any]) -> Html:
    """One statement: its status badge, text, the verbatim quote and the citation."""
    status = row["status"]
    where = [SOURCE_NAMES.get(row["source"], row["source"]), row["ref"]]
    cite = " ".join(str(w) for w in where if w)
    extra = [f"device {row['device']}" if row["device"] else None, row["detail"] or None]
    cite += "".join(f" · {e}" for e in extra if e)
    body = join([tag("span", STATUS_NOTES.get(status, status), class_=f"evidence-status status-{status}"),
                 tag("p", row["text"], class_="statement-text"),
                 tag("blockquote", row["quote"]),
                 tag("p", cite, class_="citation")])
    return tag("li", body, class_=f"statement {status.lower()}", data_status=status, data_source=row["source"],
               data_seq=row["seq"])


def verdict_section(reader: MartReader, incident: dict[str, Any]) -> Html:
    """The incident page's first section: headline, facts, statements by section, the disagreement, the report."""
    parts: list[Html] = [Html('<section id="verdict">'), tag("h2", "Verdict")]
    status = incident.get("verdict_status")
    if status is None:
        parts.append(tag("p", Html(tag("strong", NO_VERDICT.capitalize()) + esc(f": {NO_VERDICT_FIX}")),
                         class_="empty no-verdict"))
        parts.append(Html("</section>"))
        return join(parts)
    rows = reader.rows("mart_verdict_evidence", where={"incident_id": incident["incident_id"]}, order_by=["seq"])
    rule_text, prose, disagreement = _report_parts(incident)
    confidence = incident.get("verdict_confidence")
    parts.append(tag("p", join([tag("span", headline(incident), class_=f"verdict-headline verdict-{status}"),
                                tag("span", f"confidence {fmt(confidence)}", class_="verdict-confidence"),
                                tag("span", f"rule {incident.get('verdict_rule') or '-'}", class_="verdict-rule")]),
                     class_="headline"))
    if incident.get("sources_disagree"):
        parts.append(tag("p", join([disagreement_cell(incident),
                                    esc(f" {', '.join(incident.get('verdict_disagreeing') or [])} named something "
                                        "else; see below why the verdict stands.")]), class_="disagree-note"))
    parts.append(facts([("status", status), ("labels", incident.get("verdict_labels")),
                        ("category", incident.get("verdict_category")), ("devices", incident.get("verdict_devices")),
                        ("interfaces", incident.get("verdict_interfaces")), ("confidence", confidence),
                        ("deciding rule", f"{incident.get('verdict_rule') or '-'}"
                                          + (f": {rule_text}" if rule_text else "")),
                        ("sources agreeing", incident.get("verdict_agreeing")),
                        ("sources disagreeing", incident.get("verdict_disagreeing")),
                        ("fix known", incident.get("verdict_fix_known")),
                        ("without network", incident.get("verdict_without_network")),
                        ("accuracy 0-5", incident.get("verdict_accuracy")),
                        ("RCA F1 0-1", incident.get("verdict_rca_f1"))]))
    by_section: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_section[r["section"]].append(r)
    known = [key for key, _ in SECTIONS]
    sections = SECTIONS + [(key, key.replace("_", " ").capitalize()) for key in by_section if key not in known]
    for key, title in sections:
        statements = by_section.get(key, [])
        paragraph = disagreement if key == "disagreement" else prose.get(key)
        if key == "disagreement" and not paragraph and incident.get("sources_disagree"):
            paragraph = f"Disagreeing: {fmt(incident.get('verdict_disagreeing'))}."
        if not statements and not paragraph:
            continue
        parts.append(Html(f'<div class="verdict-part" data-section="{esc(key)}">'))
        parts.append(tag("h3", title))
        if paragraph:
            parts.append(tag("p", paragraph, class_="verdict-prose"))
        if statements:
            parts.append(tag("ol", join(_statement(r) for r in statements), class_="statements"))
        parts.append(Html("</div>"))
    if not rows:
        missing = reader.missing & {"mart_verdict_evidence"}
        parts.append(no_data("the verdict's statements are not in the marts", missing))
    if incident.get("verdict_report"):
        parts.append(Html(f"<details><summary>Verdict report as Markdown</summary>"
                          f"{tag('pre', incident['verdict_report'], class_='verdict-report')}</details>"))
    parts.append(Html("</section>"))
    return join(parts)
