"""ASTRA evaluation: the 0-5 accuracy rubric, completeness, fabricated identifiers, verified share, rounds."""

from __future__ import annotations

import json

import pytest
import yaml

from faultline.astra.evaluate import AstraScore, score_result, summarise
from faultline.astra.records import (
    AgentOutput,
    AstraResult,
    AstraRound,
    Claim,
    Evidence,
    Finding,
    Incident,
    JudgeScore,
    Report,
)
from faultline.truth.records import Truth
from faultline.truth.rubric import score_accuracy
from faultline.truth.taxonomy import RUBRIC_FILE

TICKET = Incident(incident_id="inc-1", ticket_id="NET-3718566",
                  title="[monitoring] can't reach the machine at 10.1.1.10 since 01:20",
                  description="we lost reachability to the machine at 10.1.1.10 from the site 1 office")
BGP_TRUTH = Truth(incident_id="inc-1", is_faulty=True, labels=["bgp_acl_block"], devices=["router1"])
LOG_TEXT = ("2026/11/30 01:20:37 BGP: [HZN6M-XRM1G] %NOTIFICATION: sent to neighbor 10.0.0.1 4/0 "
            "(Hold Timer Expired) on router1\n"
            "2026/11/30 01:20:37 BGP: [PXVXG-TFNNT] %ADJCHANGE: neighbor 10.0.0.1(router2) in vrf default Down")


def _report(*, label=None, category=None, devices=(), root_cause="", symptom="10.1.1.10 unreachable",
            fix="remove the filter on router1", verification="ping 10.1.1.10 answers", text=None, rnd=1) -> Report:
    body = text if text is not None else f"{symptom}. Root cause: {root_cause}. Fix: {fix}. Check: {verification}."
    return Report(incident_id="inc-1", round=rnd, symptom=symptom, evidence=[], root_cause=root_cause, fix=fix,
                  verification=verification, label=label, category=category, devices=list(devices), text=body)


def _accuracy(report: Report, truth: Truth = BGP_TRUTH) -> int:
    return score_accuracy(label=report.label, category=report.category, devices=report.devices,
                          root_cause=report.root_cause, truth=truth).score


def _result(*reports: Report, outputs=None, claims=(), evidence=(), judge=()) -> AstraResult:
    rounds = []
    for i, rep in enumerate(reports):
        scores = [JudgeScore(incident_id="inc-1", round=rep.round, criterion="coverage", score=s, reason="r",
                             judge="deterministic-judge", version="v1") for s in (judge[i:i + 1] or [])]
        rounds.append(AstraRound(incident_id="inc-1", round=rep.round, report=rep, scores=scores,
                                 revise=i < len(reports) - 1))
    if outputs is None:
        outputs = [AgentOutput(agent="log", round=1, query="q", text=LOG_TEXT, label="bgp_acl_block",
                               devices=["router1"])]
    return AstraResult(incident_id="inc-1", analyst="deterministic", outputs=outputs, claims=list(claims),
                       evidence=list(evidence), rounds=rounds, elapsed_s=1.5)


@pytest.mark.parametrize(("report", "expected"), [
    (_report(label="bgp_acl_block", devices=["router1"], root_cause="bgp_acl_block on router1"), 5),
    (_report(label="bgp_acl_block", devices=["router2"], root_cause="BGP filtered"), 4),
    (_report(label="bgp_acl_block", devices=[], root_cause="BGP filtered"), 4),
    (_report(label="bgp_acl_block", devices=["router1", "router2"], root_cause="x"), 4),  # names a healthy device
    (_report(label="bgp_asn_misconfig", devices=["router1"], root_cause="wrong AS"), 3),  # same family
    (_report(label="ospf_neighbor_missing", root_cause="ospf"), 3),  # routing + misconfiguration
    (_report(label="frr_service_down", root_cause="frr died"), 2),  # routing, other category
    (_report(label="dns_service_down", root_cause="dns"), 1),  # service domain
    (_report(root_cause="The firewall on the router ate the packets"), 1),  # names nothing in the taxonomy
    (_report(root_cause="undetermined"), 0),
    (_report(root_cause=""), 0),
    (_report(root_cause="Most likely bgp_acl_block: TCP 179 dropped", devices=["router1"]), 5),  # label in the text
    (_report(category="misconfiguration", root_cause="a misconfiguration"), 3),
    (_report(category="routing", root_cause="routing"), 2),
    (_report(category="link_failure", root_cause="link"), 1),
])
def test_each_rubric_level(report: Report, expected: int) -> None:
    assert _accuracy(report) == expected


