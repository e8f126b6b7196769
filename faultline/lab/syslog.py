"""The lab's syslog collector: one rsyslogd per lab, to which every device's daemons log through syslog.

One Unix socket per device, bind-mounted over its daemons' /dev/log, and one file per device; no namespace's data
plane changes. Transport, line format and teardown: docs/lab.md#syslog-every-device-logs-to-one-collector.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from faultline.errors import FaultlineError

DEV_LOG = Path("/dev/log")
RSYSLOGD = "rsyslogd"
MESSAGES = "messages"
_SUN_PATH_MAX = 107  # a Unix socket path longer than this cannot be bound


def syslog_dir(run_dir: Path) -> Path:
    """The collector's folder in the lab's run dir."""
    return run_dir / "syslog"


def socket_path(run_dir: Path, device: str) -> Path:
    """The Unix socket the collector receives `device`'s syslog on."""
    return syslog_dir(run_dir) / "sock" / device


def messages_path(run_dir: Path, device: str) -> Path:
    """Where the collector files `device`'s lines."""
    return syslog_dir(run_dir) / device / MESSAGES


def conf_path(run_dir: Path) -> Path:
    """The collector's rsyslog.conf (its path also identifies the collector's process)."""
    return syslog_dir(run_dir) / "rsyslog.conf"


def render_conf(run_dir: Path, devices: Iterable[str]) -> str:
    """rsyslog.conf of the lab's collector: one imuxsock input per device, one file per device."""
    sdir = syslog_dir(run_dir)
    devices = sorted(devices)
    lines = [
        "# Faultline lab syslog collector (written by faultline/lab/syslog.py; see docs/lab.md)",
        f'global(workDirectory="{sdir / "work"}")',
        # only the lab's sockets: never the machine's /dev/log
        'module(load="imuxsock" SysSock.Use="off")',
        ('template(name="flLine" type="string" string="<%PRI%>%timegenerated:::date-rfc3339% %HOSTNAME% '
         '%syslogtag%%msg:::sp-if-no-1st-sp%%msg:::drop-last-lf%\\n")'),
        f'template(name="flFile" type="string" string="{sdir}/%HOSTNAME%/{MESSAGES}")',
        'ruleset(name="flLab") {',
        f'  action(type="omfile" dynaFile="flFile" template="flLine" dynaFileCacheSize="{max(10, len(devices))}"',
        '         dirCreateMode="0755" fileCreateMode="0644" asyncWriting="off" flushOnTXEnd="on")',
        "}",
    ]
    for device in devices:
        # a flood (web_dos_attack's access log) must be filed whole: no rate limit
        lines.append(f'input(type="imuxsock" Socket="{socket_path(run_dir, device)}" HostName="{device}" '
                     'Ruleset="flLab" RateLimit.Interval="0" UseSysTimeStamp="on")')
    return "\n".join(lines) + "\n"


def start_collector(run_dir: Path, devices: Iterable[str], timeout: float = 10.0) -> int:
    """Write the collector's config, start rsyslogd and wait for every device's socket; its PID."""
    devices = sorted(devices)
    too_long = [str(socket_path(run_dir, d)) for d in devices if len(str(socket_path(run_dir, d))) > _SUN_PATH_MAX]
    if too_long:
        raise FaultlineError(f"syslog socket paths are too long for Unix sockets: {too_long[0]}",
                             fix="choose a shorter lab_dir (FAULTLINE_LAB_DIR)")
    sdir = syslog_dir(run_dir)
    for sub in ("sock", "work"):
        (sdir / sub).mkdir(parents=True, exist_ok=True)
    sdir.chmod(0o755)
    conf = conf_path(run_dir)
    conf.write_text(render_conf(run_dir, devices))
    ensure_dev_log()
    try:
        with open(sdir / "rsyslogd.out", "ab") as out:
            # TZ=UTC: the collector's clock is the lab's reference time, in UTC
            proc = subprocess.Popen([RSYSLOGD, "-n", "-f", str(conf), "-i", str(sdir / "rsyslogd.pid")],
                                    stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True, env={**os.environ, "TZ": "UTC"})
    except FileNotFoundError:
        raise FaultlineError("rsyslogd is not installed (the lab's syslog collector)",
                             fix="run `scripts/install.sh --dev` as root (apt package rsyslog)") from None
    deadline = time.monotonic() + timeout
    while missing := [d for d in devices if not socket_path(run_dir, d).exists()]:
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            detail = (sdir / "rsyslogd.out").read_text(errors="replace").strip()[-500:]
            raise FaultlineError(f"the syslog collector did not open its sockets ({len(missing)} missing, "
                                 f"e.g. {missing[0]}): {detail}", fix="run `faultline lab down --all` and try again")
        time.sleep(0.05)
    return proc.pid


def ensure_dev_log() -> None:
    """Make sure /dev/log exists as a bind-mount target (an empty file when no syslog daemon made it)."""
    if not os.path.lexists(DEV_LOG):
        DEV_LOG.touch(mode=0o644)


def logging_prefix(run_dir: Path, device: str) -> list[str]:
    """The command prefix (run inside `ip netns exec`) that gives a daemon the device's /dev/log.

    `sh` execs the daemon, so the PID a caller gets is the daemon's own.
    """
    return ["sh", "-c", 'mount --bind "$0" /dev/log && exec "$@"', str(socket_path(run_dir, device))]


def collector_pids(run_dir: Path) -> list[int]:
    """PIDs of the rsyslogd started with this lab's config (found from /proc, so also after a crash)."""
    conf = str(conf_path(run_dir)).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if args and args[0].endswith(RSYSLOGD.encode()) and conf in args:
            found.append(int(entry.name))
    return sorted(found)


def stop_collector(run_dir: Path, settle: float = 2.0) -> list[int]:
    """Stop the lab's collector by PID once its files stop growing (the daemons' last words arrive first).

    Returns the PIDs signalled.
    """
    from faultline.lab.teardown import kill_pids

    pids = collector_pids(run_dir)
    if not pids:
        return []
    deadline, last = time.monotonic() + settle, -1
    while time.monotonic() < deadline:
        size = sum(p.stat().st_size for p in syslog_dir(run_dir).glob(f"*/{MESSAGES}"))
        if size == last:
            break
        last = size
        time.sleep(0.15)
    return kill_pids(pids)


def collected(folder: Path) -> Iterator[tuple[str, str]]:
    """(device, line) for every line filed under `folder/<device>/messages`, device by device, as received.

    `folder` is a collector's folder (`syslog_dir(run_dir)`) or where `move_files` put its files.
    """
    for path in sorted(folder.glob(f"*/{MESSAGES}")):
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.strip():
                    yield path.parent.name, line.rstrip("\n")


def move_files(run_dir: Path, dest: Path) -> list[Path]:
    """Move the collector's per-device files into `dest/<device>/messages` (before the run dir is cleared)."""
    moved = []
    for path in sorted(syslog_dir(run_dir).glob(f"*/{MESSAGES}")):
        target = dest / path.parent.name / MESSAGES
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, target) if _same_fs(path, target.parent) else target.write_bytes(path.read_bytes())
        moved.append(target)
    return moved


def _same_fs(a: Path, b: Path) -> bool:
    return a.stat().st_dev == b.stat().st_dev
