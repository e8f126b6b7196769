"""The three LLM paths with a real model, beside the deterministic analyst: ASTRA, SADE's llm policy, the LLM judge.

On the first N faulty incidents (ground truth with a fault) of the corpus's open backlog (default ``data/sample``),
in one temporary warehouse:

1. **ASTRA** through the product's path of ``eval astra --llm MODEL`` (`faultline.astra.batch`: load the corpus,
   `evaluate_incidents` with analyst ``llm:MODEL``), and the same with the deterministic analyst; ``--rounds``
   judge/refine rounds each (default 1: a round of a small local model is ~11 calls). Accuracy is the rubric
   accuracy (0-5) the evaluation computes.
2. **SADE** on each incident's recorded snapshot (`faultline.sade.unit.run_sade`, as ``eval sade`` and ``diagnose``
   call it) with ``policy llm`` and the model (``--sade-turns``: its turn budget), and with the deterministic
   policy: detection, localisation F1 and RCA F1 (`faultline.sade.scoring.summarise`, as ``bench/sade.py``).
3. **The judge**: the deterministic analyst's reports of step 1 scored again by the LLM judge
   (`judge_llm_or_rules`, what ASTRA's llm analyst uses: a failed call falls back to the deterministic judge),
   beside the deterministic judge's stored scores: per-criterion agreement and mean absolute difference over the
   reports the model scored itself (not its fallback), and the AUROC ``bench/judge.py`` computes (None when every
   report is on one side of accuracy 3, as is likely with N small).

Per path: completion (incidents with a result / N), model calls, prompt and output tokens (from ``llm_calls`` of
this run: sum and mean per incident), seconds per incident, schema re-asks (``llm_calls`` rows whose error starts
``invalid output``), other failed calls, fallbacks (ASTRA: "model failed" in a report's sources missing, and
rounds judged by the fallback judge; SADE: ``llm_fallback`` steps; judge: reports scored by the deterministic
fallback) and accuracy beside the deterministic run. For ``local``: the model's load time and its tokens per second
of model time (prompt + output tokens over the calls' seconds, and output tokens alone).

    .venv/bin/python bench/llm.py --model local --incidents 3 [--corpus DIR] [--rounds 1] [--sade-turns N]
                                  [--work DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from statistics import mean
from typing import TYPE_CHECKING, Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from faultline.offline import apply_offline_env  # noqa: E402

if TYPE_CHECKING:
    import duckdb

    from faultline.config import Settings

CALLS_SQL = """
SELECT incident_id, stage, input_tokens, prompt_tokens, output_tokens, duration_ms, error
FROM llm_calls WHERE run_id = ? AND model = ? ORDER BY created_at
"""
JUDGE_FALLBACKS_SQL = """
SELECT count(DISTINCT (incident_id, round)) FROM judge_scores WHERE analyst = ? AND judge LIKE ?
"""
REASK_PREFIX = "invalid output"


@dataclass(frozen=True)
class CallRow:
    """One attempt of one model call, as `llm_calls` holds it."""

    incident_id: str | None
    stage: str
    input_tokens: int | None
    prompt_tokens: int | None
    output_tokens: int | None
    duration_ms: float
    error: str | None


@dataclass(frozen=True)
class CallFigures:
    """What the model calls of one path cost."""

    calls: int
    reasks: int  # rows with an invalid output (the next attempt re-asks with the error)
    failed_calls: int  # other errors: timeouts, refusals, context exceeded
    prompt_tokens: int
    output_tokens: int
    prompt_tokens_per_incident: float | None
    output_tokens_per_incident: float | None
    calls_per_incident: float | None
    model_seconds: float
    tokens_per_s: float | None  # prompt + output tokens over the seconds of the calls that answered
    output_tokens_per_s: float | None


def read_calls(conn: duckdb.DuckDBPyConnection, run_id: str, model: str) -> list[CallRow]:
    """The `llm_calls` rows `model` wrote in run `run_id` (deterministic steps' rows are another model)."""
    return [CallRow(*row) for row in conn.execute(CALLS_SQL, [run_id, model]).fetchall()]


def call_figures(rows: Sequence[CallRow], incidents: int) -> CallFigures:
    """Sums and per-incident means of `rows`; a prompt's tokens are the model's count, else the fitted estimate."""
    prompt = sum(r.input_tokens if r.input_tokens is not None else (r.prompt_tokens or 0) for r in rows)
    output = sum(r.output_tokens or 0 for r in rows)
    seconds = sum(r.duration_ms for r in rows) / 1000
    answered = [r for r in rows if r.output_tokens]  # a failed call's seconds would understate the speed
    answered_s = sum(r.duration_ms for r in answered) / 1000
    answered_tokens = sum((r.input_tokens or r.prompt_tokens or 0) + (r.output_tokens or 0) for r in answered)

    def per(value: float) -> float | None:
        return round(value / incidents, 1) if incidents else None

    return CallFigures(
        calls=len(rows), reasks=sum(1 for r in rows if (r.error or "").startswith(REASK_PREFIX)),
        failed_calls=sum(1 for r in rows if r.error and not r.error.startswith(REASK_PREFIX)),
        prompt_tokens=prompt, output_tokens=output, prompt_tokens_per_incident=per(prompt),
        output_tokens_per_incident=per(output), calls_per_incident=per(len(rows)), model_seconds=round(seconds, 1),
        tokens_per_s=round(answered_tokens / answered_s, 1) if answered_s else None,
        output_tokens_per_s=round(output / answered_s, 2) if answered_s else None)


def faulty_backlog(corpus: Path, n: int) -> list[Path]:
    """The first `n` backlog incident folders (sorted) whose ground truth has a fault."""
    from faultline.sade.evaluate import incident_dirs

    root = corpus / "backlog" if (corpus / "backlog").is_dir() else corpus
    chosen = []
    for folder in incident_dirs(root):
        truth = json.loads((folder / "ground_truth.json").read_text())
        if truth["v1"].get("is_anomaly"):
            chosen.append(folder)
        if len(chosen) == n:
            break
    return chosen


def astra_path(conn: duckdb.DuckDBPyConnection, settings: Settings, ids: list[str], analyst: str,
               rounds: int) -> dict[str, Any]:
    """ASTRA's evaluation (the path of ``eval astra``) on `ids` with `analyst`: scores, fallbacks, seconds."""
    from faultline.astra.batch import evaluate_incidents
    from faultline.astra.evaluate import summarise
    from faultline.astra.judge import FALLBACK_JUDGE

    started = time.perf_counter()
    batch = evaluate_incidents(conn, settings, ids, analyst=analyst, max_rounds=rounds)
    wall = time.perf_counter() - started
    summary = summarise(batch.scores)
    failed_agents = sorted({line for result in batch.results.values() for rnd in result.rounds
                            for line in rnd.report.missing if "model failed" in line})
    judge_fallbacks = conn.execute(JUDGE_FALLBACKS_SQL, [analyst, FALLBACK_JUDGE + "%"]).fetchone()[0]
    return {"run_id": batch.run_id, "analyst": analyst, "completed": len(batch.scores), "failures": batch.failures,
            "accuracy": {s.incident_id: s.accuracy for s in batch.scores},
            "mean_accuracy": summary.mean_accuracy, "share_accuracy_ge3": summary.share_accuracy_ge3,
            "verified_share": summary.verified_share, "seconds_per_incident": round(wall / len(ids), 1),
            "model_failed_sources": len(failed_agents), "model_failed_lines": failed_agents,
            "judge_fallback_rounds": judge_fallbacks,
            "incidents_with_model_failed": sum(1 for r in batch.results.values()
                                               if any("model failed" in m for rnd in r.rounds
                                                      for m in rnd.report.missing))}


def sade_path(conn: duckdb.DuckDBPyConnection, settings: Settings, folders: list[Path],
              model: str | None) -> dict[str, Any]:
    """SADE's unit on each recorded incident with the llm policy (`model`) or the deterministic one (None)."""
    from faultline.outcome import IncidentRef
    from faultline.runs import finish_run, start_run
    from faultline.sade.evaluate import ticket_text
    from faultline.sade.llm_policy import FALLBACK_TOOL
    from faultline.sade.scoring import summarise
    from faultline.sade.unit import run_sade
    from faultline.truth.store import truth_from_json

    run_id = start_run(conn, "bench_llm_sade", settings=settings)
    scores, per_incident, seconds = [], {}, []
    for folder in folders:
        info = json.loads((folder / "incident.json").read_text())
        truth = truth_from_json(info["incident_id"], json.loads((folder / "ground_truth.json").read_text()),
                                scenario=info.get("scenario"), size=info.get("size"))
        ref = IncidentRef(incident_id=info["incident_id"], ticket_id=info["incident_id"],
                          snapshot_path=str(folder / "snapshot.json.gz"))
        started = time.perf_counter()
        done = run_sade(settings, ref, conn=conn if model else None, ticket=ticket_text(folder), truth=truth,
                        policy="llm" if model else "deterministic", llm_model=model, run_id=run_id,
                        on_error="score")
        seconds.append(time.perf_counter() - started)
        diag = done.diagnosis
        scores.append(done.score)
        sub = diag.submission
        per_incident[ref.incident_id] = {
            "status": diag.status, "answered": sub.v1.root_cause_name if sub else None,
            "devices": sub.v1.faulty_devices if sub else None, "truth": truth.labels,
            "rca_f1": done.score.rca.f1, "tool_calls": diag.tool_calls,
            "llm_fallback_steps": sum(1 for st in diag.steps if st.tool == FALLBACK_TOOL)}
    finish_run(conn, run_id, status="completed")
    overall = summarise(scores)[0]
    return {"run_id": run_id, "policy": f"llm:{model}" if model else "deterministic",
            "completed": sum(1 for v in per_incident.values() if v["status"] == "submitted"),
            "detection": overall.detection, "loc_f1": overall.loc_f1, "rca_f1": overall.rca_f1,
            "llm_fallback_steps": sum(v["llm_fallback_steps"] for v in per_incident.values()),
            "seconds_per_incident": round(mean(seconds), 1) if seconds else None, "incidents": per_incident}


def judge_path(conn: duckdb.DuckDBPyConnection, settings: Settings, model: str, limit: int) -> dict[str, Any]:
    """The LLM judge (with its deterministic fallback) on the stored deterministic reports, beside the stored
    deterministic judge's scores."""
    from bench.judge import figures, read_rounds, rejudge
    from faultline.astra.judge import FALLBACK_JUDGE, judge_llm_or_rules
    from faultline.runs import finish_run, start_run

    run_id = start_run(conn, "bench_llm_judge", settings=settings)
    judges: list[str] = []
    seconds: list[float] = []

    def score(incident: Any, outputs: Any, claims: Any, evidence: Any, report: Any) -> list[Any]:
        started = time.perf_counter()
        given = judge_llm_or_rules(incident, outputs, claims, evidence, report, settings=settings, conn=conn,
                                   model=model, run_id=run_id)
        seconds.append(time.perf_counter() - started)
        judges.append(given[0].judge if given else "")
        return given

    llm_scores = rejudge(conn, score, limit=limit)
    finish_run(conn, run_id, status="completed")
    # a report the fallback scored is the deterministic judge again: agreement and AUROC count the model's own only
    own = {key: given for key, given in llm_scores.items() if given and not given[0].judge.startswith(FALLBACK_JUDGE)}
    model_rows, rule_rows = read_rounds(conn, own), read_rounds(conn)
    return {"run_id": run_id, "reports": len(llm_scores), "completed": sum(1 for v in llm_scores.values() if v),
            "scored_by_model": len(own),
            "fallbacks": sum(1 for j in judges if j.startswith(FALLBACK_JUDGE)),
            "fallback_reasons": sorted({j for j in judges if j.startswith(FALLBACK_JUDGE)}),
            "seconds_per_report": round(mean(seconds), 1) if seconds else None,
            "agreement": agreement(model_rows, rule_rows),
            "auroc_final_llm": figures(model_rows)["final"]["auroc"],
            "auroc_final_deterministic": figures(rule_rows)["final"]["auroc"]}


def agreement(model_rows: Sequence[Any], rule_rows: Sequence[Any]) -> dict[str, Any]:
    """Per criterion, over the reports both judges scored: the share of equal scores and the mean absolute
    difference; and both judges' mean scores."""
    rules = {(r.incident_id, r.round): r for r in rule_rows}
    pairs = [(m, rules[(m.incident_id, m.round)]) for m in model_rows if (m.incident_id, m.round) in rules]
    per: dict[str, dict[str, float]] = {}
    for criterion in sorted({c for m, _ in pairs for c in m.criteria}):
        both = [(m.criteria[criterion], r.criteria[criterion]) for m, r in pairs
                if criterion in m.criteria and criterion in r.criteria]
        if both:
            per[criterion] = {"equal": round(sum(a == b for a, b in both) / len(both), 3),
                              "mean_abs_diff": round(mean(abs(a - b) for a, b in both), 2)}
    return {"reports": len(pairs), "per_criterion": per,
            "mean_judge_llm": round(mean(m.judge_mean for m, _ in pairs), 2) if pairs else None,
            "mean_judge_deterministic": round(mean(r.judge_mean for _, r in pairs), 2) if pairs else None,
            "equal_all": (round(mean(v["equal"] for v in per.values()), 3) if per else None)}


def _guarded(name: str, errors: dict[str, str], run: Any) -> Any:
    """Run one path; an exception is reported as that path's error and the others still run. Each path's end is
    told on stderr (a run with a small model takes long)."""
    started = time.perf_counter()
    try:
        return run()
    except Exception as exc:  # noqa: BLE001 - a bench reports what broke and goes on
        errors[name] = f"{type(exc).__name__}: {exc}"
        return None
    finally:
        print(f"{name}: done in {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)


def run(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """Every path on the chosen incidents, in one warehouse under `work`."""
    from faultline.astra.batch import load_corpus
    from faultline.config import Settings
    from faultline.db import connect
    from faultline.llm import local

    settings = Settings(duckdb_path=work / "llm.duckdb", lancedb_dir=work / "llm-lancedb", progress=False)
    if args.sade_turns:
        settings = settings.model_copy(update={"sade_max_turns": args.sade_turns})
    conn = connect(settings.duckdb_path)
    folders = faulty_backlog(args.corpus, args.incidents)
    ids = [json.loads((f / "incident.json").read_text())["incident_id"] for f in folders]
    loaded = set(load_corpus(conn, settings, args.corpus))
    missing = [i for i in ids if i not in loaded]
    if missing:
        raise SystemExit(f"{', '.join(missing)} not loaded from {args.corpus}")
    n, model, errors = len(ids), args.model, {}
    out: dict[str, Any] = {"model": model, "corpus": str(args.corpus), "incidents": ids, "n": n,
                           "rounds": args.rounds, "sade_max_turns": settings.sade_max_turns, "errors": errors}

    def with_calls(part: dict[str, Any] | None) -> dict[str, Any] | None:
        if part is None:
            return None
        figures = call_figures(read_calls(conn, part["run_id"], model), n)
        return {**part, "calls": asdict(figures), "completion": part["completed"] / n if n else None}

    out["astra"] = {
        "deterministic": _guarded("astra deterministic", errors,
                                  lambda: astra_path(conn, settings, ids, "deterministic", args.rounds)),
        "llm": with_calls(_guarded("astra llm", errors,
                                   lambda: astra_path(conn, settings, ids, f"llm:{model}", args.rounds)))}
    out["sade"] = {"deterministic": _guarded("sade deterministic", errors,
                                             lambda: sade_path(conn, settings, folders, None)),
                   "llm": with_calls(_guarded("sade llm", errors, lambda: sade_path(conn, settings, folders, model)))}
    out["judge"] = with_calls(_guarded("judge llm", errors, lambda: judge_path(conn, settings, model, n)))
    if local.is_local(model):
        spec = local.litellm_name(model).split("/", 1)[1]
        held = local._loaded.get(spec)  # loaded once per process by the first call
        out["local_model"] = {"spec": spec, "load_seconds": round(held.load_seconds, 1) if held else None,
                              "context_tokens": held.context_tokens if held else None}
    parts = [p for p in (out["astra"]["llm"], out["sade"]["llm"], out["judge"]) if p]
    rows = [row for part in parts for row in read_calls(conn, part["run_id"], model)]
    out["all_calls"] = asdict(call_figures(rows, n))
    conn.close()
    return out


CALL_ROWS = [("calls", "calls"), ("calls / incident", "calls_per_incident"),
             ("prompt tokens (sum)", "prompt_tokens"), ("prompt tokens / incident", "prompt_tokens_per_incident"),
             ("output tokens (sum)", "output_tokens"), ("output tokens / incident", "output_tokens_per_incident"),
             ("schema re-asks", "reasks"), ("other failed calls", "failed_calls"),
             ("model seconds", "model_seconds"), ("tokens/s (prompt+output)", "tokens_per_s"),
             ("output tokens/s", "output_tokens_per_s")]


def _print(report: dict[str, Any]) -> None:
    from faultline.cli.output import print_table

    def num(v: Any, f: str = "{:.2f}") -> str:
        return "-" if v is None else f.format(v) if isinstance(v, (int, float)) else str(v)

    n = report["n"]
    print(f"{report['model']} on {n} faulty backlog incidents of {report['corpus']}: {', '.join(report['incidents'])}; "
          f"ASTRA rounds {report['rounds']}")
    a_det, a_llm = report["astra"]["deterministic"] or {}, report["astra"]["llm"] or {}
    s_det, s_llm = report["sade"]["deterministic"] or {}, report["sade"]["llm"] or {}
    judge = report["judge"] or {}
    paths = [("ASTRA", a_llm), ("SADE", s_llm), ("judge", judge)]
    rows = []
    for figure, key in CALL_ROWS:
        rows.append([figure] + [num((p.get("calls") or {}).get(key), "{}") for _, p in paths])
    completion = [num(p.get("completed"), "{}") + f" / {n}" if p else "-" for _, p in paths]
    rows.insert(0, ["completion"] + completion)
    rows.append(["seconds / incident", num(a_llm.get("seconds_per_incident"), "{}"),
                 num(s_llm.get("seconds_per_incident"), "{}"), num(judge.get("seconds_per_report"), "{} (report)")])
    rows.append(["fallbacks", f"{num(a_llm.get('model_failed_sources'), '{}')} model-failed sources, "
                 f"{num(a_llm.get('judge_fallback_rounds'), '{}')} judge fallbacks",
                 f"{num(s_llm.get('llm_fallback_steps'), '{}')} llm_fallback steps",
                 f"{num(judge.get('fallbacks'), '{}')} deterministic fallback"])
    print_table(["figure", "ASTRA llm", "SADE llm", "LLM judge"], rows, title=f"model {report['model']}")
    agree = judge.get("agreement") or {}
    print_table(["accuracy", "model", "deterministic"], [
        ["ASTRA mean rubric accuracy (0-5)", num(a_llm.get("mean_accuracy")), num(a_det.get("mean_accuracy"))],
        ["ASTRA accuracy >= 3", num(a_llm.get("share_accuracy_ge3")), num(a_det.get("share_accuracy_ge3"))],
        ["ASTRA seconds / incident", num(a_llm.get("seconds_per_incident"), "{}"),
         num(a_det.get("seconds_per_incident"), "{}")],
        ["SADE detection", num(s_llm.get("detection")), num(s_det.get("detection"))],
        ["SADE localisation F1", num(s_llm.get("loc_f1")), num(s_det.get("loc_f1"))],
        ["SADE RCA F1", num(s_llm.get("rca_f1")), num(s_det.get("rca_f1"))],
        ["SADE seconds / incident", num(s_llm.get("seconds_per_incident"), "{}"),
         num(s_det.get("seconds_per_incident"), "{}")],
        ["judge mean score on the same reports", num(agree.get("mean_judge_llm")),
         num(agree.get("mean_judge_deterministic"))],
        ["judge AUROC (final, acc >= 3 vs < 3)", num(judge.get("auroc_final_llm")),
         num(judge.get("auroc_final_deterministic"))],
    ], title="beside the deterministic analyst")
    print(f"judge agreement with the deterministic judge (share of equal criterion scores): "
          f"{num(agree.get('equal_all'))} over the {num(agree.get('reports'), '{}')} reports the model scored itself")
    for reason in judge.get("fallback_reasons") or []:
        print(f"judge: {reason}")
    if report.get("local_model"):
        lm = report["local_model"]
        print(f"local model {lm['spec']}: loaded in {num(lm['load_seconds'], '{}')} s, context {lm['context_tokens']}")
    for name, part in [("ASTRA deterministic", a_det), ("ASTRA llm", a_llm)]:
        for incident_id, why in (part.get("failures") or {}).items():
            print(f"{name} failed {incident_id}: {why}")
    for line in a_llm.get("model_failed_lines") or []:
        print(f"ASTRA llm source missing: {line}")
    for name, error in report["errors"].items():
        print(f"error in {name}: {error}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="litellm model, or local (SmolLM2 in process)")
    parser.add_argument("--incidents", type=int, default=3, help="first N faulty backlog incidents")
    parser.add_argument("--corpus", type=Path, default=REPO / "data" / "sample", help="corpus with ground truth")
    parser.add_argument("--rounds", type=int, default=1, help="most ASTRA judge/refine rounds per incident")
    parser.add_argument("--sade-turns", type=int, metavar="N",
                        help="turn budget of SADE's llm policy (default: the sade_max_turns setting, 20); out of turns "
                             "it submits what the fingerprints match")
    parser.add_argument("--work", type=Path, help="folder for the warehouse (default: a temporary one)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if args.incidents < 1:
        parser.error("--incidents must be at least 1")
    apply_offline_env()
    if args.work:
        args.work.mkdir(parents=True, exist_ok=True)
        report = run(args, args.work)
    else:
        with tempfile.TemporaryDirectory(prefix="faultline-bench-") as tmp:
            report = run(args, Path(tmp))
    if args.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        _print(report)


if __name__ == "__main__":
    main()
