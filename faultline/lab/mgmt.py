"""The lab's management network (`lab up --mgmt`): every node reachable over SSH, its data plane untouched.

A bridge in the root namespace, a `mgmt0` per node whose address lives outside the main routing table (this
kernel has no VRF), and a forced-command sshd per node; the design: docs/lab.md#the-management-network.
"""

from __future__ import annotations

import ipaddress
import itertools
import json
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from faultline.errors import FaultlineError
from faultline.lab import teardown
from faultline.lab.builder import ip_batch, run
from faultline.lab.state import MGMT_INTERFACE, LabProcess, LabState

IFNAME = MGMT_INTERFACE
MGMT_TABLE = 1000
RULE_PREF = 1000
SSHD = "/usr/sbin/sshd"
DAEMON = "sshd"  # the LabProcess name (faultline.lab.access.MGMT_DAEMONS)
SSH_PORT = 22
_WORKERS = 16
# characters sshd_config and authorized_keys would need quoted: refused in the paths the lab writes there
_UNSAFE = set(" \t\n\"'%\\")
_FIX = "run `faultline lab down --all` (same lab_prefix and lab_dir) and try again"


def bridge_name(prefix: str) -> str:
    """The root namespace's management bridge ("fl-mgmt": 15 characters at most with an 11-character prefix)."""
    return f"{prefix}mgmt"


def root_link(prefix: str, index: int) -> str:
    """The root end of the management veth of the `index`-th node in topology order ("fl-m0")."""
    return f"{prefix}m{index}"


def mac(ip: str) -> str:
    """The MAC of a management address: 02:fe and the IPv4 octets (DHCP hosts' data MACs start 02:00)."""
    return "02:fe:" + ":".join(f"{b:02x}" for b in ipaddress.IPv4Address(ip).packed)


def plan(devices: list[str], subnet: str, prefix: str, run_dir: Path) -> dict:
    """The management network of a lab whose nodes are `devices` (topology order), as `LabState.mgmt` keeps it."""
    try:
        net = ipaddress.IPv4Network(subnet)
    except ValueError as exc:
        raise FaultlineError(f"lab_mgmt_subnet {subnet!r} is not an IPv4 network: {exc}",
                             fix="set lab_mgmt_subnet to a free range, e.g. 172.31.254.0/24") from None
    hosts = [str(ip) for ip in itertools.islice(net.hosts(), len(devices) + 1)]
    if len(hosts) <= len(devices):
        raise FaultlineError(f"lab_mgmt_subnet {net} holds {max(len(hosts) - 1, 0)} node addresses; the lab has "
                             f"{len(devices)} nodes", fix="set lab_mgmt_subnet to a larger free range")
    unsafe = sorted(set(str(run_dir) + sys.executable) & _UNSAFE)
    if unsafe:
        raise FaultlineError(f"the management network writes {run_dir} and {sys.executable} into sshd's files, "
                             f"which cannot hold {unsafe}", fix="use a lab_dir (and a Python) without such characters")
    ssh_dir = run_dir / "ssh"
    return {"bridge": bridge_name(prefix), "subnet": str(net), "gateway": hosts[0], "ssh_dir": str(ssh_dir),
            "client_key": str(ssh_dir / "client_ed25519"),
            "addresses": dict(zip(devices, hosts[1:])),
            "links": {device: root_link(prefix, index) for index, device in enumerate(devices)},
            "host_keys": {}}


def check_free(mgmt: dict) -> None:
    """Refuse a management network whose bridge is left over or whose subnet the machine already uses."""
    for tool in (SSHD, "ssh-keygen"):
        if shutil.which(tool) is None:
            raise FaultlineError(f"the management network needs {tool}", fix="apt-get install openssh-server "
                                 "(scripts/install.sh --dev installs it)")
    net = ipaddress.IPv4Network(mgmt["subnet"])
    for link in json.loads(run(["ip", "-j", "addr", "show"]).stdout or "[]"):
        if link.get("ifname") == mgmt["bridge"]:
            raise FaultlineError(f"the management bridge {mgmt['bridge']} is left over from an earlier lab", fix=_FIX)
        for addr in link.get("addr_info", []):
            if addr.get("family") == "inet" and ipaddress.IPv4Interface(
                    f"{addr['local']}/{addr['prefixlen']}").network.overlaps(net):
                raise FaultlineError(
                    f"{link['ifname']} already has {addr['local']}/{addr['prefixlen']}, inside lab_mgmt_subnet {net}",
                    fix="give this lab another lab_mgmt_subnet (FAULTLINE_LAB_MGMT_SUBNET), e.g. 172.31.253.0/24")


def _node_lines(mgmt: dict, device: str, *, first: bool) -> list[str]:
    """`ip -batch` lines giving a node's mgmt0 its address and routes (again after a reboot: `first` off)."""
    ip, gateway = mgmt["addresses"][device], mgmt["gateway"]
    lines = [f"link set {IFNAME} addrgenmode none"] if first else []  # before it is up, or a link-local appears
    lines += [f"link set {IFNAME} up",
              f"route replace local {ip} dev {IFNAME} table local scope host src {ip}",
              f"route replace {mgmt['subnet']} dev {IFNAME} table {MGMT_TABLE} src {ip}",
              f"neigh replace {gateway} lladdr {mac(gateway)} dev {IFNAME} nud permanent"]
    return lines + ([f"rule add from {ip} lookup {MGMT_TABLE} pref {RULE_PREF}"] if first else [])


