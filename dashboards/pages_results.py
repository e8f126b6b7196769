"""The result pages: stratification (chart + table), refinement rounds and SADE metrics, all from marts."""

from __future__ import annotations

from collections import defaultdict

from dashboards.html import Html, join, no_data, table, tag
from dashboards.query import MartReader
from dashboards.svg import Bar, bar_chart

GROUPINGS = (("category", "NIKA category of the ground truth"), ("domain", "rubric domain of the truth labels"))
SADE_GROUPINGS = ("overall", "family", "label", "scenario", "size")


def _kruskal_line(row: dict) -> str:
    if row.get("kw_h") is None:
        return (f"Kruskal–Wallis: not computed ({row['kw_groups']} stratum/strata, {row['kw_n']} incidents; "
                "it needs two or more strata and scores that are not all equal).")
    return (f"Kruskal–Wallis across {row['kw_groups']} strata ({row['kw_n']} incidents): "
            f"H = {row['kw_h']:.3f}, df = {row['kw_df']}, p = {row['kw_p']:.4f}.")


def stratification_page(reader: MartReader) -> Html:
    """Mean accuracy per fault category / domain with 95% CI whiskers, the table with Cohen's d, and the KW line."""
    rows = reader.rows("mart_fault_stratification", order_by=["analyst", "grouping", "stratum"])
    if not rows:
        return no_data("no scored faulty incident with ground truth (ASTRA accuracy by fault type)",
                       reader.missing & {"mart_fault_stratification"})
    parts: list[Html] = [tag("p", "ASTRA's final-report rubric accuracy (0-5) over faulty incidents with ground "
                                  "truth; whiskers are t-based 95% confidence intervals (none when n < 2). "
                                  "Cohen's d compares a stratum with every other incident of the grouping.",
                             class_="note")]
    by_key: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for row in rows:
        by_key[(row["analyst"], row["grouping"])].append(row)
    for analyst in sorted({a for a, _ in by_key}):
        parts.append(tag("h2", f"Analyst {analyst}"))
        for grouping, meaning in GROUPINGS:
            strata = by_key.get((analyst, grouping))
            if not strata:
                continue
            parts.append(tag("h3", f"By {grouping} ({meaning})"))
            bars = [Bar(r["stratum"], float(r["mean_accuracy"]), r["ci95_low"], r["ci95_high"], r["n"]) for r in strata]
            parts.append(bar_chart(bars, y_max=5, y_label="mean accuracy (0-5)",
                                   chart_id=f"chart-{analyst}-{grouping}"))
            parts.append(tag("p", _kruskal_line(strata[0]), class_="kw"))
            parts.append(table(
                ["stratum", "n", "mean", "median", "sd", "95% CI", "share ≥3", "share ≥4", "Cohen's d", "rest n",
                 "rest mean", "scores 0/1/2/3/4/5"],
                [[r["stratum"], r["n"], r["mean_accuracy"], r["median_accuracy"], r["sd_accuracy"],
                  "-" if r["ci95_low"] is None else f"{r['ci95_low']:.2f} – {r['ci95_high']:.2f}",
                  r["share_ge3"], r["share_ge4"], r["cohens_d"], r["rest_n"], r["rest_mean"],
                  "/".join(str(r[f"n_acc_{k}"]) for k in range(6))] for r in strata], class_=f"strata {grouping}"))
    return join(parts)


def rounds_page(reader: MartReader) -> Html:
    """Per-round means per criterion (paired incidents) and the first -> last change per criterion."""
    rounds = reader.rows("mart_refinement_rounds", order_by=["analyst", "criterion", "round"])
    summary = reader.rows("mart_refinement_summary", order_by=["analyst", "criterion"])
    if not rounds and not summary:
        return no_data("no ASTRA rounds with judge scores",
                       reader.missing & {"mart_refinement_rounds", "mart_refinement_summary"})
    parts: list[Html] = []
    for analyst in sorted({r["analyst"] for r in rounds} | {r["analyst"] for r in summary}):
        parts.append(tag("h2", f"Analyst {analyst}"))
        mine = [r for r in rounds if r["analyst"] == analyst]
        if mine:
            labels = sorted({(r["round"], r["round_label"]) for r in mine})
            first = mine[0]
            parts.append(tag("p", f"Pairing {first['pairing']}: {first['n_incidents']} paired incident(s) of "
                                  f"{first['analysed_incidents']} analysed; deepest round {first['deepest_round']}. "
                                  "Means per round over the paired incidents.", class_="note"))
            cells: dict[str, dict[int, dict]] = defaultdict(dict)
            for r in mine:
                cells[r["criterion"]][r["round"]] = r
            body = []
            for criterion, per_round in cells.items():
                last = per_round[max(per_round)]
                body.append([criterion, *[per_round.get(n, {}).get("mean_score") for n, _ in labels],
                             last["delta_from_first"], _pct(last["share_improved"]), _pct(last["share_degraded"]),
                             _pct(last["share_unchanged"])])
            parts.append(table(["criterion", *[label for _, label in labels], "Δ first→last", "% improved",
                                "% degraded", "% unchanged"], body, class_="rounds"))
        change = [r for r in summary if r["analyst"] == analyst]
        if change:
            parts.append(tag("h3", "Each incident against itself, first → last stored round"))
            parts.append(table(
                ["criterion", "refined incidents", "single-round", "mean rounds", "mean first", "mean last",
                 "Δ first→last", "% improved", "% degraded", "% unchanged"],
                [[r["criterion"], r["n_incidents"], r["n_single_round"], r["mean_rounds"], r["mean_first"],
                  r["mean_last"], r["delta_first_last"], _pct(r["share_improved"]), _pct(r["share_degraded"]),
                  _pct(r["share_unchanged"])] for r in change], class_="summary"))
    return join(parts)


def _pct(share: float | None) -> str:
    return "-" if share is None else f"{100 * share:.0f}%"


def sade_page(reader: MartReader) -> Html:
    """NIKA scores of every diagnosis method overall and per family, label, scenario and size."""
    rows = reader.rows("mart_sade_metrics", order_by=["grouping", "group_name", "method"])
    if not rows:
        return no_data("no scored network diagnosis", reader.missing & {"mart_sade_metrics"})
    parts: list[Html] = [tag("p", "Means over incidents; a missing submission scores 0 (SADE's convention). "
                                  "Healthy controls form the group 'healthy'.", class_="note")]
    for grouping in SADE_GROUPINGS:
        mine = [r for r in rows if r["grouping"] == grouping]
        if not mine:
            continue
        parts.append(tag("h2", "Overall" if grouping == "overall" else f"Per {grouping}"))
        parts.append(table(
            [grouping if grouping != "overall" else "group", "method", "n", "no answer", "detection", "loc F1",
             "RCA precision", "RCA recall", "RCA F1", "v2 F1", "median probes", "mean s"],
            [[r["group_name"], r["method"], r["n"], r["no_submission"], r["detection"], r["loc_f1"],
              r["rca_precision"], r["rca_recall"], r["rca_f1"], r["v2_f1"], r["median_probe_calls"],
              r["mean_elapsed_s"]] for r in mine], class_=f"sade {grouping}"))
    return join(parts)
