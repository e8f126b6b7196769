"""The SSH backend against a real OpenSSH server on 127.0.0.1 (the device is this machine).

The server runs with the lab's settings: public keys only, and every login forced through
`faultline.network.ssh_guard`. Nothing here needs a lab; it needs /usr/sbin/sshd (openssh-server).
"""

from __future__ import annotations

import getpass
import gzip
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from faultline.errors import FaultlineError
from faultline.network import parsers as pp
from faultline.network.allowlist import Refused
from faultline.network.runner import Runner

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
pytestmark = pytest.mark.skipif(not os.path.exists(SSHD), reason="needs OpenSSH's sshd: apt install openssh-server "
                                "(scripts/install.sh --dev installs it)")
PLANTED = "planted-Secret-7f3a9c"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _keygen(path: Path) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    return path.with_suffix(".pub").read_text().strip()


class Box:
    """One sshd on 127.0.0.1 and an inventory folder describing this machine as devices reached through it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = _free_port()
        self.user = getpass.getuser()
        self.files = root / "files"
        self.files.mkdir()
        (self.files / "app.conf").write_text("listen 8080\n")
        host_pub = _keygen(root / "host_key")
        client_pub = _keygen(root / "client_key")
        _keygen(root / "stranger_key")
        self.guard_log = root / "guard.log"
        forced = (f'command="{sys.executable} -I -m faultline.network.ssh_guard --read-root {self.files} '
                  f'--log {self.guard_log}",no-pty,no-port-forwarding,no-agent-forwarding,no-X11-forwarding')
        (root / "authorized_keys").write_text(f"{forced} {client_pub}\n")
        config = root / "sshd_config"
        config.write_text("\n".join([
            f"Port {self.port}", "ListenAddress 127.0.0.1", f"HostKey {root / 'host_key'}",
            f"PidFile {root / 'sshd.pid'}", f"AuthorizedKeysFile {root / 'authorized_keys'}", "StrictModes no",
            "UsePAM no", "PasswordAuthentication no", "KbdInteractiveAuthentication no",
            "PermitRootLogin forced-commands-only", f"AllowUsers {self.user}", "MaxSessions 32", "MaxStartups 64",
        ]) + "\n")
        if os.geteuid() == 0:
            os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # privilege separation directory
        subprocess.run([SSHD, "-f", str(config), "-E", str(root / "sshd.log")], check=True)
        self.pid = int(_wait_for(root / "sshd.pid").read_text())
        kind, key = host_pub.split()[:2]
        self.inventory = root / "inventory"
        self.inventory.mkdir()
        (self.inventory / "known_hosts").write_text(f"[127.0.0.1]:{self.port} {kind} {key}\n")
        self.write_inventory(["box"])

    def write_inventory(self, names: list[str], port: int | None = None) -> None:
        hosts = {name: {"hostname": "127.0.0.1", "port": port or self.port,
                        "data": {"role": "host", "addresses": [f"10.9.0.{i + 1}/24"], "file_roots": [str(self.files)],
                                 "files": [str(self.files / "app.conf")]}}
                 for i, name in enumerate(names)}
        (self.inventory / "hosts.yaml").write_text(yaml.safe_dump(hosts))
        (self.inventory / "defaults.yaml").write_text(yaml.safe_dump(
            {"username": self.user, "data": {"ssh_key_file": str(self.root / "client_key")}}))

    def stop(self) -> None:
        try:
            os.kill(self.pid, 15)
        except ProcessLookupError:
            pass


def _wait_for(path: Path, seconds: float = 5.0) -> Path:
    deadline = time.monotonic() + seconds
    while not path.is_file() or not path.read_text().strip():
        if time.monotonic() > deadline:
            raise AssertionError(f"sshd did not start: {path} missing")
        time.sleep(0.05)
    return path


@pytest.fixture
def box(tmp_path):
    server = Box(tmp_path)
    yield server
    server.stop()


def _backend(settings, box, **changes):
    from faultline.network.ssh_backend import ssh_backend

    return ssh_backend(settings.model_copy(update=changes), box.inventory)


def test_probes_over_ssh_give_the_records_the_machine_gives_locally(settings, box):
    net = _backend(settings, box)
    try:
        over_ssh = net.probe("ip_route", dev="box").record
        local = Runner().run("box", ["ip", "-j", "route", "show"], namespace=None)
        assert over_ssh == pp.parse_routes("box", local.stdout)
        assert net.probe("read_file", dev="box", path=str(box.files / "app.conf")).record.text == "listen 8080\n"
        procs = net.probe("processes", dev="box").record
        assert any(p.pid == box.pid for p in procs.processes)  # the whole machine: its sshd is listed
        out = net.probe("ip_addr", dev="box")
        assert out.result.argv == ["ip", "netns", "exec", "box", "ip", "-j", "addr", "show"]  # as a local snapshot
        assert "ran 'ip -j addr show'" in box.guard_log.read_text()
    finally:
        net.ctx.runner.close()


def test_a_command_outside_the_allowlist_never_reaches_the_device(settings, box):
    net = _backend(settings, box)
    try:
        net.probe("ip_route", dev="box")
        before = box.guard_log.read_text()
        with pytest.raises(Refused, match="not one of the read-only probe commands"):
            net.ctx.runner.run("box", ["ip", "link", "set", "lo", "down"], namespace="box")
        assert box.guard_log.read_text() == before  # nothing was sent
    finally:
        net.ctx.runner.close()


def test_the_forced_command_refuses_what_a_client_sends_outside_the_allowlist(box):
    ssh = ["ssh", "-i", str(box.root / "client_key"), "-p", str(box.port), "-o", "BatchMode=yes",
           "-o", f"UserKnownHostsFile={box.inventory / 'known_hosts'}", "-o", "StrictHostKeyChecking=yes",
           f"{box.user}@127.0.0.1"]
    changed = subprocess.run([*ssh, "ip link set lo down"], capture_output=True, text=True, timeout=20, check=False)
    assert changed.returncode == 126 and "faultline guard: refused" in changed.stderr
    shell = subprocess.run([*ssh, "ip -j addr show; id"], capture_output=True, text=True, timeout=20, check=False)
    assert shell.returncode == 126
    login = subprocess.run(ssh, capture_output=True, text=True, timeout=20, check=False, stdin=subprocess.DEVNULL)
    assert login.returncode == 126
    assert box.guard_log.read_text().count("refused") == 3
    allowed = subprocess.run([*ssh, "ip -j route show"], capture_output=True, text=True, timeout=20, check=False)
    assert allowed.returncode == 0 and allowed.stdout.startswith("[")


def test_an_unknown_host_key_refuses_and_names_the_fix(settings, box):
    (box.inventory / "known_hosts").write_text("")
    net = _backend(settings, box)
    try:
        record = net.probe("ip_route", dev="box").record
        assert "not trusted" in record.error and "ssh-keyscan" in record.error
        ping = net.probe("ping", src="box", dst_ip="127.0.0.1").record
        assert ping.status == "error" and ping.error.startswith("device not reached")  # not "unreachable"
    finally:
        net.ctx.runner.close()
    (box.inventory / "known_hosts").unlink()
    with pytest.raises(FaultlineError, match="no known_hosts file") as info:
        _backend(settings, box, ssh_known_hosts=box.inventory / "known_hosts")
    assert "ssh-keyscan" in info.value.fix


def test_accepting_new_host_keys_is_explicit_and_never_replaces_a_listed_key(settings, box):
    known = box.inventory / "known_hosts"
    listed = known.read_text()
    known.write_text("")
    net = _backend(settings, box, ssh_accept_new_host_keys=True)
    try:
        assert net.probe("ip_route", dev="box").record.error is None
        assert known.read_text().split()[1:3] == listed.split()[1:3]  # learned the server's real key
    finally:
        net.ctx.runner.close()
    fake = _keygen(box.root / "other_host").split()
    known.write_text(f"[127.0.0.1]:{box.port} {fake[0]} {fake[1]}\n")
    net = _backend(settings, box, ssh_accept_new_host_keys=True)
    try:
        assert "not trusted" in net.probe("ip_route", dev="box").record.error
    finally:
        net.ctx.runner.close()


def test_a_wrong_key_or_a_dead_device_is_a_failure_row_and_the_rest_goes_on(settings, box):
    net = _backend(settings, box, ssh_key_file=box.root / "stranger_key")
    try:
        assert "refused" in net.probe("ip_route", dev="box").record.error
    finally:
        net.ctx.runner.close()
    box.write_inventory(["box", "gone"])
    hosts = yaml.safe_load((box.inventory / "hosts.yaml").read_text())
    hosts["gone"]["port"] = _free_port()  # nothing listens there
    (box.inventory / "hosts.yaml").write_text(yaml.safe_dump(hosts))
    net = _backend(settings, box, ssh_retries=1)
    try:
        dead = net.probe("ip_route", dev="gone")
        assert dead.result.exit_code == 255 and "cannot reach gone" in dead.record.error
        again = net.probe("ip_addr", dev="gone")  # held down: fails at once, without the connect attempts
        assert "not retried for now" in again.record.error and again.result.duration_s < 0.1
        assert net.probe("ip_route", dev="box").record.error is None
        assert net.ctx.runner.stats.failures == 2
    finally:
        net.ctx.runner.close()


def test_the_pool_bounds_connections_and_reuses_them(settings, box):
    box.write_inventory(["a", "b", "c"])
    net = _backend(settings, box, ssh_pool_size=2, ssh_per_device=2)
    outputs = []
    try:
        def work(dev: str) -> None:
            for _ in range(3):
                outputs.append(net.probe("ip_link", dev=dev).record.error)

        threads = [threading.Thread(target=work, args=(d,)) for d in ("a", "b", "c", "a", "b", "c")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        stats = net.ctx.runner.stats
        assert outputs == [None] * 18
        assert stats.max_open <= 2 and stats.connections_opened >= 3  # c waited for a free slot
        assert stats.connections_opened < 18  # connections carry many commands
    finally:
        net.ctx.runner.close()


def test_no_password_reaches_the_warehouse_snapshots_or_output(settings, box, run_cli, capsys, monkeypatch):
    """A password in the environment is offered to devices, never written: grep everything this run wrote."""
    from faultline.network import snapshot

    monkeypatch.setenv("FAULTLINE_SSH_PASSWORD", PLANTED)
    run_cli("diagnose", "box", "--backend", "ssh", "--inventory", str(box.inventory), "--save", "--ticket", "",
            "--json")
    net = _backend(settings, box)
    try:
        calls = [("ip_addr", {"dev": "box"}), ("processes", {"dev": "box"})]
        snap, _ = snapshot.record(net.ctx, calls, scenario="box", size="s", phase="incident")
        snapshot.save(snap, box.root / "snapshot.json.gz")
        assert PLANTED not in repr(net.ctx.runner.credentials)
    finally:
        net.ctx.runner.close()
    captured = capsys.readouterr()
    assert '"probe_calls"' in captured.out  # the diagnosis ran and printed
    assert PLANTED not in captured.out + captured.err
    written = [p for p in list(settings.duckdb_path.parent.rglob("*")) + list(box.root.rglob("*")) if p.is_file()]
    assert settings.duckdb_path in written
    for path in written:
        data = path.read_bytes()
        if path.suffix == ".gz":
            data = gzip.decompress(data)
        assert PLANTED.encode() not in data, path


def test_a_secrets_file_must_be_private(tmp_path):
    from faultline.network.ssh_credentials import resolve_credentials

    (tmp_path / "known_hosts").write_text("")
    secrets = tmp_path / "secrets.yaml"
    secrets.write_text(f"r1: {PLANTED}\n")
    secrets.chmod(0o644)
    with pytest.raises(FaultlineError, match="readable by others") as info:
        resolve_credentials(inventory_folder=tmp_path, secrets_file=secrets)
    assert info.value.fix.startswith("chmod 600")
    secrets.chmod(0o600)
    creds = resolve_credentials(inventory_folder=tmp_path, secrets_file=secrets)
    assert creds.password("r1") == PLANTED and creds.password("r2") is None
    assert PLANTED not in repr(creds)


def test_nornir_reads_our_ssh_inventory_as_we_do(box):
    """The inventory format is nornir's: its own SimpleInventory resolves the same hosts, ports and data."""
    from nornir.plugins.inventory.simple import SimpleInventory

    from faultline.network.ssh_inventory import load_ssh_inventory

    box.write_inventory(["a", "b"])
    (box.inventory / "groups.yaml").write_text(yaml.safe_dump({"servers": {"data": {"namespace": "fl-a"}}}))
    hosts = yaml.safe_load((box.inventory / "hosts.yaml").read_text())
    hosts["a"]["groups"] = ["servers"]
    (box.inventory / "hosts.yaml").write_text(yaml.safe_dump(hosts))
    theirs = SimpleInventory(host_file=str(box.inventory / "hosts.yaml"), group_file=str(box.inventory / "groups.yaml"),
                             defaults_file=str(box.inventory / "defaults.yaml")).load()
    ours = load_ssh_inventory(box.inventory)
    for name, host in theirs.hosts.items():
        target = ours.targets[name]
        assert (target.hostname, target.port, target.username) == (host.hostname, host.port, host.username)
        assert target.namespace == host.get("namespace")
        assert target.key_file == host.get("ssh_key_file")
    assert ours.targets["a"].namespace == "fl-a" and ours.targets["b"].namespace is None


