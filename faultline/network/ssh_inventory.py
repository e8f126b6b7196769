"""Devices reached over SSH, from a nornir-style inventory folder (hosts.yaml, groups.yaml, defaults.yaml).

The folder `faultline ingest inventory` reads; each resolved host becomes an `SshTarget` (where to connect) and a
`Device` (what the probe API knows). The `data` keys it reads: docs/ssh.md#the-inventory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from faultline.errors import FaultlineError
from faultline.network.devices import Device, StaticDirectory, valid_device_name

ROLES = ("router", "host", "switch", "dns", "dhcp", "web", "lb", "backend", "client", "server")


@dataclass(frozen=True)
class SshTarget:
    """Where and how to reach one device."""

    device: str
    hostname: str
    port: int = 22
    username: str | None = None
    namespace: str | None = None  # a network namespace on the SSH server, or None for the whole machine
    key_file: str | None = None
    read_roots: tuple[str, ...] = field(default_factory=tuple)


@dataclass
class SshInventory:
    """The devices of an inventory folder, ready for the probe API and the SSH runner."""

    folder: Path
    targets: dict[str, SshTarget]
    directory: StaticDirectory
    file_roots: dict[str, list[str]]
    vty_dirs: dict[str, str]
    rejected: list[str]  # "host: reason" for every host that could not be used (the rest load)
    files: dict[str, list[str]] = field(default_factory=dict)  # device -> readable files (`data.files`)
    dns_names: list[str] = field(default_factory=list)  # every host's names, by domain then name
    # http://NAME/ of every web and load-balancer name; http://ADDRESS/ of one without
    urls: list[str] = field(default_factory=list)
    site: str | None = None  # defaults' `site` and `lab_size`, when the inventory says
    size: str | None = None


def load_ssh_inventory(folder: Path) -> SshInventory:
    """Read `folder` and build the SSH targets; FaultlineError when no host is usable."""
    from faultline.inventory.load import load_inventory

    loaded = load_inventory(Path(folder))
    inv_folder = Path(loaded.folder)
    rejected = [f"{r.file} line {r.record_no}: {r.reason}" for r in loaded.rejects]
    targets: dict[str, SshTarget] = {}
    devices: list[Device] = []
    roots: dict[str, list[str]] = {}
    vty: dict[str, str] = {}
    files: dict[str, list[str]] = {}
    names: dict[str, str] = {}  # name -> role of its host
    by_address: list[str] = []  # URLs of web and load-balancer hosts that have no name
    for host in loaded.hosts:
        data = host.data
        problem = _problem(host.host, host.hostname, data)
        if problem:
            rejected.append(f"{host.host}: {problem}")
            continue
        role = host.role or ("router" if host.platform == "frr" else "host")
        if role not in ROLES:
            rejected.append(f"{host.host}: role {role!r} is none of {', '.join(ROLES)}")
            continue
        namespace = data.get("namespace")
        key_file = data.get("ssh_key_file")
        host_roots = [str(r) for r in data.get("file_roots") or []]
        targets[host.host] = SshTarget(
            device=host.host, hostname=str(host.hostname), port=int(host.port or 22), username=host.username,
            namespace=str(namespace) if namespace else None, key_file=str(key_file) if key_file else None,
            read_roots=tuple(host_roots + ([str(data["vty_socket"])] if data.get("vty_socket") else [])),
        )
        addresses = tuple(_with_prefix(a) for a in host.networks)
        # the probe API needs a namespace name to put on command lines; a whole machine gets its own name
        mgmt = data.get("mgmt_interface") or ()
        management = tuple(str(i) for i in ([mgmt] if isinstance(mgmt, str) else mgmt))
        devices.append(Device(host.host, role, str(namespace or host.host), addresses, management))
        if host_roots:
            roots[host.host] = host_roots
        if data.get("vty_socket"):
            vty[host.host] = str(data["vty_socket"])
        if data.get("files"):
            files[host.host] = [str(f) for f in data["files"]]
        for name in host.dns_names:
            names.setdefault(name, role)
        if role in ("web", "lb") and not host.dns_names and addresses:
            by_address.append(f"http://{addresses[0].split('/')[0]}/")  # a site without DNS: users type the address
    if not targets:
        detail = "; ".join(rejected[:5]) or "hosts.yaml lists no host"
        raise FaultlineError(f"no usable host in the inventory {folder}: {detail}",
                             fix="give every host a hostname (its management address) and a short lower-case name")
    ordered = sorted(names, key=lambda n: (n.split(".", 1)[-1], n))
    site = {h.site for h in loaded.hosts if h.site}
    sizes = {str(h.data["lab_size"]) for h in loaded.hosts if h.data.get("lab_size")}
    return SshInventory(folder=inv_folder, targets=targets, directory=StaticDirectory(devices), file_roots=roots,
                        vty_dirs=vty, rejected=rejected, files=files, dns_names=ordered,
                        urls=[f"http://{n}/" for n in ordered if names[n] in ("web", "lb")] + by_address,
                        site=site.pop() if len(site) == 1 else None, size=sizes.pop() if len(sizes) == 1 else None)


def _problem(name: str, hostname: str | None, data: dict) -> str | None:
    if not valid_device_name(name):
        return "the name is not a short lower-case identifier (letters, digits, '-', '_')"
    if not hostname:
        return "no hostname (the address to connect to)"
    if "password" in data:
        return "a password in the inventory is refused: use FAULTLINE_SSH_PASSWORD or ssh_secrets_file"
    return None


def _with_prefix(address: str) -> str:
    return address if "/" in str(address) else f"{address}/32"
