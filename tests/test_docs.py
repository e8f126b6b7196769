"""The README stays true: every setting is listed, and the two set-up commands are what CI runs."""

from __future__ import annotations

from faultline.config import Settings
from tests.conftest import REPO


def test_every_setting_is_in_the_readme():
    readme = (REPO / "README.md").read_text()
    missing = [name for name in Settings.model_fields if f"`{name}`" not in readme]
    assert not missing, f"settings missing from README's configuration table: {missing}"


def test_ci_runs_the_readme_test_command():
    readme = (REPO / "README.md").read_text()
    ci = (REPO / ".ci" / "run").read_text()
    install, test = "bash scripts/install.sh --dev", ".venv/bin/python -m pytest"
    assert f"{install} && {test}" in readme
    assert install in ci and test in ci.split(install, 1)[1]  # the same two steps; CI lints (ruff) in between
