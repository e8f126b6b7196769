"""Turning ticket source records into `tickets` rows with a field mapping.

A record that cannot be normalised (unparseable timestamp, duplicate key in the same file)
becomes a Reject with the check it failed; everything the mapping does not use is kept in
`attributes` as JSON.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from faultline.ingest.normalize import as_object_list, as_text, as_text_list, parse_timestamp
from faultline.ingest.reading import Reject
from faultline.ingest.ticket_mapping import FieldMapping, first_present
from faultline.ingest.ticket_sources import SourceRecord

_LIST_FIELDS = {"components", "versions", "fix_versions"}
_TIME_FIELDS = {"created_at", "updated_at", "resolved_at"}


@dataclass(frozen=True)
class TicketRows:
    """Normalised ticket rows (dicts in `tickets` column order) and the records rejected."""

    rows: list[dict[str, Any]]
    rejects: list[Reject]


def normalise_record(record: dict[str, Any], mapping: FieldMapping) -> dict[str, Any]:
    """One ticket dict; ValueError names the field whose value cannot be read."""
    row: dict[str, Any] = {}
    for target, paths in mapping.fields.items():
        value = first_present(record, paths)
        if target in _LIST_FIELDS:
            row[target] = as_text_list(value)
        elif target in _TIME_FIELDS:
            try:
                row[target] = parse_timestamp(value)
            except ValueError as exc:
                raise ValueError(f"{target} ({'/'.join(paths)}): {exc}") from exc
        else:
            row[target] = as_text(value)
    row["comments"] = _comments(record, mapping)
    row["links"] = _links(record, mapping)
    used = mapping.source_paths()
    extra = {k: v for k, v in record.items() if k not in used}
    row["attributes"] = json.dumps(extra, ensure_ascii=False, default=str, sort_keys=True) if extra else None
    row["content_hash"] = hashlib.sha256(
        json.dumps(row, ensure_ascii=False, default=str, sort_keys=True).encode()
    ).hexdigest()
    return row


def _comments(record: dict[str, Any], mapping: FieldMapping) -> list[dict[str, Any]]:
    spec = mapping.nested.get("comments")
    if not spec:
        return []
    out = []
    for item in as_object_list(first_present(record, spec["path"])):
        try:
            created = parse_timestamp(first_present(item, spec.get("created_at", ("created",))))
        except ValueError as exc:
            raise ValueError(f"comment created time: {exc}") from exc
        out.append({
            "author": as_text(first_present(item, spec.get("author", ("author",)))),
            "created_at": created,
            "body": as_text(first_present(item, spec.get("body", ("body",)))) or "",
        })
    return out


def _links(record: dict[str, Any], mapping: FieldMapping) -> list[dict[str, Any]]:
    spec = mapping.nested.get("links")
    if not spec:
        return []
    return [
        {
            "type": as_text(first_present(item, spec.get("type", ("type",)))),
            "direction": as_text(first_present(item, spec.get("direction", ("direction",)))),
            "target": as_text(first_present(item, spec.get("target", ("key",)))),
        }
        for item in as_object_list(first_present(record, spec["path"]))
    ]


def normalise_records(records: list[SourceRecord], mapping: FieldMapping) -> TicketRows:
    """Normalise every parsed record; duplicates of one key keep the newest (then the last)."""
    rows: list[dict[str, Any]] = []
    rejects: list[Reject] = [r.reject for r in records if r.reject is not None]
    for rec in records:
        if rec.data is None:
            continue
        try:
            row = normalise_record(rec.data, mapping)
        except ValueError as exc:
            rejects.append(Reject(rec.record_no, "parse_timestamp", f"cannot read {exc}", rec.raw))
            continue
        row["source_record"] = rec.record_no
        row["_raw"] = rec.raw
        rows.append(row)
    return _dedupe(rows, rejects)


def _dedupe(rows: list[dict[str, Any]], rejects: list[Reject]) -> TicketRows:
    winners: dict[str, dict[str, Any]] = {}
    for row in rows:
        key = row.get("ticket_id")
        if key is None:
            continue
        held = winners.get(key)
        if held is None or _newer_or_same(row, held):
            winners[key] = row
    kept = []
    for row in rows:
        key = row.get("ticket_id")
        if key is None or winners[key] is row:
            kept.append(row)
        else:
            won = winners[key]["source_record"]
            rejects.append(Reject(row["source_record"], "unique_ticket_id",
                                  f"duplicate ticket id {key}; record {won} of the same file was kept "
                                  "(the newest by updated_at, then the last)", row["_raw"]))
    return TicketRows(kept, sorted(rejects, key=lambda r: r.record_no))


def _newer_or_same(row: dict[str, Any], held: dict[str, Any]) -> bool:
    a, b = row.get("updated_at"), held.get("updated_at")
    if a is None or b is None:
        return True
    return a >= b
