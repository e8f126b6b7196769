"""The lab's management network (`lab up --mgmt`): SSH into every node, the data plane untouched.

Pure tests check the plan (addresses, names), sshd's config, the forced command, old state files and
the SSH-ready inventory. The tests marked `lab` (root) build simple_bgp once without and once with
management (own prefix `flm-` and subnet, so a hand-run lab on the machine is never in the way) and
compare what the nodes show; then they log in over SSH, crash a host, and take the lab down.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from faultline.config import Settings
from faultline.errors import FaultlineError
from faultline.lab import mgmt
from faultline.lab.namespaces import LAB_PREFIX, use_prefix
from faultline.lab.scenarios import SIZES, build_topology, scenario_names
from faultline.lab.state import LabProcess, LabState, load_state
from tests.labfixtures import lab_dir, lab_fixture, offline_state

SCENARIO = "simple_bgp"
PREFIX = "flm-"
SUBNET = "172.31.251.0/24"
LAB_DIR = lab_dir("mgmt")
CLI = Path(sys.executable).with_name("faultline")


def _settings(prefix: str = PREFIX, subnet: str = SUBNET, folder: Path = LAB_DIR) -> Settings:
    return Settings(lab_dir=folder, lab_prefix=prefix, lab_mgmt_subnet=subnet, progress=False)


# --- pure --------------------------------------------------------------------------------------------


def test_every_node_gets_an_address_in_topology_order_and_names_fit_ifnamsiz():
    longest_prefix = "abcdefghij-"  # 11 characters, the most lab_prefix allows
    for scenario in scenario_names():
        for size in SIZES:
            nodes = list(build_topology(scenario, size).nodes)
            plan = mgmt.plan(nodes, "172.31.254.0/24", longest_prefix, Path("/tmp/x"))
            assert plan["gateway"] == "172.31.254.1"
            assert list(plan["addresses"]) == nodes
            assert list(plan["addresses"].values()) == [f"172.31.254.{i + 2}" for i in range(len(nodes))]
            assert max(len(n) for n in [plan["bridge"], *plan["links"].values()]) <= 15  # IFNAMSIZ 16 with the NUL
    assert mgmt.bridge_name("fl-") == "fl-mgmt" and mgmt.root_link("fl-", 3) == "fl-m3"
    with pytest.raises(FaultlineError, match="holds 5 node addresses; the lab has 8 nodes"):
        mgmt.plan([f"n{i}" for i in range(8)], "10.9.9.0/29", "fl-", Path("/tmp/x"))
    with pytest.raises(FaultlineError, match="not an IPv4 network"):
        mgmt.plan(["a"], "10.9.9.1/24", "fl-", Path("/tmp/x"))
    with pytest.raises(FaultlineError, match="cannot hold"):
        mgmt.plan(["a"], "10.9.9.0/24", "fl-", Path("/tmp/a lab"))


def test_sshd_admits_root_by_key_only_and_only_to_the_guard():
    plan = mgmt.plan(["router1", "pc1"], "172.31.254.0/24", "fl-", Path("/tmp/fl-lab"))
    config = dict(line.split(" ", 1) for line in mgmt.sshd_config(plan, "pc1").splitlines() if not line.startswith("#"))
    assert config["ListenAddress"] == "172.31.254.3"
    assert config["HostKey"] == "/tmp/fl-lab/ssh/pc1/ssh_host_ed25519_key"
    assert config["PidFile"] == "/tmp/fl-lab/ssh/pc1/sshd.pid"
    assert config["AuthorizedKeysFile"] == "/tmp/fl-lab/ssh/authorized_keys"
    for key, value in [("PermitRootLogin", "forced-commands-only"), ("AllowUsers", "root"), ("UsePAM", "no"),
                       ("PasswordAuthentication", "no"), ("KbdInteractiveAuthentication", "no"),
                       ("PubkeyAuthentication", "yes"), ("StrictModes", "no"), ("AllowTcpForwarding", "no"),
                       ("AllowAgentForwarding", "no"), ("X11Forwarding", "no"), ("PermitTunnel", "no"),
                       ("PermitUserEnvironment", "no"), ("PrintMotd", "no")]:
        assert config[key] == value, key
    assert int(config["MaxSessions"]) >= 16 and int(config["MaxStartups"]) >= 16
    assert "Subsystem" not in config  # no sftp
    line = mgmt.authorized_keys_line("ssh-ed25519 AAAAkey", Path("/tmp/fl-lab"), Path("/tmp/fl-lab/ssh"))
    assert line == (f'command="{sys.executable} -I -m faultline.network.ssh_guard --read-root /tmp/fl-lab '
                    '--read-root /etc/netns --log /tmp/fl-lab/ssh/guard.log",no-pty,no-port-forwarding,'
                    "no-agent-forwarding,no-X11-forwarding,no-user-rc ssh-ed25519 AAAAkey")


def test_a_state_file_from_before_the_management_network_still_loads(tmp_path):
    state = offline_state(SCENARIO)
    state.run_dir = str(tmp_path)
    old = state.to_json()
    del old["mgmt"]
    (tmp_path / "state.json").write_text(json.dumps(old))
    loaded = load_state(tmp_path)
    assert loaded is not None and loaded.mgmt is None and loaded.devices() == state.devices()
    state.mgmt = mgmt.plan([d.name for d in state.devices()], SUBNET, "fl-", tmp_path)
    assert LabState.from_json(json.loads(json.dumps(state.to_json()))).mgmt == state.mgmt


def test_the_management_sshd_adds_no_file_root_to_the_probe_context():
    from faultline.lab.access import probe_context

    state = offline_state("dc_clos_service")
    before = probe_context(state).file_roots
    state.processes += [LabProcess(100 + i, "sshd", d.name, d.namespace) for i, d in enumerate(state.devices())]
    assert probe_context(state).file_roots == before


def _access(state: LabState):
    from faultline.lab.inventory import lab_access

    state.mgmt = mgmt.plan([d.name for d in state.devices()], SUBNET, LAB_PREFIX, Path("/tmp/fl-lab"))
    state.mgmt["host_keys"] = {d.name: f"ssh-ed25519 AAAA{d.name}" for d in state.devices()}
    return lab_access(state)


def test_an_inventory_of_a_management_lab_is_ssh_ready_and_keeps_every_key(tmp_path):
    from faultline.inventory.load import load_inventory
    from faultline.lab.access import probe_context
    from faultline.lab.inventory import inventory_documents, write_lab_inventory

    state = offline_state("dc_clos_service")
    topo = build_topology("dc_clos_service", "s")
    access = _access(state)
    plain, ready = inventory_documents(topo), inventory_documents(topo, access)
    assert plain["groups.yaml"] == ready["groups.yaml"]
    assert ready["defaults.yaml"] == {"username": "root", "data": {**plain["defaults.yaml"]["data"],
                                                                   "ssh_key_file": "/tmp/fl-lab/ssh/client_ed25519"}}
    ctx = probe_context(state)
    for name, host in plain["hosts.yaml"].items():
        got = ready["hosts.yaml"][name]
        assert got["hostname"] == state.mgmt["addresses"][name] and got["port"] == 22
        assert got["groups"] == host["groups"]
        extra = {"namespace": state.device(name).namespace, "mgmt_interface": "mgmt0",
                 "file_roots": ctx.file_roots.get(name, [])}
        if name in ctx.vty_dirs:
            extra["vty_socket"] = ctx.vty_dirs[name]
        assert got["data"] == {**host["data"], **extra}
    written = write_lab_inventory(topo, tmp_path, access)
    assert [p.name for p in written] == ["hosts.yaml", "groups.yaml", "defaults.yaml", "known_hosts"]
    assert (tmp_path / "known_hosts").read_text().splitlines() == [
        f"{state.mgmt['addresses'][d.name]} ssh-ed25519 AAAA{d.name}" for d in state.devices()]
    loaded = load_inventory(tmp_path)
    assert loaded.rejects == [] and loaded.messages == []
    assert {h.host: h.hostname for h in loaded.hosts} == state.mgmt["addresses"]


# --- a real lab --------------------------------------------------------------------------------------


def _normalized(value):
    """JSON with the handles that differ between two builds of one lab dropped: the kernel's nexthop object id
    (`nhid`) and zebra's nexthop group ids, which zebra numbers in the order it meets interfaces (mgmt0 is one
    more), and the route's age."""
    if isinstance(value, dict):
        return {k: _normalized(v) for k, v in value.items()
                if k not in ("nhid", "nexthopGroupId", "installedNexthopGroupId", "uptime")}
    if isinstance(value, list):
        return [_normalized(v) for v in value]
    return value


