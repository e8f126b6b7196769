"""The `ssh` network backend: the devices of a nornir-style inventory folder, probed live over SSH."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from faultline.errors import FaultlineError
from faultline.network.backend import Backend
from faultline.network.probes import ProbeContext

if TYPE_CHECKING:
    from faultline.config import Settings
    from faultline.network.backends import NetworkTarget


def open_ssh(settings: Settings, target: NetworkTarget) -> Backend:
    """The registry's opener: `target.inventory`, else the `ssh_inventory` setting; `target.runner` a pool to share."""
    inventory = target.inventory or settings.ssh_inventory
    if inventory is None:
        raise FaultlineError("the ssh network backend needs an inventory",
                             fix="pass --inventory DIR or set ssh_inventory (FAULTLINE_SSH_INVENTORY)")
    return ssh_backend(settings, Path(inventory), runner=target.runner)


def ssh_backend(settings: Settings, inventory: Path, runner: Any = None) -> Backend:
    """A backend over the devices of a nornir-style inventory folder, reached over SSH: live probes, no baseline.

    Readable files are the hosts' `data.files` (paths under their `data.file_roots`); DNS names are the hosts'
    `dns_names`, and a web or load-balancer host's names are the URLs users fetch. Call `close()` on the
    backend (`Backend.close`) when done; `runner`: an SshRunner to share (its pool; its owner closes it) instead of
    a new one.
    """
    from faultline.network.ssh_credentials import resolve_credentials
    from faultline.network.ssh_inventory import load_ssh_inventory
    from faultline.network.ssh_runner import PoolOptions, SshRunner

    inv = load_ssh_inventory(inventory)
    creds = resolve_credentials(inventory_folder=inv.folder, known_hosts=settings.ssh_known_hosts,
                                accept_new=settings.ssh_accept_new_host_keys, key_file=settings.ssh_key_file,
                                secrets_file=settings.ssh_secrets_file)
    options = PoolOptions(pool_size=settings.ssh_pool_size, per_device=settings.ssh_per_device,
                          connect_timeout_s=settings.ssh_connect_timeout_s, retries=settings.ssh_retries)
    lent = runner is not None
    runner = runner or SshRunner(inv.targets, creds, options)
    ctx = ProbeContext(directory=inv.directory, runner=runner, file_roots=inv.file_roots, vty_dirs=inv.vty_dirs)
    names, urls = inv.dns_names, inv.urls
    return Backend(kind="ssh", ctx=ctx, scenario=inv.site, size=inv.size, files=inv.files, dns_names=names,
                   urls=urls, owns_runner=not lent)
