"""What a reliability case is and returns, and the helpers several cases share.

A case module provides:

- `NAME`: a short identifier (`--case NAME` runs it alone);
- `CHECKS`: one line saying what a passed trial proves;
- `DEFAULT_TRIALS`: how many trials a plain run makes;
- `NEEDS_ROOT`: True when the case cannot run without root (it is then reported as not run, with why);
- `run(trials, work) -> list[Trial]`: the trials, each against real DuckDB/LanceDB/Prefect processes in
  the scratch folder `work`. A trial that fails says what it saw in `detail`; `defect` names the fix it
  calls for (or what is left open) so the report lists it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FAULTLINE = [sys.executable, "-m", "faultline.cli.main"]


@dataclass(frozen=True)
class Trial:
    """One trial of a case: passed or not, and what was seen."""

    ok: bool
    detail: str = ""
    defect: str = ""


@dataclass
class CaseReport:
    """One row of the report."""

    case: str
    checks: str
    trials: int = 0
    passed: int = 0
    seconds: float = 0.0
    skipped: str = ""
    failures: list[str] = field(default_factory=list)
    defects: list[str] = field(default_factory=list)


def cli(db: Path, *args: str, lancedb: Path | None = None, timeout: float = 600,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run `faultline --db DB [--lancedb DIR] ARGS` as its own process (the way cron or a person runs it)."""
    argv = [*FAULTLINE, "--db", str(db)]
    if lancedb is not None:
        argv += ["--lancedb", str(lancedb)]
    return subprocess.run([*argv, *args], cwd=REPO, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})}, check=False)
