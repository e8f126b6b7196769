"""OSPF fault labels: inject → verify → recover on a real ospf_enterprise_static lab (size s).

Same pattern as tests/test_faults.py: the lab tests (marked `lab`) need root; one module-scoped lab,
always torn down by its state file. The last test leaves a link_flap injected on purpose, so the teardown also
shows that `lab down` stops the root-namespace toggler by PID.
"""

from __future__ import annotations

import subprocess
import time

import pytest

from faultline.lab import faults
from faultline.lab.faults.base import FaultNotVerified, helper_alive
from faultline.lab.namespaces import namespace_name
from faultline.lab.scenarios import build_topology
from tests.labfixtures import lab_dir, lab_namespaces, module_lab, offline_state

SCENARIO = "ospf_enterprise_static"
LAB_DIR = lab_dir("faults-ospf")
ROUTERS = sorted(n.name for n in build_topology(SCENARIO, "s").nodes.values() if n.role == "router")

CASES = [
    ("ospf_acl_block", "core_router_1"),
    ("ospf_neighbor_missing", "core_router_2"),
    ("ospf_area_misconfiguration", "dist_router_2_1"),
]
_helpers: list[tuple[int, str]] = []  # toggler (pid, marker) left running for the teardown check


def test_ospf_target_choice_is_seeded_and_router_only():
    state = offline_state(SCENARIO)
    for label, _ in CASES:
        picks = [faults.choose_target(state, label, seed) for seed in range(10)]
        assert picks == [faults.choose_target(state, label, seed) for seed in range(10)]
        assert set(picks) <= set(ROUTERS) and len(set(picks)) > 1


def _nothing_left_behind() -> None:
    """After lab down: no parked interface namespace and no toggler of a fault left injected."""
    assert not [n for n in lab_namespaces() if "-park-" in n]
    assert not [pid for pid, marker in _helpers if helper_alive(pid, marker)], "lab down left a toggler running"


lab = module_lab(SCENARIO, LAB_DIR, timeout=45, after_down=_nothing_left_behind)


def _assert_healthy(ctx) -> None:
    from faultline.network.probes import run_probe

    matrix = run_probe(ctx, "reachability", count=2).record
    assert matrix.summary == {"ok": len(matrix.rows)}, matrix.rows
    for router in ROUTERS:
        rec = run_probe(ctx, "vtysh_show", dev=router, command="show ip ospf neighbor json").record
        assert rec.ospf_neighbors and all(n.state.startswith("Full") for n in rec.ospf_neighbors), (router, rec)


@pytest.mark.lab
@pytest.mark.parametrize("label,target", CASES)
def test_inject_verify_recover(lab, label, target):
    state, ctx = lab
    t0 = time.monotonic()
    rec = faults.inject(state, label, target, seed=7)
    truth = rec.ground_truth()
    assert truth["v1"] == {"is_anomaly": True, "faulty_devices": [target], "root_cause_name": label}
    assert truth["v2"] == {"resource_id": f"node/{target}", "fault_type": faults.fault_class(label).fault_type}
    assert truth["category"] == "misconfiguration" and rec.mechanism
    assert [r.id for r in faults.verify(state, ctx)] == [rec.id]
    verified_s = time.monotonic() - t0
    result = faults.recover(state)
    assert result["recovered"] == [rec.id] and state.faults == []
    with pytest.raises(FaultNotVerified, match="artifact missing"):
        faults.registry.rebuild(rec).verify(ctx)
    _assert_healthy(ctx)
    assert verified_s < 15 and result["healthy_s"] < 20


@pytest.mark.lab
def test_area_change_undone_by_hand_is_not_verified(lab):
    state, ctx = lab
    rec = faults.inject(state, "ospf_area_misconfiguration", "core_router_3")
    assert all(" area 66" in c for c in rec.params["forward"][1:] if not c.startswith("no "))
    undo = [arg for cmd in ("configure terminal", *rec.params["backward"]) for arg in ("-c", cmd)]
    subprocess.run(["vtysh", "--vty_socket", ctx.vty_dirs["core_router_3"], *undo], check=True, capture_output=True)
    with pytest.raises(FaultNotVerified, match="artifact missing"):
        faults.verify(state, ctx)
    faults.recover(state)  # idempotent
    assert state.faults == []
    _assert_healthy(ctx)


@pytest.mark.lab
def test_link_flap_left_injected_is_stopped_by_lab_down(lab):
    state, ctx = lab
    rec = faults.inject(state, "link_flap", "host_2_1_1_1")
    # behind an access switch: the toggled end is the switch's port, outside the host
    assert rec.params["peer_ns"] == namespace_name("access_switch_2_1_1")
    faults.verify(state, ctx)
    _helpers.append((rec.params["helper_pid"], rec.params["helper_marker"]))
    assert helper_alive(*_helpers[-1])
