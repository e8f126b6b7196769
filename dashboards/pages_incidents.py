"""The incidents list and one page per incident: the verdict first, then the ticket, ground truth, ASTRA's report
with its claims and evidence, and every network diagnosis with its trace and submission (marts only)."""

from __future__ import annotations

from collections import defaultdict

from dashboards.html import Html, esc, facts, fmt, incident_href, join, link, no_data, table, tag
from dashboards.pages_verdict import disagreement_cell, verdict_cell, verdict_section
from dashboards.query import MartReader

NO_TRUTH = "Ground truth is not known for this incident (an open ticket without a recorded cause)."


def incidents_list_page(reader: MartReader, incidents: list[dict]) -> Html:
    """Every incident with its truth, the verdict (label, devices, confidence, agreeing sources, a badge when
    sources disagreed, its accuracy), then ASTRA's and SADE's answers and their scores."""
    if not incidents:
        return no_data("no incident in the warehouse", reader.missing & {"mart_incidents"})
    backlog = [i for i in incidents if not i["is_historical"]]
    history = [i for i in incidents if i["is_historical"]]
    parts: list[Html] = []
    for title, group in (("Backlog and analysed incidents", backlog), ("History (resolved)", history)):
        if not group:
            continue
        parts.append(tag("h2", f"{title}: {len(group)}"))
        parts.append(table(
            ["incident", "title", "verdict", "verdict devices", "confidence", "sources agreeing", "disagreement",
             "truth", "verdict accuracy", "ASTRA", "accuracy", "SADE", "RCA F1", "agreement", "ticket", "scenario"],
            [[link(incident_href(i["incident_id"]), i["incident_id"]), i["ticket_title"], verdict_cell(i),
              i.get("verdict_devices"), i.get("verdict_confidence"), i.get("verdict_agreeing"),
              disagreement_cell(i), _truth_short(i), i.get("verdict_accuracy"),
              i["astra_label"] or i["astra_category"], i["astra_accuracy"], _sade_short(i), i["sade_rca_f1"],
              i["agreement"], i["ticket_id"], f"{i['scenario'] or '-'} / {i['size'] or '-'}"] for i in group],
            class_="incidents", row_classes=["disagree" if i.get("sources_disagree") else None for i in group]))
    return join(parts)


def _truth_short(i: dict) -> str:
    if not i["has_truth"]:
        return "unknown"
    return "healthy" if not i["truth_is_faulty"] else ", ".join(i["truth_labels"] or []) or "faulty"


def _sade_short(i: dict) -> str | None:
    if i["sade_status"] is None:
        return None
    if i["sade_status"] != "submitted":
        return i["sade_status"]
    return ", ".join(i["sade_labels"] or []) or ("anomaly" if i["sade_is_anomaly"] else "no fault")


def incident_page(reader: MartReader, incident: dict) -> Html:
    """One incident: the verdict, then ticket, ground truth, ASTRA report + claims + evidence, SADE trace +
    submission."""
    iid = incident["incident_id"]
    parts: list[Html] = [tag("p", link("../incidents.html", "← all incidents"), class_="note"),
                         verdict_section(reader, incident),
                         Html('<section id="ticket">'), tag("h2", "Ticket"),
                         facts([("ticket", incident["ticket_id"]), ("title", incident["ticket_title"]),
                                ("status", incident["ticket_status"]), ("priority", incident["ticket_priority"]),
                                ("filed", incident["ticket_created_at"]),
                                ("scenario / size", f"{incident['scenario'] or '-'} / {incident['size'] or '-'}"),
                                ("kind", "history (resolved)" if incident["is_historical"] else "backlog")])]
    if incident["ticket_description"]:
        parts.append(tag("pre", incident["ticket_description"], class_="ticket-description"))
    parts.append(Html("</section>"))
    parts.append(_truth(incident))
    parts.append(_answers(incident))
    parts.append(_astra(reader.rows("mart_incident_reports", where={"incident_id": iid}, order_by=["analyst"]),
                        reader.rows("mart_incident_evidence", where={"incident_id": iid},
                                    order_by=["analyst", "claim_seq"]), reader))
    parts.append(_scope(reader.rows("mart_log_scope", where={"incident_id": iid}, order_by=["round", "entry_seq"]),
                        reader))
    parts.append(_diagnoses(reader.rows("mart_sade_submissions", where={"incident_id": iid}, order_by=["method"]),
                            reader.rows("mart_sade_trace", where={"incident_id": iid}, order_by=["method", "seq"]),
                            reader))
    return join(parts)


