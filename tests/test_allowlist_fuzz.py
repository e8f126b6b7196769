"""The allowlist fuzzed at both ends: generated hostile command lines against the real forced command, with a
canary that any command outside the allowlist would leave behind (issue 20, hostile input)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from faultline.network import allowlist
from faultline.network.fuzz_cases import READ_ROOTS, VALID, generate

REPO = Path(__file__).resolve().parents[1]


def test_the_seed_commands_cover_every_rule_and_are_allowed():
    programs = {argv[0] for argv in VALID}
    assert {"ip", "ping", "traceroute", "iptables", "ps", "cat", "tail", "busybox", "vtysh", "dig", "curl", "sh",
            "grep", "tc", "nft", "nstat", "bridge", "ss"} <= programs
    assert [argv for argv in VALID if allowlist.refusal(argv, READ_ROOTS)] == []


def test_the_generator_is_repeatable_and_hostile(tmp_path):
    canary = tmp_path / "CANARY"
    first = list(generate(7, 500, canary))
    assert first == list(generate(7, 500, canary))
    lines = [case.line for case in first]
    assert any("\x00" in line for line in lines) and any("\n" in line for line in lines)
    assert any(str(canary) in line for line in lines) and any(len(line) > 4000 for line in lines)
    assert any(not line.isascii() for line in lines) and any("--output=/etc/x" in line for line in lines)


def _fuzz(work: Path, count: int, seed: int, prelude: str = "") -> dict:
    script = (f"{prelude}\nimport json, sys\nfrom pathlib import Path\nfrom dataclasses import asdict\n"
              "from faultline.network.guard_fuzz import fuzz\n"
              f"report = fuzz({count}, {seed}, Path({str(work)!r}))\n"
              "print(json.dumps(asdict(report) | {'ok': report.ok}))\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_fuzzed_command_lines_run_nothing_outside_the_allowlist(tmp_path):
    report = _fuzz(tmp_path, 3000, 2)
    assert report["cases"] == 3000 and report["allowed"] > 30  # the fakes really ran the allowed ones
    assert report["executed"] == report["allowed"]
    assert report["breaches"] == [] and report["problems"] == [] and not report["canary"], report
    assert not (tmp_path / "CANARY").exists()


def test_the_canary_fires_when_the_guard_lets_everything_through(tmp_path):
    """The fuzz can fail: with an allowlist that allows anything, the canary is written and breaches listed."""
    broken = "import faultline.network.allowlist as a\na.refusal = lambda argv, read_roots=(): None"
    report = _fuzz(tmp_path, 300, 1, prelude=broken)
    assert report["canary"] and (tmp_path / "CANARY").exists()
    assert not report["ok"] and report["breaches"]
