"""The run overview (index) and the cost page, from marts only."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from dashboards.html import Html, esc, incident_href, join, link, no_data, table, tag
from dashboards.query import MartReader

RUNS_SHOWN = 25  # top-level runs; their sub-runs are grouped under them, not counted here
SUB_RUNS_LISTED = 100  # per kind under one run: a night's ingests may run into the hundreds


def _stats(text: str | None) -> str:
    """A run's stats JSON as short `key=value` text (nested values compacted)."""
    if not text:
        return "-"
    try:
        data = json.loads(text)
    except ValueError:
        return text[:200]
    if not isinstance(data, dict):
        return text[:200]
    items = [f"{k}={json.dumps(v) if isinstance(v, (dict, list)) else v}" for k, v in data.items() if k != "run_id"]
    out = ", ".join(items)
    return out if len(out) <= 240 else out[:239] + "…"


def _status(run: dict[str, Any]) -> str:
    """A run's status, with what went wrong in the runs started inside it."""
    text = run["status"] + (" (open)" if run["is_open"] else "")
    troubles = [f"{run['failed_sub_runs']} sub-run(s) failed" if run["failed_sub_runs"] else "",
                f"{run['sub_runs_with_failures']} with failures" if run["sub_runs_with_failures"] else "",
                f"{run['open_sub_runs']} open" if run["open_sub_runs"] else ""]
    return "; ".join([text, *(t for t in troubles if t)])


def sub_run_summary(kind: str, runs: list[dict[str, Any]]) -> str:
    """One kind of sub-run in a line: ``ingest_inventory ×20, all ok`` or ``ingest_logs ×3, 1 failed, 2 ok``."""
    ok = sum(r["status"] == "completed" for r in runs)
    if ok == len(runs):
        return f"{kind} ×{len(runs)}, all ok"
    counts = [(sum(r["status"] == "failed" for r in runs), "failed"),
              (sum(r["status"] == "completed_with_failures" for r in runs), "with failures"),
              (sum(r["is_open"] for r in runs), "open"), (ok, "ok")]
    return ", ".join([f"{kind} ×{len(runs)}", *(f"{n} {what}" for n, what in counts if n)])


def _sub_runs(reader: MartReader, run: dict[str, Any]) -> Html | str:
    """The run's sub-runs grouped by kind, each group a <details> listing its runs; '-' when it has none."""
    if not run["sub_runs"]:
        return "-"
    under = reader.rows("mart_runs", where={"top_run_id": run["run_id"], "is_top_level": False},
                        order_by=["started_at", "run_id"])
    groups: dict[str, list[dict[str, Any]]] = {}
    for sub in under:
        groups.setdefault(sub["kind"], []).append(sub)
    blocks = []
    for kind, subs in groups.items():
        bad = [s for s in subs if s["status"] != "completed"]
        listed = table(["started", "status", "seconds", "failures", "counts", "error", "run id"],
                       [[s["started_at"], s["status"] + (" (open)" if s["is_open"] else ""), s["seconds"],
                         s["failures"], _stats(s["stats"]), (s["error"] or "-")[:300], s["run_id"]]
                        for s in subs[:SUB_RUNS_LISTED]], class_="sub-runs", digits=1,
                       row_classes=[None if s["status"] == "completed" else "sub-run-failed"
                                    for s in subs[:SUB_RUNS_LISTED]])
        more = (tag("p", f"… and {len(subs) - SUB_RUNS_LISTED} more.", class_="note")
                if len(subs) > SUB_RUNS_LISTED else "")
        blocks.append(Html(f'<details class="sub-runs{" has-failed" if bad else ""}" data-kind="{esc(kind)}">'
                           f"<summary>{esc(sub_run_summary(kind, subs))}</summary>{listed}{esc(more)}</details>"))
    return join(blocks)


def runs_section(reader: MartReader) -> list[Html]:
    """"Latest runs": the newest top-level runs, each with the runs started inside it grouped by kind."""
    parts = [tag("h2", "Latest runs")]
    columns = reader.columns("mart_runs")
    if columns and "is_top_level" not in columns:  # built by an older Faultline: it cannot tell sub-runs apart
        return [*parts, no_data("the runs mart predates sub-runs (faultline marts refresh rebuilds it)")]
    runs = reader.rows("mart_runs", where={"is_top_level": True}, order_by=["started_at desc", "run_id"],
                       limit=RUNS_SHOWN)
    if not runs:
        return [*parts, no_data("no run recorded", reader.missing & {"mart_runs"})]
    parts.append(table(["started", "kind", "status", "seconds", "failures", "LLM calls", "counts", "sub-runs",
                        "run id"],
                       [[r["started_at"], r["kind"], _status(r), r["seconds"], r["failures"], r["llm_calls"],
                         _stats(r["stats"]), _sub_runs(reader, r), r["run_id"]] for r in runs],
                       class_="runs", digits=1,
                       row_classes=["sub-run-failed" if r["failed_sub_runs"] else None for r in runs]))
    parts.append(tag("p", f"Showing the {len(runs)} most recent run(s) started on their own; the runs started "
                          "inside one (a nightly's ingests, an ingest's inventories) are grouped under it by kind.",
                     class_="note"))
    return parts


