"""SQL marts over a real warehouse: ASTRA and SADE run on real sample incidents, then `refresh_marts`.

The module builds one warehouse (a small corpus of real sample incidents: ASTRA's deterministic analyst
with up to 3 rounds, SADE and the flat baseline on the recorded snapshots) and checks what a dashboard
reader would see; the statistics are cross-checked against scipy on synthetic scores in scratch warehouses.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from statistics import mean

import pytest

from faultline.errors import FaultlineError
from faultline.marts import list_marts, refresh_marts
from tests.conftest import REPO

SAMPLE = REPO / "data" / "sample"
BACKLOG = ["sample-backlog-001", "sample-backlog-003", "sample-backlog-005", "sample-backlog-010",
           "sample-backlog-020", "sample-backlog-043", "sample-backlog-047"]
HISTORY = ["sample-history-001", "sample-history-003", "sample-history-005", "sample-history-010",
           "sample-history-015", "sample-history-020", "sample-history-030", "sample-history-043"]
CRITERIA = ("root_cause_identification", "resolution_specificity", "evidence_grounding", "coverage", "focus")


def _link(source: Path, target: Path) -> None:
    """`target` as a real folder whose entries are symlinks to `source`'s (globbing does not enter linked folders)."""
    target.mkdir(parents=True)
    for entry in source.iterdir():
        (target / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())


