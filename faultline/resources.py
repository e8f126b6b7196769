"""Where the project's bundled files live: the repository in a checkout, the wheel otherwise."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

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


def read_yaml(path: Path) -> Any:
    """A YAML file's content, parsed once per version of the file (its size and modification time): suites and
    mappings are read for every ingested file, and parsing them was a third of a corpus ingest. Callers must not
    change what it returns."""
    stat = path.stat()
    return _parsed(str(path), stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=64)
def _parsed(path: str, mtime_ns: int, size: int) -> Any:
    import yaml

    return yaml.safe_load(Path(path).read_text(encoding="utf-8"))
