"""Generated hostile command lines for the allowlist fuzz (`faultline.network.guard_fuzz`).

Near-misses of the commands the probes really send, random vectors and raw shell syntax, every payload naming the
canary file; what they cover: docs/ssh.md#read-only-on-the-device-side-too.
"""

from __future__ import annotations

import random
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from faultline.network.allowlist import CPU_LINE_PATTERN, HTTP_WRITE_OUT, PS_FORMAT, TWO_SAMPLES

READ_ROOTS = ["/var/lab", "/etc/netns"]
SUDO = ["nft"]
_CURL = ["curl", "-sS", "-o", "/dev/null", "--proto", "=http,https", "--max-redirs", "0", "--connect-timeout", "5",
         "--max-time"]
VALID: list[list[str]] = [
    ["ip", "-j", "addr", "show"], ["ip", "-j", "-s", "-d", "link", "show"], ["ip", "-j", "route", "show"],
    ["ip", "-j", "neigh", "show"], ["tc", "-s", "-j", "qdisc", "show"], ["nft", "-j", "list", "ruleset"],
    ["nstat", "-a", "-z", "-s", "--json"], ["bridge", "-j", "fdb", "show"], ["ss", "-H", "-tulpn"],
    ["ps", "-e", "-o", "pid="], ["ip", "netns", "pids", "fl-r1"],
    ["ping", "-n", "-q", "-c", "3", "-i", "0.2", "-W", "1", "10.0.0.1"],
    ["traceroute", "-n", "-q", "1", "-w", "1", "-m", "10", "10.0.0.1"], ["iptables", "-t", "filter", "-S"],
    ["ps", "-o", PS_FORMAT, "-p", "1,22"], ["cat", "--", "/var/lab/r1/frr.conf"],
    ["tail", "-n", "50", "--", "/etc/netns/h1/resolv.conf"],
    ["busybox", "udhcpc", "-n", "-q", "-f", "-i", "eth0", "-t", "3", "-T", "1", "-s", "/bin/true"],
    ["vtysh", "-c", "show ip route json"], ["vtysh", "--vty_socket", "/var/lab/r1", "-c", "show ip bgp summary"],
    ["vtysh", "-N", "fl-r1", "-c", "show ip ospf neighbor"],
    ["dig", "+time=2", "+tries=1", "@10.0.0.53", "-t", "A", "-q", "web0.local"],
    ["dig", "+time=2", "+tries=1", "+tcp", "-t", "MX", "-q", "lab.test"],
    [*_CURL, "10", "-w", HTTP_WRITE_OUT, "http://10.0.0.80:8080/index.html"],
    ["sh", "-c", TWO_SAMPLES, "1", "/proc/stat", "/proc/12/stat"],
    ["grep", "-H", "-E", CPU_LINE_PATTERN, "/proc/12/cgroup"],
    ["grep", "-H", "", "/sys/fs/cgroup/lab/r1/cpu.stat"],
]
_HOSTILE_PROGRAMS = ["touch", "rm", "bash", "python3", "nc", "reboot", "env", "xargs", "find", "awk", "perl",
                     "sudo", "su", "tee", "dd", "chmod", "busybox", "ip6tables", "nsenter", "IP", "cat\u200b"]


def _atoms(canary: Path) -> list[str]:
    c = str(canary)
    shell = [";", "|", "&&", "||", "&", f"$(touch {c})", f"`touch {c}`", f"> {c}", f">{c}", f"<(touch {c})",
             "${IFS}", "*", "?", "~", "!", "#", "\\", "'", '"', "{a,b}", f"; touch {c}", f"| touch {c}",
             f"\ntouch {c}", f"$IFS;touch${{IFS}}{c}", f"'; touch {c}; '"]
    options = ["--output=/etc/x", "-o", "/etc/x", "--output", "-w", "--config=/tmp/x", "-f", "-e",
               "--exec=touch", "-K", "/dev/stdin", "--upload-file", "-T", "--vty_socket", "-N", "-c", "-d", "-b",
               "--", "-", "-n", "-1", "0", "99999999999", "+short", "@evil", "-oProxyCommand=touch " + c,
               "--json", "-j", "-s", "-x", "--help", "-w/etc/x", "-d@/etc/shadow", "file:///etc/shadow"]
    paths = ["/var/lab/../../etc/shadow", "../etc/passwd", "/var/lab/r1/../../../root/.ssh/id_rsa",
             "/var/lab/./../etc", "//etc/shadow", "/var/lab%2f..%2f..", "/proc/self/environ",
             "/proc/1/../../etc/shadow", "/sys/fs/cgroup/../../etc/shadow/cpu.stat", c, "/var/lab", "/var/labx/y",
             "/etc/netns/../shadow", "/var/lab/r1/frr.conf/..", "/proc/12/../self/stat", "/usr/bin/touch"]
    nul = ["a\x00b", "/var/lab/x\x00/../../etc/shadow", "\x00", "show ip route\x00; reboot"]
    long = ["A" * 4096, "/var/lab/" + "a" * 5000, "1" * 3000, "show ip route " + "x " * 2000, "é" * 20000]
    odd = ["ｉｐ", "ip\u200b", "/var/lab/\u2025/etc", "\u0663", "\u00b2", "\u0661\u0660", "\U0001d7d9",
           "show\u00a0ip route", "10.0.0.\u0661", "http://h:\u0668\u0660/", "e\u0301th0", "\u202eeth0"]
    lines = ["\n", "show ip route\nreboot", "\r", "a\rb", "\t", "show ip route\r", "/var/lab/x\n/etc/shadow"]
    return shell + options + paths + nul + long + odd + lines