def _truth(i: dict) -> Html:
    body: list[Html] = [Html('<section id="truth">'), tag("h2", "Ground truth")]
    if not i["has_truth"]:
        body.append(tag("p", NO_TRUTH, class_="empty"))
    else:
        body.append(facts([("faulty", i["truth_is_faulty"]), ("labels", i["truth_labels"]),
                           ("devices", i["truth_devices"]), ("category", i["truth_category"])]))
        if i["truth_resolution_note"]:
            body.append(tag("pre", i["truth_resolution_note"], class_="resolution-note"))
    body.append(Html("</section>"))
    return join(body)


def _answers(i: dict) -> Html:
    rows = [["Verdict" + (f" ({i['verdict_rule']})" if i.get("verdict_rule") else ""),
             i.get("verdict_labels") or i.get("verdict_status") or "no verdict yet", i.get("verdict_devices"),
             "accuracy 0-5 / RCA F1", f"{fmt(i.get('verdict_accuracy'))} / {fmt(i.get('verdict_rca_f1'))}",
             f"agreeing: {fmt(i.get('verdict_agreeing'))}"],
            ["ASTRA" + (f" ({i['astra_analyst']})" if i["astra_analyst"] else ""),
             i["astra_label"] or i["astra_category"], i["astra_devices"], "accuracy 0-5", i["astra_accuracy"],
             f"{i['astra_rounds']} round(s)" if i["astra_rounds"] else "-"],
            ["SADE", _sade_short(i), i["sade_devices"], "RCA F1 0-1", i["sade_rca_f1"],
             f"{i['sade_probe_calls']} probe call(s)" if i["sade_probe_calls"] is not None else "-"]]
    return join([tag("h2", "Answers"), table(["method", "answer", "devices", "score", "value", "effort"], rows,
                                             class_="answers"),
                 tag("p", f"Agreement: {i['agreement'] or 'not both analysed'}", class_="note")])


def _section(section_id: str, title: str, found: bool, reader: MartReader, *, empty: str,
             marts: set[str]) -> list[Html]:
    """A page section's opening, with a no-data note (naming any of `marts` not built) when nothing was found."""
    parts: list[Html] = [Html(f'<section id="{section_id}">'), tag("h2", title)]
    if not found:
        parts.append(no_data(empty, reader.missing & marts))
    return parts


def _by(rows: list[dict], key: str) -> dict[str, list[dict]]:
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        groups[r[key]].append(r)
    return groups


def _astra(reports: list[dict], claims: list[dict], reader: MartReader) -> Html:
    parts = _section("astra", "ASTRA report", bool(reports), reader, empty="ASTRA has not analysed this incident",
                     marts={"mart_incident_reports"})
    by_analyst = _by(claims, "analyst")
    for head in reports:
        parts.append(tag("h3", f"{head['analyst']}: final round {head['final_round']}"))
        parts.append(facts([("label", head["label"]), ("category", head["category"]), ("devices", head["devices"]),
                            ("judge mean", head["judge_mean"]), ("symptom", head["symptom"]),
                            ("root cause", head["root_cause"]), ("fix", head["fix"]),
                            ("verification", head["verification"])]))
        parts.append(Html(f"<details><summary>Report as Markdown</summary>{tag('pre', head['report_text'])}</details>"))
        real = by_analyst.get(head["analyst"], [])
        if not real:
            parts.append(tag("p", "No claim was stored for this analysis.", class_="empty"))
            continue
        parts.append(tag("h3", f"Claims and evidence ({len(real)})"))
        parts.append(table(
            ["#", "round", "agent", "tag", "claim", "evidence (verbatim)", "status", "confidence", "found by"],
            [[c["claim_seq"], c["claim_round"], c["agent"],
              tag("span", c["tag"] or "untagged", class_=f"tag {c['tag'] or ''}".strip()), c["claim_text"],
              tag("blockquote", c["evidence_quote"]) if c["evidence_quote"] else "(no quote)",
              tag("span", c["evidence_status"], class_=f"status-{c['evidence_status']}"), c["confidence"],
              c["evidence_method"]] for c in real], class_="claims"))
    parts.append(Html("</section>"))
    return join(parts)


