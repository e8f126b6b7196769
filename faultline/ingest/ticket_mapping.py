"""Declarative field mappings from a tracker's export layout to Faultline's ticket record.

A mapping is a YAML file: ``fields`` maps each ticket column to a source field path (dotted for
nested objects; a list means "first one present"), ``comments`` / ``links`` describe nested lists,
and ``detect`` lists the source fields whose presence selects the mapping automatically.
Built-in mappings live in ``faultline/ingest/mappings/``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from faultline.errors import FaultlineError
from faultline.resources import read_yaml

BUILTIN_DIR = Path(__file__).resolve().parent / "mappings"

TICKET_FIELDS = (
    "ticket_id", "project", "title", "description", "environment", "status", "resolution",
    "resolution_note", "priority", "components", "versions", "fix_versions", "created_at",
    "updated_at", "resolved_at",
)
_NESTED = {"comments": ("author", "created_at", "body"), "links": ("type", "direction", "target")}


@dataclass(frozen=True)
class FieldMapping:
    """How to read one tracker layout."""

    name: str
    description: str
    detect: tuple[str, ...]
    fields: dict[str, tuple[str, ...]]
    nested: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict)

    def source_paths(self) -> set[str]:
        """Top-level source keys this mapping consumes (the rest go to `attributes`)."""
        used = {p.split(".")[0] for paths in self.fields.values() for p in paths}
        used |= {spec["path"][0].split(".")[0] for spec in self.nested.values()}
        return used


def _paths(value: Any) -> tuple[str, ...]:
    return tuple(value) if isinstance(value, list) else (str(value),)


def load_mapping(path: Path) -> FieldMapping:
    """Read and check a mapping file; unknown target fields are an error."""
    try:
        data = read_yaml(path) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise FaultlineError(f"cannot read mapping {path}: {exc}", fix="pass a YAML mapping file") from exc
    fields = data.get("fields") or {}
    unknown = sorted(set(fields) - set(TICKET_FIELDS))
    if unknown:
        raise FaultlineError(f"mapping {path} maps unknown ticket fields {unknown}",
                             fix=f"target fields are: {', '.join(TICKET_FIELDS)}")
    if "ticket_id" not in fields or "title" not in fields:
        raise FaultlineError(f"mapping {path} must map ticket_id and title", fix="add both under `fields:`")
    nested: dict[str, dict[str, tuple[str, ...]]] = {}
    for kind, parts in _NESTED.items():
        spec = data.get(kind)
        if spec:
            nested[kind] = {"path": _paths(spec["path"]), **{p: _paths(spec[p]) for p in parts if p in spec}}
    return FieldMapping(
        name=str(data.get("name") or path.stem),
        description=str(data.get("description") or ""),
        detect=tuple(data.get("detect") or (fields["ticket_id"], fields["title"])),
        fields={k: _paths(v) for k, v in fields.items()},
        nested=nested,
    )


def builtin_mappings() -> list[FieldMapping]:
    """The mappings shipped with Faultline, most specific first."""
    found = [load_mapping(p) for p in sorted(BUILTIN_DIR.glob("*.yml"))]
    return sorted(found, key=lambda m: -len(m.detect))


def lookup(record: dict[str, Any], path: str) -> Any:
    """Value at a dotted path, or None when any step is missing."""
    value: Any = record
    for step in path.split("."):
        if not isinstance(value, dict) or step not in value:
            return None
        value = value[step]
    return value


def first_present(record: dict[str, Any], paths: tuple[str, ...]) -> Any:
    """The first non-null value among the candidate paths."""
    for path in paths:
        value = lookup(record, path)
        if value is not None:
            return value
    return None


def detect_mapping(records: list[dict[str, Any]]) -> FieldMapping:
    """Pick the built-in mapping whose detect fields appear in most of the sample records."""
    best: tuple[float, FieldMapping | None] = (0.0, None)
    for mapping in builtin_mappings():
        hits = sum(all(lookup(r, p) is not None for p in mapping.detect) for r in records)
        share = hits / max(len(records), 1)
        if share > best[0]:
            best = (share, mapping)
    if best[1] is None or best[0] < 0.5:
        keys = sorted({k for r in records[:20] for k in r})[:20]
        raise FaultlineError(
            f"cannot tell which tracker layout these tickets use (fields seen: {', '.join(keys) or 'none'})",
            fix="write a mapping file (see faultline/ingest/mappings/jira.yml) and pass --mapping FILE",
        )
    return best[1]
