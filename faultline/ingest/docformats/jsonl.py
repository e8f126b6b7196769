"""JSON Lines catalogues (e.g. FRR's error-code list) to one section per record."""

from __future__ import annotations

import json
from typing import Any

from faultline.ingest.docformats.common import Line, Section, clean_title

# Fields that identify a record, name it, or describe it in a few words, best first.
_ID_FIELDS = ("code", "id", "key")
_NAME_FIELDS = ("name",)
_TITLE_FIELDS = ("title", "summary", "subject", "heading", "label")


class BadDocRecord(ValueError):
    """A JSONL line that is not a JSON object; ``line_no`` is its 1-based line number."""

    def __init__(self, line_no: int, message: str) -> None:
        self.line_no = line_no
        self.message = message
        super().__init__(f"line {line_no}: {message}")


def parse(text: str, doc_name: str) -> list[Section]:
    """One section per record: path (doc_name, record title), body ``field: value`` lines.

    Blank lines are skipped; a record's line number is its physical line in the file.
    """
    sections: list[Section] = []
    for line_no, raw in enumerate(text.split("\n"), start=1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise BadDocRecord(line_no, f"not valid JSON: {exc.msg} at column {exc.colno}") from exc
        if not isinstance(record, dict):
            raise BadDocRecord(line_no, f"expected a JSON object, got {type(record).__name__}")
        title, used = _record_title(record, line_no)
        body: list[Line] = [(line_no, f"{key}: {shown}") for key, value in record.items()
                            if key not in used and (shown := _render(value))]
        sections.append(Section((doc_name, title), body or [(line_no, title)]))
    return sections


def _first(record: dict[str, Any], fields: tuple[str, ...]) -> tuple[str, str] | None:
    """The first of ``fields`` holding a non-empty scalar, as (field, rendered value)."""
    for key in fields:
        value = record.get(key)
        if isinstance(value, (str, int, float)) and not isinstance(value, bool) and str(value).strip():
            return key, clean_title(str(value))
    return None


def _record_title(record: dict[str, Any], line_no: int) -> tuple[str, set[str]]:
    """A title such as ``EC 100663299 EC_LIB_SOCKET: Socket Error`` and the fields it used up.

    The identifier field stays in the body too, so a search for the bare code finds the text.
    """
    ident, name, summary = _first(record, _ID_FIELDS), _first(record, _NAME_FIELDS), _first(record, _TITLE_FIELDS)
    head: list[str] = []
    if ident is not None:
        key, value = ident
        # FRR logs cite error codes as "[EC 100663299]"; its catalogue names all start "EC_".
        ec_style = key == "code" and name is not None and name[1].startswith("EC_")
        head.append(f"EC {value}" if ec_style else value)
    if name is not None and name[1] not in head:
        head.append(name[1])
    used = {found[0] for found in (name, summary) if found is not None}
    lead = " ".join(head)
    if lead and summary is not None:
        return f"{lead}: {summary[1]}", used
    return lead or (summary[1] if summary is not None else f"record {line_no}"), used


def _render(value: Any) -> str:
    """A field value as text; empty values give ""."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value):
        return ", ".join(str(v) for v in value)
    return json.dumps(value, ensure_ascii=False)
