"""A corpus incident recorded over SSH (`corpus generate --transport ssh`) replays like one recorded locally.

The lab comes up with its management network; injection and verification stay the lab's own, while
every probe of the baseline and the incident snapshot goes through the SSH backend.
"""

from __future__ import annotations

import pytest

from tests.labfixtures import (
    lab_dir,
    lab_fixture,
    lab_namespaces,
    settings_for,
    wait_until_no_lab,
)


@lab_fixture
def recorded(tmp_path_factory):
    from faultline.corpus.generate import generate_incident
    from faultline.corpus.spec import IncidentSpec

    wait_until_no_lab()
    out = tmp_path_factory.mktemp("ssh-corpus")
    spec = IncidentSpec(scenario="simple_bgp", size="s", seed=2, faults=[{"label": "link_down", "target": "pc1",
                                                                                  "mechanism": "standard"}])
    settings = settings_for(lab_dir("ssh")).model_copy(update={"lab_mgmt_subnet": "172.31.249.0/24"})
    result = generate_incident(spec, "ssh-001", out, settings, transport="ssh")
    assert not lab_namespaces(), "the generator left a lab behind"
    return out / "ssh-001", result


@pytest.mark.lab
def test_snapshots_recorded_over_ssh_replay_exactly(recorded):
    from faultline.network import snapshot as snap

    folder, result = recorded
    assert result.status == "valid", result.reason
    for name in ("baseline.json.gz", "snapshot.json.gz"):
        recorded_snapshot = snap.load(folder / name)
        assert snap.replay_mismatches(recorded_snapshot) == []
        assert all(d["management"] == ["mgmt0"] for d in recorded_snapshot.devices)
        assert not [c.argv for c in recorded_snapshot.commands if c.transport_error]
        # the commands ran through sshd: every process list shows the backend's own session
        lists = [c for c in recorded_snapshot.commands if c.argv[:2] == ["ps", "-o"]]
        assert lists and all("sshd: root@notty" in c.stdout for c in lists)


@pytest.mark.lab
def test_sade_finds_the_fault_in_a_snapshot_recorded_over_ssh(recorded):
    from faultline.network.snapshot_backend import snapshot_backend
    from faultline.sade.engine import diagnose

    folder, _ = recorded
    sub = diagnose(snapshot_backend(folder / "snapshot.json.gz"), incident_id="ssh-001", ticket="").submission
    assert (sub.v1.is_anomaly, sub.v1.faulty_devices, sub.v1.root_cause_name) == (True, ["pc1"], ["link_down"])