def _corpus(root: Path) -> Path:
    """A corpus with data/sample's layout holding a few real incidents (linked, not copied)."""
    for part, names in (("backlog", BACKLOG), ("history", HISTORY)):
        for name in names:
            _link(SAMPLE / part / name, root / part / name)
        for shared in ("archive", "inventory"):  # the suite's collector archive and network inventories
            (root / part / shared).symlink_to(SAMPLE / part / shared, target_is_directory=True)
    _link(SAMPLE / "docs", root / "docs")
    return root


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The warehouse after ASTRA (3 rounds max), SADE and flat ran on the incidents, their verdicts, and a refresh."""
    from faultline import db
    from faultline.astra.batch import evaluate_incidents, load_corpus
    from faultline.config import Settings
    from faultline.outcome import IncidentRef, incident_ref
    from faultline.sade.unit import run_sade
    from faultline.verdict.unit import run_verdict

    work = tmp_path_factory.mktemp("marts")
    settings = Settings(duckdb_path=work / "fl.duckdb", lancedb_dir=work / "lancedb", progress=False)
    conn = db.connect(settings.duckdb_path)
    ids = load_corpus(conn, settings, _corpus(work / "corpus"))
    assert sorted(ids) == BACKLOG
    # an incident with truth but nothing behind it: the batch records a failure and goes on
    conn.execute("INSERT INTO ground_truth VALUES ('ghost-1', true, ['link_down'], ['r1'], [], [], 'link_failure', "
                 "'', 'test', now())")
    batch = evaluate_incidents(conn, settings, [*ids, "ghost-1"], max_rounds=3)
    assert len(batch.scores) == len(BACKLOG) and list(batch.failures) == ["ghost-1"]
    sade_scores = []
    for method in ("sade", "flat"):
        for name in BACKLOG:
            done = run_sade(settings, incident_ref(conn, name), conn=conn, method=method, on_error="score")
            sade_scores.append(done.score)
    for name in BACKLOG:  # one verdict per incident, fused from the stored ASTRA and SADE answers
        run_verdict(settings, conn, IncidentRef(incident_id=name, ticket_id=name), network_backend=None)
    results = refresh_marts(conn, settings)
    yield conn, results, batch, sade_scores
    conn.close()


def _rows(conn, sql: str, params=None) -> list[dict]:
    cur = conn.execute(sql, params or [])
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row)) for row in cur.fetchall()]


def test_every_mart_exists_with_its_documented_columns_and_passes_its_tests(built) -> None:
    conn, results, _, _ = built
    specs = {s.name: s for s in list_marts()}
    assert [r.name for r in results] == list(specs) and len(specs) == 17
    for result in results:
        assert result.failed_tests == [], (result.name, result.failed_tests)
        columns = [r[0] for r in conn.execute("SELECT column_name FROM information_schema.columns WHERE "
                                              "table_name = ? ORDER BY ordinal_position", [result.name]).fetchall()]
        assert columns == list(specs[result.name].columns), result.name
        assert result.rows == conn.execute(f"SELECT count(*) FROM {result.name}").fetchone()[0] > 0, result.name
        assert specs[result.name].grain and specs[result.name].description


def test_every_table_of_a_refreshed_warehouse_is_documented(built) -> None:
    from faultline.catalog import load_table_docs

    conn = built[0]
    tables = load_table_docs()
    marts = {s.name: s for s in list_marts()}
    for (name,) in conn.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'"
                                ).fetchall():
        columns = {r[0] for r in conn.execute("SELECT column_name FROM information_schema.columns WHERE "
                                              "table_schema = 'main' AND table_name = ?", [name]).fetchall()}
        doc = tables[name].columns if name in tables else marts[name].columns if name in marts else None
        assert doc is not None, f"{name} is documented neither in warehouse/tables nor in warehouse/marts"
        assert set(doc) == columns and all(v.strip() for v in doc.values()), name


def test_refinement_rounds_equal_a_hand_computation_from_judge_scores(built) -> None:
    conn, _, batch, _ = built
    scores: dict[tuple[str, int], dict[str, float]] = defaultdict(dict)
    for inc, rnd, criterion, score in conn.execute("SELECT incident_id, round, criterion, score FROM judge_scores "
                                                   "WHERE analyst = 'deterministic'").fetchall():
        scores[(inc, rnd)][criterion] = score
    accuracy = {s.incident_id: {r.round: r.accuracy for r in s.rounds} for s in batch.scores}  # evaluate.py's
    for (inc, rnd), by_criterion in scores.items():
        by_criterion["judge_mean"] = mean(by_criterion[c] for c in CRITERIA)
        by_criterion["accuracy"] = accuracy[inc][rnd]
    rounds = defaultdict(set)
    for inc, rnd in scores:
        rounds[inc].add(rnd)
    deepest = max(max(r) for r in rounds.values())
    paired = sorted(inc for inc, r in rounds.items() if r == set(range(1, deepest + 1)))
    assert deepest == 3 and paired, "with max_rounds=3 some sample incident needs every round"
    mart = {(r["round"], r["criterion"]): r for r in _rows(conn, "SELECT * FROM mart_refinement_rounds")}
    assert len(mart) == deepest * (len(CRITERIA) + 2)
    for rnd in range(1, deepest + 1):
        for criterion in (*CRITERIA, "judge_mean", "accuracy"):
            row = mart[(rnd, criterion)]
            now = [scores[(i, rnd)][criterion] for i in paired]
            first = [scores[(i, 1)][criterion] for i in paired]
            assert row["pairing"] == "all_rounds" and row["n_incidents"] == len(paired)
            assert row["analysed_incidents"] == len(BACKLOG) and row["deepest_round"] == deepest
            assert row["mean_score"] == pytest.approx(mean(now))
            assert row["delta_from_first"] == pytest.approx(mean(n - f for n, f in zip(now, first)))
            assert row["share_improved"] == pytest.approx(mean(n > f for n, f in zip(now, first)))
    summary = {r["criterion"]: r for r in _rows(conn, "SELECT * FROM mart_refinement_summary")}
    refined = [i for i, r in rounds.items() if len(r) >= 2]
    for criterion in (*CRITERIA, "judge_mean", "accuracy"):
        first = [scores[(i, min(rounds[i]))][criterion] for i in refined]
        last = [scores[(i, max(rounds[i]))][criterion] for i in refined]
        row = summary[criterion]
        assert (row["n_incidents"], row["n_single_round"]) == (len(refined), len(rounds) - len(refined))
        assert row["delta_first_last"] == pytest.approx(mean(b - a for a, b in zip(first, last)))
        assert row["share_unchanged"] == pytest.approx(mean(a == b for a, b in zip(first, last)))
    # the final round's accuracy in the mart is the stored evaluation
    final = {s.incident_id: s.accuracy for s in batch.scores}
    assert mart[(deepest, "accuracy")]["mean_score"] == pytest.approx(mean(final[i] for i in paired))


def _expected_agreement(astra, sub, tax) -> str:
    """The agreement rule of mart_agreement.yml, written again in Python."""
    if astra is None or sub is None or sub[0] != "submitted":
        return "one_side_missing"
    label, category = astra
    cat = category.lower() if category else None
    a_fault = label is not None or (cat is not None and cat not in tax.no_fault)
    s_labels = sub[2]
    s_fault = bool(sub[1]) or bool(s_labels)
    if not a_fault and not s_fault:
        return "both_no_fault"
    if not (a_fault and s_fault):
        return "disagree"
    if label in s_labels:
        return "exact_label"
    family = tax.families.get(label) if label else (cat if cat in tax.domains else None)
    if family and family in {tax.families.get(x) for x in s_labels}:
        return "same_family"
    domain = tax.domain_of(label) if label else (tax.domains.get(family) if family else
                                                  (cat if cat in set(tax.domains.values()) else None))
    if domain and domain in {tax.domain_of(x) for x in s_labels}:
        return "same_domain"
    return "disagree"


def _check_agreement(conn) -> list[dict]:
    from faultline.truth.rubric import stated_label
    from faultline.truth.taxonomy import taxonomy

    tax = taxonomy()
    final = {(inc, analyst): (stated_label(label, rc), cat) for inc, analyst, label, cat, rc in conn.execute(
        "SELECT incident_id, analyst, label, category, root_cause FROM astra_rounds WHERE is_final").fetchall()}
    subs = {(inc, m): (status, anomaly, labels or []) for inc, m, status, anomaly, labels in conn.execute(
        "SELECT incident_id, method, status, is_anomaly, labels FROM submissions").fetchall()}
    rows = _rows(conn, "SELECT * FROM mart_agreement")
    for row in rows:
        expected = _expected_agreement(final.get((row["incident_id"], row["analyst"])),
                                       subs.get((row["incident_id"], row["method"])), tax)
        assert row["agreement"] == expected, row
    return rows


def test_agreement_levels_on_the_real_incidents(built) -> None:
    rows = {(r["incident_id"], r["method"]): r for r in _check_agreement(built[0])}
    assert len(rows) == 2 * len(BACKLOG)
    both = rows[("sample-backlog-003", "sade")]  # ASTRA reads bgp_acl_block in bgpd's logs, SADE finds the filter
    assert (both["agreement"], both["astra_label"], both["sade_labels"]) == ("exact_label", "bgp_acl_block",
                                                                               ["bgp_acl_block"])
    assert both["truth_labels"] == ["bgp_acl_block"] and both["astra_label_right"] and both["sade_label_right"]
    assert both["astra_accuracy"] >= 4 and both["sade_rca_f1"] == 1.0
    healthy = rows[("sample-backlog-047", "sade")]
    assert healthy["truth_is_faulty"] is False
    assert healthy["agreement"] == ("both_no_fault" if not healthy["astra_label"] else "disagree")


def test_each_final_report_is_one_row_and_its_claims_are_the_evidence_rows_beside_it(built) -> None:
    conn = built[0]
    finals = _rows(conn, "SELECT incident_id, analyst, round, report_text, root_cause FROM astra_rounds WHERE is_final")
    reports = {(r["incident_id"], r["analyst"]): r for r in _rows(conn, "SELECT * FROM mart_incident_reports")}
    assert len(finals) == len(reports) == len(BACKLOG)
    claims = defaultdict(list)
    for c in _rows(conn, "SELECT * FROM mart_incident_evidence ORDER BY claim_seq"):
        claims[(c["incident_id"], c["analyst"])].append(c)
    for final in finals:
        key = (final["incident_id"], final["analyst"])
        report = reports[key]
        assert (report["final_round"], report["report_text"], report["root_cause"]) == (
            final["round"], final["report_text"], final["root_cause"])
        stored = conn.execute("SELECT count(*) FROM claims WHERE incident_id = ? AND analyst = ? AND round <= ?",
                              [*key, final["round"]]).fetchone()[0]
        assert report["claims"] == len(claims[key]) == stored > 0, key
        assert report["verified_claims"] == sum(c["evidence_status"] == "VERIFIED" for c in claims[key])
        assert report["causal_claims"] == sum(c["tag"] == "CAUSAL" for c in claims[key])
    assert sum(r["verified_claims"] for r in reports.values()) > 0


def test_a_report_without_claims_keeps_its_row_and_no_claim_row(conn) -> None:
    _astra_round(conn, "q-none", 1, label="link_down", final=True)
    _astra_round(conn, "q-two", 1)
    _astra_round(conn, "q-two", 2, label="link_down", final=True)
    for seq, (claim, rnd) in enumerate((("c1", 1), ("c2", 2), ("c3", 3)), start=1):  # c3: a round after the final
        conn.execute("INSERT INTO claims VALUES ('q-two', 'deterministic', ?, ?, ?, 'log', ?, 'CAUSAL', NULL, now())",
                     [claim, seq, rnd, f"claim {claim}"])
    conn.execute("INSERT INTO evidence VALUES ('q-two', 'deterministic', 'c1', 'log', 'q', 'verbatim', 1, 'high', "
                 "'VERIFIED', NULL, now())")
    refresh_marts(conn)
    reports = {r["incident_id"]: r for r in _rows(conn, "SELECT * FROM mart_incident_reports")}
    assert {i: (r["claims"], r["verified_claims"], r["causal_claims"]) for i, r in reports.items()} == {
        "q-none": (0, 0, 0), "q-two": (2, 1, 2)}
    evidence = _rows(conn, "SELECT incident_id, claim_id, evidence_status FROM mart_incident_evidence "
                           "ORDER BY claim_seq")
    assert evidence == [{"incident_id": "q-two", "claim_id": "c1", "evidence_status": "VERIFIED"},
                        {"incident_id": "q-two", "claim_id": "c2", "evidence_status": None}]


def test_each_diagnosis_answer_is_one_row_and_its_steps_are_the_trace_rows(built, conn) -> None:
    stored = _rows(built[0], "SELECT incident_id, method, status, labels, probe_calls FROM submissions")
    answers = {(r["incident_id"], r["method"]): r for r in _rows(built[0], "SELECT * FROM mart_sade_submissions")}
    assert len(answers) == len(stored) == 2 * len(BACKLOG)
    for row in stored:
        key = (row["incident_id"], row["method"])
        steps = built[0].execute("SELECT count(*) FROM mart_sade_trace WHERE incident_id = ? AND method = ?",
                                 list(key)).fetchone()[0]
        assert answers[key]["steps"] == steps == built[0].execute(
            "SELECT count(*) FROM sade_steps WHERE incident_id = ? AND method = ?", list(key)).fetchone()[0]
        assert (answers[key]["status"], answers[key]["labels"], answers[key]["probe_calls"]) == (
            row["status"], row["labels"], row["probe_calls"])
    # a session stored without steps, and steps whose submission was never stored
    _submission(conn, "m-nosteps", method="mcp", labels=["link_down"])
    conn.execute("INSERT INTO sade_steps VALUES ('m-orphan', 'sade', 1, NULL, 'initial', 'scan', '{}', 'd', [], 2, "
                 "5.0, 'n', now())")
    refresh_marts(conn)
    assert _rows(conn, "SELECT incident_id, steps FROM mart_sade_submissions") == [
        {"incident_id": "m-nosteps", "steps": 0}]
    assert _rows(conn, "SELECT incident_id, seq, probe_calls FROM mart_sade_trace") == [
        {"incident_id": "m-orphan", "seq": 1, "probe_calls": 2}]


def _astra_round(conn, incident, rnd, *, analyst="deterministic", label=None, category=None, devices=(),
                 root_cause="undetermined", final=False, run_id=None, elapsed=1.0) -> None:
    conn.execute("INSERT INTO astra_rounds (incident_id, analyst, round, run_id, label, category, devices, symptom, "
                 "root_cause, fix, verification, report, report_text, min_score, mean_score, revise, is_final, "
                 "elapsed_s, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, 's', ?, 'f', 'v', '{}', 't', 1, 1, ?, ?, ?, "
                 "now())", [incident, analyst, rnd, run_id, label, category, list(devices), root_cause, not final,
                            final, elapsed])


def _submission(conn, incident, *, method="sade", status="submitted", anomaly=True, labels=(), policy=None,
                probes=None, elapsed=None, error=None) -> None:
    conn.execute("INSERT INTO submissions (incident_id, method, policy, status, is_anomaly, labels, probe_calls, "
                 "elapsed_s, error, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, now())",
                 [incident, method, policy, status, anomaly if status == "submitted" else None,
                  list(labels) if status == "submitted" else None, probes, elapsed, error])


def test_agreement_levels_family_domain_category_and_missing(conn) -> None:
    cases = {  # incident: (ASTRA label, ASTRA category, SADE labels, expected)
        "a-exact": ("bgp_acl_block", None, ["bgp_acl_block", "link_down"], "exact_label"),
        "a-family": ("bgp_asn_misconfig", None, ["bgp_acl_block"], "same_family"),
        "a-domain": ("ospf_acl_block", None, ["bgp_acl_block"], "same_domain"),
        "a-wrong": ("dns_service_down", None, ["bgp_acl_block"], "disagree"),
        "a-cat-family": (None, "bgp", ["bgp_hijacking"], "same_family"),
        "a-cat-domain": (None, "routing", ["frr_service_down"], "same_domain"),
        "a-healthy": (None, "no_fault", [], "both_no_fault"),
        "a-half": (None, "no_fault", ["link_down"], "disagree"),
    }
    for inc, (label, category, labels, _) in cases.items():
        _astra_round(conn, inc, 1, label=label, category=category, final=True)
        _submission(conn, inc, labels=labels, anomaly=bool(labels))
    _astra_round(conn, "a-astra-only", 1, label="link_down", final=True)
    _astra_round(conn, "a-no-answer", 1, label="link_down", final=True)
    _submission(conn, "a-no-answer", status="no_submission")
    _submission(conn, "a-sade-only", labels=["link_down"])
    refresh_marts(conn)
    rows = {r["incident_id"]: r for r in _check_agreement(conn)}
    assert {inc: rows[inc]["agreement"] for inc in cases} == {inc: c[3] for inc, c in cases.items()}
    assert {rows[i]["agreement"] for i in ("a-astra-only", "a-no-answer", "a-sade-only")} == {"one_side_missing"}
    assert rows["a-family"]["astra_family"] == "bgp" and rows["a-domain"]["sade_families"] == ["bgp"]
    assert rows["a-exact"]["has_truth"] is False and rows["a-exact"]["astra_label_right"] is None


def test_sade_metrics_equal_the_evaluations_rows(built) -> None:
    from faultline.sade.scoring import summarise

    conn, _, _, sade_scores = built
    mart = {(r["method"], r["grouping"], r["group_name"]): r for r in _rows(conn, "SELECT * FROM mart_sade_metrics")}
    seen = set()
    for grouping in (None, "label", "family", "scenario", "size"):
        for s in summarise(sade_scores, group_by=grouping):
            key = (s.method, grouping or "overall", s.group or ("all" if grouping is None else "(unknown)"))
            row = mart[key]
            seen.add(key)
            assert row["n"] == s.n and row["no_submission_rate"] == pytest.approx(s.no_submission_rate)
            for field in ("detection", "loc_precision", "loc_recall", "loc_f1", "rca_precision", "rca_recall",
                          "rca_f1", "v2_f1", "v2_loc_f1", "v2_type_f1"):
                assert row[field] == pytest.approx(getattr(s, field), abs=1e-4), (key, field)
    assert {key for key in mart if key[0] != "verdict"} == seen  # the verdict is scored the same way beside them
    verdict_rca = [max(v, 0.0) for (v,) in conn.execute("SELECT value FROM evaluations WHERE method = 'verdict' "
                                                        "AND metric = 'rca_f1'").fetchall()]
    assert mart[("verdict", "overall", "all")]["rca_f1"] == pytest.approx(mean(verdict_rca))
    # straight from the evaluations rows: RCA F1 of SADE per truth label, -1 counted as 0
    by_label = defaultdict(list)
    for attrs, value in conn.execute("SELECT attributes, value FROM evaluations WHERE method = 'sade' "
                                     "AND metric = 'rca_f1'").fetchall():
        for label in json.loads(attrs)["labels"] or ["healthy"]:
            by_label[label].append(max(value, 0.0))
    for label, values in by_label.items():
        assert mart[("sade", "label", label)]["rca_f1"] == pytest.approx(mean(values))
    for method, median in conn.execute("SELECT method, median(probe_calls) FROM submissions GROUP BY 1").fetchall():
        assert mart[(method, "overall", "all")]["median_probe_calls"] == median
    assert mart[("flat", "overall", "all")]["mean_probe_calls"] > mart[("sade", "overall", "all")]["mean_probe_calls"]


def test_cost_and_failures_of_the_real_run(built) -> None:
    conn, _, batch, _ = built
    cost = {(r["incident_id"], r["method"]): r for r in _rows(conn, "SELECT * FROM mart_cost")}
    assert len(cost) == 4 * len(BACKLOG)  # astra, sade, flat and the verdict
    for inc, elapsed in conn.execute("SELECT incident_id, elapsed_s FROM verdicts").fetchall():
        assert cost[(inc, "verdict")]["analysis_s"] == pytest.approx(elapsed)
        assert cost[(inc, "verdict")]["llm_calls"] == 0 and cost[(inc, "verdict")]["method_family"] == "verdict"
    for inc, method, probes, tools, elapsed in conn.execute(
            "SELECT incident_id, method, probe_calls, tool_calls, elapsed_s FROM submissions").fetchall():
        row = cost[(inc, method)]
        assert (row["probe_calls"], row["tool_calls"], row["analysis_s"]) == (probes, tools, pytest.approx(elapsed))
    for inc, total, rounds in conn.execute("SELECT incident_id, sum(elapsed_s), count(*) FROM astra_rounds "
                                           "GROUP BY 1").fetchall():
        row = cost[(inc, "astra")]
        assert row["analysis_s"] == pytest.approx(total) and row["rounds"] == rounds and row["llm_calls"] == 0
    failures = _rows(conn, "SELECT * FROM mart_failures")
    assert [(f["source"], f["stage"], f["error_type"], f["failures"], f["last_incident"]) for f in failures] == [
        ("run_failures", "astra_eval", "FaultlineError", 1, "ghost-1")]
    assert "ghost-1" in failures[0]["last_message"] and batch.failures["ghost-1"] in failures[0]["last_message"]


STRATA = {  # category: (truth label, accuracy scores) - ties across and within groups on purpose
    "misconfiguration": ("bgp_acl_block", [1, 2, 2, 3, 5, 4]),
    "link_failure": ("link_down", [3, 3, 4, 5]),
    "end_host_failure": ("host_incorrect_ip", [0, 1, 1, 2, 2, 4, 1]),
    "network_under_attack": ("dhcp_spoofed_dns", [5]),
}


def _accuracy_rows(conn, method: str, strata: dict) -> None:
    for category, (label, values) in strata.items():
        for i, value in enumerate(values):
            inc = f"{method}-{category}-{i}"
            conn.execute("INSERT OR REPLACE INTO ground_truth "
                         "VALUES (?, true, [?], ['r1'], [], [], ?, '', 'test', now())",
                         [inc, label, category])
            conn.execute("INSERT INTO evaluations VALUES (?, ?, 'accuracy', ?, NULL, '{}', now())",
                         [inc, method, float(value)])


def test_fault_stratification_matches_scipy(conn) -> None:
    from scipy import stats

    _accuracy_rows(conn, "astra", STRATA)
    _accuracy_rows(conn, "astra:llm:fake/m", {"misconfiguration": ("bgp_acl_block", [5, 5, 4]),
                                              "link_failure": ("link_down", [1, 2])})
    conn.execute("INSERT INTO ground_truth VALUES ('healthy-1', false, [], [], [], [], NULL, '', 'test', now())")
    conn.execute("INSERT INTO evaluations VALUES ('healthy-1', 'astra', 'accuracy', 5, NULL, '{}', now())")
    refresh_marts(conn)
    rows = {(r["analyst"], r["grouping"], r["stratum"]): r
            for r in _rows(conn, "SELECT * FROM mart_fault_stratification")}
    groups = {c: [float(v) for v in vals] for c, (_, vals) in STRATA.items()}
    h, p = stats.kruskal(*groups.values())
    everything = [v for vals in groups.values() for v in vals]
    for category, values in groups.items():
        row = rows[("deterministic", "category", category)]
        n, m = len(values), mean(values)
        assert (row["n"], row["kw_groups"], row["kw_n"], row["kw_df"]) == (n, 4, len(everything), 3)
        assert row["kw_h"] == pytest.approx(h, rel=1e-9) and row["kw_p"] == pytest.approx(p, rel=1e-9)
        assert row["mean_accuracy"] == pytest.approx(m)
        assert row["share_ge3"] == pytest.approx(sum(v >= 3 for v in values) / n)
        assert [row[f"n_acc_{k}"] for k in range(6)] == [values.count(float(k)) for k in range(6)]
        if n >= 2:
            low, high = stats.t.interval(0.95, n - 1, loc=m, scale=stats.sem(values))
            assert (row["ci95_low"], row["ci95_high"]) == (pytest.approx(low), pytest.approx(high))
        else:
            assert row["ci95_low"] is None and row["sd_accuracy"] is None
        rest = [v for c, vals in groups.items() if c != category for v in vals]
        ss = sum((v - m) ** 2 for v in values) + sum((v - mean(rest)) ** 2 for v in rest)
        d = (m - mean(rest)) / (ss / (len(values) + len(rest) - 2)) ** 0.5
        assert row["cohens_d"] == pytest.approx(d) and row["rest_n"] == len(rest)
    # the domain grouping partitions the same incidents (one label per category here): same test
    assert rows[("deterministic", "domain", "routing")]["kw_h"] == pytest.approx(h)
    assert {k[2] for k in rows if k[:2] == ("deterministic", "domain")} == {"routing", "link", "host", "service"}
    llm = rows[("llm:fake/m", "category", "misconfiguration")]
    h2, p2 = stats.kruskal([5, 5, 4], [1, 2])
    assert llm["n"] == 3 and llm["kw_h"] == pytest.approx(h2) and llm["kw_p"] == pytest.approx(p2)
    assert not any(k[2] == "(unknown)" for k in rows), "healthy controls are not a fault type"


def test_refinement_falls_back_to_first_last_when_no_incident_has_every_round(conn) -> None:
    # stored rounds 2-3 and 2-4 (round 1 missing): nobody has 1..4, so each incident is paired with itself
    conn.execute("INSERT INTO ground_truth VALUES ('r-a', true, ['bgp_acl_block'], ['router1'], [], [], "
                 "'misconfiguration', '', 'test', now())")
    plan = {"r-a": {2: (2, None, ()), 3: (4, "bgp_acl_block", ("router1",))},
            "r-b": {2: (5, None, ()), 3: (3, None, ()), 4: (3, None, ())}}
    for inc, rounds in plan.items():
        for rnd, (score, label, devices) in rounds.items():
            _astra_round(conn, inc, rnd, label=label, devices=devices, final=rnd == max(rounds))
            for criterion in CRITERIA:
                conn.execute("INSERT INTO judge_scores "
                             "VALUES (?, 'deterministic', ?, ?, ?, 'r', 'j', 'v', NULL, now())",
                             [inc, rnd, criterion, score])
    refresh_marts(conn)
    rows = {(r["round"], r["criterion"]): r for r in _rows(conn, "SELECT * FROM mart_refinement_rounds")}
    assert {r["pairing"] for r in rows.values()} == {"first_last"} and {k[0] for k in rows} == {1, 2}
    first, last = rows[(1, "focus")], rows[(2, "focus")]
    assert (first["round_label"], last["round_label"]) == ("first", "last")
    assert first["mean_score"] == pytest.approx(3.5) and last["mean_score"] == pytest.approx(3.5)
    assert last["delta_from_first"] == pytest.approx(0.0)
    assert (last["share_improved"], last["share_degraded"]) == (pytest.approx(0.5), pytest.approx(0.5))
    acc = rows[(2, "accuracy")]  # only r-a has truth: 'undetermined' (0) -> right label and device (5)
    assert (acc["n_incidents"], rows[(1, "accuracy")]["mean_score"], acc["delta_from_first"]) == (1, 0.0, 5.0)
    summary = {r["criterion"]: r for r in _rows(conn, "SELECT * FROM mart_refinement_summary")}
    assert summary["judge_mean"]["delta_first_last"] == pytest.approx(0.0)
    assert summary["accuracy"]["share_improved"] == 1.0 and summary["focus"]["n_incidents"] == 2


def test_cost_counts_only_the_stored_runs_llm_calls_and_failures_list_them(conn) -> None:
    _astra_round(conn, "c-1", 1, analyst="llm:fake/m1", run_id="run-2", elapsed=1.5)
    _astra_round(conn, "c-1", 2, analyst="llm:fake/m1", run_id="run-2", elapsed=2.5, final=True)
    _submission(conn, "c-1", labels=["link_down"], policy="llm:fake/m1", probes=9, elapsed=0.5)
    calls = [("run-2", "astra.report", "fake/m1", 100, 20, 1000.0, None),
             ("run-2", "astra.judge", "fake/m1", 50, 10, 500.0, None),
             ("run-2", "astra.judge", "fake/m1", None, None, 200.0, "LLMError: boom"),
             ("run-1", "astra.report", "fake/m1", 999, 999, 9000.0, None),  # an older re-run: not this analysis
             ("run-2", "astra.report", "other/model", 7, 7, 1.0, None),  # another analyst's model
             (None, "sade.policy", "fake/m1", 30, 5, 300.0, None)]
    for i, (run, stage, model, tin, tout, ms, error) in enumerate(calls):
        conn.execute("INSERT INTO llm_calls (call_id, run_id, incident_id, stage, model, input_tokens, output_tokens, "
                     "duration_ms, error, created_at) VALUES (?, ?, 'c-1', ?, ?, ?, ?, ?, ?, now())",
                     [f"call-{i}", run, stage, model, tin, tout, ms, error])
    conn.execute("INSERT INTO run_failures VALUES ('f-1', 'run-2', 'c-2', 'astra.report', 'TimeoutError', 'slow', "
                 "NULL, now())")
    _submission(conn, "c-3", method="flat", status="error", error="probe timed out")
    refresh_marts(conn)
    cost = {r["method"]: r for r in _rows(conn, "SELECT * FROM mart_cost")}
    astra = cost["astra:llm:fake/m1"]
    assert (astra["llm_calls"], astra["llm_errors"], astra["prompt_tokens"],
            astra["completion_tokens"]) == (3, 1, 150, 30)
    assert astra["llm_s"] == pytest.approx(1.7) and astra["analysis_s"] == pytest.approx(4.0) and astra["rounds"] == 2
    sade = cost["sade"]
    assert (sade["llm_calls"], sade["total_tokens"], sade["probe_calls"], sade["driver"]) == (1, 35, 9, "llm:fake/m1")
    failures = {(r["source"], r["stage"], r["error_type"]): r for r in _rows(conn, "SELECT * FROM mart_failures")}
    assert set(failures) == {("run_failures", "astra.report", "TimeoutError"), ("llm_calls", "astra.judge", "LLMError"),
                             ("submissions", "diagnose.flat", "error")}
    assert failures[("submissions", "diagnose.flat", "error")]["last_message"] == "probe timed out"


def _mart(folder: Path, name: str, sql: str, columns: dict[str, str], tests: list | None = None,
          depends_on: list[str] | None = None, incremental: bool = False) -> None:
    import yaml

    folder.mkdir(exist_ok=True)
    (folder / f"{name}.sql").write_text(sql)
    (folder / f"{name}.yml").write_text(yaml.safe_dump({"mart": name, "grain": "one row per x", "description": "d",
                                                        "columns": columns, "tests": tests or [],
                                                        "depends_on": depends_on or [], "incremental": incremental}))


def test_a_broken_mart_names_its_file_and_nothing_is_refreshed(conn, tmp_path) -> None:
    folder = tmp_path / "marts"
    _mart(folder, "mart_a_good", "SELECT 1 AS x", {"x": "one"})
    _mart(folder, "mart_b_broken", "SELECT x FROM WHERE", {"x": "one"})
    with pytest.raises(FaultlineError) as err:
        refresh_marts(conn, folder=folder)
    assert "mart_b_broken" in err.value.message and str(folder / "mart_b_broken.sql") in err.value.message
    assert "mart_b_broken.sql" in (err.value.fix or "")
    tables = {r[0] for r in conn.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    assert "mart_a_good" not in tables  # one transaction: the good mart was rolled back too
    (folder / "mart_b_broken.sql").write_text("DROP TABLE tickets")
    with pytest.raises(FaultlineError, match="exactly one SELECT"):
        refresh_marts(conn, folder=folder)
    assert conn.execute("SELECT count(*) FROM tickets").fetchone()[0] == 0


def test_failed_data_tests_are_returned_and_dependencies_run_first(conn, tmp_path) -> None:
    folder = tmp_path / "marts"
    _mart(folder, "mart_z_base", "SELECT * FROM (VALUES (1, 'a'), (1, 'b'), (NULL, 'zz')) t(x, y)",
          {"x": "number", "y": "letter"},
          tests=[{"unique": ["x"]}, {"not_null": ["x", "y"]},
                 {"accepted_values": {"column": "y", "values": ["a", "b"]}},
                 {"accepted_range": {"column": "x", "min": 0, "max": 0}}])
    _mart(folder, "mart_a_top", "-- reads the other mart\nSELECT count(*) AS n FROM mart_z_base;",
          {"n": "rows", "gone": "a documented column the table lacks"}, depends_on=["mart_z_base"])
    results = {r.name: r for r in refresh_marts(conn, folder=folder)}
    assert [r for r in results] == ["mart_z_base", "mart_a_top"]
    assert results["mart_a_top"].rows == 1
    failed = {f.test.split(":")[0]: f.message for f in results["mart_z_base"].failed_tests}
    assert set(failed) == {"unique", "not_null", "accepted_values", "accepted_range"}
    assert ("'x': 1" in failed["not_null"] and "zz" in failed["accepted_values"]
            and "2 row(s)" in failed["accepted_range"])
    assert [f.test for f in results["mart_a_top"].failed_tests] == ["columns"]
    assert "gone" in results["mart_a_top"].failed_tests[0].message


def test_cli_refreshes_and_lists_the_marts(run_cli, conn, capsys) -> None:
    conn.execute("INSERT INTO run_failures VALUES ('f-1', NULL, 'inc-9', 'ingest_logs', 'ValueError', 'bad line', "
                 "NULL, now())")
    run_cli("marts", "refresh", "--json")
    payload = {m["mart"]: m for m in json.loads(capsys.readouterr().out)}
    assert set(payload) == {s.name for s in list_marts()}
    assert payload["mart_failures"]["rows"] == 1 and payload["mart_cost"]["rows"] == 0
    assert all(m["failed_tests"] == [] for m in payload.values())
    assert {m["refreshed_incidents"] for m in payload.values()} == {None}  # first refresh: every mart whole
    run_cli("marts", "refresh")
    out = capsys.readouterr().out
    assert "mart_refinement_rounds" in out and f"{len(list_marts())} mart(s), 0 failed test(s)" in out
    assert "0 incident(s)" in out  # nothing analysed since: the incremental marts had nothing to rebuild
    run_cli("marts", "refresh", "--full", "--json")
    assert {m["refreshed_incidents"] for m in json.loads(capsys.readouterr().out)} == {None}
    run_cli("marts", "list")
    assert "mart_fault_stratification" in capsys.readouterr().out
    run_cli("marts", "list", "--json")
    listed = {m["mart"]: m["incremental"] for m in json.loads(capsys.readouterr().out)}
    assert listed["mart_sade_trace"] is True and listed["mart_incidents"] is False


def test_refinement_pairs_the_incidents_with_every_round_and_leaves_the_others_out(conn) -> None:
    plan = {"p-full": [2, 3, 5], "p-full2": [4, 4, 3], "p-short": [1, 5]}  # deepest round 3; p-short is unpaired
    for inc, per_round in plan.items():
        for rnd, score in enumerate(per_round, start=1):
            _astra_round(conn, inc, rnd, analyst="llm:fake/m", final=rnd == len(per_round))
            for criterion in CRITERIA:
                conn.execute("INSERT INTO judge_scores VALUES (?, 'llm:fake/m', ?, ?, ?, 'r', 'j', 'v', NULL, now())",
                             [inc, rnd, criterion, score])
    refresh_marts(conn)
    rows = {(r["round"], r["criterion"]): r for r in _rows(conn, "SELECT * FROM mart_refinement_rounds")}
    assert {r["pairing"] for r in rows.values()} == {"all_rounds"} and {k[0] for k in rows} == {1, 2, 3}
    last = rows[(3, "coverage")]
    assert (last["n_incidents"], last["analysed_incidents"], last["deepest_round"]) == (2, 3, 3)
    assert last["mean_score"] == pytest.approx(4.0) and last["delta_from_first"] == pytest.approx(1.0)  # (3 - 1) / 2
    assert (last["share_improved"], last["share_degraded"], last["share_unchanged"]) == (0.5, 0.5, 0.0)
    assert rows[(2, "judge_mean")]["round_label"] == "R2" and rows[(2, "judge_mean")]["mean_score"] == 3.5
    summary = {r["criterion"]: r for r in _rows(conn, "SELECT * FROM mart_refinement_summary")}["focus"]
    assert (summary["n_incidents"], summary["n_single_round"]) == (3, 0)  # first -> last includes p-short
    assert (summary["delta_first_last"] == pytest.approx((3 - 1 + 4) / 3)
            and summary["share_improved"] == pytest.approx(2 / 3))


def _contents(conn) -> dict[str, list[tuple]]:
    """Every mart's rows, in a fixed order (an incremental refresh appends, a rebuild sorts)."""
    return {spec.name: sorted(conn.execute(f"SELECT * FROM {spec.name}").fetchall(), key=repr)
            for spec in list_marts()}


