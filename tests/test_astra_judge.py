"""The deterministic judge's consistency checks: a coherent report scores high, a wrong-but-fluent one asks
for revision.

Reports, claims and evidence are built by hand around the real sample incident of `astra_cases`
(sample-backlog-003: a firewall on router1 drops BGP's TCP 179), plus the benchmark's AUROC.
"""

from __future__ import annotations

from statistics import mean

import pytest

from bench.judge import RoundRow, auroc, paired_delta
from faultline.astra import judge
from faultline.astra.records import AgentOutput, Claim, Evidence, JudgeScore, Report
from faultline.astra.report import render_markdown
from tests import astra_cases as cases

INCIDENT = "sample-backlog-003"
RUNBOOK_ROOT = ("NOC runbook > OSPF > Adjacency stuck in EXSTART or EXCHANGE: Almost always an interface MTU mismatch "
                "between the two neighbours: DBD packets larger than the peer's MTU are dropped.")
OTHER_FIX = ("In similar ticket NET-5566722 (can't reach 10.1.2.11), the fix was: Fix: Restored dhcp_server's own MAC "
             "and flushed the bridge forwarding and ARP tables.")


def _claim(cid: str, agent: str, text: str, tag: str | None, status: str = "VERIFIED") -> tuple[Claim, Evidence]:
    claim = Claim(claim_id=cid, incident_id=INCIDENT, round=1, agent=agent, text=text, tag=tag)
    # model_construct: the status is read as a plain string, so REFERENCE works whatever the record allows
    ev = Evidence.model_construct(claim_id=cid, source=agent, quote=text, method="verbatim", overlap=1.0,
                                  confidence="high", status=status)
    return claim, ev


def _outputs() -> dict[str, AgentOutput]:
    outputs = cases.outputs()
    log = outputs["log"]
    outputs["log"] = log.model_copy(update={"data": {"label_scores": {"bgp_acl_block": 0.89}}})
    return outputs


def _report(**fields) -> Report:
    base = {"incident_id": INCIDENT, "round": 1,
            "symptom": "Reported: can't reach 10.1.1.10. Observed: router1 lost its BGP session to 10.0.0.1.",
            "evidence": ["router1 sent a Hold Timer Expired notification to 10.0.0.1.",
                         "The BGP session between router1 and router2 went down after Hold Timer Expired."],
            "root_cause": "bgp_acl_block (misconfiguration) on router1. Supported by: a firewall on router1 "
                          "blocked TCP port 179.",
            "fix": "On router1: delete the nft firewall table that drops TCP port 179.",
            "verification": "ping 10.1.1.10 and check the BGP session to 10.0.0.1 is Established.",
            "label": "bgp_acl_block", "category": "misconfiguration", "devices": ["router1"], "text": ""}
    base.update(fields)
    report = Report(**base)
    return report.model_copy(update={"text": render_markdown(report)})


def _coherent_claims() -> tuple[list[Claim], list[Evidence]]:
    pairs = [_claim("c1", "log", "A firewall on router1 blocked TCP port 179 because of an nft rule.", "CAUSAL"),
             _claim("c2", "log", "router1 sent a Hold Timer Expired notification to 10.0.0.1", "SYMPTOMATIC")]
    return [c for c, _ in pairs], [e for _, e in pairs]


def _scores(report: Report, claims=None, evidence=None, outputs=None) -> dict[str, JudgeScore]:
    if claims is None:
        claims, evidence = _coherent_claims()
    scored = judge.judge_deterministic(cases.incident(), outputs or _outputs(), claims, evidence or [], report)
    return {s.criterion: s for s in scored}


def _mean(scores: dict[str, JudgeScore]) -> float:
    return mean(s.score for s in scores.values())


def _wrong_report() -> tuple[Report, list[Claim], list[Evidence]]:
    """The demo's failure: a runbook section as root cause, no label, another ticket's fix, other devices' lines."""
    chain = [("Causal chain (time order): spine_0_1: bgpd[17595]: %NOTIFICATION: sent to neighbor 10.0.0.43 -> "
             "core_router_2: ospfd[13653]: interface eth2:10.0.0.10: ospf_read invalid Area ID"),
             ("Causal chain (time order): core_router_2: ospfd[13653]: [Y9FH4-5CVMQ] interface eth2 AdjChg "
             "-> dist_router_1_1: ospfd[14855]: AdjChg: Nbr 10.255.0.1"),
             "dist_router_1_1 logged (notice, ospfd): AdjChg: Nbr 10.255.0.1, NbrIP 10.0.0.6"]
    pairs = [_claim("d1", "domain", RUNBOOK_ROOT, "CAUSAL"), _claim("s1", "similarity", OTHER_FIX, None),
             *(_claim(f"l{i}", "log", text, "SYMPTOMATIC") for i, text in enumerate(chain))]
    report = _report(label=None, category=None, devices=[], root_cause=RUNBOOK_ROOT, fix=OTHER_FIX,
                     evidence=[*chain, RUNBOOK_ROOT])
    return report, [c for c, _ in pairs], [e for _, e in pairs]


def _wrong_outputs() -> dict[str, AgentOutput]:
    """Agents that really said all of it (every identifier traceable) and named no label."""
    report, _, _ = _wrong_report()
    outputs = _outputs()
    texts = {"log": "\n".join(report.evidence[:3]), "domain": RUNBOOK_ROOT, "similarity": OTHER_FIX}
    return {name: out.model_copy(update={"text": f"{out.text}\n{texts[name]}", "label": None, "category": None})
            for name, out in outputs.items()}