def test_the_mcp_lab_server_serves_an_ssh_reached_network(settings, box):
    """`faultline mcp lab --inventory`: NIKA's tools answer from the devices over SSH (a stdio MCP session)."""
    import json

    from faultline.network.mcp_backend import McpConnection

    argv = [sys.executable, "-m", "faultline.cli.main", "--db", str(settings.duckdb_path), "mcp", "lab",
            "--inventory", str(box.inventory), "--submission-out", str(box.root / "submission.json")]
    client = McpConnection(argv)
    try:
        devices = json.loads("".join(c.text for c in client.call("list_devices", {}).content))
        assert [d["name"] for d in devices] == ["box"]
        result = client.call("exec_shell", {"host_name": "box", "command": "ip -j route show"})
        assert not result.is_error and result.structured_content["exit_code"] == 0
        local = Runner().run("box", ["ip", "-j", "route", "show"], namespace=None)
        assert json.loads(result.structured_content["stdout"]) == json.loads(local.stdout)
        refused = client.call("exec_shell", {"host_name": "box", "command": "ip link set lo down"})
        assert refused.is_error
    finally:
        client.close()
    assert "ran 'ip -j route show'" in box.guard_log.read_text()
    assert "link set" not in box.guard_log.read_text()  # refused by the server: never sent


