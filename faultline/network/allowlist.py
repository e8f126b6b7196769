"""Which command lines a device may be asked to run: the probes' argument vectors, and nothing else.

Checked where a finished vector leaves Faultline (the SSH runner) and where it arrives on a device (the forced
command `faultline.network.ssh_guard`), hence free of heavy imports; one rule per probe's command shape:
docs/ssh.md#read-only-on-the-device-side-too.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from faultline.network import validate as v
from faultline.network.validate import ProbeError

# cpu_usage: two samples of /proc in one command; the paths follow as arguments, never spliced into the script
TWO_SAMPLES = 'grep -H "" "$@"; sleep "$0"; grep -H "" "$@"'
# the grep -E pattern selecting a /proc/<pid>/cgroup file's cpu controller line (cgroup_cpu)
CPU_LINE_PATTERN = r"^[0-9]+:([^:]*,)?cpu(,[^:]*)?:"
HTTP_MARKER = "FLHTTP"  # curl -w: one marker line; errormsg last since it holds spaces
HTTP_WRITE_OUT = (HTTP_MARKER + " %{http_code} %{time_namelookup} %{time_connect} %{time_starttransfer} "
                  "%{time_total} %{remote_ip} %{exitcode} %{errormsg}\\n")
PS_FORMAT = "pid=,ppid=,user=,pcpu=,pmem=,comm=,args="

_PIDS = re.compile(r"[1-9][0-9]{0,9}(,[1-9][0-9]{0,9})*")
_PROC_STAT = re.compile(r"/proc/(stat|[1-9][0-9]{0,9}/stat)")
_PROC_CGROUP = re.compile(r"/proc/[1-9][0-9]{0,9}/cgroup")
_CGROUP_FILE = re.compile(r"/sys/fs/cgroup/[A-Za-z0-9_./@+-]*/cpu\.(cfs_quota_us|cfs_period_us|stat)")
_NAMESPACE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_ABS_PATH = re.compile(r"/[A-Za-z0-9_./@+-]{0,4095}")
_GAP = re.compile(r"[0-9]{1,2}(\.[0-9]{1,6})?")

# fixed vectors: the JSON probes and the whole-machine process list
_FIXED: frozenset[tuple[str, ...]] = frozenset({
    ("ip", "-j", "addr", "show"),
    ("ip", "-j", "-s", "-d", "link", "show"),
    ("ip", "-j", "-s", "-s", "link", "show"),
    ("ip", "-j", "route", "show"),
    ("ip", "-j", "neigh", "show"),
    ("tc", "-s", "-j", "qdisc", "show"),
    ("nft", "-j", "list", "ruleset"),
    ("nstat", "-a", "-z", "-s", "--json"),
    ("bridge", "-j", "fdb", "show"),
    ("ss", "-H", "-tulpn"),
    ("ps", "-e", "-o", "pid="),
})


class Refused(ProbeError):
    """A command outside the allowlist: it never reaches a device."""


def _int(low: int, high: int) -> Callable[[str], None]:
    def check(value: str) -> None:
        # str.isdigit() also accepts other scripts' digits and superscripts, which int() reads or rejects
        if not (value.isascii() and value.isdigit()) or not low <= int(value) <= high:
            raise ProbeError(f"{value!r} is not a number from {low} to {high}")
    return check


def _match(pattern: re.Pattern[str], what: str) -> Callable[[str], None]:
    def check(value: str) -> None:
        if not pattern.fullmatch(value) or ".." in value.split("/"):
            raise ProbeError(f"{value!r} is not {what}")
    return check


def _exact(expected: str) -> Callable[[str], None]:
    def check(value: str) -> None:
        if value != expected:
            raise ProbeError(f"{value!r} is not the fixed argument this command takes")
    return check


def _ip(value: str) -> None:
    if v.ip(value) != value:
        raise ProbeError(f"{value!r} is not in canonical form")


def _with_checks(argv: Sequence[str], shape: Sequence[str | Callable[[str], None]]) -> bool:
    """True when `argv` has exactly `shape`'s length and fits it (ProbeError from a slot's validator)."""
    if len(argv) != len(shape):
        return False
    for value, slot in zip(argv, shape):
        if isinstance(slot, str):
            if value != slot:
                return False
        else:
            slot(value)
    return True


def _shapes(argv: Sequence[str], read_roots: Sequence[str]) -> list[list[str | Callable[[str], None]]]:
    """The candidate shapes for `argv`'s program (a short list: the rules of that one program)."""
    program = argv[0]
    path_under = _under(read_roots)
    table: dict[str, list[list[str | Callable[[str], None]]]] = {
        "ip": [["ip", "netns", "pids", _match(_NAMESPACE, "a namespace name")]],
        "ping": [["ping", "-n", "-q", "-c", _int(1, 100), "-i", "0.2", "-W", "1", _ip]],
        "traceroute": [["traceroute", "-n", "-q", "1", "-w", "1", "-m", _int(1, 30), _ip]],
        "iptables": [["iptables", "-t", _table, "-S"]],
        "ps": [["ps", "-o", PS_FORMAT, "-p", _match(_PIDS, "a list of process ids")]],
        "cat": [["cat", "--", path_under]],
        "tail": [["tail", "-n", _int(1, 5000), "--", path_under]],
        "busybox": [["busybox", "udhcpc", "-n", "-q", "-f", "-i", _interface, "-t", "3", "-T", "1", "-s", "/bin/true"]],
    }
    return table.get(program, [])


