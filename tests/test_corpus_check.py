"""`faultline corpus check`: a suite planned without a lab, the way generation would inject it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "data" / "sample"


@pytest.mark.parametrize("suite", ["sample_backlog", "sample_history"])
def test_the_plan_names_the_targets_the_lab_really_used(suite):
    from faultline.corpus.check import check_suite
    from faultline.corpus.spec import load_suite

    result = check_suite(load_suite(suite))
    assert result.ok, result.problems
    folder = SAMPLE / ("backlog" if suite == "sample_backlog" else "history")
    compared = 0
    for incident in result.incidents:
        truth_file = folder / incident.incident_id / "ground_truth.json"
        if incident.healthy or not truth_file.is_file():
            continue  # an invalid incident of the sample has no truth
        injected = [(f["v1"]["root_cause_name"], f["target"]) for f in json.loads(truth_file.read_text())["faults"]]
        assert [(f.label, f.target) for f in incident.faults] == injected, incident.incident_id
        compared += 1
    assert compared >= 40


def test_every_problem_of_a_suite_is_listed_with_its_field_and_fix(tmp_path, run_cli, capsys):
    bad = tmp_path / "bad.yml"
    bad.write_text("suite: bad\nincidents:\n"
                   "  - {scenario: simple_bgp, seed: 1, faults: [{label: ospf_acl_block}]}\n"
                   "  - {scenario: simple_bgp, seed: 2, faults: [{label: frr_service_down, target: pc1}]}\n"
                   "  - {scenario: simple_bgp, seed: 3, faults: [{label: link_down, target: pc1},"
                   " {label: link_down, target: pc1}]}\n"
                   "  - {scenario: simple_bgp, seed: 4, faults: [{label: link_down, target: pc2}]}\n"
                   "  - {scenario: rip_small_internet, seed: 5, faults: [{label: web_dos_attack,"
                   " mechanism: botnet}]}\n")
    run_cli("corpus", "check", str(bad), "--json", expect_exit=1)
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] is False
    problems = {(p["incident_id"], p["field"]): p for p in out["problems"]}
    assert set(problems) == {("bad-001", "incidents.0.faults.0.label"), ("bad-002", "incidents.1.faults.0.target"),
                             ("bad-003", "incidents.2.faults"), ("bad-005", "incidents.4.faults.0.mechanism")}
    assert "needs an OSPF lab" in problems[("bad-001", "incidents.0.faults.0.label")]["message"]
    assert "router1" in problems[("bad-002", "incidents.1.faults.0.target")]["fix"]  # where it could go instead
    assert out["incidents"][3]["faults"] == [{"label": "link_down", "target": "pc2", "given": True,
                                              "mechanism": "standard"}]
    assert problems[("bad-005", "incidents.4.faults.0.mechanism")]["fix"] == "choose one of: standard, distributed"


def test_every_built_in_suite_plans_without_a_problem():
    from faultline.corpus.check import check_suite
    from faultline.corpus.spec import load_suite, suite_names

    for name in suite_names():
        result = check_suite(load_suite(name))
        assert result.ok, (name, result.problems)


def test_the_check_shows_each_labels_mechanisms_and_which_the_suite_leaves_out(tmp_path, run_cli, capsys):
    suite = tmp_path / "mech.yml"
    suite.write_text("suite: mech\nincidents:\n"
                     "  - {scenario: simple_bgp, seed: 1, faults: [{label: link_down, target: pc1,"
                     " mechanism: far_end}]}\n"
                     "  - {scenario: simple_bgp, seed: 2, faults: [{label: link_down, target: pc2,"
                     " mechanism: far_end}]}\n"
                     "  - {scenario: simple_bgp, seed: 3, faults: [{label: icmp_acl_block, mechanism: iptables}]}\n")
    run_cli("corpus", "check", str(suite), "--json")
    labels = {m["label"]: m for m in json.loads(capsys.readouterr().out)["labels"]}
    assert labels == {
        "link_down": {"label": "link_down", "mechanisms": ["standard", "far_end"], "planned": {"far_end": 2}},
        "icmp_acl_block": {"label": "icmp_acl_block", "mechanisms": ["standard", "iptables"],
                           "planned": {"iptables": 1}}}
    run_cli("corpus", "check", str(suite))
    table = capsys.readouterr().out
    row = next(line for line in table.splitlines() if "link_down" in line and "far_end 2" in line)
    assert "standard 0" in row and row.rstrip(" │|").endswith("standard")  # the standard one is not planned
