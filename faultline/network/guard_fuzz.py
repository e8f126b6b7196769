"""Fuzz the probe allowlist at both ends: generated command lines against the real forced command, with a canary.

`python -m faultline.network.guard_fuzz --count 10000 --seed 1 --work DIR` prints one JSON object (`FuzzReport`)
and exits 0 when no invariant broke; how the guard runs among fake programs and what counts as a breach:
docs/ssh.md#read-only-on-the-device-side-too.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from faultline.network import allowlist
from faultline.network.fuzz_cases import READ_ROOTS, SUDO, VALID, Case, generate, program_names
from faultline.network.ssh_guard import REFUSED_EXIT

_RECORDER = '#!/bin/sh\nprintf \'%s\\0\' "$0" "$@" > "{ran}/$$"\n'
_CANARY = '#!/bin/sh\nprintf \'%s \' "$0" "$@" >> "{canary}"\nprintf \'\\n\' >> "{canary}"\n'


@dataclass
class FuzzReport:
    """What one fuzz run saw; `breaches` and `problems` are empty when every invariant held."""

    cases: int = 0
    allowed: int = 0
    refused: int = 0
    executed: int = 0
    canary: bool = False
    breaches: list[str] = field(default_factory=list)  # something outside the allowlist ran or was tried
    problems: list[str] = field(default_factory=list)  # both ends disagree, or the guard crashed

    @property
    def ok(self) -> bool:
        return not self.canary and not self.breaches and not self.problems


def _fakes(work: Path) -> tuple[Path, Path, Path]:
    """(folder of fake programs, folder the recorders write to, canary path), freshly made under `work`."""
    bin_dir, ran, canary = work / "fakebin", work / "ran", work / "CANARY"
    for folder in (bin_dir, ran):
        folder.mkdir(parents=True, exist_ok=True)
    allowed_programs = {"sudo"} | {argv[0] for argv in VALID}
    for name in program_names() | allowed_programs:
        script = _RECORDER.format(ran=ran) if name in allowed_programs else _CANARY.format(canary=canary)
        path = bin_dir / name
        path.write_text(script)
        path.chmod(0o755)
    return bin_dir, ran, canary


def _guard_args() -> list[str]:
    return [arg for root in READ_ROOTS for arg in ("--read-root", root)] + [a for p in SUDO for a in ("--sudo", p)]


def _run_guard(line: str, bin_dir: Path) -> tuple[int, int]:
    """(pid, exit status) of the real guard run in a forked child on `line` (NUL-free)."""
    from faultline.network import ssh_guard

    sys.stdout.flush()  # the child exits without flushing: nothing buffered twice
    pid = os.fork()
    if pid == 0:  # the child: the guard's own code, with only its PATH pointed at the fakes
        code = 70
        try:
            sink = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(sink, fd)
            ssh_guard._ENV["PATH"] = str(bin_dir)
            os.environ["SSH_ORIGINAL_COMMAND"] = line
            code = ssh_guard.main(_guard_args())
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return pid, os.waitstatus_to_exitcode(status)


def _client_verdict(case: Case) -> tuple[bool | None, str]:
    """(True: allowed, False: refused, None: the line does not split), or a crash described."""
    try:
        argv = case.argv if case.argv is not None else shlex.split(case.line)
    except ValueError:
        return None, ""
    try:
        return allowlist.refusal(argv, READ_ROOTS) is None, ""
    except Exception as exc:  # noqa: BLE001 - a crash is what this looks for
        return False, f"refusal() raised {type(exc).__name__}: {exc}"


def check_case(case: Case, bin_dir: Path, ran: Path, report: FuzzReport) -> None:
    """Run one case at both ends and add what broke to `report`."""
    client, crash = _client_verdict(case)
    if crash:
        report.problems.append(f"client: {crash} on {case.show()}")
    line = case.line.split("\x00", 1)[0]  # sshd hands the forced command a C string
    pid, code = _run_guard(line, bin_dir)
    recorded = ran / str(pid)
    if code == 0 and not recorded.exists():
        report.problems.append(f"the guard exited 0 but no fake recorded a run for {case.show()}")
    elif code == 0:
        report.executed += 1
        argv = recorded.read_bytes().decode("utf-8", "surrogateescape").split("\x00")[:-1]
        argv[0] = Path(argv[0]).name
        vector = argv[3:] if argv[:3] == ["sudo", "-n", "--"] else argv
        if allowlist.refusal(vector, READ_ROOTS) is not None or vector != shlex.split(line):
            report.breaches.append(f"ran {shlex.join(argv)[:200]!r} for {case.show()}")
        elif not all(arg.isascii() for arg in vector):  # every probe builds its commands from ASCII
            report.breaches.append(f"ran a vector no probe sends (non-ASCII): {case.show()}")
        recorded.unlink()
    elif code != REFUSED_EXIT:
        what = "tried to run a program with no fake" if code == 127 else f"exited {code}"
        (report.breaches if code == 127 else report.problems).append(f"guard {what} on {case.show()}")
    if code not in (0, REFUSED_EXIT):
        return  # reported above: neither ran nor refused
    guard_allowed = code == 0
    report.allowed += guard_allowed
    report.refused += not guard_allowed
    if "\x00" not in case.line and client is not None and not crash and client != guard_allowed:
        report.problems.append(f"client {'allows' if client else 'refuses'} but the guard "
                               f"{'runs' if guard_allowed else 'refuses'} {case.show()}")
    if "\x00" in case.line and client:
        report.breaches.append(f"client allows a NUL byte: {case.show()}")


def fuzz(count: int, seed: int, work: Path) -> FuzzReport:
    """Generate `count` cases from `seed` and run each at both ends (docs/ssh.md#read-only-on-the-device-side-too)."""
    bin_dir, ran, canary = _fakes(work)
    canary.unlink(missing_ok=True)
    os.chdir(work)  # a shell glob that ran by mistake expands here, not in the caller's folder
    report = FuzzReport()
    for case in generate(seed, count, canary):
        report.cases += 1
        check_case(case, bin_dir, ran, report)
    report.canary = canary.exists()
    if report.canary:
        report.breaches.append("the canary exists: " + canary.read_text(errors="replace")[:300])
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000, help="cases to generate")
    parser.add_argument("--seed", type=int, default=1, help="seed of the generator (a run is repeatable)")
    parser.add_argument("--work", type=Path, required=True, help="scratch folder (fake programs, the canary)")
    opts = parser.parse_args(argv)
    report = fuzz(opts.count, opts.seed, opts.work)
    out = asdict(report) | {"ok": report.ok}
    out["breaches"], out["problems"] = out["breaches"][:20], out["problems"][:20]
    print(json.dumps(out, indent=1))
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