def _interface(value: str) -> None:
    v.interface(value)


def _table(value: str) -> None:
    v.choice("iptables table", value, v.IPTABLES_TABLES)


def _under(roots: Sequence[str]) -> Callable[[str], None]:
    def check(value: str) -> None:
        _match(_ABS_PATH, "a plain absolute path")(value)
        if roots and not any(value == r or value.startswith(r.rstrip("/") + "/") for r in roots):
            raise ProbeError(f"{value!r} is outside the readable folders")
    return check


def _variadic(argv: Sequence[str], read_roots: Sequence[str]) -> bool | None:
    """Rules for commands whose length varies (dig, curl, vtysh, the /proc and cgroup reads); None: no rule."""
    program = argv[0]
    if program == "vtysh":
        rest = list(argv[1:])
        if rest[:1] == ["--vty_socket"] and len(rest) >= 2:
            _under(read_roots)(rest[1]) if read_roots else _match(_ABS_PATH, "a socket folder")(rest[1])
            rest = rest[2:]
        elif rest[:1] == ["-N"] and len(rest) >= 2:
            _match(_NAMESPACE, "a namespace name")(rest[1])
            rest = rest[2:]
        if len(rest) != 2 or rest[0] != "-c":
            return False
        if v.vtysh_command(rest[1]) != rest[1]:
            raise ProbeError(f"{rest[1]!r} is not in canonical form")
        return True
    if program == "dig":
        rest = list(argv[1:])
        if rest[:2] != ["+time=2", "+tries=1"]:
            return False
        rest = rest[2:]
        if rest[:1] == ["+tcp"]:
            rest = rest[1:]
        if rest and rest[0].startswith("@"):
            _ip(rest[0][1:])
            rest = rest[1:]
        if rest[:1] == ["-p"] and len(rest) > 1:
            _int(1, 65535)(rest[1])
            rest = rest[2:]
        if len(rest) != 4 or rest[0] != "-t" or rest[2] != "-q":
            return False
        v.dns_type(rest[1])
        v.hostname(rest[3])
        return True
    if program == "curl":
        head = ["curl", "-sS", "-o", "/dev/null", "--proto", "=http,https", "--max-redirs", "0",
                "--connect-timeout", "5", "--max-time"]
        if list(argv[:len(head)]) != head or len(argv) != len(head) + 4:
            return False
        _int(1, 120)(argv[len(head)])
        _exact("-w")(argv[len(head) + 1])
        _exact(HTTP_WRITE_OUT)(argv[len(head) + 2])
        v.url(argv[-1])
        return True
    if program == "sh":
        if len(argv) < 5 or argv[1] != "-c" or argv[2] != TWO_SAMPLES:
            return False
        _match(_GAP, "a number of seconds")(argv[3])
        for path in argv[4:]:
            _match(_PROC_STAT, "a /proc stat file")(path)
        return True
    if program == "grep":
        if len(argv) >= 5 and argv[1:4] == ["-H", "-E", CPU_LINE_PATTERN]:
            for path in argv[4:]:
                _match(_PROC_CGROUP, "a /proc cgroup file")(path)
            return True
        if len(argv) >= 4 and argv[1:3] == ["-H", ""]:
            for path in argv[3:]:
                _match(_CGROUP_FILE, "a cgroup cpu file")(path)
            return True
        return False
    return None


def refusal(argv: Sequence[str], read_roots: Sequence[str] = ()) -> str | None:
    """Why `argv` may not run on a device, or None when it is one of the probes' commands.

    `read_roots`: the folders `cat`, `tail` and `vtysh --vty_socket` may name (empty: any plain absolute path;
    the probe API has checked the device's own roots before the command was built).
    """
    vector = list(argv)
    if not vector or any(not isinstance(a, str) or "\x00" in a or "\n" in a for a in vector):
        return "not a plain argument vector (empty, or an argument with a NUL byte or a newline)"
    if tuple(vector) in _FIXED:
        return None
    try:
        verdict = _variadic(vector, read_roots)
        if verdict is None:
            verdict = any(_with_checks(vector, shape) for shape in _shapes(vector, read_roots))
    except ProbeError as exc:
        return f"`{vector[0]}`: {exc.message}"
    if verdict:
        return None
    return f"`{vector[0]}` with these arguments is not one of the read-only probe commands"


def check(argv: Sequence[str], read_roots: Sequence[str] = ()) -> None:
    """Raise `Refused` (naming the reason) unless `argv` is one of the probes' commands."""
    reason = refusal(argv, read_roots)
    if reason is not None:
        raise Refused(f"refused to send {' '.join(argv)[:200]!r}: {reason}",
                      fix="only the registered read-only probes run on devices (faultline.network.allowlist)")
