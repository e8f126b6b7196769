"""Table documentation: `warehouse/tables/<table>.yml` gives each table's grain and columns."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from faultline.resources import warehouse_dir


@dataclass(frozen=True)
class TableDoc:
    """What a table holds: one row per `grain`, and what each column means."""

    table: str
    grain: str
    description: str
    columns: dict[str, str]


def load_table_docs(folder: Path | None = None) -> dict[str, TableDoc]:
    """Read every table's documentation file, keyed by table name."""
    folder = folder or warehouse_dir() / "tables"
    docs: dict[str, TableDoc] = {}
    for path in sorted(folder.glob("*.yml")):
        data = yaml.safe_load(path.read_text()) or {}
        docs[data.get("table", path.stem)] = TableDoc(
            table=data.get("table", path.stem),
            grain=str(data.get("grain") or ""),
            description=str(data.get("description") or ""),
            columns={str(k): str(v or "") for k, v in (data.get("columns") or {}).items()},
        )
    return docs