def test_a_coherent_report_scores_high_and_needs_no_revision():
    scores = _scores(_report())
    assert _mean(scores) >= 4
    assert scores["root_cause_identification"].score == 5
    assert not judge.needs_revision(list(scores.values()))


def test_a_runbook_root_cause_with_another_tickets_fix_asks_for_revision():
    report, claims, evidence = _wrong_report()
    scores = _scores(report, claims, evidence, _wrong_outputs())
    assert scores["evidence_grounding"].score <= 3  # traceable, but it grounds no named cause
    assert _mean(scores) < 3.5
    assert judge.needs_revision(list(scores.values()))
    assert scores["root_cause_identification"].score <= 2  # a documentation excerpt is not a diagnosis
    assert "no verified causal claim about this incident" in scores["root_cause_identification"].reason
    assert "the fix acts on dhcp_server" in scores["resolution_specificity"].reason


def test_a_fix_on_another_device_lowers_resolution():
    right = _scores(_report())["resolution_specificity"]
    elsewhere = _scores(_report(fix="On super_spine_0: delete the nft firewall table that drops TCP port 179."))
    assert elsewhere["resolution_specificity"].score <= 2 < right.score
    assert "super_spine_0" in elsewhere["resolution_specificity"].reason
    assert elsewhere["coverage"].score < _scores(_report())["coverage"].score


def test_a_fix_for_another_fault_family_lowers_resolution():
    other = _scores(_report(fix="On router1: restore the host's own MAC and flush the bridge and ARP tables."))
    assert other["resolution_specificity"].score <= 3
    assert "the fix is about l2" in other["resolution_specificity"].reason


def test_a_label_the_ticket_and_the_logs_do_not_support_is_capped():
    outputs = _outputs()
    outputs["log"] = outputs["log"].model_copy(update={"label": "dhcp_missing_subnet",
                                                       "data": {"label_scores": {"dns_record_error": 0.2}}})
    scores = _scores(_report(label="dhcp_missing_subnet", root_cause="dhcp_missing_subnet on router1."),
                     outputs=outputs)
    assert scores["root_cause_identification"].score <= 3
    assert "explains neither" in scores["root_cause_identification"].reason


@pytest.mark.parametrize("agent,status", [("domain", "VERIFIED"), ("log", "REFERENCE")])
def test_reference_material_never_earns_the_top_root_cause_score(agent, status):
    claim, ev = _claim("r1", agent, "A firewall on router1 blocked TCP port 179 because of an nft rule.", "CAUSAL",
                       status)
    assert _scores(_report(), [claim], [ev])["root_cause_identification"].score < 5


def test_auroc_counts_ties_as_half():
    # pairs: 0.9 and 0.8 beat all three; 0.4 loses to 0.5, ties 0.4, beats 0.1 -> (3 + 3 + 1.5) / 9
    assert auroc([0.9, 0.8, 0.4], [0.5, 0.4, 0.1]) == pytest.approx(7.5 / 9)
    assert auroc([1.0], [1.0]) == pytest.approx(0.5)
    assert auroc([], [1.0]) is None


def test_paired_delta_compares_each_revised_round_with_the_next():
    def row(incident: str, rnd: int, accuracy: int, revise: bool) -> RoundRow:
        return RoundRow(incident, rnd, True, accuracy, 3.0, {}, revise, not revise)

    rows = [row("a", 1, 1, True), row("a", 2, 4, True), row("a", 3, 3, False),
            row("b", 1, 2, True), row("b", 2, 2, False), row("c", 1, 5, False)]
    delta = paired_delta(rows)
    assert (delta["pairs"], delta["improved"], delta["worse"], delta["same"]) == (3, 1, 1, 1)
    assert delta["mean"] == pytest.approx((3 - 1 + 0) / 3)


@pytest.mark.parametrize("scripted, separates", [("lenient", False), ("label-reader", True)])
def test_the_llm_judge_is_measured_through_the_model_path_and_a_lenient_one_is_caught(tmp_path, scripted, separates):
    from bench.judge import figures, judge_model
    from faultline import db
    from faultline.config import Settings
    from faultline.llm.fake import uninstall

    settings = Settings(duckdb_path=tmp_path / "fl.duckdb", lancedb_dir=tmp_path / "lancedb", progress=False)
    conn = db.connect(settings.duckdb_path)
    model = judge_model(f"scripted:{scripted}")
    try:
        right = _report()
        wrong, claims, evidence = _wrong_report()
        means = {}
        for name, report, (c, e), outputs in (("right", right, _coherent_claims(), _outputs()),
                                              ("wrong", wrong, (claims, evidence), _wrong_outputs())):
            scored = judge.judge_llm(cases.incident(), outputs, c, e, report, settings=settings, conn=conn,
                                     model=model)
            assert [s.judge for s in scored] == [f"llm:{model}"] * 5
            means[name] = mean(s.score for s in scored)
        calls = conn.execute("SELECT count(*), count(DISTINCT model) FROM llm_calls WHERE stage = 'astra.judge'"
                             ).fetchall()[0]
    finally:
        uninstall(model.split("/", 1)[1])
        conn.close()
    assert calls == (2, 1)  # both went through the gateway and were logged
    rows = [RoundRow("a", 1, True, 5, means["right"], {}, False, True),
            RoundRow("b", 1, True, 1, means["wrong"], {}, False, True)]
    final = figures(rows)["final"]
    if separates:
        assert final["auroc"] == 1.0 and final["share_wrong_scored_high"] == 0.0
    else:  # every report "good": the benchmark says it cannot tell right from wrong
        assert final["auroc"] == 0.5 and final["share_wrong_scored_high"] == 1.0
