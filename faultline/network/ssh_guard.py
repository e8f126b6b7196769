"""The device side of the SSH backend: a forced command that runs a probe command and nothing else.

`python -m faultline.network.ssh_guard [--read-root DIR ...] [--sudo PROGRAM ...] [--log FILE]` checks the
command line in SSH_ORIGINAL_COMMAND against the allowlist and executes it directly, or refuses it with exit status
126; details and a recipe for a real device: docs/ssh.md#read-only-on-the-device-side-too.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time

REFUSED_EXIT = 126
_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C", "LC_ALL": "C"}


def decide(command: str | None, read_roots: list[str]) -> tuple[list[str] | None, str]:
    """(argv to run, "") for an allowlisted command line, else (None, the reason)."""
    from faultline.network.allowlist import refusal

    if not command:
        return None, "this account runs Faultline's read-only probe commands only (no shell, no login)"
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        return None, f"the command line does not split into arguments: {exc}"
    reason = refusal(argv, read_roots)
    return (None, reason) if reason else (argv, "")


def _log(path: str | None, verdict: str, command: str | None) -> None:
    if not path:
        return
    line = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {verdict} {command!r}\n"
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(line)
    except OSError:
        pass  # the audit file is a convenience: its absence never opens or closes the gate


def main(args: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="faultline-ssh-guard", description=__doc__.splitlines()[0])
    parser.add_argument("--read-root", action="append", default=[], help="a folder cat/tail/vtysh may name")
    parser.add_argument("--sudo", action="append", default=[], help="a program to run through `sudo -n`")
    parser.add_argument("--log", default=None, help="append each decision to this file")
    opts = parser.parse_args(args)
    command = os.environ.get("SSH_ORIGINAL_COMMAND")
    argv, reason = decide(command, opts.read_root)
    if argv is None:
        _log(opts.log, "refused", command)
        print(f"faultline guard: refused: {reason}", file=sys.stderr)
        return REFUSED_EXIT
    _log(opts.log, "ran", command)
    env = dict(_ENV, HOME=os.environ.get("HOME", "/"))
    if argv[0] in opts.sudo:
        argv = ["sudo", "-n", "--", *argv]
    try:
        os.execvpe(argv[0], argv, env)
    except OSError as exc:
        print(f"faultline guard: cannot run {argv[0]!r}: {exc}", file=sys.stderr)
        return 127
    return 0  # not reached: exec replaced this process


if __name__ == "__main__":
    sys.exit(main())
