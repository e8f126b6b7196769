"""NIKA scoring with hand-computed cases (docs/nika.md#scoring-v1, #scoring-v2, #worked-examples)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from faultline.nika.answers import RootCause, SubmissionV1, SubmissionV2
from faultline.sade.scoring import score_incident, set_score, summarise
from faultline.truth.records import Truth
from faultline.truth.store import truth_from_json

REPO = Path(__file__).resolve().parents[1]


def truth(devices, labels, pairs=(), *, incident="i1", size="s", scenario="simple_bgp") -> Truth:
    return Truth(incident_id=incident, is_faulty=bool(labels), devices=list(devices), labels=list(labels),
                 root_causes=[RootCause(resource_id=r, fault_type=f) for r, f in pairs], scenario=scenario, size=size)


def v1(devices, labels, anomaly=True) -> SubmissionV1:
    return SubmissionV1(is_anomaly=anomaly, faulty_devices=list(devices), root_cause_name=list(labels))


def test_exact_answer_scores_one_everywhere():
    s = score_incident(truth(["r1"], ["bgp_acl_block"]), v1(["r1"], ["bgp_acl_block"]), method="sade")
    assert s.detection == 1.0
    assert (s.localization.precision, s.localization.recall, s.localization.f1) == (1.0, 1.0, 1.0)
    assert s.rca.f1 == 1.0 and s.metrics()["rca_accuracy"] == 1.0


def test_partial_overlap_and_extra_device():
    # truth {A, B}; submitted {A, C}: tp 1, P 1/2, R 1/2, F1 1/2
    s = score_incident(truth(["a", "b"], ["host_ip_conflict"]), v1(["a", "c"], ["host_ip_conflict"]), method="sade")
    assert s.localization.tp == 1
    assert (s.localization.precision, s.localization.recall, s.localization.f1) == (0.5, 0.5, 0.5)
    # truth {A}; submitted {A, B, C}: P 1/3 = 0.3333, R 1, F1 2*(1/3)/(4/3) = 0.5
    s = score_incident(truth(["a"], ["link_down"]), v1(["a", "b", "c"], ["link_down"]), method="sade")
    assert (s.localization.precision, s.localization.recall, s.localization.f1) == (0.3333, 1.0, 0.5)
    assert s.metrics()["loc_accuracy"] == 1.0  # accuracy is recall


def test_sibling_label_gets_no_rca_credit():
    s = score_incident(truth(["h1"], ["link_down"]), v1(["h1"], ["link_flap"]), method="sade")
    assert s.detection == 1.0 and s.localization.f1 == 1.0
    assert (s.rca.tp, s.rca.precision, s.rca.recall, s.rca.f1) == (0, 0.0, 0.0, 0.0)


def test_duplicates_are_ignored():
    s = score_incident(truth(["r1"], ["bgp_acl_block"], [("node/r1", "bgp_acl_block")]),
                       v1(["r1", "r1", "r1"], ["bgp_acl_block", "bgp_acl_block"]),
                       SubmissionV2(is_anomaly=True,
                                    root_causes=[RootCause(resource_id="node/r1", fault_type="bgp_acl_block")] * 3),
                       method="sade")
    assert s.localization.precision == 1.0 and s.rca.precision == 1.0 and s.v2_joint.f1 == 1.0


def test_missing_submission_is_minus_one_and_zero_in_means():
    t = truth(["r1"], ["bgp_acl_block"])
    missing = score_incident(t, None, method="sade")
    assert not missing.submitted
    assert set(missing.metrics().values()) == {-1.0, 0.0}  # every metric -1, "submitted" 0
    good = score_incident(truth(["r1"], ["bgp_acl_block"], incident="i2"), v1(["r1"], ["bgp_acl_block"]), method="sade")
    (summary,) = summarise([missing, good])
    assert summary.n == 2 and summary.rca_f1 == 0.5 and summary.detection == 0.5
    assert summary.no_submission_rate == 0.5


def test_healthy_correct_and_false_alarm():
    healthy = Truth(incident_id="h", is_faulty=False)
    ok = score_incident(healthy, v1([], [], anomaly=False), SubmissionV2(is_anomaly=False), method="sade")
    assert ok.detection == 1.0
    assert (ok.localization.f1, ok.rca.f1, ok.v2_joint.f1) == (1.0, 1.0, 1.0)
    alarm = score_incident(healthy, v1(["r1"], ["link_down"]), method="sade")
    assert alarm.detection == 0.0 and alarm.localization.f1 == 0.0 and alarm.rca.f1 == 0.0
    bare_alarm = score_incident(healthy, v1([], []), method="sade")  # says anomaly, names nothing
    assert bare_alarm.detection == 0.0 and bare_alarm.rca.f1 == 0.0 and bare_alarm.localization.precision == 0.0
    # an anomaly answered "healthy" gets nothing on the sets either
    miss = score_incident(truth(["r1"], ["bgp_acl_block"]), v1([], [], anomaly=False), method="sade")
    assert (miss.detection, miss.localization.f1, miss.rca.f1) == (0.0, 0.0, 0.0)


def test_v2_joint_localization_and_fault_type():
    t = truth(["dns", "h1"], ["link_down", "dns_service_down"],
              [("interface/h1/eth0", "link_down"), ("node/dns", "dns_service_down")])
    sub = SubmissionV2(is_anomaly=True, root_causes=[
        RootCause(resource_id="node/h1", fault_type="link_down"),          # right type, wrong resource kind
        RootCause(resource_id="node/dns", fault_type="dns_service_down"),  # exact
    ])
    s = score_incident(t, v1(["h1", "dns"], ["link_down", "dns_service_down"]), sub, method="sade")
    assert (s.v2_joint.tp, s.v2_joint.precision, s.v2_joint.recall, s.v2_joint.f1) == (1, 0.5, 0.5, 0.5)
    assert s.v2_localization.f1 == 0.5  # {node/h1, node/dns} vs {interface/h1/eth0, node/dns}
    assert s.v2_fault_type.f1 == 1.0
    assert s.rca.f1 == 1.0 and s.localization.f1 == 1.0


def test_set_score_rounding():
    assert set_score(["a", "b", "c"], ["a", "b"]).precision == 0.6667
    assert set_score([], ["a"]).f1 == 0.0 and set_score(["a"], []).f1 == 0.0


def test_grouping_by_label_family_size():
    scores = [
        score_incident(truth(["r1"], ["bgp_acl_block"], incident="a", size="s"), v1(["r1"], ["bgp_acl_block"]),
                       method="sade", family="acl"),
        score_incident(truth(["r1", "h1"], ["bgp_acl_block", "link_down"], incident="b", size="m"),
                       v1(["r1"], ["bgp_acl_block"]), method="sade", family="acl"),
        score_incident(Truth(incident_id="c", is_faulty=False, size="m"), v1([], [], anomaly=False), method="sade"),
    ]
    by_label = {s.group: s for s in summarise(scores, group_by="label")}
    assert set(by_label) == {"bgp_acl_block", "link_down", "healthy"}
    assert by_label["bgp_acl_block"].n == 2
    # b: rca P 1, R 1/2, F1 0.6667 (rounded per incident, as NIKA); mean with a's 1.0 = 0.83335 -> 0.8334
    assert by_label["bgp_acl_block"].rca_f1 == 0.8334
    assert by_label["healthy"].rca_f1 == 1.0
    by_size = {s.group: s for s in summarise(scores, group_by="size")}
    assert by_size["s"].n == 1 and by_size["m"].n == 2
    by_family = {s.group: s.n for s in summarise(scores, group_by="family")}
    assert by_family == {"acl": 2, "healthy": 1}
    with pytest.raises(ValueError):
        summarise(scores, group_by="colour")


def test_truth_from_corpus_file_uses_union_of_labels():
    data = json.loads((REPO / "data/sample/backlog/sample-backlog-043/ground_truth.json").read_text())
    t = truth_from_json("sample-backlog-043", data)
    assert sorted(t.labels) == ["dns_service_down", "link_down"] and "multiple_faults" not in t.labels
    assert len(t.root_causes) == 2 and t.is_faulty
    s = score_incident(t, v1(t.devices, ["link_down"]), method="sade")
    assert (s.rca.precision, s.rca.recall, s.rca.f1) == (1.0, 0.5, 0.6667)