def test_the_nightly_shares_one_connection_pool_across_incidents(settings, box):
    """`nightly --network ssh`: each incident gets its own backend (its own probe count), all over one pool that
    the night, not the unit, closes; without an inventory the night lends none and the unit says what is missing."""
    from faultline.nightly import lent
    from faultline.nightly.backlog import BacklogItem
    from faultline.sade.unit import run_sade

    item = BacklogItem(incident_id="i1", ticket_id="t1", title="slow", digests={})
    assert lent.network(settings, "ssh") is None
    with pytest.raises(FaultlineError, match="needs an inventory") as info:
        run_sade(settings, item, network_backend="ssh", ticket="")
    assert "--inventory" in info.value.fix
    tuned = settings.model_copy(update={"ssh_inventory": box.inventory})
    first, second = lent.network(tuned, "ssh"), lent.network(tuned, "ssh")
    try:
        first.probe("ip_route", dev="box")
        first.close()  # a unit's backend: the pool stays open for the next one
        second.probe("ip_route", dev="box")
        assert first.ctx.runner is second.ctx.runner and (first.probe_calls, second.probe_calls) == (1, 1)
        assert first.ctx.runner.stats.connections_opened == 1
    finally:
        lent.close_all()
    assert first.ctx.runner._closed and not first.ctx.runner._thread.is_alive()  # the night's close ends the pool
