"""SADE recognises faults by what the network shows, not by how our lab makes them (issue 40).

Every fault here was made by commands written in tests/foreign_cases.py (plain `kill`, `vtysh`, `ip route`,
`iptables`, `tc`), never by `faultline/lab/faults`, and recorded from the lab with the corpus battery
(tests/cases/sade/foreign/README.md says how). The replays need no root; tests/test_sade_foreign_live.py makes
one of them again in the lab and diagnoses what it shows.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from faultline.sade.evaluate import evaluate_folder
from tests.foreign_cases import CASES

FOREIGN = Path(__file__).resolve().parent / "cases" / "sade" / "foreign"
SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample" / "backlog"


def _answer(folder: Path, **kwargs):
    ev = evaluate_folder(folder, ticket=False, **kwargs)
    assert ev.diagnosis.status == "submitted", ev.diagnosis.error
    return ev.diagnosis.submission, ev.score


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_fault_made_by_other_commands_gets_its_label_on_its_device(name: str) -> None:
    sub, score = _answer(FOREIGN / name)
    assert sub.v1.is_anomaly, sub.summary
    for fault in CASES[name].faults():  # a case with a second fault: both, each on its device
        assert fault.label in sub.v1.root_cause_name, sub.summary
        assert set(fault.devices) <= set(sub.v1.faulty_devices), sub.summary
    assert score.rca.f1 == 1.0 and score.localization.f1 >= 0.66, sub.summary


@pytest.mark.parametrize("name", sorted(CASES))
def test_without_a_baseline_a_broken_network_is_never_answered_healthy(name: str) -> None:
    sub, _ = _answer(FOREIGN / name, baseline=False)
    assert sub.v1.is_anomaly, sub.summary


def test_symptoms_no_skill_explains_are_a_fault_not_identified_never_healthy(monkeypatch) -> None:
    """With every fingerprint gone, a network whose users fail is still broken: anomalous, the device the failing
    checks point at, no label (nothing supports one)."""
    import faultline.sade.matcher as matcher

    monkeypatch.setattr(matcher, "load_skills", lambda: ())
    sub, _ = _answer(FOREIGN / "dns-frozen")
    assert sub.v1.is_anomaly
    assert sub.v1.root_cause_name == []
    assert sub.v1.faulty_devices == ["dns_server"]  # the name server every failed lookup needed
    assert "fault not identified" in sub.summary
    assert sub.v2.is_anomaly and sub.v2.root_causes == []


def test_a_network_that_shows_nothing_is_still_answered_healthy() -> None:
    folder = next(p for p in sorted(SAMPLE.iterdir()) if (p / "ground_truth.json").is_file()
                  and '"is_anomaly": false' in (p / "ground_truth.json").read_text())
    sub, _ = _answer(folder)
    assert not sub.v1.is_anomaly, sub.summary


@pytest.mark.parametrize(("name", "device"), [("htb-queue", "host_2_1_1_1"), ("iptables-reject", "web_server_0")])
def test_the_users_view_points_at_the_device_behind_a_slow_pair_or_a_refused_page(name: str, device: str) -> None:
    """Pairs that answer a hundred times slower than their baseline are a symptom (no pair fails behind a
    queuing shaper), and a refused page leads to the server its name resolves to, not the user who asked."""
    from faultline.network.snapshot_backend import snapshot_backend
    from faultline.sade.initial import initial_scan
    from faultline.sade.session import Session

    session = Session(snapshot_backend(FOREIGN / name / "snapshot.json.gz"))
    sym = initial_scan(session)
    assert sym.any and sym.leads[0] == device


@pytest.mark.parametrize("baseline", [True, False])
def test_a_second_fault_only_the_routing_tables_show_is_found_with_or_without_a_baseline(baseline: bool) -> None:
    """Two cases whose second fault no user position shows: a BGP filter on a redundant spine (the leaf read routes
    nothing through it any more) and a hijack of a quarter of a LAN announced by `redistribute connected`, beside
    a host whose ICMP is dropped - the hijack explains the only failing pair, yet the host behind the hijacking
    router is not cut off by it, so its own look finds the filter."""
    for name in ("spine-bgp-filtered-beside-a-user", "hijack-redistributed-beside-a-user"):
        sub, score = _answer(FOREIGN / name, baseline=baseline)
        assert sorted(sub.v1.root_cause_name) == sorted(f.label for f in CASES[name].faults()), sub.summary
        assert score.localization.f1 == 1.0, sub.summary


@pytest.mark.parametrize("baseline", [True, False])
def test_a_second_fault_only_another_look_shows_is_found_by_the_second_look(baseline: bool) -> None:
    """A frozen DHCP server behind a host that drops ICMP: the pings fail, the leases still last, and only a new
    lease request shows the server; a user's foreign resolver (the canary's own user, so the answer blames it)
    beside another user whose web port is rejected: only a page from that other user shows the second; a user
    whose link flaps while its one peer's link is down: its isolation is the peer's, and only its own link
    counters (the second look's isolated look) show the flap."""
    for name in ("dhcp-frozen-beside-a-filtered-host", "resolver-beside-a-web-filter", "flap-behind-a-dead-peer"):
        sub, score = _answer(FOREIGN / name, baseline=baseline)
        assert sorted(sub.v1.root_cause_name) == sorted(f.label for f in CASES[name].faults()), sub.summary
        assert score.localization.f1 == 1.0, sub.summary