def build_network(mgmt: dict, namespaces: dict[str, str]) -> None:
    """Create the bridge and every node's veth, address, routes and neighbours (namespaces: device -> netns)."""
    bridge, gateway = mgmt["bridge"], mgmt["gateway"]
    prefixlen = ipaddress.IPv4Network(mgmt["subnet"]).prefixlen
    lines = [f"link add {bridge} address {mac(gateway)} type bridge stp_state 0 forward_delay 0",
             f"link set {bridge} addrgenmode none", f"addr add {gateway}/{prefixlen} dev {bridge}",
             f"link set {bridge} up"]
    for device, ip in mgmt["addresses"].items():
        link = mgmt["links"][device]
        lines += [f"link add {link} type veth peer name {IFNAME} address {mac(ip)} netns {namespaces[device]}",
                  f"link set {link} addrgenmode none", f"link set {link} master {bridge}", f"link set {link} up",
                  f"neigh replace {ip} lladdr {mac(ip)} dev {bridge} nud permanent"]
    ip_batch(lines)
    _each(lambda d: ip_batch(_node_lines(mgmt, d, first=True), namespaces[d]), list(mgmt["addresses"]))


def _each(func, items: list) -> list:
    with ThreadPoolExecutor(max_workers=max(1, min(_WORKERS, len(items)))) as pool:
        return list(pool.map(func, items))


# --- OpenSSH ---------------------------------------------------------------------------------------


def node_dir(mgmt: dict, device: str) -> Path:
    """One node's sshd files: host key, sshd_config, sshd.pid, sshd.log."""
    return Path(mgmt["ssh_dir"]) / device


def _keygen(path: Path, comment: str) -> str:
    run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)])
    path.chmod(0o600)
    return " ".join(path.with_name(path.name + ".pub").read_text().split()[:2])  # "ssh-ed25519 AAAA..."


def authorized_keys_line(public_key: str, run_dir: Path, ssh_dir: Path) -> str:
    """The client key's line: root may run the guard's allowlisted commands and nothing else."""
    guard = [sys.executable, "-I", "-m", "faultline.network.ssh_guard", "--read-root", str(run_dir),
             "--read-root", "/etc/netns", "--log", str(ssh_dir / "guard.log")]
    command = shlex.join(guard).replace('"', '\\"')
    options = [f'command="{command}"', "no-pty", "no-port-forwarding", "no-agent-forwarding", "no-X11-forwarding",
               "no-user-rc"]
    return f"{','.join(options)} {public_key}"


def sshd_config(mgmt: dict, device: str) -> str:
    """One node's sshd_config: its own address and host key, the lab's authorized_keys, nothing else allowed."""
    ndir = node_dir(mgmt, device)
    settings = [
        ("ListenAddress", mgmt["addresses"][device]), ("Port", SSH_PORT),
        ("HostKey", ndir / "ssh_host_ed25519_key"), ("PidFile", ndir / "sshd.pid"),
        ("AuthorizedKeysFile", Path(mgmt["ssh_dir"]) / "authorized_keys"),
        ("StrictModes", "no"), ("UsePAM", "no"), ("PasswordAuthentication", "no"),
        ("KbdInteractiveAuthentication", "no"), ("PubkeyAuthentication", "yes"),
        ("AuthenticationMethods", "publickey"),
        ("PermitRootLogin", "forced-commands-only"), ("AllowUsers", "root"),
        ("AllowTcpForwarding", "no"), ("AllowAgentForwarding", "no"), ("X11Forwarding", "no"),
        ("PermitTunnel", "no"), ("DisableForwarding", "yes"), ("PermitUserEnvironment", "no"),
        ("PrintMotd", "no"), ("PrintLastLog", "no"), ("UseDNS", "no"),
        # the SSH backend runs up to 16 probes at once: room for them all, per connection and in handshakes
        ("MaxSessions", 32), ("MaxStartups", 64),
    ]
    head = f"# {device}'s management sshd, written by `faultline lab up --mgmt` (no Subsystem: no sftp)\n"
    return head + "".join(f"{key} {value}\n" for key, value in settings)


def write_ssh_files(mgmt: dict, run_dir: Path) -> None:
    """The client key, authorized_keys, one host key and sshd_config per node; records the host keys."""
    ssh_dir = Path(mgmt["ssh_dir"])
    ssh_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    client = _keygen(Path(mgmt["client_key"]), "faultline-lab-client")
    (ssh_dir / "authorized_keys").write_text(authorized_keys_line(client, run_dir, ssh_dir) + "\n")

    def node(device: str) -> tuple[str, str]:
        ndir = node_dir(mgmt, device)
        ndir.mkdir(mode=0o700, exist_ok=True)
        (ndir / "sshd_config").write_text(sshd_config(mgmt, device))
        return device, _keygen(ndir / "ssh_host_ed25519_key", f"faultline-lab-{device}")

    mgmt["host_keys"] = dict(_each(node, list(mgmt["addresses"])))