def _routes(namespace: str) -> str:
    return subprocess.run(["ip", "netns", "exec", namespace, "ip", "-j", "route", "show"], capture_output=True,
                          text=True, check=True).stdout


def _sockets(record) -> set[tuple[str, str, str, str]]:
    return {(s.netid, s.state, s.local, ",".join(sorted(set(re.findall(r'"([^"]+)"', s.process or "")))))
            for s in record.sockets}


def _data_plane(state: LabState, ctx) -> dict:
    """What the lab shows: every node's main table (raw and as the probe reads it), FRR's RIB, sockets, processes
    and the reachability matrix."""
    from faultline.network.probes import run_probe

    view: dict = {"raw": {}, "routes": {}, "frr": {}, "sockets": {}, "processes": {}}
    for device in state.devices():
        view["raw"][device.name] = _routes(device.namespace)
        view["routes"][device.name] = run_probe(ctx, "ip_route", dev=device.name).record.model_dump()
        view["sockets"][device.name] = _sockets(run_probe(ctx, "sockets", dev=device.name).record)
        view["processes"][device.name] = sorted(p.comm for p in run_probe(ctx, "processes", dev=device.name)
                                                .record.processes)
        if device.role == "router":
            frr = run_probe(ctx, "vtysh_show", dev=device.name, command="show ip route json")
            view["frr"][device.name] = _normalized(json.loads(frr.raw))
    matrix = run_probe(ctx, "reachability", count=2).record
    view["reachability"] = [(r.src, r.dst, r.dst_ip, r.tx, r.rx, r.loss, r.status) for r in matrix.rows]
    return view


