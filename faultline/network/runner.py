"""Run one read-only command for a lab device: an argument vector, never a shell.

Every probe goes through `Runner.run`. A command runs inside the device's network namespace
(`ip netns exec <ns> argv...`) or, for tools that reach a namespace from outside (`vtysh -N`,
`ip netns pids`, `ps -p`), in the root namespace. The result is a typed `CommandResult` whatever
happened: a non-zero exit, a timeout or an over-long output are data, not exceptions.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from typing import IO

from pydantic import BaseModel, ConfigDict

from faultline.errors import FaultlineError

DEFAULT_TIMEOUT_S = 10.0
DEFAULT_OUTPUT_CAP = 256 * 1024  # bytes kept per stream
_NAMESPACE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_CHUNK = 65536


class RunnerError(FaultlineError):
    """The command could not be started at all (bad argument vector, missing program)."""


class NotRecorded(Exception):
    """A replaying runner was asked for a command its snapshot does not hold."""

    def __init__(self, argv: list[str]) -> None:
        super().__init__(" ".join(argv))
        self.argv = argv


class CommandResult(BaseModel):
    """What one command did: the exact argv, exit code, captured (capped) output and timing."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    device: str
    namespace: str | None  # None: ran in the root namespace
    argv: list[str]  # the full vector executed, including the `ip netns exec` prefix
    exit_code: int | None  # None when the process was killed on timeout
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool = False
    truncated: bool = False  # stdout or stderr exceeded the cap and was cut
    # set when the command never reached the device (a remote runner could not connect): not the device's answer
    transport_error: str | None = None

    @property
    def ok(self) -> bool:
        """Exited 0 within the timeout."""
        return self.exit_code == 0 and not self.timed_out


def _drain(stream: IO[bytes], cap: int, keep: bytearray, flags: dict[str, bool]) -> None:
    """Read `stream` to EOF, keeping at most `cap` bytes (the rest is read and dropped so the child never blocks)."""
    while True:
        chunk = stream.read1(_CHUNK) if hasattr(stream, "read1") else stream.read(_CHUNK)
        if not chunk:
            break
        room = cap - len(keep)
        if room > 0:
            keep.extend(chunk[:room])
        if len(chunk) > max(room, 0):
            flags["truncated"] = True
    stream.close()


def _check_argv(argv: Sequence[str]) -> list[str]:
    vector = list(argv)
    if not vector:
        raise RunnerError("empty command", fix="probes must pass a program and its arguments")
    for arg in vector:
        if not isinstance(arg, str) or "\x00" in arg:
            raise RunnerError(f"invalid argument {arg!r}", fix="arguments are plain strings without NUL bytes")
    return vector


class Runner:
    """Runs argument vectors with a timeout and an output cap; safe to share between threads."""

    def __init__(self, *, timeout_s: float = DEFAULT_TIMEOUT_S, output_cap: int = DEFAULT_OUTPUT_CAP) -> None:
        self.timeout_s = timeout_s
        self.output_cap = output_cap

    def run(
        self,
        device: str,
        argv: Sequence[str],
        *,
        namespace: str | None,
        timeout_s: float | None = None,
        output_cap: int | None = None,
    ) -> CommandResult:
        """Run `argv` inside `namespace` (or the root namespace when None) and return what happened."""
        vector = _check_argv(argv)
        if namespace is not None:
            if not _NAMESPACE.fullmatch(namespace):
                raise RunnerError(f"invalid namespace name {namespace!r}", fix="check the device directory")
            vector = ["ip", "netns", "exec", namespace, *vector]
        timeout = self.timeout_s if timeout_s is None else timeout_s
        cap = self.output_cap if output_cap is None else output_cap
        start = time.monotonic()
        try:
            proc = subprocess.Popen(  # noqa: S603 - argument vector, shell=False
                vector, shell=False, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, start_new_session=True, env=_clean_env(),
            )
        except OSError as exc:
            raise RunnerError(f"cannot run {vector[0]!r}: {exc}", fix="install the tool or check PATH") from exc
        out, err, flags = bytearray(), bytearray(), {"truncated": False}
        readers = [
            threading.Thread(target=_drain, args=(proc.stdout, cap, out, flags), daemon=True),
            threading.Thread(target=_drain, args=(proc.stderr, cap, err, flags), daemon=True),
        ]
        for reader in readers:
            reader.start()
        timed_out = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc)
            proc.wait()
        for reader in readers:
            reader.join(timeout=5)
        return CommandResult(
            device=device, namespace=namespace, argv=vector,
            exit_code=None if timed_out else proc.returncode,
            stdout=out.decode("utf-8", "replace"), stderr=err.decode("utf-8", "replace"),
            duration_s=round(time.monotonic() - start, 4), timed_out=timed_out, truncated=flags["truncated"],
        )


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill the child and anything it started (it leads its own session, so the group is only its own)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _clean_env() -> dict[str, str]:
    """A fixed, minimal environment: C locale so output parses the same everywhere."""
    return {
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "LANG": "C", "LC_ALL": "C", "HOME": os.environ.get("HOME", "/root"),
    }
