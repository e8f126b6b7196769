"""Turn a logparser-style header template into a regex with Faultline's group names.

A template such as `<Date> <Time> <Pid> <Level> <Component>: <Content>` names fields in angle
brackets; the text between them is a regex as written (Loghub writes `\\[<Process>\\]`), with
runs of spaces matching any whitespace.
"""

from __future__ import annotations

import re

import polars as pl

_FIELD = re.compile(r"<([A-Za-z_][A-Za-z0-9_]*)>")

# Output column -> template names that may fill it, best first. Names compare case-insensitively.
_TARGETS: dict[str, tuple[str, ...]] = {
    "severity": ("level", "severity", "loglevel", "priority"),
    "component": ("component", "logger", "service", "program", "process", "tag", "app"),
    "pid": ("pid", "processid", "thread", "threadid", "tid"),
    "host": ("host", "hostname", "node", "user"),
    "message": ("content", "message", "msg"),
}
_TIMESTAMP_NAMES = frozenset(
    {"date", "time", "day", "month", "year", "timestamp", "datetime", "hour", "clock"}
)


def _assign_names(fields: list[str]) -> list[str]:
    """Regex group name for each template field, in template order."""
    lowered = [f.lower() for f in fields]
    names = [""] * len(fields)
    for target, candidates in _TARGETS.items():
        for candidate in candidates:
            if candidate in lowered:
                i = lowered.index(candidate)
                if not names[i]:
                    names[i] = target
                    break
    for i, _field in enumerate(fields):
        if names[i]:
            continue
        if lowered[i] in _TIMESTAMP_NAMES:
            names[i] = f"ts_{i}_{lowered[i]}"
        else:
            names[i] = f"x_{i}_{lowered[i]}"
    return names


def _literal(text: str, *, escape: bool) -> str:
    pieces = re.split(r" +", text)
    if escape:
        pieces = [re.escape(p) for p in pieces]
    return r"\s+".join(pieces)


def _build(template: str, *, escape: bool) -> tuple[str, list[str]]:
    parts = _FIELD.split(template)
    literals, fields = parts[0::2], parts[1::2]
    names = _assign_names(fields)
    out = [r"^\s*", _literal(literals[0], escape=escape)]
    for i, name in enumerate(names):
        after = literals[i + 1]
        if name == "message" or (i == len(names) - 1 and not after.strip()):
            body = ".*"
        elif not after.strip():
            body = r"\S+"
        else:
            # a field that ends at literal text (`\]`, ` - `, `: `) may itself hold spaces,
            # as Mac/Proxifier program names do: stop at the first place the rest fits
            body = ".*?"
        out.append(f"(?P<{name}>{body})")
        out.append(_literal(after, escape=escape))
    out.append("$")
    return "".join(out), names


def _usable(pattern: str, names: list[str]) -> bool:
    """The pattern compiles and every field is still a group (an unescaped `[<Pid>]` is not)."""
    try:
        probe = pl.Series([""], dtype=pl.Utf8).str.extract_groups(pattern)
    except pl.exceptions.PolarsError:  # polars raises ComputeError for invalid regexes
        return False
    return set(names) <= set(probe.struct.fields)


def template_regex(template: str) -> str:
    """Regex for a header template; fields map to ts_*/host/severity/component/pid/message.

    Literal text is used as a regex (the Loghub convention, `\\[<Pid>\\]`); when that does not
    compile or swallows a field (an unescaped `[<Pid>]`), the literals are escaped instead.
    Raises ValueError when the template has no fields.
    """
    if not _FIELD.search(template):
        raise ValueError(f"template {template!r} has no <Field> placeholders")
    for escape in (False, True):
        pattern, names = _build(template, escape=escape)
        if _usable(pattern, names):
            return pattern
    raise ValueError(f"template {template!r} does not give a valid regex")