def test_a_night_refreshes_only_the_incidents_it_wrote_and_equals_a_full_rebuild(built, tmp_path) -> None:
    import shutil

    from faultline import db
    from faultline.astra.batch import evaluate_incidents
    from faultline.config import Settings
    from faultline.sade.records import Diagnosis
    from faultline.sade.store import save_diagnosis

    source = built[0]
    source.execute("CHECKPOINT")
    path = Path(source.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()")
                .fetchone()[0])
    shutil.copyfile(path, tmp_path / "night.duckdb")
    settings = Settings(duckdb_path=tmp_path / "night.duckdb", lancedb_dir=path.parent / "lancedb", progress=False)
    conn = db.connect(settings.duckdb_path)
    assert conn.execute("SELECT count(*) FROM marts_stale").fetchone()[0] == 0  # the fixture's refresh emptied it
    before = _contents(conn)
    redone, cut = BACKLOG[0], BACKLOG[1]
    rounds = "SELECT max(final_round) FROM mart_incident_reports WHERE incident_id = ?"
    assert conn.execute(rounds, [redone]).fetchone()[0] > 1
    evaluate_incidents(conn, settings, [redone], max_rounds=1)  # tonight: one incident analysed again, one round
    diag = conn.execute("SELECT count(*) FROM sade_steps WHERE incident_id = ? AND method = 'sade'",
                        [cut]).fetchone()[0]
    assert diag > 2
    stored = Diagnosis(incident_id=cut, method="sade", policy="deterministic", backend="snapshot", submission=None,
                       steps=[], flags=[], probe_calls=0, tool_calls=0, elapsed_s=0.1, status="error",
                       error="probe timed out")
    save_diagnosis(conn, stored, run_id="tonight")  # and one diagnosis replaced by a failed one without steps

    results = {r.name: r for r in refresh_marts(conn, settings)}
    incremental = {n for n, r in results.items() if r.incremental}
    assert incremental == {s.name for s in list_marts() if s.incremental} and len(incremental) == 7
    assert {results[n].incidents for n in incremental} == {2} and all(r.ok for r in results.values())
    assert conn.execute("SELECT count(*) FROM marts_stale").fetchone()[0] == 0
    after = _contents(conn)
    assert conn.execute(rounds, [redone]).fetchone()[0] == 1
    assert conn.execute("SELECT count(*) FROM mart_sade_trace WHERE incident_id = ? AND method = 'sade'",
                        [cut]).fetchone()[0] == 0
    assert conn.execute("SELECT status, steps FROM mart_sade_submissions WHERE incident_id = ? AND method = 'sade'",
                        [cut]).fetchone() == ("error", 0)
    untouched = [r for r in before["mart_sade_trace"] if r[0] not in (redone, cut)]
    assert untouched and untouched == [r for r in after["mart_sade_trace"] if r[0] not in (redone, cut)]

    full = {r.name: r for r in refresh_marts(conn, settings, full=True)}
    assert not any(r.incremental for r in full.values())
    rebuilt = _contents(conn)
    # the incremental refresh left what a rebuild gives (the other marts were rebuilt both times)
    assert [m for m in incremental if rebuilt[m] != after[m]] == []

    from faultline.ingest.incidents import _upsert_truth

    accuracy = "SELECT score FROM mart_round_scores WHERE incident_id = ? AND criterion = 'accuracy'"
    # an answer key corrected and ingested again, for an incident no one analysed since: it names what the
    # incident's final report says, so the report's accuracy rises
    other, label, devices = conn.execute("SELECT incident_id, label, devices FROM astra_rounds WHERE is_final AND "
                                         "label IS NOT NULL AND incident_id NOT IN (?, ?) ORDER BY incident_id",
                                         [redone, cut]).fetchone()
    accuracy += " AND round = (SELECT max(round) FROM astra_rounds WHERE incident_id = ?)"
    (right,) = conn.execute(accuracy, [other, other]).fetchone()
    _upsert_truth(conn, other, {"v1": {"is_anomaly": True, "root_cause_names": [label], "faulty_devices": devices}})
    (scores,) = [r for r in refresh_marts(conn, settings) if r.name == "mart_round_scores"]
    assert (scores.incremental, scores.incidents) == (True, 1)
    (now,) = conn.execute(accuracy, [other, other]).fetchone()
    assert now > right
    refresh_marts(conn, settings, full=True)
    assert conn.execute(accuracy, [other, other]).fetchone() == (now,)
    conn.close()


