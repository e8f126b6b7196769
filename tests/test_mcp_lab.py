"""The MCP lab server over a recorded snapshot, driven by a real MCP client session (stdio subprocess),
and the MCP client backend: probes through MCP answer exactly what direct snapshot replay answers."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from faultline.mcp.exec_map import command_to_probe
from faultline.network import snapshot as snap
from faultline.network.mcp_backend import McpConnection, mcp_backend
from faultline.network.probes import run_probe
from faultline.network.validate import ProbeError

REPO = Path(__file__).resolve().parents[1]
INCIDENT = REPO / "data/sample/backlog/sample-backlog-001"  # arp_acl_block on host_2_1_1_2 (ospf_enterprise_dhcp)
SNAPSHOT = INCIDENT / "snapshot.json.gz"
FAULTY = "host_2_1_1_2"
FAULTLINE = [sys.executable, "-m", "faultline.cli.main"]


def _server_argv(db: Path, *extra: str) -> list[str]:
    return [*FAULTLINE, "--db", str(db), "mcp", "lab", "--snapshot", str(SNAPSHOT), *extra]


def _json(result) -> object:
    return json.loads("".join(c.text for c in result.content))


@pytest.fixture(scope="module")
def db_path(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("mcp") / "fl.duckdb"


@pytest.fixture(scope="module")
def client(db_path):
    conn = McpConnection(_server_argv(db_path))
    yield conn
    conn.close()


@pytest.fixture(scope="module")
def direct():
    return snap.load(SNAPSHOT).context()


@pytest.fixture(scope="module")
def router(direct) -> str:
    return next(d.name for d in direct.directory.devices() if d.role == "router")


def test_lists_nika_tools(client):
    assert {"get_reachability", "ping_pair", "get_host_net_config", "get_tc_statistics", "netstat",
            "ip_addr_statistics", "curl_web_test", "exec_shell", "frr_get_bgp_conf", "frr_show_running_config",
            "frr_show_ip_route", "frr_get_ospf_conf", "frr_exec", "list_devices", "list_avail_problems",
            "submit"} <= client.tools()


def test_reachability_shows_the_isolated_host(client):
    data = _json(client.call("get_reachability", {}))
    assert FAULTY in data["hosts"]
    to_faulty = [r for r in data["results"] if r["dst"] == FAULTY]
    assert to_faulty and all(r["status"] == "down" for r in to_faulty)
    others = [r for r in data["results"] if FAULTY not in (r["src"], r["dst"])]
    assert others and all(r["status"] == "ok" for r in others)


def test_exec_shell_allowed_answers_like_the_probe(client, direct):
    result = client.call("exec_shell", {"host_name": FAULTY, "command": "nft list ruleset"})
    assert not result.is_error
    text = "".join(c.text for c in result.content)
    assert text == run_probe(direct, "nft_ruleset", dev=FAULTY).raw
    assert '"arp"' in text  # the injected ARP filter table is visible
    assert result.structured_content["exit_code"] == 0


@pytest.mark.parametrize("command", ["ip link set eth0 down", "ip addr | grep inet", "rm -rf /", "cat /etc/shadow",
                                     "iptables -F", "vtysh -c 'configure terminal'", "echo $(id)"])
def test_exec_shell_refuses_anything_else(client, command):
    result = client.call("exec_shell", {"host_name": FAULTY, "command": command})
    assert result.is_error
    assert _json(result)["error"] == "validation_error"


def test_unknown_device_is_a_validation_error(client):
    assert _json(client.call("get_host_net_config", {"host_name": "nosuch"}))["error"] == "validation_error"


def test_frr_tools_on_a_router(client, router, direct):
    config = "".join(c.text for c in client.call("frr_show_running_config", {"router_name": router}).content)
    assert "router ospf" in config
    routes = client.call("frr_exec", {"router_name": router, "command": "show ip route json"})
    assert not routes.is_error
    assert "".join(c.text for c in routes.content) == run_probe(direct, "vtysh_show", dev=router,
                                                                command="show ip route json").raw
    # NIKA's "show ip ospf" was not recorded: the recorded JSON form answers instead
    assert not client.call("frr_get_ospf_conf", {"router_name": router}).is_error
    assert _json(client.call("frr_exec", {"router_name": router, "command": "clear ip ospf process"}))["error"] \
        == "validation_error"
    assert _json(client.call("frr_show_ip_route", {"router_name": FAULTY}))["error"] == "validation_error"


def test_not_recorded_is_said_not_invented(client):
    data = _json(client.call("exec_shell", {"host_name": "host_1_1_1_1", "command": "ping -c 7 10.1.4.10"}))
    assert data["error"] == "tool_execution_error" and "not recorded" in data["details"]
    assert data["missing"][-1] == "10.1.4.10"
    # ping_pair falls back to the recorded reachability ping, and says so
    text = "".join(c.text for c in client.call("ping_pair", {"host_a": "host_1_1_1_1", "host_b": FAULTY}).content)
    assert text.startswith("(recorded snapshot: a 4-packet ping was not recorded")
    assert "2 packets transmitted, 0 received" in text


def test_submit_refuses_bad_label_then_stores_good_answer(client, db_path):
    labels = _json(client.call("list_avail_problems", {}))
    assert "arp_acl_block" in labels and "p4_table_entry_missing" not in labels
    bad = client.call("submit", {"is_anomaly": True, "faulty_devices": [FAULTY], "root_cause_name": ["arp_blocked"]})
    assert bad.is_error and _json(bad)["error"] == "validation_error"
    if db_path.exists():
        with duckdb.connect(str(db_path), read_only=True) as conn:
            assert conn.execute("SELECT count(*) FROM submissions").fetchone()[0] == 0
    ok = client.call("submit", {"is_anomaly": True, "faulty_devices": [FAULTY], "root_cause_name": ["arp_acl_block"]})
    assert not ok.is_error and "Submission success." in _json(ok)
    with duckdb.connect(str(db_path), read_only=True) as conn:
        row = conn.execute("SELECT incident_id, method, backend, is_anomaly, labels, devices, tool_calls, "
                           "json_extract_string(v2, '$.root_causes[0].resource_id') FROM submissions").fetchone()
    assert row[:6] == ("sample-backlog-001", "mcp", "snapshot", True, ["arp_acl_block"], [FAULTY])
    assert row[6] > 0 and row[7] == f"node/{FAULTY}"


def test_submission_out_file(tmp_path):
    out = tmp_path / "answer.json"
    conn = McpConnection(_server_argv(tmp_path / "unused.duckdb", "--submission-out", str(out)))
    try:
        conn.call("submit", {"is_anomaly": False, "faulty_devices": [], "root_cause_name": []})
    finally:
        conn.close()
    doc = json.loads(out.read_text())
    assert doc["v1"] == {"is_anomaly": False, "faulty_devices": [], "root_cause_name": []}
    assert not (tmp_path / "unused.duckdb").exists()


def test_mcp_backend_probes_equal_direct_replay(direct, router, db_path):
    backend = mcp_backend(_server_argv(db_path))
    try:
        assert [d.name for d in backend.devices()] == [d.name for d in direct.directory.devices()]
        cases = [("ip_addr", {"dev": FAULTY}), ("ip_route", {"dev": router}), ("nft_ruleset", {"dev": FAULTY}),
                 ("vtysh_show", {"dev": router, "command": "show ip route json"}), ("processes", {"dev": router}),
                 ("ping", {"src": "host_1_1_1_1", "dst_ip": "10.1.2.11", "count": 2}),
                 ("ping", {"src": "host_1_1_1_1", "dst_ip": "10.1.2.11", "count": 9}),  # not recorded either way
                 ("reachability", {})]
        for name, args in cases:
            via_mcp, replayed = backend.probe(name, **args), run_probe(direct, name, **args)
            assert via_mcp.record == replayed.record, name
            assert via_mcp.raw == replayed.raw, name
        assert backend.probe_calls == len(cases)
    finally:
        backend.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_mcp_backend_over_http(direct, db_path):
    port = _free_port()
    proc = subprocess.Popen(_server_argv(db_path, "--http", str(port)), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.2)
        backend = mcp_backend(f"http://127.0.0.1:{port}/mcp")
        try:
            assert backend.probe("ip_addr", dev=FAULTY).record == run_probe(direct, "ip_addr", dev=FAULTY).record
        finally:
            backend.close()
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.parametrize(("command", "probe"), [
    ("ip addr", "ip_addr"), ("ip -j -s -d link show", "ip_link"), ("ip route show", "ip_route"),
    ("ip neigh", "ip_neigh"), ("nft -j list ruleset", "nft_ruleset"), ("tc -s qdisc show dev eth0", "tc_qdisc"),
    ("ss -tulpn", "sockets"), ("ps aux", "processes"), ("bridge fdb show", "bridge_fdb"),
    ("iptables -t mangle -S", "iptables_rules"), ("cat /etc/resolv.conf", "read_file"),
    ("tail -n 50 /var/log/x.log", "tail_file"), ("vtysh -c 'show ip  ospf neighbor'", "vtysh_show"),
    ("ping -c 2 10.0.0.1", "ping"), ("dig @10.1.4.10 web0.local", "dig"), ("curl -s http://web0.local/", "http_get"),
    ("busybox udhcpc -i eth0", "dhcp_check")])
def test_command_mapping(direct, command, probe):
    dev = direct.directory.device(FAULTY)
    assert command_to_probe(command, dev, direct.directory)[0] == probe


def test_command_mapping_arguments(direct):
    dev = direct.directory.device(FAULTY)
    assert command_to_probe("ping -c 5 dns_server", dev, direct.directory)[1]["dst_ip"] == "10.1.4.10"
    assert command_to_probe("vtysh -c 'show  ip route'", dev, direct.directory)[1]["command"] == "show ip route"
    with pytest.raises(ProbeError):
        command_to_probe("ss -K dst 10.0.0.1", dev, direct.directory)


def test_cli_refuses_missing_snapshot(run_cli, tmp_path):
    run_cli("mcp", "lab", "--snapshot", str(tmp_path / "none.json.gz"), expect_exit=2)
    run_cli("mcp", "lab", "--snapshot", str(SNAPSHOT), "--lab", expect_exit=2)


def test_mcp_backend_on_a_plain_nika_server(direct):
    """A server with only NIKA's text tools (no list_devices, no structured output): the directory comes from
    get_reachability (end hosts only) and exec_shell's text is taken as the command's stdout."""
    from mcp.server.mcpserver import MCPServer

    from faultline.mcp.lab_server import open_session
    from faultline.network.backend import Backend

    session = open_session(Backend(kind="snapshot", ctx=direct), incident_id="x", out_file=Path("/dev/null"),
                           settings=None)
    nika = MCPServer(name="plain-nika")

    @nika.tool()
    def get_reachability() -> str:
        return json.dumps(session.call(session.get_reachability))

    @nika.tool()
    def exec_shell(host_name: str, command: str) -> str:
        value = session.call(session.exec_shell, host_name=host_name, command=command)
        return value.get("output", json.dumps(value))

    backend = mcp_backend(nika)
    try:
        names = {d.name for d in backend.devices()}
        hosts = {d.name for d in direct.directory.devices() if d.role not in ("router", "switch")}
        assert FAULTY in names and names <= hosts and not any(d.role == "router" for d in backend.devices())
        assert backend.probe("ip_addr", dev=FAULTY).record == run_probe(direct, "ip_addr", dev=FAULTY).record
        assert backend.probe("nft_ruleset", dev=FAULTY).record == run_probe(direct, "nft_ruleset", dev=FAULTY).record
    finally:
        backend.close()