def test_multi_fault_truth_takes_the_best_matching_fault() -> None:
    truth = Truth(incident_id="inc-1", is_faulty=True, labels=["link_down", "dns_service_down"],
                  devices=["router1", "dns_server"])
    assert _accuracy(_report(label="dns_service_down", devices=["dns_server"]), truth) == 5
    assert _accuracy(_report(label="dns_record_error", devices=["dns_server"]), truth) == 3


def test_healthy_control_rewards_no_fault_and_punishes_a_fault() -> None:
    healthy = Truth(incident_id="inc-1", is_faulty=False)
    assert _accuracy(_report(root_cause="No fault found", category="no_fault"), healthy) == 5
    assert _accuracy(_report(root_cause="nothing named"), healthy) == 5
    assert _accuracy(_report(label="link_down", root_cause="link down"), healthy) == 1


def test_rubric_data_covers_every_catalogue_label() -> None:
    from faultline.nika.labels import catalogue

    data = yaml.safe_load(RUBRIC_FILE.read_text())
    assert {info.label for info in catalogue()} == set(data["labels"])
    assert set(data["labels"].values()) <= set(data["families"])
    assert set(data["families"].values()) <= set(data["domains"])


def test_a_fabricated_ip_is_caught_and_ticket_identifiers_are_not() -> None:
    text = ("Reachability to 10.1.1.10 (ticket NET-3718566) was lost. BGP on router1 dropped its session "
            "to 10.0.0.1 ([HZN6M-XRM1G]); the filter also blocks 192.168.77.5 on eth3.")
    score = score_result(_result(_report(label="bgp_acl_block", devices=["router1"], text=text)), TICKET, BGP_TRUTH)
    assert score.fabricated == ["ip:192.168.77.5", "interface:eth3"]
    assert score.identifiers == 7  # 10.1.1.10, NET-3718566, router1, 10.0.0.1, HZN6M-XRM1G, 192.168.77.5, eth3
    assert score.fabricated_rate == pytest.approx(2 / 7)
    assert score.accuracy == 5


def test_identifiers_seen_only_in_a_later_round_are_fabricated_in_an_earlier_one() -> None:
    outputs = [AgentOutput(agent="log", round=1, query="q", text=LOG_TEXT),
               AgentOutput(agent="domain", round=2, query="follow-up", text="see EC_BGP_ASPATH_FEWER_HOPS",
                           findings=[Finding(text="doc", quotes=["router3 shown in the guide"])])]
    text = "router1 lost 10.0.0.1; EC_BGP_ASPATH_FEWER_HOPS; router3"
    score = score_result(_result(_report(text=text), _report(text=text, rnd=2), outputs=outputs), TICKET, BGP_TRUTH)
    assert score.rounds[0].fabricated == ["frr_code:EC_BGP_ASPATH_FEWER_HOPS", "device:router3"]
    assert score.rounds[1].fabricated == []
    assert score.fabricated == []


def test_a_near_miss_address_or_device_is_not_traceable() -> None:
    text = "router10 lost 10.0.0.10"  # the sources name router1 and 10.0.0.1, not these
    score = score_result(_result(_report(text=text)), TICKET, BGP_TRUTH)
    assert score.fabricated == ["device:router10", "ip:10.0.0.10"]


def test_completeness_verified_share_and_round_deltas() -> None:
    claims = [Claim(claim_id=f"c{i}", incident_id="inc-1", round=1, agent="log", text=f"claim {i}") for i in range(4)]
    evidence = [Evidence(claim_id="c0", source="log", quote="q", method="verbatim", overlap=1.0, confidence="high",
                         status="VERIFIED"),
                Evidence(claim_id="c1", source="log", quote="q", method="keyword_window", overlap=0.7,
                         confidence="medium", status="VERIFIED"),
                Evidence(claim_id="c2", source="log", quote="q", method="none", overlap=0.1, confidence="low",
                         status="UNVERIFIED")]
    first = _report(root_cause="undetermined", fix="", verification="TBD", rnd=1)
    last = _report(label="bgp_acl_block", devices=["router1"], root_cause="bgp_acl_block", rnd=2)
    score = score_result(_result(first, last, claims=claims, evidence=evidence, judge=(2, 4)), TICKET, BGP_TRUTH)
    assert [r.accuracy for r in score.rounds] == [0, 5]
    assert score.rounds[0].completeness == pytest.approx(0.25)
    assert score.completeness == 1.0 and score.missing_dimensions == []
    assert score.accuracy_delta == 5 and score.judge_delta == pytest.approx(2.0)
    assert score.verified_claims == 2 and score.verified_share == pytest.approx(0.5)