@dataclass
class MgmtLab:
    state: LabState
    ctx: object
    settings: Settings
    inventory: Path


@lab_fixture
def plain():
    """The data plane of the lab built without --mgmt (taken down before the management lab is built)."""
    from faultline.lab import lifecycle

    settings = _settings()
    try:
        state = lifecycle.up(SCENARIO, "s", settings, timeout=30)
        try:
            return _data_plane(state, lifecycle.probe_context(state, settings))
        finally:
            lifecycle.down(settings)
    finally:
        use_prefix(LAB_PREFIX)


@lab_fixture
def lab(plain, tmp_path_factory):
    """The same lab with --mgmt, and its inventory written by `faultline lab inventory --out`."""
    from faultline.lab import lifecycle

    settings = _settings()
    folder = tmp_path_factory.mktemp("inventory")
    try:
        state = lifecycle.up(SCENARIO, "s", settings, timeout=30, mgmt=True)
        env = {"FAULTLINE_LAB_DIR": str(LAB_DIR), "FAULTLINE_LAB_PREFIX": PREFIX, "PATH": "/usr/sbin:/usr/bin:/bin"}
        subprocess.run([str(CLI), "lab", "inventory", "--out", str(folder)], env=env, check=True, capture_output=True)
        yield MgmtLab(state, lifecycle.probe_context(state, settings), settings, folder)
    finally:
        lifecycle.down(settings, all=True)
        use_prefix(LAB_PREFIX)


def _ssh(lab: MgmtLab, device: str, *command: str, timeout: float = 5) -> subprocess.CompletedProcess[str]:
    argv = ["ssh", "-F", "/dev/null", "-i", lab.state.mgmt["client_key"], "-o",
            f"UserKnownHostsFile={lab.inventory / 'known_hosts'}", "-o", "GlobalKnownHostsFile=/dev/null",
            "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={timeout:g}",
            f"root@{lab.state.mgmt['addresses'][device]}", *command]
    return subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=30, check=False)


@pytest.mark.lab
def test_ssh_runs_a_probe_command_on_a_router_and_a_host_as_it_runs_inside_the_node(lab):
    for device in ("router1", "pc2"):
        done = _ssh(lab, device, "ip", "-j", "route", "show")
        assert done.returncode == 0, done.stderr
        assert done.stdout == _routes(lab.state.device(device).namespace)
    log = Path(lab.state.mgmt["ssh_dir"], "guard.log").read_text()
    assert log.count("ran 'ip -j route show'") >= 2


