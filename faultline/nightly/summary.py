"""The nightly run's summary: what was ingested, counts per method, failures, skips, scores, stage times — and
its Markdown."""

from __future__ import annotations

from statistics import mean

from pydantic import BaseModel, ConfigDict, Field

from faultline.nightly.corpus import FolderIngest
from faultline.outcome import METHODS, Method, Outcome


class Failure(BaseModel):
    """One incident x method that failed tonight (its traceback is in run_failures)."""

    model_config = ConfigDict(extra="forbid")
    incident_id: str
    method: Method
    error_type: str
    message: str


class Skip(BaseModel):
    """One incident x method that cannot run, with why."""

    model_config = ConfigDict(extra="forbid")
    incident_id: str
    method: Method
    reason: str


class Analysis(BaseModel):
    """What tonight's analysis brings back: the outcomes, and the failures (already recorded as rows)."""

    model_config = ConfigDict(extra="forbid")
    outcomes: list[Outcome] = Field(default_factory=list)
    failures: list[Failure] = Field(default_factory=list)
    stage_seconds: dict[str, float] = Field(default_factory=dict)  # the analysis's two phases


class NightSummary(BaseModel):
    """What one nightly run did."""

    model_config = ConfigDict(extra="forbid")
    run_id: str
    prefect_flow_run_id: str | None = None
    ingest: list[FolderIngest] = Field(default_factory=list)  # one per corpus subfolder, when given a corpus
    backlog: int  # open incidents with work (or a skip to record) tonight
    outcomes: list[Outcome] = Field(default_factory=list)
    failures: list[Failure] = Field(default_factory=list)
    skips: list[Skip] = Field(default_factory=list)
    marts: dict[str, int] = Field(default_factory=dict)  # mart -> rows
    dashboard: str | None = None  # index.html of the built dashboards
    stage_seconds: dict[str, float] = Field(default_factory=dict)

    def per_method(self) -> list[dict[str, object]]:
        """One row per method: analysed, failed, skipped, scored, mean score, seconds."""
        rows = []
        for method in METHODS:
            done = [o for o in self.outcomes if o.method == method]
            scored = [o.headline() for o in done if o.headline() is not None]
            rows.append({
                "method": method, "analysed": len(done),
                "failed": sum(f.method == method for f in self.failures),
                "skipped": sum(s.method == method for s in self.skips),
                "scored": len(scored),
                "score": round(mean(scored), 3) if scored else None,
                "score_meaning": "mean RCA F1 0-1" if method == "sade" else "mean rubric accuracy 0-5",
                "seconds": round(sum(o.seconds for o in done), 1)})
        return rows


def markdown(summary: NightSummary) -> str:
    """The run summary as the Prefect markdown artifact shows it."""
    lines = [f"# Faultline nightly run `{summary.run_id}`", "",
             f"Backlog tonight: **{summary.backlog}** incident(s).", "",
             "| method | analysed | failed | skipped | scored | score | meaning | seconds |",
             "|---|---|---|---|---|---|---|---|"]
    for r in summary.per_method():
        lines.append(f"| {r['method']} | {r['analysed']} | {r['failed']} | {r['skipped']} | {r['scored']} | "
                     f"{'-' if r['score'] is None else r['score']} | {r['score_meaning']} | {r['seconds']} |")
    if summary.failures:
        lines += ["", "## Failures", "", "| incident | method | error | message |", "|---|---|---|---|"]
        lines += [f"| {f.incident_id} | {f.method} | {f.error_type} | {f.message[:160].replace('|', '/')} |"
                  for f in summary.failures]
    if summary.skips:
        lines += ["", "## Skipped", "", "| incident | method | reason |", "|---|---|---|"]
        lines += [f"| {s.incident_id} | {s.method} | {s.reason} |" for s in summary.skips[:50]]
    if summary.ingest:
        lines += ["", "## Ingested", "",
                  "| folder | files | unchanged | accepted | quarantined | incidents | failed |",
                  "|---|---|---|---|---|---|---|"]
        lines += [f"| {f.folder}/ | {f.files} | {f.unchanged} | {f.accepted} | {f.quarantined} | "
                  f"{'-' if f.incidents is None else f.incidents} | {len(f.failed)} |" for f in summary.ingest]
        failed = [f"- `{name}`: {error[:160]}" for f in summary.ingest for name, error in f.failed.items()]
        lines += ["", "Not ingested:", "", *failed] if failed else []
    if summary.marts:
        lines += ["", "## Marts", "", ", ".join(f"`{k}` ({v} rows)" for k, v in summary.marts.items())]
    if summary.dashboard:
        lines += ["", f"Dashboards: `{summary.dashboard}`"]
    lines += ["", "Stage seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in summary.stage_seconds.items())]
    return "\n".join(lines) + "\n"
