"""Does ASTRA's judge recognise a wrong report? Judge means against the accuracy rubric, on a corpus with truth.

Every open incident of the corpus (default ``data/sample``: its ``backlog/``) is analysed by the
deterministic analyst through the product's path (`faultline.astra.batch`: ingest, index, `analyse`,
store rounds and evaluations). The figures are then read back from the warehouse: every round of
``astra_rounds`` with its judge mean, scored with the rubric (`faultline.truth.rubric.score_accuracy`)
against ``ground_truth`` (the benchmark may read the truth; the judge never does).

* **AUROC** of the judge mean for separating rubric accuracy >= 3 from < 3 (Mann-Whitney, ties count
  half), over the faulty incidents' final reports (goal >= 0.93) and over all their rounds' reports;
* the share of faulty reports with accuracy < 3 whose judge mean is >= 3.5 (goal <= 10 %), final and
  all rounds;
* per criterion, the AUROC of its score on the final reports (which criterion carries the signal);
* the paired per-round accuracy delta: for every round the judge sent back (``revise``) that has a
  next round, accuracy of round r+1 minus round r (all incidents with truth, healthy controls
  included): mean, and how many improved, got worse, stayed the same;
* ASTRA's share of faulty incidents with accuracy >= 3 (the judge drives refinement).

``--reuse`` reads an existing warehouse without analysing again. ``--rejudge`` scores the stored
reports again with the current deterministic judge (no new analysis: quick calibration; a round is
judged with the agents' final outputs, the only ones stored, and the claims up to that round).
``--llm-judge MODEL`` scores the stored reports with the LLM judge (prompt ``judge/judge``) through
the gateway and reports the same figures for it; no refinement is driven by it. ``scripted:lenient`` and
``scripted:label-reader`` are scripted stand-ins (`faultline.llm.fake`, through litellm like a real model):
one calls every report good, one reads only whether the report names a label and a fix. ``--limit N`` re-judges
only the reports of the first N incidents (by id): a small model takes minutes a report.

    .venv/bin/python bench/judge.py [--corpus DIR] [--warehouse FILE] [--rounds N] [--reuse] [--rejudge]
                                    [--llm-judge MODEL] [--limit N] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import mean
from typing import TYPE_CHECKING, Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from faultline.offline import apply_offline_env  # noqa: E402

if TYPE_CHECKING:
    import duckdb

    from faultline.astra.records import AstraResult, JudgeScore
    from faultline.config import Settings

GOALS = {"auroc_final": 0.93, "wrong_scored_high_final": 0.10}
HIGH_MEAN = 3.5
ANALYST = "deterministic"
ROUNDS_SQL = """
SELECT incident_id, round, label, category, devices, root_cause, mean_score, revise, is_final
FROM astra_rounds WHERE analyst = ? ORDER BY incident_id, round
"""
CRITERIA_SQL = "SELECT incident_id, round, criterion, score FROM judge_scores WHERE analyst = ?"


@dataclass(frozen=True)
class RoundRow:
    """One stored round, scored: its judge mean (and criteria) and its rubric accuracy."""

    incident_id: str
    round: int
    is_faulty: bool
    accuracy: int
    judge_mean: float
    criteria: dict[str, int]
    revise: bool
    is_final: bool


def auroc(positives: Sequence[float], negatives: Sequence[float]) -> float | None:
    """P(a positive scores above a negative), ties counting half (Mann-Whitney U / n+ n-); None if a side is empty."""
    if not positives or not negatives:
        return None
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))


def read_rounds(conn: duckdb.DuckDBPyConnection, judged: dict[tuple[str, int], list[JudgeScore]] | None = None
                ) -> list[RoundRow]:
    """Every stored round with truth, scored by the rubric; `judged` replaces the stored judge scores."""
    from faultline.truth.rubric import score_accuracy
    from faultline.truth.store import load_truth

    stored: dict[tuple[str, int], dict[str, int]] = {}
    for incident_id, rnd, criterion, score in conn.execute(CRITERIA_SQL, [ANALYST]).fetchall():
        stored.setdefault((incident_id, rnd), {})[criterion] = score
    rows, truths = [], {}
    for incident_id, rnd, label, category, devices, root, _, revise, is_final in \
            conn.execute(ROUNDS_SQL, [ANALYST]).fetchall():
        truth = truths.setdefault(incident_id, load_truth(conn, incident_id))
        if truth is None:
            continue
        if judged is not None:
            criteria = {s.criterion: s.score for s in judged.get((incident_id, rnd), [])}
        else:
            criteria = stored.get((incident_id, rnd), {})
        if not criteria:
            continue
        acc = score_accuracy(label=label, category=category, devices=list(devices or []), root_cause=root or "",
                             truth=truth)
        rows.append(RoundRow(incident_id, rnd, truth.is_faulty, acc.score, mean(criteria.values()), criteria,
                             bool(revise), bool(is_final)))
    return rows


def separation(rows: list[RoundRow]) -> dict[str, Any]:
    """AUROC of the judge mean for accuracy >= 3 vs < 3, and the share of wrong reports the judge scores high."""
    right = [r.judge_mean for r in rows if r.accuracy >= 3]
    wrong = [r.judge_mean for r in rows if r.accuracy < 3]
    high = sum(1 for m in wrong if m >= HIGH_MEAN)
    return {"reports": len(rows), "right": len(right), "wrong": len(wrong), "auroc": auroc(right, wrong),
            "wrong_scored_high": high, "share_wrong_scored_high": high / len(wrong) if wrong else None,
            "mean_judge_right": mean(right) if right else None, "mean_judge_wrong": mean(wrong) if wrong else None}


def per_criterion(rows: list[RoundRow]) -> dict[str, float | None]:
    """AUROC of each criterion's score alone (accuracy >= 3 vs < 3)."""
    names = sorted({c for r in rows for c in r.criteria})
    return {c: auroc([r.criteria[c] for r in rows if r.accuracy >= 3 and c in r.criteria],
                     [r.criteria[c] for r in rows if r.accuracy < 3 and c in r.criteria]) for c in names}


