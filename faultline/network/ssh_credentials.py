"""Where SSH logins get their secrets and trust: keys, passwords, known host keys.

Keys from the settings, the inventory or ssh-agent; passwords only from the environment or an owner-only secrets
file, never from the inventory; host keys checked strictly against one known_hosts file. The order of each:
docs/ssh.md#the-inventory.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from faultline.errors import FaultlineError

PASSWORD_ENV = "FAULTLINE_SSH_PASSWORD"


@dataclass(frozen=True, repr=False)
class Credentials:
    """The login material for one network; `repr` never shows a password."""

    known_hosts: Path
    accept_new: bool = False
    key_file: Path | None = None
    passwords: tuple[tuple[str, str], ...] = ()  # (host or "*", password)

    def password(self, device: str) -> str | None:
        """The password for `device` (its own entry, else "*"), or None."""
        found = dict(self.passwords)
        return found.get(device, found.get("*"))

    def __repr__(self) -> str:
        return (f"Credentials(known_hosts={str(self.known_hosts)!r}, accept_new={self.accept_new}, "
                f"key_file={str(self.key_file) if self.key_file else None!r}, passwords={len(self.passwords)} hidden)")


def resolve_credentials(*, inventory_folder: Path, known_hosts: Path | None = None, accept_new: bool = False,
                        key_file: Path | None = None, secrets_file: Path | None = None) -> Credentials:
    """Credentials from the settings' values; FaultlineError naming the file and the fix when one is unusable."""
    kh = known_hosts or _first_existing(inventory_folder / "known_hosts", Path.home() / ".ssh" / "known_hosts")
    if not kh.is_file():
        if not accept_new:
            raise FaultlineError(f"no known_hosts file: {kh} does not exist, so no host key can be checked",
                                 fix="collect the devices' host keys into it (ssh-keyscan, after checking their "
                                     "fingerprints), or set ssh_known_hosts; for a lab, `faultline lab inventory` "
                                     "writes one")
        kh.parent.mkdir(parents=True, exist_ok=True)
        kh.touch(mode=0o600)
    if key_file is not None and not Path(key_file).is_file():
        raise FaultlineError(f"SSH key file {key_file} does not exist", fix="set ssh_key_file to a private key file")
    passwords: list[tuple[str, str]] = []
    if os.environ.get(PASSWORD_ENV):
        passwords.append(("*", os.environ[PASSWORD_ENV]))
    if secrets_file is not None:
        passwords = _read_secrets(Path(secrets_file)) + passwords
    return Credentials(known_hosts=kh, accept_new=accept_new, key_file=Path(key_file) if key_file else None,
                       passwords=tuple(passwords))


def _first_existing(*paths: Path) -> Path:
    return next((p for p in paths if p.is_file()), paths[0])


def _read_secrets(path: Path) -> list[tuple[str, str]]:
    import yaml

    try:
        info = path.stat()
    except OSError as exc:
        raise FaultlineError(f"cannot read the SSH secrets file {path}: {exc.strerror}",
                             fix="set ssh_secrets_file to an existing file") from None
    if info.st_uid != os.geteuid() or info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise FaultlineError(f"the SSH secrets file {path} is readable by others than its owner",
                             fix=f"chmod 600 {path} (and own it as the user running Faultline)")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError:
        raise FaultlineError(f"the SSH secrets file {path} is not YAML",
                             fix="write one `host: password` per line ('*' for every host)") from None
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise FaultlineError(f"the SSH secrets file {path} must map host names to passwords",
                             fix="write one `host: password` per line ('*' for every host)")
    return sorted(data.items())
