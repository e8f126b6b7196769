"""SADE reads what a device shows, not how our lab caused it.

The lab injects resource faults with its own helpers (a stress tool, a flood generator, a packet-delay
helper) and its own CPU groups. A NOC's network has none of them: a flood comes from clients nobody runs,
a starved server holds an ordinary workload. So the code and the skills must not name them, and a
recorded incident with every trace of them removed from the device output must be diagnosed the same.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from faultline.network import snapshot as snap
from faultline.network.snapshot_backend import snapshot_backend
from faultline.sade.engine import diagnose

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "data/sample/backlog"

# the lab's helper programs, its CPU-group and namespace prefixes, the folder it builds labs in
LAB_NAMES = re.compile(r"loadgen|nfqueue|stress-ng|stress_ng|cgroup_join|faultline_cpu|faultline_web|regen-lab"
                       r"|sleep_injector|\bfl[-_]", re.IGNORECASE)


def test_sade_and_its_skills_never_name_the_labs_helpers() -> None:
    files = sorted((REPO / "faultline/sade").rglob("*.py")) + sorted((REPO / "prompts/skills").rglob("*"))
    assert len(files) > 30
    found = [f"{path.relative_to(REPO)}:{n}: {line.strip()}" for path in files if path.is_file()
             for n, line in enumerate(path.read_text().splitlines(), 1) if LAB_NAMES.search(line)]
    assert found == []


HELPER_LINE = re.compile(r"^.*(loadgen|stress-ng|nfqueue).*\n?", re.MULTILINE)
# CPU groups, and the flood's user agent in the victim's access log
GROUPS = {"faultline_cpu_": "workload_", "faultline_web_": "batch_", "faultline-loadgen": "Mozilla/5.0"}


def _rename_groups(text: str) -> str:
    for lab, ordinary in GROUPS.items():
        text = text.replace(lab, ordinary)
    return text


def _disguised_incident(folder: Path, tmp_path: Path) -> Path:
    """The recorded incident as a NOC would see it: no helper process in any process list (the flood's
    clients are not ours to see), CPU groups and user agents with ordinary names."""
    recorded = snap.load(folder / "snapshot.json.gz")
    commands = []
    for c in recorded.commands:
        stdout = _rename_groups(c.stdout)
        if c.argv[:2] == ["ps", "-o"]:
            stdout = HELPER_LINE.sub("", stdout)
        commands.append(c.model_copy(update={"argv": [_rename_groups(a) for a in c.argv], "stdout": stdout}))
    text = json.dumps([c.model_dump(mode="json") for c in commands])
    assert not re.search(r"loadgen|stress-ng|faultline_cpu|faultline_web", text)
    out = tmp_path / folder.name
    out.mkdir()
    snap.save(recorded.model_copy(update={"commands": commands}), out / "snapshot.json.gz")
    shutil.copy(folder / "baseline.json.gz", out / "baseline.json.gz")
    return out


@pytest.mark.parametrize("case,label,device", [
    ("sample-backlog-034", "load_balancer_overload", "load_balancer"),
    ("sample-backlog-039", "receiver_resource_contention", "host_1"),
    ("sample-backlog-041", "sender_resource_contention", "webserver1_pod0"),
    ("sample-backlog-042", "web_dos_attack", "web_server_0"),
    ("sample-backlog-027", "incast_traffic_network_limitation", "web_server_1_2"),
])
def test_a_fault_is_found_from_its_symptoms_with_the_injector_out_of_sight(case: str, label: str, device: str,
                                                                           tmp_path: Path) -> None:
    folder = _disguised_incident(SAMPLE / case, tmp_path)
    diag = diagnose(snapshot_backend(folder / "snapshot.json.gz"), incident_id=case)
    assert diag.submission is not None
    assert (diag.submission.v1.root_cause_name, diag.submission.v1.faulty_devices) == ([label], [device])
    evidence = " ".join(f.evidence for f in diag.flags)
    assert not re.search(r"loadgen|stress-ng", evidence)


def test_a_flood_names_its_senders_from_the_victims_access_log(tmp_path: Path) -> None:
    folder = _disguised_incident(SAMPLE / "sample-backlog-042", tmp_path)
    diag = diagnose(snapshot_backend(folder / "snapshot.json.gz"), incident_id="042")
    [surge] = [f for f in diag.flags if f.kind == "request_surge"]
    assert surge.device == "web_server_0" and surge.attrs["peak_per_s"] >= 50
    assert "host_2_1_1_1" in surge.evidence  # the sender, found by its address, not by what it runs


def test_starvation_is_read_from_throttling_counters_not_from_the_group_name(tmp_path: Path) -> None:
    folder = _disguised_incident(SAMPLE / "sample-backlog-039", tmp_path)
    diag = diagnose(snapshot_backend(folder / "snapshot.json.gz"), incident_id="039")
    [throttled] = [f for f in diag.flags if f.kind == "cpu_throttled"]
    assert throttled.device == "host_1" and throttled.attrs["share"] > 0.9
    assert "workload_" in throttled.evidence
