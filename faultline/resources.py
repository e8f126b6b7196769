"""Where the project's bundled files live: the repository in a checkout, the wheel otherwise."""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def _locate(repo_relative: str, bundled: str) -> Path:
    in_repo = _PACKAGE_DIR.parent / repo_relative
    if in_repo.exists():
        return in_repo
    return _PACKAGE_DIR / "_bundled" / bundled


def warehouse_dir() -> Path:
    """The `warehouse/` folder: migrations, table docs, expectation suites, marts."""
    return _locate("warehouse", "warehouse")


def sample_dir() -> Path:
    """The sample corpus the project ships (`data/sample/`)."""
    return _locate("data/sample", "sample")