def test_an_incremental_mart_follows_the_marks_and_is_rebuilt_when_its_sql_changes(conn, tmp_path) -> None:
    from faultline.stale import mark_stale

    folder = tmp_path / "marts"
    sql = "SELECT incident_id, count(*) AS claims FROM claims GROUP BY incident_id"
    _mart(folder, "mart_claim_counts", sql, {"incident_id": "incident", "claims": "how many"},
          tests=[{"unique": ["incident_id"]}], incremental=True)

    def claim(incident: str, claim_id: str) -> None:
        conn.execute("INSERT INTO claims (incident_id, analyst, claim_id, seq, round, agent, text, tag, created_at) "
                     "VALUES (?, 'deterministic', ?, 1, 0, 'log', 't', 'CAUSAL', now())", [incident, claim_id])
        mark_stale(conn, incident, "astra")

    def counts() -> dict[str, int]:
        return dict(conn.execute("SELECT incident_id, claims FROM mart_claim_counts").fetchall())

    claim("a", "c1")
    claim("b", "c1")
    (first,) = refresh_marts(conn, folder=folder)
    assert not first.incremental and counts() == {"a": 1, "b": 1}  # no table yet: built whole
    claim("a", "c2")
    (second,) = refresh_marts(conn, folder=folder)
    assert (second.incremental, second.incidents, second.rows) == (True, 1, 2) and counts() == {"a": 2, "b": 1}
    (nothing,) = refresh_marts(conn, folder=folder)
    assert (nothing.incremental, nothing.incidents) == (True, 0) and counts() == {"a": 2, "b": 1}
    (folder / "mart_claim_counts.sql").write_text(sql.replace("count(*)", "count(*) + 10"))
    (changed,) = refresh_marts(conn, folder=folder)
    assert not changed.incremental and counts() == {"a": 12, "b": 11}  # other SQL: every incident rebuilt