@pytest.mark.lab
def test_the_inventory_reaches_every_node_with_the_probe_contexts_roots(lab):
    import yaml

    from faultline.lab.frr import router_dir

    hosts = yaml.safe_load((lab.inventory / "hosts.yaml").read_text())
    defaults = yaml.safe_load((lab.inventory / "defaults.yaml").read_text())
    assert defaults["username"] == "root" and defaults["data"]["ssh_key_file"] == f"{LAB_DIR}/ssh/client_ed25519"
    for device in lab.state.devices():
        host = hosts[device.name]
        assert (host["hostname"], host["port"]) == (lab.state.mgmt["addresses"][device.name], 22)
        assert host["data"]["namespace"] == device.namespace
        assert host["data"]["file_roots"] == lab.ctx.file_roots.get(device.name, [])
        if device.role == "router":
            assert host["data"]["vty_socket"] == str(router_dir(LAB_DIR, device.name))
    known = (lab.inventory / "known_hosts").read_text().splitlines()
    assert known == [f"{lab.state.mgmt['addresses'][d.name]} {lab.state.mgmt['host_keys'][d.name]}"
                     for d in lab.state.devices()]
    assert oct(Path(lab.state.mgmt["client_key"]).stat().st_mode & 0o777) == "0o600"


@pytest.mark.lab
def test_the_forced_command_refuses_a_change_and_a_login(lab):
    namespace = lab.state.device("router1").namespace
    done = _ssh(lab, "router1", "ip", "link", "set", "lo", "down")
    assert done.returncode == 126 and "refused" in done.stderr, (done.returncode, done.stderr)
    lo = subprocess.run(["ip", "-n", namespace, "-j", "link", "show", "lo"], capture_output=True, text=True, check=True)
    assert "UP" in json.loads(lo.stdout)[0]["flags"]
    login = _ssh(lab, "pc1")  # no command: a login shell
    assert login.returncode == 126 and "refused" in login.stderr, (login.returncode, login.stderr)
    log = Path(lab.state.mgmt["ssh_dir"], "guard.log").read_text()
    assert "refused 'ip link set lo down'" in log and "refused None" in log


@pytest.mark.lab
def test_management_leaves_routes_frr_and_reachability_as_they_were(lab, plain):
    with_mgmt = _data_plane(lab.state, lab.ctx)
    assert with_mgmt["reachability"] == plain["reachability"]
    assert all(row[-1] == "ok" for row in plain["reachability"])
    assert with_mgmt["routes"] == plain["routes"]  # what the ip_route probe reads
    assert with_mgmt["frr"] == plain["frr"]
    for device, raw in plain["raw"].items():
        assert _normalized(json.loads(with_mgmt["raw"][device])) == _normalized(json.loads(raw)), device
    for device in plain["processes"]:
        extra = list(with_mgmt["processes"][device])
        for comm in plain["processes"][device]:
            extra.remove(comm)
        assert extra == ["sshd"], (device, extra)
        ip = lab.state.mgmt["addresses"][device]
        assert with_mgmt["sockets"][device] - plain["sockets"][device] == {("tcp", "LISTEN", f"{ip}:22", "sshd")}
        assert plain["sockets"][device] <= with_mgmt["sockets"][device]


@pytest.mark.lab
def test_frr_service_down_leaves_the_management_sshd_alone(lab):
    from faultline.lab import faults, teardown

    sshd = next(p for p in lab.state.processes if p.device == "router2" and p.name == "sshd")
    rec = faults.inject(lab.state, "frr_service_down", "router2", seed=1)
    try:
        assert "sshd" not in rec.params["daemons"] and teardown.alive(sshd.pid)
        assert _ssh(lab, "router2", "ip", "-j", "route", "show").returncode == 0
    finally:
        faults.recover(lab.state)
    assert sshd in lab.state.processes and teardown.alive(sshd.pid)