def test_every_lab_role_survives_the_inventory(tmp_path):
    """An inventory `lab inventory` writes gives the SSH backend the lab's own devices: names, roles, addresses."""
    from faultline.lab.inventory import write_lab_inventory
    from faultline.lab.scenarios import build_topology
    from faultline.network.ssh_inventory import load_ssh_inventory

    for scenario in ("ospf_enterprise_dhcp", "dc_clos_service"):
        topo = build_topology(scenario, "s")
        write_lab_inventory(topo, tmp_path / scenario)
        inv = load_ssh_inventory(tmp_path / scenario)
        got = {(d.name, d.role, d.addresses) for d in inv.directory.devices()}
        assert got == {(n.name, n.role, tuple(n.addresses)) for n in topo.nodes.values()}, inv.rejected
    (tmp_path / "odd").mkdir()
    (tmp_path / "odd" / "hosts.yaml").write_text("r1: {hostname: 10.0.0.1, data: {role: toaster}}\n"
                                                 "r2: {hostname: 10.0.0.2, data: {role: router}}\n")
    odd = load_ssh_inventory(tmp_path / "odd")
    assert [d.name for d in odd.directory.devices()] == ["r2"] and "toaster" in odd.rejected[0]


def test_the_inventory_gives_the_same_urls_as_the_lab_it_describes(tmp_path):
    """A web server without a DNS name is fetched by its address over SSH as on the lab (rip_small_internet)."""
    from faultline.lab.access import names_and_urls
    from faultline.lab.inventory import write_lab_inventory
    from faultline.lab.scenarios import build_topology
    from faultline.network.ssh_inventory import load_ssh_inventory

    for scenario in ("rip_small_internet", "ospf_enterprise_dhcp"):
        write_lab_inventory(build_topology(scenario, "s"), tmp_path / scenario)
        inv = load_ssh_inventory(tmp_path / scenario)
        assert sorted(inv.urls) == sorted(names_and_urls(scenario, "s")[1]) and inv.urls, scenario