def paired_delta(rows: list[RoundRow]) -> dict[str, Any]:
    """Accuracy of round r+1 minus round r for every round sent back for revision that has a next round."""
    by_key = {(r.incident_id, r.round): r for r in rows}
    deltas = [by_key[(r.incident_id, r.round + 1)].accuracy - r.accuracy for r in rows
              if r.revise and (r.incident_id, r.round + 1) in by_key]
    return {"pairs": len(deltas), "mean": mean(deltas) if deltas else None,
            "improved": sum(d > 0 for d in deltas), "worse": sum(d < 0 for d in deltas),
            "same": sum(d == 0 for d in deltas)}


def figures(rows: list[RoundRow]) -> dict[str, Any]:
    """Everything the benchmark reports about one judge's scores."""
    faulty = [r for r in rows if r.is_faulty]
    final = [r for r in faulty if r.is_final]
    finals_all = [r for r in rows if r.is_final]
    sep_final, sep_all = separation(final), separation(faulty)
    return {
        "final": sep_final, "all_rounds": sep_all, "criteria_auroc_final": per_criterion(final),
        "paired_delta": paired_delta(rows),
        "astra": {"incidents": len(finals_all), "faulty": len(final),
                  "share_accuracy_ge3": sum(r.accuracy >= 3 for r in final) / len(final) if final else None,
                  "healthy_correct": (sum(r.accuracy == 5 for r in finals_all if not r.is_faulty) /
                                      max(1, sum(not r.is_faulty for r in finals_all))),
                  "mean_rounds": mean(r.round for r in finals_all) if finals_all else None},
        "goals": GOALS,
        "goals_met": {"auroc_final": (sep_final["auroc"] or 0) >= GOALS["auroc_final"],
                      "wrong_scored_high_final": (sep_final["share_wrong_scored_high"] or 0)
                      <= GOALS["wrong_scored_high_final"]},
    }


Judge = Callable[..., "list[JudgeScore]"]