@dataclass(frozen=True)
class Case:
    """One generated input: an argument vector (argv) or a raw command line (argv None)."""

    family: str
    line: str
    argv: list[str] | None = None

    def show(self) -> str:
        """The case, short enough for a report line."""
        text = repr(self.argv) if self.argv is not None else repr(self.line)
        return f"[{self.family}] {text[:160]}"


def program_names() -> set[str]:
    """Every program name a case may put first (each gets a fake in the fuzz's PATH)."""
    return {argv[0] for argv in VALID} | {p for p in _HOSTILE_PROGRAMS if "/" not in p}


_DIGITS = {"arabic-indic": "\u0660", "superscript": None, "fullwidth": "\uff10", "devanagari": "\u0966"}
_ASCII_DIGITS = "0123456789"
_SUPERSCRIPT = "\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079"


def _twist(rng: random.Random, value: str) -> str:
    """`value` changed the way a validator might overlook: other digits, traversal, a suffix, a look-alike."""
    op = rng.randrange(10)
    if op < 4 and any(ch in _ASCII_DIGITS for ch in value):
        zero = rng.choice(list(_DIGITS.values()))
        digit = (lambda d: _SUPERSCRIPT[int(d)]) if zero is None else (lambda d: chr(ord(zero) + int(d)))
        return "".join(digit(ch) if ch in _ASCII_DIGITS and rng.random() < 0.7 else ch for ch in value)
    return rng.choice([
        value + "/../../etc/shadow", "../" + value, value + "\n", value + " ", " " + value, value.upper(),
        value + "\x00x", value + value, "=" + value, value.replace("/", "//"), value + "/..", value[:-1],
        value.replace(" ", "  "), value.replace(" ", "\t"), value + "\u200b", value.replace("a", "\u0430"),
    ])


def _mutate(rng: random.Random, argv: list[str], atoms: list[str]) -> list[str]:
    out = list(argv)
    for _ in range(rng.randint(1, 3)):
        op = rng.randrange(9)
        i = rng.randrange(len(out)) if out else 0
        if op == 0 and out:
            out[i] = rng.choice(atoms)
        elif op == 1:
            out.insert(i, rng.choice(atoms))
        elif op == 2:
            out.append(rng.choice(atoms))
        elif op == 3 and len(out) > 1:
            del out[i]
        elif op == 4 and out:
            out[i] = out[i] + rng.choice(atoms)
        elif op == 5:
            out[0] = rng.choice(_HOSTILE_PROGRAMS + [v[0] for v in VALID])
        elif op in (7, 8) and out:
            out[i] = _twist(rng, out[i])
        elif out:
            out.insert(i, out[i])
    return out


def generate(seed: int, count: int, canary: Path) -> Iterator[Case]:
    """`count` cases from `seed` (the same seed gives the same cases)."""
    rng = random.Random(seed)
    atoms = _atoms(canary)
    programs = _HOSTILE_PROGRAMS + [v[0] for v in VALID] + ["/usr/bin/touch", "/bin/sh", "./ip"]
    for n in range(count):
        kind = n % 10
        if kind < 7:
            argv = _mutate(rng, rng.choice(VALID), atoms)
            family = "mutated"
        elif kind < 9:
            argv = [rng.choice(programs)] + [rng.choice(atoms) for _ in range(rng.randint(0, 12))]
            family = "random"
        else:
            base = shlex.join(rng.choice(VALID))
            glue = rng.choice([";", " ;", " && ", " | ", "\n", " `", " $(", " > ", " # ", " '", ' "', "\\\n"])
            yield Case("line", f"{base}{glue}touch {canary}" if rng.random() < 0.8 else base + rng.choice(atoms))
            continue
        yield Case(family, shlex.join(argv), argv)
