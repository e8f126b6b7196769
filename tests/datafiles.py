"""The data files tests may read, listed from the checksum block of docs/data.md.

Parametrised tests take their cases from here rather than from a glob over the data folder, so the
same test ids exist (and are skipped) on a machine without the data sets.
"""

from __future__ import annotations

import re
from pathlib import Path

DATA_DOC = Path(__file__).resolve().parents[1] / "docs" / "data.md"
_BLOCK = re.compile(r"<!-- checksums:begin -->(.*?)<!-- checksums:end -->", re.DOTALL)
_ENTRY = re.compile(r"^[0-9a-f]{64}  (\S.*)$", re.MULTILINE)


def manifest() -> list[str]:
    """Every data file's path relative to `data_dir`, in the order docs/data.md lists them."""
    block = _BLOCK.search(DATA_DOC.read_text(encoding="utf-8"))
    paths = _ENTRY.findall(block.group(1)) if block else []
    if not paths:
        raise ValueError(f"{DATA_DOC} has no checksum lines between <!-- checksums:begin --> and "
                         "<!-- checksums:end -->; the tests take their data file lists from there")
    return paths


def data_files(folder: str, suffix: str = "") -> list[str]:
    """Sorted manifest paths under `folder` (e.g. "docs/rfcs/") whose names end in `suffix`."""
    return sorted(p for p in manifest() if p.startswith(folder) and p.endswith(suffix))