def rejudge(conn: duckdb.DuckDBPyConnection, judge: Judge, limit: int | None = None
            ) -> dict[tuple[str, int], list[JudgeScore]]:
    """Score every stored report (of the first `limit` incidents, by id) again with
    `judge(incident, outputs, claims, evidence, report)`."""
    from faultline.astra.incident import load_incident
    from faultline.astra.store import load_result

    ids = [r[0] for r in conn.execute("SELECT DISTINCT incident_id FROM astra_rounds WHERE analyst = ? "
                                      "ORDER BY 1", [ANALYST]).fetchall()][:limit]
    scores: dict[tuple[str, int], list[JudgeScore]] = {}
    for incident_id in ids:
        result: AstraResult | None = load_result(conn, incident_id, ANALYST)
        if result is None:
            continue
        incident = load_incident(conn, incident_id)
        outputs = {o.agent: o for o in result.outputs}
        for rnd in result.rounds:
            claims = [c for c in result.claims if c.round <= rnd.round]
            ids_so_far = {c.claim_id for c in claims}
            evidence = [e for e in result.evidence if e.claim_id in ids_so_far]
            scores[(incident_id, rnd.round)] = judge(incident, outputs, claims, evidence, rnd.report)
    return scores


def _reply(scores: dict[str, int], why: str) -> str:
    from faultline.astra.judge import CRITERIA

    return json.dumps({"scores": [{"criterion": c, "score": scores.get(c, 4), "reason": why} for c in CRITERIA]})


def _label_reader(messages: list[dict[str, Any]]) -> str:
    """Reads only the report at the end of the prompt: a named label and a fix that is not "no fix" score high."""
    report = str(messages[-1].get("content", "")).rsplit("REPORT", 1)[-1]
    named = "- Label: " in report
    no_fix = "no fix is supported" in report.lower() or "no fix is known" in report.lower()
    return _reply({"root_cause_identification": 4 if named else 2, "resolution_specificity": 2 if no_fix else 4,
                   "coverage": 3 if no_fix or not named else 4}, "scripted label reader")


# Scripted stand-ins for a model (faultline.llm.fake, through litellm and the gateway like a real one): they
# measure the LLM-judge path and show what the benchmark says of such judges; they are not models.
SCRIPTED_JUDGES: dict[str, Callable[[list[dict[str, Any]]], str]] = {
    "lenient": lambda _messages: _reply({}, "looks complete"),  # every report "good": the failure to catch
    "label-reader": _label_reader,
}


def judge_model(name: str) -> str:
    """The litellm model for `--llm-judge`: ``scripted:<name>`` installs one of `SCRIPTED_JUDGES`."""
    if not name.startswith("scripted:"):
        return name
    from faultline.llm.fake import install

    key = name.split(":", 1)[1]
    if key not in SCRIPTED_JUDGES:
        raise SystemExit(f"unknown scripted judge {key!r}: use one of {', '.join(SCRIPTED_JUDGES)}")
    return install(f"judge-{key}", [SCRIPTED_JUDGES[key]], repeat_last=True).model


def llm_judge(settings: Settings, conn: duckdb.DuckDBPyConnection, model: str) -> Judge:
    """The LLM judge as a `rejudge` callable (`model` may be ``scripted:<name>``, see `judge_model`)."""
    from faultline.astra.judge import judge_llm

    model = judge_model(model)

    def score(incident: Any, outputs: Any, claims: Any, evidence: Any, report: Any) -> list[JudgeScore]:
        return judge_llm(incident, outputs, claims, evidence, report, settings=settings, conn=conn, model=model)

    return score


def run(args: argparse.Namespace, warehouse: Path) -> dict[str, Any]:
    """Analyse (unless --reuse), then measure the stored judge and any re-judging asked for."""
    from faultline.astra.batch import evaluate_incidents, load_corpus
    from faultline.astra.judge import RULES_VERSION, judge_deterministic
    from faultline.config import Settings
    from faultline.db import connect

    settings = Settings(duckdb_path=warehouse, lancedb_dir=warehouse.parent / f"{warehouse.stem}-lancedb",
                        progress=False)
    conn = connect(settings.duckdb_path)
    out: dict[str, Any] = {"corpus": str(args.corpus), "warehouse": str(warehouse), "rules_version": RULES_VERSION}
    if not args.reuse:
        ids = load_corpus(conn, settings, args.corpus)
        batch = evaluate_incidents(conn, settings, ids, analyst=ANALYST, max_rounds=args.rounds)
        out |= {"evaluated": len(ids), "failures": batch.failures}
    out["deterministic"] = figures(read_rounds(conn))
    if args.rejudge:
        out["rejudged"] = figures(read_rounds(conn, rejudge(conn, judge_deterministic, args.limit)))
    if args.llm_judge:
        judged = rejudge(conn, llm_judge(settings, conn, args.llm_judge), args.limit)
        out[f"llm:{args.llm_judge}"] = figures(read_rounds(conn, judged))
    conn.close()
    return out