_WITH_CPU_CGROUP = ('if [ -d /sys/fs/cgroup ] && ! [ -e /sys/fs/cgroup/cpu/cpu.stat ]; then '
                    'mount -t tmpfs -o mode=755 cgroup /sys/fs/cgroup && mkdir -p /sys/fs/cgroup/cpu && '
                    'mount -t cgroup -o cpu cgroup /sys/fs/cgroup/cpu; fi; exec "$0" "$@"')


def start_sshd(mgmt: dict, device: str, namespace: str, timeout: float = 10.0) -> int:
    """Start `device`'s sshd in its namespace (it daemonizes) and return its PID from the pid file."""
    ndir = node_dir(mgmt, device)
    pidfile = ndir / "sshd.pid"
    pidfile.unlink(missing_ok=True)
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation dir
    # `ip netns exec` gives sshd the node's /etc files but a /sys of its own, without the cgroup hierarchies: the
    # cpu one is mounted again there, so a login reads the node's CPU groups as a root-namespace probe does
    run(["ip", "netns", "exec", namespace, "sh", "-c", _WITH_CPU_CGROUP, SSHD, "-f", str(ndir / "sshd_config"),
         "-E", str(ndir / "sshd.log")])
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = pidfile.read_text().strip() if pidfile.exists() else ""
        if text.isdigit():
            return int(text)
        time.sleep(0.02)
    raise FaultlineError(f"sshd of {device} wrote no pid file {pidfile} within {timeout:.0f} s",
                         fix=f"see {ndir / 'sshd.log'}, then {_FIX}")


def start_all(mgmt: dict, namespaces: dict[str, str]) -> list[LabProcess]:
    """Start every node's sshd; one LabProcess each."""
    def one(device: str) -> LabProcess:
        return LabProcess(start_sshd(mgmt, device, namespaces[device]), DAEMON, device, namespaces[device])
    return _each(one, list(mgmt["addresses"]))


def not_answering(mgmt: dict, timeout: float = 10.0) -> list[str]:
    """The nodes whose sshd does not accept a TCP connection from the root namespace within `timeout`."""
    def down(device: str) -> bool:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with socket.create_connection((mgmt["addresses"][device], SSH_PORT), timeout=1.0):
                    return False
            except OSError:
                if time.monotonic() > deadline:
                    return True
                time.sleep(0.05)
    devices = list(mgmt["addresses"])
    return [d for d, bad in zip(devices, _each(down, devices)) if bad]


def known_hosts(mgmt: dict) -> list[str]:
    """OpenSSH known_hosts lines, one per node: `<mgmt ip> ssh-ed25519 AAAA...`."""
    return [f"{ip} {mgmt['host_keys'][device]}" for device, ip in mgmt["addresses"].items()]


# --- a node's crash and reboot (host_crash), teardown -------------------------------------------------


def crash_node(state: LabState, device: str) -> None:
    """A crashed node's management port goes dark too (its sshd died with its other processes)."""
    if state.mgmt is not None:
        run(["ip", "-n", state.device(device).namespace, "link", "set", IFNAME, "down"])


def reboot_node(state: LabState, device: str) -> LabProcess | None:
    """Bring a node's management port back and start its sshd again (same config); the new PID is saved.

    Nothing to do on a lab without management, or when its sshd still runs.
    """
    if state.mgmt is None:
        return None
    namespace = state.device(device).namespace
    ip_batch(_node_lines(state.mgmt, device, first=False), namespace)
    mine = [p for p in state.processes if p.device == device and p.name == DAEMON]
    if any(teardown.alive(p.pid) and teardown.comm(p.pid) == DAEMON for p in mine):
        return None
    proc = LabProcess(start_sshd(state.mgmt, device, namespace), DAEMON, device, namespace)
    state.processes = [p for p in state.processes if p not in mine] + [proc]
    state.save()
    return proc


def remove_network(prefix: str) -> list[str]:
    """Delete the root namespace's management links of the lab with `prefix` (veths, then the bridge)."""
    shown = subprocess.run(["ip", "-j", "-d", "link", "show"], capture_output=True, text=True, timeout=30,
                           check=False).stdout
    kinds = {link.get("ifname", ""): link.get("linkinfo", {}).get("info_kind") for link in json.loads(shown or "[]")}
    veth = re.compile(re.escape(prefix) + r"m\d+")
    names = sorted(name for name, kind in kinds.items() if kind == "veth" and veth.fullmatch(name))
    names += [name for name, kind in kinds.items() if kind == "bridge" and name == bridge_name(prefix)]
    if names:
        subprocess.run(["ip", "-force", "-batch", "-"], input="".join(f"link del {n}\n" for n in names),
                       capture_output=True, text=True, timeout=60, check=False)
    return names