def index_page(reader: MartReader) -> Html:
    """Latest runs, per-method counts and scores, agreement and failures."""
    parts: list[Html] = runs_section(reader)

    parts.append(tag("h2", "Methods"))
    methods = reader.rows("mart_method_overview", order_by=["method_family", "method"])
    methods.sort(key=lambda m: m["method_family"] != "verdict")  # the verdict leads, astra and sade beside it
    if methods:
        parts.append(table(
            ["method", "family", "analysed", "scored", "score", "mean score", "mean accuracy", "share acc ≥3",
             "mean RCA F1", "detection", "no answer", "LLM calls", "probe calls", "mean s"],
            [[m["method"], m["method_family"], m["analysed"], m["scored"], m["score_metric"], m["mean_score"],
              m.get("mean_accuracy"), m["share_accuracy_ge3"], m.get("mean_rca_f1"), m["mean_detection"],
              m["not_submitted"], m["llm_calls"], m["probe_calls"], m["mean_analysis_s"]] for m in methods],
            class_="methods", row_classes=[f"family-{m['method_family']}" for m in methods]))
        parts.append(tag("p", "Score: ASTRA's rubric accuracy 0-5; diagnoses' v1 RCA F1 0-1 (no answer = 0). The "
                              "verdict, one answer fused from ticket, logs, history, docs and the network, is "
                              "scored both ways.", class_="note"))
    else:
        parts.append(no_data("no analysis stored", reader.missing & {"mart_method_overview"}))

    parts.append(tag("h2", "ASTRA and the network diagnosis: agreement"))
    agreement = reader.rows("mart_agreement", order_by=["analyst", "method"])
    if agreement:
        counts = Counter((r["analyst"], r["method"], r["agreement"]) for r in agreement)
        parts.append(table(["ASTRA analyst", "diagnosis method", "agreement", "incidents"],
                           [[a, m, level, n] for (a, m, level), n in sorted(counts.items())], class_="agreement"))
    else:
        parts.append(no_data("no incident analysed by both sides", reader.missing & {"mart_agreement"}))

    parts.append(tag("h2", "Failures"))
    failures = reader.rows("mart_failures", order_by=["failures desc", "source", "stage", "error_type"])
    if failures:
        parts.append(table(["source", "stage", "error", "failures", "incidents", "runs", "last incident",
                            "last seen", "last message"],
                           [[f["source"], f["stage"], f["error_type"], f["failures"], f["incidents"], f["runs"],
                             f["last_incident"], f["last_seen"], (f["last_message"] or "")[:300]] for f in failures],
                           class_="failures"))
    elif "mart_failures" in reader.missing:
        parts.append(no_data("failures are unknown", {"mart_failures"}))
    else:
        parts.append(tag("p", "No failure recorded.", class_="ok"))
    parts.append(tag("p", link("incidents.html", "All incidents →")))
    return join(parts)


def cost_page(reader: MartReader) -> Html:
    """LLM calls, tokens, probe calls and time per method and per analysis."""
    rows = reader.rows("mart_cost", order_by=["incident_id", "method"])
    if not rows:
        return no_data("no analysis stored, so no cost", reader.missing & {"mart_cost"})
    totals: dict[str, dict[str, float]] = {}
    for r in rows:
        t = totals.setdefault(r["method"], {"analyses": 0, "llm_calls": 0, "llm_errors": 0, "tokens": 0,
                                             "llm_s": 0.0, "cost": 0.0, "priced": 0, "probes": 0, "seconds": 0.0})
        t["analyses"] += 1
        t["llm_calls"] += r["llm_calls"]
        t["llm_errors"] += r["llm_errors"]
        t["tokens"] += r["total_tokens"]
        t["llm_s"] += r["llm_s"]
        t["probes"] += r["probe_calls"] or 0
        t["seconds"] += r["analysis_s"] or 0.0
        if r["cost_usd"] is not None:
            t["cost"] += r["cost_usd"]
            t["priced"] += 1
    parts = [tag("h2", "Per method"),
             table(["method", "analyses", "LLM calls", "LLM errors", "tokens", "LLM s", "cost USD", "probe calls",
                    "wall s", "wall s per analysis"],
                   [[m, int(t["analyses"]), int(t["llm_calls"]), int(t["llm_errors"]), int(t["tokens"]), t["llm_s"],
                     t["cost"] if t["priced"] else None, int(t["probes"]), t["seconds"], t["seconds"] / t["analyses"]]
                    for m, t in sorted(totals.items())], class_="cost-methods"),
             tag("p", "Cost is litellm's price-map estimate; '-' when no call was priced (the deterministic analyst "
                      "makes no LLM call).", class_="note"),
             tag("h2", "Per analysis"),
             table(["incident", "method", "driver", "rounds", "LLM calls", "tokens", "LLM s", "cost USD",
                    "probe calls", "tool calls", "wall s"],
                   [[link(incident_href(r["incident_id"]), r["incident_id"]), r["method"], r["driver"],
                     r["rounds"], r["llm_calls"], r["total_tokens"], r["llm_s"], r["cost_usd"], r["probe_calls"],
                     r["tool_calls"], r["analysis_s"]] for r in rows], class_="cost-analyses")]
    return join(parts)