def test_summary_shares_are_over_faulty_incidents_and_pool_identifiers() -> None:
    good = score_result(_result(_report(label="bgp_acl_block", devices=["router1"], text="router1")), TICKET,
                        BGP_TRUTH)
    wrong = score_result(_result(_report(label="dns_service_down", text="dns_server at 10.9.9.9")), TICKET, BGP_TRUTH)
    healthy = score_result(_result(_report(root_cause="no fault", category="no_fault", text="all fine")), TICKET,
                           Truth(incident_id="inc-1", is_faulty=False))
    summary = summarise([good, wrong, healthy])
    assert (summary.faulty, summary.healthy) == (2, 1)
    assert summary.accuracy_distribution[5] == 1 and summary.accuracy_distribution[1] == 1
    assert summary.share_accuracy_ge3 == pytest.approx(0.5) and summary.healthy_correct == 1.0
    assert summary.reports_with_fabricated == pytest.approx(1 / 3)
    assert summary.fabricated_identifier_rate == pytest.approx(2 / 3)  # dns_server, 10.9.9.9 of 3
    assert summarise([]).share_accuracy_ge3 is None


def test_scores_are_stored_as_evaluation_rows_and_replaced_on_rescoring(conn) -> None:
    from faultline.astra.eval_store import save_scores

    truth = BGP_TRUTH
    score = score_result(_result(_report(label="bgp_acl_block", devices=["router1"], text="router1")), TICKET, truth)
    assert save_scores(conn, [score], {"inc-1": truth}, run_id="r1") > 0
    worse = AstraScore.model_validate({**score.model_dump(), "accuracy": 2})
    save_scores(conn, [worse], {"inc-1": truth}, run_id="r2")
    rows = conn.execute("SELECT metric, value, run_id, attributes FROM evaluations WHERE incident_id = 'inc-1' "
                        "AND method = 'astra' ORDER BY metric").fetchall()
    values = {m: v for m, v, _, _ in rows}
    assert values["accuracy"] == 2.0 and values["accuracy_ge3"] == 0.0
    assert {r[2] for r in rows} == {"r2"}
    assert json.loads(rows[0][3])["labels"] == ["bgp_acl_block"]


@pytest.fixture
def analysed(settings, conn):
    """sample-backlog-003 in the warehouse, analysed by the real engine over hand-built agents, stored."""
    from faultline.astra.engine import analyse
    from faultline.astra.store import save_result
    from faultline.ingest.incidents import ingest_incidents
    from tests.astra_cases import INCIDENT_DIR, SourceAgents, incident

    ingest_incidents(conn, settings, [INCIDENT_DIR])
    result = analyse(incident(), settings=settings, conn=conn, agents=SourceAgents().agents())
    save_result(conn, result)
    return result


def test_the_engines_report_on_a_real_incident_scores_against_its_truth(conn, analysed) -> None:
    from faultline.astra.incident import load_incident
    from faultline.truth.store import load_truth

    truth = load_truth(conn, "sample-backlog-003")
    assert truth is not None and truth.labels == ["bgp_acl_block"] and truth.devices == ["router1"]
    score = score_result(analysed, load_incident(conn, "sample-backlog-003"), truth)
    assert score.accuracy >= 4  # the log agent names bgp_acl_block
    assert score.identifiers > 0 and score.fabricated == []  # every identifier comes from the ticket or agents
    assert len(score.rounds) == len(analysed.rounds)
    assert score.verified_share is not None and score.verified_share > 0.5


def test_report_command_prints_the_stored_analysis_with_claims_and_evaluation(run_cli, analysed, capsys) -> None:
    run_cli("report", "sample-backlog-003", "--json")
    payload = json.loads(capsys.readouterr().out)
    assert payload["stored"] is True
    assert payload["result"]["rounds"][-1]["report"]["label"] == analysed.rounds[-1].report.label
    assert len(payload["result"]["claims"]) == len(analysed.claims)
    assert payload["evaluation"]["accuracy"] >= 4
    run_cli("report", "sample-backlog-003")
    out = capsys.readouterr().out
    assert "claims and evidence" in out and "VERIFIED" in out and "against ground truth: accuracy" in out


def test_report_command_names_an_unknown_incident_without_a_traceback(run_cli, conn, capsys) -> None:
    run_cli("report", "no-such-incident", expect_exit=2)
    err = capsys.readouterr().err
    assert "no incident or ticket 'no-such-incident'" in err and "Traceback" not in err


def _jira(key: str, created: str, resolved: str | None, summary: str, components: list[str]) -> dict:
    return {"key": key, "project": "ZOOKEEPER", "created": created, "resolved": resolved, "status": "Closed",
            "resolution": "Fixed" if resolved else None, "priority": "Major", "components": components,
            "versions": [], "fix_versions": [], "summary": summary, "description": summary, "environment": None,
            "links": [], "comments": []}