def test_a_failed_refresh_keeps_the_marks_for_the_next(conn, tmp_path) -> None:
    from faultline.stale import mark_stale

    folder = tmp_path / "marts"
    _mart(folder, "mart_a_counts", "SELECT incident_id, max(CAST(claim_id AS INTEGER)) AS n FROM claims "
          "GROUP BY incident_id", {"incident_id": "incident", "n": "highest claim number"}, incremental=True)
    refresh_marts(conn, folder=folder)
    mark_stale(conn, "inc-1", "astra")
    _mart(folder, "mart_b_broken", "SELECT x FROM WHERE", {"x": "one"})
    with pytest.raises(FaultlineError, match="mart_b_broken"):
        refresh_marts(conn, folder=folder)
    assert conn.execute("SELECT incident_id FROM marts_stale").fetchall() == [("inc-1",)]
    (folder / "mart_b_broken.sql").unlink()
    (folder / "mart_b_broken.yml").unlink()
    conn.execute("INSERT INTO claims (incident_id, analyst, claim_id, seq, round, agent, text, tag, created_at) "
                 "VALUES ('inc-1', 'deterministic', 'not-a-number', 1, 0, 'log', 't', 'CAUSAL', now())")
    with pytest.raises(FaultlineError, match="mart_a_counts failed") as err:  # fails on the incident's own rows
        refresh_marts(conn, folder=folder)
    assert "not-a-number" in err.value.message
    assert conn.execute("SELECT incident_id FROM marts_stale").fetchall() == [("inc-1",)]
    assert conn.execute("SELECT count(*) FROM duckdb_views() WHERE NOT internal AND temporary").fetchone()[0] == 0


def test_an_incremental_mart_reading_an_unmarked_table_is_refused(conn, tmp_path) -> None:
    folder = tmp_path / "marts"
    _mart(folder, "mart_titles", "SELECT c.incident_id, t.title FROM claims c JOIN tickets t ON t.ticket_id = "
          "c.incident_id", {"incident_id": "incident", "title": "ticket title"}, incremental=True)
    with pytest.raises(FaultlineError, match="reads tickets, whose writers do not mark") as err:
        refresh_marts(conn, folder=folder)
    assert str(folder / "mart_titles.sql") in err.value.message and "incremental: true" in (err.value.fix or "")
    _mart(folder, "mart_titles", "SELECT 1 AS n", {"n": "one"}, incremental=True)
    with pytest.raises(FaultlineError, match="needs an incident_id column"):
        refresh_marts(conn, folder=folder)