def _scope(rows: list[dict], reader: MartReader) -> Html:
    """The log lines ASTRA read: the first round's scope, then any round that read differently."""
    parts = _section("scope", "Logs read (scope)", bool(rows), reader, empty="no log scope was recorded",
                     marts={"mart_log_scope"})
    by_round = _by(rows, "round")
    shown: tuple | None = None
    for round_, entries in by_round.items():
        key = tuple((e["device"], e["window_start"], e["window_end"], e["clock_offset_s"]) for e in entries)
        if key == shown:
            continue
        shown = key
        lines = sum(e["lines_in_scope"] or 0 for e in entries)
        title = f"round {round_}" + (" (widened)" if any(e["widened"] for e in entries) else "") + f": {lines} lines"
        parts.append(tag("h3", title))
        parts.append(table(["device", "why", "ticket words", "clock offset (s)", "lines"],
                           [[e["device"] or "-", e["reason"], e["matched"] or "", e["clock_offset_s"] or "",
                             e["lines_in_scope"] if e["lines_in_scope"] is not None else ""] for e in entries],
                           class_="scope"))
    parts.append(Html("</section>"))
    return join(parts)


def _diagnoses(submissions: list[dict], steps: list[dict], reader: MartReader) -> Html:
    parts = _section("sade", "Network diagnosis (SADE and baselines)", bool(submissions or steps), reader,
                     empty="no network diagnosis is stored for this incident",
                     marts={"mart_sade_submissions", "mart_sade_trace"})
    by_method = _by(steps, "method")
    answers = {sub["method"]: sub for sub in submissions}
    for method in sorted(set(answers) | set(by_method), key=lambda m: (m != "sade", m)):
        sub = answers.get(method)
        parts.append(tag("h3", f"{method}: submission"))
        if sub is None:
            parts.append(tag("p", "No submission is stored for this method.", class_="empty"))
        else:
            parts.append(Html(f'<div class="submission" data-method="{esc(method)}">'))
            parts.append(facts([("status", sub["status"]), ("is anomaly", sub["is_anomaly"]), ("labels", sub["labels"]),
                                ("devices", sub["devices"]), ("families", sub["families"]),
                                ("fingerprints", sub["fingerprints"]), ("summary", sub["summary"]),
                                ("policy / backend", f"{sub['policy'] or '-'} / {sub['backend'] or '-'}"),
                                ("probe calls", sub["probe_calls"]), ("tool calls", sub["tool_calls"]),
                                ("seconds", sub["elapsed_s"]), ("error", sub["error"])]))
            parts.append(tag("pre", f"NIKA v1: {sub['v1'] or '-'}\nNIKA v2: {sub['v2'] or '-'}", class_="nika"))
            parts.append(Html("</div>"))
        trace = by_method.get(method, [])
        if trace:
            parts.append(tag("h3", f"{method}: trace ({len(trace)} steps)"))
            parts.append(table(["#", "phase", "tool", "args", "flags", "probes", "ms", "note"],
                               [[s["seq"], s["phase"], s["tool"], s["args"], s["flags"], s["probe_calls"],
                                 s["elapsed_ms"], s["note"]] for s in trace], class_=f"steps {method}", digits=1))
    parts.append(Html("</section>"))
    return join(parts)
