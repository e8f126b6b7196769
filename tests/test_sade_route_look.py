"""The routes look (faultline.sade.route_look): after the answer, the routing tables the diagnosis has read point
at a router with a second fault that no user position shows. Recorded two-fault incidents of the project's lab
(tests/cases/sade/README.md), the answers against their ground truth, with and without the look."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from faultline.network.snapshot_backend import snapshot_backend
from faultline.sade.engine import diagnose
from faultline.sade.session import Breadth

CASES = Path(__file__).resolve().parent / "cases" / "sade"
SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample"


def _run(folder: Path, *, routes: str = "seen", baseline: bool = True):
    return diagnose(snapshot_backend(folder / "snapshot.json.gz", use_baseline=baseline), incident_id=folder.name,
                    breadth=Breadth(routes=routes))


def _truth(folder: Path) -> list[str]:
    return sorted(f["v1"]["root_cause_name"] for f in json.loads((folder / "ground_truth.json").read_text())["faults"])


@pytest.mark.parametrize("baseline", [True, False])
def test_a_hijacked_half_subnet_answered_by_the_hijacker_is_found_from_the_routes(baseline: bool) -> None:
    """two-faults-new-021: a user's wrong gateway, and router1 holding 10.1.1.0/25 on its loopback: the other
    router routes that half of its own LAN to router1, and the users' pings there are answered by the hijacker.
    With the baseline the route is new; without one it is narrower than a user's subnet. Either way it is followed
    to the router where it ends."""
    folder = CASES / "two-faults-new-021"
    diag = _run(folder, baseline=baseline)
    assert sorted(diag.submission.v1.root_cause_name) == _truth(folder) == ["bgp_hijacking", "host_incorrect_gateway"]
    assert "router1" in diag.submission.v1.faulty_devices
    assert any(st.note == "second look: where 10.1.1.0/25 leads" for st in diag.steps)
    off = _run(folder, routes="off", baseline=baseline)
    assert off.submission.v1.root_cause_name == ["host_incorrect_gateway"]


def test_a_redundant_router_that_lost_its_sessions_is_found_from_a_lost_next_hop() -> None:
    """two-faults-new-001: a flapping user link, and an ARP filter on the super spine that cuts its BGP sessions;
    every user still reaches every other through the other paths. The spine the diagnosis read routes nothing
    through the super spine any more: that router gets the look, and its filter is found."""
    folder = CASES / "two-faults-new-001"
    diag = _run(folder)
    assert sorted(diag.submission.v1.root_cause_name) == _truth(folder) == ["arp_acl_block", "link_flap"]
    assert sorted(diag.submission.v1.faulty_devices) == ["pc_0_0", "super_spine_0"]
    assert _run(folder, routes="off").submission.v1.root_cause_name == ["link_flap"]


def test_a_router_that_lost_every_neighbour_is_itself_the_suspect() -> None:
    """sample-backlog-044: a user without an address, and a BGP filter on the leaf the second look read: the leaf
    routes through neither spine any more. One fault of its own explains both losses, so the leaf is looked at
    first (not the two spines): a few probes, far fewer than the sweep's."""
    folder = SAMPLE / "backlog/sample-backlog-044"
    diag = _run(folder)
    assert sorted(diag.submission.v1.root_cause_name) == ["bgp_acl_block", "host_missing_ip"]
    assert "leaf_0_1" in diag.submission.v1.faulty_devices
    looked = [st.args.get("dev") for st in diag.steps if "the routes point at" in st.note]
    assert looked and set(looked) == {"leaf_0_1"}
    assert diag.probe_calls <= _run(folder, routes="off").probe_calls + 4


def test_routes_the_answer_explains_point_nowhere() -> None:
    """sample-backlog-030: a router's link down reroutes the other router's traffic; the routes changed, but the
    loss they show is the named router's, so no other router gets a look and the answer stays one fault."""
    folder = SAMPLE / "backlog/sample-backlog-030"
    diag = _run(folder)
    assert diag.submission.v1.root_cause_name == _truth(folder)
    assert not [st for st in diag.steps if "the routes point at" in st.note]