def _print(report: dict[str, Any]) -> None:
    from faultline.cli.output import print_table

    def pct(v: float | None) -> str:
        return "-" if v is None else f"{100 * v:.1f}%"

    def num(v: float | None, f: str = "{:.3f}") -> str:
        return "-" if v is None else f.format(v)

    print(f"Corpus {report['corpus']} -> {report['warehouse']} (judge rules {report['rules_version']}); "
          f"{len(report.get('failures') or {})} failed")
    for name in [k for k in report if isinstance(report[k], dict) and "final" in report[k]]:
        f = report[name]
        fin, all_ = f["final"], f["all_rounds"]
        print_table(["figure", "final reports", "all rounds", "goal (final)"], [
            ["reports (faulty): right / wrong", f"{fin['right']} / {fin['wrong']}",
             f"{all_['right']} / {all_['wrong']}",
             ""],
            ["AUROC judge mean, accuracy >= 3 vs < 3", num(fin["auroc"]), num(all_["auroc"]), ">= 0.93"],
            [f"accuracy < 3 with judge mean >= {HIGH_MEAN}", pct(fin["share_wrong_scored_high"]),
             pct(all_["share_wrong_scored_high"]), "<= 10%"],
            ["mean judge: right / wrong",
             f"{num(fin['mean_judge_right'], '{:.2f}')} / {num(fin['mean_judge_wrong'], '{:.2f}')}",
             f"{num(all_['mean_judge_right'], '{:.2f}')} / {num(all_['mean_judge_wrong'], '{:.2f}')}", ""],
        ], title=f"judge: {name}")
        print_table(["criterion", "AUROC (final)"], [[c, num(v)] for c, v in f["criteria_auroc_final"].items()])
        d, a = f["paired_delta"], f["astra"]
        print(f"revised rounds: {d['pairs']} pairs, accuracy delta r+1 - r mean {num(d['mean'], '{:+.2f}')} "
              f"(improved {d['improved']}, worse {d['worse']}, same {d['same']})")
        print(f"ASTRA: {a['faulty']} faulty, accuracy >= 3 {pct(a['share_accuracy_ge3'])}; healthy correct "
              f"{pct(a['healthy_correct'])}; mean rounds {num(a['mean_rounds'], '{:.2f}')}\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=REPO / "data" / "sample", help="corpus with ground truth")
    parser.add_argument("--warehouse", type=Path, help="DuckDB file to write (default: a temporary one)")
    parser.add_argument("--rounds", type=int, default=5, help="most judge/refine rounds per incident")
    parser.add_argument("--reuse", action="store_true", help="measure the warehouse's stored rounds, no analysis")
    parser.add_argument("--rejudge", action="store_true",
                        help="also score the stored reports with the current deterministic judge")
    parser.add_argument("--llm-judge", metavar="MODEL",
                        help="also score the stored reports with this LLM judge (a litellm model, or scripted:lenient "
                             "/ scripted:label-reader)")
    parser.add_argument("--limit", type=int, metavar="N",
                        help="re-judge (--rejudge, --llm-judge) only the reports of the first N incidents, by id")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be at least 1")
    if args.reuse and not (args.warehouse and args.warehouse.is_file()):
        parser.error("--reuse needs --warehouse FILE of an earlier run")
    apply_offline_env()
    if args.warehouse:
        args.warehouse.parent.mkdir(parents=True, exist_ok=True)
        report = run(args, args.warehouse)
    else:
        with tempfile.TemporaryDirectory(prefix="faultline-bench-") as tmp:
            report = run(args, Path(tmp) / "judge.duckdb")
    if args.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        _print(report)


if __name__ == "__main__":
    main()
