"""The lab's syslog collector: rendering (pure), and a real lab whose daemons log to it (root, marker `lab`)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from faultline.lab.frr import RENDERERS, split_config
from faultline.lab.scenarios import build_topology
from faultline.lab.syslog import logging_prefix, messages_path, render_conf, socket_path
from tests.labfixtures import lab_dir, lab_fixture, running_lab, settings_for

LAB_DIR = lab_dir("syslog")


def test_the_collector_listens_per_device_and_files_by_the_sockets_host_name(tmp_path):
    conf = render_conf(tmp_path, ["router1", "pc1"])
    assert 'SysSock.Use="off"' in conf  # never the machine's own /dev/log
    assert f'Socket="{socket_path(tmp_path, "pc1")}" HostName="pc1"' in conf
    assert f"{tmp_path}/syslog/%HOSTNAME%/messages" in conf and "date-rfc3339" in conf
    assert logging_prefix(tmp_path, "pc1")[-1] == str(socket_path(tmp_path, "pc1"))


@pytest.mark.parametrize("scenario", ["simple_bgp", "ospf_enterprise_static", "rip_small_internet"])
def test_each_daemon_gets_only_its_own_config_and_logs_to_syslog(scenario):
    topo = build_topology(scenario, "s")
    router = topo.routers()[0].name
    parts = split_config(RENDERERS[topo.protocol](topo, router), topo.protocol)
    proto = {"bgp": "bgpd", "ospf": "ospfd", "rip": "ripd"}[topo.protocol]
    assert set(parts) == {"zebra", proto, "staticd"}
    for daemon, text in parts.items():
        assert f"hostname {router}" in text and "log syslog informational" in text
        assert ("router " in text) == (daemon == proto), daemon  # zebra never sees `router bgp`
    adjacency = {"bgpd": " bgp log-neighbor-changes", "ospfd": " log-adjacency-changes detail"}.get(proto)
    assert adjacency is None or adjacency in parts[proto].splitlines()


# --- a real lab (root) ----------------------------------------------------------------------------


@lab_fixture
def dhcp_lab():
    """An ospf_enterprise_dhcp lab (FRR, dnsmasq DNS/DHCP/relays, nginx, udhcpc); always torn down."""
    settings = settings_for(LAB_DIR)
    with running_lab("ospf_enterprise_dhcp", settings, timeout=60) as (state, _):
        yield state, settings


def _lines(run_dir: Path, device: str, needle: str, timeout: float = 10.0) -> list[str]:
    deadline = time.monotonic() + timeout
    while True:
        path = messages_path(run_dir, device)
        found = [x for x in path.read_text().splitlines() if needle in x] if path.is_file() else []
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


@pytest.mark.lab
def test_each_daemon_lands_in_its_devices_file_with_its_host_name(dhcp_lab):
    import polars as pl

    from faultline.ingest.logformats import parse_lines

    state, _ = dhcp_lab
    run_dir = Path(state.run_dir)
    full = _lines(run_dir, "core_router_1", "ospfd[")
    assert any("AdjChg" in x and "-> Full" in x for x in full), full[:5]  # log-adjacency-changes detail
    assert _lines(run_dir, "dns_server", "dnsmasq[")
    assert _lines(run_dir, "dhcp_server", "dnsmasq-dhcp[")
    assert _lines(run_dir, "host_1_1_1_1", "udhcpc: bound")  # the hook's logger, in the host's own file
    web = next(d.name for d in state.devices() if d.role == "web")
    client = next(d for d in state.devices() if d.role == "host")
    subprocess.run(["ip", "netns", "exec", client.namespace, "curl", "-s", "-o", "/dev/null", "--max-time", "3",
                    f"http://{state.device(web).addresses[0].split('/')[0]}/syslog-probe"], check=False)
    access = _lines(run_dir, web, "\"GET /syslog-probe HTTP/1.1\" 404")  # the access line, not the error log's
    assert access and " nginx: " in access[0], access
    adjacency = next(x for x in full if "AdjChg" in x)
    lines = pl.DataFrame({"line_no": [1, 2], "raw": [adjacency, access[0]]})
    parsed = parse_lines(lines, default_year=2026)  # the format is detected, as `faultline ingest logs` does
    assert parsed["format"].to_list() == ["syslog_iso"] * 2 and parsed["host"].to_list() == ["core_router_1", web]
    assert parsed["ts"].null_count() == 0 and parsed["severity"].to_list() == ["notice", "info"]  # from the PRI
    everything = "".join(p.read_text() for p in (run_dir / "syslog").glob("*/messages"))
    assert "No such command" not in everything  # zebra reads only its own config


@pytest.mark.lab
def test_down_stops_the_collector_and_removes_its_files(dhcp_lab):
    from faultline.lab import lifecycle
    from faultline.lab.syslog import collector_pids

    state, settings = dhcp_lab
    run_dir = Path(state.run_dir)
    pids = collector_pids(run_dir)
    assert len(pids) == 1
    lifecycle.down(settings)
    assert not collector_pids(run_dir) and not (run_dir / "syslog").exists()