@pytest.fixture
def component_history(settings, conn, tmp_path):
    from faultline.ingest.api import ingest_paths

    rows = [
        _jira("ZK-1", "2010-01-01T00:00:00+00:00", "2010-01-05T00:00:00+00:00",
              "zkfuse mount hangs in the c client library zookeeper_mt", ["c client"]),
        _jira("ZK-2", "2010-01-02T00:00:00+00:00", "2010-01-06T00:00:00+00:00",
              "c client zoo_aget leaks memory in zookeeper_mt adaptor", ["c client"]),
        _jira("ZK-3", "2010-01-03T00:00:00+00:00", "2010-01-07T00:00:00+00:00",
              "ClientCnxn.java reconnect loop in the java client", ["java client"]),
        _jira("ZK-4", "2010-01-04T00:00:00+00:00", "2010-01-08T00:00:00+00:00",
              "QuorumPeer election stalls after leader restart", ["quorum"]),
        # resolved after the query ticket was opened: must not teach the lexicon anything
        _jira("ZK-5", "2010-01-09T00:00:00+00:00", "2010-03-01T00:00:00+00:00",
              "zookeeper_mt zoo_aget deadlock in the c client", ["java client"]),
        _jira("ZK-6", "2010-02-01T00:00:00+00:00", "2010-02-10T00:00:00+00:00",
              "zoo_aget returns garbage from zookeeper_mt", ["c client"]),
    ]
    path = tmp_path / "zk.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    ingest_paths(conn, settings, kind="tickets", paths=[path])
    return conn


def test_fault_area_reads_components_from_history_terms_without_the_tickets_own(component_history) -> None:
    from faultline.astra.fault_area import infer_components, load_lexicon
    from faultline.astra.incident import load_incident

    conn = component_history
    incident = load_incident(conn, "ZK-6", with_components=False)
    assert incident.components == []
    lexicon = load_lexicon(conn, incident)
    assert sum(lexicon.prior.values()) == 4  # ZK-5 was resolved after ZK-6 was opened; ZK-6 is itself
    votes = infer_components(conn, incident, {}, lexicon=lexicon)
    assert votes[0].component == "c client"
    assert {"zoo_aget", "zookeeper_mt"} & set(votes[0].terms)


def test_fault_area_weighs_similar_tickets_against_the_lexicon(component_history) -> None:
    from faultline.astra.fault_area import infer_components
    from faultline.astra.incident import load_incident

    conn = component_history
    incident = load_incident(conn, "ZK-6", with_components=False)
    sim = AgentOutput(agent="similarity", round=1, query="q", text="similar tickets",
                      data={"tickets": [{"ticket_id": "ZK-4", "score": 0.9, "components": ["quorum"]}]})
    votes = {v.component: v for v in infer_components(conn, incident, {"similarity": sim})}
    assert votes["quorum"].precedent == 1.0 and votes["quorum"].tickets == ["ZK-4"]
    assert votes["c client"].precedent == 0.0
    alone = {v.component: v for v in infer_components(conn, incident, {})}
    assert votes["quorum"].score > alone["quorum"].score  # a precedent raises its component
    assert votes["c client"].score < alone["c client"].score


def test_a_batch_scores_incidents_stores_rows_and_keeps_going_after_a_failure(settings, conn) -> None:
    from faultline.astra.batch import evaluate_incidents
    from faultline.ingest.incidents import ingest_incidents
    from tests.astra_cases import INCIDENT_DIR, SourceAgents

    ingest_incidents(conn, settings, [INCIDENT_DIR])
    conn.execute("INSERT INTO incidents (incident_id, ticket_id, title, is_historical, created_at) "
                 "VALUES ('broken', 'NO-1', 'no ticket behind it', false, now())")
    conn.execute("INSERT INTO ground_truth VALUES ('broken', true, ['link_down'], ['r1'], [], [], 'link_failure', "
                 "'', 'lab', now())")
    source = SourceAgents()

    def gather(incident):
        if incident.incident_id == "broken":
            raise RuntimeError("agent crashed")
        return source.gather(incident)

    from faultline.astra.engine import Agents

    batch = evaluate_incidents(conn, settings, ["sample-backlog-003", "broken", "no-truth"],
                               agents=Agents(gather=gather, ask=source.ask))
    assert [s.incident_id for s in batch.scores] == ["sample-backlog-003"]
    assert "agent crashed" in batch.failures["broken"] and batch.skipped == ["no-truth"]
    stored = conn.execute("SELECT count(*) FROM evaluations WHERE method = 'astra' AND incident_id = "
                          "'sample-backlog-003'").fetchone()[0]
    failed = conn.execute("SELECT incident_id, stage FROM run_failures WHERE run_id = ?", [batch.run_id]).fetchall()
    rounds = conn.execute("SELECT count(*) FROM astra_rounds WHERE incident_id = 'sample-backlog-003'").fetchone()[0]
    assert stored > 5 and rounds == len(batch.scores[0].rounds)
    assert failed == [("broken", "astra_eval")]