@pytest.mark.lab
def test_a_crashed_host_answers_no_ssh_until_it_recovers(lab):
    from faultline.lab import faults, teardown

    before = next(p for p in lab.state.processes if p.device == "pc1" and p.name == "sshd")
    rec = faults.inject(lab.state, "host_crash", "pc1", seed=7)
    try:
        faults.verify(lab.state, lab.ctx)
        assert f"sshd[{before.pid}]" in rec.params["killed"] and not teardown.alive(before.pid)
        down = _ssh(lab, "pc1", "ip", "-j", "route", "show", timeout=2)
        assert down.returncode == 255, down.stderr
    finally:
        faults.recover(lab.state)
    after = [p for p in lab.state.processes if p.device == "pc1" and p.name == "sshd"]
    assert len(after) == 1 and after[0].pid != before.pid and teardown.alive(after[0].pid)
    assert after[0] in load_state(LAB_DIR).processes  # saved
    up = _ssh(lab, "pc1", "ip", "-j", "route", "show")
    assert up.returncode == 0 and up.stdout == _routes(lab.state.device("pc1").namespace)


@pytest.mark.lab
def test_a_second_lab_cannot_take_a_subnet_in_use_and_a_failed_up_leaves_nothing(lab, monkeypatch):
    from faultline.lab import lifecycle

    other = _settings("flf-", SUBNET, lab_dir("mgmtfail"))
    with pytest.raises(FaultlineError, match=f"flm-mgmt already has 172.31.251.1/24, inside lab_mgmt_subnet {SUBNET}"):
        lifecycle.up(SCENARIO, "s", other, timeout=30, mgmt=True)
    other = _settings("flf-", "172.31.252.0/24", lab_dir("mgmtfail"))

    def no_sshd(*args, **kwargs):
        raise FaultlineError("sshd would not start")

    monkeypatch.setattr(mgmt, "start_sshd", no_sshd)
    try:
        with pytest.raises(FaultlineError, match="sshd would not start"):
            lifecycle.up(SCENARIO, "s", other, timeout=30, mgmt=True)
        assert _links("flf-") == [] and _namespaces("flf-") == [] and not lab_dir("mgmtfail").exists()
        # state lost, bridge left over: `up` says so, `down --all` removes it
        subprocess.run(["ip", "link", "add", "flf-mgmt", "type", "bridge"], check=True)
        with pytest.raises(FaultlineError, match="flf-mgmt is left over") as err:
            lifecycle.up(SCENARIO, "s", other, timeout=30, mgmt=True)
        assert "lab down --all" in err.value.fix
        assert lifecycle.down(other, all=True)["mgmt_links"] == ["flf-mgmt"]
        assert _links("flf-") == []
    finally:
        subprocess.run(["ip", "link", "del", "flf-mgmt"], capture_output=True, check=False)
        use_prefix(PREFIX)


def _links(prefix: str) -> list[str]:
    shown = subprocess.run(["ip", "-j", "link", "show"], capture_output=True, text=True, check=True).stdout
    return [link["ifname"] for link in json.loads(shown) if link["ifname"].startswith(prefix)]


def _namespaces(prefix: str) -> list[str]:
    shown = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return [line.split()[0] for line in shown.splitlines() if line.startswith(prefix)]


@pytest.mark.lab
def test_lab_down_leaves_no_bridge_veth_sshd_or_namespace(lab):
    from faultline.lab import lifecycle, teardown

    sshds = [p.pid for p in lab.state.processes if p.name == "sshd"]
    assert len(sshds) == len(lab.state.devices()) and len(_links(PREFIX)) == len(sshds) + 1
    result = lifecycle.down(lab.settings)
    # the root ends of the veths go with the namespaces, unless the kernel's cleanup is slower than `down`
    assert "flm-mgmt" in result["mgmt_links"]
    assert set(result["mgmt_links"]) <= {"flm-mgmt", *lab.state.mgmt["links"].values()}
    assert _links(PREFIX) == [] and _namespaces(PREFIX) == []
    assert not any(teardown.alive(pid) for pid in sshds)
    assert [pid for pid in _live_pids() if str(LAB_DIR) in _cmdline(pid)] == []
    assert not LAB_DIR.exists()


def _live_pids() -> list[int]:
    from faultline.lab import teardown

    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and teardown.alive(int(p.name))]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""
