"""The lab makes faults of tests/foreign_cases.py again, with the same commands, and SADE reads them live (the
recorded replays: tests/test_sade_foreign.py). One case, the cheapest to build (CI's lab lane is its critical path):
one routing daemon down; `python -m tests.foreign DIR` makes every case again."""

from __future__ import annotations

from pathlib import Path

import pytest

from faultline.sade.evaluate import evaluate_folder
from tests.foreign_cases import CASES

LIVE = ("bgpd-down",)


@pytest.mark.lab
@pytest.mark.parametrize("name", LIVE)
def test_the_lab_makes_the_fault_again_and_sade_reads_it(name: str, tmp_path: Path) -> None:
    from tests.foreign import record_case
    from tests.labfixtures import lab_dir, settings_for, wait_until_no_lab

    wait_until_no_lab()
    folder = record_case(CASES[name], tmp_path, settings_for(lab_dir("foreign")))
    ev = evaluate_folder(folder, ticket=False)
    sub = ev.diagnosis.submission
    assert sub is not None and CASES[name].label in sub.v1.root_cause_name, ev.diagnosis.error or sub.summary
    assert ev.score.rca.f1 == 1.0
