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
    """Read every table's documentation file, keyed by table name (by default the tables and the marts)."""
    paths = sorted(folder.glob("*.yml")) if folder else \
        sorted((warehouse_dir() / "tables").glob("*.yml")) + sorted((warehouse_dir() / "marts").glob("*.yml"))
    docs: dict[str, TableDoc] = {}
    for path in paths:
        data = yaml.safe_load(path.read_text()) or {}
        name = data.get("table") or data.get("mart") or path.stem
        docs[name] = TableDoc(
            table=name,
            grain=str(data.get("grain") or ""),
            description=str(data.get("description") or ""),
            columns={str(k): str(v or "") for k, v in (data.get("columns") or {}).items()},
        )
    return docs
