"""Hostile input, probe allowlist: generated command lines against the client check and the real forced command.

Each trial runs `python -m faultline.network.guard_fuzz` with its own seed: 2,000 generated argument sets
(shell metacharacters, option injection, path traversal, NUL bytes, very long strings, unicode, newlines),
each judged by `allowlist.refusal` and run through `faultline.network.ssh_guard` in a forked child whose PATH
holds fake programs; anything outside the allowlist that ran, or a shell that interpreted a payload, writes
the canary file.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from rel_cases.common import REPO, Trial

NAME = "probe_fuzz"
CHECKS = ("2,000 generated hostile argument sets per trial (10,000 by default) through the client check and the "
          "real forced command: nothing outside the allowlist ran (no canary), both ends agree, neither crashes")
DEFAULT_TRIALS = 5
NEEDS_ROOT = False
CASES_PER_TRIAL = 2000


def _trial(seed: int, work: Path) -> Trial:
    work.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([sys.executable, "-m", "faultline.network.guard_fuzz", "--count", str(CASES_PER_TRIAL),
                           "--seed", str(seed), "--work", str(work)], cwd=REPO, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=600, check=False)
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        return Trial(ok=False, detail=f"the fuzz did not report (exit {done.returncode}): {done.stderr[-300:]}",
                     defect="the allowlist fuzz itself failed")
    seen = (f"seed {seed}: {report['cases']} cases, {report['allowed']} allowed and run by the fakes, "
            f"{report['refused']} refused, canary {'PRESENT' if report['canary'] else 'absent'}")
    if report["ok"] and not (work / "CANARY").exists():
        return Trial(ok=True, detail=seen)
    first = (report["breaches"] + report["problems"])[:2]
    defect = ("a command outside the allowlist ran on the device side" if report["breaches"] or report["canary"]
              else "the client check and the forced command disagree, or one of them crashed")
    return Trial(ok=False, detail=f"{seen}; {'; '.join(first)}", defect=defect)


def run(trials: int, work: Path) -> list[Trial]:
    """`trials` fuzz runs of CASES_PER_TRIAL cases, seeds 1..trials."""
    return [_trial(seed, work / f"seed{seed}") for seed in range(1, trials + 1)]
