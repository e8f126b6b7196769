"""Normalising loosely typed source values: timestamps, text, and string lists."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

_EXTRA_FORMATS = (
    "%d/%b/%y %I:%M %p",  # JIRA CSV export: 23/Feb/11 2:02 AM
    "%d/%b/%Y %H:%M",
    "%Y/%m/%d %H:%M:%S",
    "%m/%d/%Y %H:%M:%S",
    "%m/%d/%Y %H:%M",
    "%a, %d %b %Y %H:%M:%S %z",
)
_NAME_KEYS = ("name", "value", "displayName", "key")


def parse_timestamp(value: Any) -> datetime | None:
    """A timezone-aware UTC datetime, or None for null/empty; ValueError when unparseable.

    Naive timestamps are taken as UTC. Numbers are Unix epoch seconds (milliseconds when
    larger than 1e11).
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = value / 1000 if abs(value) > 1e11 else value
        parsed = datetime.fromtimestamp(seconds, tz=timezone.utc)
    elif isinstance(value, str):
        parsed = _parse_text(value.strip())
    else:
        raise ValueError(f"unsupported timestamp value {value!r}")
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed.astimezone(timezone.utc)


def _parse_text(text: str) -> datetime:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        pass
    for fmt in _EXTRA_FORMATS:
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            continue
    if text.lstrip("-").replace(".", "", 1).isdigit():
        return parse_timestamp(float(text))  # type: ignore[return-value]
    raise ValueError(f"unparseable timestamp {text!r}")


def as_text(value: Any) -> str | None:
    """A string for a scalar or a named object ({"name": ...}); None for null/empty."""
    if value is None:
        return None
    if isinstance(value, dict):
        for key in _NAME_KEYS:
            if value.get(key) is not None:
                return as_text(value[key])
        return json.dumps(value, ensure_ascii=False, default=str)
    if isinstance(value, (list, tuple)):
        return ", ".join(t for t in (as_text(v) for v in value) if t)
    text = str(value)
    return text if text.strip() else None


def as_text_list(value: Any) -> list[str]:
    """A list of strings from a list, a JSON list string, or a comma/semicolon separated string."""
    if value is None:
        return []
    if isinstance(value, str):
        stripped = value.strip()
        if stripped.startswith("["):
            try:
                return as_text_list(json.loads(stripped))
            except json.JSONDecodeError:
                pass
        sep = ";" if ";" in stripped else ","
        return [part.strip() for part in stripped.split(sep) if part.strip()]
    if isinstance(value, (list, tuple)):
        return [t for t in (as_text(v) for v in value) if t]
    text = as_text(value)
    return [text] if text else []


def as_object_list(value: Any) -> list[dict[str, Any]]:
    """A list of objects from a list or a JSON list string (CSV exports)."""
    if isinstance(value, str) and value.strip().startswith("["):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return []
    if isinstance(value, list):
        return [v for v in value if isinstance(v, dict)]
    return []
