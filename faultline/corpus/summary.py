"""What a generated corpus covers: incidents per label and scenario/size, healthy and multi-fault counts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def coverage(folders: list[Path]) -> dict[str, Any]:
    """Counts over every incident.json under `folders` (valid incidents only in the label table)."""
    labels: dict[str, dict[str, int]] = {}
    counts = {"valid": 0, "invalid": 0, "healthy": 0, "multi": 0}
    sizes: dict[str, int] = {}
    for folder in folders:
        for path in sorted(folder.rglob("incident.json")):
            meta = json.loads(path.read_text())
            if meta.get("status") != "valid":
                counts["invalid"] += 1
                continue
            counts["valid"] += 1
            sizes[meta["size"]] = sizes.get(meta["size"], 0) + 1
            faults = meta["spec"]["faults"]
            if not faults:
                counts["healthy"] += 1
            if len(faults) > 1:
                counts["multi"] += 1
            for fault in faults or [{"label": "(healthy)"}]:
                cell = f"{meta['scenario']}/{meta['size']}"
                labels.setdefault(fault["label"], {})[cell] = labels.get(fault["label"], {}).get(cell, 0) + 1
    return {**counts, "sizes": sizes, "labels": labels}


def render_markdown(table: dict[str, Any]) -> str:
    """The coverage as a Markdown table: one row per label, one column per scenario/size seen."""
    cells = sorted({cell for row in table["labels"].values() for cell in row})
    head = "| label | " + " | ".join(cells) + " | total |"
    rule = "|---|" + "---|" * (len(cells) + 1)
    rows = [f"| {label} | " + " | ".join(str(row.get(c, "")) for c in cells) + f" | {sum(row.values())} |"
            for label, row in sorted(table["labels"].items())]
    intro = (f"{table['valid']} valid incidents ({table['healthy']} healthy controls, {table['multi']} multi-fault; "
             f"sizes {', '.join(f'{k}: {v}' for k, v in sorted(table['sizes'].items()))}), {table['invalid']} invalid.")
    return "\n".join([intro, "", head, rule, *rows])
